"""Output safety: what a command may write where, decided before any work.

Nothing a user had is replaced or lost.  An output replaces only the command's own kind of output: a
file only when it is empty or its :class:`FileKind` recognises it, a folder only when it is new, empty,
or holds nothing but the command's outputs (its :class:`Ownership`); a file that is appended to
(:func:`check_append`) is never truncated.  An output never names one of the command's inputs, nor
another output of the same command (:class:`Plan`).  Paths that cannot take a file (a symbolic-link
loop, a dangling link, a FIFO, a device, a folder where a file is wanted, a parent that is a regular
file, a read-only or full file system, a name longer than the file system allows) are refused with one
line naming the path and the option.  ``force`` (``--force``) accepts a file or folder that holds
something else; it never overrides the rest.

This module knows no file format: what fencesim's own files look like, and how an earlier run's are
recognised, is the report layer's (``sim.report.outputs``), handed in as data.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from sim.core.errors import InputError

#: Entries of an output folder examined before giving up (a limit on everything).
FOLDER_SCAN_LIMIT = 100_000
#: Foreign entries named before the scan stops (a message shows five; one is enough to refuse).
FOREIGN_ENTRIES_KEPT = 20
#: Subfolders of an output folder examined (``counterexamples/cruel``, ``counterexamples/conform``).
FOLDER_SCAN_DEPTH = 4
#: The name of an output folder's lock (``fencesim fuzz`` holds it while it writes there).
LOCK_NAME = ".fencesim.lock"
#: A temporary file of :func:`sim.core.files.write_files_atomically` left by a killed writer.
_TEMPORARY = re.compile(r"^\..*\.[A-Za-z0-9_]{8}\.tmp$")


class OutputError(InputError):
    """An output path fencesim must not, or cannot, write."""


class WriteFailed(OutputError, OSError):
    """Writing an output failed (a full disk, a folder gone): one line, and still an ``OSError``."""


# -- what a writer's own files are: data the caller gives ------------------------------------------------


@dataclass(frozen=True)
class FileKind:
    """A kind of output file: what it is, in words for messages (``"a JUnit file fencesim wrote"``), and
    whether an existing file holds one (``holds(path)``, by its content)."""

    words: str
    holds: Callable[[Path], bool]


@dataclass(frozen=True)
class Ownership:
    """How a command tells its own earlier outputs in a folder from a user's files: ``kind_of(path)`` names
    the kind of output a non-empty file holds (None: not one); folders named in ``passed_over`` (the caches
    tools leave) are no one's, neither kept nor refused."""

    kind_of: Callable[[Path], str | None]
    passed_over: frozenset[str] = frozenset()


def own_name(name: str) -> bool:
    """Whether ``name`` is a file this module's machinery leaves in a folder: a folder's lock, or a
    temporary file of a writer killed before its rename."""
    return name == LOCK_NAME or _TEMPORARY.match(name) is not None


def foreign_entries(folder: Path, ownership: Ownership, depth: int = FOLDER_SCAN_DEPTH) -> list[str]:
    """Entries of ``folder`` (relative names) that are not ``ownership``'s outputs; empty files count as
    none, and neither do the files of :func:`own_name`."""
    strangers: list[str] = []
    seen = [0]

    def walk(current: Path, prefix: str, level: int) -> None:
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as error:
            strangers.append(f"{prefix}{current.name} ({error.strerror})")
            return
        for entry in entries:
            seen[0] += 1
            if seen[0] > FOLDER_SCAN_LIMIT:
                strangers.append(f"more than {FOLDER_SCAN_LIMIT} entries")
                return
            if len(strangers) >= FOREIGN_ENTRIES_KEPT:
                return
            shown = f"{prefix}{entry.name}"
            try:
                if entry.name in ownership.passed_over and entry.is_dir(follow_symlinks=False):
                    continue
                if entry.is_symlink():
                    strangers.append(shown)
                elif entry.is_dir():
                    if level >= depth:
                        strangers.append(shown + "/")
                    else:
                        walk(Path(entry.path), shown + "/", level + 1)
                elif not entry.is_file() or (entry.stat().st_size and not _owned(Path(entry.path), ownership)):
                    strangers.append(shown)
            except OSError as error:  # gone while scanned, or unreadable (/proc): not fencesim's
                strangers.append(f"{shown} ({error.strerror or 'cannot be read'})")

    walk(Path(folder), "", 1)
    return strangers


def _owned(path: Path, ownership: Ownership) -> bool:
    return own_name(path.name) or ownership.kind_of(path) is not None


# -- checking a path before any work --------------------------------------------------------------------


def _describe(mode: int) -> str | None:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None if stat.S_ISREG(mode) else "not a regular file"


