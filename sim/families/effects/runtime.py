"""The runtime of one run: every operation of the durable-effects vocabulary on one object.

Both drivers call these operations and nothing else -- the scripted replay
(:mod:`sim.families.effects.runner`) in the order a story lists, the
autonomous driver (:mod:`sim.families.effects.driver`) in the order its
worker policy and fault schedule produce.  An operation that cannot happen
at its point under the protocol raises ``Skipped``, is recorded as
``skipped`` and changes nothing, so one script replays under every protocol.
"""

from __future__ import annotations

from sim.families.effects.moments import MomentOps
from sim.families.effects.queue import QueueOps
from sim.families.effects.recovery import RecoveryOps
from sim.families.effects.sagas import SagaOps
from sim.families.effects.system import Fenced, OperationSkipped, RuntimeBase
from sim.families.effects.versions import VersionOps

__all__ = ["Fenced", "OperationSkipped", "Runtime"]


class Runtime(QueueOps, VersionOps, MomentOps, RecoveryOps, SagaOps, RuntimeBase):
    """Queue and leases, versions, the four moments, recovery and sagas over one runtime state."""
