"""The stake engine: launches sharing a relief priced on arrays give the numbers of one by one."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import cached_diagnosis
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.model.units import UNITS, unit_column
from ncu_roof.rules.stakes import Relief, stake, stakes_of

NAMES = [u.name for u in UNITS]
seconds = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1e-2, allow_nan=False))
shares = st.floats(min_value=-0.5, max_value=1.5, allow_nan=False)


@st.composite
def launches(draw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {unit_column(n): math.nan for n in NAMES}
    for n in draw(st.lists(st.sampled_from(NAMES), max_size=5, unique=True)):
        b = draw(seconds)
        row[unit_column(n)] = math.nan if b is None else b
    t = draw(st.one_of(st.just(math.nan), st.floats(min_value=0.0, max_value=2e-2, allow_nan=False)))
    row["time_s"] = t
    return row


@st.composite
def reliefs(draw: Any) -> Relief:
    removes = draw(st.dictionaries(st.sampled_from(NAMES), shares, max_size=3))
    adds = draw(st.dictionaries(st.sampled_from(NAMES), st.floats(min_value=-1e-3, max_value=1e-2), max_size=2))
    latency = draw(st.floats(min_value=-0.2, max_value=1.2, allow_nan=False))
    share = draw(st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)))
    return Relief(removes=removes, adds=adds, latency=latency, share=share)


@settings(max_examples=400, deadline=None)
@given(st.lists(launches(), min_size=1, max_size=12), reliefs())
def test_stakes_priced_on_arrays_equal_one_by_one(rows: list[dict[str, Any]], relief: Relief) -> None:
    one_by_one = np.array([stake(r, relief) for r in rows])
    assert stakes_of(rows, relief) == pytest.approx(one_by_one, rel=1e-12, abs=1e-18)


def test_a_real_report_s_binding_unit_stakes_are_the_same_either_way(realdata: Any) -> None:
    d = cached_diagnosis(realdata / "tkhenry-uofa__mixes-reconstruction" / "full_profile.ncu-rep")
    rows = d.placed.to_dict("records")
    relief = Relief(removes={"pipe_alu": 1.0})
    assert stakes_of(rows, relief) == pytest.approx([stake(r, relief) for r in rows], rel=1e-12)


def test_launches_of_the_held_table_are_priced_from_its_columns_without_a_dict(realdata: Any) -> None:
    """While the rules run, a group sharing one relief is priced from the held placed table's
    columns: the sum of each launch's own stake, and none of them made into a dict."""
    from ncu_roof.rules import common
    from ncu_roof.rules.stakes import total_stake

    placed = cached_diagnosis(realdata / "jonahshader__alife_cuda" / "profile_output.ncu-rep").placed
    relief = Relief(removes={"dram": 0.5}, latency=0.5)
    one_by_one = sum(stake(r, relief) for r in placed.to_dict("records"))
    assert len(placed) == 143 and one_by_one > 0
    with common.rows_cached(placed):
        held = common._BLOCKS["rows"]
        assert total_stake(placed, [relief] * len(placed)) == pytest.approx(one_by_one, rel=1e-12)
        assert held.made() == 0
        total_stake(placed.iloc[:3], [relief] * 3)  # too few to price on arrays: asked launch by launch
        assert held.made() == 3
    with pytest.raises(ValueError, match="2 reliefs for 3 launches"):
        total_stake(placed.iloc[:3], [relief] * 2)
