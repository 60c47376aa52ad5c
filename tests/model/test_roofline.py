"""Roofline placement: properties, the seeds' numbers, regions and the JSON contract."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import cached_diagnosis
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.diagnosis import diagnose_paths, diagnose_table, to_dict
from ncu_roof.errors import InputError
from ncu_roof.model.algorithmic import RegionSpec, read_algorithmic, summarize_regions
from ncu_roof.model.roofline import Thresholds, place
from ncu_roof.read import units
from ncu_roof.read.normalize import normalize

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "fixtures" / "synthetic"

positive = st.floats(min_value=1e-3, max_value=1e15, allow_nan=False, allow_infinity=False)


def _raw(**metrics: list[float]) -> pd.DataFrame:
    n = len(next(iter(metrics.values())))
    return pd.DataFrame({"report": ["synthetic"] * n, "id": list(range(n)), "kernel": [f"k{i}" for i in range(n)],
                         **metrics})


def _with_peaks(time_s: float, dram: float, ffma: float, fadd: float) -> pd.DataFrame:
    """A launch with the report-side peaks of a made-up GPU: 10 TFLOP/s FP32, 500 GB/s DRAM."""
    return _raw(**{
        "gpu__time_duration.sum": [time_s], "dram__bytes_read.sum": [dram], "dram__bytes_write.sum": [0.0],
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": [ffma],
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": [fadd],
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": [0.0],
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": [5000.0],
        "sm__cycles_elapsed.avg.per_second": [1e9],
        "dram__bytes.sum.peak_sustained": [500.0], "dram__cycles_elapsed.avg.per_second": [1e9],
    })


@settings(deadline=None)
@given(time_s=st.floats(1e-6, 10.0), dram=positive, ffma=positive, fadd=st.floats(0, 1e15))
def test_attainable_never_exceeds_min_of_peak_and_intensity_times_bandwidth(time_s: float, dram: float,
                                                                            ffma: float, fadd: float) -> None:
    row = place(normalize(_with_peaks(time_s, dram, ffma, fadd))).iloc[0]
    peak, beta = row["peak_flops_per_s"], row["dram_roof_bytes_per_s"]
    assert peak <= 10e12 * (1 + 1e-12)  # adds lower the FP32 roof towards the no-FMA half
    assert peak >= 5e12 * (1 - 1e-12)
    assert row["attainable_flops_per_s"] <= min(peak, row["intensity_dram"] * beta) * (1 + 1e-12)
    assert row["time_lower_bound_s"] == pytest.approx(max(row["flops"] / peak, dram / beta), rel=1e-9)


@settings(deadline=None)
@given(value=st.floats(1e-6, 1e9), prefix=st.sampled_from(["", "K", "M", "G", "T"]),
       base=st.sampled_from(["byte", "byte/second", "inst", "hz"]))
def test_units_round_trip(value: float, prefix: str, base: str) -> None:
    # a value printed in prefixed units reads back as the value times the prefix's own factor
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[prefix]
    assert value * units.factor(prefix + base) == pytest.approx(value * scale, rel=1e-12)
    assert units.factor(prefix + base) == scale


def test_time_units_scale_to_seconds() -> None:
    assert units.factor("nsecond") == 1e-9 and units.factor("usecond") == 1e-6 and units.factor("msecond") == 1e-3
    assert units.factor("ns") == 1e-9 and units.factor("cycle/nsecond") == pytest.approx(1e9)
    assert units.factor("Gbyte/second") == 1e9


def test_practical_dram_roof_is_88_percent_of_the_report_peak_and_says_so() -> None:
    row = place(normalize(_with_peaks(1e-3, 1e8, 1e9, 0))).iloc[0]
    assert row["dram_peak_bytes_per_s"] == 500e9
    assert row["dram_roof_bytes_per_s"] == pytest.approx(0.88 * 500e9)
    assert row["dram_roof_src"] == "report x 88% (practical, not measured)"
    assert row["peak_flops_per_s"] == 10e12 and row["compute_roof"] == "fp32 FMA"


def test_adds_only_kernel_gets_the_no_fma_roof() -> None:
    row = place(normalize(_with_peaks(1e-3, 1e8, 0.0, 1e9))).iloc[0]
    assert row["peak_flops_per_s"] == pytest.approx(5e12) and row["compute_roof"] == "fp32 no-FMA"


def test_percent_of_roof_is_of_the_roof_above_the_point() -> None:
    # intensity 10 on a 10 TFLOP/s, 440 GB/s (practical) machine: roof 4.4 TFLOP/s; running at 4 TFLOP/s
    flops = 4e12 * 1e-3
    row = place(normalize(_with_peaks(1e-3, flops / 10, flops / 2, 0.0))).iloc[0]
    assert row["intensity_dram"] == pytest.approx(10)
    assert row["attainable_flops_per_s"] == pytest.approx(4.4e12)
    assert row["pct_of_roof"] == pytest.approx(100 * 4 / 4.4)
    assert row["bound"] == "memory" and row["binding"] == "dram"


def test_short_launch_is_in_the_overhead_regime() -> None:
    row = place(normalize(_with_peaks(3e-6, 1e3, 1e3, 0))).iloc[0]
    assert row["bound"] == "overhead"
    # not launch-bound by a lower cut: 1 kB in 3 us is far below the DRAM roof, so latency-bound
    assert place(normalize(_with_peaks(3e-6, 1e3, 1e3, 0)), thresholds=Thresholds(overhead_time_s=1e-6)).iloc[0][
        "bound"] == "latency"


def test_unknown_when_metrics_are_missing() -> None:
    row = place(normalize(_raw(**{"gpu__time_duration.sum": [1e-3]}))).iloc[0]
    assert row["bound"] == "unknown" and math.isnan(row["pct_of_roof"]) and math.isnan(row["intensity_dram"])


def test_layernorm_region_from_the_sidecar_file() -> None:
    d = diagnose_paths(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv",
                       algorithmic=SYNTHETIC / "synthetic_layernorm.toml")
    region = d.regions.iloc[0]
    assert region["name"] == "layernorm" and region["launches"] == 6
    assert region["dram_bytes"] == 10 * 268_435_456  # ten passes, about 2.7 GB
    assert region["alg_bytes"] == 536_870_912
    assert region["extra_bytes_factor"] == pytest.approx(5.0)
    assert region["time_s"] == pytest.approx(4.54975e-3)
    # ideal: 0.54 GB at the practical roof of the RTX 5070 (88% of 672 GB/s)
    assert region["ideal_time_s"] == pytest.approx(536_870_912 / (0.88 * 672e9), rel=1e-6)
    assert region["ideal_time_s"] == pytest.approx(0.908e-3, rel=1e-3)
    assert region["time_at_stake_s"] == pytest.approx(4.54975e-3 - 536_870_912 / (0.88 * 672e9), rel=1e-6)


def test_rtx5070_roofs_come_from_the_device_table() -> None:
    d = diagnose_paths(SYNTHETIC / "synthetic_layernorm_fused_rtx5070.csv")
    row = d.placed.iloc[0]
    assert row["peak_flops_src"] == "device table" and row["dram_roof_src"].startswith("device table x 88%")
    assert row["dram_peak_bytes_per_s"] == 672e9
    # the fused kernel sits on the practical roof at the ideal intensity (~1 FLOP/byte)
    assert row["intensity_dram"] == pytest.approx(536_870_912 / 536_870_912)
    assert row["pct_of_roof"] == pytest.approx(100 * (536_870_912 / 909_950e-9) / (0.88 * 672e9), rel=1e-9)
    # 2 of its 6 FP32 instructions per element are FMAs: 8 FLOPs where 6 FMAs would give 12
    assert row["peak_flops_per_s"] == pytest.approx(30.9e12 * 8 / 12) and row["compute_roof"].startswith("fp32 mixed")
    assert 30.9e12 / row["dram_roof_bytes_per_s"] == pytest.approx(52.25, abs=0.01)  # the seeds' ridge, ~52


def test_seeds_intensity_table_through_regions() -> None:
    """Algorithmic intensities of the seeds' table come out of the region arithmetic."""
    cases = {"vecadd": (1, 12, 0.083), "saxpy": (2, 12, 0.17), "relu_fp16": (1, 4, 0.25)}
    n = 1 << 20
    raw = _raw(**{"gpu__time_duration.sum": [1e-3] * 3, "dram__bytes_read.sum": [1e7] * 3,
                  "dram__bytes_write.sum": [0.0] * 3})
    raw["kernel"] = list(cases)
    placed = place(normalize(raw))
    specs = [RegionSpec(k, f * n, b * n, kernels=f"^{k}$") for k, (f, b, _) in cases.items()]
    regions = summarize_regions(placed, specs).set_index("name")
    for k, (_, _, intensity) in cases.items():
        assert regions.loc[k, "alg_intensity"] == pytest.approx(intensity, abs=0.005)
    gemm = RegionSpec("gemm", 2 * 4096**3, 12 * 4096**2, kernels="^vecadd$")
    assert summarize_regions(placed, [gemm]).iloc[0]["alg_intensity"] == pytest.approx(4096 / 6)


