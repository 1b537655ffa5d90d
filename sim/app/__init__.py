"""The application: what a command or a notebook call does, composed from the layers below it.

* :mod:`sim.app.reviewing` runs a review (with :mod:`~sim.app.review_cuts`, :mod:`~sim.app.review_liveness` and
  :mod:`~sim.app.reliability_classes`) of the designs :mod:`sim.app.designs` reads;
* :mod:`sim.app.certifying` certifies a workflow under a durable engine;
* :mod:`sim.app.serving` reads what ``fencesim serve`` explores;
* :mod:`sim.app.notebook_figures` is ``sim.figures``: every figure of a review, for a notebook.

The layers below (``sim.core``, ``sim.families``, ``sim.search``, ``sim.report``, ``sim.webapp``, ``sim.real``)
never import this package; the command line (``sim.cli``) and the notebook API (``sim``) do.
"""
