"""The launches of the JSON contract (its ``kernels`` list), built from whole columns of the placed
table: each column's distinct values found at once (``pd.factorize``, or a dict of a text column's
cells), each cleaned and turned into text once (:func:`ncu_roof.jsonable.json_num_texts`), and the
launches' texts made by indexing those texts with each launch's code and joined all at once; no dict
per launch is made for the JSON, and :func:`kernel_records` (the dicts of
:func:`ncu_roof.diagnosis.to_dict`) zips them from the same columns.

:func:`kernels_json` writes what ``json.dumps(kernel_records(placed), indent=2)`` writes at that
depth, byte for byte (a test holds both, and the record of each launch, to the former launch-by-launch
code on real and synthetic inputs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import repeat
from json.encoder import encode_basestring_ascii
from typing import Any, Union, cast

import numpy as np
import pandas as pd

from ncu_roof.jsonable import json_num, json_num_texts, json_nums, json_text
from ncu_roof.model.units import UNITS, unit_column

Column = tuple[list[str], np.ndarray]  # distinct texts, and each launch's code (index) into them


class Leaf:
    """One key's values over the launches: ``values[codes[i]]`` for launch ``i`` (``mutable``: lists
    or dicts, each launch gets its own copy)."""

    def __init__(self, values: list[Any], codes: np.ndarray, mutable: bool = False) -> None:
        self._values = values
        self.codes = codes
        self.mutable = mutable

    @property
    def values(self) -> list[Any]:
        return self._values

    def cells(self) -> list[Any]:
        cells = list(map(self.values.__getitem__, self.codes.tolist()))
        return [v.copy() if v is not None else None for v in cells] if self.mutable else cells

    def texts(self, level: int) -> list[str]:
        """Each value's text ``level`` deep."""
        return [json_text(v, level) for v in self.values]

    def columns(self, before: str, level: int) -> list[Column]:
        """The texts of this key in each launch, ``before`` first, as columns of pieces to join."""
        return [([before + t for t in self.texts(level)], self.codes)]


class _Numbers(Leaf):
    """:func:`json_num` of each launch's value, from the distinct values of a NumPy number column
    (``uniques``; a NaN's code is one past them, for None)."""

    def __init__(self, uniques: np.ndarray, codes: np.ndarray) -> None:
        super().__init__([], codes)
        self.uniques = uniques
        self._cleaned: list[Any] | None = None

    @property
    def values(self) -> list[Any]:
        if self._cleaned is None:
            self._cleaned = [*json_nums(self.uniques), None]
        return self._cleaned

    def texts(self, level: int) -> list[str]:
        return [*json_num_texts(self.uniques), "null"]


Shape = list[tuple[str, Union[Leaf, "Shape"]]]


def _str(value: Any) -> str | None:
    return None if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else str(value)


def _zeros(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.intp)


def _constant(value: Any, n: int) -> Leaf:
    return Leaf([value], _zeros(n))



def _distinct(column: pd.Series, func: Callable[[Any], Any]) -> Leaf:
    """``func`` of each cell of ``column`` (as ``to_dict("records")`` gives it), once per distinct
    value: told apart by type and value (``1``, ``1.0`` and ``True`` are three; in an object
    column, pandas' NA is None)."""
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "biu":  # one type, equal when the same
        codes, numbers = pd.factorize(column.to_numpy())
        return Leaf(list(map(func, numbers.tolist())), codes)
    boxed = column.dtype == object
    if not boxed and not isinstance(column.dtype, pd.StringDtype):
        return _distinct_cells(column, func)
    cells = column.to_numpy(dtype=object)
    kinds = set(map(type, cells))
    na_value = None if boxed else cast("pd.StringDtype", column.dtype).na_value
    if kinds <= _TEXT_KINDS - {float}:  # str, None and NA
        leaf = _few_texts(cells, func, boxed)
        if leaf is not None:
            if not boxed:
                func(na_value)  # as below, where no cell is missing too: the value of a missing cell may fail
            return leaf
    if not boxed:  # str, or the dtype's missing value
        codes, uniques = pd.factorize(column)
        return Leaf([*map(func, uniques.tolist()), func(na_value)], np.where(codes < 0, len(uniques), codes))
    leaf = _factorized_texts(cells, func, kinds) if kinds <= _TEXT_KINDS else None
    return leaf if leaf is not None else _distinct_cells(column, func)


