"""The Typer application and the exit-code contract shared by every command.

Exit codes follow pytest: 0 nothing violated, 1 an invariant was violated,
2 interrupted, 3 internal error, 4 usage or input error, 5 nothing was run; and for
``fencesim check``, 6: no violation, but a check could not judge the history.
Commands return their exit code; :func:`main` turns user mistakes into one
line on stderr, an error raised in a user's family's own code into one line that names the family
(:mod:`sim.cli.blame`), and bugs into a traceback that says so.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
import traceback
from typing import Any, Callable

import typer

try:  # recent Typer releases carry their own copy of Click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older Typer depends on Click itself
    from click import exceptions as click_exceptions  # type: ignore[no-redef]
from rich.console import Console

from sim.core.errors import InputError, WorkerDied
from sim.core.values import cut

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_INTERRUPTED = 2
EXIT_INTERNAL = 3
EXIT_INPUT = 4
EXIT_NOTHING_RAN = 5
#: ``fencesim check`` only: no violation, but a check could not judge the history.
EXIT_NOT_EVALUABLE = 6
#: ``fencesim conform --runtime`` only: no disagreement, but some runs could not be judged (the harness's own
#: infrastructure failed: the external system or the runtime's server stopped answering, say).
EXIT_NOT_JUDGED = 7

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: "[expect]" is a table name, not markup
    help="fencesim: deterministic fault injection and counterexample search for "
    "revision-fenced agent steps and durable keyed effects.",
)


#: Width of tables written to a file or a CI log (a terminal, or ``COLUMNS``, sets its own): wide enough
#: that protocol names are never cut.  A table of :func:`print_whole_table` is never narrowed to it.
LOG_WIDTH = 200
#: The widest a table of :func:`print_whole_table` is measured (characters): a limit, never reached by a table
#: of a few columns.
WHOLE_TABLE_WIDTH_MAX = 100_000


def human_console(json_mode: bool) -> Console:
    """Where human-readable output goes: stdout, or stderr when stdout carries JSON."""
    file = sys.stderr if json_mode else sys.stdout
    terminal = getattr(file, "isatty", lambda: False)()
    return Console(
        file=file,
        no_color="NO_COLOR" in os.environ,
        highlight=False,
        emoji=False,  # a user's ':x:' is text, never an emoji
        soft_wrap=True,
        width=None if terminal or os.environ.get("COLUMNS") else LOG_WIDTH,  # an empty COLUMNS is no width
    )


def writes_a_log(console: Console) -> bool:
    """Whether ``console`` writes to a file or a pipe with no width asked for (no terminal, no ``COLUMNS``)."""
    terminal = getattr(console.file, "isatty", lambda: False)()
    return not terminal and not os.environ.get("COLUMNS")


def print_whole_table(console: Console, table: Any) -> None:
    """Print a rich ``Table`` that is never cut: on a terminal, or under ``COLUMNS``, it fits that width (its
    cells wrap between words); written to a file or a log, it is as wide as its widest row -- each row one
    line, nothing wrapped or cut at ``LOG_WIDTH`` -- so a log reads (and greps) like the table itself."""
    if writes_a_log(console):
        from rich.measure import Measurement

        natural = Measurement.get(console, console.options.update_width(WHOLE_TABLE_WIDTH_MAX), table).maximum
        table.width = natural
    console.print(table)


def error_console() -> Console:
    return Console(file=sys.stderr, no_color="NO_COLOR" in os.environ, highlight=False, emoji=False, soft_wrap=True)


JSON_HELP = "Machine output (JSON) on stdout; human output goes to stderr."


#: A list longer than this is written one item per line, each item compact: a 100,000-event history
#: stays one line per event (and is written by the C encoder, not the slow indenting one).
JSON_LONG_LIST = 50


def _compact_encoder() -> Callable[[Any], str]:
    """``json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode`` with its C encoder made once,
    not once per call: a long list (a 100,000-event history) is written one item per line, and building the
    encoder cost more than encoding an event.  Without the C accelerator, the plain ``encode``."""
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    # no circular check (markers None): what fencesim writes is a tree of plain values
    chunks = make(None, encoder.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)

    def compact(value: Any) -> str:
        if isinstance(value, (dict, list)):
            return "".join(chunks(value, 0))
        return encoder.encode(value)

    return compact


_COMPACT = _compact_encoder()
_SCALAR = json.JSONEncoder(ensure_ascii=False).encode


def _indented(value: Any, pad: str = "") -> str:
    """JSON indented by two spaces, except that the items of a long list are compact, one per line."""
    inner = pad + "  "
    if isinstance(value, dict) and value:
        items = (f"{inner}{_SCALAR(str(k))}: {_indented(v, inner)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and value:
        if len(value) > JSON_LONG_LIST:
            items = (inner + _COMPACT(v) for v in value)
        else:
            items = (inner + _indented(v, inner) for v in value)
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return _SCALAR(value)


def emit_json(payload: Any) -> None:
    """Machine output: one JSON document on stdout."""
    sys.stdout.write(_indented(payload) + "\n")
    sys.stdout.flush()


def _printable(text: str) -> str:
    """One line, with anything that is not printable text escaped (a lone surrogate, a control character)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)


