"""The launches of the JSON contract (its ``kernels`` list), built from whole columns of the placed
table: each column's values cleaned at once (:func:`ncu_roof.jsonable.json_nums`), each distinct
value turned into text once, and the launches' texts joined from those columns; no dict per launch
is made for the JSON, and :func:`kernel_records` (the dicts of :func:`ncu_roof.diagnosis.to_dict`)
zips them from the same columns.

:func:`kernels_json` writes what ``json.dumps(kernel_records(placed), indent=2)`` writes at that
depth, byte for byte (a test holds both, and the record of each launch, to the former launch-by-launch
code on real and synthetic inputs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any, Union

import numpy as np
import pandas as pd

from ncu_roof.jsonable import json_num, json_nums, json_text
from ncu_roof.model.units import UNITS, unit_column


@dataclass
class Leaf:
    """One key's values over the launches: ``values[codes[i]]`` for launch ``i`` (``codes`` None:
    one value per launch); ``texts``, where given, writes them at a depth in place of :func:`json_text`."""

    values: list[Any]
    codes: np.ndarray | None = None
    texts: Callable[[int], list[str]] | None = None
    mutable: bool = False  # lists or dicts: each launch gets its own copy

    def cells(self) -> list[Any]:
        cells = self.values if self.codes is None else list(map(self.values.__getitem__, self.codes.tolist()))
        return [v.copy() if v is not None else None for v in cells] if self.mutable else cells

    def pieces(self, before: str, level: int) -> list[str]:
        """Each launch's text of this key, ``before`` first."""
        texts = self.texts(level) if self.texts is not None else [json_text(v, level) for v in self.values]
        pieces = [before + t for t in texts]
        return pieces if self.codes is None else list(map(pieces.__getitem__, self.codes.tolist()))


Shape = list[tuple[str, Union[Leaf, "Shape"]]]


def _str(value: Any) -> str | None:
    return None if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else str(value)


def _constant(value: Any, n: int) -> Leaf:
    return Leaf([value], np.zeros(n, dtype=np.intp))


def _distinct(column: pd.Series, func: Callable[[Any], Any]) -> Leaf:
    """``func`` of each cell of ``column`` (as ``to_dict("records")`` gives it), once per distinct
    value: told apart by type and value (``1``, ``1.0`` and ``True`` are three, ``0.0`` and ``-0.0`` two)."""
    if isinstance(column.dtype, pd.StringDtype):  # str, or the dtype's missing value
        codes, uniques = pd.factorize(column)
        return Leaf([*map(func, uniques.tolist()), func(column.dtype.na_value)],
                    np.where(codes < 0, len(uniques), codes))
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
        codes, uniques = pd.factorize(column.to_numpy())  # NaN: -1, the last value
        return Leaf([*json_nums(uniques), None], np.where(codes < 0, len(uniques), codes))
    return _distinct(column, json_num)


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


def _floats(values: list[Any]) -> np.ndarray:
    return np.array([math.nan if v is None else v for v in values], dtype=np.float64)


def _units(c: _Columns, time_s: Leaf) -> Leaf:
    """``units``: each unit whose lower bound is known, its share of the launch's time."""
    t = _floats(time_s.cells())
    names, shares, known = [], [], []
    for unit in UNITS:
        column = c.column(unit_column(unit.name))
        if column is None:
            continue
        bound = _floats(_numbers(column).cells())
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            share = np.where((t != 0) & ~np.isnan(t) & ~np.isnan(bound), bound / t, np.nan)
        names.append(unit.name)
        shares.append(_numbers(pd.Series(share)))
        known.append(~np.isnan(bound))
    absent = object()
    cells = [leaf.cells() for leaf in shares]
    rows = [[v if k else absent for v, k in zip(col, has, strict=True)] for col, has in zip(cells, known, strict=True)]
    values = [{n: v for n, v in zip(names, row, strict=True) if v is not absent} for row in zip(*rows, strict=True)] \
        if names else [{} for _ in range(c.n)]

    def texts(level: int) -> list[str]:
        inner = "\n" + "  " * (level + 1)
        columns = [np.where(has, np.array(leaf.pieces(f",{inner}{encode_basestring_ascii(name)}: ", level + 1),
                                          dtype=object), "").tolist()
                   for name, leaf, has in zip(names, shares, known, strict=True)]
        joined = map("".join, zip(*columns, strict=True)) if columns else ("" for _ in range(c.n))
        close = "\n" + "  " * level + "}"
        return [("{" + s[1:] + close) if s else "{}" for s in joined]

    return Leaf(values, None, texts, mutable=True)


def _algorithmic(c: _Columns) -> Leaf:
    """``algorithmic``: the counts of an algorithmic region, or None where neither is known."""
    keys = ("flops", "bytes", "intensity")
    leaves = [c.num(f"alg_{key}", get=True) for key in keys]
    cells = [leaf.cells() for leaf in leaves]
    has = [f is not None or b is not None for f, b in zip(cells[0], cells[1], strict=True)]
    values = [dict(zip(keys, row, strict=True)) if known else None
              for known, row in zip(has, zip(*cells, strict=True), strict=True)]

    def texts(level: int) -> list[str]:
        inner = "\n" + "  " * (level + 1)
        parts = [leaf.pieces(("{" if i == 0 else ",") + f"{inner}{encode_basestring_ascii(key)}: ", level + 1)
                 for i, (key, leaf) in enumerate(zip(keys, leaves, strict=True))]
        close = "\n" + "  " * level + "}"
        return [a + b + i + close if known else "null"
                for known, a, b, i in zip(has, *parts, strict=True)]

    return Leaf(values, None, texts, mutable=True)


def _first_known(a: Leaf, b: Leaf) -> Leaf:
    """``a or b`` of each launch."""
    return Leaf([x or y for x, y in zip(a.cells(), b.cells(), strict=True)])


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
        ("binding_unit_share", bound_share), ("units", _units(c, time_s)), ("algorithmic", _algorithmic(c)),
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
        before += ("," if i else "") + "\n" + "  " * (level + 1) + encode_basestring_ascii(key) + ": "
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
    if not len(placed):
        return "[]"
    parts, last = _layout(kernel_shape(placed), level + 1)
    columns = [leaf.pieces(before, depth) for before, leaf, depth in parts]
    rows = map("".join, zip(*columns, strict=True))
    item = "\n" + "  " * (level + 1)
    return "[" + item + ("," + item).join(row + last for row in rows) + "\n" + "  " * level + "]"


__all__ = ["kernel_records", "kernel_shape", "kernels_json"]