_TEXT_KINDS = frozenset({str, float, type(None), type(pd.NA)})  # a column of text and unknowns
_FEW = 64  # distinct cells a dict tells apart, before pd.factorize does
_LONG = 32  # a text this long is hashed faster by Python, once per str, than by pd.factorize, once per cell


def _few_texts(cells: np.ndarray, func: Callable[[Any], Any], boxed: bool) -> Leaf | None:
    """:func:`_distinct` of a column of str, None and NA (None where ``boxed``) by a dict of its
    cells, where all launches share one or a few long texts (a str keeps its hash); None otherwise."""
    def few_and_long(distinct: list[Any]) -> bool:
        return len(distinct) == 1 or (len(distinct) <= _FEW and _longest(distinct) >= _LONG)

    if not few_and_long(list(dict.fromkeys(cells[:_FEW]))):  # the first launches' texts tell most often
        return None
    distinct = list(dict.fromkeys(cells))
    if not few_and_long(distinct):
        return None
    values = [func(None if boxed and cell is pd.NA else cell) for cell in distinct]
    if len(distinct) == 1:
        return Leaf(values, _zeros(len(cells)))
    index = {cell: code for code, cell in enumerate(distinct)}
    return Leaf(values, np.fromiter(map(index.__getitem__, cells), dtype=np.intp, count=len(cells)))


def _longest(cells: list[Any]) -> int:
    return max(len(cell) if type(cell) is str else 0 for cell in cells)


def _factorized_texts(cells: np.ndarray, func: Callable[[Any], Any], kinds: set[type]) -> Leaf | None:
    """:func:`_distinct` of an object column of str and unknowns (None, NA, NaN: ``kinds``, the
    types of its cells) from ``pd.factorize``: str equal only to str, NaNs to each other (told apart
    from None and NA); None where a float is not NaN."""
    codes, uniques = pd.factorize(cells)  # None, NA and NaN: -1
    texts = uniques.tolist()
    if not all(type(text) is str for text in texts):  # a float not NaN
        return None
    values = list(map(func, texts))
    unknown = codes < 0
    if not unknown.any():
        return Leaf(values, codes)
    nan_kind = float in kinds
    none_kind = type(None) in kinds or type(pd.NA) in kinds
    if nan_kind and none_kind:
        nan = np.fromiter(map(isinstance, cells, repeat(float)), dtype=bool, count=len(cells))
        nan_code = len(values)
        values += [func(math.nan), func(None)]
        return Leaf(values, np.where(unknown, np.where(nan, nan_code, nan_code + 1), codes))
    values.append(func(math.nan) if nan_kind else func(None))
    return Leaf(values, np.where(unknown, len(values) - 1, codes))


def _distinct_cells(column: pd.Series, func: Callable[[Any], Any]) -> Leaf:
    """:func:`_distinct`, cell by cell."""
    index: dict[Any, int] = {}
    values: list[Any] = []
    codes_list = []
    boxed = column.dtype == object  # to_dict("records") gives pandas' NA in an object column as None
    for value in column.tolist():
        if boxed and value is pd.NA:
            value = None
        try:
            key = (value.__class__, value)
            code = index[key]
        except KeyError:
            code = index[key] = len(values)
            values.append(func(value))
        except TypeError:  # unhashable
            code = len(values)
            values.append(func(value))
        codes_list.append(code)
    return Leaf(values, np.array(codes_list, dtype=np.intp))


def _numbers(column: pd.Series) -> Leaf:
    """:func:`json_num` of each cell, from the whole column where it is a NumPy number column."""
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "biuf":
        return _number_array(column.to_numpy())
    return _distinct(column, json_num)


