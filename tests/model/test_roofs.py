"""Pinned numbers of the roofs: every roof with its arithmetic written out.

Synthetic raw launches (ncu metric names, base units) go through ``ncu_roof.read.normalize`` and
``ncu_roof.model.roofline.place``; each expected value is computed by hand in the test. Also the
fallback paths of the normalization (rates instead of totals, per-cycle rates, instruction counts
instead of tensor ops counters) and the measured-ceilings and device-table sources.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import cached_diagnosis

from ncu_roof.model import roofline
from ncu_roof.model.roofline import Thresholds, place
from ncu_roof.read import normalize as normalize_module
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.normalize import normalize

CLOCK = 1.5e9  # SM clock, cycles per second
INST = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
PEAK = "sm__sass_thread_inst_executed_op_{}_pred_on.sum.peak_sustained"
OPS = ("dfma", "dadd", "dmul", "ffma", "fadd", "fmul", "hfma", "hadd", "hmul")


def raw(*rows: dict[str, Any]) -> pd.DataFrame:
    """Raw launches: identity columns, then the given metrics (every instruction count 0 unless given)."""
    out = []
    for i, metrics in enumerate(rows):
        row: dict[str, Any] = {c: pd.NA for c in IDENTITY_COLUMNS}
        row.update(report="pins", id=i, kernel=f"k{i}", kernel_demangled=f"void k{i}(float *)", device="made-up GPU",
                   cc="8.0")
        row.update({INST.format(op): 0.0 for op in OPS})
        row.update(metrics)
        out.append(row)
    return pd.DataFrame(out)


def peaks(**extra: float) -> dict[str, float]:
    """Report-side peaks of a made-up GPU: per SM cycle 32 DFMA, 1024 FFMA, 2048 HFMA, DRAM 400 B/cycle
    at 2.5 GHz, L2 5,120 B/cycle at 2 GHz, L1 64 kB/cycle at 1.5 GHz."""
    return {"sm__cycles_elapsed.avg.per_second": CLOCK, PEAK.format("dfma"): 32.0, PEAK.format("ffma"): 1024.0,
            PEAK.format("hfma"): 2048.0, "dram__bytes.sum.peak_sustained": 400.0,
            "dram__cycles_elapsed.avg.per_second": 2.5e9, "lts__t_bytes.sum.peak_sustained": 5120.0,
            "lts__cycles_elapsed.avg.per_second": 2.0e9, "l1tex__t_bytes.sum.peak_sustained": 65536.0,
            "l1tex__cycles_elapsed.avg.per_second": 1.5e9, **extra}


FP64_PEAK = 2 * 32 * CLOCK  # 96 GFLOP/s: an FMA is 2 FLOPs
FP32_PEAK = 2 * 1024 * CLOCK  # 3.072 TFLOP/s
FP16_PEAK = 4 * 2048 * CLOCK  # 12.288 TFLOP/s: ncu counts an HFMA (half2) as 4 FLOPs
DRAM_PEAK = 400 * 2.5e9  # 1 TB/s
L2_PEAK = 5120 * 2.0e9  # 10.24 TB/s
L1_PEAK = 65536 * 1.5e9  # 98.3 TB/s


def one(**metrics: float) -> pd.Series:
    return place(normalize(raw({"gpu__time_duration.sum": 1e-3, **peaks(), **metrics}))).iloc[0]


# --- CUDA-core roofs ----------------------------------------------------------------------------
def test_report_peaks_are_per_cycle_peak_times_weight_times_clock() -> None:
    row = one(**{INST.format("ffma"): 1e6})
    assert row["peak_fp64_flops_per_s"] == pytest.approx(96e9, rel=1e-12) == FP64_PEAK
    assert row["peak_fp32_flops_per_s"] == pytest.approx(3.072e12, rel=1e-12)
    assert row["peak_fp16_flops_per_s"] == pytest.approx(12.288e12, rel=1e-12)
    assert row["peak_fp32_nofma_flops_per_s"] == pytest.approx(1.536e12, rel=1e-12)  # half the FMA peak
    assert row["peak_fp32_flops_per_s_src"].startswith("2 x sm__sass_thread_inst_executed_op_ffma")


@pytest.mark.parametrize("precision, fma, add, mul, peak", [
    ("fp64", "dfma", "dadd", "dmul", FP64_PEAK),
    ("fp32", "ffma", "fadd", "fmul", FP32_PEAK),
    ("fp16", "hfma", "hadd", "hmul", FP16_PEAK),
])
def test_fma_roof_and_no_fma_roof_per_precision(precision: str, fma: str, add: str, mul: str, peak: float) -> None:
    w = 4.0 if precision == "fp16" else 2.0  # FLOPs of one FMA instruction
    pure = one(**{INST.format(fma): 1e6})
    assert pure["compute_precision"] == precision and pure["compute_roof"] == f"{precision} FMA"
    assert pure[f"flops_{precision}"] == w * 1e6
    assert pure["peak_flops_per_s"] == pytest.approx(peak, rel=1e-12)
    adds = one(**{INST.format(add): 1e6})  # an add is half the FLOPs of an FMA at the same rate
    assert adds[f"flops_{precision}"] == (w / 2) * 1e6
    assert adds["peak_flops_per_s"] == pytest.approx(peak / 2, rel=1e-12)
    assert adds["compute_roof"] == f"{precision} no-FMA"
    muls = one(**{INST.format(mul): 3e6})
    assert muls["peak_flops_per_s"] == pytest.approx(peak / 2, rel=1e-12)
    # 1 FMA + 1 add: (w + w/2) FLOPs for 2 instructions that could give 2w: 75% of the FMA rate
    mixed = one(**{INST.format(fma): 1e6, INST.format(add): 1e6})
    assert mixed[f"flops_{precision}"] == 1.5 * w * 1e6
    assert mixed["peak_flops_per_s"] == pytest.approx(0.75 * peak, rel=1e-12)
    assert mixed["compute_roof"] == f"{precision} mixed (75% of FMA rate)"


@pytest.mark.parametrize("fma, add, label", [
    (9, 1, "fp32 FMA"),  # (2*9 + 1) / (2*10) = 0.95: at the FMA cut
    (17, 2, "fp32 mixed (95% of FMA rate)"),  # (34 + 2) / 38 = 0.947
    (1, 9, "fp32 no-FMA"),  # (2 + 9) / 20 = 0.55: at the no-FMA cut
    (3, 22, "fp32 mixed (56% of FMA rate)"),  # (6 + 22) / 50 = 0.56
])
def test_roof_label_cuts_at_95_and_55_percent_of_the_fma_rate(fma: int, add: int, label: str) -> None:
    share = (2 * fma + add) / (2 * (fma + add))
    row = one(**{INST.format("ffma"): fma * 1e6, INST.format("fadd"): add * 1e6})
    assert row["compute_roof"] == label
    assert row["peak_flops_per_s"] == pytest.approx(FP32_PEAK * share, rel=1e-12)


def test_roof_label_boundaries_directly() -> None:
    label = roofline._roof_label
    assert label("fp32", 0.95) == "fp32 FMA" and label("fp32", 0.9499) == "fp32 mixed (95% of FMA rate)"
    assert label("fp16", 0.55) == "fp16 no-FMA" and label("fp16", 0.5501) == "fp16 mixed (55% of FMA rate)"
    assert label("fp64", 1.0) == "fp64 FMA" and label("fp64", 0.5) == "fp64 no-FMA"


def test_fp16_fma_share_uses_ncu_weights_4_2_2() -> None:
    # 1 HFMA + 3 HMUL: 4 + 3*2 = 10 FLOPs for 4 instructions that could give 16: share 0.625
    row = one(**{INST.format("hfma"): 1e6, INST.format("hmul"): 3e6})
    assert row["flops_fp16"] == 10e6
    assert row["peak_flops_per_s"] == pytest.approx(FP16_PEAK * 10 / 16, rel=1e-12)
    assert row["flops_fp16_src"] == "4*hfma + 2*hadd + 2*hmul [fp16:ncu]"


def test_compute_precision_is_the_one_that_binds_not_the_one_with_most_flops() -> None:
    row = one(**{INST.format("dfma"): 1e6, INST.format("ffma"): 2e6, INST.format("hfma"): 0.9e6})
    # fp64 2e6, fp32 4e6, fp16 3.6e6 FLOPs; at their roofs 2e6 / 96e9 = 20.8 us, 4e6 / 3.072e12 = 1.30 us,
    # 3.6e6 / 12.288e12 = 0.29 us: FP64 binds, and only its FLOPs are placed under its roof
    assert row["compute_precision"] == "fp64" and row["flops"] == 2e6 + 4e6 + 3.6e6
    assert row["roof_flops"] == 2e6 and row["peak_flops_per_s"] == FP64_PEAK
    assert row["time_lower_bound_s"] == pytest.approx(2e6 / FP64_PEAK, rel=1e-12)
    assert row["pct_of_roof"] == pytest.approx(100 * (2e6 / 1e-3) / FP64_PEAK, rel=1e-12)  # 2.08%
    fp32 = one(**{INST.format("dfma"): 1e3, INST.format("ffma"): 2e6})  # 2 kFLOP FP64 take 20.8 ns < 1.30 us
    assert fp32["compute_precision"] == "fp32" and fp32["roof_flops"] == 4e6
    none = one()
    assert pd.isna(none["compute_precision"]) and pd.isna(none["peak_flops_per_s"])


# --- tensor roofs -------------------------------------------------------------------------------
TENSOR_TYPES = {  # variant -> (ops per SM cycle at peak, its input type)
    "src_fp16_dst_fp32": (1024.0, "fp16"), "src_bf16_dst_fp32": (1536.0, "bf16"),
    "src_tf32_dst_fp32": (512.0, "tf32"), "src_fp64": (128.0, "fp64"), "src_fp8": (4096.0, "fp8"),
    "src_int8": (8192.0, "int8"), "src_int4": (16384.0, "int4"), "src_int1": (65536.0, "int1"),
}


def tensor_metric(variant: str, suffix: str = "") -> str:
    return f"sm__ops_path_tensor_{variant}.sum{suffix}"


def test_each_tensor_input_type_gets_its_own_dense_roof() -> None:
    every_peak = {tensor_metric(v, ".peak_sustained"): p for v, (p, _) in TENSOR_TYPES.items()}
    rows = []
    for i, variant in enumerate(TENSOR_TYPES):
        ops = {tensor_metric(v): (1e9 if v == variant else 1e6 * (j + 1)) for j, v in enumerate(TENSOR_TYPES)}
        rows.append({"gpu__time_duration.sum": 1e-3, **peaks(), **every_peak, **ops, "id": i})
    table = normalize(raw(*rows))
    placed = place(table)
    total_small = sum(1e6 * (j + 1) for j in range(len(TENSOR_TYPES)))
    for i, (_variant, (per_cycle, dtype)) in enumerate(TENSOR_TYPES.items()):
        row = placed.iloc[i]
        assert row[f"peak_tensor_{dtype}_flops_per_s"] == pytest.approx(per_cycle * CLOCK, rel=1e-12)
        assert row["tensor_precision"] == dtype
        assert row["compute_precision"] == "tensor"
        # every variant counted once: the 1e9 of this row's type plus the small ones of the others
        assert row["flops_tensor"] == pytest.approx(1e9 + total_small - 1e6 * (i + 1), rel=1e-12)
        assert row["peak_flops_per_s"] == pytest.approx(per_cycle * CLOCK, rel=1e-12), dtype
        assert row["compute_roof"] == f"tensor {dtype}"
        assert row["peak_flops_src"] == "report"
        assert row["flops_tensor_src"] == "sum of sm__ops_path_tensor_* [tensor:ops]"


def test_tensor_aggregate_is_not_added_to_its_breakdowns_and_sparse_peaks_stay_out() -> None:
    agg = {tensor_metric("src_fp16_dst_fp32"): 3e9,
           tensor_metric("src_fp16_dst_fp32_sparsity_off"): 2e9,
           tensor_metric("src_fp16_dst_fp32_sparsity_on"): 1e9,
           tensor_metric("src_fp16_dst_fp32", ".peak_sustained"): 1024.0}
    row = one(**agg)
    assert row["flops_tensor"] == 3e9  # the aggregate only, not 3 + 2 + 1
    assert row["peak_tensor_fp16_flops_per_s"] == pytest.approx(1024 * CLOCK)
    split = {tensor_metric("src_fp16_dst_fp32_sparsity_off"): 2e9,
             tensor_metric("src_fp16_dst_fp32_sparsity_on"): 1e9,
             tensor_metric("src_fp16_dst_fp32_sparsity_off", ".peak_sustained"): 1024.0,
             tensor_metric("src_fp16_dst_fp32_sparsity_on", ".peak_sustained"): 2048.0}
    row = one(**split)
    assert row["flops_tensor"] == 3e9  # both halves of the split, each once
    assert row["peak_tensor_fp16_flops_per_s"] == pytest.approx(1024 * CLOCK)  # dense: the sparse 2x is no roof
    assert row["peak_flops_per_s"] == pytest.approx(1024 * CLOCK)
    two = one(**{tensor_metric("src_fp16_dst_fp32"): 1e9, tensor_metric("src_tf32_dst_fp32"): 2e9,
                 tensor_metric("src_fp16_dst_fp32", ".peak_sustained"): 1024.0,
                 tensor_metric("src_tf32_dst_fp32", ".peak_sustained"): 256.0})
    assert two["flops_tensor"] == 3e9 and two["tensor_precision"] == "tf32"
    assert two["peak_flops_per_s"] == pytest.approx(256 * CLOCK)


def test_tensor_variant_list_keeps_aggregates_only() -> None:
    cols = pd.Index([tensor_metric("src_fp16_dst_fp32"), tensor_metric("src_fp16_dst_fp32_sparsity_on"),
                     tensor_metric("src_bf16_dst_fp32", ".peak_sustained"), "gpu__time_duration.sum"])
    assert normalize_module._tensor_variants(cols) == ["src_bf16_dst_fp32", "src_fp16_dst_fp32"]
    plain = pd.Index([tensor_metric("hmma"), tensor_metric("hmma_fp16")])
    assert normalize_module._tensor_variants(plain) == ["hmma"]


def test_tensor_ops_from_per_cycle_rates_times_sm_cycles() -> None:
    row = one(**{tensor_metric("src_fp16_dst_fp32", ".per_cycle_elapsed"): 512.0, "sm__cycles_elapsed.avg": 2e6})
    assert row["flops_tensor"] == 512.0 * 2e6


def test_instruction_count_fallback_only_where_ops_counters_are_missing() -> None:
    both = {tensor_metric("src_fp16_dst_fp32"): 5e9, "sm__inst_executed_pipe_tensor.sum": 1e6}
    inst_only = {"sm__inst_executed_pipe_tensor.sum": 1e6}
    table = normalize(raw({"gpu__time_duration.sum": 1e-3, **both}, {"gpu__time_duration.sum": 1e-3, **inst_only}))
    assert table.loc[0, "flops_tensor"] == 5e9  # the ops counters win
    assert table.loc[0, "flops_tensor_src"] == "sum of sm__ops_path_tensor_* [tensor:ops]"
    assert table.loc[1, "flops_tensor"] == 4096.0 * 1e6  # CC 8.0: 4,096 FLOPs per HMMA.16816
    assert table.loc[1, "flops_tensor_src"] == "4096 x sm__inst_executed_pipe_tensor.sum (per CC) [tensor:inst]"
    assert pd.isna(table.loc[1, "tensor_precision"])
    hopper = raw({"gpu__time_duration.sum": 1e-3, **inst_only})
    hopper["cc"] = "9.0"  # unknown FLOPs per instruction: stays unknown, never 0
    assert pd.isna(normalize(hopper).loc[0, "flops_tensor"])
    volta = raw({"gpu__time_duration.sum": 1e-3, "smsp__inst_executed_pipe_tensor.sum": 1e6})
    volta["cc"] = "7.0"
    assert normalize(volta).loc[0, "flops_tensor"] == 512.0 * 1e6


def test_tensor_roof_of_unknown_input_type_assumes_fp16_from_the_device_table() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, "sm__inst_executed_pipe_tensor.sum": 1e6}))
    t["device"] = "NVIDIA A100-SXM4-80GB"
    row = place(t).iloc[0]
    assert row["compute_roof"] == "tensor (input type unknown: fp16 assumed)"
    assert row["peak_flops_src"] == "device table"
    assert row["peak_flops_per_s"] == pytest.approx(312e12, rel=0.01)


def test_measured_tensor_and_cuda_core_ceilings_win() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, **peaks(), tensor_metric("src_bf16_dst_fp32"): 1e9,
                       tensor_metric("src_bf16_dst_fp32", ".peak_sustained"): 1024.0},
                      {"gpu__time_duration.sum": 1e-3, **peaks(), INST.format("hfma"): 1e6},
                      {"gpu__time_duration.sum": 1e-3, **peaks(), INST.format("dadd"): 1e6}))
    ceilings = {"source": "c.toml", "ceilings": {"bf16_tensor_flops_per_s": 7e13, "fp16_flops_per_s": 9e12,
                                                 "fp64_flops_per_s": 8e10, "dram_bytes_per_s": 9e11,
                                                 "l2_bytes_per_s": 5e12, "l1_bytes_per_s": 6e13}}
    placed = place(t, ceilings)
    assert placed.loc[0, "peak_flops_per_s"] == 7e13 and placed.loc[0, "peak_flops_src"] == "measured (c.toml)"
    assert placed.loc[1, "peak_flops_per_s"] == 9e12 and placed.loc[1, "peak_flops_src"] == "measured (c.toml)"
    assert placed.loc[2, "peak_flops_per_s"] == 4e10  # adds only: half the measured FMA ceiling
    assert (placed["dram_roof_bytes_per_s"] == 9e11).all() and (placed["dram_peak_bytes_per_s"] == DRAM_PEAK).all()
    assert (placed["l2_roof_bytes_per_s"] == 5e12).all() and (placed["l1_roof_bytes_per_s"] == 6e13).all()
    assert (placed["l2_roof_src"] == "measured (c.toml)").all()


# --- memory roofs -------------------------------------------------------------------------------
def test_dram_l2_l1_roofs_and_the_binding_level() -> None:
    row = one(**{INST.format("ffma"): 1e9, "dram__bytes.sum": 1e8, "lts__t_bytes.sum": 4e9,
                 "l1tex__t_bytes.sum": 2e10})
    assert row["dram_peak_bytes_per_s"] == pytest.approx(DRAM_PEAK, rel=1e-12)
    assert row["dram_roof_bytes_per_s"] == pytest.approx(0.88 * DRAM_PEAK, rel=1e-12)
    assert row["dram_roof_src"] == "report x 88% (practical, not measured)"
    assert row["l2_roof_bytes_per_s"] == pytest.approx(L2_PEAK, rel=1e-12) and row["l2_roof_src"] == "report"
    assert row["l1_roof_bytes_per_s"] == pytest.approx(L1_PEAK, rel=1e-12)
    # times at the roofs: compute 2e9 / 3.072e12 = 651 us, DRAM 1e8 / 880e9 = 114 us,
    # L2 4e9 / 10.24e12 = 391 us, L1 2e10 / 98.3e12 = 203 us: compute binds
    assert row["time_lower_bound_s"] == pytest.approx(2e9 / FP32_PEAK, rel=1e-12)
    assert row["binding"] == "compute" and row["bound"] == "compute"
    assert row["intensity_l2"] == pytest.approx(2e9 / 4e9) and row["intensity_l1"] == pytest.approx(0.1)
    assert row["attainable_l2_flops_per_s"] == pytest.approx(min(FP32_PEAK, 0.5 * L2_PEAK))
    assert row["attainable_l1_flops_per_s"] == pytest.approx(min(FP32_PEAK, 0.1 * L1_PEAK))
    assert row["attainable_dram_flops_per_s"] == pytest.approx(min(FP32_PEAK, 20 * 0.88 * DRAM_PEAK))
    assert row["achieved_l2_bytes_per_s"] == pytest.approx(4e12) and row["achieved_l1_bytes_per_s"] == 2e13
    assert row["ridge_dram"] == pytest.approx(FP32_PEAK / (0.88 * DRAM_PEAK))
    assert row["headroom_s"] == pytest.approx(1e-3 - 2e9 / FP32_PEAK)
    # L2 binds when its term is largest: 8e9 B at 10.24 TB/s = 781 us
    l2 = one(**{INST.format("ffma"): 1e9, "dram__bytes.sum": 1e8, "lts__t_bytes.sum": 8e9})
    assert l2["binding"] == "l2" and l2["bound"] == "memory"
    assert l2["time_lower_bound_s"] == pytest.approx(8e9 / L2_PEAK)
    assert l2["attainable_flops_per_s"] == pytest.approx(2e9 / 8e9 * L2_PEAK)
    assert l2["pct_of_roof"] == pytest.approx(100 * (2e9 / 1e-3) / (0.25 * L2_PEAK))


def test_dram_peak_from_read_peak_and_from_the_device_table() -> None:
    row = place(normalize(raw({"gpu__time_duration.sum": 1e-3, "dram__bytes_read.sum.peak_sustained": 100.0,
                               "dram__cycles_elapsed.avg.per_second": 3e9, "dram__bytes.sum": 1e6}))).iloc[0]
    assert row["dram_peak_bytes_per_s"] == pytest.approx(3e11)
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, "dram__bytes.sum": 1e6}))
    t["device"] = "NVIDIA GeForce RTX 5070"
    row = place(t).iloc[0]
    assert row["dram_peak_bytes_per_s"] == 672e9
    assert row["dram_roof_src"] == "device table x 88% (practical, not measured)"
    assert place(t, thresholds=Thresholds(practical_dram_fraction=0.5)).iloc[0]["dram_roof_bytes_per_s"] == 336e9


def test_percent_of_roof_on_the_bandwidth_basis_for_kernels_without_flops() -> None:
    row = one(**{"dram__bytes.sum": 4.4e8})  # 440 GB/s against 880 GB/s practical
    assert row["pct_basis"] == "dram bandwidth"
    assert row["pct_of_roof"] == pytest.approx(50.0, rel=1e-12)
    assert row["bound"] == "memory" and row["binding"] == "dram"
    assert row["time_lower_bound_s"] == pytest.approx(4.4e8 / 8.8e11)
    assert np.isnan(row["intensity_dram"]) or row["intensity_dram"] == 0


def test_percent_of_roof_on_the_flops_basis() -> None:
    row = one(**{INST.format("ffma"): 0.5e9, "dram__bytes.sum": 1e6})  # 1 GFLOP in 1 ms: 1 TFLOP/s
    assert row["pct_basis"] == "flops"
    assert row["pct_of_roof"] == pytest.approx(100 * 1e12 / FP32_PEAK, rel=1e-12)


def test_no_roof_marks_missing_roof() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, "dram__bytes.sum": 1e6}))
    assert place(t).iloc[0]["missing"] == "l2_bytes,l1_bytes,roof"
    assert place(t).iloc[0]["bound"] == "unknown"


# --- normalization fallbacks --------------------------------------------------------------------
def test_rates_instead_of_totals_are_multiplied_by_the_duration() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 2e-3, "dram__bytes.sum.per_second": 5e11,
                       "lts__t_bytes.sum.per_second": 2e12, "l1tex__t_bytes.sum.per_second": 3e12}))
    assert t.loc[0, "dram_bytes"] == pytest.approx(1e9, rel=1e-12)
    assert t.loc[0, "dram_bytes_src"] == "dram__bytes.sum.per_second x time"
    assert t.loc[0, "l2_bytes"] == pytest.approx(4e9, rel=1e-12)
    assert t.loc[0, "l1_bytes"] == pytest.approx(6e9, rel=1e-12)
    rw = normalize(raw({"gpu__time_duration.sum": 2e-3, "dram__bytes_read.sum.per_second": 3e11,
                        "dram__bytes_write.sum.per_second": 1e11}))
    assert rw.loc[0, "dram_bytes"] == pytest.approx(8e8, rel=1e-12)


def test_totals_win_over_rates_and_sectors_are_32_bytes() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 2e-3, "dram__bytes.sum.per_second": 5e11,
                       "dram__sectors_read.sum": 1e6, "dram__sectors_write.sum": 5e5, "lts__t_sectors.sum": 2e6}))
    assert t.loc[0, "dram_bytes"] == 32 * 1.5e6 and t.loc[0, "l2_bytes"] == 32 * 2e6


def test_time_from_cycles_over_clock_and_instructions_from_per_cycle_rates() -> None:
    frame = raw({"sm__cycles_elapsed.avg": 3e6, "sm__cycles_elapsed.avg.per_second": 1.5e9,
                 "smsp__cycles_elapsed.avg": 2.8e6,
                 "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed": 10.0})
    frame = frame.drop(columns=[INST.format("ffma")])
    t = normalize(frame)
    assert t.loc[0, "time_s"] == pytest.approx(2e-3, rel=1e-12)
    assert t.loc[0, "inst_ffma"] == pytest.approx(10.0 * 2.8e6)
    assert t.loc[0, "flops_fp32"] == pytest.approx(2 * 10.0 * 2.8e6)
    derived = raw({"gpu__time_duration.sum": 1e-3, "smsp__cycles_elapsed.avg": 1e6,
                   "derived__smsp__sass_thread_inst_executed_op_hfma_pred_on_x4": 8.0})
    derived = derived.drop(columns=[INST.format("hfma")])
    assert normalize(derived).loc[0, "inst_hfma"] == pytest.approx(8.0 / 4 * 1e6)


def test_grid_and_block_size_from_their_dims() -> None:
    frame = raw({"gpu__time_duration.sum": 1e-3})
    frame["grid_dim"], frame["block_dim"] = "(64, 2, 3)", "(256, 1, 1)"
    t = normalize(frame)
    assert t.loc[0, "grid_size"] == 384 and t.loc[0, "block_size"] == 256


def test_l2_bytes_paired_with_the_roof_of_their_definition() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, "lts__t_bytes.sum": 1e9,
                       "lts__lts2xbar_cycles_active.sum": 1e7,
                       "lts__lts2xbar_cycles_active.sum.peak_sustained": 96.0,
                       "lts__cycles_elapsed.avg.per_second": 2e9}))
    assert t.loc[0, "l2_bytes"] == 32 * 1e7  # lts2xbar: the definition the roof exists for
    assert t.loc[0, "peak_l2_bytes_per_s"] == pytest.approx(32 * 96.0 * 2e9)
    assert t.loc[0, "l2_bytes_src"].endswith("[l2:lts2xbar]")


def test_zero_or_missing_values_stay_unknown_not_infinite() -> None:
    zero_time = place(normalize(raw({"gpu__time_duration.sum": 0.0, **peaks(), "dram__bytes.sum": 1e6,
                                     INST.format("ffma"): 1e6}))).iloc[0]
    assert np.isnan(zero_time["achieved_flops_per_s"]) and np.isnan(zero_time["achieved_dram_bytes_per_s"])
    assert np.isnan(zero_time["pct_of_roof"])
    zero_bytes = one(**{"dram__bytes.sum": 0.0, INST.format("ffma"): 1e6})
    assert np.isnan(zero_bytes["intensity_dram"]) and zero_bytes["pct_basis"] == "flops"
    nothing = place(normalize(raw({"gpu__time_duration.sum": 1e-3}))).iloc[0]
    assert nothing["pct_basis"] is None and np.isnan(nothing["pct_of_roof"])
    assert nothing["missing"] == "dram_bytes,l2_bytes,l1_bytes"  # no work known: no roof to ask for
    everything = one(**{"dram__bytes.sum": 1e6, "lts__t_bytes.sum": 1e6, "l1tex__t_bytes.sum": 1e6,
                        INST.format("ffma"): 1e6})
    assert everything["missing"] == ""


def test_a_zero_report_peak_falls_through_to_the_device_table() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, **peaks(**{PEAK.format("ffma"): 0.0}),
                       INST.format("ffma"): 1e6}))
    t["device"] = "NVIDIA GeForce RTX 5070"
    row = place(t).iloc[0]  # the table's 30.9 TFLOP/s is at the 2512 MHz boost clock; this SM ran at 1500 MHz
    table = "device table at the measured 1500 MHz SM clock (2512 MHz boost)"
    assert row["peak_flops_src"] == table and row["peak_flops_per_s"] == pytest.approx(30.9e12 * 1.5 / 2.512)
    measured_zero = place(t, {"ceilings": {"fp32_flops_per_s": 0}}).iloc[0]
    assert measured_zero["peak_flops_src"] == table


def test_unknown_device_and_no_peaks_leave_the_roof_unknown() -> None:
    row = place(normalize(raw({"gpu__time_duration.sum": 1e-3, INST.format("ffma"): 1e6,
                               "dram__bytes.sum": 1e6}))).iloc[0]
    assert np.isnan(row["peak_flops_per_s"]) and pd.isna(row["peak_flops_src"])
    assert np.isnan(row["dram_roof_bytes_per_s"]) and row["dram_roof_src"] is None
    assert row["bound"] == "unknown" and row["missing"].endswith("roof")


def test_l2_pairing_per_launch_and_roof_without_traffic() -> None:
    both = {"lts__t_bytes.sum": 1e9, "lts__lts2xbar_cycles_active.sum": 1e7,
            "lts__lts2xbar_cycles_active.sum.peak_sustained": 96.0, "lts__cycles_elapsed.avg.per_second": 2e9}
    only_bytes = {"lts__t_bytes.sum": 3e9, "lts__lts2xbar_cycles_active.sum": np.nan,
                  "lts__lts2xbar_cycles_active.sum.peak_sustained": np.nan, "lts__cycles_elapsed.avg.per_second": 2e9}
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, **both}, {"gpu__time_duration.sum": 1e-3, **only_bytes}))
    assert list(t["l2_bytes"]) == [32 * 1e7, 3e9]  # the second launch has bytes of one definition, no roof
    assert t.loc[1, "l2_bytes_src"] == "lts__t_bytes.sum [l2:lts__t_bytes]"
    assert np.isnan(t.loc[1, "peak_l2_bytes_per_s"])
    roof_only = normalize(raw({"gpu__time_duration.sum": 1e-3, "lts__t_bytes.sum.peak_sustained": 1024.0,
                               "lts__cycles_elapsed.avg.per_second": 2e9}))
    assert roof_only.loc[0, "peak_l2_bytes_per_s"] == pytest.approx(2.048e12) and np.isnan(roof_only.loc[0, "l2_bytes"])
    assert normalize_module.definition_tag("x [l2:lts2xbar]") == "l2:lts2xbar"
    assert normalize_module.definition_tag("no tag") is None and normalize_module.definition_tag(None) is None


def test_zero_tensor_ops_have_no_input_type() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, tensor_metric("src_fp16_dst_fp32"): 0.0,
                       tensor_metric("src_tf32_dst_fp32"): 0.0},
                      {"gpu__time_duration.sum": 1e-3, tensor_metric("src_fp16_dst_fp32"): 2.0,
                       tensor_metric("src_tf32_dst_fp32"): np.nan}))
    assert t.loc[0, "flops_tensor"] == 0.0 and pd.isna(t.loc[0, "tensor_precision"])
    assert t.loc[1, "flops_tensor"] == 2.0 and t.loc[1, "tensor_precision"] == "fp16"


def test_ratio_source_ignores_a_zero_denominator() -> None:
    t = normalize(raw({"sm__cycles_elapsed.avg": 3e6, "sm__cycles_elapsed.avg.per_second": 0.0}))
    assert np.isnan(t.loc[0, "time_s"])


def test_h100_report_roofs_from_its_own_metrics_read_independently(realdata: Path) -> None:
    """The H100 SiLU report: the roofs recomputed from the raw metrics that ``ncu_report`` gives."""
    ncu_report = pytest.importorskip("ncu_report")
    from ncu_roof.diagnosis import diagnose_paths
    from ncu_roof.read.table import load_table

    path = realdata / "AlpriElse__cs599k" / "2025-04-21-vector-based.ncu-rep"
    action = ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(0)

    def m(name: str) -> float:
        return float(action.metric_by_name(name).as_double())

    sm_clock = m("sm__cycles_elapsed.avg.per_second")  # 1.100 GHz
    fp32 = 2 * m(PEAK.format("ffma")) * sm_clock  # 2 x 14,592 FFMA/cycle: 32.1 TFLOP/s
    fp64 = 2 * m(PEAK.format("dfma")) * sm_clock
    fp16 = 4 * m(PEAK.format("hfma")) * sm_clock
    dram_peak = m("dram__bytes.sum.peak_sustained") * m("dram__cycles_elapsed.avg.per_second")  # 2.04 TB/s
    time_s = m("gpu__time_duration.sum") * 1e-9
    dram = m("dram__bytes_read.sum") + m("dram__bytes_write.sum")
    placed = diagnose_paths(path).placed.sort_values("id")
    row = placed.iloc[0]
    assert fp32 == pytest.approx(32.1e12, rel=1e-3) and dram_peak == pytest.approx(2.038e12, rel=1e-3)
    assert row["peak_fp32_flops_per_s"] == pytest.approx(fp32, rel=1e-9)
    assert row["peak_fp64_flops_per_s"] == pytest.approx(fp64, rel=1e-9)
    assert row["peak_fp16_flops_per_s"] == pytest.approx(fp16, rel=1e-9)
    assert row["peak_fp32_nofma_flops_per_s"] == pytest.approx(fp32 / 2, rel=1e-9)
    tidy = load_table(path).sort_values("id")
    assert tidy["peak_dram_bytes_per_s"].iloc[0] == pytest.approx(dram_peak, rel=1e-9)
    # the roof drawn and judged is one number for the device: the median of the three launches' peaks
    # (2.03833, 2.03864 and 2.03863 TB/s: each launch's DRAM clock measured a little differently)
    median = tidy["peak_dram_bytes_per_s"].median()
    assert placed["peak_dram_bytes_per_s"].tolist() == [median] * 3
    assert placed["dram_peak_bytes_per_s"].tolist() == [median] * 3
    assert median == pytest.approx(dram_peak, rel=2e-4)
    assert row["dram_roof_bytes_per_s"] == pytest.approx(0.88 * median, rel=1e-9)
    assert row["time_s"] == pytest.approx(time_s, rel=1e-9) and row["dram_bytes"] == pytest.approx(dram, rel=1e-9)
    assert row["achieved_dram_bytes_per_s"] == pytest.approx(dram / time_s, rel=1e-9)
    # the intensity of the FLOPs held to the roof: those of the binding precision
    precision = row["compute_precision"]
    assert row["roof_flops"] == row[f"flops_{precision}"] > 0
    assert row["intensity_dram"] == pytest.approx(row["roof_flops"] / dram, rel=1e-9)


def test_binding_level_with_zero_bytes_and_unknown_flops() -> None:
    frame = raw({"gpu__time_duration.sum": 1e-3, **peaks(), "dram__bytes.sum": 0.0})
    frame = frame.drop(columns=[INST.format(op) for op in OPS])
    row = place(normalize(frame)).iloc[0]
    assert np.isnan(row["flops"]) and row["time_lower_bound_s"] == 0.0 and row["binding"] == "dram"


def test_each_launch_falls_back_to_the_next_source_it_has() -> None:
    # launch 0 has dram__bytes.sum, launch 1 only read + write: both are filled, each from its own source
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, "dram__bytes.sum": 5e6, "dram__bytes_read.sum": np.nan,
                       "dram__bytes_write.sum": np.nan},
                      {"gpu__time_duration.sum": 1e-3, "dram__bytes.sum": np.nan, "dram__bytes_read.sum": 3e6,
                       "dram__bytes_write.sum": 1e6}))
    assert list(t["dram_bytes"]) == [5e6, 4e6]
    assert list(t["dram_bytes_src"]) == ["dram__bytes.sum", "dram__bytes_read.sum + dram__bytes_write.sum"]


def test_tensor_ops_columns_without_values_fall_back_to_instructions() -> None:
    t = normalize(raw({"gpu__time_duration.sum": 1e-3, tensor_metric("src_fp16_dst_fp32"): 7e9,
                       "sm__inst_executed_pipe_tensor.sum": 1e6},
                      {"gpu__time_duration.sum": 1e-3, tensor_metric("src_fp16_dst_fp32"): np.nan,
                       "sm__inst_executed_pipe_tensor.sum": 1e6}))
    assert list(t["flops_tensor"]) == [7e9, 4096.0 * 1e6]
    assert t.loc[1, "flops_tensor_src"].endswith("[tensor:inst]")


def test_a_geforce_kernel_with_fp32_and_fp64_flops_is_held_to_the_fp64_roof(realdata: Path) -> None:
    """jestes15's fill_vector (RTX 4070 Ti, FP64 at 1/64 of FP32): 899,648 FP32 FLOPs and 768,000
    FP64 ones (all DMUL). At their roofs FP32 takes 899,648 / 19.8 TFLOP/s = 45 ns, FP64 768,000 /
    271 GFLOP/s (no-FMA: half of 542) = 2.83 us: FP64 binds, and its FLOPs are placed under its roof,
    (768,000 / 16.5 us) / 271 GFLOP/s = 17% of it (it was 1%: all 1.67 MFLOP under the FP32 roof)."""
    from ncu_roof.diagnosis import diagnose_paths
    from ncu_roof.render.summary import roof_lines

    d = diagnose_paths(realdata / "jestes15__EE384_FinalProject/profile_output.83e15dfe71.ncu-rep")
    row = d.placed[d.placed["kernel"] == "fill_vector"].iloc[0]
    assert (row["flops_fp32"], row["flops_fp64"], row["inst_dmul"]) == (899_648, 768_000, 768_000)
    assert row["compute_precision"] == "fp64" and row["compute_roof"] == "fp64 no-FMA"
    assert row["peak_flops_per_s"] == pytest.approx(row["peak_fp64_flops_per_s"] / 2, rel=1e-12)
    assert row["peak_flops_per_s"] == pytest.approx(271.0e9, rel=1e-3) and row["roof_flops"] == 768_000
    assert row["time_lower_bound_s"] == pytest.approx(768_000 / row["peak_flops_per_s"], rel=1e-12)  # 2.83 us
    assert row["pct_of_roof"] == pytest.approx(100 * 768_000 / row["time_s"] / row["peak_flops_per_s"], rel=1e-12)
    assert round(row["pct_of_roof"]) == 17
    # each roof says whose % of roof is against it (kernels are held to two here)
    assert roof_lines(d.placed)[0].startswith(
        "Roofs on NVIDIA GeForce RTX 4070 Ti: fp64 no-FMA 271 GFLOP/s (report; % of roof of fill_vector); fp32 "
        "mixed (57% of FMA rate) 19.8 TFLOP/s (report; % of roof of generate_encoded_signal, DeviceScanKernel, "
        "linspace); DRAM 423 GB/s")


def test_device_table_peaks_are_taken_at_the_measured_sm_clock(realdata: Path) -> None:
    """wangzy's A100 export (expert read 4, row 49): no peaks in the file, the clock locked to base (765 MHz,
    sm__cycles_elapsed.avg.per_second). The table's 312 TFLOP/s is at the 1410 MHz boost clock: at 765 MHz the
    tensor roof is 169 TFLOP/s, and cuBLAS's s16816gemm (161 TFLOP/s) is at 95% of it, not 51% with 51.9 ms to
    win. A clock within 2% of the boost clock keeps the table's figure."""
    d = cached_diagnosis(realdata / "wangzy0327__cuda-roofline" / "output_A100.csv")
    cublas = d.placed[d.placed["kernel"].str.startswith("ampere_s16816gemm")].iloc[0]
    assert cublas["peak_flops_per_s"] == pytest.approx(312e12 * cublas["sm_clock_hz"] / 1.41e9, rel=1e-9)
    assert cublas["peak_flops_per_s"] == pytest.approx(169.3e12, rel=2e-3)
    assert cublas["peak_flops_src"] == "device table at the measured 765 MHz SM clock (1410 MHz boost)"
    assert cublas["pct_of_roof"] == pytest.approx(94.9, abs=0.2)
    assert not [f for f in d.findings if f.rule == "below-roof"]


