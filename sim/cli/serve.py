"""``fencesim serve``: the explorer, a local web app over a design's states (``docs/serve.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sim.cli.app import EXIT_OK, app, human_console


@app.command()
def serve(
    design: Optional[Path] = typer.Option(None, "--design", help="A design file: its workload, protocols and "
                                          "scripted scenarios."),
    workload: Optional[str] = typer.Option(None, "--workload", "-w", help="A workload name (scenarios/workloads) "
                                           "or file; default: tiny, when nothing else is given."),
    protocol: Optional[List[str]] = typer.Option(None, "--protocol", "-p", help="Protocols offered first (repeat "
                                                 "for several); any other can be typed in on the page."),
    scenario: Optional[List[Path]] = typer.Option(None, "--scenario", help="A scenario file, such as an exported "
                                                  "counterexample (repeat for several): step through its order."),
    review: Optional[Path] = typer.Option(None, "--review", help="A review folder (fencesim review --out): step "
                                          "through each of its counterexamples."),
    port: int = typer.Option(8765, "--port", help="The port on 127.0.0.1 (0: a free one). The server listens on "
                             "the loopback address only."),
    out: Optional[Path] = typer.Option(None, "--out", help="Where 'export this path' writes (new, empty, or holding "
                                       "only fencesim's outputs); without it the server writes nothing."),
) -> int:
    """Step through a design's states in the browser: the state as tables, the events that can happen next (and
    why the others cannot), the path as per-actor lanes, the invariants, a permalink per state; the same order
    under another protocol side by side; the shortest violation from here; export the path. Stops on Ctrl-C."""
    from sim.app.serving import explorer_for
    from sim.report.outputs import check_output_dir
    from sim.webapp.server import bind, run

    if out is not None:
        check_output_dir(out, "--out")
    bind(port).close() if port else None  # a port in use is refused before the files are read
    explorer = explorer_for(str(design) if design else None, workload, protocol or [], scenario or [], review)
    console = human_console(False)

    def announce(address: str) -> None:
        console.print(f"fencesim serve: {len(explorer.sources)} scenario(s) at {address} (Ctrl-C stops it)",
                      markup=False)
        console.file.flush()

    run(explorer, out, port, announce)
    console.print("fencesim serve: stopped", markup=False)
    return EXIT_OK
