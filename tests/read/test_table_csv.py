"""The tidy table's CSV text is what pandas' ``to_csv`` writes (floats as ``%.17g``), byte for
byte, whatever the cells hold: quotes, commas, line breaks, empty and missing values, -0."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.read.table.csv import _floats_as_text, csv_text


def reference(table: pd.DataFrame) -> str:
    return _floats_as_text(table).to_csv(index=False)


TEXT = st.one_of(st.none(), st.just(math.nan), st.just(pd.NA),
                 st.text(alphabet=st.sampled_from(['a', ' ', ',', '"', '\n', '\r', 'é', ';', "'", '\t']), max_size=6))
FLOAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, 2.0**60]))


@st.composite
def tables(draw: st.DrawFn) -> pd.DataFrame:
    rows = draw(st.integers(0, 6))
    columns: dict[str, object] = {}
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["text", "str", "float", "int", "bool"]))
        name = draw(st.sampled_from(["id", "a,b", 'say "x"', "multi\nline", ""])) + f"{i}"
        if kind == "float":
            columns[name] = np.array(draw(st.lists(FLOAT, min_size=rows, max_size=rows)), dtype="float64")
        elif kind == "int":
            columns[name] = np.array(draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=rows, max_size=rows)),
                                     dtype="int64")
        elif kind == "bool":
            columns[name] = np.array(draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), dtype=bool)
        else:
            values = draw(st.lists(TEXT, min_size=rows, max_size=rows))
            columns[name] = pd.Series(values, dtype="str" if kind == "str" else object)
    return pd.DataFrame(columns)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_csv_text_is_to_csv(table: pd.DataFrame) -> None:
    assert csv_text(table) == reference(table)


def test_quotes_commas_and_line_breaks_are_quoted_as_pandas_does() -> None:
    table = pd.DataFrame({"kernel": ['void f<1, 2>(float*)', 'say "hi"', "two\nlines", "", None],
                          "time_s": [1.5e-06, -0.0, math.nan, 0.0, 1 / 3]})
    assert csv_text(table) == ('kernel,time_s\n"void f<1, 2>(float*)",1.5e-06\n'
                               '"say ""hi""",-0\n"two\nlines",\n,0\n,0.33333333333333331\n')


@pytest.mark.parametrize("column", [
    pd.Series([1, None, 3], dtype="Int64"),  # nullable integers
    pd.Series(["a", "b", "a"], dtype="category"),
    pd.Series(["a", 2.5, None], dtype=object),  # a number in a text column
    pd.to_datetime(pd.Series(["2026-12-01", None, "2026-12-02"])),
])
def test_other_kinds_of_column_are_written_by_pandas(column: pd.Series) -> None:
    table = pd.DataFrame({"id": [0, 1, 2], "x": column, "y": [0.1, -0.0, math.nan]})
    assert csv_text(table) == reference(table)


def test_a_table_of_one_column_or_no_rows() -> None:
    for table in (pd.DataFrame({"kernel": ["", "a"]}), pd.DataFrame({"id": np.array([], dtype="int64"),
                                                                        "kernel": pd.Series([], dtype=object)})):
        assert csv_text(table) == reference(table)
    assert csv_text(pd.DataFrame({"kernel": ["", "a"]})) == 'kernel\n""\na\n'