def test_json_contract_uses_null_for_unknown(realdata: Path) -> None:
    d = cached_diagnosis(realdata / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep")
    data = json.loads(json.dumps(to_dict(d)))
    assert data["schema"] == "ncu-roof/diagnose/1"
    kernel = data["kernels"][0]
    assert kernel["kernel"] == "VecAdd_kernel"
    assert kernel["bytes"]["dram"] is None and kernel["flops"]["total"] is None
    assert kernel["bound"] == "overhead"  # a 3 us launch
    assert kernel["missing"] == ["dram_bytes", "l2_bytes", "l1_bytes", "flops"]
    assert set(data) >= {"kernels", "regions", "findings"}


def test_every_real_kernel_with_time_and_dram_bytes_gets_an_intensity_and_a_roof(realdata: Path) -> None:
    for path in sorted(realdata.glob("*/*.ncu-rep")):
        placed = cached_diagnosis(path).placed
        has = placed["time_s"].notna() & placed["dram_bytes"].notna() & (placed["flops"] > 0)
        assert placed.loc[has, "intensity_dram"].notna().all(), path
        assert placed.loc[has, "dram_roof_bytes_per_s"].notna().all(), path
        assert placed.loc[has, "pct_of_roof"].notna().all(), path
        lacking = placed[~(placed["time_s"].notna() & placed["dram_bytes"].notna())]
        assert (lacking["missing"] != "").all(), path


def test_bad_algorithmic_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "alg.toml"
    bad.write_text("[[region]]\nname = 'x'\nflops = 1\n")
    with pytest.raises(InputError, match="needs a name and an nvtx or kernels key"):
        read_algorithmic(bad)
    bad.write_text("[[region]\n")
    with pytest.raises(InputError, match="is not valid TOML"):
        read_algorithmic(bad)


def test_diagnose_table_without_launch_data_is_partial() -> None:
    d = diagnose_table(normalize(_raw(**{"gpu__time_duration.sum": [np.nan]})))
    assert d.placed.iloc[0]["bound"] == "unknown"
    # no time, counter or launch shape at all: one note says so (not one 'lack' note per quantity)
    assert d.notes == ["1 of 1 launches hold no measurement (k0): no time, counters or launch shape, as ncu lists a "
                       "launch it could not profile (an empty grid, a failed launch or replay)"]
    with_grid = diagnose_table(normalize(_raw(**{"gpu__time_duration.sum": [np.nan], "launch__grid_size": [64.0]})))
    assert any("1 of 1 launches lack time_s" in n for n in with_grid.notes)
