"""One aggregator: a kernel's totals are the same in the table, the charts, compare, JSON and the
notebook (FLOPs and bytes summed, then divided; shares weighted by time)."""

from __future__ import annotations

import pytest

from ncu_roof.comparison.deltas import aggregate
from ncu_roof.model.kernels import intensities, intensity, kernel_summary
from ncu_roof.render.charts.points import kernel_points
from ncu_roof.render.html import render_html
from tests.rules.test_rules import FFMA, diagnose_rows, launch


def _two_launches() -> object:
    """Two launches of one kernel, 100 FLOP each, moving 10 B and 100 B in the same time."""
    rows = [launch("k", 1e-6, **{FFMA: 50.0, "dram__bytes_read.sum": dram, "dram__bytes_write.sum": 0.0})
            for dram in (10.0, 100.0)]
    return diagnose_rows(rows)


def test_a_kernels_intensity_is_its_flops_over_its_bytes_in_every_output() -> None:
    d = _two_launches()
    placed = d.placed  # type: ignore[attr-defined]
    assert list(placed["intensity_dram"]) == [10.0, 1.0]  # the launches' own (mean 5.5: never shown for the kernel)
    want = 200.0 / 110.0
    assert intensity(placed) == pytest.approx(want)
    assert intensities(placed, ["kernel"])["intensity_dram"].iloc[0] == pytest.approx(want)
    assert kernel_summary(placed)["intensity_dram"].iloc[0] == pytest.approx(want)  # text, Markdown, HTML, r.kernels
    assert kernel_points(placed)["intensity_dram"].iloc[0] == pytest.approx(want)  # the roofline chart
    assert aggregate(placed)["intensity"] == pytest.approx(want)  # compare and the gate
    assert "1.82" in render_html(d) and "5.5 FLOP" not in render_html(d)  # type: ignore[arg-type]


def test_launches_without_bytes_are_left_out_of_both_sums() -> None:
    d = _two_launches()
    placed = d.placed.copy()  # type: ignore[attr-defined]
    placed.loc[placed.index[1], "dram_bytes"] = float("nan")
    assert intensity(placed) == pytest.approx(10.0)  # 100 FLOP / 10 B: the second launch's FLOPs not counted
    assert intensity(placed.iloc[:0]) != intensity(placed.iloc[:0])  # no launch: unknown (NaN), never 0
