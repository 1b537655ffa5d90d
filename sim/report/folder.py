"""Writing a review as a folder a room can read, without ever losing the previous one.

The folder is built under a temporary name beside the target and renamed
into place only when every file is written; a failed or interrupted review
leaves the previous report untouched (``reports/README.md`` lists every
file).  Figures are drawn once and written as PNG and SVG; the HTML embeds
the SVGs.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sim.core.errors import InputError
from sim.report import figures as plots
from sim.report.export import current_commit, export, fencesim_version, file_stem, timeline
from sim.report.render import markdown, to_html
from sim.report.review import public

#: Fields of results.json that change from run to run by design (the reference check ignores them).
VOLATILE_FIELDS = ("meta.generated_at", "meta.commit", "meta.fencesim_version", "meta.python", "meta.platform",
                   "meta.seconds", "designs[].seconds")


def draw(results: dict[str, Any]) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
    """Every figure of the review: ``names[key][kind]`` (file stems) and the Figure objects by stem."""
    names: dict[str, dict[str, str]] = {}
    drawn: dict[str, Any] = {}
    for design in results["designs"]:
        key = design["name"]
        family = design["_family"]
        stem = file_stem(key)
        matrix = design["matrix"]
        heat_cells = {tuple(k.split("\t")): ("violated" if v["violated"] else "ok", v["text"])
                      for k, v in matrix["cells"].items()}
        names[key] = {"heatmap": f"verdict_matrix_{stem}", "safety": f"safety_vs_availability_{stem}",
                      "interference": f"interference_{stem}"}
        drawn[names[key]["heatmap"]] = plots.verdict_heatmap(
            matrix["rows"], matrix["columns"], heat_cells,
            f"{key}: protocol x scenario (red: an invariant is violated)", matrix["labels"])
        points = [{"protocol": r["protocol"], "violating": r["violating_runs"]["share"],
                   "progress": r["progress"]["share"] if r["progress"] else {"value": 0, "low": 0, "high": 0}}
                  for r in design["protocols"]]
        drawn[names[key]["safety"]] = plots.safety_vs_availability(
            points, f"{key}: safety against work done ({design['seeds_done']} runs per protocol)",
            design["progress_label"])
        drawn[names[key]["interference"]] = plots.interference_curves(
            design["interference"], f"{key}: violating runs as faults per run grow",
            design["workload"]["per_run_max"])
        for example in design["counterexamples"]:
            history = example["_history"]
            marked = set(example["violating_events"])
            events = [{"actor": e.actor, "label": family.describe(e), "fault": family.is_fault(e),
                       "marked": e.index in marked}
                      for e in history if not e.get("skipped") and e.actor != "script"]
            names[example["name"]] = {"swimlane": f"swimlane_{file_stem(example['name'])}"}
            drawn[names[example["name"]]["swimlane"]] = plots.swimlane(
                family.lanes, events, f"{example['invariant']} under {example['protocol']}")
        for index, section in enumerate(design["sections"]):
            if section["metrics"]:
                section["_figure"] = f"section_{stem}_{index}"
                drawn[section["_figure"]] = plots.exposure_bars(
                    section["metrics"], section["analytic"], int(section["unit"].split()[1].replace(",", "")))
    return names, drawn


#: What a report folder holds: a folder holding anything else is not a report and is never replaced.
REPORT_ENTRIES = frozenset({"summary.md", "report.html", "results.json", "figures", "counterexamples"})
#: Caches that running a report's exported tests leaves behind; replaced with the folder.
CACHES = frozenset({"__pycache__", ".pytest_cache"})
#: What each subfolder of a report holds (file name endings).
REPORT_FILES = {"figures": (".svg", ".png"), "counterexamples": (".toml", ".timeline.txt", ".py")}


def check_report_dir(out_dir: str | Path, what: str = "--out") -> Path:
    """Fail fast, before any work, unless ``out_dir`` is new, empty, or an earlier fencesim report.

    Writing a review replaces the whole folder, so a folder with anything else in it (source files, a
    design file, the folder a user works in) is refused rather than lost.
    """
    out_dir = Path(out_dir)
    here = Path.cwd().resolve()
    target = out_dir.resolve()
    if target == here or target in here.parents:
        raise InputError(f"{what} {out_dir} is the current folder or holds it; a review replaces its whole "
                         "folder, so give a folder of its own (for example reports/latest)")
    if not out_dir.is_dir():
        return out_dir
    entries = sorted(entry.name for entry in out_dir.iterdir() if entry.name not in CACHES)
    if not entries:
        return out_dir
    strangers = [name for name in entries if name not in REPORT_ENTRIES]
    for folder, endings in REPORT_FILES.items():
        if (out_dir / folder).is_dir():
            strangers += [f"{folder}/{entry.name}" for entry in sorted((out_dir / folder).iterdir())
                          if entry.name not in CACHES and not (entry.is_file() and entry.name.endswith(endings))]
    if not strangers and _is_report(out_dir / "results.json"):
        return out_dir
    shown = ", ".join(strangers[:5] or entries[:5]) + (", ..." if len(strangers or entries) > 5 else "")
    raise InputError(f"{what} {out_dir} already holds files that are not a fencesim report ({shown}); a review "
                     "replaces its whole folder, so give a new or empty folder")


def _is_report(path: Path) -> bool:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and "designs" in document and "fencesim_version" in document.get("meta", {})


def write_review(results: dict[str, Any], out_dir: Path, seconds: float) -> Path:
    """Write the review folder at ``out_dir`` (built under a temporary name, then renamed); an existing
    folder is replaced only if :func:`check_report_dir` accepts it."""
    out_dir = check_report_dir(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    building = out_dir.parent / f".{out_dir.name}.building-{os.getpid()}"
    if building.exists():
        shutil.rmtree(building)
    try:
        _build(results, building, seconds)
        _swap(building, out_dir)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return out_dir


def _swap(building: Path, out_dir: Path) -> None:
    if not out_dir.exists():
        os.replace(building, out_dir)
        return
    retired = out_dir.parent / f".{out_dir.name}.previous-{os.getpid()}"
    os.replace(out_dir, retired)
    os.replace(building, out_dir)
    shutil.rmtree(retired, ignore_errors=True)


def _build(results: dict[str, Any], folder: Path, seconds: float) -> None:
    (folder / "figures").mkdir(parents=True)
    cx_dir = folder / "counterexamples"
    for design in results["designs"]:
        family = design["_family"]
        for example in design["counterexamples"]:
            marked = example["violating_events"]
            example["timeline"] = timeline(family, example["_history"], marked)
            scenario = _scenario(design, example)
            fix = example["advice"]["recommended"] if example["advice"] else None
            paths = export(family, scenario, example["_history"], cx_dir, marked, fix)
            relative = Path("counterexamples") / paths.scenario.name
            example["files"] = {"scenario": str(relative), "timeline": str(relative.with_suffix(".timeline.txt")),
                                "pytest": str(Path("counterexamples") / paths.pytest.name)}
            example["replay"] = f"fencesim run {shlex.quote(str(relative))}"
    names, drawn = draw(results)
    svgs = {}
    for stem, figure in drawn.items():
        svgs[stem] = plots.to_svg(figure)
        (folder / "figures" / f"{stem}.svg").write_text(svgs[stem], encoding="utf-8")
        (folder / "figures" / f"{stem}.png").write_bytes(plots.to_png(figure))
    meta = {
        "generated_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "fencesim_version": fencesim_version(), "commit": current_commit(),
        "python": platform.python_version(), "platform": platform.platform(terse=True),
        "seconds": round(seconds, 1),
    }
    document = public(results)
    for design, source in zip(document["designs"], results["designs"]):
        design["seconds"] = source["_seconds"]
        design["figures"] = {kind: f"figures/{stem}.svg" for kind, stem in names[source["name"]].items()}
        for example in design["counterexamples"]:
            example["figure"] = f"figures/{names[example['name']]['swimlane']}.svg"
    document["meta"] = meta
    (folder / "results.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / "summary.md").write_text(markdown(results, meta, names), encoding="utf-8")
    (folder / "report.html").write_text(to_html(results, meta, names, svgs), encoding="utf-8")


def _scenario(design: dict[str, Any], example: dict[str, Any]) -> Any:
    """The counterexample as a scenario file of its family (replayable with no seed)."""
    family = design["_family"]
    meta = {"name": example["name"], "invariant": example["invariant"], "workload": design["workload"]["name"],
            "minimal": example["one_minimal"], "seed": example["seed"], "commit": current_commit(),
            "description": (f"Minimal order violating {example['invariant']} under {example['protocol']}, found "
                            f"by the review of {design['name']} (seed {example['seed']}).")}
    return family.counterexample(design["_workload"], family.parse_protocol(example["protocol"]),
                                 example["invariant"], example["_events"], meta)
