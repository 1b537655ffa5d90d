"""A faithful transcription of the ``fence_sim.py`` fixture of the workspace seed article
(see ``docs/workspace.md``, "The seed's fixture and table"), used as a reference model
beside fencesim's own.

Kept as close to the article as Python allows, bugs included: ``stamp``
re-reads the current rev and hash at apply time (so the step fence checks
nothing), and ``plan`` re-records the plan base when the new model re-plans
(so the executor is told of the re-route).  Only the bookkeeping that the
seed's table needs is added: which steps were applied, so a second
application can be written "applied twice" as the table writes it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    step_id: str
    base_rev: int | None
    path: str
    pre_hash: str
    patch: str


class Workspace:
    def __init__(self):
        self.rev = 0
        self.files = {"app.py": "v0"}
        self.journal: set = set()  # persisted with the workspace
        self.applied: list[str] = []  # added: which steps were written, for "applied twice"

    def hash(self, path):
        return self.files[path]

    def write(self, path, content):
        self.files[path] = content
        self.rev += 1


class Executor:
    """fence: 'none' | 'plan' | 'step'; dedupe: journal-backed idempotency"""

    def __init__(self, ws, fence="step", dedupe=True):
        self.ws, self.fence, self.dedupe = ws, fence, dedupe
        self.plan_rev = None

    def plan(self, rev):
        self.plan_rev = rev

    def stamp(self, s):
        if self.fence == "step":
            return Step(s.step_id, self.ws.rev, s.path, self.ws.hash(s.path), s.patch)
        if self.fence == "plan":
            return Step(s.step_id, self.plan_rev, s.path, s.pre_hash, s.patch)
        return s

    def exec(self, s):
        s = self.stamp(s)
        key = (s.step_id, s.base_rev)
        if self.dedupe and key in self.ws.journal:
            return "deduped"
        if self.fence != "none":
            if s.base_rev != self.ws.rev:
                return "rejected:stale_rev"
            if self.ws.hash(s.path) != s.pre_hash:
                return "rejected:pre_hash"
        self.ws.write(s.path, s.patch)
        self.ws.applied.append(s.step_id)
        if self.dedupe:
            self.ws.journal.add(key)
        return "applied"


def _as_written(ws: Workspace, step_id: str, verdict: str) -> str:
    if verdict == "applied" and ws.applied.count(step_id) > 1:
        return "applied twice"
    return verdict


def scenario_concurrent_edit(fence, dedupe):
    ws = Workspace(); ex = Executor(ws, fence=fence, dedupe=dedupe); ex.plan(ws.rev)
    s1 = Step("s1", 0, "app.py", "v0", "v1")
    s2 = Step("s2", 1, "app.py", "v1", "v2")
    assert ex.exec(s1) == "applied"
    ws.write("app.py", "human-refactor")  # interference: rev 2
    return _as_written(ws, "s2", ex.exec(s2))


def scenario_preemption_retry(fence, dedupe):
    ws = Workspace(); ex = Executor(ws, fence=fence, dedupe=dedupe)
    s1 = Step("s1", 0, "app.py", "v0", "v1")
    ex.exec(s1)
    # ack lost; client replays s1 against a fresh executor, same persisted workspace
    return _as_written(ws, "s1", Executor(ws, fence=fence, dedupe=dedupe).exec(s1))


def scenario_replan_drift(fence, dedupe):
    ws = Workspace(); ex = Executor(ws, fence=fence, dedupe=dedupe); ex.plan(ws.rev)
    ex.exec(Step("s1", 0, "app.py", "v0", "v1"))
    ex.plan(ws.rev)  # new model re-plans from rev 1
    return _as_written(ws, "s2", ex.exec(Step("s2", 0, "app.py", "v0", "v1-tail")))


SCENARIOS = {
    "concurrent_edit": scenario_concurrent_edit,
    "preemption_retry": scenario_preemption_retry,
    "replan_drift": scenario_replan_drift,
}

#: The seed table's rows as (fence, dedupe) of the fixture.
ROWS = {
    "fence=none": ("none", False),
    "fence=plan": ("plan", False),
    "fence=step": ("step", False),
    "dedupe on": ("step", True),
}


def seed_code_table(dedupe_everywhere: bool = False) -> dict[str, dict[str, str]]:
    """What the fixture prints for each row and scenario."""
    table = {}
    for row, (fence, dedupe) in ROWS.items():
        table[row] = {
            name: scenario(fence, True if dedupe_everywhere else dedupe) for name, scenario in SCENARIOS.items()
        }
    return table
