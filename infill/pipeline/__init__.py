"""A run, prepare -> run -> postprocess: :mod:`.prepare` (templates checked, each one's :class:`~.policy.Plan`
resolved by :mod:`.policy`), :mod:`.runs` (each kind of run's ``execute``), :mod:`.postprocess` (candidates,
``top``, text, marginals) into :mod:`.results`, driven by :mod:`.infiller` (``Infiller``); the run settings
(:mod:`.config`) and a run's signature (:mod:`.signature`).

The package is also callable: ``infill.pipeline(model=...)`` is the joint fill-mask pipeline of
:mod:`.fill_mask`, a one-line switch from ``transformers.pipeline("fill-mask", model=...)``. Calling it imports
torch and transformers; importing the package does not."""

from __future__ import annotations

import sys
import types


class _CallablePackage(types.ModuleType):
    """This package, callable as :func:`.fill_mask.pipeline`."""

    def __call__(self, model=None, **kwargs):
        from .fill_mask import pipeline

        return pipeline(model, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
