"""The workspace family through the family contract: revision-fenced patch steps."""

from __future__ import annotations

from typing import Any, Hashable, Iterable, Mapping, Sequence

from sim.core.family import Cell, Family, Replay, ReviewPlan, StateTable
from sim.core.history import Event
from sim.core.knobs import Protocol
from sim.core.liveness import LivenessModel
from sim.core.values import JsonObject
from sim.core.workload import FAULT_KEYS, Workload, build_workload, split_workload, unknown_key_error
from sim.families.workspace import checks, claims, fairness, faults, ledger, liveness, tables
from sim.families.workspace import replay as replaying
from sim.families.workspace.history_schema import SCHEMA as HISTORY_SCHEMA
from sim.families.workspace.knobs import TABLE
from sim.families.workspace.machine import WorkspaceMachine
from sim.families.workspace.scenario import Action, WorkspaceScenario, build_scenario, parse_action, scenario_to_dict
from sim.families.workspace.targets import read_targets

#: Keys of a workspace workload's ``[faults]`` beyond the ones every family has.
WORKSPACE_FAULT_KEYS = ("targets", "settle")
#: Who makes each kind of input event happen (the lane of ``lanes`` it belongs to).
ACTOR_OF_KIND = {"plan": "planner", "replan": "planner", "dispatch": "client", "retry": "client",
                 "deliver": "network", "duplicate": "network", "lose_ack": "network", "ack": "executor",
                 "preempt": "executor", "human_edit": "human"}


