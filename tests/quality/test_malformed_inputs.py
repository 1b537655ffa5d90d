"""Malformed input never crashes: Hypothesis mutates valid scenario, runtime scenario, counterexample,
workload, design and history files (and command lines); every one is read or refused with one clear
line (exit 4), never a traceback, never exit 3, never a hang.

The generators know the ways inputs have broken fencesim before: text edits; a value of the wrong
shape at any depth of the file (a table where a string goes, a list where a pair goes); TOML dates and
times; integers beyond 64 bits and beyond the 4,300 digits Python converts; deep nesting; a byte-order
mark; bytes that are not UTF-8; NaN, duplicated keys and misspelt names in JSON lines; and paths that
lead nowhere (a folder, a FIFO, /dev/zero, a name longer than the file system allows).

Most inputs are read in this process by the loaders the commands use -- and the loaded file is then
run, exported and read back, as a command would -- which is cheap; a sample goes through the whole
command line to check that a refusal is one line with exit 4.  The fast lane draws a sample of each
generator; the ``slow`` variants draw many more (``FENCESIM_MALFORMED_EXAMPLES`` scales both).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import signal
import tempfile
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.cli.app import main
from sim.core.errors import FencesimError

REPO = Path(__file__).resolve().parents[2]
#: Inputs per kind of file read in this process (fast lane) and through the command line.
EXAMPLES = int(os.environ.get("FENCESIM_MALFORMED_EXAMPLES", "120"))
CLI_EXAMPLES = max(4, EXAMPLES // 15)
#: The slow variants draw this many times more (FENCESIM_MALFORMED_EXAMPLES raises both for a deeper hunt).
SLOW_FACTOR = 6
SECONDS_PER_INPUT = 20
ALLOWED = {0, 1, 4, 5, 6}


def _text(path: str) -> str:
    return (REPO / path).read_text()


def _history() -> str:
    import sim

    return sim.run_scenario(REPO / "scenarios/seed/concurrent_edit.toml", "none").history.to_jsonl()


def _effects_history() -> str:
    import sim

    return sim.run_scenario(REPO / "scenarios/runtime/pr_lost_response.toml", "keyed").history.to_jsonl()


DESIGN = 'format = 1\nname = "d"\nprotocols = ["step-dedupe", "step"]\nseeds = 2\nworkload = "tiny"\n'

#: kind -> (valid text, suffix, command line through the CLI)
SEEDS = {
    "scenario": (_text("scenarios/seed/concurrent_edit.toml"), ".toml", ["run", "{file}", "-p", "none"]),
    "runtime": (_text("scenarios/runtime/pr_lost_response.toml"), ".toml", ["run", "{file}"]),
    "counterexample": (_text("scenarios/regressions/"
                             "effects_saga_keyed_fingerprint_reconcile_receipt_check_trusting_false_receipt.toml"),
                       ".toml", ["run", "{file}"]),
    "workload": (_text("scenarios/workloads/tiny.toml"), ".toml",
                 ["fuzz", "--workload", "{file}", "--seeds", "2", "--no-advise", "--workers", "1", "--out", "{dir}",
                  "--budget", "5"]),
    "effects-workload": (_text("scenarios/workloads/effects-pr.toml"), ".toml",
                         ["fuzz", "--workload", "{file}", "--seeds", "1", "--no-advise", "--workers", "1",
                          "--out", "{dir}", "--shrink-seconds", "2", "--budget", "5"]),
    "design": (DESIGN, ".toml", ["review", "--design", "{file}", "--seeds", "2", "--out", "{dir}", "--budget", "5"]),
    "history": (_history(), ".jsonl", ["check", "{file}"]),
    "effects-history": (_effects_history(), ".jsonl", ["check", "{file}"]),
}

# -- generators -------------------------------------------------------------------------------------------

HUGE = "9" * 5000
#: Values of every shape, for any field: wrong types, huge and non-finite numbers, TOML dates and times,
#: deep nesting, odd text.
SHAPES = st.sampled_from([
    10 ** 30, 2 ** 63, -1, 0, 1e308, True, False, "", " ", "é", "a\x00b", "a\x0bb", "a\u2028b", "x" * 100_000,
    [], {}, [1], [[1, 2]], [["a"]], {"x": "app.py"}, {"a": {"b": {"c": {}}}}, [[[[[[[[[[[[]]]]]]]]]]]],
    datetime.time(7, 32), datetime.date(1979, 5, 27), datetime.datetime(1979, 5, 27, 7, 32),
    "generic:" + HUGE, "generic:\u00b2", "@1e20", "99:99:99", "plan", "s1", "app.py", "step,,", "fence=",
    "unkeyed-retry", "drift_chek=reject", "step-dedupe,fence=step", "nan", "1e999",
])
#: Paths for the fields that name files (a design's workload and scenarios).
PATHS = st.sampled_from([
    "../../../../etc/passwd", "/dev/zero", "/dev/null", "/proc/self/status", "fifo.toml", ".", "/",
    "x" * 300 + ".toml", "a\x00b.toml", "~/nothing.toml", "*", "/*", "../*.toml", "**/*.toml", "tiny",
    "scenarios/workloads/tiny.toml", "missing.toml", "sub/../tiny.toml",
])
TEXT_EDITS = st.sampled_from(["delete_line", "duplicate_line", "swap_lines", "truncate", "insert_garbage",
                              "replace_token", "nest", "huge_integer"])
BYTE_EDITS = st.sampled_from(["bom", "latin1", "cut_character", "nul"])


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
        elif edit == "huge_integer":  # beyond what a TOML or JSON reader converts
            lines[i] = lines[i].replace("1", HUGE, 1) if "1" in lines[i] else f"{lines[i]}{HUGE}"
        else:
            value = data.draw(SHAPES)
            words = lines[i].split("=", 1)
            rendered = json.dumps(value, ensure_ascii=False, default=str)
            lines[i] = f"{words[0]}= {rendered}" if len(words) == 2 else rendered
    return "\n".join(lines) + "\n"


def _mutate_bytes(raw: bytes, data) -> bytes:
    """Byte-level damage: a BOM, a Latin-1 byte, a UTF-8 character cut in half, a NUL."""
    edit = data.draw(BYTE_EDITS)
    at = data.draw(st.integers(0, max(0, len(raw) - 1)))
    if edit == "bom":
        return b"\xef\xbb\xbf" + raw
    if edit == "latin1":
        return raw[:at] + b"\xe9" + raw[at:]
    if edit == "cut_character":
        return raw[:at] + "é".encode()[:1] + raw[at:]
    return raw[:at] + b"\x00" + raw[at:]


def _paths_in(value, prefix=()):
    """Every (key path) into a parsed table, for changing a value at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths_in(item, (*prefix, key))
    elif isinstance(value, list):
        for position, item in enumerate(value[:8]):
            yield (*prefix, position)
            yield from _paths_in(item, (*prefix, position))


