"""The per-PC values of a launch's instanced metrics, decoded from their protobuf bytes: the metric
elements of one launch in; out, each metric's (PCs, values) as numpy arrays.

An instanced metric stores, after its ``NameId`` and aggregate, one element per instruction:
``1a L 0a L1 28 <pc varint> 12 L2 28 <value varint>``. Every framing byte is below 0x80, so the
bytes split into varints at each byte below 0x80 and an element is ten of them. All the metrics of
a launch are decoded at once: their instance bytes joined, split at the varint ends, checked to
tile into elements exactly (framing bytes, lengths), and the PC and value varints decoded with a
few numpy passes. A metric in another encoding (a double value, extra fields) is decoded element by
element (:func:`slow_instances`).
"""

from __future__ import annotations

import struct

import numpy as np

from ncu_roof.read.native.wire import F64, list_items, skip_field, varint

_F32 = struct.Struct("<f")
_TOKENS = 10  # varints per element: 1a L 0a L1 28 pc 12 L2 28 value
_PAD = 0x220  # bytes past the data that a damaged element's sizes can point into
Pair = tuple[np.ndarray, np.ndarray]


def instance_bytes(elem: bytes, start: int) -> int:
    """Where an instanced metric's elements start: after its ``NameId`` (at ``start``) and aggregate."""
    if elem[start : start + 1] == b"\x12":
        n, pos = varint(elem, start + 1)
        return pos + n
    return start


def _value(buf: bytes, pos: int, end: int) -> tuple[int | None, float | None]:
    """A ``ProfileMetricValue`` as (integer, number): the integer where it holds one."""
    whole: int | None = None
    number: float | None = None
    while pos < end:
        key, pos = varint(buf, pos)
        if key in (0x28, 0x20):
            whole, pos = varint(buf, pos)
            number = float(whole)
        elif key == 0x19:
            number = F64.unpack_from(buf, pos)[0]
            pos += 8
        elif key == 0x15:
            number = _F32.unpack_from(buf, pos)[0]
            pos += 4
        else:
            pos = skip_field(buf, pos, key & 7)
    return whole, number


def slow_instances(elem: bytes, pos: int) -> Pair:
    """The instances of any encoding, element by element (from ``pos``, past the aggregate)."""
    pcs: list[int] = []
    values: list[float] = []
    for id_start, id_end, value_start, value_end in list_items(elem, pos):
        pc = _value(elem, id_start, id_end)[0] if id_start >= 0 else None
        value = _value(elem, value_start, value_end)[1] if value_start >= 0 else None
        if pc is not None:
            pcs.append(pc)
            values.append(np.nan if value is None else value)
    return np.array(pcs, dtype=np.uint64), np.array(values, dtype=np.float64)


