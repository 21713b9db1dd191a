"""A run, prepare -> sample -> postprocess: :mod:`.infiller` (``prepare``, ``Infiller``), :mod:`.postprocess`
(candidates, ``top``, text, marginals) into :mod:`.results`; the run settings (:mod:`.config`) and a run's
signature (:mod:`.signature`)."""