def _set_at(table, path, value) -> None:
    node = table
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _mutate_table(text: str, data, kind: str) -> str | None:
    """A structural mutation: a value of any shape at any depth, a key dropped or added, a path changed."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    paths = list(_paths_in(table))
    choice = data.draw(st.sampled_from(["set", "set", "drop", "add", "path"]))
    if choice == "set" and paths:
        _set_at(table, data.draw(st.sampled_from(paths)), data.draw(SHAPES))
    elif choice == "drop" and paths:
        path = data.draw(st.sampled_from(paths))
        node = table
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1]) if isinstance(node, dict) else node.pop(path[-1])
    elif choice == "path" and kind == "design":
        key = data.draw(st.sampled_from(["workload", "scenarios"]))
        path = data.draw(PATHS)
        table[key] = [path] if key == "scenarios" else path
    else:
        table[data.draw(st.sampled_from(["limitz", "faults", "limits", "swarm", "expect", "protocol", "workflow",
                                         "arguments", "name", "protocols", "workload"]))] = data.draw(SHAPES)
    try:
        return tomli_w.dumps(table)
    except (TypeError, ValueError):  # a value tomli_w cannot write: fall back to a text mutation
        return None


def _mutate_history(text: str, data) -> str:
    """A JSON-lines mutation: a field of any shape, a key twice, NaN, a huge integer, indices out of order,
    a misspelt event or verdict, another family's event."""
    lines = text.splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    row = json.loads(lines[i])
    edit = data.draw(st.sampled_from(["field", "duplicate_key", "nan", "huge_integer", "index", "misspell",
                                      "other_family", "null"]))
    key = data.draw(st.sampled_from(sorted(row)))
    if edit == "field":
        value = data.draw(SHAPES)
        row[key] = value if not isinstance(value, (datetime.date, datetime.time)) else value.isoformat()
        lines[i] = json.dumps(row, ensure_ascii=False)
    elif edit == "duplicate_key":
        lines[i] = lines[i][:-1] + f',"{key}":"again"}}'
    elif edit == "nan":
        lines[i] = (lines[i][:-1] + ',"time":NaN}' if "time" not in row
                    else lines[i].replace('"time":', '"time":NaN,"x":', 1))
    elif edit == "huge_integer":
        lines[i] = lines[i][:-1] + f',"copy":{HUGE}}}'
    elif edit == "index":
        row["index"] = data.draw(st.sampled_from([0, -1, 2 ** 63, row.get("index", 0)]))
        lines[i] = json.dumps(row)
    elif edit == "misspell":
        row["event"] = row["event"][:-1] or "x"
        if "verdict" in row:
            row["verdict"] = "aplied"
        lines[i] = json.dumps(row)
    elif edit == "other_family":
        lines.insert(i, '{"actor":"git","event":"committed","task":"t","transition":"open_pr","effect":"e"}'
                     if '"deliver"' in text else '{"actor":"executor","event":"deliver","step":"s1"}')
    else:
        row[key] = None
        lines[i] = json.dumps(row)
    return "\n".join(lines) + "\n"


