"""The durable-effects family (family name ``effects``): long agent tasks whose side
effects pass intent, dispatch, external commit and receipt, with idempotency keys,
reconciliation of unknown outcomes, and compensation.

``FAMILY`` is the family as the search and the CLI see it (the family
contract, :mod:`sim.core.family`); the modules beside this one are its model:
``runtime`` (its operations, split by concern into ``queue``, ``versions``,
``moments``, ``recovery``, ``sagas`` over ``system``), ``state`` and
``external`` (durable and external state), ``policy``, ``driver``, ``actors``,
``agenda`` and ``autorun`` (workers, the external system, humans and the lease
supervisor as processes on a kernel whose state is data), ``machine`` (the
fault-list transition system exhaustive search runs), ``faults`` and ``injectors`` (the registry of fault
classes, and what each does), ``workflow``, ``transition_fields`` and
``workflow_file`` (workflows, the table of transition fields, and their file
form), ``workflow_schema`` (both registries as the JSON file a real runtime's
harness reads), ``checks``, ``cruel`` and ``exposure``.
"""

from sim.families.effects.family import EffectsFamily

FAMILY = EffectsFamily()

__all__ = ["FAMILY", "EffectsFamily"]
