"""The real external system: keys, fingerprints and effect classes as the model's external system treats
them, queries for reconciliation, the request log, durability across restarts, and every fault hook."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
import time

import pytest

from sim.families.effects.state import default_head
from sim.families.effects.state import fingerprint_of as model_fingerprint
from sim.real import external_system
from sim.real.runtimes import worker_kit
from sim.real.runtimes.processes import ExternalProcess, Inbox

pytestmark = pytest.mark.real

ENDPOINTS = {
    "open_pr": {"class": "keyed_creation", "object": "pull_request", "compensation": "close_pr"},
    "post_slack": {"class": "irreversible", "object": "announcement", "keys": False, "reconcile_by": "none"},
    "merge_pr": {"class": "irreversible", "object": "merge", "keys": True, "reconcile_by": "marker"},
    "run_ci": {"class": "idempotent", "object": "ci_run"},
    "charge": {"class": "append", "object": "ledger_entry", "keys": False},
    "fetch_deps": {"class": "read", "object": "object"},
}


@pytest.fixture
def server(tmp_path):
    """A running external system with the endpoints above; ``server.post(...)`` sends a creation."""
    started = []

    def start(fingerprints="check", key_retention_s=604800.0, root=None):
        root = root or tmp_path
        ext = ExternalProcess(root, {"endpoints": ENDPOINTS, "fingerprints": fingerprints,
                                     "key_retention_s": key_retention_s}, root / "clock.sqlite", Inbox())
        ext.start()
        started.append(ext)
        return ext

    yield start
    for ext in started:
        ext.stop()


def post(ext, transition, kind, key=None, arguments=None, request="r1", worker="w1", timeout_s=10.0):
    body = {"task": "task_42", "transition": transition, "logical": transition, "generation": 1,
            "head": default_head("task_42"),
            "arguments": arguments or {"task": "task_42", "transition": transition, "head": default_head("task_42")}}
    headers = {"Content-Type": "application/json", "Fencesim-Request": request, "Fencesim-Worker": worker}
    if key:
        headers["Idempotency-Key"] = key
    connection = http.client.HTTPConnection("127.0.0.1", ext.port, timeout=timeout_s)
    try:
        connection.request("POST", f"/v1/objects/{kind}", body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def get(ext, path):
    connection = http.client.HTTPConnection("127.0.0.1", ext.port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def events(ext):
    return [line["event"] for line in ext.log()]


def wait_hook(ext, event, timeout_s=10.0):
    """The next hook announcement of this kind from the server's stdout."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        source, record = ext.inbox.get(end - time.monotonic())
        if record is not None and record.get("event") == event:
            return record
    raise AssertionError(f"no {event} announcement")


# -- the model's semantics ----------------------------------------------------------------------

def test_fingerprints_are_the_models():
    """The server, the worker kit and the model compute the same fingerprint of the same arguments."""
    arguments = {"task": "task_42", "transition": "open_pr", "head": "dc96f84", "title": "Fix ü"}
    assert external_system.fingerprint_of(arguments) == model_fingerprint(arguments)
    assert worker_kit.fingerprint_of(arguments) == model_fingerprint(arguments)
    assert worker_kit.default_head("task_42") == default_head("task_42")


def test_same_key_same_fingerprint_is_deduplicated_other_fingerprint_rejected(server):
    """A keyed creation: the same key and arguments return the existing object; other arguments are refused."""
    ext = server()
    assert post(ext, "open_pr", "pull_request", key="k1")[1]["outcome"] == "committed"
    status, again = post(ext, "open_pr", "pull_request", key="k1", request="r2")
    assert (status, again["outcome"], again["effect"]) == (200, "deduplicated", "pull_request#1")
    status, other = post(ext, "open_pr", "pull_request", key="k1", request="r3", arguments={"task": "task_42", "x": 1})
    assert (status, other["outcome"], other["effect"]) == (409, "rejected", "pull_request#1")
    log = ext.log()
    assert [line["event"] for line in log] == ["committed", "deduplicated", "rejected"]
    assert log[2]["reason"] == "fingerprint_conflict" and log[2]["stored_fingerprint"] == log[0]["fingerprint"]
    assert [line["seq"] for line in log] == sorted(line["seq"] for line in log)