def _mutation(kind: str, data) -> bytes:
    text, suffix, _ = SEEDS[kind]
    way = data.draw(st.sampled_from(["structure", "structure", "text", "bytes"]))
    mutated = None
    if way == "structure":
        mutated = _mutate_history(text, data) if suffix == ".jsonl" else _mutate_table(text, data, kind)
    if mutated is None:
        mutated = _mutate_text(text, data)
    raw = mutated.encode("utf-8", "surrogatepass")
    return _mutate_bytes(raw, data) if way == "bytes" else raw


# -- reading in this process --------------------------------------------------------------------------------

def _read_scenario(path: Path) -> None:
    """What ``run`` does with a scenario: load, replay, JSON out, and the export writes and reads back."""
    from sim.core.result import run_scenario
    from sim.registry import FAMILIES

    scenario = FAMILIES.load_scenario(path)
    family = FAMILIES.family_for(scenario)
    result = run_scenario(family, scenario, family.parse_protocol(scenario.protocol or family.presets[0]))
    json.dumps(result.to_json(), ensure_ascii=False)
    _round_trip(family, scenario, path)


def _round_trip(family, scenario, path: Path) -> None:
    """An exported scenario is a file ``run`` reads back."""
    from sim.registry import FAMILIES

    copy = path.with_name("exported.toml")
    copy.write_text(tomli_w.dumps(family.dump_scenario(scenario)), encoding="utf-8")
    FAMILIES.load_scenario(copy)


def _read_workload(path: Path) -> None:
    """What ``fuzz`` does with a workload: load, draw orders, replay, export a counterexample, read it back."""
    from sim.registry import FAMILIES

    workload = FAMILIES.load_workload(str(path))
    family = FAMILIES.family_for(workload)
    protocol = family.parse_protocol(family.presets[0])
    for seed in (0, 1):
        order = family.generate(workload, seed)
        family.replay(workload.base, protocol, order)
        meta = {"name": f"{workload.name}__x", "invariant": family.safety_invariants[0], "minimal": True}
        _round_trip(family, family.counterexample(workload, protocol, family.safety_invariants[0], order, meta),
                    path)


def _read_design(path: Path) -> None:
    from sim.app.designs import load_design

    load_design(path)


def _read_history(path: Path) -> None:
    from sim.core.history import History
    from sim.registry import FAMILIES

    history = History.read(path)
    if len(history):
        _, report = FAMILIES.judge_history(history, None, str(path))
        json.dumps(report.status())


