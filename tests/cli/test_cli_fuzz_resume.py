"""--resume keeps every option the run started with (the budget too: what is left of it), the printed command
is complete, the sweep state is checked like any input, and one folder has one writer at a time."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import reaped

from sim.cli.fuzz_state import STATE_FILE, check_against, load_workload, read_state
from sim.core.errors import InputError
from sim.registry import FAMILIES

REPO = Path(__file__).resolve().parents[2]
PROGRAM = [sys.executable, "-c", "from sim.cli import main; main()"]


def _start(args, cwd=REPO):
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return reaped(subprocess.Popen([*PROGRAM, *map(str, args)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True))


def _interrupt_after_state(process, out: Path, extra_s: float = 0.0) -> str:
    state = out / STATE_FILE
    deadline = time.monotonic() + 120
    while not state.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(extra_s)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    return stderr


@pytest.fixture(scope="module")
def state_folder(tmp_path_factory):
    """A real sweep state: a run interrupted after its first chunks."""
    out = tmp_path_factory.mktemp("state") / "out"
    process = _start(["fuzz", "-w", "tiny", "-p", "none", "-p", "plan", "--seeds", "400000", "--workers", "1",
                      "--out", out, "--budget", "600"])
    _interrupt_after_state(process, out, 0.5)
    return out


def _load(folder):
    data = read_state(folder)
    workload = load_workload(data, folder / STATE_FILE)
    check_against(data, FAMILIES.family_for(workload), workload, folder / STATE_FILE)
    return data


def test_a_state_written_on_interrupt_holds_every_option(state_folder):
    """The state keeps the arguments, the budget and what was spent of it, the outputs and the settings."""
    data = _load(state_folder)
    assert data["arguments"]["budget_s"] == 600 and 0 < data["budget"]["spent_s"] < 600
    assert data["arguments"]["shrink_seconds"] == 30 and data["settings"]["workers"] == 1
    assert data["sweep"]["seeds_done"] > 0


def _paths(value, prefix=()):
    """Every path into a JSON value (to mutate each field in turn)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from _paths(item, (*prefix, index))


def _set(document, path, value):
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


BAD_VALUES = [None, "text", -1, 10**30, 1.5e300, [], {}, [1, 2], True, {"x": 1}]


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_every_tampered_field_is_one_line_never_a_traceback(state_folder, tmp_path):
    """Each field of a real state replaced by a wrong shape, a huge or negative number, null, a list or a
    table: the state is refused with an InputError, or (a value that happens to be allowed) read with
    consistent tallies -- never any other exception, never an impossible count."""
    original = json.loads((state_folder / STATE_FILE).read_text())
    folder = tmp_path / "t"
    folder.mkdir()
    tried = refused = 0
    for path in list(_paths(original))[1:]:
        for value in BAD_VALUES:
            document = copy.deepcopy(original)
            _set(document, path, value)
            (folder / STATE_FILE).write_text(json.dumps(document))
            tried += 1
            try:
                data = _load(folder)
            except InputError as error:
                assert "\n" not in str(error) and STATE_FILE in str(error)
                refused += 1
                continue
            for tally in data["sweep"]["tallies"].values():
                assert tally["runs"] == data["sweep"]["seeds_done"] >= tally["violating_runs"] >= 0
    assert tried > 400 and refused > tried * 0.8, (tried, refused)


@pytest.mark.parametrize("text", ["", "{", "[]", '{"format": 2}', "1" * 5000, "[" * 100000, "NaN",
                                  '{"format": 2, "arguments": {"seeds": 1e999}}'])
def test_a_state_that_is_not_json_or_not_a_state_is_refused(tmp_path, text):
    (tmp_path / STATE_FILE).write_text(text)
    with pytest.raises(InputError):
        read_state(tmp_path)


def test_impossible_tallies_are_refused(state_folder, tmp_path):
    """10^20 violating runs of a few hundred, a violation with no order, an order that does not violate."""
    original = json.loads((state_folder / STATE_FILE).read_text())
    tally = next(iter(original["sweep"]["tallies"]))
    cases = []
    more = copy.deepcopy(original)
    more["sweep"]["tallies"][tally]["violating_runs"] = 10**20
    cases.append(more)
    orphan = copy.deepcopy(original)
    orphan["sweep"]["found"] = []
    cases.append(orphan)
    clean = copy.deepcopy(original)
    clean["sweep"]["found"][0]["order"] = ["plan"]
    cases.append(clean)
    for document in cases:
        (tmp_path / STATE_FILE).write_text(json.dumps(document))
        with pytest.raises(InputError):
            _load(tmp_path)


def test_the_cli_refuses_a_tampered_state_in_one_line(cli, state_folder, tmp_path):
    document = json.loads((state_folder / STATE_FILE).read_text())
    document["sweep"]["seeds_done"] = "many"
    (tmp_path / STATE_FILE).write_text(json.dumps(document))
    done = cli("fuzz", "--resume", tmp_path)
    assert done.returncode == 4 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and "seeds_done" in done.stderr