def _number_array(values: np.ndarray) -> _Numbers:
    """:func:`json_num` of each value of a NumPy number array."""
    if len(values) and (values == values[0]).all():  # one value (not NaN) in all launches, often
        return _Numbers(values[:1], _zeros(len(values)))
    codes, uniques = pd.factorize(values)  # NaN: -1, the last value
    return _Numbers(uniques, np.where(codes < 0, len(uniques), codes))


class _Columns:
    """The placed table's columns as leaves: ``num("x")`` is ``json_num(row["x"])`` of each launch,
    ``num("x", get=True)`` ``json_num(row.get("x"))`` (and likewise ``text`` for ``_str``)."""

    def __init__(self, placed: pd.DataFrame) -> None:
        self.placed = placed
        self.n = len(placed)

    def column(self, name: str, get: bool = True) -> pd.Series | None:
        return self.placed[name] if not get or name in self.placed else None

    def num(self, name: str, get: bool = False) -> Leaf:
        column = self.column(name, get)
        return _constant(None, self.n) if column is None else _numbers(column)

    def text(self, name: str, get: bool = False) -> Leaf:
        return self.apply(name, _str, get)

    def apply(self, name: str, func: Callable[[Any], Any], get: bool = True, default: Any = None) -> Leaf:
        column = self.column(name, get)
        return _constant(func(default), self.n) if column is None else _distinct(column, func)


def _floats(leaf: Leaf) -> np.ndarray:
    """Each launch's (clean) value of a number leaf as a float, None as NaN."""
    return np.array([math.nan if v is None else v for v in leaf.values], dtype=np.float64)[leaf.codes]


def _column_floats(column: pd.Series) -> np.ndarray:
    """:func:`_floats` of the column's number leaf: of a NumPy number column, its values as floats,
    the infinities NaN (``json_num`` keeps a finite float's value, and an int's float)."""
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "biuf":
        floats = column.to_numpy().astype(np.float64)
        return np.where(np.isfinite(floats), floats, np.nan)
    return _floats(_numbers(column))


def _key(name: str, level: int) -> str:
    """A key of an object ``level`` deep, on its own line."""
    return "\n" + "  " * (level + 1) + encode_basestring_ascii(name) + ": "


class _Units(Leaf):
    """``units``: each unit whose lower bound is known, its share of the launch's time."""

    def __init__(self, c: _Columns, time_s: Leaf) -> None:
        super().__init__([], np.arange(c.n, dtype=np.intp), mutable=True)
        self.n = c.n
        t = _floats(time_s)
        self.names: list[str] = []
        self.shares: list[Leaf] = []
        self.known: list[np.ndarray] = []
        for unit in UNITS:
            column = c.column(unit_column(unit.name))
            if column is None:
                continue
            bound = _column_floats(column)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                share = np.where((t != 0) & ~np.isnan(t) & ~np.isnan(bound), bound / t, np.nan)
            self.names.append(unit.name)
            self.shares.append(_number_array(share))
            self.known.append(~np.isnan(bound))
        self._records: list[Any] | None = None

    @property
    def values(self) -> list[Any]:
        if self._records is None:
            absent = object()
            cells = [leaf.cells() for leaf in self.shares]
            rows = [[v if k else absent for v, k in zip(col, has, strict=True)]
                    for col, has in zip(cells, self.known, strict=True)]
            self._records = [{n: v for n, v in zip(self.names, row, strict=True) if v is not absent}
                             for row in zip(*rows, strict=True)] if self.names else [{} for _ in range(self.n)]
        return self._records

    def columns(self, before: str, level: int) -> list[Column]:
        """``{`` before the first known unit, ``,`` before the others, ``{}`` where none is known."""
        if not self.names:
            return [([before + "{}"], _zeros(self.n))]
        known = np.array(self.known)
        first = known.argmax(axis=0)
        out: list[Column] = [([before], _zeros(self.n))]
        for j, (name, leaf, has) in enumerate(zip(self.names, self.shares, known, strict=True)):
            key = _key(name, level)
            texts = leaf.texts(level + 1)
            pieces = [*("," + key + t for t in texts), *("{" + key + t for t in texts), ""]
            out.append((pieces, np.where(has, np.where(first == j, len(texts) + leaf.codes, leaf.codes),
                                         2 * len(texts))))
        out.append((["\n" + "  " * level + "}", "{}"], np.where(known.any(axis=0), 0, 1)))
        return out


