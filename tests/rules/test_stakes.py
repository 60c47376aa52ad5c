"""The stake engine: the one pricing path (arrays, through the rule run) gives the numbers of the
stake model written launch by launch (the oracle in ``stake_oracle``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import cached_diagnosis
from hypothesis import given, settings
from hypothesis import strategies as st
from stake_oracle import stake

from ncu_roof.model.roofline import Thresholds
from ncu_roof.model.units import UNITS, unit_column
from ncu_roof.rules.run import RuleRun
from ncu_roof.rules.stakes import Relief

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
    row["launch_floor_s"] = draw(st.one_of(st.just(math.nan), st.floats(min_value=0.0, max_value=5e-6)))
    row["bound"] = draw(st.sampled_from(["memory", "overhead", "latency"]))
    return row


@st.composite
def reliefs(draw: Any) -> Relief:
    removes = draw(st.dictionaries(st.sampled_from(NAMES), shares, max_size=3))
    adds = draw(st.dictionaries(st.sampled_from(NAMES), st.floats(min_value=-1e-3, max_value=1e-2), max_size=2))
    latency = draw(st.floats(min_value=-0.2, max_value=1.2, allow_nan=False))
    share = draw(st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)))
    rewrite = draw(st.one_of(st.none(), st.floats(min_value=0.0, max_value=1e-2)))
    return Relief(removes=removes, adds=adds, latency=latency, share=share, rewrite_s=rewrite)


def run_of(rows: list[dict[str, Any]]) -> RuleRun:
    return RuleRun(pd.DataFrame(rows), Thresholds())


@settings(max_examples=400, deadline=None)
@given(st.lists(launches(), min_size=1, max_size=12), reliefs())
def test_stakes_priced_by_the_run_equal_the_launch_by_launch_model(rows: list[dict[str, Any]], relief: Relief) -> None:
    run = run_of(rows)
    one_by_one = np.array([stake(r, relief) for r in rows])
    assert run.stakes(run.placed, [relief] * len(rows)) == pytest.approx(one_by_one, rel=1e-12, abs=1e-18)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(launches(), reliefs()), min_size=1, max_size=8))
def test_launches_with_different_reliefs_are_each_priced_by_their_own(pairs: list[tuple[dict[str, Any], Relief]]
                                                                         ) -> None:
    run = run_of([r for r, _ in pairs])
    expected = sum(stake(r, x) for r, x in pairs)
    assert run.price(run.placed, [x for _, x in pairs]) == pytest.approx(expected, rel=1e-12, abs=1e-18)


def test_a_hand_made_table_without_unit_columns_is_priced_against_its_roofline_bound() -> None:
    """No unit columns: the roofline's bound (time_lower_bound_s, else time less headroom) is the one unit."""
    rows = [{"time_s": 10e-6, "time_lower_bound_s": 4e-6}, {"time_s": 10e-6, "headroom_s": 2e-6}]
    run = run_of(rows)
    relief = Relief(latency=1.0)
    assert run.stakes(run.placed, [relief] * 2).tolist() == pytest.approx([6e-6, 2e-6])
    assert [stake(r, relief) for r in rows] == pytest.approx([6e-6, 2e-6])


def test_a_real_report_s_binding_unit_stakes_are_the_same_either_way(realdata: Any) -> None:
    d = cached_diagnosis(realdata / "tkhenry-uofa__mixes-reconstruction" / "full_profile.ncu-rep")
    rows = d.placed.to_dict("records")
    relief = Relief(removes={"pipe_alu": 1.0})
    run = RuleRun(d.placed, Thresholds())
    assert run.stakes(run.placed, [relief] * len(rows)) == pytest.approx([stake(r, relief) for r in rows], rel=1e-12)


def test_a_real_table_is_priced_from_its_columns_without_a_launch_becoming_a_dict(realdata: Any) -> None:
    """The run prices launches from the placed table's columns: the sum of each launch's own stake,
    and none of them made into a dict."""
    placed = cached_diagnosis(realdata / "jonahshader__alife_cuda" / "profile_output.ncu-rep").placed
    relief = Relief(removes={"dram": 0.5}, latency=0.5)
    one_by_one = sum(stake(r, relief) for r in placed.to_dict("records"))
    assert len(placed) == 143 and one_by_one > 0
    run = RuleRun(placed, Thresholds())
    assert run.price(placed, [relief] * len(placed)) == pytest.approx(one_by_one, rel=1e-12)
    assert run.price(placed.iloc[:3], [relief] * 3) == pytest.approx(
        sum(stake(r, relief) for r in placed.iloc[:3].to_dict("records")), rel=1e-12)
    assert run.rows.made() == 0
    with pytest.raises(ValueError, match="2 reliefs for 3 launches"):
        run.price(placed.iloc[:3], [relief] * 2)


def test_reliefs_are_grouped_by_value_in_order_of_first_appearance() -> None:
    """Equal reliefs (as dataclasses: their dicts in any order) price together; the groups keep the
    order in which each first appears, so stakes sum in launch order as before."""
    from ncu_roof.rules.run import _by_relief

    a, b = Relief(removes={"l1": 0.5, "l2": 0.5}), Relief(removes={"l2": 0.5, "l1": 0.5})
    c = Relief(latency=1.0, share=0.2)
    groups = _by_relief([c, a, b, c, Relief(latency=1.0, share=0.3)])
    assert [(r, w.tolist()) for r, w in groups] == [(c, [0, 3]), (a, [1, 2]), (Relief(latency=1.0, share=0.3), [4])]