class WorkspaceFamily(Family):
    """Planner, client, executor, humans and a router on one workspace (``docs/workspace.md``)."""

    name = "workspace"
    title = "revision-fenced steps"
    knobs = TABLE
    default_protocol = "step-dedupe"
    lanes = ("planner", "router", "client", "network", "executor", "human")
    fault_classes = faults.FAULT_CLASSES
    history_schema = HISTORY_SCHEMA
    history_events = HISTORY_SCHEMA.events
    checks = checks.CHECKS
    progress = ("steps_applied", "steps_planned")
    field_types = {
        **{name: (str,) for name in ("step", "path", "verdict", "fence", "dedupe", "journal_key", "origin",
                                     "hash_before", "expected_prior_hash", "stamped_pre_hash", "domain", "preempted")},
        **{name: (int,) for name in ("stamped_base_rev", "rev_at_apply", "claimed_base_rev", "copy")},
        "hunks_before": (dict,), "expected_prior_hunks": (dict,), "skipped": (bool,),
    }
    grid_labels = ("fault", "position")
    review_plan = ReviewPlan(
        title="Revision-fenced steps: the seed's four rows and the weakenings it discusses",
        workload="seed-fuzz",
        protocols=("none", "plan", "step", "step-dedupe",
                   "fence=step,stamp_at=apply",            # the seed code's stamp, read at apply
                   "fence=step,dedupe=memory",             # an in-process dedupe set that dies with the server
                   "step-dedupe,journal_write=after_write",  # a journal not written atomically with the patch
                   "step-dedupe,drift_check=reject"),      # the seed's advice: log both values, reject drift
        scenarios=("scenarios/seed/*.toml",),
    )

    def __init__(self, machine: type[WorkspaceMachine] = WorkspaceMachine):
        """``machine``: the transition system (a subclass plants a code-level bug for the quality suite)."""
        self.machine_class = machine
        self._machines: dict[tuple, WorkspaceMachine] = {}

    def __getstate__(self) -> dict[str, object]:
        return dict(self.__dict__, _machines={})  # a worker process builds its own

    # -- files ----------------------------------------------------------------------

    def load_scenario(self, data: JsonObject, source) -> WorkspaceScenario:
        return build_scenario(data, source)

    def dump_scenario(self, scenario: WorkspaceScenario) -> JsonObject:
        return scenario_to_dict(scenario)

    def load_workload(self, data: JsonObject, source) -> Workload:
        """A workload: a scenario without events, ``[faults]`` (with this family's ``targets`` and
        ``settle``) and ``[limits]``."""
        scenario_part, fault_table, limits = split_workload(data, source)
        fault_table = dict(fault_table)
        for key in fault_table:
            if key not in FAULT_KEYS and key not in WORKSPACE_FAULT_KEYS:
                raise unknown_key_error(source, "[faults]", key, FAULT_KEYS + WORKSPACE_FAULT_KEYS)
        raw_targets = fault_table.pop("targets", None)
        settle = fault_table.pop("settle", False)
        scenario_part.setdefault("events", [])
        base = build_scenario(scenario_part, source)
        workload = build_workload(self.name, self.fault_classes, base, base.name, base.description,
                                  fault_table, limits, source)
        if not isinstance(settle, bool):
            raise source.error(f"settle must be true or false, not {settle!r}"[:200], "settle")
        if settle:
            workload.extra["settle"] = True
        if raw_targets is not None:
            workload.extra["targets"] = read_targets(raw_targets, base, workload.classes, source)
        return workload

    # -- orders and runs ---------------------------------------------------------------

    def parse_event(self, scenario: WorkspaceScenario, text: str) -> Action:
        return parse_action(text, scenario.files, scenario.step_ids())

    def generate(self, workload: Workload, seed: int) -> tuple[Action, ...]:
        return faults.generate(workload, seed)

    def alphabet(self, workload: Workload) -> list[Action]:
        return faults.alphabet(workload)

    def alphabets(self, workload: Workload) -> list[list[Action]]:
        """The events of the plan's first step, then its first two, ...: most counterexamples
        strike the first step, so short orders are found before the whole alphabet is searched."""
        count = len(workload.base.plan)
        return [faults.alphabet(workload, steps) for steps in range(1, count)] + [faults.alphabet(workload)]

    def replay(self, scenario: WorkspaceScenario, protocol: Protocol, events: Iterable[Action] | None = None) -> Replay:
        return replaying.replay(scenario, protocol, events, machine=self.machine(scenario, protocol))

    def machine(self, scenario: WorkspaceScenario, protocol: Protocol) -> WorkspaceMachine:
        """The machine of a (scenario, protocol); kept while its files, plan and re-plan are the same objects
        (it caches the plan, a pure function of them, across the runs of a sweep)."""
        key = (id(scenario.files), id(scenario.plan), id(scenario.replan), tuple(sorted(protocol.knobs.items())))
        machine = self._machines.get(key)
        stale = machine is not None and (machine.scenario.files is not scenario.files
                                         or machine.scenario.plan is not scenario.plan)
        if machine is None or stale:
            if len(self._machines) >= MACHINES_KEPT:
                self._machines.clear()
            machine = self._machines[key] = self.machine_class(scenario, protocol)
        return machine

    def liveness(self, workload: Workload, protocol: Protocol) -> LivenessModel:
        """Every planned step settles; no request waits forever (:mod:`sim.families.workspace.fairness`)."""
        return fairness.MODEL

    def final_state(self, replay: Replay):
        return replay.state.state

    def state_tables(self, scenario: WorkspaceScenario, protocol: Protocol, replay: Replay) -> list[StateTable]:
        return tables.state_tables(tuple(scenario.files), self.final_state(replay))

    def state_key(self, replay: Replay) -> Hashable:
        return replay.state.state  # the state value is its own key (labels never tell states apart)

    def footprint_kind(self, event: Action) -> str:
        """``preempt POINT`` arms a crash for the next delivery: a footprint of its own (``preempt_at``)."""
        return "preempt_at" if event.kind == "preempt" and event.point is not None else event.kind

    def footprint_keys(self, workload: Workload, event: Action) -> Mapping[str, Iterable[str]]:
        """``[step]`` is the event's step; ``[path]`` the file it touches -- for a step, every file its plan and
        re-plan name (a re-plan may move it)."""
        if event.step is not None:
            paths = [spec.path for spec in (*workload.base.plan, *workload.base.replan) if spec.step_id == event.step]
            return {"step": (event.step,), "path": tuple(dict.fromkeys(paths))}
        if event.path is not None:
            return {"path": (event.path,)}
        return {}

    # -- judgement ------------------------------------------------------------------------

    def verdicts(self, replay: Replay) -> list[dict[str, Any]]:
        return replaying.verdicts_of(replay.history)

    def outcome(self, replay: Replay) -> str | None:
        return replaying.outcome_of(replay.history)

    def measure(self, replay: Replay) -> dict[str, float]:
        counts = {name: 0 for name in VERDICT_COLUMNS}
        for event in replay.history:
            verdict = event.get("verdict")
            if event.event not in ("ack", "lose_ack") and verdict in VERDICT_COLUMNS:
                counts[verdict] += 1
        out: dict[str, float] = {f"verdict_{k.replace(':', '_')}": v for k, v in counts.items()}
        world = replay.state
        out["steps_planned"] = len(world.machine.plan_specs) if world is not None else 0
        out["steps_applied"] = len({e.get("step") for e in replay.history
                                    if e.event == "deliver" and e.get("verdict") == "applied"})
        out.update(self.extra_measures(replay))
        return out

    def extra_measures(self, replay: Replay) -> dict[str, float]:
        """Per-run numbers of honest liveness and of the platform mechanisms (scopes, recovery, checkpoints, the
        bounded journal):
        steps applied safely, compensations and checkpoint costs, journal size, client re-plans, and
        which non-default mechanism acted (``fired_<knob>``).  See :mod:`sim.families.workspace.liveness`.
        :meth:`measure` returns them after its own (a sweep's tallies sum them like the others)."""
        world = replay.state
        if world is None:
            return {}
        return liveness.measures(replay.history, world.machine.protocol, world.state)

    #: Honest liveness: (work done safely, work planned) among the names :meth:`extra_measures` and
    #: :meth:`measure` return -- what the work-done figure and the advisor's cost read.
    safe_progress = ("steps_applied_safely", "steps_planned")

    def claims(self, tallies: dict[str, dict], protocols: Sequence[Protocol]) -> list[dict]:
        return claims.judge(tallies, protocols)

    # -- presentation ---------------------------------------------------------------------

    def describe(self, event: Event) -> str:
        text = event.event
        if event.get("step"):
            text += f" {event['step']}"
        if event.event == "human_edit":
            text += f" {event.get('path')}" + (f"#{event['hunk']}" if event.get("hunk") else "")
        if event.event == "preempt":
            text += f" {event.get('point', 'now')}"
        if event.event == "replan" and event.get("stale"):
            text += " stale"
        if event.event == "tests_fail":
            text += f" {event.get('path')}"
        if event.event == "dispatch" and event.get("held"):
            text += " (held back)"
        if event.get("verdict") and event.event not in ("ack", "lose_ack"):
            text += f" -> {event['verdict']}"
        return text

    def fault_count(self, workload: Workload, order: Sequence[Action]) -> int:
        """Events beyond the fault-free plan-dispatch-deliver-ack: interference, lost acks, re-sends."""
        return sum(1 for event in order if event.kind in FAULT_KINDS)

    def effect_ledger(self, history) -> list:
        return ledger.ledger(history)

    def where(self, scenario: WorkspaceScenario, violation: Any) -> str:
        """The seed's failure domain the violation falls in (``stale_plan``, ``lost_ack``,
        ``duplicate_delivery``, ``replan_drift``; :mod:`sim.families.workspace.checks`): a lost update over a
        human's edit and one re-applied by a retry are two bugs with two fixes (a fence; a dedupe journal),
        where the step and file it happens at are not -- every step breaks the same way, with the same fix."""
        return violation.domain or ""

    def actor(self, event: Action) -> str:
        return ACTOR_OF_KIND.get(event.kind, "world")


    def is_fault(self, event: Event) -> bool:
        return event.event in FAULT_KINDS

    def counterexample(self, workload: Workload, protocol: Protocol, invariant: str, events: Sequence[Action],
                       meta: JsonObject) -> WorkspaceScenario:
        scenario = workload.base.with_events(list(events))
        scenario.name = meta.get("name", scenario.name)
        scenario.description = meta.get("description", "")
        scenario.protocol = protocol.label
        scenario.expect = {}
        scenario.meta = {k: v for k, v in meta.items() if k not in ("name", "description")}
        return scenario

    def single_faults(self, workload: Workload) -> list[Cell]:
        """Each fault class of the workload inserted once at each point of the fault-free order."""
        base = faults.base_order(workload)
        cells = []
        for event in self.alphabet(workload):
            if event in base:
                continue
            for position in range(1, len(base) + 1):
                order = tuple(base[:position]) + (event,) + tuple(base[position:])
                cells.append(Cell((str(event), f"after {base[position - 1]}"), order))
        return cells


#: Event kinds that are faults in an order (a delivery of a re-sent copy is not one more fault).
FAULT_KINDS = frozenset({"human_edit", "preempt", "lose_ack", "retry", "duplicate", "replan", "tests_fail"})
#: Machines a family keeps (one per scenario and protocol of a sweep, in practice).
MACHINES_KEPT = 256

VERDICT_COLUMNS = ("applied", "deduped", "rejected:stale_rev", "rejected:pre_hash", "rejected:drift",
                   "rejected:overlap", "compensated")
