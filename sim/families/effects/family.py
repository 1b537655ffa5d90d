"""The durable-effects family through the family contract (family name ``effects``; ``runtime`` is its alias)."""

from __future__ import annotations

from typing import Any, Hashable, Iterable, Sequence

from sim.core.family import Cell, Family, Replay, ReviewPlan, StateTable
from sim.core.history import Event
from sim.core.knobs import Protocol
from sim.core.liveness import LivenessModel
from sim.core.mechanisms import fired_measures
from sim.core.values import JsonObject
from sim.core.workload import Workload, build_workload, split_workload
from sim.families.effects import checks, claims, cruel, faults, ledger, runner, tables
from sim.families.effects.faults import FaultEvent
from sim.families.effects.history_schema import SCHEMA as HISTORY_SCHEMA
from sim.families.effects.knobs import FAMILY_NAME, PRESETS, TABLE, NoHistory
from sim.families.effects.runtime import Runtime
from sim.families.effects.scenario import FAMILY_ALIAS, RuntimeScenario, dump_scenario, load_runtime_scenario

#: Tasks the review's exposure simulation runs per protocol.
EXPOSURE_REVIEW_TASKS = 2_000

#: History events that are faults striking the run (timelines mark them with ``*``).
FAULT_EVENTS = frozenset({"crashed", "request_lost", "response_lost", "request_duplicated", "lease_expired",
                          "foreign_created", "upgraded", "fault_armed", "transition_failed", "read_changed"})