def _terminate(signum, frame) -> None:
    """SIGTERM ends a command as Ctrl-C does: exit 2, files written so far intact.  Any further SIGTERM
    is ignored, so a second one cannot cut the clean-up short (or kill the process while it exits)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


#: Every integer option takes values below this in size (a C int or ssize_t takes no more).
OPTION_INTEGER_LIMIT = 2 ** 63
#: Characters of one error line (a message quoting a huge value is cut).
MAX_ERROR_CHARS = 2000


def _bounded(process_value):
    """``process_value`` of an integer option, refusing (a usage error, exit 4) a value beyond 64 bits
    before any command meets it (``range(10**30)`` and a pool of 10**30 workers overflow in C)."""

    def process(ctx, value):
        number = process_value(ctx, value)
        if isinstance(number, int) and not -OPTION_INTEGER_LIMIT < number < OPTION_INTEGER_LIMIT:
            raise click_exceptions.BadParameter(f"{cut(str(number))} is too large (at most "
                                                f"{OPTION_INTEGER_LIMIT - 1})", ctx=ctx, param=param)
        return number

    param = getattr(process_value, "__self__", None)
    return process


def _bound_integers(command, name: str = "") -> None:
    """Give every integer option and argument of every command the 64-bit bound, and every numeric one its
    documented bound (:mod:`sim.cli.bounds`; nan and infinities refused everywhere)."""
    from sim.cli.bounds import bound_of, checked, numeric

    for sub_name, sub in getattr(command, "commands", {}).items():
        _bound_integers(sub, sub_name)
    for param in getattr(command, "params", ()):
        if getattr(param, "_fencesim_bounded", False):
            continue  # in-process callers build the commands once
        if getattr(getattr(param, "type_descriptor", None), "annotation", None) is int:
            param.process_value = _bounded(param.process_value)
        if numeric(param):
            param.process_value = checked(param.process_value, functools.partial(bound_of, name, param), param,
                                          click_exceptions.BadParameter)
        param._fencesim_bounded = True


def _interrupt(signum, frame) -> None:
    """Ctrl-C ends a command (exit 2, its state kept); a second Ctrl-C is ignored, so it cannot cut short the
    saving of that state or end the program by signal (exit 130)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _install_terminate():
    """The SIGTERM and SIGINT handlers (main thread only); returns the ones they replaced, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous_interrupt = signal.getsignal(signal.SIGINT)
    if previous_interrupt is signal.default_int_handler:  # not one a caller (or a test runner) chose
        signal.signal(signal.SIGINT, _interrupt)
    return signal.signal(signal.SIGTERM, _terminate), previous_interrupt


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app and map failures to exit codes."""
    previous = _install_terminate()  # first: a SIGTERM during the imports below is an interrupt too
    try:
        try:
            code = _main(argv)
        except KeyboardInterrupt:  # a SIGTERM while an error was being reported
            code = EXIT_INTERRUPTED
    finally:
        if previous is not None:
            # The console script is about to exit: a late SIGTERM or Ctrl-C must not kill it by signal (exit
            # -15 or 130) or interrupt its exit handlers; called in-process, the caller's handlers come back.
            signal.signal(signal.SIGTERM, signal.SIG_IGN if argv is None else previous[0])
            signal.signal(signal.SIGINT, signal.SIG_IGN if argv is None else previous[1])
    sys.exit(code)


