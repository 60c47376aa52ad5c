"""The tidy table's CSV text joins runs of adjacent columns whose values come in few combinations once
per combination (:func:`ncu_roof.read.table.csv._rows`): still what pandas' ``to_csv`` writes, byte for
byte, where launches repeat a few rows and a column of unique values (the launch ID) cuts the runs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.read.table.csv import _column_codes, _floats_as_text, _join, _rows, csv_text

CELLS = {
    "float": st.one_of(st.just(math.nan), st.just(0.0), st.just(-0.0), st.floats(allow_nan=False, width=32)),
    "int": st.integers(-(2**63), 2**63 - 1),
    "bool": st.booleans(),
    "text": st.one_of(st.none(), st.just(math.nan), st.text(alphabet='ab ,"\n\r;', max_size=4)),
}


@st.composite
def repeated_tables(draw: st.DrawFn) -> pd.DataFrame:
    """A few distinct rows repeated in any order to up to 120 rows, and maybe a column of unique IDs."""
    kinds = draw(st.lists(st.sampled_from(sorted(CELLS)), min_size=2, max_size=7))
    pool = draw(st.integers(1, 4))
    cells = [draw(st.lists(CELLS[k], min_size=pool, max_size=pool)) for k in kinds]
    rows = draw(st.lists(st.integers(0, pool - 1), min_size=0, max_size=120))
    columns: dict[str, object] = {}
    for i, (kind, values) in enumerate(zip(kinds, cells, strict=True)):
        picked = [values[r] for r in rows]
        dtype = {"float": "float64", "int": "int64", "bool": bool, "text": object}[kind]
        columns[f"{kind}{i}"] = pd.Series(picked, dtype=dtype)
    table = pd.DataFrame(columns)
    if draw(st.booleans()):
        table.insert(draw(st.integers(0, len(kinds))), "id", np.arange(len(rows), dtype="int64"))
    return table


@settings(max_examples=300, deadline=None)
@given(repeated_tables())
def test_runs_of_columns_give_what_to_csv_writes(table: pd.DataFrame) -> None:
    assert csv_text(table) == _floats_as_text(table).to_csv(index=False)


def test_columns_of_few_combinations_are_joined_once_each() -> None:
    """Five rows repeated: the two text columns and the float join into one run of their 3 combinations;
    the ID (unique) stands alone, and so does what follows it."""
    table = pd.DataFrame({"kernel": ["a", "b,c", "a", "a", "b,c"] * 20, "time": [1.5, -0.0, 1.5, math.nan, -0.0] * 20,
                          "id": np.arange(100), "grid": ["(1, 1, 1)"] * 100})
    columns = [c for c in (_column_codes(table[name]) for name in table.columns) if c is not None]
    joined = _join(*columns[0], *columns[1], few=25)
    assert joined is not None and joined[1] == ["a,1.5", "a,", '"b,c",-0']
    assert _join(*joined, *columns[2], few=25) is None  # 100 combinations with the ID: not joined
    rows = _rows(columns, len(table))
    assert rows[:5] == ['a,1.5,0,"(1, 1, 1)"', '"b,c",-0,1,"(1, 1, 1)"', 'a,1.5,2,"(1, 1, 1)"',
                        'a,,3,"(1, 1, 1)"', '"b,c",-0,4,"(1, 1, 1)"']
    assert csv_text(table) == _floats_as_text(table).to_csv(index=False)
