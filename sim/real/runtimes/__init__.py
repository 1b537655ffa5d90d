"""Real durable runtimes under the effects family's faults: workers that run a workflow of transitions
against the real external system (:mod:`sim.real.external_system`), and the harness that kills,
freezes and restarts them at the four moments and records what happened (``docs/real-runtimes.md``).

The worker processes import only the standard library, :mod:`sim.real.runtimes.worker_kit` and their
runtime (DBOS, Temporal); nothing of the model."""
