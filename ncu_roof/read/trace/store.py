"""Where the trace reader keeps what it has read until the frames are made, in little memory.

Enters: the values of events, one at a time (the careful path) or a batch's column at a time (numpy
arrays). Leaves: each column as one numpy array (:meth:`Columns.take`), in the order the values came;
the ends of ``ac2g`` flows as a dict (:meth:`FlowEnds.ids`).

A column is one numpy array grown by half as it fills (in place where the C library can: a big
one is remapped, not copied) and cut to its rows at the end: no array a batch to join, and no
holes between them left in the heap for the frames to grow around. A flow end is kept packed: a batch's ``pid``,
``tid``, ``ts`` and ``id`` each as an int64 array where all are ints, as one string where all are
strings (a million flow ends: not a million Python strings), as the list they came as otherwise;
unpacked into the same values (equal and of the same type) when the flows are matched.
"""

from __future__ import annotations

import ctypes
from array import array
from typing import Any

import numpy as np

_SEP = "\x00"  # between a batch's texts joined: no JSON text decodes to one unless written \u0000
_UNHASHABLE = frozenset({list, dict})  # what JSON decodes that cannot be part of a key


class Columns:
    """Typed columns (``array`` type codes: ``d`` float, ``i`` int32, ``b`` int8) of one kind of event.
    ``cols[key].append(v)`` adds one value (the careful path); :meth:`extend` a batch's arrays."""

    GROWTH = 1.5  # a full column's room grown by this factor, in place where the C library can

    def __init__(self, types: dict[str, str]) -> None:
        self.one: dict[str, array[Any]] = {k: array(t) for k, t in types.items()}
        self.data: dict[str, np.ndarray] = {k: np.empty(0, dtype=t) for k, t in types.items()}
        self.first = self.one[next(iter(types))]  # the column that counts the rows added one at a time
        self.rows = 0  # rows in ``data``

    def __getitem__(self, key: str) -> array[Any]:
        return self.one[key]

    def __len__(self) -> int:
        return self.rows + len(self.first)

    def _flush(self) -> None:
        """The values added one at a time, moved behind the batches before them."""
        if len(self.first):
            values = {k: np.frombuffer(v, dtype=v.typecode) for k, v in self.one.items()}
            self.one = {k: array(v.typecode) for k, v in self.one.items()}
            self.first = next(iter(self.one.values()))
            self.extend(values)

    def extend(self, values: dict[str, np.ndarray]) -> None:
        """One batch's values of every column (all of the same length), after the rows before them."""
        self._flush()
        start = self.rows
        self.rows += len(next(iter(values.values())))
        room = len(next(iter(self.data.values())))
        if self.rows > room:  # realloc: a big column grows where it lies (no copy, no hole left behind)
            room = max(self.rows, int(room * self.GROWTH), 1024)
            for column in self.data.values():
                column.resize(room, refcheck=False)
        for key, v in values.items():
            self.data[key][start : self.rows] = v

    def take(self, key: str) -> np.ndarray:
        """The whole column (its room beyond the rows given back); the collector's copy dropped."""
        self._flush()
        column = self.data.pop(key)
        column.resize(self.rows, refcheck=False)
        return column


def _pack(values: list[Any]) -> Any:
    """A batch's values of one field, packed where they are all ints or all strings."""
    kinds = set(map(type, values))
    if kinds == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return values
    if kinds == {str}:
        text = _SEP.join(values)
        if text.count(_SEP) == len(values) - 1:
            return text
    return values


def _unpack(packed: Any, n: int) -> list[Any]:
    if isinstance(packed, np.ndarray):
        return packed.tolist()  # type: ignore[no-any-return]
    if isinstance(packed, str):
        return packed.split(_SEP) if n else []
    return packed  # type: ignore[no-any-return]


class FlowEnds:
    """The ends of ``ac2g`` flows, in file order: their (pid, tid, ts) and id, packed ``PACK`` at a
    time. Matched to the GPU activities without a correlation once, at the end (:meth:`ids`), where
    there are any."""

    PACK = 1 << 16  # big packs: a few long-lived arrays, not thousands between the batches' garbage

    def __init__(self) -> None:
        self.packed: list[tuple[int, Any, Any, Any, Any]] = []
        self.fresh: tuple[list[Any], list[Any], list[Any], list[Any]] = ([], [], [], [])

    def extend(self, pid: list[Any], tid: list[Any], ts: list[Any], ids: list[Any]) -> int:
        """Flow ends remembered; those whose key is no key (a list or an object in it) are not: their count."""
        refused = 0
        if not _UNHASHABLE.isdisjoint(set(map(type, pid)) | set(map(type, tid)) | set(map(type, ts))):
            keep = [not _UNHASHABLE.intersection((type(a), type(b), type(c)))
                    for a, b, c in zip(pid, tid, ts, strict=True)]
            pid, tid, ts, ids = ([v for v, k in zip(values, keep, strict=True) if k] for values in (pid, tid, ts, ids))
            refused = keep.count(False)
        for column, values in zip(self.fresh, (pid, tid, ts, ids), strict=True):
            column += values
        if len(self.fresh[0]) >= self.PACK:
            self.pack()
        return refused

    def pack(self) -> None:
        """The ends not yet packed, packed (``packed`` then holds every end, in file order)."""
        if self.fresh[0]:
            self.packed.append((len(self.fresh[0]), *map(_pack, self.fresh)))
            self.fresh = ([], [], [], [])

    def join(self, packed: list[tuple[int, Any, Any, Any, Any]]) -> None:
        """Ends another reader packed (:meth:`pack`), after these."""
        self.pack()
        self.packed += packed

    def ids(self) -> dict[tuple[Any, Any, Any], Any]:
        """(pid, tid, ts) -> id, the last end of each key winning."""
        self.pack()
        out: dict[tuple[Any, Any, Any], Any] = {}
        for n, pid, tid, ts, ids in self.packed:
            keys = zip(_unpack(pid, n), _unpack(tid, n), _unpack(ts, n), strict=True)
            out.update(zip(keys, _unpack(ids, n), strict=True))
        return out


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def map_large_blocks(threshold: int = 256 << 10) -> None:
    """From here on, memory blocks of ``threshold`` bytes or more each get their own mapping, given back
    to the system when freed (glibc; elsewhere nothing). glibc raises its threshold to the largest
    block freed, so after reading, the frames' arrays and their temporaries (1.6 MB a column of 200,000
    rows) would be cut from the heap, whose holes it keeps when they are freed (about 20 MB at the
    peak of a million events). Set after reading: the batches' blocks, reused in the heap, cost no
    new pages."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask, or not glibc's
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(M_MMAP_THRESHOLD, threshold)