def test_tensor_instructions_count_the_shape_the_kernel_name_spells(realdata: Path) -> None:
    """The same export (row 50): the CUTLASS Kernel<Gemm> issues GemmShape<16, 8, 8> mma.sync instructions (the
    Turing shape, 2,048 FLOPs each), not the A100's HMMA.16816 (4,096): 17.2 TFLOP, the same as cuBLAS's GEMM,
    not 34.4 (154% of its roof). With the work equal, same-work-peer finds cuBLAS 5.74x lighter on DRAM. A V100
    (output.csv) keeps its compute capability's count: Volta issues its 8x8x4 per quad pair."""
    d = cached_diagnosis(realdata / "wangzy0327__cuda-roofline" / "output_A100.csv")
    cutlass = d.placed[d.placed["kernel"] == "Kernel<Gemm>"].iloc[0]
    assert cutlass["flops_tensor_src"] == ("2048 x sm__inst_executed_pipe_tensor.sum (the instruction shape in the "
                                           "kernel's name) [tensor:inst]")
    cublas = d.placed[d.placed["kernel"].str.startswith("ampere_s16816gemm")].iloc[0]
    assert cutlass["flops"] == pytest.approx(cublas["flops"], rel=1e-6)
    [peer] = [f for f in d.findings if f.rule == "same-work-peer"]
    assert peer.time_at_stake_s == pytest.approx(148.5e-3, rel=1e-3)
    assert "It moves 5.74x its DRAM, 1.7x L2, 1.31x L1 bytes" in peer.message
    v100 = cached_diagnosis(realdata / "wangzy0327__cuda-roofline" / "output.csv")
    assert v100.placed[v100.placed["kernel"] == "Kernel<Gemm>"].iloc[0]["flops_tensor_src"] == (
        "512 x sm__inst_executed_pipe_tensor.sum (per CC) [tensor:inst]")
    # its CUTLASS GEMM moves 8.16x cuBLAS's DRAM bytes at 0.978x the L2 bytes (GemmIdentityThreadblockSwizzle<1>,
    # grid (160, 160)): the blocks' order, not the template's tiles (expert read 4, row 46)
    [swizzle] = [f for f in v100.findings if f.rule == "same-work-peer"]
    assert swizzle.message.endswith("A CUTLASS kernel: change its block order (CUTLASS's ThreadblockSwizzle<4 or 8>, "
                                    "cublasLt's CTA swizzling): the same L2 traffic, more DRAM.")
