"""Hostile inputs of every kind, counted: tracebacks, blind passes, runs over their limits.

    PYTHONPATH=. python benchmarks/hostile.py [--count N] [--seed S] [--time-limit SECONDS] [--kind KIND ...]

Inputs are drawn from the project's own files (scenarios, exported counterexamples, workloads, designs),
from histories the simulator records for shipped workloads, from a sweep state an interrupted fuzz run
leaves, and from the bound of every numeric option; each is damaged or edited at random (a line dropped or
doubled, a value swapped for a hostile one -- a huge or negative number, nan, a long or control-character
string, a list for a string --, two events swapped, a fact copied from another event, bytes cut off).  Each
is run in this process (the command line's ``main``, or for workloads, designs and states the loader the
command calls first) under a time limit per input and a memory limit for the whole run.

Per kind it counts:

* **traceback**: an exception other than fencesim's refusal escaped, or the command line said "internal
  error" (exit 3);
* **blind pass**: a history judged ``ok`` (exit 0) although it contradicts itself by construction or its
  unchanged history is judged otherwise; a sweep state edited to claim fewer violations, accepted; for
  ``certify``, ``diff`` and baselines, see ``benchmarks/hostile_outputs.py``;
* **over limit**: an input that ran past the time limit or out of memory;
* **outside**: a command that wrote (opened for writing, made, renamed or removed) a file outside the
  folders its options name for output; **clobber**: one that changed or removed a file a user had.

The run passes (exit 0) when every count is 0.  Not a test: a run takes minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import resource
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim.cli import main  # noqa: E402
from sim.core.errors import FencesimError  # noqa: E402
from sim.registry import FAMILIES  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from hostile_outputs import COLUMNS, WATCH, OutputInputs, print_table  # noqa: E402

#: Memory of the whole run (an input that needs more is over its limit).
MEMORY_LIMIT_BYTES = 6 * 1024 ** 3
KINDS = ("history", "scenario", "counterexample", "workload", "design", "sweep_state", "numeric_option", "certify",
         "diff", "baseline")
SHARE = {"history": 0.35, "scenario": 0.10, "counterexample": 0.10, "workload": 0.08, "design": 0.04,
         "sweep_state": 0.08, "numeric_option": 0.10, "certify": 0.03, "diff": 0.08, "baseline": 0.05}
HOSTILE_VALUES = [0, -1, 2 ** 63, -2 ** 63, 10 ** 30, 1e309, -1e309, float("nan"), 1.5, "", " ", "x" * 5000,
                  "\x00", "\u202e", "\u2028", "\ud7ff", "aplied", [], {}, [1, [2, [3]]], True, None, "../../etc",
                  "0" * 400, 99999999999, 0.0000001]


class Overtime(BaseException):
    """An input ran past its time limit (a BaseException: the command line's ``except Exception`` lets it by)."""


def _alarm(signum, frame):
    raise Overtime


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """The command line in this process, watched: a command run here writes nowhere unless its kind allows a
    folder (:class:`hostile_outputs.Watch`)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            WATCH.run(lambda: main(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0
    return code, out.getvalue(), err.getvalue()


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, (int,)):
        return str(value)
    if value is None:
        return '""'
    return json.dumps(value, ensure_ascii=False)


def damage_text(text: str, rng: random.Random) -> str:
    """A TOML file damaged or edited at one place."""
    lines = text.split("\n")
    how = rng.choice(["drop", "double", "value", "value", "value", "swap", "cut", "bytes", "event"])
    i = rng.randrange(len(lines))
    if how == "drop":
        del lines[i]
    elif how == "double":
        lines.insert(i, lines[i])
    elif how == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "cut":
        return text[:rng.randrange(len(text) + 1)]
    elif how == "bytes":
        at = rng.randrange(len(text) + 1)
        return text[:at] + "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(1, 8))) + text[at:]
    elif how == "event":
        candidates = [k for k, line in enumerate(lines) if line.strip().startswith('"')]
        if candidates:
            k = rng.choice(candidates)
            lines[k] = rng.choice(['"deliver s9",', '"dispatch s1",', '"crash w7",', '"preempt nowhere",',
                                   '"human_edit ../x.py",', '"commit publish_release",', '"",', '"x" ,' * 3])
    else:
        assigned = [k for k, line in enumerate(lines) if "=" in line and not line.lstrip().startswith("#")]
        if assigned:
            k = rng.choice(assigned)
            key = lines[k].split("=", 1)[0]
            lines[k] = f"{key}= {toml_value(rng.choice(HOSTILE_VALUES))}"
    return "\n".join(lines)


# -- histories --------------------------------------------------------------------------------------------

def recorded_histories() -> list[str]:
    texts = []
    for name in ("tiny", "retries", "journal", "multi-file", "three-files", "effects-saga", "effects-zombie",
                 "effects-release", "usage-charge", "pinned-dependencies"):
        workload = FAMILIES.load_workload(name)
        family = FAMILIES.family_for(workload)
        for label in family.presets:
            for seed in range(3):
                replay = family.replay(workload.base, family.parse_protocol(label), family.generate(workload, seed))
                texts.append(replay.history.to_jsonl())
    texts += [p.read_text() for p in sorted((REPO / "scenarios" / "histories").glob("*.jsonl"))]
    return texts


def judged(text: str, folder: Path) -> int:
    path = folder / "h.jsonl"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, _, err = run_cli(["check", str(path)])
    if code == 3 or "Traceback" in err:
        raise RuntimeError(err[-2000:])
    return code


def contradict(rows: list[dict], rng: random.Random) -> list[dict] | None:
    """One planted contradiction of a kind the issue lists (None where the history has no place for it)."""
    kinds = []
    deliveries = [i for i, r in enumerate(rows) if r["event"] == "deliver" and "verdict" in r]
    if deliveries:
        kinds += ["fence", "dedupe", "no_verdict", "journal_key", "skipped", "rev", "hash"]
    commits = [i for i, r in enumerate(rows) if r["event"] == "committed"]
    if commits:
        kinds += ["receipt_first", "class", "generation", "read_timeout", "failed_after"]
    if not kinds:
        return None
    kind = rng.choice(kinds)
    rows = [dict(r) for r in rows]
    if kind in ("fence", "dedupe") and len(deliveries) > 1:
        i = rng.choice(deliveries[1:])
        rows[i][kind] = {"fence": ["none", "plan", "step"], "dedupe": ["off", "memory", "journal"]}[kind][
            (["none", "plan", "step"] if kind == "fence" else ["off", "memory", "journal"]).index(rows[i][kind]) - 1]
    elif kind == "no_verdict" and len(deliveries) > 1:
        del rows[rng.choice(deliveries)]["verdict"]
    elif kind == "journal_key":
        keyed = [i for i in deliveries if "journal_key" in rows[i]]
        if not keyed:
            return None
        rows[rng.choice(keyed)]["journal_key"] = "zz@0"
    elif kind == "skipped":
        applied = [i for i in deliveries if rows[i]["verdict"] == "applied"]
        if not applied:
            return None
        rows[rng.choice(applied)]["skipped"] = True
    elif kind == "rev":
        rows[rng.choice(deliveries)]["rev_at_apply"] = 10 ** 6
    elif kind == "hash":
        i = rng.choice(deliveries)
        later = [j for j in range(i + 1, len(rows)) if rows[j]["event"] == "deliver" and rows[j].get("path")
                 == rows[i].get("path")]
        if not later:
            return None
        rows[later[0]]["hash_before"] = "0000000000000000"
    elif kind == "receipt_first":
        receipts = [i for i, r in enumerate(rows) if r["event"] == "receipt_recorded"]
        if not receipts:
            return None
        i = rng.choice(receipts)
        own = [c for c in commits if c < i and rows[c].get("effect") == rows[i].get("effect")]
        if not own:
            return None
        receipt = rows.pop(i)
        receipt["time"] = rows[own[0]]["time"]
        rows.insert(own[0], receipt)
    elif kind == "class":
        i = rng.choice(commits)
        rows[i]["effect_class"] = "append" if rows[i].get("effect_class") != "append" else "idempotent"
    elif kind == "generation":
        rows[rng.choice(commits)]["generation"] = 7
    elif kind == "read_timeout":
        timeouts = [i for i, r in enumerate(rows) if r["event"] == "timed_out"
                    and any(rows[c].get("transition") == r.get("transition") for c in commits)]
        if not timeouts:
            return None
        rows[rng.choice(timeouts)]["effect_class"] = "read"
    elif kind == "failed_after":
        receipts = [i for i, r in enumerate(rows) if r["event"] == "receipt_recorded"]
        if not receipts:
            return None
        i = rng.choice(receipts)
        rows.insert(i + 1, {"time": rows[i]["time"], "actor": rows[i]["actor"], "event": "timed_out",
                            "task": rows[i].get("task"), "transition": rows[i].get("transition"),
                            "outcome": "unknown"})
    else:
        return None
    return rows


def edit_history(rows: list[dict], rng: random.Random) -> list[dict]:
    """Facts swapped, moved or copied between events (the history's own values), or a line made hostile."""
    rows = [dict(r) for r in rows]
    times = [r.get("time") for r in rows]
    how = rng.choice(["swap", "move", "swap_field", "copy_field", "hostile_value", "drop_field"])
    if how in ("swap", "move") and len(rows) > 1:
        i, j = rng.sample(range(len(rows)), 2)
        if how == "swap":
            rows[i], rows[j] = rows[j], rows[i]
        else:
            rows.insert(j, rows.pop(i))
        for row, when in zip(rows, times):
            row["time"] = when
        return rows
    places = [(i, k) for i, r in enumerate(rows) for k in r if k not in ("index", "time", "actor", "event")]
    if not places:
        return rows
    i, key = rng.choice(places)
    if how == "hostile_value":
        rows[i][key] = rng.choice(HOSTILE_VALUES)
    elif how == "drop_field":
        del rows[i][key]
    else:
        others = [j for j, r in enumerate(rows) if key in r and r[key] != rows[i][key]]
        if others:
            j = rng.choice(others)
            value = rows[j][key]
            if how == "swap_field":
                rows[j][key] = rows[i][key]
            rows[i][key] = value
    return rows


def dumps(rows: list[dict], rng: random.Random) -> str:
    lines = [json.dumps({**r, "index": n}, ensure_ascii=False, allow_nan=True) for n, r in enumerate(rows)]
    if rng.random() < 0.05:  # a damaged line among good ones
        k = rng.randrange(len(lines))
        lines[k] = rng.choice([lines[k][: len(lines[k]) // 2], lines[k] + lines[k], "\ufeff" + lines[k],
                               lines[k].replace('"', "'"), '{"a": ' * 40 + "1" + "}" * 40])
    return "\n".join(lines) + rng.choice(["\n", "\r\n", "", "\n\n"])


# -- one input of each kind ---------------------------------------------------------------------------------

class Harness:
    def __init__(self, rng: random.Random, folder: Path):
        self.rng, self.folder = rng, folder
        self.blind: list[str] = []
        self.histories = recorded_histories()
        self.unchanged: dict[int, int] = {}
        self.scenarios = [p.read_text() for p in sorted((REPO / "scenarios" / "runtime").glob("*.toml"))
                          + sorted((REPO / "scenarios" / "seed").glob("*.toml"))
                          + sorted((REPO / "scenarios" / "histories").glob("*.toml"))]
        self.counterexamples = [p.read_text() for p in sorted((REPO / "scenarios" / "regressions").glob("*.toml"))]
        self.workloads = [p.read_text() for p in sorted((REPO / "scenarios" / "workloads").glob("*.toml"))]
        self.designs = [p.read_text() for p in sorted((REPO / "scenarios" / "designs").glob("*.toml"))]
        self.state = self._state()
        from sim.cli.bounds import bounds

        self.options = sorted(bounds())
        self.outputs: OutputInputs | None = None  # made on the first input of its kinds

    def _state(self) -> dict:
        """A sweep state from a fuzz run of tiny cut short by its budget (the state is kept on an interrupt)."""
        previous = signal.signal(signal.SIGALRM, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))
        try:
            for seconds in (20.0, 60.0, 180.0):  # a loaded machine runs the first chunk later
                out = self.folder / f"sweep{int(seconds)}"
                signal.setitimer(signal.ITIMER_REAL, seconds)
                try:
                    run_cli(["fuzz", "-w", "tiny", "-p", "none", "-p", "step-dedupe", "--seeds", "5000000",
                             "--workers", "1", "--no-advise", "--out", str(out)])
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                data = json.loads((out / "sweep-state.json").read_text())
                if data["sweep"]["seeds_done"] > 0:
                    return data
        finally:
            signal.signal(signal.SIGALRM, previous)
        raise RuntimeError("the fuzz run wrote no chunk before its interrupt")

    def history(self) -> tuple[str, bool]:
        position = self.rng.randrange(len(self.histories))
        rows = [json.loads(line) for line in self.histories[position].splitlines() if line.strip()]
        if position not in self.unchanged:
            self.unchanged[position] = judged(self.histories[position], self.folder)
        planted = contradict(rows, self.rng) if self.rng.random() < 0.3 else None
        if planted is not None:
            text = dumps(planted, self.rng)
            blind = judged(text, self.folder) == 0
            if blind:
                self.blind.append(text)
            return "planted", blind
        text = dumps(edit_history(rows, self.rng), self.rng)
        blind = judged(text, self.folder) == 0 and self.unchanged[position] != 0
        if blind:
            self.blind.append(text)
        return "edited", blind

    def toml_file(self, texts: list[str], args) -> tuple[str, bool]:
        path = self.folder / f"input{self.rng.randrange(10 ** 9)}.toml"
        path.write_text(damage_text(self.rng.choice(texts), self.rng), encoding="utf-8", errors="surrogatepass")
        code, _, err = run_cli(args(path))
        path.unlink()
        if code == 3 or "Traceback" in err:
            raise RuntimeError(err[-2000:])
        return "run", False

    def loaded(self, texts: list[str], load) -> tuple[str, bool]:
        path = self.folder / f"input{self.rng.randrange(10 ** 9)}.toml"
        path.write_text(damage_text(self.rng.choice(texts), self.rng), encoding="utf-8", errors="surrogatepass")
        try:
            load(path)
        except FencesimError:
            pass
        finally:
            path.unlink()
        return "loaded", False

    def workload(self) -> tuple[str, bool]:
        def load(path):
            workload = FAMILIES.load_workload(str(path))
            family = FAMILIES.family_for(workload)
            for label in family.presets[:2]:
                for seed in range(2):
                    replay = family.replay(workload.base, family.parse_protocol(label),
                                           family.generate(workload, seed))
                    family.check(replay.history)
        return self.loaded(self.workloads, load)

    def design(self) -> tuple[str, bool]:
        from sim.app.designs import load_design

        return self.loaded(self.designs, load_design)

    def sweep_state(self) -> tuple[str, bool]:
        from sim.cli.fuzz_state import STATE_FILE, check_against, load_workload, read_state

        data = json.loads(json.dumps(self.state))
        claims_less = self._edit_state(data)
        folder = self.folder / f"state{self.rng.randrange(10 ** 9)}"
        folder.mkdir()
        (folder / STATE_FILE).write_text(json.dumps(data, allow_nan=True))
        accepted = True
        try:
            read = read_state(folder)
            workload = load_workload(read, folder / STATE_FILE)
            check_against(read, FAMILIES.family_for(workload), workload, folder / STATE_FILE)
        except FencesimError:
            accepted = False
        (folder / STATE_FILE).unlink()
        folder.rmdir()
        return "state", accepted and claims_less

    def _edit_state(self, data: dict) -> bool:
        """Edit one value of the state (True: the edit claims fewer violations than the sweep found)."""
        tally = data["sweep"]["tallies"][self.rng.choice(sorted(data["sweep"]["tallies"]))]
        how = self.rng.choice(["clean", "violating", "measure", "any", "any"])
        if how == "clean":
            tally["violating_runs"] = 0
            tally["by_invariant"] = {k: 0 for k in tally["by_invariant"]}
            data["sweep"]["found"] = [f for f in data["sweep"]["found"] if data["sweep"]["tallies"].get(
                f["protocol"]) is not tally]
            return True
        if how == "violating":
            tally["violating_runs"] = max(0, tally["violating_runs"] - self.rng.randrange(1, 50))
            return True
        if how == "measure" and tally["measures"]:
            key = self.rng.choice(sorted(tally["measures"]))
            tally["measures"][key] = self.rng.choice([0, tally["measures"][key] * 2, -1, 1e308, float("nan")])
            return False
        section = data[self.rng.choice(["arguments", "outputs", "settings", "budget", "sweep"])]
        if isinstance(section, dict) and section:
            section[self.rng.choice(sorted(section))] = self.rng.choice(HOSTILE_VALUES)
        return False

    def numeric_option(self) -> tuple[str, bool]:
        command, option = self.rng.choice(self.options)
        from sim.cli.bounds import bounds

        bound = bounds()[(command, option)]
        value = self.rng.choice(["nan", "inf", "-inf", "1e309", "-1", "0", str(2 ** 63), str(10 ** 40),
                                 str(int(bound.high) + 1), str(bound.high * 10), "1e3x", "", " ", "0x10",
                                 "١٢", "--", "NaN", "-0", "1_0000000000000", str(bound.low - 1)])
        try:  # a value inside the bound is not hostile: it would run the command for real
            number = float(value.replace("_", ""))
            if math.isfinite(number) and bound.problem(number) is None and (
                    number.is_integer() or isinstance(bound.low, float)):
                return "in_range", False
        except ValueError:
            pass
        code, _, err = run_cli([command, option, value])
        if code == 3 or "Traceback" in err:
            raise RuntimeError(err[-2000:])
        if code != 4 or len([line for line in err.splitlines() if line.strip()]) != 1:
            raise RuntimeError(f"{command} {option} {value!r}: exit {code}, {err[-500:]}")
        return "refused", False

    def one(self, kind: str) -> tuple[str, bool]:
        if kind == "history":
            return self.history()
        if kind == "scenario":
            return self.toml_file(self.scenarios, lambda path: ["run", str(path)])
        if kind == "counterexample":
            return self.toml_file(self.counterexamples, lambda path: ["run", str(path)])
        if kind in ("certify", "diff", "baseline"):
            if self.outputs is None:
                self.outputs = OutputInputs(self.rng, self.folder, run_cli, damage_text, HOSTILE_VALUES, REPO)
                WATCH.take()  # what setting up wrote is no input's
            return getattr(self.outputs, kind)()
        return getattr(self, kind)()


def run_plan(harness: Harness, plan: list[str], time_limit: float) -> tuple[dict, dict]:
    """Each input of ``plan`` under the time limit: counts per kind, and one example per (kind, what)."""
    counts = {kind: Counter() for kind in KINDS}
    examples: dict[tuple[str, str], str] = {}
    WATCH.take()
    for kind in plan:
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        counts[kind]["inputs"] += 1
        try:
            how, blind = harness.one(kind)
            counts[kind][how] += 1
            if blind:
                counts[kind]["blind_pass"] += 1
                if harness.outputs is not None and kind in ("certify", "diff", "baseline"):
                    examples.setdefault((kind, f"blind pass ({how})"), harness.outputs.last)
        except (Overtime, MemoryError):
            counts[kind]["over_limit"] += 1
        except BaseException as error:  # noqa: BLE001 (a traceback is what is counted)
            counts[kind]["traceback"] += 1
            examples.setdefault((kind, type(error).__name__), str(error)[:1500])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        outside, clobbered, probes = WATCH.take()
        for name, paths in (("outside", outside), ("clobbered", clobbered), ("probe", probes)):
            if paths:
                counts[kind][name] += 1
                examples.setdefault((kind, name), ", ".join(sorted(set(paths)))[:1500])
    return counts, examples


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=11_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per input")
    parser.add_argument("--kind", action="append", choices=KINDS, help="only these kinds (repeat; default: all)")
    options = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    rng = random.Random(options.seed)
    kinds = options.kind or list(KINDS)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fencesim-hostile-") as folder:
        harness = Harness(rng, Path(folder))
        signal.signal(signal.SIGALRM, _alarm)
        share = sum(SHARE[kind] for kind in kinds)
        plan = [kind for kind in kinds for _ in range(round(options.count * SHARE[kind] / share))]
        rng.shuffle(plan)
        counts, examples = run_plan(harness, plan, options.time_limit)
    total = print_table(kinds, counts, examples, time.monotonic() - started)
    for text in harness.blind[:3]:
        print(f"\nblind pass:\n{text[:4000]}")
    return 0 if not any(total[k] for k in COLUMNS[1:]) else 1


if __name__ == "__main__":
    sys.exit(main_())