def test_resume_refuses_a_budget_or_shrink_limit_it_keeps(cli, tmp_path):
    (tmp_path / STATE_FILE).write_text("{}")
    done = cli("fuzz", "--resume", tmp_path, "--budget", "5", "--shrink-seconds", "2")
    assert done.returncode == 4 and "drop --budget, --shrink-seconds" in done.stderr, done.stderr


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_two_resumes_of_one_folder_do_not_both_proceed(tmp_path):
    """The second --resume on a folder another run holds is refused (exit 4) and the first goes on."""
    out = tmp_path / "out"
    first = _start(["fuzz", "-w", "tiny", "-p", "none", "--seeds", "400000", "--workers", "1", "--out", out])
    _interrupt_after_state(first, out)
    one = _start(["fuzz", "--resume", out])
    time.sleep(4)
    two = subprocess.run([*PROGRAM, "fuzz", "--resume", str(out)], cwd=REPO, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "NO_COLOR": "1"})
    one.send_signal(signal.SIGTERM)
    _, stderr = one.communicate(timeout=60)
    assert two.returncode == 4 and "in use by another fencesim run" in two.stderr, two.stderr
    assert one.returncode == 2 and "--resume" in stderr, stderr


@pytest.mark.slow
def test_a_resumed_budgeted_sweep_spends_only_what_was_left(tmp_path):
    """Interrupted, then resumed with the printed command: the resumed run spends no more than the budget
    left (plus the documented overrun), says how much was left and which seeds ran, and the JSON and JUnit
    name the budget."""
    out, junit = tmp_path / "out", tmp_path / "fuzz.xml"
    budget = 16.0
    started = time.monotonic()
    process = _start(["fuzz", "-w", "tiny", "-p", "none", "--seeds", "2000000", "--workers", "1", "--out", out,
                      "--budget", budget, "--junit", junit, "--no-advise"])
    stderr = _interrupt_after_state(process, out, 2.0)
    first_s = time.monotonic() - started
    command = next(line for line in stderr.splitlines() if "--resume" in line).split("continue it with ", 1)[1]
    assert command == f"fencesim fuzz --resume {out}"
    spent = json.loads((out / STATE_FILE).read_text())["budget"]["spent_s"]
    assert 0 < spent < first_s
    began = time.monotonic()
    resumed = subprocess.run([*PROGRAM, *command.split()[1:], "--json"], cwd=REPO, capture_output=True, text=True,
                             timeout=300, env={**os.environ, "NO_COLOR": "1"})
    elapsed = time.monotonic() - began
    assert resumed.returncode == 1, resumed.stderr
    document = json.loads(resumed.stdout)
    left = budget - spent
    # start-up (about 2 s of imports), drawing and writing are the documented overrun; measured on 2 idle
    # cores: 9.7 s wall with 13.7 s left (the sweep stops at its share of the budget); slack for a loaded machine
    assert elapsed < left + 15, (elapsed, left)
    assert document["budget_s"] == budget and "sweep" in document["budget_stopped"]
    assert abs(document["budget_left_at_resume_s"] - left) < 0.2
    assert document["seeds_done"] < 2000000 and f"seeds 0..{document['seeds_done'] - 1} ran" in resumed.stderr
    assert f"{left:.1f} s left" in resumed.stderr
    assert 'name="budget_s" value="16"' in junit.read_text()


@pytest.mark.slow  # over 3 s: outside the fast lane
def test_a_budget_that_does_not_bind_is_still_reported(cli, tmp_path):
    """A budget given is named in the output, the JSON and the JUnit file, bound or not."""
    junit = tmp_path / "fuzz.xml"
    done = cli("fuzz", "-w", "tiny", "-p", "plan", "--seeds", "20", "--workers", "1", "--budget", "500",
               "--out", tmp_path / "o", "--junit", junit, "--json")
    document = json.loads(done.stdout)
    assert document["budget_s"] == 500 and document["budget_stopped"] == []
    assert "--budget 500 s given, not reached" in done.stderr
    assert 'name="budget_s" value="500"' in junit.read_text()
    none = cli("fuzz", "-w", "tiny", "-p", "plan", "--seeds", "20", "--workers", "1", "--out", tmp_path / "p",
               "--json")
    assert json.loads(none.stdout)["budget_s"] is None


@pytest.mark.slow  # over 3 s: outside the fast lane
@pytest.mark.parametrize("edit, says", [
    (lambda text: text.replace('"format": 3,', '"format": 7, "format": 3,', 1), "appears twice"),
    (lambda text: text.replace('"measures": {', '"measures": {"fired_deddupe": 0, ', 1), "fired_deddupe"),
])
def test_a_key_twice_or_a_measure_no_sweep_sums_is_refused(state_folder, tmp_path, edit, says):
    """A state with a key given twice (which one would win?) or an unknown measure is refused, one line."""
    text = (state_folder / STATE_FILE).read_text()
    edited = edit(text)
    assert edited != text
    (tmp_path / STATE_FILE).write_text(edited)
    with pytest.raises(InputError, match=says) as error:
        _load(tmp_path)
    assert "\n" not in str(error.value)
    _load(state_folder)  # the state as written is accepted
