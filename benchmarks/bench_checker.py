"""Exhaustive search held against a yardstick measured in the same run.

Parts (``--only PART``, repeatable; all by default):

* ``public-model`` -- tlaplus/Examples' TwoPhase.tla with six resource
  managers (50,816 states): a plain breadth-first search of the spec written
  as directly as Python allows (its successor function inline, the two
  invariants checked on each new state) against ``explore`` of the same spec
  written as a family (``tests/public_model``), default (sleep sets),
  ``--symmetry`` (the spec's RMs are interchangeable, as TLC's SYMMETRY) and
  ``--reduce``; the runs interleaved, medians over ``--repeats``.
* ``initial-states`` -- tlaplus/Examples' ACP_SB.tla with three participants (54,944 states, eight initial
  states: one per vote vector) -- a plain breadth-first search written inline against ``explore`` of the spec
  as a family (``tests/public_model/acp_family.py``), in process and from the command line (start-up included;
  the family named by ``FENCESIM_FAMILIES``) against the plain search's own process.
* ``deep`` -- wall time and peak memory (VmHWM, each search in a process of
  its own) of tiny / plan to depth 12, three-files / step-dedupe to depth 10
  (every invariant decided within 10 events) and a six-step design to depth
  8 (``--deep WORKLOAD:PROTOCOL:DEPTH``, repeatable, for others), each with
  the state and memory limits given; with the bytes per visited state and
  per entry of the widest layer kept, and each search again as it was kept
  before (a Python set of fingerprints, every layer's entries as objects),
  the ratios printed.
* ``memory`` -- bytes per visited state on the workspace family (tiny / plan
  to depth 10): the C table of fingerprints and the trace against the Python
  set that stands in without it, searched in the same run; and bytes per
  entry of the widest layer kept, as objects and encoded (pickled in
  chunks; for the effects family also as the state's number, the state
  rebuilt along its order, as its searches keep it), with what encoding and
  decoding cost per entry, for tiny / plan to depth 10, three-files /
  step-dedupe to depth 8 and the effects family (effects-saga /
  keyed-fingerprint-reconcile to depth 2).

Numbers are printed, never asserted; read the ratios.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PARTS = ("public-model", "initial-states", "deep", "memory")

PLAIN = r'''
import sys, time
N = int(sys.argv[1])
RM = tuple(f"r{i}" for i in range(1, N + 1))
ALL = frozenset(RM)
STATES = frozenset(("working", "prepared", "committed", "aborted"))
def successors(s):
    rm, tm, prep, msgs = s
    out = []
    if tm == "init" and prep == ALL:
        out.append((rm, "committed", prep, msgs | {("Commit",)}))
    if tm == "init":
        out.append((rm, "aborted", prep, msgs | {("Abort",)}))
    for i, r in enumerate(RM):
        if tm == "init" and ("Prepared", r) in msgs:
            out.append((rm, tm, prep | {r}, msgs))
        if rm[i] == "working":
            out.append((rm[:i] + ("prepared",) + rm[i + 1:], tm, prep, msgs | {("Prepared", r)}))
            out.append((rm[:i] + ("aborted",) + rm[i + 1:], tm, prep, msgs))
        if ("Commit",) in msgs:
            out.append((rm[:i] + ("committed",) + rm[i + 1:], tm, prep, msgs))
        if ("Abort",) in msgs:
            out.append((rm[:i] + ("aborted",) + rm[i + 1:], tm, prep, msgs))
    return out
def bad(s):
    rm, tm, prep, msgs = s
    return not STATES.issuperset(rm) or ("committed" in rm and "aborted" in rm)
t = time.perf_counter()
init = (("working",) * N, "init", frozenset(), frozenset())
seen, frontier, generated, violations = {init}, [init], 1, 0
while frontier:
    nxt = []
    for s in frontier:
        for s2 in successors(s):
            generated += 1
            if s2 not in seen:
                seen.add(s2); nxt.append(s2)
                violations += bad(s2)
    frontier = nxt
print(time.perf_counter() - t, len(seen), generated, violations)
'''

EXPLORE = r'''
import sys, time
sys.path.insert(0, {model!r})
from two_phase_family import FAMILY, workload_text
from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.search.exhaustive import ExploreOptions, explore
path = {path!r}
open(path, "w").write(workload_text([f"r{{i}}" for i in range(1, {n} + 1)]))
workload = Registry((*SHIPPED, FAMILY)).load_workload(path)
t = time.perf_counter()
r = explore(FAMILY, workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=None, **{kwargs}))
print(time.perf_counter() - t, r.distinct_states, r.states_generated, r.diameter + 1, r.exhausted,
      ",".join(r.proved_absent))
'''

#: ACP_SB.tla with three participants, as plainly as Python allows: a state is (participants, coordinator) of
#: tuples, the successor function inline (one branch per action), Init's eight vote vectors the first layer.
PLAIN_ACP = r'''
import itertools, sys, time
N = int(sys.argv[1])
def successors(s):
    ps, (req, cvote, bcast, cdec, calive) = s
    out = []
    def c(req=req, cvote=cvote, bcast=bcast, cdec=cdec, calive=calive):
        return (ps, (req, cvote, bcast, cdec, calive))
    def p(i, q):
        return (ps[:i] + (q,) + ps[i + 1:], s[1])
    if calive and cdec == "undecided" and all(v != "waiting" for v in cvote):
        out.append(c(cdec="commit" if all(v == "yes" for v in cvote) else "abort"))
    if calive:
        out.append(c(calive=False))
    for i in range(N):
        vote, alive, dec, sent = ps[i]
        if calive and not req[i]:
            out.append(c(req=req[:i] + (True,) + req[i + 1:]))
        if calive and cdec == "undecided" and all(req) and cvote[i] == "waiting":
            if sent:
                out.append(c(cvote=cvote[:i] + (vote,) + cvote[i + 1:]))
            if not alive and not sent:
                out.append(c(cdec="abort"))
        if calive and cdec != "undecided" and bcast[i] == "notsent":
            out.append(c(bcast=bcast[:i] + (cdec,) + bcast[i + 1:]))
        if alive and req[i]:
            out.append(p(i, (vote, alive, dec, True)))
        if alive and dec == "undecided" and sent and vote == "no":
            out.append(p(i, (vote, alive, "abort", sent)))
        if alive and dec == "undecided" and not calive and not req[i]:
            out.append(p(i, (vote, alive, "abort", sent)))
        if alive and dec == "undecided" and bcast[i] != "notsent":
            out.append(p(i, (vote, alive, bcast[i], sent)))
        if alive:
            out.append(p(i, (vote, False, dec, sent)))
    return out
def bad(s):
    decs = [q[2] for q in s[0]]
    return ("commit" in decs and "abort" in decs) or ("commit" in decs and any(q[0] != "yes" for q in s[0]))
t = time.perf_counter()
coordinator = ((False,) * N, ("waiting",) * N, ("notsent",) * N, "undecided", True)
init = [(tuple((v, True, "undecided", False) for v in votes), coordinator)
        for votes in itertools.product(("yes", "no"), repeat=N)]
seen, frontier, generated, violations, levels = set(init), list(init), len(init), 0, 1
while frontier:
    nxt = []
    for s in frontier:
        for s2 in successors(s):
            generated += 1
            if s2 not in seen:
                seen.add(s2); nxt.append(s2)
                violations += bad(s2)
    frontier = nxt
    levels += bool(nxt)
print(time.perf_counter() - t, len(seen), generated, levels, violations)
'''

EXPLORE_ACP = r'''
import sys, time
sys.path.insert(0, {model!r})
from acp_family import FAMILY, workload_text
from sim.core.registry import Registry
from sim.registry import SHIPPED
from sim.search.exhaustive import ExploreOptions, explore
path = {path!r}
open(path, "w").write(workload_text({n}))
workload = Registry((*SHIPPED, FAMILY)).load_workload(path)
t = time.perf_counter()
r = explore(FAMILY, workload, FAMILY.parse_protocol("spec"), ExploreOptions(max_events=None))
print(time.perf_counter() - t, r.distinct_states, r.states_generated, r.diameter + 1, r.exhausted,
      ",".join(r.proved_absent))
'''

#: The same family's own ``successors`` in a bare loop (a set, a frontier, the two predicates): what the engine
#: adds to the model is the gap between this and ``explore``.
BARE_ACP = r'''
import sys, time, types
sys.path.insert(0, {model!r})
from acp_family import FAMILY, AcpMachine, ac1_violated, ac2_violated
machine = AcpMachine({n}, False)
alphabet = FAMILY.alphabet(types.SimpleNamespace(base=types.SimpleNamespace(participants={n})))
t = time.perf_counter()
init = [s for _, s in machine.successors(machine.initial(), alphabet)]
seen, frontier, generated, violations = set(init), list(init), len(init), 0
while frontier:
    nxt = []
    for s in frontier:
        for _, s2 in machine.successors(s, alphabet):
            generated += 1
            if s2 not in seen:
                seen.add(s2); nxt.append(s2)
                violations += ac1_violated(s2) or ac2_violated(s2)
    frontier = nxt
print(time.perf_counter() - t, len(seen), generated)
'''

DEEP = r'''
import json, sys, time
from sim.registry import FAMILIES
from sim.search import exhaustive, layers, visited
from sim.search.exhaustive import ExploreOptions, explore
if {before!r}:  # as the search kept its states before: a Python set of fingerprints, layers as objects
    visited.TABLE, layers.ENCODE_PAST = None, 1 << 62
widest, seen = [], []
class Watched(layers.Layer):
    def check(self):
        super().check()
        widest.append((self.count, self.encoded, self.encoded_bytes()))
class Kept(visited.Visited):
    def __init__(self, *args):
        super().__init__(*args)
        seen.append(self)
exhaustive.Layer, exhaustive.Visited = Watched, Kept
family = FAMILIES.get("workspace")
workload = FAMILIES.load_workload({workload!r})
t = time.perf_counter()
r = explore(family, workload, family.parse_protocol({protocol!r}),
            ExploreOptions(max_events={depth}, max_states={states}, memory_limit={memory}))
seconds = time.perf_counter() - t
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
found = {{k: v["shortest_events"] for k, v in r.to_json()["violations"].items()}}
count, encoded, encoded_bytes = max(widest, default=(0, 0, 0))
print(json.dumps({{"seconds": seconds, "states": r.distinct_states, "generated": r.states_generated,
                  "end": r.reason, "proved_absent": r.proved_absent, "found": found, "peak_mb": peak // 1024,
                  "per_depth": r.states_per_depth, "visited_bytes": seen[0].bytes_per_state(),
                  "layer": count, "encoded": encoded, "encoded_bytes": encoded_bytes / max(1, encoded)}}))
'''

SIX_STEPS = """format = 1
name = "six-steps"
description = "A billing monorepo of three files and six steps, with human edits, lost acks, retries, duplicates."
files = { "billing/api.py" = { routes = "r0", auth = "a0" }, "billing/models.py" = { invoice = "i0", tax = "t0" },
          "tests/test_billing.py" = "x0" }
