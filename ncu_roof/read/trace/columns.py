"""A batch of a trace's events into the reader's columns at once (the hot path of a big trace).

Enters: a list of decoded events, in file order, and the collector of :mod:`ncu_roof.read.trace`.
Leaves: the same columns, codes and counts the collector's ``add`` gives one event at a time, built
a field at a time by ``map`` and numpy (a million events: one pass each, not a million calls).
Each distinct (``ph``, ``cat``) is classified once (:class:`Kinds`). Where a batch holds a kept
event whose time is not a plain number (missing, negative, a list), every kept event of the batch
goes through ``add`` instead, so the rows keep their order; a field that is not of its usual type
is read value by value as ``add`` reads it. A batch is of dicts (the standard library's decoder)
or of msgspec structs (:mod:`ncu_roof.read.trace.fast`): its fields are read through
:data:`DICTS` or ``fast.STRUCTS``, the only code that knows which.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import numpy as np

from ncu_roof.read.trace.fields import fields_of, numbers

NAN = float("nan")
_NONE = type(None)
_UNHASHABLE = frozenset({list, dict})  # what JSON decodes that cannot be part of a key
OTHER, FLOW = -1, -2  # a pair's group when it is not kept: counted, or an ac2g flow's end


class FlowEnds:
    """The ends of ``ac2g`` flows, in file order: their (pid, tid, ts) and id. Matched to the GPU
    activities without a correlation once, at the end (:meth:`ids`), where there are any."""

    def __init__(self) -> None:
        self.pid: list[Any] = []
        self.tid: list[Any] = []
        self.ts: list[Any] = []
        self.id: list[Any] = []

    def extend(self, pid: list[Any], tid: list[Any], ts: list[Any], ids: list[Any]) -> int:
        """Flow ends remembered; those whose key is no key (a list or an object in it) are not: their count."""
        if _UNHASHABLE.isdisjoint(set(map(type, pid)) | set(map(type, tid)) | set(map(type, ts))):
            self.pid += pid
            self.tid += tid
            self.ts += ts
            self.id += ids
            return 0
        keep = [not _UNHASHABLE.intersection((type(a), type(b), type(c))) for a, b, c in zip(pid, tid, ts, strict=True)]
        for column, values in ((self.pid, pid), (self.tid, tid), (self.ts, ts), (self.id, ids)):
            column += [v for v, k in zip(values, keep, strict=True) if k]
        return keep.count(False)

    def ids(self) -> dict[tuple[Any, Any, Any], Any]:
        """(pid, tid, ts) -> id, the last end of each key winning."""
        return dict(zip(zip(self.pid, self.tid, self.ts, strict=True), self.id, strict=True))


class Collector(Protocol):
    """What of the reader's collector a batch fills (see ``ncu_roof.read.trace._Collector``)."""

    base: int | None
    g: dict[str, Any]
    c: dict[str, Any]
    p: dict[str, Any]
    g_kind: Any
    g_name: Any
    g_flow: dict[int, tuple[Any, Any, Any]]
    c_name: Any
    c_thread: Any
    p_kind: Any
    p_name: Any
    p_thread: Any
    p_dims: Any
    p_types: Any
    names: Any
    threads: Any
    dims: Any
    types: Any
    flows: FlowEnds
    kinds: Kinds
    other: Counter[str]
    bad_args: Counter[str]
    memo: dict[str, Any]

    def add(self, ev: dict[str, Any]) -> None: ...

    @staticmethod
    def classify(ph: Any, cat: Any) -> tuple[int, int] | None: ...

    def count_other(self, ph: Any, cat: Any, n: int) -> None: ...


class Kinds(dict):  # type: ignore[type-arg]
    """(ph, cat) -> a small id, given at first sight; ``group[id]`` and ``code[id]`` what an event of
    that pair is: a kept event's (group, code) as ``classify`` gives it, else OTHER or FLOW."""

    def __init__(self, classify: Any, flow_cats: frozenset[str]) -> None:
        super().__init__()
        self.classify, self.flow_cats = classify, flow_cats
        self.groups: list[int] = []
        self.codes: list[int] = []

    def __missing__(self, pair: tuple[Any, Any]) -> int:
        kind = self.classify(*pair)
        flow = kind is None and pair[0] == "f" and pair[1] in self.flow_cats
        self.groups.append(kind[0] if kind else FLOW if flow else OTHER)
        self.codes.append(kind[1] if kind else 0)
        self[pair] = len(self)
        return len(self) - 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array(self.groups, dtype=np.int8), np.array(self.codes, dtype=np.int8)