READERS = {"scenario": _read_scenario, "runtime": _read_scenario, "counterexample": _read_scenario,
           "workload": _read_workload, "effects-workload": _read_workload, "design": _read_design,
           "history": _read_history, "effects-history": _read_history}


class _Alarm(Exception):
    pass


@contextlib.contextmanager
def _time_limit(what: str):
    def ring(signum, frame):
        raise _Alarm

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(SECONDS_PER_INPUT)
    try:
        yield
    except _Alarm:
        pytest.fail(f"hung for {SECONDS_PER_INPUT} s: {what}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _input_folder(kind: str, content: bytes):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{SEEDS[kind][1]}"
        path.write_bytes(content)
        os.mkfifo(Path(folder) / "fifo.toml")  # a path trick: reading it must never block
        yield Path(folder), path


def _read(kind: str, content: bytes) -> None:
    with _input_folder(kind, content) as (folder, path), _time_limit(f"{kind}: {content[:200]!r}"):
        cwd = os.getcwd()
        os.chdir(folder)  # relative paths in a design resolve here, as for a user
        try:
            READERS[kind](path)
        except FencesimError as error:
            message = str(error)
            assert "\n" not in message and "datetime." not in message, (kind, message[:600])
            assert "x" * 1000 not in message and len(message) < 10_000, (kind, message[:600])  # values cut
        finally:
            os.chdir(cwd)


# -- every field in every shape (deterministic: the class stays closed) ------------------------------------

#: A value of each shape, put in place of every field of every kind of file in turn.
_HUGE_PLACEHOLDER = 86420864208642086420864208642  # beyond 64 bits; written, then made 5,000 digits long
FIELD_SHAPES = ({"x": "app.py"}, ["a"], [1], [["a", "b", "c"]], 10 ** 30, _HUGE_PLACEHOLDER, -1, True, 1.5, "",
                "x" * 100_000, "a\x0bb", datetime.time(7, 32), datetime.date(1979, 5, 27), None)
#: The fast lane reads one variant in this many (a different slice per kind); the slow variant all.
FIELD_STRIDE = 9


def _json_safe(value):
    return value.isoformat() if isinstance(value, (datetime.date, datetime.time)) else value


def _field_variants(kind: str) -> list[bytes]:
    """The seed file of ``kind`` with each field (at any depth) replaced by each of FIELD_SHAPES (None:
    the field dropped, or null in JSON)."""
    import copy

    text, suffix, _ = SEEDS[kind]
    out = []
    if suffix == ".jsonl":
        rows = [json.loads(line) for line in text.splitlines()]
        for position, row in enumerate(rows):
            for path in _paths_in(row):
                for shape in FIELD_SHAPES:
                    changed = copy.deepcopy(rows)
                    _set_at(changed[position], path, _json_safe(shape))
                    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in changed)
                    out.append(body.replace(str(_HUGE_PLACEHOLDER), HUGE).encode())
        return out
    table = tomllib.loads(text)
    for path in _paths_in(table):
        for shape in FIELD_SHAPES:
            changed = copy.deepcopy(table)
            if shape is None:
                node = changed
                for key in path[:-1]:
                    node = node[key]
                node.pop(path[-1])
            else:
                _set_at(changed, path, shape)
            out.append(tomli_w.dumps(changed).replace(str(_HUGE_PLACEHOLDER), HUGE).encode())
    return out


@pytest.mark.quality
@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_every_field_in_a_sample_of_shapes_is_read_or_refused(kind):
    """A slice of (field, shape) variants of each kind of file: read, run and exported, or refused in one line."""
    variants = _field_variants(kind)
    offset = sorted(SEEDS).index(kind) % FIELD_STRIDE
    for content in variants[offset::FIELD_STRIDE]:
        _read(kind, content)


@pytest.mark.slow
@pytest.mark.quality
@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_every_field_in_every_shape_is_read_or_refused(kind):
    """Every field of every kind of file, in every shape of FIELD_SHAPES."""
    for content in _field_variants(kind):
        _read(kind, content)


# -- through the command line -------------------------------------------------------------------------------

def _run(args: list[str]) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with _time_limit(f"fencesim {' '.join(args)[:300]}"):
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                main(args)
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 0
    return code, stderr.getvalue()