def _user_families() -> None:
    """Load the families FENCESIM_FAMILIES names before any command, so that every command (even one that
    needs no family, such as ``matrix``) refuses a bad value alike: exit 4, one line."""
    if os.environ.get("FENCESIM_FAMILIES", "").strip():
        import sim.registry  # noqa: F401  (raises InputError on a bad value)


#: The plotting backend of the command line: figures go to files only, whatever ``MPLBACKEND`` names (a
#: GUI backend, or a misspelt one, would end a review with an error matplotlib raises on import).
PLOT_BACKEND = "Agg"


def _family_fault(error: BaseException) -> str | None:
    """The line that says a user's family raised ``error`` in its own code (None: a bug in fencesim)."""
    try:
        from sim.cli.blame import family_fault

        return family_fault(error)
    except Exception:  # telling whose fault it is must never hide the error itself
        return None


def _main(argv: list[str] | None) -> int:
    os.environ["MPLBACKEND"] = PLOT_BACKEND  # before anything imports matplotlib
    try:
        from sim import cli as _commands  # noqa: F401  (registers every command)

        command = typer.main.get_command(app)
    except KeyboardInterrupt:
        error_console().print("fencesim: interrupted", markup=False)
        return EXIT_INTERRUPTED
    args = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # a user's text may hold what the terminal cannot show
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        _user_families()
        _bound_integers(command)  # after the user's families: the bounds read the registry
        code = command.main(args=args, prog_name="fencesim", standalone_mode=False)
    except InputError as error:
        error_console().print(f"fencesim: error: {_printable(cut(str(error), MAX_ERROR_CHARS))}", markup=False)
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
    except WorkerDied as error:  # stopped from outside (out of memory, killed): not a bug to report
        error_console().print(f"fencesim: error: {error}; the system stops a process when memory runs out: "
                              "run again with fewer --workers", markup=False)
        code = EXIT_INTERNAL
    except Exception as error:  # a bug in fencesim, or in the code of a user's family
        blamed = _family_fault(error)
        if blamed is not None:
            error_console().print(f"fencesim: error: {_printable(cut(blamed, MAX_ERROR_CHARS))}", markup=False)
            code = EXIT_INPUT
        else:
            traceback.print_exc()
            error_console().print(
                "fencesim: internal error: this is a bug in fencesim; please report it with the command above",
                markup=False,
            )
            code = EXIT_INTERNAL
    if code == 130:  # Typer's answer to an interrupt inside a command
        error_console().print("fencesim: interrupted", markup=False)
        code = EXIT_INTERRUPTED
    return code if isinstance(code, int) else EXIT_OK


def distinct_protocols(family, texts: list[str], option: str) -> list:
    """Parse each protocol; the same protocol given twice, however it is spelled, is refused."""
    protocols = [family.parse_protocol(text) for text in texts]
    for position, protocol in enumerate(protocols):
        for earlier in protocols[:position]:
            if earlier == protocol:
                same = (f"{earlier.label!r}" if earlier.label == protocol.label else
                        f"the same protocol as {earlier.label!r} and {protocol.label!r} "
                        f"({protocol.describe()})")
                raise InputError(f"{option} names {same} more than once; give each protocol once")
    return protocols
