"""A region of several kernels is drawn as one point with its algorithmic ideal (the seeds' layernorm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncu_roof.charts import chart_spec, region_points, roofline_chart
from ncu_roof.diagnose import diagnose_paths

SYNTHETIC = Path(__file__).resolve().parents[1] / "fixtures" / "synthetic"
N = 16384 * 4096


def test_layernorm_region_point_and_ideal() -> None:
    d = diagnose_paths(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv",
                       algorithmic=SYNTHETIC / "synthetic_layernorm.toml")
    points = region_points(d)
    assert list(points["kernel"]) == ["region layernorm"]
    region = points.iloc[0]
    assert region["intensity_dram"] == pytest.approx(7 * N / (10 * 4 * N))  # 7 FLOPs over 10 passes
    assert region["alg_intensity"] == pytest.approx(1.0)
    text = json.dumps(chart_spec(roofline_chart(d)))
    assert "region layernorm: 5.0x the algorithmic bytes" in text
    assert '"level": "ideal (algorithmic)"' in text
    assert "6 kernels, 6 launches" in text  # the region is not counted as a kernel


def test_single_kernel_regions_draw_no_extra_point() -> None:
    d = diagnose_paths(SYNTHETIC / "synthetic_layernorm_fused_rtx5070.csv",
                       algorithmic=SYNTHETIC / "synthetic_layernorm.toml")
    assert region_points(d).empty
