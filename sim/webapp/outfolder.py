"""The export's folder, ``--out``: looked up again at every write, never through a symbolic link.

The server is given ``--out`` once, when it starts; the folder may be moved, removed or replaced while it
runs.  So every export walks the folder's path afresh from the root, one folder at a time, opening each
without following a symbolic link (``O_NOFOLLOW``): a link, a FIFO or a file put in place of ``--out`` or of
a folder above it is refused with one line, and so is a folder of another user or one holding files
fencesim did not write.  The files are then written through the folder so opened (each under a temporary
name first, then renamed beside it), so nothing is written anywhere else even if the path changes meanwhile.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from sim.core.outputs import OutputError, foreign_entries
from sim.report.outputs import FENCESIM

#: How a folder on the way is opened: never through a link, never blocking (a FIFO is not opened at all).
_FOLDER_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
#: How a temporary file is created: new, never through a link.
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: Characters of a file's name kept in its temporary name.
TEMPORARY_NAME_KEPT = 100


class OutFolder:
    """``--out`` as the server was given it; :meth:`write` puts files in it (``what`` names it in messages)."""

    def __init__(self, path: str | Path, what: str = "--out"):
        self.given = Path(path)
        self.what = what
        # the folder the user named, links on its way resolved now, once: later links are never followed
        self.path = Path(os.path.realpath(path))

    def __repr__(self) -> str:
        return f"OutFolder({str(self.given)!r})"

    def write(self, files: dict[str, str]) -> list[Path]:
        """Write ``files`` (name -> text) into the folder as a unit; return their paths as given.

        Refused (:class:`~sim.core.outputs.OutputError`, one line, nothing written) when the folder or a
        folder above it is now a symbolic link or not a folder, when it belongs to another user or holds
        files fencesim did not write, or when one of the names is a file of the user's."""
        for name in files:
            if not name or "/" in name or "\x00" in name or name in (".", ".."):
                raise OutputError(f"{self.what}: {name!r} is not a file name; the explorer writes only inside "
                                  f"{self.given}")
        handle = self._open()
        try:
            self._check(handle, list(files))
            _write_in(handle, files, self)
        finally:
            os.close(handle)
        return [self.given / name for name in files]

    def _open(self) -> int:
        """The folder, opened by walking its path from the root without following a link (missing folders
        are made)."""
        handle = os.open("/", _FOLDER_FLAGS)
        parts = self.path.parts[1:]
        for position, part in enumerate(parts):
            handle = self._step(handle, part, position == len(parts) - 1)  # closes the folder above
        return handle

    def _step(self, parent: int, part: str, last: bool) -> int:
        """The folder ``part`` of the folder ``parent`` (closed here), made if missing."""
        try:
            try:
                return os.open(part, _FOLDER_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                try:
                    os.mkdir(part, dir_fd=parent)
                except FileExistsError:
                    pass
                return os.open(part, _FOLDER_FLAGS, dir_fd=parent)
        except OSError as error:
            raise OutputError(self._refusal(parent, part, last, error)) from None
        finally:
            os.close(parent)

    def _refusal(self, parent: int, part: str, last: bool, error: OSError) -> str:
        """One line saying why the folder ``part`` on the way to ``--out`` (``last``: ``--out`` itself) cannot
        be entered."""
        where = self.given if last else f"{self.given}: the folder {part} above it"
        try:
            mode = os.stat(part, dir_fd=parent, follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode) or error.errno == errno.ELOOP:
            what = "is now a symbolic link"
        elif mode and not stat.S_ISDIR(mode):
            what = f"is now {_kind(mode)}, not a folder"
        else:
            what = f"cannot be opened ({error.strerror or error})"
        return (f"{self.what} {where} {what}; the explorer writes only into the real folder it was started "
                "with, never through a link (nothing was written)")

    def _check(self, handle: int, names: list[str]) -> None:
        info = os.fstat(handle)
        if not stat.S_ISDIR(info.st_mode):
            raise OutputError(f"{self.what} {self.given} is not a folder now; nothing was written")
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise OutputError(f"{self.what} {self.given} belongs to another user (uid {info.st_uid}); the "
                              "explorer writes only into a folder of its own user (nothing was written)")
        for name in names:
            self._check_name(handle, name)
        strangers = foreign_entries(self.path, FENCESIM)
        if strangers:
            shown = ", ".join(strangers[:5]) + (", ..." if len(strangers) > 5 else "")
            raise OutputError(f"{self.what} {self.given} now holds files fencesim did not write ({shown}); the "
                              "explorer writes only into a folder of fencesim's outputs (nothing was written)")


    def _check_name(self, handle: int, name: str) -> None:
        """A file the export will write: new, or a regular file fencesim wrote (empty counts as one)."""
        try:
            info = os.stat(name, dir_fd=handle, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(info.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else _kind(info.st_mode)
            raise OutputError(f"{self.what} {self.given}: {name} is {what}, not a file fencesim wrote; it is never "
                              "followed or replaced (move it away; nothing was written)")
        if info.st_size and FENCESIM.kind_of(self.path / name) is None:
            raise OutputError(f"{self.what} {self.given}: {name} is a file of yours, not one fencesim wrote; it is "
                              "never replaced (move it away or give another folder; nothing was written)")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a file"


def _write_in(folder: int, files: dict[str, str], out: OutFolder) -> None:
    """Each file under a temporary name in ``folder`` (written, fsynced), then all renamed; on any failure
    none is renamed and the temporary files are removed."""
    temporaries: list[tuple[str, str]] = []
    current = ""
    try:
        for name, text in files.items():
            current = name
            temporary = f".{name[:TEMPORARY_NAME_KEPT]}.{secrets.token_hex(4)}.tmp"
            handle = os.open(temporary, _FILE_FLAGS, 0o666, dir_fd=folder)  # the umask applies
            temporaries.append((temporary, name))
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
                stream.flush()
                os.fsync(stream.fileno())
        for temporary, name in temporaries:
            current = name
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as error:
        _remove(folder, [temporary for temporary, _ in temporaries])
        raise OutputError(f"{out.what} {out.given}: could not write {current} ({error.strerror or error})") \
            from None
    except BaseException:
        _remove(folder, [temporary for temporary, _ in temporaries])
        raise


def _remove(folder: int, names: list[str]) -> None:
    for name in names:
        try:
            os.unlink(name, dir_fd=folder)
        except OSError:
            pass
