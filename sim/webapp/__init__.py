"""The explorer behind ``fencesim serve`` and ``sim.serve``: a local web app to step through a design's states
(``docs/serve.md``).

:mod:`~sim.webapp.views` computes what a page shows through the family contract only (the replay, the
checks, the guards' reasons, the state tables); :mod:`~sim.webapp.actions` runs the exhaustive search from the
path and exports it, :mod:`~sim.webapp.turns` has searches take turns and :mod:`~sim.webapp.outfolder` writes
into ``--out``, never through a link; :mod:`~sim.webapp.pages` renders the HTML; :mod:`~sim.webapp.app` is the
Starlette application; :mod:`~sim.webapp.server` binds 127.0.0.1 and runs uvicorn.  Only the command line and the
notebook API (``sim.serve``) import this package.
"""

from sim.webapp.views import Explorer, Source, source_of

__all__ = ["Explorer", "Source", "source_of"]
