"""Whose fault an exception is: a user's family, or fencesim.

A family named in ``FENCESIM_FAMILIES`` runs its own code inside fencesim's commands (its parser, machine,
checks...).  An exception raised in that code is the family's to fix, not a bug in fencesim: the command line
says so in one line (exit 4) -- the family, the file and line, the exception, and what the family contract
expects -- instead of a traceback asking for a bug report.  An exception raised in fencesim's own code (the
shipped families included) stays an internal error.

Where it was raised is the innermost frame of the traceback that is either fencesim's or a user family's:
frames of the standard library and of installed packages are passed over (a family that calls ``int("x")``
raised the error itself).  A family's code is the files of the modules its class is defined in (and of
their top-level packages), and any other code that is neither fencesim's, the standard library's nor an
installed package's.  A sweep's worker processes send their traceback as text; its frames are read too.
"""

from __future__ import annotations

import os
import re
import site
import sys
import sysconfig
from dataclasses import dataclass
from typing import Any

#: Where a family's author reads the contract.
CONTRACT_DOC = "docs/adding-a-family.md"
_FRAME_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')
_NO_ATTRIBUTE = re.compile(r"'(?P<type>\w+)' object has no attribute '(?P<name>\w+)'")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == folder or path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def _library_folders() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    found |= set(getattr(site, "getsitepackages", lambda: [])())
    user_site = getattr(site, "getusersitepackages", lambda: None)()
    if isinstance(user_site, str):
        found.add(user_site)
    return tuple(sorted(_real(p) for p in found))


def _family_code(family: Any) -> tuple[str, ...]:
    """The files (or package folders) of the modules the family's class and its bases are defined in,
    fencesim's own left out."""
    places = set()
    for cls in type(family).__mro__:
        name = getattr(cls, "__module__", "") or ""
        if name == "builtins" or name == "sim" or name.startswith("sim."):
            continue
        module = sys.modules.get(name)
        top = sys.modules.get(name.split(".")[0]) if "." in name else None
        folders = list(getattr(top, "__path__", ()) or ())
        if folders:
            places |= {_real(folder) for folder in folders}
        else:
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                places.add(_real(file))
    return tuple(sorted(places))


def _frames(error: BaseException) -> list[Frame]:
    """The traceback's frames, outermost first; a worker process's traceback (sent as text) replaces them."""
    remote = error.__cause__
    text = getattr(remote, "tb", None)
    if type(remote).__name__ == "RemoteTraceback" and isinstance(text, str):
        return [Frame(m["file"], int(m["line"]), m["function"]) for m in _FRAME_LINE.finditer(text)]
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(Frame(tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return frames


def _user_families() -> list[Any]:
    registry = sys.modules.get("sim.registry")
    families = getattr(getattr(registry, "FAMILIES", None), "families", ())
    shipped = getattr(registry, "SHIPPED", ())
    return [f for f in families if not any(f is s for s in shipped)]


def raised_in_family(error: BaseException) -> tuple[Any, Frame] | None:
    """The user family whose code raised ``error``, and where; None when it was raised in fencesim's code (or no
    user family is registered)."""
    families = _user_families()
    if not families:
        return None
    import sim

    own = (_real(os.path.dirname(sim.__file__ or "")),)
    libraries = _library_folders()
    places = [(family, _family_code(family)) for family in families]
    for frame in reversed(_frames(error)):
        path = _real(frame.file)
        for family, code in places:
            if _under(path, code):
                return family, frame
        if _under(path, own):
            return None
        if frame.file.startswith("<") or _under(path, libraries):
            continue
        return (families[0], frame) if len(families) == 1 else None
    return None


def _expects(error: BaseException, family: Any) -> str:
    """What the family contract expects, for the error raised."""
    if isinstance(error, AttributeError):
        holder = getattr(error, "obj", None)
        name = getattr(error, "name", None)
        found = _NO_ATTRIBUTE.search(str(error))
        kind = type(holder).__name__ if holder is not None else (found["type"] if found else "")
        name = name or (found["name"] if found else "")
        typed = getattr(getattr(family, "knobs", None), "values_type", None)
        knobs = ", ".join(getattr(getattr(family, "knobs", None), "names", lambda: [])())
        typed_name = typed.__name__ if isinstance(typed, type) else "TheFamilyKnobs"
        if kind == "Protocol":
            return (f"a family reads its knobs typed, {typed_name}.of(protocol).KNOB (its knobs: {knobs or 'none'}); "
                    f"a Protocol has no knob attributes such as {name!r} (see {CONTRACT_DOC}, 'Knobs and presets')")
        if isinstance(typed, type) and kind == typed.__name__:
            return (f"{typed_name} has no knob {name!r} (its knobs: {knobs or 'none'}; see {CONTRACT_DOC}, "
                    "'Knobs and presets')")
    return f"a family keeps the contract of {CONTRACT_DOC}"


def family_fault(error: BaseException) -> str | None:
    """One line saying that a user family's code raised ``error`` (None: it is fencesim's)."""
    found = raised_in_family(error)
    if found is None:
        return None
    family, frame = found
    name = getattr(family, "name", type(family).__name__)
    return (f"family {name!r} failed in its own code at {frame.file}, line {frame.line} (in {frame.function}): "
            f"{type(error).__name__}: {error}; {_expects(error, family)}. The error is in that family, not in "
            "fencesim: fix the family")