class EffectsFamily(Family):
    """Long agent tasks whose side effects pass four moments, with keys, reconciliation and
    compensation (``docs/effects.md``)."""

    name = FAMILY_NAME
    aliases = (FAMILY_ALIAS,)
    title = "durable keyed effects"
    knobs = TABLE
    default_protocol = "keyed-fingerprint-reconcile"
    lanes = ("queue", "lease", "w1", "w2", "w3", "w4", "network", "git", "human", "verifier", "deploy", "log",
             "faults", "kernel")
    fault_classes = faults.FAULT_CLASSES
    history_schema = HISTORY_SCHEMA
    history_events = HISTORY_SCHEMA.events
    checks = checks.CHECKS
    progress = ("tasks_completed", "tasks")
    field_types = {
        **{name: (str,) for name in ("task", "transition", "logical", "effect", "outcome", "key", "fingerprint",
                                     "stored_fingerprint", "effect_class", "compensation", "result", "reason")},
        **{name: (int,) for name in ("generation", "workflow_version", "to_version", "observed_version")},
        "renamed": (list,), "completed": (list,),
    }
    review_plan = ReviewPlan(
        title="Durable keyed effects: the seed's four presets and the weakenings it warns about",
        workload="effects-saga",
        protocols=("unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile",
                   "keyed-fingerprint-reconcile,lease_fence=off",       # a zombie worker writes on
                   "keyed-fingerprint-reconcile,receipt_check=trusting",  # any matching-looking object
                   "keyed-fingerprint-reconcile,key_retention=5",       # keys kept shorter than a retry
                   "keyed-fingerprint-reconcile,irreversible_keys=on"),  # the release keyed by its tag
        scenarios=("scenarios/runtime/*.toml",),
    )
    grid_labels = ("transition", "boundary", "fault")

    @property
    def presets(self) -> tuple[str, ...]:
        """The seed's four protocol presets (what a command runs without ``--protocol``); the four reliability
        classes are presets too, named but not run by default."""
        return PRESETS

    def __init__(self, runtime: type[Runtime] = Runtime):
        """``runtime``: the class of the runtime (a subclass overriding one operation plants a code-level
        bug for the quality suite; the operations are the documented seam)."""
        self.runtime_class = runtime

    # -- files ----------------------------------------------------------------------

    def load_scenario(self, data: JsonObject, source) -> RuntimeScenario:
        return load_runtime_scenario(data, source)

    def dump_scenario(self, scenario: RuntimeScenario) -> JsonObject:
        return dump_scenario(scenario)

    def load_workload(self, data: JsonObject, source) -> Workload:
        if isinstance(data.get("faults"), list):
            raise source.error("a workload lists no faults: its [faults] table says which classes to draw",
                               "faults")
        scenario_part, fault_table, limits = split_workload(data, source)
        if "events" in scenario_part or "faults" in scenario_part:
            raise source.error("a workload lists no events or faults: [faults] says which classes to draw",
                               "events" if "events" in scenario_part else "faults")
        scenario_part["faults"] = []
        base = load_runtime_scenario(scenario_part, source)
        return build_workload(self.name, self.fault_classes, base, base.name, base.description,
                              fault_table, limits, source)

    # -- orders and runs ---------------------------------------------------------------

    def parse_event(self, scenario: RuntimeScenario, text: str) -> FaultEvent:
        from sim.core.errors import ScenarioError

        try:
            return faults.parse_fault(text, scenario.workflow)
        except ValueError as error:
            raise ScenarioError(f"fault {text!r}: {error}") from None

    def generate(self, workload: Workload, seed: int) -> tuple[FaultEvent, ...]:
        return faults.generate(workload.base.workflow, workload.classes, workload.rates, workload.per_run_max,
                               workload.swarm, workload.max_events, seed)

    def alphabet(self, workload: Workload) -> list[FaultEvent]:
        return faults.alphabet(workload.base.workflow, workload.classes)

    def replay(self, scenario: RuntimeScenario, protocol: Protocol, events: Iterable[Any] | None = None) -> Replay:
        return runner.replay(scenario, protocol, events, self.runtime_class)

    def machine(self, scenario: RuntimeScenario, protocol: Protocol):
        """The fault-list transition system (:mod:`sim.families.effects.machine`) of a scenario run by the policy
        under faults (a workload's or a fault list's); a script has none (its operations are replayed)."""
        if scenario.faults is None:
            return None
        from sim.core.findings import findings_of
        from sim.families.effects.machine import EffectsMachine

        return EffectsMachine(scenario, protocol, self.runtime_class, self.checks,
                              lambda violations: frozenset(findings_of(self, scenario, violations)))

    def liveness(self, workload: Workload, protocol: Protocol) -> LivenessModel | None:
        """Every accepted task reaches its terminal outcome, under fairness
        (:mod:`sim.families.effects.fairness`); None for a script, which has no machine."""
        machine = self.machine(workload.base, protocol)
        if machine is None:
            return None
        from sim.families.effects.fairness import model

        return model(machine)

    def final_state(self, replay: Replay):
        """The machine's state after a replayed fault list (:meth:`EffectsMachine.state_after`)."""
        rt, driver = replay.state
        assert driver is not None, "a script has no machine state"
        machine = self.machine(driver.scenario, rt.protocol)
        assert machine is not None
        return machine.state_after(replay.events)

    def state_tables(self, scenario: RuntimeScenario, protocol: Protocol, replay: Replay) -> list[StateTable]:
        return tables.state_tables(replay.state[0])

    def beyond_protocol(self, scenario: RuntimeScenario, protocol: Protocol, invariant: str,
                        events: Sequence[Any]) -> str | None:
        """The advisor's answer when no knob removes a counterexample at a keyless endpoint."""
        from sim.families.effects.advice import beyond_protocol

        return beyond_protocol(self, scenario, protocol, invariant, events)

    def candidate_allowed(self, workload: Workload, base: Protocol, candidate: Protocol) -> bool:
        """Whether some endpoint of the workflow can take the knob changes the advisor considers (it never
        proposes ``key+fingerprint`` for endpoints that cannot compare fingerprints)."""
        from sim.families.effects.advice import endpoint_refuses

        return endpoint_refuses(workload.base, base, candidate) is None

    def state_key(self, replay: Replay) -> Hashable:
        """The faults that fired, in the order they fired, and those still waiting.

        Two fault lists with the same key leave the driver the same faults at
        every point, so their runs -- and the runs of any extension -- agree.
        """
        _, driver = replay.state
        events = replay.events
        fired = tuple(str(events[i]) for i in driver.fired if isinstance(i, int))
        waiting = tuple(sorted(str(e) for i, e in enumerate(events) if i in replay.skipped))
        return fired, waiting

    # -- judgement ------------------------------------------------------------------------

    def verdicts(self, replay: Replay) -> list[dict[str, Any]]:
        rt, _ = replay.state
        return list(rt.verdicts)

    def outcome(self, replay: Replay) -> str | None:
        """The last scripted step's verdict; when the protocol skipped every one (``ephemeral-call`` neither
        reconciles nor re-records a receipt), the task's terminal outcome (``succeeded``), else None."""
        verdict = super().outcome(replay)
        if verdict is not None:
            return verdict
        ends = [e.get("outcome") for e in replay.history if e.event == "task_terminal"]
        return ends[-1] if ends else None

    def measure(self, replay: Replay) -> dict[str, float]:
        """Tasks accepted, completed (succeeded), ended otherwise, and escalations to humans."""
        accepted: set[str] = set()
        outcomes: dict[str, str] = {}
        escalated: set[str] = set()
        for event in replay.history:
            if event.event == "accepted":
                accepted.add(event.get("task"))
            elif event.event == "task_terminal":
                outcomes.setdefault(event.get("task"), event.get("outcome"))
            elif event.event == "human_exception":
                escalated.add(event.get("task"))
        out: dict[str, float] = {
            "tasks": len(accepted),
            "tasks_completed": sum(1 for o in outcomes.values() if o == "succeeded"),
            "tasks_compensated_or_failed": sum(1 for o in outcomes.values() if o != "succeeded"),
            "tasks_escalated": len(escalated),
        }
        # the effects predicates read each event alone, whatever the protocol (its values are not needed)
        out.update(fired_measures(TABLE, list(replay.history), None, NoHistory()))
        return out

    def claims(self, tallies: dict[str, dict], protocols: Sequence[Protocol]) -> list[dict]:
        return claims.judge(tallies, protocols)

    # -- presentation ---------------------------------------------------------------------

    def describe(self, event: Event) -> str:
        text = event.event
        for name in ("transition", "fault", "worker", "effect", "outcome", "result"):
            value = event.get(name)
            if value is not None:
                text += f" {value}"
        if event.event == "lease_expired":
            text = f"lease_expired {event.get('worker')} -> {event.get('successor')}"
            if event.get("zombie"):
                text += " (zombie)"
        return text

    def where(self, scenario: RuntimeScenario, violation: Any) -> str:
        """The transition and the kind of object it acts on: ``send_email (email)``.  An unpinned read is
        where the read is (its explanation's ``built_from`` fact names it): every effect built from it breaks
        for one reason, with one fix."""
        read = next((dict(fact.values).get("read") for fact in violation.explanation if fact.role == "built_from"),
                    None)
        name = read or violation.step
        if not name:
            return ""
        for transition in scenario.workflow.transitions:
            if transition.name == name:
                return f"{name} ({transition.object_kind})"
        return str(name)

    def actor(self, event: FaultEvent) -> str:
        return faults.ACTOR_OF_FAULT.get(event.fault, "world")

    def effect_ledger(self, history) -> list:
        return ledger.ledger(history)

    def is_fault(self, event: Event) -> bool:
        if event.event == "transition_failed":
            return event.get("reason") == "postcondition_failed"
        return event.event in FAULT_EVENTS

    def counterexample(self, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Any],
                       meta: JsonObject) -> RuntimeScenario:
        scenario = workload.base.with_events(list(events))
        scenario.name = meta.get("name", scenario.name)
        scenario.description = meta.get("description", "")
        scenario.protocol = protocol.label
        scenario.expect = {}
        scenario.meta = {k: v for k, v in meta.items() if k not in ("name", "description")}
        return scenario

    def single_faults(self, workload: Workload) -> list[Cell]:
        return cruel.cells(workload)

    def review_sections(self, workload: Workload, protocols: Sequence[Protocol], seeds: int) -> list[dict]:
        """The exposure of the design's own workflow (arithmetic and simulation, per transition too), then the
        seed's worked example as a labelled reference table.  (The review puts the smallest reliability class
        each transition needs between them: ``sim.app.reliability_classes``, proved by certify's search, which a
        family does not import.)"""
        from sim.families.effects import exposure

        own, reference = exposure.review_sections(workload.base, protocols, min(seeds, EXPOSURE_REVIEW_TASKS),
                                                  telemetry=workload.telemetry)
        return [own, reference]
