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
        self.written: list[int] = []  # the entries of each chunk written, in order
        self._file: BinaryIO | None = None

    def __len__(self) -> int:
        return self.count

    @property
    def spilled_chunks(self) -> int:
        return len(self.written)

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
        self.written.append(len(self.kept))
        self.kept = []

    def check(self) -> None:
        """Every entry counted is kept, in memory or on disk (checked once the layer is built)."""
        assert self.count == len(self.kept) + sum(self.written), (
            f"a layer counted {self.count} entries but holds {len(self.kept)} and wrote {sum(self.written)}")

    def sample(self) -> list[Any]:
        """The first and the last entry still in memory (none when all were written out): what a check of the
        states' own consistency looks at, once per layer."""
        return [self.kept[0], self.kept[-1]] if self.kept else []

    def __iter__(self) -> Iterator[Any]:
        """The entries in the order they were appended (the spilled ones read back first), each once."""
        if self._file is not None:
            self._file.seek(0)
            for written in self.written:
                chunk = pickle.load(self._file)
                assert len(chunk) == written, f"a spilled chunk of {written} entries read back {len(chunk)}"
                yield from chunk
            self._file.close()
            self._file = None
        kept, self.kept = self.kept, []
        yield from kept

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self.kept = []