plan = [ { id = "routes", path = "billing/api.py", patch = { routes = "r1" } },
         { id = "invoice", path = "billing/models.py", patch = { invoice = "i1" } },
         { id = "auth", path = "billing/api.py", patch = { auth = "a1" } },
         { id = "tax", path = "billing/models.py", patch = { tax = "t1" } },
         { id = "tests", path = "tests/test_billing.py", patch = "x1" },
         { id = "docs", path = "billing/api.py", patch = { routes = "r2" } } ]

[faults]
classes = ["human_edit", "lose_ack", "retry", "duplicate"]
per_run_max = 4
"""


def run(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return done.stdout.strip().splitlines()[-1]


def public_model(repeats: int) -> None:
    print("\npublic model: TwoPhase.tla, six RMs (50,816 states; the spec's comment)")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "two-phase.toml")
        variants = {"explore (sleep sets)": {}, "explore --symmetry": {"symmetry": True},
                    "explore --reduce": {"reduce": True}, "explore --no-sleep": {"sleep": False}}
        times: dict[str, list[float]] = {"plain BFS": [], **{name: [] for name in variants}}
        shown: dict[str, str] = {}
        for _ in range(repeats):
            seconds, states, generated, violations = run(PLAIN, "6").split()
            times["plain BFS"].append(float(seconds))
            shown["plain BFS"] = f"{int(states):,} states, {int(generated):,} generated"
            for name, kwargs in variants.items():
                out = run(EXPLORE.format(model=str(ROOT / "tests" / "public_model"), path=path, n=6,
                                         kwargs=kwargs)).split()
                times[name].append(float(out[0]))
                shown[name] = (f"{int(out[1]):,} states, {int(out[2]):,} generated, depth {out[3]}, "
                               f"exhausted {out[4]}, proved {out[5] or '-'}")
    base = statistics.median(times["plain BFS"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<22} median {median:6.3f} s (of {len(values)}), {base / median:5.2f}x the plain BFS: "
              f"{shown[name]}")


def initial_states(repeats: int) -> None:
    """ACP_SB.tla, three participants: the plain BFS above, ``explore`` in process, and the command line (a fresh
    interpreter: start-up included, the family named by FENCESIM_FAMILIES), each timed from outside too."""
    print("\npublic model with several initial states: ACP_SB.tla, three participants (TLC: 54,944 states, depth 21)")
    model = ROOT / "tests" / "public_model"
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "acp-3.toml")
        (Path(folder) / "acp-3.toml").write_text(
            'format = 1\nfamily = "acp"\nname = "acp-3"\nparticipants = 3\n[faults]\nclasses = ["interleave"]\n')
        cli = [sys.executable, "-c", "import sys; from sim.entry import main; sys.argv[0] = 'fencesim'; main()",
               "explore", "-w", path, "-p", "spec", "--depth", "max", "--json"]
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{model}", FENCESIM_FAMILIES="acp_family:FAMILY")
        times: dict[str, list[float]] = {"plain BFS": [], "the family's successors, bare loop": [], "explore": [],
                                         "plain BFS, process": [], "fencesim explore, process": []}
        shown: dict[str, str] = {}
        for _ in range(repeats):
            started = time.perf_counter()
            seconds, states, generated, levels, _ = run(PLAIN_ACP, "3").split()
            times["plain BFS, process"].append(time.perf_counter() - started)
            times["plain BFS"].append(float(seconds))
            shown["plain BFS"] = f"{int(states):,} states, {int(generated):,} generated, depth {levels}"
            bare = run(BARE_ACP.format(model=str(model), n=3)).split()
            times["the family's successors, bare loop"].append(float(bare[0]))
            shown["the family's successors, bare loop"] = f"{int(bare[1]):,} states, {int(bare[2]):,} generated"
            out = run(EXPLORE_ACP.format(model=str(model), path=path, n=3)).split()
            times["explore"].append(float(out[0]))
            shown["explore"] = (f"{int(out[1]):,} states, {int(out[2]):,} generated, depth {out[3]}, "
                                f"exhausted {out[4]}, proved {out[5] or '-'}")
            started = time.perf_counter()
            done = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT, env=env)
            times["fencesim explore, process"].append(time.perf_counter() - started)
            if done.returncode not in (0, 1):
                raise SystemExit(done.stderr[-2000:])
    for name, base_name in (("plain BFS", "plain BFS"), ("the family's successors, bare loop", "plain BFS"),
                            ("explore", "plain BFS"), ("explore", "the family's successors, bare loop"),
                            ("plain BFS, process", "plain BFS, process"),
                            ("fencesim explore, process", "plain BFS, process")):
        median, base = statistics.median(times[name]), statistics.median(times[base_name])
        print(f"  {name:<36} median {median:6.3f} s (of {len(times[name])}), {median / base:5.2f}x {base_name}"
              + (f": {shown[name]}" if name in shown and name == base_name or base_name == "plain BFS"
                 and name in shown else ""))


def deep(state_limit: int, memory_gb: float, searches: list[tuple[str, str, int]] | None) -> None:
    print(f"\ndeep searches (state limit {state_limit:,}, memory limit {memory_gb} GB); each again as kept before "
          "(a Python set of fingerprints, layers as objects)")
    memory = int(memory_gb * 1e9)
    with tempfile.TemporaryDirectory() as folder:
        six = Path(folder) / "six-steps.toml"
        six.write_text(SIX_STEPS, encoding="utf-8")
        for workload, protocol, depth in searches or (("tiny", "plan", 12), ("three-files", "step-dedupe", 10),
                                                      (str(six), "step-dedupe", 8)):
            name = Path(workload).stem
            runs = {}
            for before in (False, True):
                started = time.perf_counter()
                data = runs[before] = json.loads(run(DEEP.format(workload=workload, protocol=protocol, depth=depth,
                                                                 states=state_limit, memory=memory, before=before)))
                label = "as before" if before else "now"
                print(f"  {name} / {protocol} to depth {depth}, {label}: {data['seconds']:.1f} s "
                      f"({time.perf_counter() - started:.1f} s with start-up), {data['states']:,} states, "
                      f"{data['generated']:,} generated, peak {data['peak_mb']:,} MB, end {data['end']}, "
                      f"found {data['found'] or '-'}, proved absent {', '.join(data['proved_absent']) or '-'}; "
                      f"{data['visited_bytes']:.1f} bytes a visited state; widest layer kept {data['layer']:,} "
                      f"entries" + (f", {data['encoded']:,} encoded at {data['encoded_bytes']:.0f} bytes each"
                                    if data["encoded"] else ", none encoded"))
            now, was = runs[False], runs[True]
            same = all(now[k] == was[k] for k in ("states", "generated", "per_depth", "found", "proved_absent"))
            print(f"    now / before: {now['seconds'] / was['seconds']:.2f}x the time, "
                  f"{now['peak_mb'] / max(1, was['peak_mb']):.2f}x the peak memory, "
                  f"{now['visited_bytes'] / was['visited_bytes']:.2f}x the bytes a visited state; "
                  f"the same counts and findings: {same}")


def memory_part() -> None:
    from sim.search import visited

    print("\nbytes per visited state (workspace family, tiny / plan to depth 10)")
    compact = _visited_after("tiny", "plan", 10)
    table, visited.TABLE = visited.TABLE, None
    try:
        plain = _visited_after("tiny", "plan", 10)
    finally:
        visited.TABLE = table
    for name, seen in (("the C table", compact), ("the Python set", plain)):
        print(f"  {name:<15} {len(seen):,} states: {seen.bytes_per_state():5.1f} bytes each "
              f"({seen.set_bytes_per_state():.1f} the fingerprints, {seen.parent.itemsize + seen.event.itemsize} "
              "the trace)" + (" -- not built here" if seen is compact and not seen.compact else ""))
    print(f"  the table / the Python set: {compact.set_bytes_per_state() / plain.set_bytes_per_state():.2f}x the "
          f"fingerprints' bytes, {compact.bytes_per_state() / plain.bytes_per_state():.2f}x with the trace")
    print("\nbytes per entry of the widest layer kept, as objects and encoded (in chunks)")
    for family, workload, protocol, depth in (("workspace", "tiny", "plan", 10),
                                              ("workspace", "three-files", "step-dedupe", 8),
                                              ("effects", "effects-saga", "keyed-fingerprint-reconcile", 2)):
        _frontier(family, workload, protocol, depth)


def _visited_after(workload: str, protocol: str, depth: int) -> Any:
    from sim.registry import FAMILIES
    from sim.search import visited

    family = FAMILIES.get("workspace")
    captured: list[Any] = []

    class Kept(visited.Visited):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            captured.append(self)

    _explore_with("Visited", Kept, family, workload, protocol, depth)
    return captured[0]


def _explore_with(name: str, stand_in: Any, family: Any, workload: str, protocol: str, depth: int) -> None:
    """One search with the class ``name`` of ``sim.search.exhaustive`` replaced by ``stand_in`` (a subclass that
    records what the search made of it), put back afterwards."""
    from sim.registry import FAMILIES
    from sim.search import exhaustive
    from sim.search.exhaustive import ExploreOptions, explore

    original = getattr(exhaustive, name)
    setattr(exhaustive, name, stand_in)
    try:
        explore(family, FAMILIES.load_workload(workload), family.parse_protocol(protocol),
                ExploreOptions(max_events=depth))
    finally:
        setattr(exhaustive, name, original)


def _frontier(family_name: str, workload: str, protocol: str, depth: int) -> None:
    """The entries of the widest layer a search kept: the bytes of the objects they reach (each object once: what
    the layer keeps alive, at most), and of the same entries in an encoded layer, with the time to encode and
    decode them."""
    from sim.registry import FAMILIES
    from sim.search import layers

    family = FAMILIES.get(family_name)
    appended: list[list[Any]] = []
    codecs: list[Any] = []

    class Watched(layers.Layer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            appended.append([])
            codecs.append(kwargs.get("codec"))

        def append(self, entry: Any) -> None:
            appended[-1].append(entry)
            super().append(entry)

        def extend(self, entries: Any) -> None:  # the fused loop keeps new states in bulk
            entries = list(entries)
            appended[-1].extend(entries)
            super().extend(entries)

    _explore_with("Layer", Watched, family, workload, protocol, depth)
    widest = max(range(len(appended)), key=lambda i: len(appended[i]))
    entries, codec = appended[widest], codecs[widest]
    count = len(entries)
    live = _reached_bytes(entries) / count
    print(f"  {workload} / {protocol} to depth {depth}, {count:,} entries: {live:.0f} bytes each as objects")
    for how, used in (("pickled whole", None), ("as its number and verdict, rebuilt along its order", codec)):
        if how != "pickled whole" and used is None:
            continue
        gc.disable()  # as in a search of a machine's states (sim.search.exhaustive._no_cyclic_gc)
        try:
            started = time.perf_counter()
            layer = layers.Layer(encode_past=0, codec=used)
            for entry in entries:
                layer.append(entry)
            encoding = time.perf_counter() - started
            encoded = layer.encoded_bytes() / layer.encoded  # the last entries, under a chunk, stay objects
            started = time.perf_counter()
            back = list(layer)
            decoding = time.perf_counter() - started
        finally:
            gc.enable()
        assert len(back) == count  # equal where the states define equality (tests/search/test_checker_limits.py)
        print(f"    {how}: {encoded:.0f} bytes ({encoded / live:.3f}x); encoding {encoding / count * 1e6:.1f} us "
              f"an entry, decoding {decoding / count * 1e6:.1f} us")


def _reached_bytes(roots: list[Any]) -> int:
    """The bytes of every object the roots reach, each counted once (None, booleans and small integers, which
    the interpreter shares, left out)."""
    seen: set[int] = set()
    total, stack = 0, list(roots)
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, bool) or (type(item) is int and -5 <= item <= 256) or id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, (tuple, list, frozenset, set)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif hasattr(item, "__slots__"):
            stack.extend(getattr(item, slot, None) for slot in item.__slots__)
        elif hasattr(item, "__dict__"):
            stack.append(vars(item))
    return total + sys.getsizeof(roots)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=PARTS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--state-limit", type=int, default=100_000_000)
    parser.add_argument("--memory-limit", type=float, default=20.0, help="GB")
    parser.add_argument("--deep", action="append", type=_search, metavar="WORKLOAD:PROTOCOL:DEPTH",
                        help="a search of the deep part instead of its three (repeatable)")
    args = parser.parse_args()
    parts = args.only or PARTS
    print(f"bench_checker: {', '.join(parts)}; {os.cpu_count()} cores")
    if "public-model" in parts:
        public_model(args.repeats)
    if "initial-states" in parts:
        initial_states(args.repeats)
    if "memory" in parts:
        memory_part()
    if "deep" in parts:
        deep(args.state_limit, args.memory_limit, args.deep)


def _search(text: str) -> tuple[str, str, int]:
    workload, protocol, depth = text.rsplit(":", 2)
    return workload, protocol, int(depth)


if __name__ == "__main__":
    main()