def _varints(raw: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The varints of ``lengths`` bytes at ``starts`` of ``raw`` (padded with 8 bytes past its data):
    each read as a little-endian word of 8 bytes, its 7-bit groups packed together; a longer one
    one byte at a time."""
    if not len(starts):
        return np.zeros(0, dtype=np.uint64)
    words = np.lib.stride_tricks.sliding_window_view(raw, 8)[starts].view("<u8").ravel()
    short = np.minimum(lengths, 8).astype(np.uint64)
    words = words & np.where(short < 8, (np.uint64(1) << (np.uint64(8) * short)) - np.uint64(1), ~np.uint64(0))
    out = words & np.uint64(0x7F)
    for j in range(1, int(short.max())):
        out |= (words >> np.uint64(j)) & np.uint64(0x7F << (7 * j))
    for j in range(8, int(lengths.max())):  # the 9th and 10th bytes of a value above 2**56
        take = lengths > j
        byte = raw[np.where(take, starts + j, 0)].astype(np.uint64) & np.uint64(0x7F)
        out |= np.where(take, byte << np.uint64(7 * j), np.uint64(0))
    return out


def _tail_ok(tail: bytes) -> bool:
    """Whether the bytes after a metric's last element are fields other than instances."""
    pos = 0
    try:
        while pos < len(tail):
            key, pos = varint(tail, pos)
            if key >> 3 == 3 or key & 7 not in (0, 1, 2, 5):
                return False
            pos = skip_field(tail, pos, key & 7)
    except (IndexError, ValueError):
        return False
    return pos == len(tail)


def decode(parts: list[tuple[bytes, int]]) -> list[Pair]:
    """Each metric's (PCs, values) from its element and where its instances start.

    All the metrics at once: their instance bytes joined and split into varints; each metric's
    varints taken ten by ten from its start while they frame an element (the rest, if any, must be
    other fields); a metric whose elements do not all frame so is decoded element by element."""
    regions = [memoryview(e)[p:] for e, p in parts]
    n = len(regions)
    sizes = np.fromiter(map(len, regions), dtype=np.int64, count=n)
    stored = np.frombuffer(b"".join([*regions, bytes(_PAD)]), dtype=np.uint8)
    raw = stored[: len(stored) - _PAD]
    if not len(raw):
        return [(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64)) for _ in parts]
    stops = np.cumsum(sizes)
    begins = stops - sizes
    if (raw[stops[sizes > 0] - 1] >= 0x80).any():  # a region cut inside a varint
        return [decode([part])[0] for part in parts] if n > 1 else [slow_instances(bytes(parts[0][0]), parts[0][1])]
    ends = np.flatnonzero(raw < 0x80)
    first = np.searchsorted(ends, begins)
    groups = (np.searchsorted(ends, stops - 1, side="right") - first) // _TOKENS * (sizes > 0)
    before = np.cumsum(groups) - groups
    total = int(groups.sum())
    region = np.repeat(np.arange(n), groups)
    within = np.arange(total) - before[region]
    lead = first[region] + _TOKENS * within  # each element's first varint, if the metric tiles
    at = np.where(lead > 0, ends[np.maximum(lead - 1, 0)] + 1, 0)  # its first byte

    def byte(offset: np.ndarray | int) -> np.ndarray:  # within the padding: sizes are below 0x100
        return stored[at + offset]

    size, pc_size = byte(1).astype(np.int64), byte(3).astype(np.int64)
    value_size = byte(pc_size + 5).astype(np.int64)
    ok = (byte(0) == 0x1A) & (byte(2) == 0x0A) & (byte(4) == 0x28) & (byte(pc_size + 4) == 0x12)
    ok &= (byte(pc_size + 6) == 0x28) & (size < 0x80) & (pc_size > 1) & (pc_size < 0x80)
    ok &= (value_size > 1) & (value_size < 0x80)
    ok &= (size == pc_size + value_size + 4) & (byte(pc_size + 3) < 0x80) & (byte(size + 1) < 0x80)
    ok &= ends[lead + _TOKENS - 1] == at + size + 1  # ten varints: the PC's and the value's one each
    count = groups.copy()  # elements framed from each metric's start, until one is not
    np.minimum.at(count, region[~ok], within[~ok])
    keep = within < count[region]
    at, pc_size, value_size = at[keep], pc_size[keep], value_size[keep]
    pcs = _varints(stored, at + 5, pc_size - 1)
    values = _varints(stored, at + pc_size + 7, value_size - 1).astype(np.float64)
    after = first + _TOKENS * count  # the varint after each metric's last element
    tail_at = np.where(count > 0, ends[np.maximum(after - 1, 0)] + 1, begins)
    bounds = np.concatenate([[0], np.cumsum(count)])
    out: list[Pair] = []
    for i, (elem, pos) in enumerate(parts):
        if tail_at[i] < stops[i] and not _tail_ok(raw[tail_at[i] : stops[i]].tobytes()):
            out.append(slow_instances(bytes(elem), pos))
        else:
            out.append((pcs[bounds[i] : bounds[i + 1]], values[bounds[i] : bounds[i + 1]]))
    return out
