"""A batch of a trace's events into the reader's columns at once (the hot path of a big trace).

Enters: a list of decoded events, in file order, and the collector of :mod:`ncu_roof.read.trace`.
Leaves: the same columns, codes and counts the collector's ``add`` gives one event at a time, built
a field at a time by list comprehensions and numpy (a million events: one pass each, not a
million calls). Where a batch holds a kept event whose time is not a plain number (missing,
negative, a list), every kept event of the batch goes through ``add`` instead, so the rows keep
their order; a field that is not of its usual type is read value by value as ``add`` reads it.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import chain, compress
from typing import Any, Protocol

import numpy as np

from ncu_roof.read.trace.kineto import as_float

NAN = float("nan")
_NONE = type(None)


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
    flows: dict[tuple[Any, Any, Any], Any]
    other: Counter[str]
    bad_args: Counter[str]

    def add(self, ev: dict[str, Any]) -> None: ...

    def classify(self, ph: Any, cat: Any) -> tuple[int, int] | None: ...

    def count_other(self, ph: Any, cat: Any, n: int) -> None: ...


def add_batch(col: Collector, evs: list[dict[str, Any]], flow_cats: frozenset[str]) -> None:
    """Every event of ``evs`` (dicts, in file order) into ``col``, as ``col.add`` would put them."""
    pairs = [(e.get("ph"), e.get("cat")) for e in evs]
    try:
        counts = Counter(pairs)
    except TypeError:  # a list or an object as ph or cat
        for ev in evs:
            col.add(ev)
        return
    kinds = {pair: col.classify(*pair) for pair in counts}
    flows = {pair for pair in counts if kinds[pair] is None and pair[0] == "f" and pair[1] in flow_cats}
    for pair, n in counts.items():
        if kinds[pair] is None and pair not in flows:
            col.count_other(*pair, n)
    if flows:
        _flows(col, [e for e, pair in zip(evs, pairs, strict=True) if pair in flows])
    which = list(map(kinds.__getitem__, pairs))  # kept: a (group, code) pair, which is true; else None
    if any(which):
        _kept(col, list(compress(evs, which)), list(filter(None, which)))  # type: ignore[arg-type]


def _flows(col: Collector, evs: list[dict[str, Any]]) -> None:
    """The ends of ``ac2g`` flows, remembered by (pid, tid, ts); one whose key is no key, counted."""
    keys = zip([e.get("pid") for e in evs], [e.get("tid") for e in evs], [e.get("ts") for e in evs], strict=True)
    try:
        col.flows.update(zip(keys, [e.get("id") for e in evs], strict=True))
    except TypeError:  # a key that is a list or an object: one at a time, as add() does
        for e in evs:
            key = (e.get("pid"), e.get("tid"), e.get("ts"))
            try:
                col.flows[key] = e.get("id")
            except TypeError:
                col.other["f events"] += 1


def _kept(col: Collector, evs: list[dict[str, Any]], kinds: list[tuple[int, int]]) -> None:
    """Complete events of a kept kind: their times first, then each group's fields."""
    if col.base is None:
        first = evs[0].get("ts")
        if type(first) is int and first >= 0 or _plain_fraction(first):
            col.base = first if type(first) is int else int(float(str(first)))
    starts = _starts([e.get("ts") for e in evs], col.base)
    durs = _durations([e.get("dur") for e in evs])
    if starts is None or durs is None:  # a time that add() drops or reads its own way
        for ev in evs:
            col.add(ev)
        return
    names = codes(col.names, [e.get("name") for e in evs])
    group = np.array([k[0] for k in kinds], dtype=np.int8)
    on_cpu = np.flatnonzero(group != 0).tolist()  # calls and CPU events: their threads, in file order
    threads = np.full(len(evs), -1, dtype=np.int64)
    threads[on_cpu] = codes(col.threads, [(evs[i].get("pid"), evs[i].get("tid")) for i in on_cpu])
    for g, fill in ((0, _gpu), (1, _calls), (2, _cpu)):
        rows = np.flatnonzero(group == g)
        if len(rows):
            pick = rows.tolist()
            fill(col, [evs[i] for i in pick], [kinds[i][1] for i in pick], starts[rows], durs[rows],
                 [names[i] for i in pick], threads[rows].tolist())


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


def _durations(durs: list[Any]) -> np.ndarray | None:
    """Each duration in seconds (an int, or the text of a number, of microseconds); None when one
    is of another kind, negative, infinite or not a number."""
    kinds = set(map(type, durs))
    if kinds == {int}:
        try:
            out = np.array(durs, dtype=np.float64)
        except OverflowError:
            return None
    elif kinds <= {int, str}:
        try:
            out = np.array([d if type(d) is int else float(d) for d in durs], dtype=np.float64)
        except (ValueError, OverflowError):
            return None
    else:
        return None
    if not ((out >= 0) & (out < np.inf)).all():
        return None
    return out * 1e-6