def _check_cli(kind: str, content: bytes) -> None:
    with _input_folder(kind, content) as (folder, path):
        args = [a.format(file=path, dir=folder / "out") for a in SEEDS[kind][2]]
        code, stderr = _run(args)
    assert "Traceback" not in stderr, (kind, content[:400], stderr[-1500:])
    assert code in ALLOWED, (kind, code, content[:400], stderr[-600:])
    if code == 4:
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("fencesim: "), stderr
        assert "datetime." not in lines[0] and len(lines[0]) < 2200, lines[0][:300]


def _settings(examples: int):
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.mark.quality
@pytest.mark.parametrize("kind", sorted(SEEDS))
@_settings(EXAMPLES)
@given(data=st.data())
def test_a_mutated_file_is_read_or_refused(kind, data):
    """A mutated file of every kind is read, run and exported, or refused with one line; never a crash."""
    _read(kind, _mutation(kind, data))


@pytest.mark.quality
@pytest.mark.parametrize("kind", sorted(SEEDS))
@_settings(CLI_EXAMPLES)
@given(data=st.data())
def test_a_mutated_file_through_the_command_line(kind, data):
    """A sample through the command: exit 0/1/4/5/6, a refusal one line, never a traceback or a hang."""
    _check_cli(kind, _mutation(kind, data))


@pytest.mark.slow
@pytest.mark.quality
@pytest.mark.parametrize("kind", sorted(SEEDS))
@_settings(EXAMPLES * SLOW_FACTOR)
@given(data=st.data())
def test_many_mutated_files_are_read_or_refused(kind, data):
    """The exhaustive variant of the in-process test."""
    _read(kind, _mutation(kind, data))


@pytest.mark.slow
@pytest.mark.quality
@pytest.mark.parametrize("kind", sorted(SEEDS))
@_settings(CLI_EXAMPLES * SLOW_FACTOR)
@given(data=st.data())
def test_many_mutated_files_through_the_command_line(kind, data):
    """The exhaustive variant of the command-line sample."""
    _check_cli(kind, _mutation(kind, data))


def _command_line(data) -> list[str]:
    command = data.draw(st.sampled_from(["run", "check", "fuzz", "cruel", "exposure", "matrix", "review",
                                         "conform"]))
    options = data.draw(st.lists(st.sampled_from([
        "--protocol", "--seeds", "--workers", "--out", "--junit", "--budget", "--max-events", "--family",
        "--workload", "--design", "--baseline", "--resume", "--backend", "--tasks", "--ambiguous-rate",
        "--seed-start", "--shrink-seconds", "--bogus", "-p", "-w"]), max_size=3))
    values = [data.draw(st.sampled_from(["", "-5", "0", "nan", "step,,", "/", "/dev/null", "\udcff", "1e999",
                                         "keyed", "zzz", "x" * 300, "none", "runtime", "1" + "0" * 30,
                                         "9" * 5000, "step-dedupe", "fence=step,dedupe=journal"]))
              for _ in options]
    args = [command] + [part for pair in zip(options, values) for part in pair]
    if command in ("review", "fuzz", "cruel", "exposure", "conform") and "--bogus" not in options:
        # keep the valid ones cheap: a malformed value must fail before any work
        if "--seeds" not in options and command in ("fuzz", "review", "conform"):
            args += ["--seeds", "x"]
        if command in ("cruel", "exposure"):
            args += ["--bogus-cheap"]
    return args


def _check_command_line(args: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        code, stderr = _run([a if a != "/" else folder for a in args])
    assert "Traceback" not in stderr, (args, stderr[-1500:])
    assert code in ALLOWED, (args, code, stderr[-600:])


@pytest.mark.quality
@_settings(EXAMPLES)
@given(data=st.data())
def test_malformed_command_lines_never_crash(data):
    """Random flags and values for every command end in a usage or input error, never a traceback."""
    _check_command_line(_command_line(data))


@pytest.mark.slow
@pytest.mark.quality
@_settings(EXAMPLES * SLOW_FACTOR)
@given(data=st.data())
def test_many_malformed_command_lines_never_crash(data):
    """The exhaustive variant of the command-line test."""
    _check_command_line(_command_line(data))
