"""The hostile inputs of the commands that write or compare result files: ``certify``, ``diff`` and baselines.

Used by ``benchmarks/hostile.py`` (its kinds ``certify``, ``diff`` and ``baseline``); each input is one
command run in this process:

* **certify**: an effects workload damaged at one place, or hostile ``--engine``/``--protocol`` values, each
  with ``--export`` into a folder that may already hold a user's files (one of them named as an export);
  a *blind pass* is exit 0 from a certificate that proves nothing (a search a limit stopped, no transition);
* **diff**: two run documents (``fuzz --json`` documents, a review's ``results.json``), damaged or edited;
  a *blind pass* is exit 0 on a later run whose findings were made unreadable -- a container of its
  counterexamples given another type -- where the documents as written differ by a new finding;
* **baseline**: ``fuzz --baseline`` with a damaged or edited baseline, and ``fuzz --write-baseline`` onto a
  damaged baseline, a user's file or a path that is an input; a *blind pass* is exit 0 from a baseline
  edited so that it no longer names the run's findings (another invariant, protocol, workload or family).

Every command runs under :class:`Watch` (an audit hook): a file opened for writing, made, renamed or removed
outside the folders the command was told to write to is a *write outside*; a user's file (an input, or a file
planted in an output folder) changed or removed is a *clobber*.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: Audit events that change the file system: the positions of their path arguments.
CHANGES = {"os.rename": (0, 1), "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.truncate": (0,),
           "shutil.rmtree": (0,), "os.symlink": (1,), "os.link": (1,), "shutil.move": (0, 1)}
ENGINE_VALUES = ["temporal", "dbos", "restate", "inngest", "all", "", " ", "temporal,dbos", "Temporal", "x" * 3000,
                 "../temporal", "\x00", "step-functions-express-sync", "durable-task", "\u202e"]
PROTOCOL_VALUES = ["", "idempotency=key", "idempotency=kee", "fence=step", "x=y", "reconcile=on,reconcile=off",
                   "on_timeout=unknown,reconcile=on", ",", "=", "idempotency=" + "k" * 4000, "\x00", "nan"]
#: The name fencesim's writability probe starts with (``sim.core.outputs``: made and removed in the nearest
#: existing folder above a new output).
PROBE = ".fencesim-probe-"
USER_TEXT = "my own notes: fencesim must never replace this file\n"


class Watch:
    """Writes outside the allowed folders, recorded while active (``sys.addaudithook``, installed once)."""

    def __init__(self) -> None:
        self.active = False
        self.allowed: tuple[str, ...] = ()
        self.outside: list[str] = []
        self.clobbered: list[str] = []  # a user's files a command changed or removed
        self.probes: list[str] = []  # fencesim's writability probes outside the output folder
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if not self.active:
            return
        try:
            if event == "open":
                path, mode, flags = args
                writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and bool(flags & WRITE_FLAGS))
                paths = (path,) if writes else ()
            else:
                paths = tuple(args[i] for i in CHANGES.get(event, ()) if i < len(args))
            for path in paths:
                self._note(path, event)
        except Exception:  # noqa: BLE001 (an audit hook must never raise into the command)
            pass

    def _note(self, path: Any, event: str) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            return
        real = os.path.realpath(os.fsdecode(path))
        if "__pycache__" in real or any(real == a or real.startswith(a + os.sep) for a in self.allowed):
            return
        if event == "os.mkdir" and any(a.startswith(real + os.sep) for a in self.allowed):
            return  # a folder above an output folder, made on the way to it
        if os.path.basename(real).startswith(PROBE):
            self.probes.append(real)  # made and removed at once: counted apart (detail "probe")
            return
        self.outside.append(real)

    def take(self) -> tuple[list[str], list[str], list[str]]:
        """The writes outside, the clobbered files and the probes since the last call."""
        found = (self.outside, self.clobbered, self.probes)
        self.outside, self.clobbered, self.probes = [], [], []
        return found

    def run(self, call: Callable[[], Any], allowed: tuple[Path, ...] = ()) -> Any:
        """``call()`` watched, writing only under ``allowed`` (inside a watched call: as that call allows)."""
        if self.active:
            return call()
        self.allowed = tuple(os.path.realpath(p) for p in allowed)
        self.active = True
        try:
            return call()
        finally:
            self.active = False
            self.allowed = ()


def digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


# -- JSON documents edited --------------------------------------------------------------------------------

def json_paths(value: Any, limit: int = 6, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into ``value`` down to ``limit`` levels."""
    out = [prefix] if prefix else []
    if len(prefix) >= limit:
        return out
    if isinstance(value, dict):
        for key, item in value.items():
            out += json_paths(item, limit, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:40]):
            out += json_paths(item, limit, prefix + (index,))
    return out


