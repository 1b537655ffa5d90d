"""Malformed input never crashes: Hypothesis mutates valid scenario, runtime scenario, workload, design,
history, baseline and counterexample files and command lines; every one ends with a clear line and exit 4
(or, when the mutation happens to stay valid, an ordinary exit), never a traceback, never exit 3, never a
hang.  The command line runs in this process, each input under a time alarm.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import tempfile
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.cli.app import main

REPO = Path(__file__).resolve().parents[2]
#: Inputs per kind of file; six kinds and the command lines make the total.
EXAMPLES = int(os.environ.get("FENCESIM_MALFORMED_EXAMPLES", "1500"))
SECONDS_PER_INPUT = 20
ALLOWED = {0, 1, 4, 5, 6}


def _text(path: str) -> str:
    return (REPO / path).read_text()


def _history() -> str:
    import sim

    return sim.run_scenario(REPO / "scenarios/seed/concurrent_edit.toml", "none").history.to_jsonl()


SEEDS = {
    "scenario": (_text("scenarios/seed/concurrent_edit.toml"), ".toml", ["run", "{file}", "-p", "none"]),
    "runtime": (_text("scenarios/runtime/pr_lost_response.toml"), ".toml", ["run", "{file}"]),
    "counterexample": (_text("scenarios/regressions/effects_saga_keyed_fingerprint_reconcile_receipt_check_trusting_false_receipt.toml"),
                       ".toml", ["run", "{file}"]),
    "workload": (_text("scenarios/workloads/tiny.toml"), ".toml",
                 ["fuzz", "--workload", "{file}", "--seeds", "2", "--no-advise", "--workers", "1", "--out", "{dir}"]),
    "effects-workload": (_text("scenarios/workloads/effects-pr.toml"), ".toml",
                         ["fuzz", "--workload", "{file}", "--seeds", "1", "--no-advise", "--workers", "1",
                          "--out", "{dir}", "--shrink-seconds", "2"]),
    "history": (_history(), ".jsonl", ["check", "{file}"]),
}

# values that have broken parsers before: huge, non-finite, wrong type, deep, odd text
NASTY = st.sampled_from([
    10 ** 30, -1, 0, 2 ** 63, 1e308, float("inf"), float("nan"), True, "", " ", "nan", "true", "false", "é",
    "\udcff", "a\x00b", "x" * 5000, [], {}, [[[[[]]]]], {"a": {"b": {"c": {}}}}, "generic:99999999999999999999",
    "plan", "s1", "app.py", "@nan", "99:99:99", "-1", "1e999", "step,,", "=", "fence=", "unkeyed-retry",
])
TEXT_EDITS = st.sampled_from(["delete_line", "duplicate_line", "swap_lines", "truncate", "insert_garbage",
                              "replace_token", "nest"])


def _mutate_text(text: str, data) -> str:
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        if not lines:
            break
        edit = data.draw(TEXT_EDITS)
        i = data.draw(st.integers(0, len(lines) - 1))
        if edit == "delete_line":
            del lines[i]
        elif edit == "duplicate_line":
            lines.insert(i, lines[i])
        elif edit == "swap_lines":
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif edit == "truncate":
            lines[i] = lines[i][: data.draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif edit == "insert_garbage":
            lines.insert(i, data.draw(st.text(max_size=30)))
        elif edit == "nest":
            lines.insert(i, "x = " + "[" * 5000 + "]" * 5000)
        else:
            value = data.draw(NASTY)
            words = lines[i].split("=", 1)
            rendered = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) else repr(value)
            lines[i] = f"{words[0]}= {rendered}" if len(words) == 2 else rendered
    return "\n".join(lines) + "\n"


def _mutate_table(text: str, data) -> str | None:
    """A structural mutation: parse, change one key's value or drop or add a key, write back."""
    import tomllib

    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    keys = list(table)
    choice = data.draw(st.sampled_from(["set", "drop", "add"]))
    if choice == "set" and keys:
        table[data.draw(st.sampled_from(keys))] = data.draw(NASTY)
    elif choice == "drop" and keys:
        table.pop(data.draw(st.sampled_from(keys)))
    else:
        table[data.draw(st.sampled_from(["limitz", "faults", "limits", "swarm", "expect", "protocol", "workflow"]))] = (
            data.draw(NASTY))
    try:
        return tomli_w.dumps({k: v for k, v in table.items() if not (isinstance(v, float) and v != v)})
    except (TypeError, ValueError):
        return None


class _Alarm(Exception):
    pass


def _run(args: list[str]) -> tuple[int, str]:
    def ring(signum, frame):
        raise _Alarm

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(SECONDS_PER_INPUT)
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                main(args)
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 0
    except _Alarm:
        pytest.fail(f"hung for {SECONDS_PER_INPUT} s: fencesim {' '.join(args)}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, stderr.getvalue()


def _check(kind: str, content: str) -> None:
    _, suffix, command = SEEDS[kind]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(content.encode("utf-8", "surrogatepass"))
        args = [a.format(file=path, dir=Path(folder) / "out") for a in command]
        code, stderr = _run(args)
    assert "Traceback" not in stderr, (kind, content[:400], stderr[-1500:])
    assert code in ALLOWED, (kind, code, content[:400], stderr[-600:])
    if code == 4:
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("fencesim: "), stderr


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.mark.quality
@pytest.mark.parametrize("kind", sorted(SEEDS))
@SETTINGS
@given(data=st.data())
def test_a_mutated_file_never_crashes(kind, data):
    """A text or structural mutation of a valid file ends with exit 0/1/4/5/6 and one clear line, never a
    traceback or a hang."""
    text = SEEDS[kind][0]
    mutated = _mutate_table(text, data) if SEEDS[kind][1] == ".toml" and data.draw(st.booleans()) else None
    _check(kind, mutated if mutated is not None else _mutate_text(text, data))


@pytest.mark.quality
@SETTINGS
@given(data=st.data())
def test_malformed_command_lines_never_crash(data):
    """Random flags and values for every command end in a usage or input error, never a traceback."""
    command = data.draw(st.sampled_from(["run", "check", "fuzz", "cruel", "exposure", "matrix", "review"]))
    options = data.draw(st.lists(st.sampled_from([
        "--protocol", "--seeds", "--workers", "--out", "--junit", "--budget", "--max-events", "--family",
        "--workload", "--design", "--baseline", "--resume", "--backend", "--tasks", "--ambiguous-rate",
        "--seed-start", "--shrink-seconds", "--bogus", "-p", "-w"]), max_size=3))
    values = [data.draw(st.sampled_from(["", "-5", "0", "nan", "step,,", "/", "/dev/null", "\udcff", "1e999",
                                         "keyed", "zzz", "x" * 300, "none", "runtime"])) for _ in options]
    args = [command] + [part for pair in zip(options, values) for part in pair]
    if command in ("review", "fuzz", "cruel", "exposure") and not any(o in options for o in ("--bogus",)):
        # keep the valid ones cheap: a malformed value must fail before any work
        if "--seeds" not in options and command in ("fuzz", "review"):
            args += ["--seeds", "x"]
        if command in ("cruel", "exposure"):
            args += ["--bogus-cheap"]
    with tempfile.TemporaryDirectory() as folder:
        args = [a if a != "/" else folder for a in args]
        code, stderr = _run(args)
    assert "Traceback" not in stderr, (args, stderr[-1500:])
    assert code in ALLOWED, (args, code, stderr[-600:])
