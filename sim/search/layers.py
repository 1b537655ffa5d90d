"""One layer of breadth-first search: the states found at one depth, waiting to be expanded.

The visited set keeps fingerprints only; the states themselves are kept for
one layer, the one being built, while the one before it is expanded.  A
layer keeps its first :data:`ENCODE_PAST` entries as they are; past them it
keeps them encoded, :data:`ENCODE_CHUNK` entries pickled together (the parts
their states share are written once a chunk) into one growing buffer, and
decodes a chunk at a time when the next depth expands them.  The entries
read back equal the ones appended, in the same order, so the search finds
the same.  Measured (``benchmarks/bench_checker.py --only memory``): an
entry of tiny / plan takes 114 bytes encoded against about 640 as objects,
one of three-files / step-dedupe 150 against about 750; one of the effects
family, a paused run, 1,780 pickled against 11,800.  Encoding and decoding
cost about 6 to 9 microseconds an entry of the workspace family: 11 to 14%
more time for three-files / step-dedupe to depth 8 with every layer
encoded (and 0.64x the peak memory), which is why a layer stays objects up
to 131,072 entries (about 90 MB of them) -- or, in a search with a memory
limit (every search on a machine that says how much memory it has), until
the process holds the search's encode mark (a quarter of the limit, at
most :data:`ENCODE_MARK_MAX`, 1 GiB): a search that fits there pays nothing
for encoding, and one that does not encodes every entry from there on.
When the process's memory passes the search's spill mark, a layer encodes
every entry and writes the encoded chunks to a temporary file, reading them
back, in order, when the next depth expands them -- so a wide layer costs
disk, not memory, and the result is the same.

A machine whose state costs more to pickle than to rebuild (the effects
family's paused run, :attr:`~sim.core.machine.Machine.rebuilt_by_order`)
gives its layers a :data:`Codec`: an encoded entry keeps the state's number
and verdict only (6 to 8 bytes, against 1,780 pickled), and the state is
rebuilt from the search's root along the order the search's trace holds for
that number when the next depth expands it.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from array import array
from typing import Any, BinaryIO, Callable, Iterable, Iterator

#: Entries a layer keeps as objects before it encodes them, and entries pickled together once it does.
ENCODE_PAST = 1 << 17
ENCODE_CHUNK = 128
#: A batch no layer reaches: entries stay objects until the memory says otherwise.
UNENCODED = 1 << 62
#: The most resident memory a search holds before its layers encode their entries (its encode mark is a quarter of
#: its memory limit, at most this): a search that outgrows it pays the encoding to stay small.
ENCODE_MARK_MAX = 1 << 30
#: Encoded bytes a spilling layer holds before it writes them out, and how often (entries) the memory is read.
SPILL_BYTES = 1 << 20
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


#: How a layer writes a chunk of entries and reads it back (``(shrink, grow)``, each a list to a list of as many):
#: ``grow(shrink(chunk))`` equals ``chunk`` where the states define equality.
Codec = tuple[Callable[[list[Any]], list[Any]], Callable[[list[Any]], list[Any]]]


def _decoded(blob: Any, entries: int, codec: Codec | None = None) -> list[Any]:
    chunk = pickle.loads(blob)
    assert len(chunk) == entries, f"an encoded chunk of {entries} entries read back {len(chunk)}"
    if codec is not None:
        chunk = codec[1](chunk)
        assert len(chunk) == entries, f"a chunk of {entries} entries was rebuilt as {len(chunk)}"
    return chunk


class Layer:
    """The entries of one depth, in the order found: as objects, encoded in memory past :data:`ENCODE_PAST`
    (``encode_past``) or, given an encode mark (``encode_bytes``), once the process's memory passes it, and
    encoded on disk past the spill mark (``codec``: how a chunk is written and read back; None: pickled whole)."""

    def __init__(self, spill_bytes: int | None = None, folder: str | None = None, encode_past: int | None = None,
                 encode_bytes: int | None = None, codec: Codec | None = None):
        self.spill_bytes, self.folder, self.codec = spill_bytes, folder, codec
        #: the resident memory past which the layer encodes what it keeps (None: past :data:`ENCODE_PAST` entries)
        self.encode_bytes = encode_bytes if spill_bytes is not None and encode_past is None else None
        self.kept: list[Any] = []  # the entries after the encoded ones, as objects
        self.count = 0
        #: entries kept as objects before the next encoding
        if self.encode_bytes is not None:
            self.batch = UNENCODED
        else:
            self.batch = max(ENCODE_PAST if encode_past is None else encode_past, ENCODE_CHUNK)
        self.data = bytearray()  # the chunks encoded and still in memory, one after the other
        self.ends = array("q")  # where each of them ends in data
        self.sizes = array("i")  # the entries of each of them
        self.written: list[int] = []  # the entries of each chunk written, in order
        self.written_bytes: list[int] = []  # and its bytes
        self._file: BinaryIO | None = None

    def __len__(self) -> int:
        return self.count

    @property
    def spilled_chunks(self) -> int:
        return len(self.written)

    @property
    def encoded(self) -> int:
        """The entries kept encoded in memory."""
        return sum(self.sizes)

    def encoded_bytes(self) -> int:
        """What the entries encoded in memory take: their bytes and where each chunk ends and how many it holds."""
        return len(self.data) + (self.ends.itemsize + self.sizes.itemsize) * len(self.ends)

    def append(self, entry: Any) -> None:
        self.kept.append(entry)
        self.count += 1
        if len(self.kept) >= self.batch or (self.spill_bytes is not None and not self.count % MEMORY_CHECK_EVERY):
            self._settle(not self.count % MEMORY_CHECK_EVERY)

    def extend(self, entries: Iterable[Any]) -> None:
        """Several entries, in order: as :meth:`append` of each, the memory read once whenever the count passes
        a multiple of :data:`MEMORY_CHECK_EVERY` (the chunks encoded are the same)."""
        kept, before = self.kept, self.count
        held = len(kept)
        kept.extend(entries)
        self.count += len(kept) - held
        due = self.count // MEMORY_CHECK_EVERY != before // MEMORY_CHECK_EVERY
        if len(kept) >= self.batch or (self.spill_bytes is not None and due):
            self._settle(due)

    def _settle(self, memory_due: bool) -> None:
        """Encode the entries kept as objects once there are enough of them (every one past the spill mark),
        and past it (the memory read when ``memory_due``) write what is encoded to disk."""
        if self._file is None and self.spill_bytes is not None and memory_due:
            resident = resident_bytes()
            if resident >= self.spill_bytes:
                self._file = tempfile.TemporaryFile(prefix="fencesim-layer-", dir=self.folder)
                self.batch = ENCODE_CHUNK
            elif self.encode_bytes is not None and resident >= self.encode_bytes:
                self.batch = ENCODE_CHUNK
        if len(self.kept) >= self.batch:
            self._encode()
        if self._file is not None and len(self.data) >= SPILL_BYTES:
            self._write()

    def _encode(self) -> None:
        """The entries kept as objects, encoded :data:`ENCODE_CHUNK` at a time (fewer left wait for more)."""
        kept, data, shrink = self.kept, self.data, self.codec[0] if self.codec is not None else None
        whole = len(kept) - len(kept) % ENCODE_CHUNK
        for start in range(0, whole, ENCODE_CHUNK):
            chunk = kept[start:start + ENCODE_CHUNK]
            data += pickle.dumps(chunk if shrink is None else shrink(chunk), protocol=pickle.HIGHEST_PROTOCOL)
            self.ends.append(len(data))
            self.sizes.append(ENCODE_CHUNK)
        self.kept = kept[whole:]
        self.batch = ENCODE_CHUNK

    def _write(self) -> None:
        assert self._file is not None
        self._file.write(self.data)
        start = 0
        for end, size in zip(self.ends, self.sizes):
            self.written.append(size)
            self.written_bytes.append(end - start)
            start = end
        self.data, self.ends, self.sizes = bytearray(), array("q"), array("i")

    def check(self) -> None:
        """Every entry counted is kept, as an object, encoded or on disk (checked once the layer is built)."""
        held = len(self.kept) + self.encoded + sum(self.written)
        assert self.count == held, (f"a layer counted {self.count} entries but holds {len(self.kept)}, encoded "
                                    f"{self.encoded} and wrote {sum(self.written)}")

    def sample(self) -> list[Any]:
        """The first and the last entry still in memory (none when all were written out): what a check of the
        states' own consistency looks at, once per layer."""
        first = self._one(self.data[:self.ends[0]], self.sizes[0], 0) if self.ends else None
        if self.kept:
            return [self.kept[0] if first is None else first, self.kept[-1]]
        if self.ends:
            start = self.ends[-2] if len(self.ends) > 1 else 0
            return [first, self._one(self.data[start:], self.sizes[-1], -1)]
        return []

    def _one(self, blob: Any, entries: int, index: int) -> Any:
        """One entry of an encoded chunk (the others are not rebuilt)."""
        entry = _decoded(blob, entries)[index]
        return entry if self.codec is None else self.codec[1]([entry])[0]

    def __iter__(self) -> Iterator[Any]:
        """The entries in the order they were appended (the spilled ones read back first, then the encoded
        ones, a chunk at a time), each once."""
        if self._file is not None:
            self._file.seek(0)
            for size, length in zip(self.written, self.written_bytes):
                yield from _decoded(self._file.read(length), size, self.codec)
            self._file.close()
            self._file = None
        data, ends, sizes, kept = self.data, self.ends, self.sizes, self.kept
        self.data, self.ends, self.sizes, self.kept = bytearray(), array("q"), array("i"), []
        start = 0
        for end, size in zip(ends, sizes):
            yield from _decoded(data[start:end], size, self.codec)
            start = end
        yield from kept

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self.kept, self.data, self.ends, self.sizes = [], bytearray(), array("q"), array("i")