class _Algorithmic(Leaf):
    """``algorithmic``: the counts of an algorithmic region, or None where neither is known."""

    KEYS = ("flops", "bytes", "intensity")

    def __init__(self, c: _Columns) -> None:
        super().__init__([], np.arange(c.n, dtype=np.intp), mutable=True)
        self.leaves = [c.num(f"alg_{key}", get=True) for key in self.KEYS]
        self.has = ~(np.isnan(_floats(self.leaves[0])) & np.isnan(_floats(self.leaves[1])))
        self._records: list[Any] | None = None

    @property
    def values(self) -> list[Any]:
        if self._records is None:
            cells = [leaf.cells() for leaf in self.leaves]
            self._records = [dict(zip(self.KEYS, row, strict=True)) if known else None
                             for known, row in zip(self.has.tolist(), zip(*cells, strict=True), strict=True)]
        return self._records

    def columns(self, before: str, level: int) -> list[Column]:
        out: list[Column] = [([before], _zeros(len(self.has)))]
        for i, (key, leaf) in enumerate(zip(self.KEYS, self.leaves, strict=True)):
            head = ("{" if i == 0 else ",") + _key(key, level)
            texts = leaf.texts(level + 1)
            out.append(([*(head + t for t in texts), "null" if i == 0 else ""],
                        np.where(self.has, leaf.codes, len(texts))))
        out.append((["\n" + "  " * level + "}", ""], np.where(self.has, 0, 1)))
        return out


def _first_known(a: Leaf, b: Leaf) -> Leaf:
    """``a or b`` of each launch."""
    if len(a.values) * len(b.values) <= len(a.codes):  # each pair of values once
        return Leaf([x or y for x in a.values for y in b.values], a.codes * len(b.values) + b.codes)
    return Leaf([x or y for x, y in zip(a.cells(), b.cells(), strict=True)], np.arange(len(a.codes), dtype=np.intp))


def kernel_shape(placed: pd.DataFrame) -> Shape:
    """The keys of each launch's record, in order, with their values as leaves."""
    c = _Columns(placed)
    time_s = c.num("time_s")
    bound_share = c.num("binding_unit_share", get=True)
    return [
        ("id", c.num("id")), ("report", c.text("report")), ("kernel", c.text("kernel")),
        ("kernel_demangled", c.text("kernel_demangled", get=True)), ("device", c.text("device", get=True)),
        ("nvtx", c.text("nvtx", get=True)), ("time_s", time_s),
        ("flops", [("fp64", c.num("flops_fp64")), ("fp32", c.num("flops_fp32")), ("fp16", c.num("flops_fp16")),
                   ("tensor", c.num("flops_tensor")), ("total", c.num("flops"))]),
        ("bytes", [(k, c.num(f"{k}_bytes")) for k in ("dram", "l2", "l1", "shared")]),
        ("bytes_source", [(k, c.text(f"{k}_bytes_src", get=True)) for k in ("dram", "l2", "l1", "shared")]),
        ("intensity", [(k, c.num(f"intensity_{k}")) for k in ("dram", "l2", "l1")]),
        ("roof", [
            ("compute", c.text("compute_roof", get=True)), ("peak_flops_per_s", c.num("peak_flops_per_s")),
            ("peak_flops_source", c.text("peak_flops_src", get=True)),
            ("dram_bytes_per_s", c.num("dram_roof_bytes_per_s")), ("dram_source", c.text("dram_roof_src", get=True)),
            ("l2_bytes_per_s", c.num("l2_roof_bytes_per_s")), ("l1_bytes_per_s", c.num("l1_roof_bytes_per_s")),
            ("attainable_flops_per_s", c.num("attainable_flops_per_s")),
            ("achieved_flops_per_s", c.num("achieved_flops_per_s")),
            ("achieved_dram_bytes_per_s", c.num("achieved_dram_bytes_per_s")),
            ("pct_of_roof", c.num("pct_of_roof")), ("pct_basis", c.text("pct_basis", get=True)),
            ("above_practical_roof", c.apply("above_practical_roof", bool, default=False)),
            ("binding", c.text("binding", get=True)),
            ("source", _first_known(c.text("peak_flops_src", get=True), c.text("dram_roof_src", get=True))),
        ]),
        ("time_lower_bound_s", c.num("time_lower_bound_s")), ("headroom_s", c.num("headroom_s")),
        ("bound", c.text("bound")), ("binding_unit", c.text("binding_unit", get=True)),
        ("binding_unit_share", bound_share), ("units", _Units(c, time_s)), ("algorithmic", _Algorithmic(c)),
        ("missing", _mutable(c, "missing", lambda v: [m for m in str(v or "").split(",") if m])),
        ("notes", _mutable(c, "notes", lambda v: v.split("; ") if isinstance(v, str) and v else [])),
    ]