def at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


def edit_json(data: Any, rng: random.Random, hostile: list) -> Any:
    """One edit at a random place: a hostile value, a key or item dropped, an item doubled, two values
    swapped."""
    data = copy.deepcopy(data)
    paths = json_paths(data)
    if not paths:
        return data
    path = rng.choice(paths)
    parent, last = at(data, path[:-1]), path[-1]
    how = rng.choice(["hostile", "hostile", "drop", "double", "swap"])
    if how == "hostile":
        parent[last] = copy.deepcopy(rng.choice(hostile))
    elif how == "drop":
        del parent[last]
    elif how == "double" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif how == "swap":
        other = rng.choice(paths)
        try:
            a, b = at(data, other), parent[last]
            parent[last], holder = a, at(data, other[:-1])
            holder[other[-1]] = b
        except (KeyError, IndexError, TypeError):
            pass
    return data


def damage_bytes(text: str, rng: random.Random) -> str:
    how = rng.choice(["cut", "bytes", "double_line", "bom", "nul"])
    at_ = rng.randrange(len(text) + 1)
    if how == "cut":
        return text[:at_]
    if how == "bytes":
        return text[:at_] + "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(1, 6))) + text[at_:]
    if how == "double_line":
        lines = text.split("\n")
        k = rng.randrange(len(lines))
        return "\n".join(lines[:k + 1] + lines[k:])
    return ("\ufeff" + text) if how == "bom" else text[:at_] + "\x00" + text[at_:]


def finding_containers(data: Any) -> list[tuple]:
    """The paths of a run document that hold its findings: a fuzz document's counterexamples and each of them,
    a review's designs, each design, its counterexamples and each of those."""
    paths: list[tuple] = []
    if isinstance(data.get("counterexamples"), list):
        paths += [("counterexamples",)] + [("counterexamples", i) for i in range(len(data["counterexamples"]))]
    for i, design in enumerate(data.get("designs") or []):
        paths += [("designs",), ("designs", i)]
        if isinstance(design, dict) and isinstance(design.get("counterexamples"), list):
            paths += [("designs", i, "counterexamples")] + [
                ("designs", i, "counterexamples", j) for j in range(len(design["counterexamples"]))]
    return paths


def fewer_findings(data: dict, rng: random.Random) -> dict:
    """The document with some of its counterexamples removed (an earlier run that found less)."""
    data = copy.deepcopy(data)
    holders = [data] if isinstance(data.get("counterexamples"), list) else [
        d for d in data.get("designs", []) if isinstance(d, dict) and d.get("counterexamples")]
    holder = rng.choice(holders)
    keep = rng.randrange(len(holder["counterexamples"]))
    holder["counterexamples"] = holder["counterexamples"][:keep]
    return data


# -- the three kinds ----------------------------------------------------------------------------------------

