"""The four moments of a transition: intent recorded, dispatched, committed externally, receipt recorded.

Also what happens to a request between them: a lost request, a lost or late
response, a duplicated request, and the worker's timeout.

Intent, dispatch, commit, response, timeout, receipt."""

from __future__ import annotations

from sim.families.effects.external import Request
from sim.families.effects.state import Evidence, WorkerTask, fingerprint_of
from sim.families.effects.system import MODEL_CALL_UNITS, TOOL_CALL_UNITS, Fenced, RuntimeBase


def intent(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"intent {name} by {worker}"
    wt = rt.worker_task(worker, task, line)
    transition = rt.transition(wt, name)
    if transition is None:
        raise rt.refused(line, f"{name} is not in workflow version {wt.version}", task)
    status = wt.view.status(name)
    if status != "pending":
        raise rt.refused(line, f"{name} is already {status}", task)
    if rt.approval_due(task, transition) and rt.knobs.approval == "on" and name not in wt.view.approved:
        what = "irreversible" if transition.effect_class == "irreversible" else "gated by an approval"
        raise rt.refused(line, f"{name} is {what} and not approved", task)
    generation = wt.view.get(name).generation
    arguments = rt.arguments(task, transition)
    rt.worker_append(worker, task, "intent_recorded", transition=name, logical=transition.logical,
                     generation=generation, key=rt.key_of(task, transition, generation),
                     fingerprint=fingerprint_of(arguments), effect_class=transition.effect_class,
                     compute_units=MODEL_CALL_UNITS)
    return


def dispatch(rt: RuntimeBase, worker: str, task: str, name: str, changed: bool = False) -> None:
    line = f"{'retry_changed' if changed else 'dispatch'} {name} by {worker}"
    wt = rt.worker_task(worker, task, line)
    transition = rt.transition(wt, name)
    if transition is None:
        raise rt.refused(line, f"{name} is not in workflow version {wt.version}", task)
    status = wt.view.status(name)
    allowed = {"intent", "failed", "not_found"}
    if rt.knobs.reconcile == "off" or transition.is_read:  # a read is repeated, never reconciled
        allowed.add("unknown")
    if changed:
        allowed |= {"dispatched", "unknown"}
    if status not in allowed:
        reason = ("its outcome is unknown: reconcile first" if status in ("unknown", "dispatched")
                  else f"{name} is {status}")
        raise rt.refused(line, reason, task)
    view = wt.view.get(name)
    if view.attempts and rt.knobs.delivery == "at_most_once" and not transition.is_read:
        raise rt.refused(line, f"delivery=at_most_once: {name} was dispatched once already", task)
    arguments = rt.arguments(task, transition)
    if not changed and rt.consume_fault(task, transition.logical, "retry_changed"):
        changed = True  # the retry regenerates its request body (a new model call)
    if changed:
        arguments = dict(arguments, body_revision=view.attempts + 1)
    fingerprint = fingerprint_of(arguments)
    acts_on = rt._acts_on(worker, task, wt, transition)
    rt.request_count += 1
    request_id = f"r{rt.request_count}"
    rt.worker_append(worker, task, "dispatched", transition=name, attempt=view.attempts + 1,
                     request=request_id, key=view.key, fingerprint=fingerprint,
                     changed_arguments=changed or None, compute_units=TOOL_CALL_UNITS)
    rt.last_dispatch_s[(task, name)] = rt.env.now
    request = Request(request_id=request_id, worker=worker, task=task, transition=name, logical=transition.logical,
                      kind=transition.object_kind, generation=view.generation, key=view.key, fingerprint=fingerprint,
                      head=str(arguments["head"]), attempt=view.attempts, effect_class=transition.effect_class,
                      honours_keys=rt.honours_keys(transition), read_versions=acts_on,
                      key_retention_s=transition.key_retention_s,
                      compares_fingerprints=transition.compares_fingerprints)
    rt.in_flight.append(request)
    rt.last_request = request
    if rt.knobs.checkpoint == "optimistic":
        _checkpoint(rt, worker, task, wt, extra=name)
    if rt.on_dispatch is not None:
        rt.on_dispatch(request)
    return


def commit(rt: RuntimeBase, task: str, name: str, request_id: str | None = None) -> None:
    request = _take_request(rt, "commit", task, name, request_id)
    if request.effect_class == "read":
        return _observe(rt, task, name, request)
    outcome, obj = rt.external.handle(request, rt.env.now)
    common = dict(transition=name, logical=request.logical, generation=request.generation,
                  request=request.request_id,
                  key=request.key if rt.external.keyed(request) else None,
                  fingerprint=request.fingerprint, effect=obj.effect, number=obj.number, head=obj.head)
    if outcome == "committed":
        transition = rt._known_transition(name)
        read_versions = [list(pair) for pair in request.read_versions] or None
        rt._emit("git", "committed", task, effect_class=transition.effect_class,
                 compensation=transition.compensation, read_versions=read_versions,
                 **rt.endpoint_record(task, transition), **common)
    elif outcome == "deduplicated":
        rt._emit("git", "deduplicated", task, stored_fingerprint=obj.fingerprint, **common)
    else:
        record = rt._emit("git", "rejected", task, reason="fingerprint_conflict",
                          stored_fingerprint=obj.fingerprint, **common)
        rt._verdict(record, name, "rejected:fingerprint_conflict")
    rt.responses.append((request, outcome, obj))
    return


def respond(rt: RuntimeBase, task: str, name: str, request_id: str | None = None) -> None:
    request, outcome, obj = _take_response(rt, "respond", task, name, request_id)
    memory = rt.workers.get(request.worker)
    task_memory = memory.tasks.get(task) if memory is not None and memory.alive else None
    if task_memory is None:
        rt._emit("network", "response_lost", task, transition=name, request=request.request_id,
                 worker=request.worker, reason="receiver_gone", effect=obj.effect)
        return
    late = task_memory.view.status(name) not in ("dispatched",) or None
    rt._emit(request.worker, "response_delivered", task, transition=name, request=request.request_id,
             outcome=outcome, effect=obj.effect, number=obj.number, late=late)
    if not late:
        read = outcome == "observed"
        task_memory.evidence[name] = Evidence("response", outcome, obj.effect, request.request_id,
                                              obj.number if read else None, obj.content_hash if read else None)
    waiting = task_memory.waiting.pop(request.request_id, None)
    if waiting is not None and not waiting.triggered:
        waiting.succeed()
    return


def lose_response(rt: RuntimeBase, task: str, name: str, request_id: str | None = None) -> None:
    item = _take_response(rt, "lose_response", task, name, request_id)
    rt._emit("network", "response_lost", task, transition=name, request=item[0].request_id,
             worker=item[0].worker, reason="network", effect=item[2].effect)
    return


def lose_request(rt: RuntimeBase, task: str, name: str, request_id: str | None = None) -> None:
    request = _take_request(rt, "lose_request", task, name, request_id)
    rt._emit("network", "request_lost", task, transition=name, request=request.request_id)
    return


def duplicate_request(rt: RuntimeBase, task: str, name: str, request_id: str | None = None) -> Request | str:
    """The network delivers a request twice: a copy goes into flight (even after the original arrived)."""
    line = f"duplicate_request {name}" + (f" {request_id}" if request_id else "")
    original = rt._find(rt.in_flight, task, name, request_id) or rt._find(
        rt.responses, task, name, request_id, get=lambda r: r[0])
    if isinstance(original, tuple):
        original = original[0]
    if original is None:
        raise rt.refused(line, f"no request of {name} to duplicate", task)
    rt.request_count += 1
    copy = original.again(f"r{rt.request_count}")  # found by its task and transition: those are the same too
    rt.in_flight.append(copy)
    rt._emit("network", "request_duplicated", task, transition=name, request=copy.request_id,
             original=original.request_id)
    return copy


def timeout(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"timeout {name} by {worker}"
    wt = rt.worker_task(worker, task, line)
    if wt.view.status(name) != "dispatched":
        raise rt.refused(line, f"{name} is not awaiting a response", task)
    waited = any(r.worker == worker and r.task == task and r.transition == name for r in rt.in_flight) or any(
        r[0].worker == worker and r[0].task == task and r[0].transition == name for r in rt.responses)
    outcome = rt.knobs.on_timeout
    transition = rt.transition(wt, name)
    read = transition is not None and transition.is_read
    record = rt.worker_append(worker, task, "timed_out", transition=name, outcome=outcome,
                              reason="no_response" if waited else "in_doubt_on_resume",
                              effect_class="read" if read else None)
    rt._verdict(record, name, outcome)
    return


def receipt(rt: RuntimeBase, worker: str, task: str, name: str) -> None:
    line = f"receipt {name} by {worker}"
    wt = rt.worker_task(worker, task, line)
    status = wt.view.status(name)
    if status == "done":
        raise rt.refused(line, f"{name} already has a receipt", task)
    evidence = wt.evidence.get(name)
    if evidence is None or evidence.outcome == "rejected":
        raise rt.refused(line, f"no response or lookup proves {name}", task)
    observed = {}
    if evidence.version is not None:  # a read records what it observed (pinned: with its content hash)
        transition = rt.transition(wt, name)
        if transition is None:
            raise rt.refused(line, f"{name} is not in workflow version {wt.version}", task)
        observed = dict(logical=transition.logical, observed_version=evidence.version,
                        content_hash=evidence.content_hash if rt.knobs.pin_reads == "on" else None)
    record = rt.worker_append(worker, task, "receipt_recorded", transition=name, effect=evidence.effect,
                              receipt=evidence.effect, source=evidence.source, request=evidence.request_id,
                              **observed)
    if evidence.version is not None:
        wt.observations[name] = evidence.version
    verdict = {"reconciliation": "done:reconciled", "response": "done"}[evidence.source]
    if evidence.outcome == "deduplicated":
        verdict = "done:deduplicated"
    rt._verdict(record, name, verdict)
    del wt.evidence[name]
    if rt.knobs.checkpoint == "verified":
        _checkpoint(rt, worker, task, wt)
    return


def _observe(rt: RuntimeBase, task: str, name: str, request: Request) -> None:
    """A read reaches the outside world: it observes the version there now (and creates nothing)."""
    observation = rt._observation(task, request.logical, request.kind)
    rt._emit("git", "observed", task, transition=name, logical=request.logical, request=request.request_id,
             effect=observation.effect, version=observation.number, content_hash=observation.content_hash)
    rt.responses.append((request, "observed", observation))


def _checkpoint(rt: RuntimeBase, worker: str, task: str, wt: WorkerTask, extra: str | None = None) -> None:
    completed = [n for n, v in wt.view.transitions.items() if v.status == "done"]
    if extra is not None and extra not in completed:
        completed.append(extra)
    try:
        rt.worker_append(worker, task, "checkpoint_saved", completed=completed, workflow_version=wt.version)
    except Fenced:
        return  # the transition's own record stands; the worker stops at its next step
    rt.checkpoint_s[task] = rt.env.now


def _take_request(rt: RuntimeBase, op: str, task: str, name: str, request_id: str | None) -> Request:
    """The request of ``name`` in flight (``request_id``'s, else the first), out of flight; refused without one."""
    request = rt._find(rt.in_flight, task, name, request_id)
    if request is None:
        raise rt.refused(f"{op} {name}" + (f" {request_id}" if request_id else ""),
                         f"no request of {name} in flight", task)
    rt.in_flight.remove(request)
    return request


def _take_response(rt: RuntimeBase, op: str, task: str, name: str, request_id: str | None) -> tuple:
    """The pending response of ``name`` (``(request, outcome, object)``), no longer pending; refused without one."""
    item = rt._find(rt.responses, task, name, request_id, get=lambda r: r[0])
    if item is None:
        raise rt.refused(f"{op} {name}" + (f" {request_id}" if request_id else ""),
                         f"no response of {name} pending", task)
    rt.responses.remove(item)
    return item
