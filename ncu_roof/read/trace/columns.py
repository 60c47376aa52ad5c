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
from operator import itemgetter
from typing import Any, Protocol

import numpy as np

from ncu_roof.read.trace.fields import fields_of, numbers
from ncu_roof.read.trace.store import Columns, FlowEnds
from ncu_roof.read.trace.times import base_of

NAN = float("nan")
_NONE = type(None)
OTHER, FLOW = -1, -2  # a pair's group when it is not kept: counted, or an ac2g flow's end


class Collector(Protocol):
    """What of the reader's collector a batch fills (see ``ncu_roof.read.trace._Collector``)."""

    base: int | None
    g: Columns
    c: Columns
    p: Columns
    g_flow: dict[int, tuple[Any, Any, Any]]
    names: Any
    threads: Any
    dims: Any
    types: Any
    flows: FlowEnds
    kinds: Kinds
    other: Counter[str]
    dropped: Counter[tuple[str, str, str]]
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
    """The events at ``rows`` (ascending): one ``itemgetter`` call, not one call a row."""
    if len(rows) == len(evs):
        return evs
    if len(rows) < 2:
        return [evs[i] for i in rows.tolist()]
    return list(itemgetter(*rows.tolist())(evs))


def add_batch(col: Collector, evs: list[Any]) -> None:
    """Every event of ``evs`` (dicts or structs, in file order) into ``col``, as ``col.add`` would put them."""
    f = fields_of(evs)
    kinds = col.kinds
    try:
        ids = np.fromiter(map(kinds.__getitem__, f.keys(evs, "ph", "cat")), dtype=np.int64, count=len(evs))
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
    if col.base is None:
        col.base = base_of(f.top(evs[:1], "ts")[0])
    starts = f.starts(evs, col.base)
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


def codes(strings: Any, values: list[Any]) -> list[int]:
    """``strings(value)`` of each value (a ``_Strings``: codes in order of first appearance)."""
    try:
        out = list(map(strings.codes.get, values))
    except TypeError:  # a list or an object: its JSON text, one at a time
        return list(map(strings, values))
    if None in out:  # a value not seen before (or None itself): given its code in row order, found by
        at = out.index(None)  # list.index (a C scan), not a Python loop over the batch
        while True:
            out[at] = strings(values[at])
            try:
                at = out.index(None, at + 1)
            except ValueError:
                return out
    return out


def _calls(col: Collector, f: Any, evs: list[Any], _: np.ndarray, start: np.ndarray, dur: np.ndarray,
           names: np.ndarray, threads: np.ndarray) -> None:
    corr = f.numbers(f.args(evs), "correlation")[0]
    col.c.extend({"start": start, "dur": dur, "corr": corr, "name": names, "thread": threads})


def _cpu(col: Collector, f: Any, evs: list[Any], kinds: np.ndarray, start: np.ndarray, dur: np.ndarray,
         names: np.ndarray, threads: np.ndarray) -> None:
    dims, types = f.shapes(col, f.args(evs))
    col.p.extend({"start": start, "dur": dur, "kind": kinds, "name": names, "thread": threads,
                  "dims": np.array(dims, dtype=np.int32), "types": np.array(types, dtype=np.int32)})


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
    first = len(col.g)
    col.g.extend({**values, "kind": kinds, "name": names})
    rows = np.flatnonzero(lacking).tolist()
    for i, t in zip(rows, f.top([evs[i] for i in rows], "ts"), strict=True):
        flow = (pids[i], tids[i], t)
        if all(type(k) in (int, str) for k in flow):
            col.g_flow[first + i] = flow
