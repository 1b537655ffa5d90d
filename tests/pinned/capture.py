"""The pinned results: a fixed set of commands of all three families, run with ``--json``.

``python tests/pinned/capture.py`` prints the digest of every command's normalised output as JSON;
``--write`` records the outputs in ``tests/pinned/outputs.json.gz`` and their digests in
``tests/pinned/digests.json`` (done once, before a change that must not alter results; the test
``tests/test_pinned.py`` then compares).  ``--rerecord KEY,KEY`` replaces only those outputs, after a
change meant to alter them (say which and why in the commit).  ``--dump DIR`` writes each normalised
output whole, to diff.

Normalising drops only what is not a result: the commit and version in ``meta``, and the folder
of written files (their names are kept).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "digests.json"
OUTPUTS = HERE / "outputs.json.gz"
REGISTER = "register_family:FAMILY"
REGISTER_WORKLOAD = """format = 1
family = "register"
name = "two-clients"
clients = ["A", "B", "C"]

[faults]
classes = ["interleave"]
"""
REGISTER_SCENARIO = """format = 1
family = "register"
name = "lost-increment"
clients = ["A", "B"]
events = ["read A", "read B", "write A", "write B"]
"""

SEED = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scenarios" / "seed").glob("*.toml"))
WS_REGRESSIONS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scenarios" / "regressions").glob("seed_fuzz_*.toml"))
FX_STORIES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scenarios" / "runtime").glob("*.toml"))
FX_REGRESSIONS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scenarios" / "regressions").glob("effects_*.toml"))
WS_PROTOCOLS = ["none", "plan", "step", "step-dedupe", "fence=step,stamp_at=apply", "fence=step,dedupe=memory",
                "step-dedupe,journal_write=after_write", "step-dedupe,drift_check=reject",
                "step-dedupe,pipeline=on", "step-dedupe,pipeline=on,overlap_check=on", "fence=plan,stamp_at=plan"]


def _p(*protocols: str) -> list[str]:
    return [a for p in protocols for a in ("-p", p)]


def commands(tmp: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (arguments of fencesim, extra environment)."""
    register = tmp / "register"
    register.mkdir(exist_ok=True)
    (register / "two-clients.toml").write_text(REGISTER_WORKLOAD, encoding="utf-8")
    (register / "lost-increment.toml").write_text(REGISTER_SCENARIO, encoding="utf-8")
    reg_env = {"FENCESIM_FAMILIES": REGISTER,
               "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "third_family"), os.environ.get("PYTHONPATH", "")])}
    out = lambda name: ["--out", str(tmp / name)]  # noqa: E731
    return {
        "ws_matrix": (["matrix"], {}),
        "ws_run_seed": (["run", *SEED, *_p(*WS_PROTOCOLS)], {}),
        "ws_run_regressions": (["run", *WS_REGRESSIONS], {}),
        "ws_fuzz_seed": (["fuzz", "--workload", "seed-fuzz", *_p("none", "plan", "step", "step-dedupe",
                                                                  "step-dedupe,journal_write=after_write"),
                          "--seeds", "400", "--workers", "2", *out("a")], {}),
        "ws_fuzz_multi": (["fuzz", "--workload", "multi-file", *_p("step", "fence=none,dedupe=memory",
                                                                    "step-dedupe,pipeline=on"),
                           "--seeds", "300", "--workers", "2", *out("b")], {}),
        "ws_fuzz_three": (["fuzz", "--workload", "three-files", *_p("none", "step-dedupe", "fence=step,stamp_at=apply"),
                           "--seeds", "300", "--workers", "2", *out("c")], {}),
        "ws_fuzz_retries": (["fuzz", "--workload", "retries",
                             *_p("fence=step,dedupe=memory", "step-dedupe,drift_check=reject"),
                             "--seeds", "300", "--workers", "2", *out("d")], {}),
        "ws_exhaustive_tiny6": (["fuzz", "--workload", "tiny", "--exhaustive", "--max-events", "6",
                                 *_p("none", "plan", "step", "step-dedupe", "step-dedupe,journal_write=after_write",
                                     "fence=step,stamp_at=apply", "fence=step,dedupe=memory",
                                     "step-dedupe,pipeline=on", "step-dedupe,drift_check=reject"),
                                 "--workers", "1", *out("e")], {}),
        "ws_exhaustive_tiny8": (["fuzz", "--workload", "tiny", "--exhaustive", "--max-events", "8",
                                 *_p("plan", "step-dedupe"), "--workers", "2", *out("f")], {}),
        "ws_exhaustive_three5": (["fuzz", "--workload", "three-files", "--exhaustive", "--max-events", "5",
                                  *_p("none", "step-dedupe"), "--workers", "2", *out("g")], {}),
        "fx_run_stories": (["run", *FX_STORIES], {}),
        "fx_run_regressions": (["run", *FX_REGRESSIONS], {}),
        "fx_fuzz_saga": (["fuzz", "--workload", "effects-saga",
                          *_p("unkeyed-retry", "keyed", "keyed-reconcile", "keyed-fingerprint-reconcile",
                              "keyed-fingerprint-reconcile,lease_fence=off"),
                          "--seeds", "200", "--workers", "2", *out("h")], {}),
        "fx_fuzz_release": (["fuzz", "--workload", "effects-release", *_p("keyed-fingerprint-reconcile",
                                                                          "keyed-fingerprint-reconcile,approval=off"),
                             "--seeds", "200", "--workers", "2", *out("i")], {}),
        "fx_fuzz_zombie": (["fuzz", "--workload", "effects-zombie", *_p("keyed-fingerprint-reconcile",
                                                                        "keyed-fingerprint-reconcile,lease_fence=off"),
                            "--seeds", "200", "--workers", "2", *out("j")], {}),
        "fx_cruel": (["cruel"], {}),
        "fx_exposure": (["exposure"], {}),
        "fx_exposure_sim": (["exposure", "--simulate", "--seeds", "300"], {}),
        "fx_exhaustive_pr": (["fuzz", "--workload", "effects-pr", "--exhaustive", "--max-events", "2",
                              *_p("unkeyed-retry", "keyed-fingerprint-reconcile"), "--workers", "2", *out("k")], {}),
        "reg_run": (["run", str(register / "lost-increment.toml"), *_p("blind", "cas")], reg_env),
        "reg_fuzz": (["fuzz", "--workload", str(register / "two-clients.toml"), *_p("blind", "cas"),
                      "--seeds", "200", "--workers", "2", *out("l")], reg_env),
        "reg_exhaustive": (["fuzz", "--workload", str(register / "two-clients.toml"), "--exhaustive",
                            "--max-events", "6", *_p("blind", "cas"), *out("m")], reg_env),
    }


def names() -> list[str]:
    """The pinned commands' names, in order."""
    with tempfile.TemporaryDirectory(prefix="fencesim-pins-") as name:
        return sorted(commands(Path(name)))


def _normalise(value, tmp: str):
    if isinstance(value, dict):
        return {k: _normalise(v, tmp) for k, v in value.items() if k != "meta"}
    if isinstance(value, list):
        return [_normalise(v, tmp) for v in value]
    if isinstance(value, str) and tmp in value:
        return value.replace(tmp, "<tmp>")
    return value


def run_all(only: set[str] | None = None) -> dict[str, object]:
    fencesim = str(Path(sys.executable).with_name("fencesim"))
    results = {}
    with tempfile.TemporaryDirectory(prefix="fencesim-pins-") as name:
        tmp = Path(name)
        for key, (args, extra) in commands(tmp).items():
            if only and key not in only:
                continue
            env = dict(os.environ, NO_COLOR="1", **extra)
            done = subprocess.run([fencesim, *args, "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{key}: exit {done.returncode}\n{done.stderr[-2000:]}")
            results[key] = {"exit": done.returncode, "output": _normalise(json.loads(done.stdout), name)}
    return results


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def recorded() -> dict[str, object]:
    with gzip.open(OUTPUTS, "rb") as file:
        return json.loads(file.read().decode("utf-8"))


def changed(old, new, path: str = "") -> str | None:
    """Where ``new`` changes a value of ``old`` (None: every recorded value is there, unchanged).

    A result may gain fields (a later feature adds a key); no recorded key may change or vanish, and lists
    keep their length and order.
    """
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return path or "/"
        for key, value in old.items():
            if key not in new:
                return f"{path}/{key} (gone)"
            where = changed(value, new[key], f"{path}/{key}")
            if where:
                return where
        return None
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return f"{path} (length {len(old)} -> {len(new) if isinstance(new, list) else '-'})"
        for index, (a, b) in enumerate(zip(old, new)):
            where = changed(a, b, f"{path}[{index}]")
            if where:
                return where
        return None
    return None if old == new and type(old) is type(new) else f"{path}: {old!r} -> {new!r}"


def main() -> None:
    args = sys.argv[1:]
    results = run_all()
    digests = {key: digest(value) for key, value in results.items()}
    if "--dump" in args:
        folder = Path(args[args.index("--dump") + 1])
        folder.mkdir(parents=True, exist_ok=True)
        for key, value in results.items():
            (folder / f"{key}.json").write_text(json.dumps(value, indent=1, sort_keys=True), encoding="utf-8")
    if "--rerecord" in args:  # replace the named outputs only, after a change meant to alter them
        keys = args[args.index("--rerecord") + 1].split(",")
        with gzip.open(OUTPUTS, "rb") as file:
            recorded = json.loads(file.read())
        unknown = sorted(set(keys) - set(recorded))
        if unknown:
            raise SystemExit(f"no pinned output named {unknown[0]!r}")
        recorded.update({key: results[key] for key in keys})
        results = recorded
        digests = {key: digest(value) for key, value in results.items()}
        args.append("--write")
    if "--write" in args:
        DIGESTS.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        data = json.dumps(results, sort_keys=True, separators=(",", ":")).encode("utf-8")
        with gzip.GzipFile(OUTPUTS, "wb", mtime=0) as file:
            file.write(data)
    print(json.dumps(digests, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
