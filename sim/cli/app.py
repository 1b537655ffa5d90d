"""The Typer application and the exit-code contract shared by every command.

Exit codes follow pytest: 0 nothing violated, 1 an invariant was violated,
2 interrupted, 3 internal error, 4 usage or input error, 5 nothing was run; and for
``fencesim check``, 6: no violation, but a check could not judge the history.
Commands return their exit code; :func:`main` turns user mistakes into one
line on stderr and bugs into a traceback that says so.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import traceback
from typing import Any

import typer

try:  # recent Typer releases carry their own copy of Click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older Typer depends on Click itself
    from click import exceptions as click_exceptions
from rich.console import Console

from sim.core.errors import InputError

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_INTERRUPTED = 2
EXIT_INTERNAL = 3
EXIT_INPUT = 4
EXIT_NOTHING_RAN = 5
#: ``fencesim check`` only: no violation, but a check could not judge the history.
EXIT_NOT_EVALUABLE = 6

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: "[expect]" is a table name, not markup
    help="fencesim: deterministic fault injection and counterexample search for "
    "revision-fenced agent steps and durable keyed effects.",
)


#: Width of tables written to a file or a CI log (a terminal, or ``COLUMNS``, sets its own): wide enough
#: that protocol names are never cut.
LOG_WIDTH = 200


def human_console(json_mode: bool) -> Console:
    """Where human-readable output goes: stdout, or stderr when stdout carries JSON."""
    file = sys.stderr if json_mode else sys.stdout
    terminal = getattr(file, "isatty", lambda: False)()
    return Console(
        file=file,
        no_color="NO_COLOR" in os.environ,
        highlight=False,
        soft_wrap=True,
        width=None if terminal or "COLUMNS" in os.environ else LOG_WIDTH,
    )


def error_console() -> Console:
    return Console(file=sys.stderr, no_color="NO_COLOR" in os.environ, highlight=False, soft_wrap=True)


JSON_HELP = "Machine output (JSON) on stdout; human output goes to stderr."


def emit_json(payload: Any) -> None:
    """Machine output: one JSON document on stdout."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _printable(text: str) -> str:
    """One line, with anything that is not printable text escaped (a lone surrogate, a control character)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)


def _terminate(signum, frame) -> None:
    """SIGTERM ends a command as Ctrl-C does: exit 2, files written so far intact."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app and map failures to exit codes."""
    from sim import cli as _commands  # noqa: F401  (registers every command)

    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    for stream in (sys.stdout, sys.stderr):  # a user's text may hold what the terminal cannot show
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        code = command.main(args=args, prog_name="fencesim", standalone_mode=False)
    except InputError as error:
        error_console().print(f"fencesim: error: {_printable(str(error))}", markup=False)
        code = EXIT_INPUT
    except click_exceptions.UsageError as error:
        hint = f" (see 'fencesim {error.ctx.info_name} --help')" if error.ctx and error.ctx.parent else ""
        error_console().print(f"fencesim: usage error: {error.format_message()}{hint}", markup=False)
        code = EXIT_INPUT
    except (getattr(click_exceptions, "Abort", KeyboardInterrupt), typer.Abort, KeyboardInterrupt):
        error_console().print("fencesim: interrupted", markup=False)
        code = EXIT_INTERRUPTED
    except click_exceptions.ClickException as error:
        error_console().print(f"fencesim: error: {error.format_message()}", markup=False)
        code = EXIT_INPUT
    except Exception:  # a bug in fencesim, never the user's fault
        traceback.print_exc()
        error_console().print(
            "fencesim: internal error: this is a bug in fencesim; please report it with the command above",
            markup=False,
        )
        code = EXIT_INTERNAL
    if code == 130:  # Typer's answer to an interrupt inside a command
        error_console().print("fencesim: interrupted", markup=False)
        code = EXIT_INTERRUPTED
    sys.exit(code if isinstance(code, int) else EXIT_OK)