def _pick(evs: list[Any], rows: np.ndarray) -> list[Any]:
    return list(map(evs.__getitem__, rows.tolist()))


def add_batch(col: Collector, evs: list[Any]) -> None:
    """Every event of ``evs`` (dicts or structs, in file order) into ``col``, as ``col.add`` would put them."""
    f = fields_of(evs)
    kinds = col.kinds
    try:
        ids = np.fromiter(map(kinds.__getitem__, f.pairs(evs, "ph", "cat")), dtype=np.int64, count=len(evs))
    except TypeError:  # a list or an object as ph or cat
        for ev in evs:
            col.add(f.as_dict(ev))
        return
    groups, codes_of = kinds.arrays()
    group = groups[ids]
    other = ids[group == OTHER]
    if len(other):
        pairs = list(kinds)
        for i, n in enumerate(np.bincount(other).tolist()):
            if n:
                col.count_other(pairs[i][0], pairs[i][1], n)
    flows = np.flatnonzero(group == FLOW)
    if len(flows):
        ends = _pick(evs, flows)
        refused = col.flows.extend(*(f.top(ends, k) for k in ("pid", "tid", "ts", "id")))
        if refused:
            col.other["f events"] += refused
    kept = np.flatnonzero(group >= 0)
    if len(kept):
        _kept(col, f, _pick(evs, kept), group[kept], codes_of[ids[kept]])


def _kept(col: Collector, f: Any, evs: list[Any], group: np.ndarray, code: np.ndarray) -> None:
    """Complete events of a kept kind (``group``, ``code``: what ``classify`` gives each): their times
    first, then each group's fields."""
    ts = f.top(evs, "ts")
    if col.base is None:
        first = ts[0]
        if type(first) is int and first >= 0 or _plain_fraction(first):
            col.base = first if type(first) is int else int(float(str(first)))
    starts = _starts(ts, col.base)
    durs = f.durations(evs)
    if starts is None or durs is None:  # a time that add() drops or reads its own way
        for ev in evs:
            col.add(f.as_dict(ev))
        return
    names = np.array(codes(col.names, f.top(evs, "name")), dtype=np.int32)
    on_cpu = np.flatnonzero(group != 0)  # calls and CPU events: their threads, in file order
    threads = np.full(len(evs), -1, dtype=np.int32)
    if len(on_cpu):
        threads[on_cpu] = codes(col.threads, f.pairs(_pick(evs, on_cpu), "pid", "tid"))
    for g, fill in ((0, _gpu), (1, _calls), (2, _cpu)):
        rows = np.flatnonzero(group == g)
        if len(rows):
            fill(col, f, _pick(evs, rows), code[rows], starts[rows], durs[rows], names[rows], threads[rows])


def _plain_fraction(text: Any) -> bool:
    whole, dot, frac = text.partition(".") if type(text) is str else ("", "", "")
    return bool(dot) and whole.isascii() and whole.isdigit() and frac.isascii() and frac.isdigit() and len(whole) < 19


def _starts(ts: list[Any], base: int | None) -> np.ndarray | None:
    """Seconds since ``base`` of each time (microseconds: an int, or the text of a fraction), exactly
    as ``micros`` reads them; None when one is of another kind or out of range."""
    if base is None:
        return None
    kinds = set(map(type, ts))
    if kinds == {int}:
        try:
            whole = np.array(ts, dtype=np.int64)
        except OverflowError:
            return None
        if (whole < 0).any():
            return None
        return (whole - base).astype(np.float64) * 1e-6
    if kinds == {str}:
        parsed = _fractions(ts)
        if parsed is None:
            return None
        whole, frac = parsed
        return ((whole - base).astype(np.float64) + frac) * 1e-6
    return None


