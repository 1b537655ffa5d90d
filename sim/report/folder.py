"""Writing a review as a folder a room can read, without ever losing the previous one.

The folder is built under a temporary name beside the target and renamed
into place only when every file is written; a failed or interrupted review
leaves the previous report untouched (``reports/README.md`` lists every
file).  Figures are drawn once and written as PNG and SVG; the HTML embeds
the SVGs.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import shlex
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

from matplotlib.figure import Figure

from sim.core.errors import InputError
from sim.core.records import json_text
from sim.core.values import JsonObject
from sim.report import figures as plots
from sim.report.export import current_commit, export, fencesim_version, file_stem, timeline
from sim.report.outputs import CACHES, check_output_dir
from sim.report.render import FigureNames, markdown, to_html
from sim.report.results import DesignRow, ExampleFiles, ReportMeta, ReviewDocument
from sim.report.review import DesignReview, ReviewedCounterexample, ReviewResult, with_counterexamples
from sim.search.workers import Workers

#: Fields of results.json that change from run to run by design (the reference check ignores them).
VOLATILE_FIELDS = ("meta.generated_at", "meta.commit", "meta.fencesim_version", "meta.python", "meta.platform",
                   "meta.seconds", "designs[].seconds")


def draw(results: ReviewResult) -> tuple[FigureNames, dict[str, Figure]]:
    """Every figure of the review: ``names[key][kind]`` (file stems) and the Figure objects by stem."""
    names: FigureNames = {}
    drawn: dict[str, Figure] = {}
    for reviewed in results.designs:
        design, family = reviewed.row, reviewed.family
        key = design.name
        stem = file_stem(key)
        matrix = design.matrix
        heat_cells = {cell: ("violated" if v.violated else "ok", v.text) for cell, v in matrix.cells.items()}
        names[key] = {"heatmap": f"verdict_matrix_{stem}", "safety": f"safety_vs_availability_{stem}",
                      "interference": f"interference_{stem}", "saturation": f"saturation_{stem}"}
        drawn[names[key]["heatmap"]] = plots.verdict_heatmap(
            matrix.rows, matrix.columns, heat_cells,
            f"{key}: protocol x scenario (red: an invariant is violated)", matrix.labels)
        points, label, safely = plots.work_done_points(design)
        drawn[names[key]["safety"]] = plots.safety_vs_availability(
            points, f"{key}: safety against work done{' safely' if safely else ''} "
            f"({design.seeds_done} runs per protocol)", label, safely)
        if any(design.interference.values()):  # a budget may cut every level: no curve, no figure
            drawn[names[key]["interference"]] = plots.interference_curves(
                design.interference, f"{key}: violating runs as faults per run grow", design.workload.per_run_max)
        if design.map:
            from sim.report.maps import pareto_figure

            names[key]["pareto"] = f"pareto_{stem}"
            drawn[names[key]["pareto"]] = pareto_figure(design.map)
        drawn[names[key]["saturation"]] = plots.saturation_curve(
            design.saturation, f"{key}: distinct behaviours against seeds (saturation)")
        for run in reviewed.counterexamples:
            example = run.row
            names[example.name] = {"swimlane": f"swimlane_{file_stem(example.name)}"}
            drawn[names[example.name]["swimlane"]] = plots.swimlane(
                family.lanes, plots.lane_events(family, run.history, example.violating_events),
                f"{example.invariant} under {example.protocol}")
        drawn.update(_sections(design, drawing=True)[1])
    return names, drawn


def _sections(design: DesignRow, drawing: bool = False) -> tuple[tuple[JsonObject, ...], dict[str, Figure]]:
    """The design's sections as the report writes them -- a section with simulated metrics gets its figure
    (``figure``: ``figures/<stem>.svg``) and says what no figure shows (``figure_left_out``: an interval too
    wide to read is a table, not a bar) -- and, ``drawing``, those figures by stem."""
    stem = file_stem(design.name)
    sections: list[JsonObject] = []
    drawn: dict[str, Figure] = {}
    for index, section in enumerate(design.sections):
        simulated, analytic = plots.exposure_of(section)
        if not simulated:
            sections.append(section)
            continue
        panels, reasons = plots.informative_panels(simulated, analytic)
        shown: JsonObject = {**section, "figure_left_out": list(reasons)}
        if panels:
            shown["figure"] = f"figures/section_{stem}_{index}.svg"
        if panels and drawing:
            tasks = int(json_text(section.get("unit")).split()[1].replace(",", ""))
            drawn[f"section_{stem}_{index}"] = plots.exposure_bars(simulated, analytic, tasks, panels)
        sections.append(shown)
    return tuple(sections), drawn


def check_report_dir(out_dir: str | Path, what: str = "--out", inputs: Sequence[tuple[str, Path]] = ()) -> Path:
    """Fail fast, before any work, unless ``out_dir`` is new, empty, or an earlier fencesim report holding
    only the files that report wrote.

    Writing a review replaces the whole folder, so a folder with anything else in it (source files, a
    design file, the folder a user works in, a file a user added to an earlier report's ``figures/`` or
    ``counterexamples/``) is refused rather than lost; so is a folder holding one of the review's
    ``inputs`` (``(option, path)``: design, workload and scenario files).
    """
    out_dir = Path(out_dir)
    check_output_dir(out_dir, what, contents=False)
    here = Path.cwd().resolve()
    target = out_dir.resolve()
    if target == here or target in here.parents:
        raise InputError(f"{what} {out_dir} is the current folder or holds it; a review replaces its whole "
                         "folder, so give a folder of its own (for example reports/latest)")
    for option, path in inputs:
        source = Path(path).resolve()
        if source == target or target in source.parents:
            raise InputError(f"{what} {out_dir} holds the {option} file {path}, which this review reads; a review "
                             "replaces its whole folder, so give a folder of its own")
    if not out_dir.is_dir():
        return out_dir
    present = _present(out_dir)
    if not present:
        return out_dir
    written = _written(out_dir / "results.json")
    strangers = sorted(set(present) - written) if written is not None else sorted(present)
    if not strangers:
        return out_dir
    shown = ", ".join(strangers[:5]) + (", ..." if len(strangers) > 5 else "")
    earlier = "an earlier fencesim report, but also " if written is not None else ""
    raise InputError(f"{what} {out_dir} holds {earlier}files a review did not write ({shown}); a review "
                     "replaces its whole folder, so move them away or give a new or empty folder")


def _present(out_dir: Path) -> list[str]:
    """Every file under ``out_dir`` (relative, ``/``-separated), caches aside; a folder counts as a name."""
    found = []
    for root, folders, files in os.walk(out_dir):
        folders[:] = [f for f in folders if f not in CACHES]
        relative = Path(root).relative_to(out_dir)
        for name in files:
            found.append(str((relative / name).as_posix()))
        if not files and not folders and Path(root) != out_dir:
            found.append(str(relative.as_posix()) + "/")
    return found


def _written(path: Path) -> set[str] | None:
    """The files the report whose ``results.json`` this is wrote, or None when it is not a report."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    meta = document.get("meta") if isinstance(document, dict) else None
    if not isinstance(meta, dict) or "designs" not in document or "fencesim_version" not in meta:
        return None
    files = document.get("files")
    if isinstance(files, list):
        return {str(name) for name in files}
    try:
        return _derived_files(ReviewDocument.from_json(document))
    except InputError:  # a report too old, or too damaged, to name its files: the three it always has
        return {"summary.md", "report.html", "results.json"}


