"""The fields of a batch of events, a column at a time, whichever decoder made the batch.

Enters: a list of events, dicts (the standard library's decoder, :data:`DICTS`) or the structs of
:mod:`ncu_roof.read.trace.fast` (:data:`STRUCTS`). Leaves: each field as a list, or as a float
array for the numbers; both read a value as the collector's ``add`` reads it of a dict: a field
missing is None, a number NaN where it is missing or no number (``device`` and ``stream`` absent
mean the event's ``pid`` and ``tid``; ``correlation`` absent, the flow's id: :meth:`numbers`
says where each is absent), a grid or block a list of 1 to 3 numbers padded with 1. Only this
module knows which kind a batch is; ``as_dict`` gives an event to ``add`` where a batch holds an
odd one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from ncu_roof.read.trace import times
from ncu_roof.read.trace.fast import NUMBERS, TEXTS, TOP, is_struct_batch
from ncu_roof.read.trace.kineto import as_float

NAN = float("nan")
_NONE = type(None)
_STDLIB = json.JSONDecoder(parse_float=str)


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


def durations(durs: list[Any]) -> np.ndarray | None:
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
    return _seconds(out)


def _seconds(out: np.ndarray) -> np.ndarray | None:
    return out * 1e-6 if ((out >= 0) & (out < np.inf)).all() else None


def three_dims(d: Any) -> tuple[float, float, float, bool]:
    """A grid or block (a list of 1 to 3 numbers, padded with 1) as three floats, and whether it is
    unreadable (there, but no such list: NaN)."""
    three = (*d, 1, 1)[:3] if type(d) is list and 1 <= len(d) <= 3 else (NAN, NAN, NAN)
    x, y, z = (float(v) if type(v) is int else as_float(v) for v in three)
    return x, y, z, d is not None and three[0] is NAN


def _count_bad(col: Any, key: str, bad: int) -> None:
    if bad:
        col.bad_args[key] += bad


def shape_codes(col: Any, shape: Any, kinds: Any) -> tuple[int, int]:
    """The codes of an op's input shapes (their text without spaces) and input types (their JSON,
    where shapes were recorded and the types are a list); -1: none."""
    return (col.dims(str(shape).replace(" ", "")) if shape else -1,
            _type_code(col.types, kinds) if shape and type(kinds) is list else -1)


def _type_code(strings: Any, types: list[Any]) -> int:
    return int(strings(json.dumps(types)))


class _Dicts:
    """A batch of dicts."""

    @staticmethod
    def top(evs: list[Any], key: str) -> list[Any]:
        return [e.get(key) for e in evs]

    @staticmethod
    def pairs(evs: list[Any], a: str, b: str) -> list[tuple[Any, Any]]:
        return [(e.get(a), e.get(b)) for e in evs]

    keys = pairs  # the pairs as dict keys, once each

    @staticmethod
    def durations(evs: list[Any]) -> np.ndarray | None:
        return durations([e.get("dur") for e in evs])

    @staticmethod
    def starts(evs: list[Any], base: int | None) -> np.ndarray | None:
        return times.starts([e.get("ts") for e in evs], base)

    @staticmethod
    def args(evs: list[Any]) -> list[Any]:
        return [a if type(a := e.get("args")) is dict else {} for e in evs]

    @staticmethod
    def numbers(args: list[Any], key: str) -> tuple[np.ndarray, np.ndarray]:
        values = numbers([a.get(key) for a in args])
        return values, np.fromiter((key not in a for a in args), dtype=bool, count=len(args))

    @staticmethod
    def dims(col: Any, args: list[Any], key: str) -> np.ndarray:
        dims = [a.get(key) for a in args]
        if set(map(type, dims)) == {list} and set(map(len, dims)) == {3} and \
                {type(v) for d in dims for v in d} == {int}:
            try:
                return np.array(dims, dtype=np.float64).reshape(len(dims), 3)
            except OverflowError:
                pass
        found = np.array([three_dims(d) for d in dims], dtype=np.float64).reshape(len(dims), 4)
        _count_bad(col, key, int(np.count_nonzero(found[:, 3])))
        return found[:, :3]

    @staticmethod
    def shapes(col: Any, args: list[Any]) -> tuple[list[int], list[int]]:
        known: dict[tuple[Any, ...], int] = {}  # a trace repeats a few lists of input types: each dumped once
        dims, types = [], []
        for a in args:
            shape = a.get("Input Dims")
            kinds = a.get("Input type") if shape else None
            dims.append(col.dims(str(shape).replace(" ", "")) if shape else -1)
            if type(kinds) is list:
                key = tuple(kinds) if all(type(t) is str for t in kinds) else None  # [1] == [True]: not their JSON
                code = known.get(key) if key is not None else None
                if code is None:
                    code = _type_code(col.types, kinds)
                    if key is not None:
                        known[key] = code
                types.append(code)
            else:
                types.append(-1)
        return dims, types

    @staticmethod
    def as_dict(ev: Any) -> dict[str, Any]:
        return ev  # type: ignore[no-any-return]


_GET = {k: attrgetter(k) for k in (*TOP, "ts", "dur", "args")}
_ARG = {k: attrgetter(attr) for k, attr in {**NUMBERS, **TEXTS}.items()}
_FIRST, _SECOND = itemgetter(0), itemgetter(1)


def _texts(args: list[Any], key: str) -> list[bytes]:
    """Each argument's JSON text as bytes (b"" where absent): joined and split at a NUL, which no JSON
    text holds (a string's control characters are refused), in two calls, not one a text."""
    raws = list(map(_ARG[key], args))
    texts = b"\x00".join(raws).split(b"\x00") if raws else []
    return texts if len(texts) == len(raws) else list(map(bytes, raws))


def _decoded(text: bytes) -> Any:
    return _STDLIB.decode(text.decode()) if text else None


class _Structs:
    """A batch of :class:`~ncu_roof.read.trace.fast.Event`: its numbers are floats already (absent:
    NaN), its grids, blocks and shapes JSON text, each distinct one read once (``col.memo``)."""

    @staticmethod
    def top(evs: list[Any], key: str) -> list[Any]:
        if key == "ts":  # kept as its JSON text
            return times.raw_values(list(map(_GET["ts"], evs)))
        return list(map(_GET[key], evs))

    @staticmethod
    def pairs(evs: list[Any], a: str, b: str) -> list[tuple[Any, Any]]:
        return list(map(attrgetter(a, b), evs))

    @staticmethod
    def keys(evs: list[Any], a: str, b: str) -> Iterator[tuple[Any, Any]]:
        """The pairs as dict keys, once each: no list of them (``zip`` reuses a pair no lookup kept)."""
        return zip(map(_GET[a], evs), map(_GET[b], evs), strict=True)

    @staticmethod
    def durations(evs: list[Any]) -> np.ndarray | None:
        return _seconds(np.fromiter(map(_GET["dur"], evs), dtype=np.float64, count=len(evs)))

    @staticmethod
    def starts(evs: list[Any], base: int | None) -> np.ndarray | None:
        return times.raw_starts(list(map(_GET["ts"], evs)), base)

    @staticmethod
    def args(evs: list[Any]) -> list[Any]:
        return list(map(_GET["args"], evs))

    @staticmethod
    def numbers(args: list[Any], key: str) -> tuple[np.ndarray, np.ndarray]:
        values = np.fromiter(map(_ARG[key], args), dtype=np.float64, count=len(args))
        return values, np.isnan(values)

    @staticmethod
    def dims(col: Any, args: list[Any], key: str) -> np.ndarray:
        index, table = col.memo.setdefault(key, ({}, []))
        texts = _texts(args, key)
        rows = list(map(index.get, texts))
        if None in rows:
            for i, text in enumerate(texts):
                if rows[i] is None:
                    if text not in index:
                        index[text] = len(table)
                        table.append(three_dims(_decoded(text)))
                    rows[i] = index[text]
        found = np.array(table, dtype=np.float64).reshape(len(table), 4)[np.array(rows, dtype=np.int64)]
        _count_bad(col, key, int(np.count_nonzero(found[:, 3])))
        return found[:, :3]

    @staticmethod
    def shapes(col: Any, args: list[Any]) -> tuple[list[int], list[int]]:
        keys = list(zip(_texts(args, "Input Dims"), _texts(args, "Input type"), strict=True))
        seen = col.memo.setdefault("shapes", {})
        out = list(map(seen.get, keys))
        if None in out:
            for i, key in enumerate(keys):
                if out[i] is None:
                    got = seen.get(key)
                    if got is None:
                        shape = _decoded(key[0])
                        got = seen[key] = shape_codes(col, shape, _decoded(key[1]) if shape else None)
                    out[i] = got
        return list(map(_FIRST, out)), list(map(_SECOND, out))

    @staticmethod
    def as_dict(ev: Any) -> dict[str, Any]:
        """The event as the standard library decodes it, less the fields the reader never reads (a
        number of ``args`` made float: the reader reads an int and its float alike)."""
        out = {k: v for k in TOP if (v := getattr(ev, k)) is not None}
        if (ts := _decoded(bytes(ev.ts))) is not None:
            out["ts"] = ts
        if ev.dur == ev.dur:
            out["dur"] = ev.dur
        a = ev.args
        args = {k: v for k, attr in NUMBERS.items() if (v := getattr(a, attr)) == v}
        args.update({k: _decoded(bytes(raw)) for k, attr in TEXTS.items() if len(raw := getattr(a, attr))})
        out["args"] = args
        return out


DICTS, STRUCTS = _Dicts(), _Structs()


def fields_of(evs: list[Any]) -> Any:
    """The reader of this batch's fields."""
    return STRUCTS if is_struct_batch(evs) else DICTS


__all__ = ["DICTS", "STRUCTS", "fields_of", "numbers"]