def _fractions(texts: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """Each text ``digits.digits`` as its whole part (int64) and its fraction (``float('0.' + f)``,
    exactly: an integer under 2**53 over a power of ten, both exact, is rounded once); None unless
    all are written alike (the same length, the point in the same place, digits only)."""
    arr = np.array(texts)
    width = arr.dtype.itemsize // 4
    point = texts[0].find(".")
    if width == 0 or point < 1 or width - point - 1 > 15 or point > 18 or width - point - 1 < 1:
        return None
    chars = arr.view(np.uint32).reshape(len(texts), width)
    digits = chars.astype(np.int64) - 48
    others = np.delete(digits, point, axis=1)
    if not ((chars[:, point] == 46).all() and ((others >= 0) & (others <= 9)).all()):
        return None  # a shorter text is padded with NUL, which is no digit
    whole = digits[:, :point] @ (10 ** np.arange(point - 1, -1, -1, dtype=np.int64))
    places = width - point - 1
    frac = (digits[:, point + 1:] @ (10 ** np.arange(places - 1, -1, -1, dtype=np.int64))) / float(10**places)
    return whole, frac


def codes(strings: Any, values: list[Any]) -> list[int]:
    """``strings(value)`` of each value (a ``_Strings``: codes in order of first appearance)."""
    try:
        out = list(map(strings.codes.get, values))
    except TypeError:  # a list or an object: its JSON text, one at a time
        return list(map(strings, values))
    if None in out:  # a value not seen before (or None itself): given its code in row order
        out = [c if c is not None else strings(v) for c, v in zip(out, values, strict=True)]
    return out


def _extend(arrays: dict[str, Any], values: dict[str, np.ndarray]) -> None:
    for key, v in values.items():
        arrays[key].frombytes(np.ascontiguousarray(v, dtype=np.float64).tobytes())


def _append(column: Any, values: np.ndarray) -> None:
    """``values`` onto an ``array`` column, converted to its type."""
    column.frombytes(np.ascontiguousarray(values, dtype=column.typecode).tobytes())


def _calls(col: Collector, f: Any, evs: list[Any], _: np.ndarray, start: np.ndarray, dur: np.ndarray,
           names: np.ndarray, threads: np.ndarray) -> None:
    args = f.args(evs)
    _extend(col.c, {"start": start, "dur": dur, "corr": f.numbers(args, "correlation")[0]})
    _append(col.c_name, names)
    _append(col.c_thread, threads)


def _cpu(col: Collector, f: Any, evs: list[Any], kinds: np.ndarray, start: np.ndarray, dur: np.ndarray,
         names: np.ndarray, threads: np.ndarray) -> None:
    _extend(col.p, {"start": start, "dur": dur})
    _append(col.p_kind, kinds)
    _append(col.p_name, names)
    _append(col.p_thread, threads)
    dims, types = f.shapes(col, f.args(evs))
    col.p_dims.extend(dims)
    col.p_types.extend(types)


def _gpu(col: Collector, f: Any, evs: list[Any], kinds: np.ndarray, start: np.ndarray, dur: np.ndarray,
         names: np.ndarray, _: np.ndarray) -> None:
    args = f.args(evs)
    pids, tids = f.top(evs, "pid"), f.top(evs, "tid")
    values = {"start": start, "dur": dur}
    for key, name, owner in (("device", "device", pids), ("stream", "stream", tids)):
        number, absent = f.numbers(args, name)  # absent: the event's pid or tid
        values[key] = np.where(absent, numbers(owner), number) if absent.any() else number
    values["corr"], lacking = f.numbers(args, "correlation")
    for keys, name in ((("gx", "gy", "gz"), "grid"), (("bx", "by", "bz"), "block")):
        values.update(zip(keys, f.dims(col, args, name).T, strict=True))
    for key, name in (("regs", "registers per thread"), ("smem", "shared memory"), ("bytes", "bytes")):
        values[key] = f.numbers(args, name)[0]
    first = len(col.g_kind)
    _extend(col.g, values)
    _append(col.g_kind, kinds)
    _append(col.g_name, names)
    rows = np.flatnonzero(lacking).tolist()
    for i, t in zip(rows, f.top([evs[i] for i in rows], "ts"), strict=True):
        flow = (pids[i], tids[i], t)
        if all(type(k) in (int, str) for k in flow):
            col.g_flow[first + i] = flow