def resolve_link(path: Path, what: str, noun: str = "directory") -> Path:
    """``path`` with symbolic links followed; a loop or a link to nothing is refused."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OutputError(f"{what} {path} is a symbolic link loop") from None
        if error.errno == errno.ENAMETOOLONG:
            longest = max((len(os.fsencode(part)) for part in Path(path).parts), default=0)
            raise OutputError(f"{what} {path}: a name on the path is {longest} bytes, or the path "
                              f"{len(os.fsencode(str(path)))}; the file system allows less") from None
        if error.errno == errno.ENOTDIR:
            _existing_ancestor(path, what, noun)  # names the regular file on the path
            raise OutputError(f"{what} {path}: a folder on its path is a regular file") from None
        if os.path.islink(path):
            raise OutputError(f"{what} {path} is a symbolic link to nothing ({os.readlink(path)})") from None
        return Path(os.path.abspath(path))
    return Path(os.path.realpath(path))


def _existing_ancestor(path: Path, what: str, noun: str = "directory") -> Path:
    """The nearest folder above ``path`` that exists; refused when that is not a folder."""
    for parent in Path(os.path.abspath(path)).parents:
        try:
            mode = os.stat(parent).st_mode
        except FileNotFoundError:
            continue
        except OSError as error:
            if error.errno == errno.ENOTDIR:
                continue  # a component above is a file: found on the way up
            raise OutputError(f"{what} {path}: cannot reach {parent} ({error.strerror})") from None
        if not stat.S_ISDIR(mode):
            raise OutputError(f"{what} {path}: {parent} is a regular file, not a {noun}")
        return parent
    return Path("/")


def _check_room(folder: Path, path: Path, what: str) -> None:
    """``folder`` (which exists) takes a new file: writable, on a real file system with space left."""
    try:
        info = os.statvfs(folder)
    except OSError:
        info = None
    if info is not None and info.f_blocks == 0:
        raise OutputError(f"{what} {path}: {folder} is on a virtual file system (such as /proc or /sys) that "
                          "stores no files")
    if info is not None and info.f_bavail == 0:
        raise OutputError(f"{what} {path}: no space left on the device holding {folder}")
    try:
        handle, probe = tempfile.mkstemp(prefix=".fencesim-probe-", dir=folder)
    except OSError as error:
        raise OutputError(f"{what} {path}: cannot write in {folder} ({error.strerror})") from None
    os.close(handle)
    os.unlink(probe)


def _check_name(path: Path, folder: Path, what: str) -> None:
    limit = _name_max(folder)
    size = len(os.fsencode(path.name))
    if size > limit:
        raise OutputError(f"{what} {path}: the name is {size} bytes; the file system allows {limit}")
    total = len(os.fsencode(os.path.abspath(path)))
    if total >= 4096:
        raise OutputError(f"{what} {path}: the path is {total} bytes; the file system allows 4095")


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


def check_file(path: str | Path, what: str, kind: FileKind | None = None, force: bool = False,
               forcible: bool = True) -> Path:
    """Where an output file of ``kind`` may be written, checked before any work: the path to write
    (symbolic links followed, so a link is kept and its target replaced).

    An existing file is replaced only when it is empty or ``kind`` recognises it (``force``: any regular
    file); everything else in the module docstring is refused with :class:`OutputError`.  ``forcible``: the
    command has ``--force`` (a refusal names it).
    """
    text = str(path)
    if text == "" or "\x00" in text or Path(text).name in ("", ".", "..") or text.endswith(os.sep):
        raise OutputError(f"{what} needs a file name, not {text!r}")
    path = Path(text)
    target = resolve_link(path, what)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise OutputError(f"{what} {path}: {error.strerror}") from None
    if info is not None:
        other = _describe(info.st_mode)
        if other == "a folder":
            raise OutputError(f"{what} {path} is a directory; give a file name")
        if other is not None:
            raise OutputError(f"{what} {path} is {other}; fencesim writes regular files only")
        if not os.access(target, os.W_OK):
            raise OutputError(f"{what} {path} is read-only; fencesim does not replace it")
        if info.st_size and kind is not None and not force and not kind.holds(target):
            raise OutputError(f"{what} {path} holds something that is not {kind.words}; fencesim never "
                              "replaces a file of yours: give a new name" + (" (or --force to replace it)"
                                                                             if forcible else ""))
    folder = _existing_ancestor(target, what)
    _check_name(target, folder, what)
    _check_room(folder, path, what)
    return target


def check_folder(path: str | Path, what: str, ownership: Ownership, force: bool = False) -> Path:
    """Where an output folder may be, checked before any work: new, empty, or holding only ``ownership``'s
    outputs (``force``: anything, though no file of the user's is ever replaced).  Nothing is created."""
    text = str(path)
    if text == "" or "\x00" in text:
        raise OutputError(f"{what} needs a folder name")
    path = Path(text)
    target = resolve_link(path, what, "folder")
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is None:
        folder = _existing_ancestor(target, what, "folder")
        _check_name(target, folder, what)
        _check_room(folder, path, what)
        return path
    if not stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{what} {path} is {_describe(info.st_mode) or 'a file'}, not a folder")
    if target == Path(target.anchor):
        raise OutputError(f"{what} {path} is the root of the file system; give a folder of its own (a new one "
                          "is made)")
    _check_room(target, path, what)
    if not force:
        strangers = foreign_entries(target, ownership)
        if strangers:
            shown = ", ".join(strangers[:5]) + (", ..." if len(strangers) > 5 else "")
            raise OutputError(f"{what} {path} holds files that fencesim did not write ({shown}); an output "
                              "folder must be new, empty or an earlier fencesim output folder (or give --force "
                              "to write beside them; a file of yours is never replaced)")
    return path


def check_will_write(folder: Path, names: Iterable[str], what: str, ownership: Ownership) -> None:
    """Files ``names`` that a command will write in ``folder``: each is new, empty, or ``ownership``'s."""
    for name in names:
        target = Path(folder) / name
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise OutputError(f"{what} {folder}: {name} is not a regular file fencesim wrote; it is never "
                              "replaced (move it away)")
        if target.is_file() and target.stat().st_size and not _owned(target, ownership):
            raise OutputError(f"{what} {folder}: {name} is a file of yours, not one fencesim wrote; it is never "
                              "replaced (move it away or give another folder)")


# -- several outputs of one command ------------------------------------------------------------------


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: Path, folder: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


@dataclass
class Plan:
    """Every input and output of one command, checked together before any work.

    ``inputs`` and ``files`` are ``(option, path)``; ``folders`` are ``(option, path, names)`` where
    ``names`` are files the command will write in the folder (when known up front).
    """

    inputs: list[tuple[str, Path]] = field(default_factory=list)
    files: list[tuple[str, Path]] = field(default_factory=list)
    folders: list[tuple[str, Path, tuple[str, ...]]] = field(default_factory=list)

    def check(self) -> None:
        """Refuse an output that names an input, another output, or an output folder."""
        outputs = [(option, path, False) for option, path in self.files] + \
                  [(option, path, True) for option, path, _ in self.folders]
        for position, (option, path, is_folder) in enumerate(outputs):
            for input_option, source in self.inputs:
                if _same(path, source) or (is_folder and _inside(source, path) and self._writes(path, source)):
                    raise OutputError(f"{option} {path} names the {input_option} file {source}, which this command "
                                      "reads; an output never replaces an input")
            for other_option, other, other_is_folder in outputs[position + 1:]:
                if _same(path, other):
                    kind = "folder" if other_is_folder or is_folder else "file"
                    raise OutputError(f"{option} {path} and {other_option} {other} name the same {kind}; give "
                                      "each output its own name")
        for option, path in self.files:
            for folder_option, folder, names in self.folders:
                if any(_same(path, Path(folder) / name) for name in names):
                    raise OutputError(f"{option} {path} is a file that {folder_option} {folder} receives; give "
                                      "it another name")

    def _writes(self, folder: Path, source: Path) -> bool:
        names = next((n for _, f, n in self.folders if f == folder), ())
        return any(_same(source, Path(folder) / name) for name in names)


# -- a file that is only ever appended to ------------------------------------------------------------------


def check_append(path: str | Path, what: str, noun: str = "the text") -> Path:
    """A file to append to (``noun``: what is appended, for messages, ``"the summary"``), checked before any
    work: a regular file that takes appends, or a missing one, in a folder that exists, to be created."""
    path = Path(str(path))
    target = resolve_link(path, what)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is None:
        if not target.parent.is_dir():
            raise OutputError(f"{what} {path}: folder {path.parent} does not exist ({noun} is appended to "
                              "a file there)")
        _check_name(target, target.parent, what)
        _check_room(target.parent, path, what)
        return target
    other = _describe(info.st_mode)
    if other is not None:
        raise OutputError(f"{what} {path} is {other}; {noun} is appended to a regular file only")
    _check_room(target.parent, path, what)
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY))
    except OSError as error:
        raise OutputError(f"{what} {path}: cannot append to it ({error.strerror})") from None
    return target


