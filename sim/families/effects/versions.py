"""Workflow versions: an upgrade mid-task, and how a task resumes under the version policy.

Version 2 is the one the scenario declares (``[versions.2]``: its transitions, renames that keep the
logical step, inserted checks), else the built-in upgrade (:func:`sim.families.effects.workflow.version_2`).

``version_policy``: pinned, replay (compatible replay or stay), migrate (recorded), none (unannounced)."""

from __future__ import annotations

from sim.families.effects.system import RuntimeBase


def _version_for(rt: RuntimeBase, worker: str, task: str, view) -> int:
    task_version, code = view.version, rt.code_version
    policy = rt.knobs.version_policy
    if task_version == code or policy == "pinned":
        return task_version
    if policy == "none":
        return code
    new = rt.workflows[code]
    if policy == "replay":
        recorded = [n for n in view.transitions if view.transitions[n].status != "pending"]
        expected = new.names()[: len(recorded)]
        if recorded != expected:
            rt._emit(worker, "replay_divergence", task, recorded=recorded, replayed=expected,
                     workflow_version=code)
            return task_version
    rt._emit(worker, "migrated", task, from_version=task_version, to_version=code,
             renamed=[list(pair) for pair in new.renamed], method="replay" if policy == "replay" else "migration")
    return code


def upgrade(rt: RuntimeBase, version: int) -> None:
    line = f"upgrade {version}"
    if version != 2 or rt.code_version != 1:
        raise rt.refused(line, "only the upgrade from version 1 to 2 is modelled")
    rt.code_version = 2
    new = rt.workflows[2]
    rt._emit("deploy", "upgraded", None, workflow_version=2, inserted=list(new.inserted),
             renamed=[list(p) for p in new.renamed], inserted_before=_inserted_before(new) or None)
    return


def _inserted_before(new) -> list[list[str]]:
    """Each step version 2 inserts and the transition it is inserted before (logical names): what
    ``check_after_effect`` holds a migrated task to."""
    out = []
    names = new.names()
    for name in new.inserted:
        after = [t for t in new.transitions[names.index(name) + 1:] if t.name not in new.inserted]
        if after:
            out.append([new.transitions[names.index(name)].logical, after[0].logical])
    return out