def test_without_fingerprint_checks_a_reused_key_is_answered_with_the_old_object(server):
    """idempotency=key: the endpoint ignores fingerprints, so other arguments under a known key are deduplicated."""
    ext = server(fingerprints="ignore")
    post(ext, "open_pr", "pull_request", key="k1")
    status, other = post(ext, "open_pr", "pull_request", key="k1", request="r2", arguments={"x": 1})
    assert (status, other["outcome"]) == (200, "deduplicated")
    assert ext.log()[1]["stored_fingerprint"] != ext.log()[1]["fingerprint"]


def test_no_key_or_keys_not_honoured_creates_a_new_object_every_time(server):
    """Without a key, and at an endpoint that takes none (Slack, an unkeyed ledger), every request is new."""
    ext = server()
    numbers = [post(ext, "open_pr", "pull_request", request=f"a{i}")[1]["number"] for i in range(2)]
    numbers += [post(ext, "post_slack", "announcement", key="k", request=f"b{i}")[1]["number"] for i in range(2)]
    numbers += [post(ext, "charge", "ledger_entry", key="c", request=f"c{i}")[1]["number"] for i in range(2)]
    assert numbers == [1, 2, 3, 4, 5, 6]
    assert all("key" not in line for line in ext.log())  # a key the endpoint does not honour is not recorded


def test_an_irreversible_endpoint_declared_with_keys_honours_them(server):
    """merge_pr declares keys = true (a second merge of the same PR is refused): keyed like a creation."""
    ext = server()
    post(ext, "merge_pr", "merge", key="m")
    assert post(ext, "merge_pr", "merge", key="m", request="r2")[1]["outcome"] == "deduplicated"


def test_idempotent_requests_create_nothing_new_with_or_without_keys(server):
    """run_ci: the same task, logical transition and generation is the same effect."""
    ext = server()
    first = post(ext, "run_ci", "ci_run")[1]
    assert post(ext, "run_ci", "ci_run", request="r2")[1] == dict(first, outcome="deduplicated", request="r2")


def test_keys_expire_after_the_retention_of_the_servers_clock(server):
    """A key older than key_retention_s (of the clock the harness moves) is forgotten: a new object."""
    ext = server(key_retention_s=5)
    post(ext, "open_pr", "pull_request", key="k1")
    ext.control("clock", now_s=5)
    assert post(ext, "open_pr", "pull_request", key="k1", request="r2")[1]["outcome"] == "deduplicated"
    ext.control("clock", now_s=6)
    assert post(ext, "open_pr", "pull_request", key="k1", request="r3")[1]["number"] == 2


def test_reads_observe_a_version_that_moves_and_create_nothing(server):
    """A read endpoint answers the world's current version; read_changes moves it."""
    ext = server()
    assert get(ext, "/v1/reads/fetch_deps?task=task_42")[1] == {"outcome": "observed", "version": 1}
    ext.control("read_changes", transition="fetch_deps")
    assert get(ext, "/v1/reads/fetch_deps?task=task_42")[1]["version"] == 2
    assert post(ext, "fetch_deps", "object")[0] == 400
    assert ext.objects() == []


# -- reconciliation --------------------------------------------------------------------------------

def test_queries_by_key_and_by_marker_and_the_endpoints_limits(server):
    """By key (a retained key at an endpoint that honours keys), by task marker; refused where not declared."""
    ext = server()
    post(ext, "open_pr", "pull_request", key="k1")
    status, by_key = get(ext, "/v1/objects?transition=open_pr&key=k1")
    assert status == 200 and [o["effect"] for o in by_key["objects"]] == ["pull_request#1"]
    assert get(ext, "/v1/objects?transition=open_pr&key=other")[1]["objects"] == []
    status, by_marker = get(ext, "/v1/objects?transition=open_pr&task=task_42&logical=open_pr")
    assert by_marker["query"] == "marker" and by_marker["objects"][0]["head"] == default_head("task_42")
    assert get(ext, "/v1/objects?transition=post_slack&task=task_42")[0] == 400  # reconcile_by = none
    assert get(ext, "/v1/objects?transition=merge_pr&key=m")[0] == 400  # reconcile_by = marker
    assert get(ext, "/v1/objects?transition=merge_pr&task=task_42")[0] == 200