def append_text(path: Path, text: str, what: str, noun: str = "the text") -> None:
    """Append ``text`` (``noun``: what it is, for messages); never blocks (a FIFO put there since the check
    is refused) and never truncates."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY, 0o666)
    except OSError as error:
        raise OutputError(f"{what} {path}: cannot append to it ({error.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise OutputError(f"{what} {path} is no longer a regular file; {noun} was not written")
        remaining = text.encode("utf-8")
        while remaining:
            remaining = remaining[os.write(handle, remaining):]
    except OSError as error:
        raise OutputError(f"{what} {path}: {noun} could not be written ({error.strerror})") from None
    finally:
        os.close(handle)


# -- one writer per output folder -----------------------------------------------------------------------


class FolderLock:
    """An exclusive lock on an output folder, held while a command writes there (released when the
    process ends, however it ends).  A second command on the same folder is refused."""

    def __init__(self, folder: Path, what: str = "--out"):
        self.folder, self.what = Path(folder), what
        self.handle: int | None = None

    def __enter__(self) -> "FolderLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        handle = self.handle = os.open(self.folder, os.O_RDONLY)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(handle)
            self.handle = None
            raise OutputError(f"{self.what} {self.folder} is in use by another fencesim run; wait for it to end "
                              "(or give another folder)") from None
        return self

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            os.close(self.handle)
            self.handle = None