def codes(strings: Any, values: list[Any]) -> list[int]:
    """``strings(value)`` of each value (a ``_Strings``: codes in order of first appearance)."""
    get = strings.codes.get
    try:
        return [c if (c := get(v)) is not None else strings(v) for v in values]
    except TypeError:  # a list or an object: its JSON text, one at a time
        return list(map(strings, values))


def numbers(values: list[Any]) -> np.ndarray:
    """Each value as float, as the reader's ``_num`` reads one (NaN for None, text that is no
    number, booleans, lists)."""
    kinds = set(map(type, values))
    if kinds <= {int, _NONE}:
        try:
            return np.array(values, dtype=np.float64)
        except OverflowError:
            pass
    return np.array([float(v) if type(v) is int else as_float(v) for v in values], dtype=np.float64)


def _args(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [a if type(a := e.get("args")) is dict else {} for e in evs]


def _extend(arrays: dict[str, Any], values: dict[str, np.ndarray]) -> None:
    for key, v in values.items():
        arrays[key].frombytes(np.ascontiguousarray(v, dtype=np.float64).tobytes())


def _calls(col: Collector, evs: list[dict[str, Any]], _: list[int], start: np.ndarray, dur: np.ndarray,
           names: list[int], threads: list[int]) -> None:
    args = _args(evs)
    _extend(col.c, {"start": start, "dur": dur, "corr": numbers([a.get("correlation") for a in args])})
    col.c_name.extend(names)
    col.c_thread.extend(threads)


def _cpu(col: Collector, evs: list[dict[str, Any]], kinds: list[int], start: np.ndarray, dur: np.ndarray,
         names: list[int], threads: list[int]) -> None:
    args = _args(evs)
    _extend(col.p, {"start": start, "dur": dur})
    col.p_kind.extend(kinds)
    col.p_name.extend(names)
    col.p_thread.extend(threads)
    shapes = [a.get("Input Dims") for a in args]
    dims = col.dims
    col.p_dims.extend([dims(str(s).replace(" ", "")) if s else -1 for s in shapes])
    types = [a.get("Input type") if s else None for a, s in zip(args, shapes, strict=True)]
    seen: dict[tuple[str, ...], int] = {}  # a trace repeats a few lists of input types
    col.p_types.extend([_type_code(col.types, t, seen) if type(t) is list else -1 for t in types])


def _type_code(strings: Any, types: list[Any], seen: dict[tuple[str, ...], int]) -> int:
    """``strings(json.dumps(types))``, remembered in ``seen`` for a list of strings only (a tuple of
    str is equal only to the same strings: ``[1]`` and ``[True]`` are equal, their JSON is not)."""
    key = tuple(types)
    try:
        code = seen.get(key)
    except TypeError:  # a list inside
        return int(strings(json.dumps(types)))
    if code is None:
        code = int(strings(json.dumps(types)))
        if all(type(t) is str for t in types):
            seen[key] = code
    return code


def _gpu(col: Collector, evs: list[dict[str, Any]], kinds: list[int], start: np.ndarray, dur: np.ndarray,
         names: list[int], _: list[int]) -> None:
    args = _args(evs)
    pids, tids = [e.get("pid") for e in evs], [e.get("tid") for e in evs]
    corr = [a.get("correlation") for a in args]
    values = {"start": start, "dur": dur,
              "device": numbers([a.get("device", p) for a, p in zip(args, pids, strict=True)]),
              "stream": numbers([a.get("stream", t) for a, t in zip(args, tids, strict=True)]),
              "corr": numbers(corr)}
    for keys, name in ((("gx", "gy", "gz"), "grid"), (("bx", "by", "bz"), "block")):
        three = _dims(col, [a.get(name) for a in args], name)
        values.update(zip(keys, three.T, strict=True))
    for key, name in (("regs", "registers per thread"), ("smem", "shared memory"), ("bytes", "bytes")):
        values[key] = numbers([a.get(name) for a in args])
    first = len(col.g_kind)
    _extend(col.g, values)
    col.g_kind.extend(kinds)
    col.g_name.extend(names)
    for i in [i for i, a in enumerate(args) if "correlation" not in a]:
        flow = (pids[i], tids[i], evs[i].get("ts"))
        if all(type(k) in (int, str) for k in flow):
            col.g_flow[first + i] = flow


def _dims(col: Collector, dims: list[Any], name: str) -> np.ndarray:
    """A grid or block per row as three numbers (a list of 1 to 3, padded with 1); NaN, counted in
    ``bad_args``, for one that is no such list."""
    if set(map(type, dims)) == {list} and set(map(len, dims)) == {3} and \
            set(map(type, chain.from_iterable(dims))) == {int}:
        try:
            return np.array(dims, dtype=np.float64).reshape(len(dims), 3)
        except OverflowError:
            pass
    out = np.empty((len(dims), 3))
    for i, d in enumerate(dims):
        three = (*d, 1, 1)[:3] if type(d) is list and 1 <= len(d) <= 3 else (NAN, NAN, NAN)
        if d is not None and three[0] is NAN:
            col.bad_args[name] += 1
        out[i] = [float(v) if type(v) is int else as_float(v) for v in three]
    return out
