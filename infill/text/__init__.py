"""Text, no model: the blank syntax (:mod:`.blanks`), templates and splicing fills into the user's text
(:mod:`.template`), and which tokens a blank may take (:mod:`.vocabulary`)."""
