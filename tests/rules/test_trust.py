"""Advice you can trust on every kernel (issue 34): the cases a GPU engineer judged wrong, on the real
reports they came from. Each states the number the model gives and why it is the right one."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cached_diagnosis

from ncu_roof.model.chains import find_chains
from ncu_roof.model.roofline import Thresholds
from ncu_roof.rules import limiter
from ncu_roof.rules.common import is_convolution
from ncu_roof.rules.signals import no_tensor_signal
from tests.rules.test_thresholds import placed, run


def _of(d: object, rule: str, kernel: str) -> list[object]:
    return [f for f in d.findings if f.rule == rule and kernel in f.kernels]  # type: ignore[attr-defined]


def test_a_reuse_fix_is_priced_by_the_tiled_kernel_not_by_the_binding_unit(realdata: Path) -> None:
    """Syswea wmma_gemm (T4): 8.31 GB moved, 83x a matmul's compulsory bytes, L1/TEX binding at 46%.
    Tiling it is a rewrite: 128 x 128 tiles move 2.18 GB, 7.75 ms at the DRAM roof, and its FLOPs need
    5.74 ms at the tensor roof, so at most 170.3 - 7.75 = 162.5 ms are at stake (was 0 ns: the DRAM
    roof does not bind)."""
    d = cached_diagnosis(next((realdata / "Syswea__cuda-fused-linear-layer").glob("*.ncu-rep")))
    [f] = _of(d, "matrix-reuse", "wmma_gemm")
    assert f.evidence["tiled_s"] == pytest.approx(7.75e-3, rel=2e-3)
    assert f.evidence["flops_s"] == pytest.approx(5.741e-3, rel=1e-3)
    assert f.time_at_stake_s == pytest.approx(0.17027 - f.evidence["tiled_s"], rel=1e-3)
    assert f.time_at_stake_s >= 100e-3 and d.findings[0] is f
    assert "(N about 4096, a guess)" in f.message and "re-reading its operands (L1/TEX 92% busy)" in f.message


def test_busy_shares_have_one_basis_in_both_esmm_reports(realdata: Path) -> None:
    """one_blocktiling (A10G) is in two reports: one holds ncu's pipe shares over elapsed cycles, the
    other lacks sm__cycles_elapsed. Both read LSU 64.8% and L1/TEX 64.8% (ncu's elapsed figures),
    where they once read 54.5% and 77%."""
    shares = []
    for name in ("profile_output.a62323b2dd.ncu-rep", "profile.ee5ce73827.ncu-rep"):
        d = cached_diagnosis(realdata / "AveryClapp__ESMM-Research" / name)
        row = d.placed[d.placed["kernel"] == "one_blocktiling"].iloc[0]
        shares.append((round(row["pipe_lsu_pct"], 1), round(row["unit_l1_s"] / row["time_s"] * 100, 1)))
    assert shares == [(64.8, 64.8), (64.8, 64.8)]


def test_alternatives_in_a_row_are_not_a_pipeline(realdata: Path) -> None:
    """reduceInteger (with --device): nine alternative reductions of one array, latency-bound by the
    table, once told "3 DRAM-bound kernels, each reading what the one before wrote"."""
    csv = realdata / "Lashi0812__CudaProgramming" / "ncu_reduceInteger.csv"
    d = cached_diagnosis(csv, device="Tesla T4")
    assert find_chains(d.placed) == [] and not [f for f in d.findings if f.rule == "fusion-chain"]


def test_serialized_l1_accesses_are_told_to_coalesce_not_to_tile(realdata: Path) -> None:
    """NuKEXC (GH200): L1's data stage 99.6% busy on 6.9% of its request rate, 14.4 wavefronts per
    request: the addresses, not re-reading, keep L1 busy."""
    d = cached_diagnosis(realdata / "bobschreiner__NuKEXC" / "profile.ncu-rep")
    [f] = d.findings
    assert f.rule == "binding-unit" and f.evidence["wavefronts_per_request"] == pytest.approx(14.43, abs=0.01)
    assert "accesses serialized, not re-read" in f.message and "coalesce" in f.message
    assert "tiles in shared memory" not in f.message


def test_a_warp_over_four_rows_of_a_narrow_block_is_told_to_widen_the_block(realdata: Path) -> None:
    """Alconno weighted_sum_kernel (RTX 2080 Ti, (8, 32, 1) blocks, no shared memory): L1/TEX 96% busy at
    3.0 data-stage wavefronts per LSU request, DRAM 1.7% busy. Each warp spans 4 rows of 8 threads: the
    addresses, not re-reading, keep L1 busy (expert read: tiling advice here was wrong)."""
    d = cached_diagnosis(realdata / "Alconno__cuda_ai_cpp" / "profile_report.ncu-rep")
    [f] = [f for f in d.findings if f.rule == "binding-unit" and f.kernels == ("weighted_sum_kernel",)]
    assert f.evidence["wavefronts_per_request"] == pytest.approx(3.0, abs=0.01)
    assert (f.evidence["warp_rows"], f.evidence["serialized"]) == (4, True)
    assert f.time_at_stake_s == pytest.approx(32.07e-3, rel=1e-3)  # the unit's relief, as before: only the words change
    assert f.message.endswith("3.0 L1 wavefronts per request: a warp spans 4 rows of the (8, 32, 1) block, a segment "
                              "each. Make blockDim.x 32 (or a multiple) along the contiguous index.")
    assert "tiles in shared memory" not in f.message


def test_double_promotion_in_float_code_is_named_on_an_issue_bound_kernel(realdata: Path) -> None:
    """jestes15 fill_vector on the H100 (expert read): issue slots 80%, XU 63%; 919M DMULs, no FP64 adds or
    FMAs, beside 1.05G FP32 operations: double constants in float code, not 'fewer instructions' in general."""
    d = cached_diagnosis(realdata / "jestes15__EE384_FinalProject" / "profile_output.3b348f5ef8.ncu-rep")
    [f] = [f for f in d.findings if f.rule == "binding-unit" and f.kernels == ("fill_vector",)]
    assert f.evidence["unit"] == "issue" and f.time_at_stake_s == pytest.approx(818.9e-6, rel=1e-3)
    assert ("919M FP64 multiplies, no FP64 adds, beside 1.05G FP32 operations: double promotion (0.5 for 0.5f), "
            "each multiply with conversions (F2F). Use float constants and functions (-Wdouble-promotion lists "
            "them).") in f.message
    # FP64 accumulation (SimonLuder v1's DADDs) is FP64 by intent: fp64-pipe speaks, not this text
    v1 = cached_diagnosis(realdata / "SimonLuder__hs22-mc2" / "v1.ncu-rep")
    assert not [f for f in v1.findings if "double promotion (0.5 for 0.5f), each" in f.message]


def test_a_chart_only_report_s_split_stores_are_named_from_l2(realdata: Path) -> None:
    """COALDA (RTX 4050, ncu's memory chart only: no L1 sector counts): each thread copies its own RGB
    triple, three 4-byte stores 12 bytes apart, so L1 writes each L2 sector 3 times (expert read: only a
    wave tail was said). The coalesced rewrite won 3.39 us of 17.5; the unrolled kernel's, 33.3 of 47.7."""
    d = cached_diagnosis(realdata / "Alaric617R__COALDA" / "uncoalesced_chart.ncu-rep")
    f = d.findings[0]
    assert f.rule == "uncoalesced-access" and f.time_at_stake_s == pytest.approx(8.696e-6, rel=1e-3)
    assert ("L1 writes each L2 sector 3.0 times (73.5k sectors for 24.6k touched; no L1 sector counts here): stores "
            "split across instructions, or rewriting their data. Make consecutive threads touch consecutive words."
            in f.message)
    unrolled = cached_diagnosis(realdata / "Alaric617R__COALDA" / "uncoalesced_chart_unroll.ncu-rep").findings[0]
    assert unrolled.rule == "uncoalesced-access" and 33.3e-6 <= unrolled.time_at_stake_s <= 2 * 33.3e-6
    assert "8.0 times (197k sectors for 24.6k touched, and reads 6.5 times;" in unrolled.message
    coalesced = cached_diagnosis(realdata / "Alaric617R__COALDA" / "coalesced_chart.ncu-rep")
    assert not [f for f in coalesced.findings if f.rule == "uncoalesced-access"]


def test_a_convolution_far_under_its_roof_gets_no_tensor_core_note(realdata: Path) -> None:
    """Swagatam's direct 11 x 11 convolutions (expert reads): one input and one output channel, L1-bound at
    3-36% of the FP32 roof. As an implicit GEMM a convolution's N is its output channels, which the counters
    do not show; far under its roof it has nearer limits, so no tensor-core note (it said 'several-fold',
    then 'one filter gains little': noise either way). A convolution near its roof is still told, and sent
    to cuDNN, not cuBLAS."""
    for report in ("naive", "variant1", "variant2", "variant3"):
        d = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / f"{report}.ncu-rep")
        assert not [f for f in d.findings if f.rule == "no-tensor-cores"]
        row = d.placed.iloc[0]
        assert row["pct_of_roof"] < 50 and is_convolution(row)
    near = {**row.to_dict(), "pct_of_roof": 60.0, "bound": "compute"}
    assert no_tensor_signal(near, Thresholds()) is not None
    assert no_tensor_signal({**near, "bound": "latency"}, Thresholds()) is None  # a higher roof changes nothing
    [f] = run(limiter.no_tensor_cores, placed({k: near[k] for k in ("kernel", "device", "cc", "compute_precision",
                                                                      "flops_fp32", "pct_of_roof", "bound")}))
    assert ": a convolution on the CUDA cores (fp32, no tensor-core work; 1 launch)" in f.message
    assert f.message.endswith("one filter gains little. Through cuDNN, or CUTLASS's implicit GEMM.")
    assert "cuBLAS" not in f.message

def test_below_roof_under_one_wave_says_the_grid_not_no_fault_in_waves(realdata: Path) -> None:
    """COALDA coalesced_chart_unroll: 32 blocks of 512 threads on 40 block slots (0.8 waves): 'No fault in
    waves' contradicted its own evidence (expert read). Its 16,384 threads are 512 warps whatever the block
    size: only more threads (less work each) add warps (expert read 4, row 4: 'more, smaller blocks add warps')."""
    d = cached_diagnosis(realdata / "Alaric617R__COALDA" / "coalesced_chart_unroll.ncu-rep")
    [f] = [f for f in d.findings if f.rule == "below-roof"]
    assert ("DRAM roof. The grid fills 80% of one wave (32 of 40 block slots): more threads (less work each) add "
            "warps; smaller blocks alone spread the same ones. No occupancy, access or instruction counters to tell "
            "why" in f.message)
    assert "fault in waves" not in f.message


def test_a_large_block_whose_registers_strand_warp_slots_is_told_a_smaller_size(realdata: Path) -> None:
    """Abhishek's ray tracer (RTX 5060-class, 48 warps an SM): 1,024-thread blocks at 45 registers (48
    allocated) fit one block, 32 warps; 256-thread blocks fit 5, 40 warps (expert read: ncu's
    TheoreticalOccupancy rule was missed). L1 61%: no unit saturated, so more warps hide latency: at most a
    fifth of the time. GPU-DEMO's 1,024-thread transpose at 16 registers: 32 warps, 512-thread blocks 48 (the
    largest size that fits them: 256 and 128 fit 48 too)."""
    d = cached_diagnosis(realdata / "Abhishek7204__raytracingCuda" / "profile.ncu-rep")
    [f] = [f for f in d.findings if f.rule == "block-size"]
    assert f.evidence["smaller"] == {"block_after": 256.0, "warps_now": 32.0, "warps_after": 40.0,
                                     "share": pytest.approx(0.2)}
    assert f.time_at_stake_s == pytest.approx(0.2 * 11.233e-3, rel=1e-3)
    assert ("(1 launch). At 45 registers a thread the SM fits 32 of its 48 warps; 256-thread blocks would fit 40. "
            "Use a multiple of 32 threads, 128-256 per block." in f.message)
    demo = cached_diagnosis(realdata / "2388612861__GPU-DEMO" / "ncu_report_optimized.ncu-rep")
    [g] = [g for g in demo.findings if g.rule == "block-size" and g.kernels == ("transposeMatrix",)]
    assert g.evidence["smaller"] == {"block_after": 512.0, "warps_now": 32.0, "warps_after": 48.0,
                                     "share": pytest.approx(1 / 3)}
    assert g.time_at_stake_s == pytest.approx(20.3e-6, rel=1e-2)


def test_an_l1_full_of_shared_memory_is_not_called_re_reading_through_the_caches(realdata: Path) -> None:
    """Swagatam variant2 (A100): L1/TEX 99% busy, its data stage 97% shared-memory wavefronts, 49% of them
    bank conflicts (expert read: 'the data is re-read through the caches' misnamed what fills L1)."""
    d = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant2.ncu-rep")
    [f] = [f for f in d.findings if f.rule == "binding-unit"]
    assert ("L1's data stage is 97% shared memory (49% bank conflicts): fewer shared loads (register tiling: several "
            "outputs per thread" in f.message)
    assert "re-read through the caches" not in f.message and f.time_at_stake_s == pytest.approx(14.256e-3, rel=1e-3)


def test_a_launch_at_its_floor_gets_no_priced_advice(realdata: Path) -> None:
    """josiahls mathKernel1-3 (GTX 1660 Ti) take 1.47-1.57 us, an empty kernel's time: no fix of the
    kernel wins more than its time less the 1.5 us launch floor (grid-underfill once priced 1.39 us of
    1.6 us); what is left is under the negligible line or a note."""
    d = cached_diagnosis(realdata / "josiahls__cuda_learning_mojo" / "profile.ncu-rep")
    floor = 1.5e-6
    for f in d.findings:
        t = float(d.placed.loc[d.placed["id"].isin(f.ids), "time_s"].sum())
        launches = int(d.placed["id"].isin(f.ids).sum())
        assert (f.time_at_stake_s or 0.0) <= max(t - launches * floor, 0.0) + 1e-12, f.rule
    assert not [f for f in d.findings if f.rule == "grid-underfill" and f.time_at_stake_s]


def test_a_single_tile_library_pass_gets_no_grid_advice(realdata: Path) -> None:
    """CUB's DeviceReduceSingleTileKernel runs one block by design (alife, RTX 2070 SUPER)."""
    d = cached_diagnosis(realdata / "jonahshader__alife_cuda" / "profile_output.ncu-rep")
    single = d.placed[d.placed["kernel_demangled"].astype(str).str.contains("SingleTile")]
    assert len(single) > 0
    assert not [f for f in d.findings if f.rule == "grid-underfill" and set(f.ids) & set(single["id"])]


def test_a_test_harness_kernel_gets_a_note_not_advice(realdata: Path) -> None:
    """CUTLASS's ReferenceGemm_kernel verifies the kernel measured: 97% of that report's time, none of
    it worth tuning."""
    d = cached_diagnosis(next((realdata / "panjd123__cutlass").glob("*.ncu-rep")))
    harness = [f for f in d.findings if "ReferenceGemm_kernel" in f.kernels]
    assert harness and all(f.severity == "info" and f.time_at_stake_s is None for f in harness)
    assert all("test-harness kernel" in f.message for f in harness)


def test_severity_is_the_share_of_its_own_reports_time_when_inputs_are_read_together(realdata: Path) -> None:
    """MW_Baseline's FP64 division (3.03 ms of its 15.5 ms) stays high beside a 52 s report."""
    from ncu_roof.diagnosis import diagnose_paths

    mw = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    d = diagnose_paths([mw, realdata / "bwd29__self-join-MiSTIC" / "profileTINYK1.out.ncu-rep"])
    [f] = [g for g in d.findings if g.rule == "fp64-pipe" and g.report == str(mw)]
    assert f.severity == "high" and f.time_at_stake_s == pytest.approx(3.03e-3, rel=1e-2)


def test_a_kernel_that_already_tiles_in_shared_memory_is_told_register_tiling(realdata: Path) -> None:
    """ESMM (A10G): gmem_coalesce has only the driver's 1 KB of shared memory per block, so tiling in
    shared memory is its next step (measured: 392 us won, within its 1.06 ms at stake); smem_blocking
    already tiles (9 KB per block), so register tiling is (573 us won, within its 920 us): named first
    of the rungs, the report having no instruction counts to say which it has reached."""
    d = cached_diagnosis(realdata / "AveryClapp__ESMM-Research" / "profile.ee5ce73827.ncu-rep")
    [coalesced] = _of(d, "binding-unit", "gmem_coalesce")
    [tiled] = _of(d, "binding-unit", "smem_blocking")
    assert "(tiles in shared memory and registers, wider loads)" in coalesced.message
    assert "(the next tiling rung: register tiling, then wider (16-byte) loads, then warp tiles" in tiled.message
    assert coalesced.time_at_stake_s >= 392e-6 and tiled.time_at_stake_s >= 573e-6


def test_a_launch_bound_library_kernel_is_told_fewer_larger_calls_not_to_fuse(realdata: Path) -> None:
    """Expert read 2 (9 partly-right verdicts): CUB's DeviceScan, Thrust's agents and cuBLAS's 4-block
    sgemm were told to 'fuse with neighbours', which nobody can do inside a library; the lever is fewer,
    larger calls. The PyTorch random-number kernel keeps its own text; the user's kernels keep fusion."""
    torch_linear = cached_diagnosis(realdata / "Lashi0812__CudaProgramming" / "torchLinear.ncu-rep")
    [gemm] = _of(torch_linear, "overhead-regime", "ampere_sgemm_128x32_tn")
    assert gemm.message.endswith("The roofline explains only 30 ns. A cuBLAS kernel: fewer, larger calls (batched, or "
                                 "one fused library call), not fusion into it.")
    [rng] = _of(torch_linear, "overhead-regime", "distribution_elementwise_grid_stride_kernel")
    assert rng.message.endswith("A PyTorch random-number kernel (torch.rand, dropout): if it only makes a "
                                "benchmark's inputs, profile without it.")
    ee384 = cached_diagnosis(realdata / "jestes15__EE384_FinalProject" / "profile_output.83e15dfe71.ncu-rep")
    [scan] = _of(ee384, "overhead-regime", "DeviceScanKernel")
    assert "A CUB/Thrust kernel: fewer, larger calls" in scan.message and "Fuse with" not in scan.message
    [mine] = _of(ee384, "overhead-regime", "linspace")
    assert "Fuse with neighbours or give each launch more work" in mine.message


def test_matrix_reuse_names_the_unit_the_re_reads_bind(realdata: Path) -> None:
    """Expert read 2: matrix-reuse said 're-reading its operands from DRAM' where L1 or the LSU binds and
    DRAM is 10-28% busy (the re-reads hit in L1). princ0301 matMul: the LSU pipe 99% busy, 279 MB from
    DRAM, 22x a 1024-cube matmul's; the unit that binds is named beside DRAM."""
    d = cached_diagnosis(realdata / "princ0301__cuda_gpu_kernel" / "matmul_naive.ncu-rep")
    [f] = _of(d, "matrix-reuse", "matMul")
    assert f.message.startswith("matMul: matrix math re-reading its operands (LSU pipe 99% busy), up to 9.38 ms of "
                                "10.2 ms at stake (1 launch). It moves 279 MB of DRAM, 22x what a square matmul of "
                                "its FLOPs needs (N about 1024, a guess).")


def test_dram_at_its_roof_by_ncus_throughput_is_said_without_a_roofline_point(realdata: Path) -> None:
    """manual_nvtx (expert read 2, basic set): daxpy, init_data and check_results with DRAM at 88-95% of
    peak by ncu's speed of light, no FLOP or byte counters. The table said 'DRAM at roof' and the advice
    'Cannot judge 100% of the time': no rule spoke. Now speed-of-light-only says only fewer bytes help."""
    d = cached_diagnosis(realdata / "NVIDIA__nsight-training" / "manual_nvtx.ncu-rep")
    [daxpy] = _of(d, "speed-of-light-only", "daxpy_kernel")
    assert daxpy.time_at_stake_s is None
    assert daxpy.message == (
        "daxpy_kernel: no roofline (no FLOP or byte counters); time at stake not known (1 launch, 249 us). ncu's "
        "speed of light: compute 12%, memory 91%, DRAM 91%: at the DRAM roof, so only fewer DRAM bytes make it "
        "faster (fusion with its neighbours, reuse, narrower types).")
    assert {f.kernels for f in d.findings} == {("daxpy_kernel",), ("init_data_kernel",), ("check_results_kernel",)}


def test_a_grid_under_a_wave_with_its_unit_saturated_is_priced_by_the_idle_sms(realdata: Path) -> None:
    """ESMM ee5 one_warptiling (expert read 2): 256 blocks on 80 SMs under one wave, achieved occupancy 25%
    of a theoretical 67%, so 'the grid limits the warps' priced 63% of the warps missing (105 us). But the
    SMs' L1/TEX is 87% busy over their active cycles: more warps cannot help. The loss is the SMs idle
    while others run a fourth block: 1 - sm__cycles_active / elapsed = 22%, 72.3 us of 325 us."""
    d = cached_diagnosis(realdata / "AveryClapp__ESMM-Research" / "profile.ee5ce73827.ncu-rep")
    [f] = _of(d, "grid-underfill", "one_warptiling")
    row = d.placed[d.placed["kernel"] == "one_warptiling"].iloc[0]
    active = row["sm_active_cycles"] / row["sm_cycles"]
    assert row["binding_unit_share"] / active == pytest.approx(0.8715, abs=1e-4)
    assert f.time_at_stake_s == pytest.approx(row["time_s"] * (1 - active), rel=1e-6)
    assert f.time_at_stake_s == pytest.approx(72.3e-6, abs=0.05e-6)
    assert f.message.startswith("one_warptiling: the SMs finish unevenly, up to 72.3 us of 325 us to win (1 launch). "
                                "256 blocks on 80 SMs, 3.2 each: some run 4, the rest fewer, so SMs sit idle 22% of "
                                "the launch, while busy its L1/TEX is at 87%: more warps cannot help.")


def test_occupancy_advice_more_warps_cannot_use_is_not_given(realdata: Path) -> None:
    """Expert read 2: jacobi (V100, 62 registers) was told __launch_bounds__(256, 8), a cap at 32 registers
    that likely spills, for 41% achieved of a theoretical 50%: the advice steps down to 6 blocks at 40
    registers (65% of its use), 32 -> 48 warps, priced as a third of the launch (1 - 32/48). The 83e15
    fill_vector (RTX 4070 Ti) was told 256-thread blocks while tex throttle (its FP64 work's full queue)
    held 74% of the stalls."""
    jacobi = cached_diagnosis(realdata / "anuragdogra2192__MultipleNodesScalingCUDACPPApplications" / "report.ncu-rep")
    [occ] = _of(jacobi, "low-occupancy", "jacobi")
    assert occ.message.endswith("The registers limit (62 registers/thread) binds: at most 40 (__launch_bounds__(256, "
                                "6)) gives 6 blocks per SM, not 4, +16 warps (32 -> 48).")
    assert occ.time_at_stake_s == pytest.approx(occ.evidence["time_s"] / 3, rel=1e-6)
    ee384 = cached_diagnosis(realdata / "jestes15__EE384_FinalProject" / "profile_output.83e15dfe71.ncu-rep")
    assert not _of(ee384, "block-size", "fill_vector") and _of(ee384, "fp64-pipe", "fill_vector")


def test_a_pipeline_in_a_grid_under_the_sms_is_not_told_to_go_deeper(realdata: Path) -> None:
    """panjd123 report-s4 (expert reads 2 and 3, row 100): a CUTLASS GEMM of 12 blocks on 108 SMs, 10.4 us,
    whose long-scoreboard waits (23%, 16 of 18 samples in mma_multistage.h's prologue) were sold as a
    shallow cp.async pipeline; each block's prologue is the launch, and the grid is what leaves 96 SMs idle."""
    d = cached_diagnosis(realdata / "panjd123__cutlass" / "report-s4.ncu-rep")
    assert not _of(d, "async-copy", "Kernel<Gemm>")
    [grid] = _of(d, "grid-underfill", "Kernel<Gemm>")
    assert d.findings[0] is grid and "12 blocks for 108 SMs: 96 SMs (89%) do nothing" in grid.message
