"""Launches of one kernel and grid get the bound that holds most of their time: the groups found by
codes over the key columns (each group's keys looked up once) give what the former lookup of every
launch's key tuple (kept here as the oracle) gave."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.model import roofline

BOUNDS = ["memory", "compute", "latency", "overhead", "unknown"]


def _per_kernel_oracle(t: pd.DataFrame, bound: pd.Series) -> pd.Series:
    keys = [t[k].astype(str) for k in ("report", "device", "kernel", "grid_size") if k in t]
    if not keys or bound.empty:
        return bound
    weight = t["time_s"].fillna(0.0) if t["time_s"].notna().any() else pd.Series(1.0, index=t.index)
    totals = weight.groupby([*keys, bound], sort=False, dropna=False).sum()
    best = totals.groupby(level=list(range(len(keys))), sort=False).idxmax()
    pick = {group: label[-1] for group, label in best.items()}
    group_of = pd.MultiIndex.from_arrays(keys) if len(keys) > 1 else pd.Index(keys[0])
    return pd.Series([pick.get(g, b) for g, b in zip(group_of, bound, strict=True)], index=bound.index,
                     dtype="object")


@st.composite
def launches(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.Series]:
    n = draw(st.integers(0, 25))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    columns = {"report": rng.choice(["a.ncu-rep", "b.csv"], n), "device": rng.choice(["A100", None], n),
               "kernel": rng.choice(["k1", "k2", "k3"], n), "grid_size": rng.choice([1.0, 2.0, np.nan], n),
               "time_s": np.where(rng.random(n) < 0.2, np.nan, rng.random(n))}
    dropped = draw(st.sets(st.sampled_from(["report", "device", "grid_size"])))
    t = pd.DataFrame({k: v for k, v in columns.items() if k not in dropped}, index=rng.permutation(n) + 7)
    if draw(st.booleans()):
        t["time_s"] = np.nan  # no time anywhere: each launch weighs 1
    return t, pd.Series(rng.choice(BOUNDS, n), index=t.index, dtype="object")


@settings(max_examples=80, deadline=None)
@given(launches())
def test_each_kernel_group_gets_the_former_bound(case: tuple[pd.DataFrame, pd.Series]) -> None:
    t, bound = case
    got, expected = roofline._per_kernel(t, bound), _per_kernel_oracle(t, bound)
    pd.testing.assert_series_equal(got, expected, check_exact=True)
    assert [type(x) for x in got] == [type(x) for x in expected]