def _derived_files(document: ReviewDocument) -> set[str]:
    """The files of a report written before results.json listed them: what its designs name."""
    names = {"summary.md", "report.html", "results.json"}
    for design in document.designs:
        figures = list((design.figures or {}).values())
        stem = file_stem(design.name)
        figures += [f"figures/section_{stem}_{i}.svg" for i in range(len(design.sections))]
        for example in design.counterexamples:
            figures += [example.figure] if example.figure else []
            if example.files is not None:
                names.update((example.files.scenario, example.files.timeline, example.files.pytest))
        for figure in figures:
            names.update({figure, str(Path(figure).with_suffix(".png"))})
    return names


def write_review(results: ReviewResult, out_dir: Path, seconds: float, workers: int = 1) -> Path:
    """Write the review folder at ``out_dir`` (built under a temporary name, then renamed); an existing
    folder is replaced only if :func:`check_report_dir` accepts it (checked again: a file added since the
    review began is never lost).  ``workers``: processes writing the figures."""
    out_dir = check_report_dir(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    building = out_dir.parent / f".{out_dir.name}.building-{os.getpid()}"
    if building.exists():
        shutil.rmtree(building)
    try:
        _build(results, building, seconds, workers)
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


#: The figures a forked worker process writes (set in the worker, from the figures drawn before it was forked).
_DRAWN: dict[str, Figure] = {}


def _hold(drawn: dict[str, Figure]) -> None:
    global _DRAWN
    _DRAWN = drawn


def _files_of(stem: str) -> tuple[str, bytes]:
    """In a worker: one figure held since it was forked, written (:func:`_files_of_figure`)."""
    return _files_of_figure(_DRAWN[stem])


def _figure_files(drawn: dict[str, Figure], workers: int) -> Iterator[tuple[str, str, bytes]]:
    """Each figure as ``(stem, SVG text, PNG bytes)``, in the order drawn.  Writing them takes most of a report's
    time (a few tenths of a second a figure): with ``workers`` > 1 they are written by that many forked processes,
    each holding the figures drawn here (only the files come back), the same bytes as written here."""
    stems = list(drawn)
    if workers <= 1 or len(stems) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for stem in stems:
            yield (stem, *_files_of_figure(drawn[stem]))
        return
    with Workers(min(workers, len(stems)), _hold, (drawn,)) as pool:
        for stem, (svg, png) in zip(stems, pool.imap(_files_of, stems)):
            yield stem, svg, png


def _files_of_figure(figure: Figure) -> tuple[str, bytes]:
    """A figure's SVG text and PNG bytes."""
    return plots.to_svg(figure), plots.to_png(figure)


def _build(results: ReviewResult, folder: Path, seconds: float, workers: int = 1) -> None:
    """Every file of the report folder: each counterexample's files, the figures, then ``results.json``,
    ``summary.md`` and ``report.html`` from one typed document -- the review's rows, completed with the files,
    commands and figures the folder holds (``results``' rows are replaced by them)."""
    (folder / "figures").mkdir(parents=True)
    for reviewed in results.designs:
        _export_counterexamples(reviewed, folder / "counterexamples")
    names, drawn = draw(results)
    svgs = {}
    for stem, svg, png in _figure_files(drawn, workers):
        svgs[stem] = svg
        (folder / "figures" / f"{stem}.svg").write_text(svg, encoding="utf-8")
        (folder / "figures" / f"{stem}.png").write_bytes(png)
    meta = ReportMeta(generated_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                      fencesim_version=fencesim_version(), commit=current_commit(),
                      python=platform.python_version(), platform=platform.platform(terse=True),
                      seconds=round(seconds, 1))
    for reviewed in results.designs:
        for run in reviewed.counterexamples:
            run.row = replace(run.row, figure=f"figures/{names[run.row.name]['swimlane']}.svg")
        reviewed.row = replace(with_counterexamples(reviewed.row, reviewed.counterexamples),
                               sections=_sections(reviewed.row)[0],
                               figures={kind: f"figures/{stem}.svg" for kind, stem in names[reviewed.name].items()})
    files = sorted(set(_present(folder)) | {"summary.md", "report.html", "results.json"})
    document = replace(results.document(), meta=meta, files=tuple(files))
    written = document.to_json()
    (folder / "results.json").write_text(json.dumps(written, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / "summary.md").write_text(markdown(document, names), encoding="utf-8")
    (folder / "report.html").write_text(to_html(document, names, svgs), encoding="utf-8")


def _export_counterexamples(reviewed: DesignReview, cx_dir: Path) -> None:
    """Each counterexample of the design as its files (scenario, timeline, pytest) and the commands that replay
    it; its row gains them."""
    family = reviewed.family
    for run in reviewed.counterexamples:
        example = run.row
        scenario = _scenario(reviewed, run)
        fix = example.advice.recommended if example.advice is not None else None
        paths = export(family, scenario, run.history, cx_dir, list(example.violating_events), fix)
        relative = Path("counterexamples") / paths.scenario.name
        files = ExampleFiles(scenario=str(relative), timeline=str(relative.with_suffix(".timeline.txt")),
                             pytest=str(Path("counterexamples") / paths.pytest.name))
        run.row = replace(example, timeline=timeline(family, run.history, list(example.violating_events)), files=files,
                          replay=f"fencesim run {shlex.quote(str(relative))}",
                          serve=f"fencesim serve --scenario {shlex.quote(str(relative))}")


def _scenario(reviewed: DesignReview, run: ReviewedCounterexample) -> Any:
    """The counterexample as a scenario file of its family (replayable with no seed)."""
    family, design, example = reviewed.family, reviewed.row, run.row
    meta = {"name": example.name, "invariant": example.invariant, "workload": design.workload.name,
            "minimal": example.one_minimal, "seed": example.seed, "commit": current_commit(),
            "description": (f"Minimal order violating {example.invariant} under {example.protocol}, found "
                            f"by the review of {design.name} (seed {example.seed}).")}
    return family.counterexample(reviewed.workload, family.parse_protocol(example.protocol),
                                 example.invariant, run.events, meta)
