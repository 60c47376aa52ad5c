"""The JSON's fast paths write what the plain ones write, on awkward values (NaN, infinities, -0.0,
2**53, None, pandas' NA, NumPy scalars, tuples, keys not str, non-ASCII text):

- :func:`clean_json_text` is ``json.dumps(clean(value), indent=2, allow_nan=False)`` at its depth
  (long lists of numbers or strings written from arrays), and fails where that fails;
- :func:`json_num_texts` is the text of each of :func:`json_nums`;
- a column's distinct values found by ``pd.factorize`` (object columns of text and unknowns, str,
  bool and int columns, number columns of one value) are what the cell-by-cell loop finds;
- ``a or b`` of two leaves from their distinct values is that of each launch;
- a diagnosis's ``to_json`` is ``json.dumps(to_dict(d), indent=2)`` with awkward findings,
  verdicts, runs and notes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncu_roof.diagnosis import to_dict, to_json
from ncu_roof.jsonable import clean, clean_json_text, json_num, json_num_texts, json_nums, json_text
from ncu_roof.kernel_json import Leaf, _distinct, _distinct_cells, _first_known, _numbers, _str
from ncu_roof.render.renderers import render_json
from tests.conftest import cached_diagnosis

SYNTHETIC = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"

_ODD_FLOATS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -3.0, 0.1, 1e-300, 2.0**53, 2.0**53 - 1,
               -(2.0**53), 1e300, 7.046400000000001e-05, 0.5]
_FLOATS = st.sampled_from(_ODD_FLOATS) | st.floats()
_CHARS = st.characters(exclude_categories=("Cs",))  # every character UTF-8 writes (not by codec: no warning)


def _single(value: float) -> np.float32:
    with np.errstate(over="ignore"):
        return np.float32(value)


_NUMPY = (_FLOATS.map(np.float64) | _FLOATS.map(_single) | st.integers(-(2**63), 2**63 - 1).map(np.int64)
          | st.booleans().map(np.bool_) | st.text(_CHARS, max_size=3).map(np.str_))
_SCALARS = (st.none() | st.booleans() | st.integers() | _FLOATS | st.text(_CHARS, max_size=6)
            | st.sampled_from(["", "é \"q\" \\ \u2028 \x00", "dram"]) | _NUMPY)
# long lists of one kind, the fast paths' own
_LONG = (st.lists(_FLOATS | st.none(), min_size=8, max_size=30) | st.lists(_FLOATS.map(np.float64), min_size=8)
         | st.lists(st.integers(), min_size=8) | st.lists(st.text(_CHARS, max_size=4), min_size=8)
         | st.lists(st.none(), min_size=8) | st.lists(st.booleans(), min_size=8))
_KEYS = st.text(_CHARS, max_size=4) | st.integers(-3, 3) | _FLOATS | st.booleans() | st.none()


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (st.lists(inner, max_size=12) | st.lists(inner, max_size=12).map(tuple)
            | st.dictionaries(st.text(_CHARS, max_size=4), inner, max_size=4)
            | st.dictionaries(_KEYS, inner, max_size=3))


_VALUES = st.recursive(_SCALARS | _LONG, _containers, max_leaves=40)


def _plain(value: Any, level: int) -> str:
    """``json.dumps(clean(value), indent=2, allow_nan=False)`` as written ``level`` deep."""
    nested: Any = clean(value)
    for _ in range(level):
        nested = [nested]
    text = json.dumps(nested, indent=2, allow_nan=False)
    for i in range(level):
        head, tail = "[\n" + "  " * (i + 1), "\n" + "  " * i + "]"
        assert text.startswith(head) and text.endswith(tail)
        text = text[len(head):-len(tail)]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, st.integers(0, 3))
def test_clean_json_text_is_the_plain_dump_of_the_cleaned_value(value: Any, level: int) -> None:
    try:
        want = _plain(value, level)
    except (TypeError, ValueError) as exc:  # a key JSON cannot write (a NumPy one, NaN with allow_nan=False)
        with pytest.raises(type(exc)):
            clean_json_text(value, level)
        return
    assert clean_json_text(value, level) == want
    assert clean_json_text(value, level) == json_text(clean(value), level)


def test_clean_json_text_of_long_lists_of_one_kind() -> None:
    floats = [*_ODD_FLOATS, None, np.float64(2.5), np.float64(math.nan)] * 3
    for value in (floats, [None] * 9, list(range(-5, 20)), [2**70, -(2**70)] * 5, ["a", "é", "\u2028"] * 4,
                  [True, False] * 5, [1, 1.0, True, None, "1"] * 3, tuple(floats), [[1.5]] * 9):
        assert clean_json_text(value, 2) == _plain(value, 2)


@given(st.lists(_FLOATS, max_size=40))
def test_json_num_texts_is_the_text_of_each_json_num(values: list[float]) -> None:
    array = np.array(values, dtype=np.float64)
    whole = np.nan_to_num(array, nan=0, posinf=0, neginf=0).clip(-(2**62), 2**62)
    with np.errstate(over="ignore"):
        singles = array.astype(np.float32)
    for other in (array, whole.astype(np.int64), np.abs(whole).astype(np.uint64),
                  (np.abs(whole) % 256).astype(np.uint8), whole != 0, singles):
        assert json_num_texts(other) == [json_text(v, 0) for v in json_nums(other)]
        assert json_num_texts(other) == [json_text(json_num(v), 0) for v in other.tolist()]


# --- distinct values of a column -------------------------------------------------------------------
_FUNCS: list[Callable[[Any], Any]] = [_str, json_num, bool, lambda v: [m for m in str(v or "").split(",") if m],
                                      lambda v: v.split("; ") if isinstance(v, str) and v else []]
_LONG_TEXTS = ["void gemm<float, 128>(Params<float, 128>, int, int)", "a, b; c" * 6]  # told apart by a dict
_CELLS = st.sampled_from([None, pd.NA, math.nan, "", "dram", "a; b", "x,,y", "é \"q\" \u2028", "nan", *_LONG_TEXTS]) | (
    st.builds(float, st.just("nan")))  # a NaN of its own


def _same_leaf(got: Leaf, want: Leaf, level: int = 2) -> None:
    got_cells, want_cells = got.cells(), want.cells()
    assert json.dumps(got_cells) == json.dumps(want_cells)
    assert [type(v) for v in got_cells] == [type(v) for v in want_cells]
    texts_got, texts_want = got.texts(level), want.texts(level)
    assert [texts_got[c] for c in got.codes] == [texts_want[c] for c in want.codes]


@settings(max_examples=200, deadline=None)
@given(st.lists(_CELLS | st.sampled_from([1, 2.5, -0.0, True, np.str_("dram")]), min_size=1, max_size=80),
       st.sampled_from(range(len(_FUNCS))), st.sampled_from(["any", "texts", "one"]))
def test_distinct_values_of_an_object_column_are_the_loops(cells: list[Any], func: int, kind: str) -> None:
    if kind == "texts":
        cells = [c for c in cells if type(c) is str or c is None or c is pd.NA
                 or (type(c) is float and math.isnan(c))] or [""]
    if kind == "one":  # one value in all launches, each cell its own object
        cells = [c if type(c) is not str else "".join(list(c)) for c in [cells[0]] * len(cells)]
    column = pd.Series(cells, dtype=object)
    _same_leaf(_distinct(column, _FUNCS[func]), _distinct_cells(column, _FUNCS[func]))


def _former_str_column(column: pd.Series, func: Callable[[Any], Any]) -> Leaf:
    """The former code's distinct values of a str column: ``pd.factorize``, the missing value last."""
    codes, uniques = pd.factorize(column)
    na_value = cast("pd.StringDtype", column.dtype).na_value
    return Leaf([*map(func, uniques.tolist()), func(na_value)], np.where(codes < 0, len(uniques), codes))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["", "dram", "a; b", "é", None, *_LONG_TEXTS]), min_size=1, max_size=80),
       st.sampled_from(range(len(_FUNCS))), st.sampled_from(["str", "string"]))
