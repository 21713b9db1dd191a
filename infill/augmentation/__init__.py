"""Augment's pieces that need no model (``infill.augment`` and ``Infiller.augment`` run them:
:mod:`infill.pipeline.augment`): :mod:`.words` (a sentence's words, their protection, the choice of those to
change), :mod:`.edits` (a variant as edits of its source: spans, apply and revert, casing) and :mod:`.variants`
(what augment returns)."""
