"""``infill serve``: a local page and JSON API over one loaded model (needs ``pip install 'infill-mcmc[serve]'``).

:func:`create_app` builds the Starlette app (:mod:`infill.serve.app`); runs go one at a time through
:class:`~infill.serve.queue.RunQueue`; the page is ``static/index.html``, a plain page with a small
script that draws its plots as SVG.
"""

from .app import create_app

__all__ = ["create_app"]