class OutputInputs:
    """The inputs of ``certify``, ``diff`` and baselines; ``run(args, allowed)`` runs the command line in this
    process under :data:`WATCH` and returns (exit code, stdout, stderr)."""

    def __init__(self, rng: random.Random, folder: Path, run: Callable, damage_text: Callable, hostile: list,
                 repo: Path):
        self.rng, self.folder, self.run, self.damage_text, self.hostile = rng, folder, run, damage_text, hostile
        self.cases = 0
        self.blind: list[str] = []  # what each blind pass ran, for the report
        workloads = {p.stem: p.read_text() for p in sorted((repo / "scenarios" / "workloads").glob("*.toml"))}
        self.effects_workloads = [(n, t) for n, t in workloads.items() if 'family = "effects"' in t]
        self.tiny_text = workloads["tiny"]
        setup = folder / "outputs-setup"
        setup.mkdir()
        self.docs = {"fuzz": [self._fuzz_document(setup, "tiny", ["none", "step-dedupe"], 40),
                              self._fuzz_document(setup, "effects-saga", ["unkeyed-retry", "keyed"], 20)],
                     "review": [json.loads((repo / "reports" / "reference" / "results.json").read_text())]}
        self.fuzz_args = ["fuzz", "-w", "tiny", "-p", "none", "--seeds", "30", "--workers", "1", "--no-advise",
                          "--shrink-seconds", "2"]
        code, _, err = self.run(self.fuzz_args + ["--out", str(setup / "b"), "--write-baseline",
                                                  str(setup / "baseline.json")])
        assert code == 0, err[-2000:]
        self.baseline_text = (setup / "baseline.json").read_text()
        code, _, err = self.run(self.fuzz_args + ["--out", str(setup / "b2"), "--baseline",
                                                  str(setup / "baseline.json")])
        assert code == 0, f"the baseline as written must cover its own run: exit {code} {err[-2000:]}"

    def _fuzz_document(self, setup: Path, workload: str, protocols: list[str], seeds: int) -> dict:
        args = ["fuzz", "-w", workload, "--seeds", str(seeds), "--workers", "1", "--no-advise",
                "--shrink-seconds", "2", "--json", "--out", str(setup / workload)]
        code, out, err = self.run(args + [a for p in protocols for a in ("-p", p)])
        assert code in (0, 1), err[-2000:]
        return json.loads(out)

    def _case(self) -> Path:
        """A new folder for one input (the previous input's is removed: a review document is a megabyte)."""
        shutil.rmtree(self.folder / f"case{self.cases}", ignore_errors=True)
        self.cases += 1
        case = self.folder / f"case{self.cases}"
        case.mkdir()
        return case

    def _user_file(self, path: Path, text: str = USER_TEXT) -> tuple[Path, str | None]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        return path, digest(path)

    def _command(self, args: list[str], allowed: tuple[Path, ...], kept: list) -> tuple[int, str, str]:
        """Run, refusing a traceback; note each of ``kept`` (path, digest) that changed."""
        code, out, err = WATCH.run(lambda: self.run(args), allowed)
        if code == 3 or "Traceback" in err:
            raise RuntimeError(f"{args[0]}: {err[-2000:]}")
        self.last = f"{' '.join(a[:200] for a in args)}: exit {code}; {err.strip()[-300:]}"
        WATCH.clobbered += [str(path) for path, before in kept if digest(path) != before]
        return code, out, err

    # -- certify ----------------------------------------------------------------------------------------

    def certify(self) -> tuple[str, bool]:
        rng, case = self.rng, self._case()
        name, text = rng.choice(self.effects_workloads)
        args, kept, how = ["certify", "--max-events", "1", "--budget", "5", "--json"], [], "options"
        if rng.random() < 0.6:
            workload, how = self._user_file(case / f"{name}.toml", self.damage_text(text, rng)), "damaged"
            kept.append(workload)
            args += ["-w", str(workload[0])]
        else:
            args += ["-w", name]
        engines = [rng.choice(ENGINE_VALUES[:5] if rng.random() < 0.7 else ENGINE_VALUES)]
        args += [a for e in engines for a in ("-e", e)]
        if rng.random() < 0.4:
            args += ["-p", rng.choice(PROTOCOL_VALUES)]
        export, allowed = self._export(case, kept, [p for p, _ in kept])
        if export is not None:
            args += ["--export", str(export)]
        code, out, _ = self._command(args, allowed, kept)
        return how, code == 0 and not self._proved(out)

    def _export(self, case: Path, kept: list, inputs: list[Path]) -> tuple[Path | None, tuple[Path, ...]]:
        choice = self.rng.choice(["none", "new", "new", "user_files", "input", "user_file", "under_file"])
        if choice == "none":
            return None, ()
        if choice in ("new", "user_files"):
            export = case / "out" / "export"
            if choice == "user_files":
                kept.append(self._user_file(export / "notes.txt"))
                kept.append(self._user_file(export / "certify_temporal_open_pr_repeats.toml"))
            return export, (export,)
        if choice == "input" and inputs:
            return inputs[0], (inputs[0],)  # the output named is the input: refused, or a clobber
        notes = self._user_file(case / "notes.txt")
        kept.append(notes)
        export = notes[0] if choice == "user_file" else notes[0] / "sub"
        return export, (export,)

    @staticmethod
    def _proved(out: str) -> bool:
        """Whether certify's JSON says every certificate is complete and names at least one transition."""
        try:
            document = json.loads(out)
            certificates = document["certificates"]
            return bool(certificates) and all(c["complete"] is True and c["transitions"] and all(
                t["verdict"] == "exactly once" for t in c["transitions"]) for c in certificates)
        except (ValueError, KeyError, TypeError):
            return False

    # -- diff -------------------------------------------------------------------------------------------

    def diff(self) -> tuple[str, bool]:
        from sim.report import diffing

        rng, case = self.rng, self._case()
        kind = rng.choice(["fuzz", "fuzz", "review"])
        after = rng.choice(self.docs[kind])
        before = fewer_findings(after, rng)
        how = rng.choice(["planted", "planted", "edit_after", "edit_before", "bytes", "mixed", "not_a_run", "same"])
        texts = [json.dumps(before), json.dumps(after)]
        new_as_written = bool(diffing.compare(*(self._run_of(diffing, t, case / f"w{i}.json")
                                                for i, t in enumerate(texts))).new)
        planted = how == "planted" and new_as_written
        if how == "planted":
            edited = copy.deepcopy(after)
            path = rng.choice(finding_containers(edited))
            holder = at(edited, path[:-1])
            holder[path[-1]] = rng.choice(["x", 0, None, True, 1.5, {} if isinstance(holder[path[-1]], list) else []])
            texts[1] = json.dumps(edited)
        elif how in ("edit_after", "edit_before"):
            i = 1 if how == "edit_after" else 0
            texts[i] = json.dumps(edit_json(json.loads(texts[i]), rng, self.hostile), allow_nan=True)
        elif how == "bytes":
            i = rng.randrange(2)
            texts[i] = damage_bytes(texts[i], rng)
        elif how == "mixed":
            texts[rng.randrange(2)] = json.dumps(rng.choice(self.docs["review" if kind == "fuzz" else "fuzz"]))
        elif how == "not_a_run":
            texts[rng.randrange(2)] = rng.choice([self.baseline_text, '{"format": 1}', "[]", "", '{"a": 1}\n' * 3,
                                                  '{"counterexamples": [], "designs": "x"}'])
        kept = [self._user_file(case / f"{side}.json", text) for side, text in zip(("before", "after"), texts)]
        paths = [str(p) for p, _ in kept]
        if how == "same":
            paths[1] = paths[0] if rng.random() < 0.5 else str(case / "missing.json")
        code, _, _ = self._command(["diff", *paths, *(["--json"] if rng.random() < 0.5 else [])], (), kept)
        return how, planted and code == 0

    @staticmethod
    def _run_of(diffing, text: str, path: Path):
        path.write_text(text, encoding="utf-8")
        try:
            return diffing.read_run(path)
        finally:
            path.unlink()

    # -- baselines --------------------------------------------------------------------------------------

    def baseline(self) -> tuple[str, bool]:
        rng, case = self.rng, self._case()
        if rng.random() < 0.3:
            return self._write_baseline(case)
        how = rng.choice(["planted", "edit", "edit", "bytes"])
        text, planted = self.baseline_text, False
        if how == "planted":
            text, planted = self._planted_baseline(), True
        elif how == "edit":
            text = json.dumps(edit_json(json.loads(text), rng, self.hostile), allow_nan=True)
        else:
            text = damage_bytes(text, rng)
        kept = [self._user_file(case / "baseline.json", text)]
        out = case / "out"
        code, _, _ = self._command(self.fuzz_args + ["--out", str(out), "--baseline", str(kept[0][0])], (out,), kept)
        return how, planted and code == 0

    def _planted_baseline(self) -> str:
        """The baseline edited so that it names none of the run's findings, or is another run's."""
        data = json.loads(self.baseline_text)
        how = self.rng.choice(["invariant", "protocol", "workload", "family", "empty"])
        for entry in data["entries"]:
            if how == "invariant":
                entry["invariant"] = "duplicate_effect" if entry["invariant"] == "lost_update" else "lost_update"
            elif how == "protocol":
                entry["protocol"], entry["label"] = "dedupe=journal,fence=step", "step-dedupe"
        if how in ("workload", "family"):
            data[how] = {"workload": "retries", "family": "effects"}[how]
        if how == "empty":
            data["entries"] = []
        return json.dumps(data, indent=2)

    def _write_baseline(self, case: Path) -> tuple[str, bool]:
        rng = self.rng
        how = rng.choice(["damaged", "damaged", "user_text", "user_json", "input", "missing_folder", "folder"])
        folder, kept = case / "bl", []
        target = folder / "baseline.json"
        args = list(self.fuzz_args)
        if how == "damaged":
            text = (damage_bytes(self.baseline_text, rng) if rng.random() < 0.5 else
                    json.dumps(edit_json(json.loads(self.baseline_text), rng, self.hostile), allow_nan=True))
            self._user_file(target, text)
        elif how in ("user_text", "user_json"):
            kept.append(self._user_file(target, USER_TEXT if how == "user_text" else '{"entries": [], "mine": 1}\n'))
        elif how == "input":
            workload = self._user_file(folder / "tiny.toml", self.tiny_text)
            kept.append(workload)
            args[2], target = str(workload[0]), workload[0]
        elif how == "missing_folder":
            target = folder / "no" / "such" / "baseline.json"
        else:
            folder.mkdir()
            target = folder
        out = case / "out"
        self._command(args + ["--out", str(out), "--write-baseline", str(target)], (out, folder), kept)
        return f"write_{how}", False


WATCH = Watch()
COLUMNS = ("inputs", "traceback", "blind_pass", "over_limit", "outside", "clobbered")


def print_table(kinds, counts: dict, examples: dict, seconds: float) -> Counter:
    """The table of counts per kind, then one example of each problem; returns the totals."""
    total: Counter = Counter()
    print(f"{'kind':<16} {'inputs':>7} {'traceback':>9} {'blind':>6} {'over':>5} {'outside':>7} {'clobber':>7}  "
          "detail")
    for kind in [*kinds, "all"]:
        c = total if kind == "all" else counts[kind]
        if kind != "all":
            total.update(c)
        detail = (f"in {seconds:.0f} s" if kind == "all" else
                  ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k not in COLUMNS))
        print(f"{kind:<16} {c['inputs']:>7} {c['traceback']:>9} {c['blind_pass']:>6} {c['over_limit']:>5} "
              f"{c['outside']:>7} {c['clobbered']:>7}  {detail}")
    for (kind, name), text in examples.items():
        print(f"\n{kind}: {name}: {text}")
    return total
