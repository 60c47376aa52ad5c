"""A region of several kernels is drawn as one point with its algorithmic ideal (the seeds' layernorm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncu_roof.diagnosis import diagnose_paths
from ncu_roof.render.charts.points import region_points
from ncu_roof.render.charts.roofline import roofline_chart
from ncu_roof.render.charts.save import chart_spec

SYNTHETIC = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
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


def test_ideal_arrow_is_visible_and_labelled() -> None:
    from ncu_roof.render.charts.points import ARROW_COLOR

    d = diagnose_paths(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv",
                       algorithmic=SYNTHETIC / "synthetic_layernorm.toml")
    spec = chart_spec(roofline_chart(d))
    layers = spec["layer"]
    shaft = [lay for lay in layers if lay["mark"].get("type") == "rule" and lay["mark"].get("color") == ARROW_COLOR]
    assert shaft and shaft[0]["mark"]["strokeWidth"] >= 3 and "strokeDash" not in shaft[0]["mark"]
    head = [lay for lay in layers if lay["mark"].get("type") == "point" and lay["mark"].get("color") == ARROW_COLOR]
    assert head and head[0]["mark"]["size"] >= 200 and head[0]["mark"]["filled"]
    text = json.dumps(spec, ensure_ascii=False)
    assert "ideal 908 us → 4.55 ms, 5.0x bytes" in text
    # kernels on one spot are named together on the plot, and each by name in the key
    assert "ln_sub_kernel + 2 more\\n60% of time" in text and "ln_affine_kernel + 2 more\\n40% of time" in text
    assert "on one spot: ln_sub_kernel, ln_square_kernel, ln_normalize_kernel" in spec["title"]["subtitle"]
    assert spec["title"]["subtitle"][0] == "top finding: fuse-extra-bytes (region layernorm), 3.64 ms at stake"