def test_distinct_values_of_a_str_column_are_the_former_codes(cells: list[Any], func: int, dtype: str) -> None:
    column = pd.Series(cells, dtype=dtype)  # missing: NaN ("str") or pandas' NA ("string")
    try:
        want = _former_str_column(column, _FUNCS[func])
    except TypeError as exc:  # bool(pd.NA), where no cell is missing too
        with pytest.raises(TypeError, match=str(exc)):
            _distinct(column, _FUNCS[func])
        return
    _same_leaf(_distinct(column, _FUNCS[func]), want)


@given(st.lists(st.integers(-3, 3), min_size=1, max_size=30), st.sampled_from(["bool", "int64", "uint8"]),
       st.sampled_from(range(len(_FUNCS))))
def test_distinct_values_of_a_bool_or_int_column_are_the_loops(cells: list[int], dtype: str, func: int) -> None:
    column = pd.Series(np.array(np.abs(cells) if dtype == "uint8" else cells).astype(dtype))
    _same_leaf(_distinct(column, _FUNCS[func]), _distinct_cells(column, _FUNCS[func]))


@given(st.lists(_FLOATS, min_size=0, max_size=30), st.booleans())
def test_a_number_columns_values_are_the_loops(values: list[float], one: bool) -> None:
    if one and values:
        values = [values[0]] * len(values)  # one value in all launches (-0.0 beside 0.0 too, below)
    column = pd.Series(values, dtype=np.float64)
    _same_leaf(_numbers(column), _distinct_cells(column, json_num))


def test_a_number_column_of_one_value_written_two_ways() -> None:
    for values in ([0.0, -0.0, 0.0], [-0.0] * 3, [math.nan] * 3, [2.0**53] * 2, [math.inf] * 2, [0.1]):
        column = pd.Series(values, dtype=np.float64)
        _same_leaf(_numbers(column), _distinct_cells(column, json_num))


@given(st.lists(st.tuples(st.sampled_from([None, "", "a", "b", "c"]), st.sampled_from([None, "", "x", "y"])),
                min_size=1, max_size=12))
def test_first_known_of_two_leaves_is_a_or_b_of_each_launch(pairs: list[tuple[str | None, str | None]]) -> None:
    a, b = (_distinct(pd.Series([p[i] for p in pairs], dtype=object), _str) for i in (0, 1))
    assert _first_known(a, b).cells() == [x or y for x, y in zip(a.cells(), b.cells(), strict=True)]


# --- the whole document ------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.text(_CHARS, max_size=4), _VALUES, max_size=4), max_size=3),
       st.lists(st.dictionaries(st.text(_CHARS, max_size=4), _SCALARS, max_size=3), max_size=2),
       st.lists(st.text(_CHARS), max_size=3))
def test_to_json_is_the_plain_dump_of_to_dict(verdicts: list[dict[str, Any]], runs: list[dict[str, Any]],
                                              notes: list[str]) -> None:
    d = cached_diagnosis(SYNTHETIC / "synthetic_raw_units.csv")
    d.ncu_rules, d.runs, d.notes = verdicts, runs, notes
    try:
        want = json.dumps(to_dict(d), indent=2, allow_nan=False)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            to_json(d)
        return
    assert to_json(d) == want
    assert render_json(d) == want + "\n"
