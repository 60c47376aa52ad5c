"""Normalizing (``ncu_roof.read.normalize``): busy shares put on one basis, the SMs' elapsed cycles."""

from __future__ import annotations

import pandas as pd

from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.normalize import normalize
from ncu_roof.read.validate import check_raw


def raw_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """A raw launch frame of ``rows`` (metric columns float64)."""
    frame = pd.DataFrame([{"report": "r.csv", "id": i, "kernel": "k", **row} for i, row in enumerate(rows)])
    for col in frame.columns:
        if col not in IDENTITY_COLUMNS:
            frame[col] = frame[col].astype("float64")
    return frame


def test_busy_shares_read_over_active_cycles_are_scaled_to_elapsed_ones() -> None:
    """A pipe's share read over the SMs' active cycles is scaled by active / elapsed cycles (launch 0),
    one read over elapsed cycles is kept (launch 1, whose first source is the elapsed one), and so is
    an active one without both cycle counts (launch 2)."""
    active_src = "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active"
    elapsed_src = "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"
    rows: list[dict[str, object]] = [
        {active_src: 40.0, elapsed_src: 10.0, "sm__cycles_active.avg": 500.0, "sm__cycles_elapsed.avg": 1000.0},
        {elapsed_src: 30.0, "sm__cycles_active.avg": 500.0, "sm__cycles_elapsed.avg": 1000.0},
        {active_src: 40.0},
    ]
    tidy = normalize(check_raw(raw_frame(rows)))
    assert tidy["pipe_fp64_pct"].tolist() == [20.0, 30.0, 40.0]
