"""The headroom is above the least time a launch's work needs, an upper bound on what a fix can win.
Where FP64 binds, the roofline's bound holds its FP64 FLOPs at the FP64 roof, but the fixes the
fp64-pipe rule advises remove FP64 work: the Newton chains divisions compile to, and, on a consumer
FP64 rate, the FP64 rate itself (FP32). Measured after-kernels beat the FP64 bound by both (pairs
in ../shared/truth/pairs.toml); the headroom allows them. Placement and % of roof stay on the FP64 roof."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import REALDATA

from ncu_roof.diagnosis import diagnose_paths
from ncu_roof.model.roofline import division_share
from ncu_roof.render.text import render_text

MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"


def _row(path: Path, launch: int):  # type: ignore[no-untyped-def]
    d = diagnose_paths(path, lines=False)
    return d, d.placed[d.placed["id"] == launch].iloc[0]


def test_consumer_fp64_kernel_headroom_allows_fp32(realdata: Path) -> None:
    """SimonLuder's Numba reconstruct_svd_cuda_1 (RTX 2070, FP64 at 1/32): 27 GFLOP of DADD at the
    FP64 no-FMA roof (87.9 GFLOP/s) need 307 ms, and the point stays there (43% of it). In FP32 they
    and the 54 GFLOP of FMULs need 14.4 ms; DRAM's 11.5 GB at 380 GB/s (30.2 ms) is then the least
    time: 685 ms of headroom, above the 566 ms v2 won (FP32 accumulator and tiles, FLOPs scaled;
    it was 408 ms) and the fp64-pipe stake (458 ms)."""
    d, row = _row(realdata / "SimonLuder__hs22-mc2" / "v1.ncu-rep", 0)
    assert row["compute_roof"] == "fp64 no-FMA" and round(row["pct_of_roof"]) == 43
    assert row["time_lower_bound_s"] == pytest.approx(27e9 / (row["peak_fp64_flops_per_s"] / 2), rel=1e-9)
    dram = 11_485_556_064 / row["dram_roof_bytes_per_s"]
    assert dram == pytest.approx(30.2e-3, rel=1e-3)
    assert row["headroom_s"] == pytest.approx(0.715138784 - dram, rel=1e-12)
    assert row["headroom_s"] > 0.5655  # the measured win of t4.svd.v1-v2
    stake = next(f.time_at_stake_s for f in d.findings if f.rule == "fp64-pipe")
    assert stake is not None and stake <= row["headroom_s"]


def test_consumer_fp64_kernel_with_divisions(ncu_examples: Path) -> None:
    """Nsight Compute's sobelDouble (RTX A4500, 1/64): 98,304 MUFU.RCP64H start chains that are 51%
    of its FP64 instructions; the rest in FP32 need 3.5 us, DRAM 7.9 us: 620 us of headroom, above
    the 596 us sobelFloat won (it was 209 us, the FP64 roofline's 419 us bound)."""
    _, row = _row(ncu_examples / "instructionMix" / "sobelDouble.ncu-rep", 0)
    assert division_share(row["inst_fp64_rcp"], row["inst_dfma"], row["inst_dadd"], row["inst_dmul"]) == \
        pytest.approx(0.511, abs=0.001)
    assert row["time_lower_bound_s"] == pytest.approx(419.2e-6, rel=1e-3)
    dram = 4_231_808 / row["dram_roof_bytes_per_s"]
    assert row["headroom_s"] == pytest.approx(628.032e-6 - dram, rel=1e-12)
    assert row["headroom_s"] >= 596.16e-6  # the measured win of ncuex.instmix


def test_datacenter_fp64_kernel_loses_only_its_division_chains(realdata: Path) -> None:
    """miniWeather's compute_tendencies_x_279 (V100, FP64 at 1/2: FP32 is not the fix): divisions
    are 74% of its FP64 work; the rest at the FP64 roof needs 1.1 ms, DRAM 3.16 ms binds: 3.03 ms of
    headroom (it was 2.13), above the 2.71 ms MW_DivToMult won and equal to the fp64-pipe stake."""
    d, row = _row(MW, 2)
    share = division_share(row["inst_fp64_rcp"], row["inst_dfma"], row["inst_dadd"], row["inst_dmul"])
    assert share == pytest.approx(0.74, abs=0.01)
    fp64 = row["flops_fp64"] * (1 - share) / row["peak_flops_per_s"]
    dram = 2_477_022_176 / row["dram_roof_bytes_per_s"]
    assert fp64 == pytest.approx(1.06e-3, rel=0.01) and dram == pytest.approx(3.16e-3, rel=1e-3)
    assert row["headroom_s"] == pytest.approx(6.190944e-3 - dram, rel=1e-12)
    assert row["headroom_s"] >= 2.708704e-3  # the measured win of mw.tendencies_x_279
    assert next(f.time_at_stake_s for f in d.findings if f.rule == "fp64-pipe") == pytest.approx(row["headroom_s"])


def test_other_launches_keep_the_roofline_headroom(realdata: Path) -> None:
    """Launches not held to the FP64 roof: the headroom is the time above the roofline's bound."""
    for path in (MW, realdata / "jestes15__EE384_FinalProject" / "profile_output.83e15dfe71.ncu-rep",
                 realdata / "princ0301__cuda_gpu_kernel" / "matmul_naive.ncu-rep"):
        placed = diagnose_paths(path, lines=False).placed
        others = placed[placed["compute_precision"] != "fp64"]
        assert len(others)
        expected = (others["time_s"] - others["time_lower_bound_s"]).clip(lower=0.0)
        assert np.allclose(others["headroom_s"], expected, equal_nan=True), path.name


def test_division_share_of_numbers_and_series() -> None:
    import pandas as pd

    assert division_share(1.0, 32.0 * 4, 32.0 * 4, 0.0) == pytest.approx(1.0)  # 8 per division of 8 warp insts
    assert division_share(1.0, 32.0 * 16, 0.0, 0.0) == pytest.approx(0.5)
    assert division_share(0.0, 32.0, 0.0, 0.0) == 0.0 and division_share(np.nan, 32.0, 0.0, 0.0) == 0.0
    assert division_share(1.0, 0.0, 0.0, 0.0) == 0.0
    got = division_share(pd.Series([1.0, np.nan, 2.0]), pd.Series([32.0 * 16, 32.0, 0.0]), pd.Series([0.0] * 3),
                         pd.Series([0.0] * 3))
    assert got.tolist() == [0.5, 0.0, 0.0]


def test_local_memory_traffic_is_not_the_work_s_bytes(realdata: Path) -> None:
    """AshunFeiyu gemm_v9 (RTX 3080, 8.85 ms): its 5.18 GB of DRAM traffic is mostly spills (177M local
    sectors missed L1: 5.68 GB, 91% of L2's 6.22 GB). At the DRAM roof those bytes need 8.00 ms, a
    headroom of 852 us under the 8.78 ms cuBLAS wins on the same work. Without the local share (DRAM's
    bytes less L2's lost share, 467 MB at 647 GB/s) the least time is 706 us: 8.15 ms of headroom.
    The roofline's bound (time_lower_bound_s) and % of roof stay on the bytes measured."""
    d, row = _row(realdata / "AshunFeiyu__Cuda_Gemm_Practice" / "gemm_v9.ncu-rep", 0)
    assert row["kernel"] == "gemm"
    past = (119269458.0 + 58076004.0) * 32
    dram = 5179735424.0 * (1 - past / 6224561344.0)
    least = max(dram / row["dram_roof_bytes_per_s"], row["roof_flops"] / row["peak_flops_per_s"])
    assert row["headroom_s"] == pytest.approx(row["time_s"] - least, rel=1e-12)
    assert row["headroom_s"] == pytest.approx(8.147e-3, abs=1e-6)
    assert row["time_lower_bound_s"] == pytest.approx(5179735424.0 / row["dram_roof_bytes_per_s"], rel=1e-12)


def test_a_kernel_bound_by_its_memory_instructions_is_on_the_memory_side(realdata: Path) -> None:
    """princ0301 matMul (naive SGEMM, RTX 2050): the LSU pipe 99% busy issuing a load per operand of
    every FMA, L1 98%, DRAM 32%. ncu counts the LSU pipe in the SM's (compute) throughput, but the work
    that binds is memory accesses: its bound reads memory, its limiter the LSU pipe."""
    d = diagnose_paths(realdata / "princ0301__cuda_gpu_kernel" / "matmul_naive.ncu-rep", lines=False)
    row = d.placed.iloc[0]
    assert (row["binding_unit"], row["bound"]) == ("pipe_lsu", "memory")
    assert row["binding_unit_share"] == pytest.approx(0.99, abs=0.005)
    assert "memory    LSU 99%" in render_text(d)
    alu = diagnose_paths(realdata / "aplainjane__CUDA_Learning" / "report.ncu-rep", lines=False).placed
    assert alu.set_index("kernel").loc["reduceNeighbored", ["binding_unit", "bound"]].tolist() == ["pipe_alu",
                                                                                                  "compute"]