def test_foreign_objects_carry_the_marker_but_not_the_head(server):
    """Someone else's object with the task's marker: found by marker, flagged foreign, another head."""
    ext = server()
    ext.control("foreign", task="task_42", transition="open_pr", head="f0e1a2b", arguments={})
    objects = get(ext, "/v1/objects?transition=open_pr&task=task_42&logical=open_pr")[1]["objects"]
    assert [(o["foreign"], o["head"]) for o in objects] == [(True, "f0e1a2b")]


def test_closing_is_a_compensation_and_idempotent(server):
    """POST /v1/objects/N/close closes the object once; again changes nothing."""
    ext = server()
    post(ext, "open_pr", "pull_request", key="k1")
    assert ext.call("POST", "/v1/objects/1/close", {"compensation": "close_pr"})["outcome"] == "closed"
    assert ext.call("POST", "/v1/objects/1/close", {"compensation": "close_pr"})["outcome"] == "already_closed"
    assert get(ext, "/v1/objects/1")[1]["open"] is False


def test_bad_requests_say_what_is_wrong(server):
    """An unknown transition, the wrong kind, a missing field: 4xx with the reason."""
    ext = server()
    assert post(ext, "nope", "pull_request")[0] == 404
    status, answer = post(ext, "open_pr", "branch")
    assert status == 400 and "creates 'pull_request'" in answer["error"]
    connection = http.client.HTTPConnection("127.0.0.1", ext.port, timeout=10)
    connection.request("POST", "/v1/objects/pull_request", body=json.dumps({"transition": "open_pr"}))
    response = connection.getresponse()
    assert response.status == 400 and "needs 'task'" in json.loads(response.read())["error"]


def test_a_bad_endpoint_declaration_is_refused_at_start(tmp_path):
    """The server refuses a workflow endpoint with an unknown class, with one line."""
    ext = ExternalProcess(tmp_path, {"endpoints": {"t": {"class": "teleport"}}}, tmp_path / "c.sqlite", Inbox())
    with pytest.raises(Exception, match="class must be one of"):
        ext.start()


def test_objects_survive_a_restart_and_numbering_goes_on(server, tmp_path):
    """Commits are durable before their reply: a new server on the same state keeps them and the keys."""
    ext = server()
    post(ext, "open_pr", "pull_request", key="k1")
    ext.stop()
    again = server()
    assert post(again, "open_pr", "pull_request", key="k1", request="r2")[1]["outcome"] == "deduplicated"
    assert post(again, "open_pr", "pull_request", request="r3")[1]["number"] == 2


# -- fault hooks ---------------------------------------------------------------------------------------

