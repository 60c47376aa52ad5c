"""Measured ceilings (`--ceilings`) override the report and the device table, and say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncu_roof.diagnosis import diagnose_paths

ROOT = Path(__file__).resolve().parents[2]
FUSED = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_fused_rtx5070.csv"
CEILINGS = """\
[device]
name = "NVIDIA GeForce RTX 5070"
cc = "12.0"

[ceilings]
dram_bytes_per_s = 6.0e11
fp32_flops_per_s = 2.9e13

[method]
dram_bytes_per_s = "copy of 2 x 1 GiB"
fp32_flops_per_s = "8 independent FMA chains"
"""


def test_measured_ceilings_replace_the_88_percent_rule(tmp_path: Path) -> None:
    path = tmp_path / "ceilings.toml"
    path.write_text(CEILINGS)
    row = diagnose_paths(FUSED, ceilings=path).placed.iloc[0]
    assert row["dram_roof_bytes_per_s"] == 6.0e11
    assert row["dram_roof_src"] == f"measured ({path})"
    assert row["dram_peak_bytes_per_s"] == 672e9  # the spec stays known beside the measured roof
    # 8 FLOPs per 6 FP32 instructions: the measured FMA peak scaled by the FMA share
    assert row["peak_flops_per_s"] == pytest.approx(2.9e13 * 8 / 12)
    assert row["peak_flops_src"] == f"measured ({path})"
    assert row["pct_of_roof"] == pytest.approx(100 * (536_870_912 / 909_950e-9) / 6.0e11)


def test_without_ceilings_the_practical_roof_is_labelled() -> None:
    row = diagnose_paths(FUSED).placed.iloc[0]
    assert row["dram_roof_bytes_per_s"] == pytest.approx(0.88 * 672e9)
    assert row["dram_roof_src"] == "device table x 88% (practical, not measured)"