def _mutable(c: _Columns, name: str, func: Callable[[Any], list[str]]) -> Leaf:
    leaf = c.apply(name, func)
    leaf.mutable = True
    return leaf


def _records(shape: Shape) -> list[dict[str, Any]]:
    keys = [key for key, _ in shape]
    columns = [_records(value) if isinstance(value, list) else value.cells() for _, value in shape]
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]


def kernel_records(placed: pd.DataFrame) -> list[dict[str, Any]]:
    """Each launch's record of the JSON contract (``kernels``)."""
    return _records(kernel_shape(placed)) if len(placed) else []


def _layout(shape: Shape, level: int) -> tuple[list[tuple[str, Leaf, int]], str]:
    """An object's text ``level`` deep as (text before, leaf, the leaf's depth) parts and a last text."""
    parts: list[tuple[str, Leaf, int]] = []
    before = "{"
    for i, (key, value) in enumerate(shape):
        before += ("," if i else "") + _key(key, level)
        if isinstance(value, list):
            inner, after = _layout(value, level + 1)
            parts.append((before + inner[0][0], *inner[0][1:]))
            parts.extend(inner[1:])
            before = after
        else:
            parts.append((before, value, level + 1))
            before = ""
    return parts, before + "\n" + "  " * level + "}"


def kernels_json(placed: pd.DataFrame, level: int) -> str:
    """``json.dumps(kernel_records(placed), indent=2)`` as written ``level`` deep in a document."""
    return "".join(kernels_json_pieces(placed, level))


def kernels_json_pieces(placed: pd.DataFrame, level: int) -> list[str]:
    """:func:`kernels_json` in pieces, for a document to join once: the launches' pieces laid out a
    launch a row, each column the texts of a key's distinct values indexed by the launches' codes
    (a key of one text in all launches joined to the next key's)."""
    n = len(placed)
    if not n:
        return ["[]"]
    parts, last = _layout(kernel_shape(placed), level + 1)
    varying: list[np.ndarray] = []
    same = ""  # the text all launches share since the last varying column
    for before, leaf, depth in parts:
        for texts, codes in leaf.columns(before, depth):
            if not (codes != codes[0]).any():
                same += texts[codes[0]]
            else:
                varying.append(np.array([same + t for t in texts], dtype=object)[codes])
                same = ""
    item = "\n" + "  " * (level + 1)
    table = np.empty((n, len(varying) + 1), dtype=object)
    for i, column in enumerate(varying):
        table[:, i] = column
    table[:, -1] = same + last + "," + item
    table[-1, -1] = same + last + "\n" + "  " * level + "]"
    table[0, 0] = "[" + item + table[0, 0]
    return table.ravel().tolist()  # type: ignore[no-any-return]


__all__ = ["kernel_records", "kernel_shape", "kernels_json", "kernels_json_pieces"]
