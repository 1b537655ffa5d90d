"""``fencesim serve``: a local web app to step through a design's states (``docs/serve.md``).

:mod:`~sim.serve.explorer` computes what a page shows through the family contract only (the replay, the
checks, the guards' reasons, the state tables); :mod:`~sim.serve.actions` runs the exhaustive search from the
path and exports it; :mod:`~sim.serve.pages` renders the HTML; :mod:`~sim.serve.app` is the Starlette
application; :mod:`~sim.serve.server` binds 127.0.0.1 and runs uvicorn.  Only the command line and the
notebook API (``sim.serve``) import this package.
"""

from sim.serve.explorer import Explorer, Source, source_of

__all__ = ["Explorer", "Source", "source_of"]
