"""One layer of breadth-first search: the states found at one depth, waiting to be expanded.

The visited set keeps fingerprints only; the states themselves are kept for
one layer, the one being built, while the one before it is expanded.  When
the process's memory passes the search's spill mark, a layer writes its
entries to a temporary file in chunks (pickled, in the order found) and
reads them back, in that order, when the next depth expands them -- so a
wide layer costs disk, not memory, and the result is the same.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from typing import Any, BinaryIO, Iterator

#: Entries written to disk at a time once a layer spills, and how often (entries) the memory is read.
SPILL_CHUNK = 4096
MEMORY_CHECK_EVERY = 4096


def resident_bytes() -> int:
    """The process's resident memory now (0 where the system does not say)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as file:
            return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # not Linux: no reading
        return 0


def physical_bytes() -> int:
    """The machine's memory (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return 0


class Layer:
    """The entries of one depth, in the order found; in memory, or partly on disk past the spill mark."""

    def __init__(self, spill_bytes: int | None = None, folder: str | None = None):
        self.spill_bytes, self.folder = spill_bytes, folder
        self.kept: list[Any] = []
        self.count = 0
        self.spilled_chunks = 0
        self._file: BinaryIO | None = None

    def __len__(self) -> int:
        return self.count

    def append(self, entry: Any) -> None:
        self.kept.append(entry)
        self.count += 1
        if self.spill_bytes is None or len(self.kept) < SPILL_CHUNK:
            return
        if self._file is None and (self.count % MEMORY_CHECK_EVERY or resident_bytes() < self.spill_bytes):
            return
        self._spill()

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="fencesim-layer-", dir=self.folder)
        pickle.dump(self.kept, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self.spilled_chunks += 1
        self.kept = []

    def __iter__(self) -> Iterator[Any]:
        """The entries in the order they were appended (the spilled ones read back first), each once."""
        if self._file is not None:
            self._file.seek(0)
            for _ in range(self.spilled_chunks):
                yield from pickle.load(self._file)
            self._file.close()
            self._file = None
        kept, self.kept = self.kept, []
        yield from kept

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self.kept = []