@pytest.fixture
def victim():
    """A stand-in worker process the hooks can signal."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def test_kill_caller_before_store_kills_then_stores(server, victim):
    """Dispatched, not committed: the caller is SIGKILLed, the request is still stored, its reply reaches no one."""
    ext = server()
    ext.control("workers", w1=victim.pid)
    ext.control("arm", id="f1", transition="open_pr", stage="before_store", action="kill_caller")
    post(ext, "open_pr", "pull_request", key="k1")
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert events(ext) == ["caller_killed", "committed", "reply_lost"]
    assert ext.log()[-1]["reason"] == "receiver_gone"
    assert wait_hook(ext, "request_done")["hooks"] == ["f1"]


def test_kill_caller_after_store_and_hooks_fire_once_for_the_nth_request(server, victim):
    """Committed, no receipt; a hook armed for the 2nd request leaves the 1st alone and fires once."""
    ext = server()
    ext.control("workers", w1=victim.pid)
    ext.control("arm", id="f1", transition="open_pr", nth=2, stage="after_store", action="kill_caller")
    post(ext, "open_pr", "pull_request", request="r1")
    assert victim.poll() is None
    post(ext, "open_pr", "pull_request", request="r2")
    post(ext, "open_pr", "pull_request", request="r3")
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert events(ext) == ["committed", "committed", "caller_killed", "reply_lost", "committed"]


def test_freeze_and_thaw_the_caller(server, victim):
    """A frozen owner: SIGSTOP at the hook, SIGCONT when the harness thaws it."""
    ext = server()
    ext.control("workers", w1=victim.pid)
    ext.control("arm", id="f1", transition="open_pr", stage="before_store", action="freeze_caller")
    post(ext, "open_pr", "pull_request")
    with open(f"/proc/{victim.pid}/stat") as stat:
        assert stat.read().split(") ")[1][0] == "T"
    ext.control("thaw", worker="w1")
    time.sleep(0.1)  # only to let the kernel deliver SIGCONT before reading the state
    with open(f"/proc/{victim.pid}/stat") as stat:
        assert stat.read().split(") ")[1][0] in "SR"


def test_hold_until_released_and_the_caller_times_out(server):
    """A delayed reply: the request is stored, the reply held; the caller stops waiting; the harness releases it."""
    ext = server()
    ext.control("arm", id="f1", transition="open_pr", stage="after_store", action="hold")
    with pytest.raises((TimeoutError, OSError)):
        post(ext, "open_pr", "pull_request", timeout_s=0.5)
    assert wait_hook(ext, "held")["hook"] == "f1"
    assert ext.control("release", hook="f1") == {"released": True}
    assert wait_hook(ext, "request_done")["hooks"] == ["f1"]
    assert events(ext) == ["committed", "held", "released", "reply_lost"]  # the caller had stopped waiting
    assert ext.log()[-1]["reason"] == "receiver_gone"


def test_a_held_request_is_stored_only_when_released(server):
    """A delayed request (before_store): nothing is committed until the harness lets it through."""
    ext = server()
    ext.control("arm", id="f1", transition="open_pr", stage="before_store", action="hold")
    answers = []
    thread = threading.Thread(target=lambda: answers.append(post(ext, "open_pr", "pull_request", key="k1")))
    thread.start()
    wait_hook(ext, "held")
    assert ext.objects() == []
    ext.control("release", hook="f1")
    thread.join(10)
    assert answers[0][1]["outcome"] == "committed" and len(ext.objects()) == 1


def test_lose_reply_and_drop(server):
    """A lost reply: stored, the connection closed without an answer.  A dropped request: nothing stored."""
    ext = server()
    ext.control("arm", id="f1", transition="open_pr", stage="after_store", action="lose_reply")
    ext.control("arm", id="f2", transition="open_pr", nth=2, stage="before_store", action="drop")
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        post(ext, "open_pr", "pull_request", request="r1")
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        post(ext, "open_pr", "pull_request", request="r2")
    assert [line["event"] for line in ext.log() if line["event"] not in ("hook_fired",)] == [
        "committed", "reply_lost", "request_dropped"]
    assert ext.log()[2]["reason"] == "network" and len(ext.objects()) == 1


@pytest.mark.parametrize("key, outcomes", [(None, ["committed", "committed"]), ("k1", ["committed", "deduplicated"])])
def test_duplicate_before_store_serves_a_copy_and_answers_the_later(server, key, outcomes):
    """The network sends a copy: both are served; before the store the caller hears the copy's answer."""
    ext = server()
    ext.control("arm", id="f1", transition="open_pr", stage="before_store", action="duplicate")
    answer = post(ext, "open_pr", "pull_request", key=key)[1]
    log = [line for line in ext.log() if line["event"] in ("committed", "deduplicated", "request_duplicated")]
    assert [line["event"] for line in log] == [outcomes[0], "request_duplicated", outcomes[1]]
    assert log[2]["request"] == "r1+copy" and answer["effect"] == log[2]["effect"]


def test_bad_hooks_are_refused(server):
    """A hook at a stage where its action means nothing is refused with the rule."""
    ext = server()
    with pytest.raises(Exception, match="lose_reply strikes after_store"):
        ext.control("arm", id="f", transition="open_pr", stage="before_store", action="lose_reply")
    with pytest.raises(Exception, match="stage must be one of"):
        ext.control("arm", id="f", transition="open_pr", stage="later", action="hold")


def test_an_endpoint_records_what_the_model_records_of_it():
    """An irreversible endpoint declared approval = false, and one that cannot be queried, say so on their
    committed effects, as the model's do (the checks read it); one that declares nothing adds nothing."""
    from sim.real.external_store import Endpoint

    mail = Endpoint("send_email", {"class": "irreversible", "object": "email", "keys": False,
                                   "reconcile_by": "none", "approval": False})
    assert mail.recorded() == {"approval_required": False, "reconcile_by": "none"}
    assert Endpoint("open_pr", {"class": "keyed_creation", "object": "pull_request"}).recorded() == {}
