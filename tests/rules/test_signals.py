"""Pinned edges of the per-launch signals (``ncu_roof.rules.signals``) and the trap rules built on them.

What ``test_thresholds`` leaves open: zero and one counts, the tolerances of the cuts, the
fallbacks (the ideal-sector counts decide alone where they are known), the occupancy limiter's
advice, and the wording of the trap rules (``ncu_roof.rules.traps``) where it carries numbers;
each number worked out in the test from plain dict rows or a small placed table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from stake_oracle import priced as stake

from ncu_roof.model.roofline import EPS, Thresholds
from ncu_roof.rules import access, fixes, launch, limiter, occupancy, partial, signals, stalls, traps
from ncu_roof.rules.stakes import Relief, stake_text
from tests.rules.test_thresholds import placed, run, units, without_relief

TH = Thresholds()
pytestmark = pytest.mark.filterwarnings("ignore:All-NaN")


# --- wave tail ----------------------------------------------------------------------------------
def test_wave_tail_needs_blocks_and_a_tail_over_a_millionth_of_a_wave() -> None:
    assert signals.wave_signal({"waves": 1.5, "grid_size": 0.0}, TH) is None  # no grid: nothing to fill
    # a tail under 1e-6 of a wave is rounding, not a tail; 1.05e-6 of a wave is one
    assert signals.wave_signal({"waves": 2.0000009, "grid_size": 200.00009}, TH) is None
    s = signals.wave_signal({"waves": 2.00000105, "grid_size": 200.000105}, TH)
    assert s is not None and s["lost_fraction"] == pytest.approx((1 - 1.05e-6) / 3)


def _tail_row(**over: float) -> dict[str, float]:
    """one_d_vec's launch (ESMM 049ec61, A10G): 256 blocks of 256 threads at 71 registers, 3 blocks per SM
    by registers (shared memory would allow 7, warps 6) on 80 SMs: 240 slots, 1.07 waves."""
    row = {"grid_size": 256.0, "block_size": 256.0, "sm_count": 80.0, "waves": 256 / 240,
           "registers_per_thread": 71.0, "occupancy_limit_registers": 3.0, "occupancy_limit_shared_mem": 7.0,
           "occupancy_limit_warps": 6.0, "occupancy_limit_blocks": 16.0, "max_warps_per_sm": 48.0,
           "max_registers_per_sm": 65536.0, "shared_mem_per_block": 9216.0, "max_shared_mem_per_sm": 102400.0}
    return row | over


def test_a_wave_tail_set_by_registers_names_the_cap_that_removes_it() -> None:
    # 4 blocks per SM fit the 256 blocks on 80 SMs; 65,536 / (4 x 8 warps x 32) = 64 registers, not a spill
    # risk from 71 (64 >= 0.75 x 71); 320 slots: 0.8 waves, no tail (today's: (1 - 16/240) / 2 = 47%)
    r = occupancy.tail_relaxed(_tail_row())
    assert r is not None
    assert (r["blocks_now"], r["blocks_after"], r["registers_per_thread_after"]) == (3.0, 4.0, 64.0)
    assert (r["slots_after"], r["waves_after"], r["lost_after"]) == (320.0, 0.8, 0.0)
    assert occupancy.tail_loss(256 / 240) == pytest.approx((1 - 16 / 240) / 2)
    # 200 registers (1 block of 256 threads per SM): 2 blocks need 128, a register tile's spill
    assert occupancy.tail_relaxed(_tail_row(registers_per_thread=200.0, occupancy_limit_registers=1.0,
                                            waves=256 / 80)) is None
    # 1,000 blocks: 3 -> 6 blocks per SM turns 4.17 waves' 20% idle into 2.08 waves' 31%: not said
    assert occupancy.tail_loss(1000 / 240) == pytest.approx((1 - 40 / 240) / 5)
    assert occupancy.tail_relaxed(_tail_row(grid_size=1000.0, waves=1000 / 240)) is None


def test_a_wave_tail_set_by_shared_memory_names_the_tile_size_that_removes_it() -> None:
    # 300 blocks of 128 threads on 100 SMs at 40 kB shared (2 per SM): 1.5 waves, 25% idle; 3 per SM
    # (ceil(300 / 100)) need at most 102,400 / 3 = 34.1 kB each and hold the grid in one wave
    row = _tail_row(grid_size=300.0, block_size=128.0, sm_count=100.0, waves=1.5, registers_per_thread=32.0,
                    occupancy_limit_registers=16.0, occupancy_limit_shared_mem=2.0, occupancy_limit_warps=12.0,
                    shared_mem_per_block=40960.0)
    r = occupancy.tail_relaxed(row)
    assert r is not None and r["limiter"] == "shared mem"
    assert (r["blocks_after"], r["shared_mem_per_block_after"], r["slots_after"]) == (3.0, 102400 / 3, 300.0)
    assert launch._tail_fix(row, 200.0) == (
        "41 kB shared a block fit 2 blocks per SM; at most 34.1 kB (smaller tiles) fit 3: 300 slots hold the 300 "
        "blocks in one wave. Else fill whole waves (200 blocks or a multiple).")


# --- grid underfill -----------------------------------------------------------------------------
def test_an_empty_grid_is_no_underfill() -> None:
    assert signals.underfill_signal({"grid_size": 0.0, "sm_count": 48.0}, TH) is None
    assert without_relief(signals.underfill_signal({"grid_size": 1.0, "sm_count": 48.0}, TH)) == {
        "idle_fraction": pytest.approx(47 / 48), "idle_sms": 47.0}


# --- uncoalesced access -------------------------------------------------------------------------
def test_ideal_sector_counts_decide_alone_where_both_are_known() -> None:
    per_request = {"global_load_sectors": 24.0, "global_load_requests": 1.0}  # 24 per request: 1.5x over 16
    # 1 sector asked where 1 is needed: coalesced, whatever the per-request counts say
    assert signals.uncoalesced_signal({"global_sectors_theoretical": 1.0, "global_sectors_ideal": 1.0,
                                       **per_request}, TH) is None
    # 2 asked where 1 is needed: 2x, 16 of every 32 bytes used
    two = signals.uncoalesced_signal({"global_sectors_theoretical": 2.0, "global_sectors_ideal": 1.0}, TH)
    assert without_relief(two) == {"excess": 2.0, "bytes_used_per_sector": 16.0}
    # one of the two unknown (0): the per-request fallback, 24 / 16 = 1.5x
    for theo, ideal in ((0.0, 1e5), (4e5, 0.0)):
        s = signals.uncoalesced_signal({"global_sectors_theoretical": theo, "global_sectors_ideal": ideal,
                                        **per_request}, TH)
        assert without_relief(s) == {"excess": 1.5, "bytes_used_per_sector": pytest.approx(32 / 1.5)}, (theo, ideal)
    # ncu's bytes used per sector (no ideal count): 25% of 32 bytes used is a 4x excess
    used = signals.uncoalesced_signal({"global_load_bytes_per_sector_pct": 25.0, **per_request}, TH)
    assert used is not None and used["excess"] == 4.0


def test_sectors_per_request_fallback_edges() -> None:
    # loads with no requests are skipped (no division by zero); the stores' 24 per request decide
    row = {"global_load_sectors": 5e5, "global_load_requests": 0.0, "global_store_sectors": 24e5,
           "global_store_requests": 1e5}
    assert signals.uncoalesced_signal(row, TH)["excess"] == pytest.approx(1.5)  # type: ignore[index]
    # 16 x (1 + EPS) per request is 16 within the tolerance: not above it
    assert signals.uncoalesced_signal({"global_load_sectors": 16 * (1 + EPS), "global_load_requests": 1.0},
                                      TH) is None
    # no counts at all: no signal, even with a cut of 0 sectors per request
    assert signals.uncoalesced_signal({}, Thresholds(uncoalesced_sectors_per_request=0.0)) is None


# --- bank conflicts -----------------------------------------------------------------------------
def test_bank_conflicts_without_wavefronts_are_no_signal() -> None:
    # damaged counters (conflicts but no wavefronts): no share to compute, no signal
    assert signals.bank_conflict_signal({"shared_bank_conflicts": 5.0, "shared_wavefronts": 0.0}, TH) is None
    assert signals.bank_conflict_signal({"shared_bank_conflicts": 5.0, "shared_wavefronts": np.nan}, TH) is None


def test_bank_conflicts_of_a_launch_timed_at_zero_relieve_l1_by_their_share() -> None:
    """A duration of 0 (rounded in an export) gives no L1 busy share to scale by: the conflicts'
    share of the wavefronts is taken off L1 as off the shared pipe (it raised ZeroDivisionError)."""
    s = signals.bank_conflict_signal({"shared_bank_conflicts": 30.0, "shared_wavefronts": 100.0, "time_s": 0.0,
                                      "unit_l1_s": 1e-6, "shared_pipe_pct": 50.0}, TH)
    assert s is not None and s["relief"].removes == {"shared": 0.3, "l1": 0.3}


# --- occupancy: the limiting resource and what relaxing it gives ---------------------------------
def _limits(**limits: float) -> dict[str, float]:
    return {f"occupancy_limit_{k}": v for k, v in limits.items()}


def test_occupancy_limiter_registers_relaxed_to_the_next_limit() -> None:
    # 128 threads: 4 warps per block; registers allow 6 blocks, shared memory 8, warps 16, blocks 32:
    # relaxing registers gives min(8, 64 warps / 4) = 8 blocks, 24 -> 32 warps, with at most
    # 65,536 / (8 blocks x 4 warps x 32 threads) = 64 registers per thread (a multiple of 8)
    row = {"block_size": 128.0, "max_warps_per_sm": 64.0, "max_registers_per_sm": 65536.0,
           **_limits(registers=6.0, shared_mem=8.0, warps=16.0, blocks=32.0)}
    assert occupancy.occupancy_limiter(row) == ("registers", {
        "blocks_now": 6.0, "blocks_after": 8.0, "warps_now": 24.0, "warps_after": 32.0,
        "registers_per_thread_after": 64.0, "spill_risk": False})
    # 97 threads: 4 warps (the last one partial); no warp limit known, so the warp slots bind:
    # floor(48 / 4) = 12 blocks, not shared memory's 14; 65,536 / (12 x 4 x 32) = 42.7: 40 registers
    odd = {"block_size": 97.0, "max_warps_per_sm": 48.0, "max_registers_per_sm": 65536.0,
           **_limits(registers=3.0, shared_mem=14.0, blocks=16.0)}
    assert occupancy.occupancy_limiter(odd) == ("registers", {
        "blocks_now": 3.0, "blocks_after": 12.0, "warps_now": 12.0, "warps_after": 48.0,
        "registers_per_thread_after": 40.0, "spill_risk": False})
    # the register file unknown (or 0): the blocks and warps, no register count
    assert occupancy.occupancy_limiter({**odd, "max_registers_per_sm": 0.0}) == ("registers", {
        "blocks_now": 3.0, "blocks_after": 12.0, "warps_now": 12.0, "warps_after": 48.0})


def test_occupancy_limiter_shared_memory_and_the_cases_without_advice() -> None:
    # 65 threads: 3 warps; shared memory allows 2 blocks, registers 5: 5 blocks, 6 -> 15 warps, with
    # 102,400 B / 5 = 20,480 B of shared memory per block
    row = {"block_size": 65.0, "max_warps_per_sm": 48.0, "max_shared_mem_per_sm": 102400.0,
           **_limits(shared_mem=2.0, registers=5.0, warps=16.0, blocks=32.0)}
    assert occupancy.occupancy_limiter(row) == ("shared mem", {
        "blocks_now": 2.0, "blocks_after": 5.0, "warps_now": 6.0, "warps_after": 15.0,
        "shared_mem_per_block_after": 20480.0})
    assert occupancy.occupancy_limiter({**row, "max_shared_mem_per_sm": 0.0})[1] == {
        "blocks_now": 2.0, "blocks_after": 5.0, "warps_now": 6.0, "warps_after": 15.0}
    # no warp slots free: 6 warps per SM / 3 per block = 2 blocks, no more than now
    assert occupancy.occupancy_limiter({**row, "max_warps_per_sm": 6.0}) == ("shared mem", None)
    # no block size, no SM warp count, or a block of 0: the limiter without advice
    assert occupancy.occupancy_limiter({**row, "block_size": 0.0}) == ("shared mem", None)
    assert occupancy.occupancy_limiter({**row, "max_warps_per_sm": np.nan}) == ("shared mem", None)
    # two resources at the same lowest limit, or a limit that is not registers or shared memory
    assert occupancy.occupancy_limiter({**row, **_limits(registers=2.0)}) == ("registers, shared mem", None)
    warps = _limits(warps=4.0, blocks=8.0)
    assert occupancy.occupancy_limiter({**warps, "block_size": 128.0, "max_warps_per_sm": 64.0}) == ("warps", None)
    assert occupancy.occupancy_limiter({}) == ("unknown", None)
    # one limit known only: nothing to relax it to
    assert occupancy.occupancy_limiter({**_limits(registers=4.0), "block_size": 128.0,
                                      "max_warps_per_sm": 64.0}) == ("registers", None)


# --- traps: the overhead scaling fit --------------------------------------------------------------
def _group(grids: list[float], times: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"grid_size": grids, "time_s": times})


def test_scaling_fit_edges() -> None:
    # a grid of one block is a point of the fit: grids 1, 2 and 4 (x4), time = 1.6 us + 0.1 us x grid
    fit = launch._scaling_fit(_group([1.0, 2.0, 4.0], [1.7e-6, 1.8e-6, 2.0e-6]), TH)
    assert fit is not None and fit["launches_fit"] == 3 and fit["size_ratio"] == 4.0
    assert fit["fixed_s"] == pytest.approx(1.6e-6) and fit["per_block_s"] == pytest.approx(1e-7)
    # a median of exactly 100 us is short enough to judge ("at most")
    edge = launch._scaling_fit(_group([10.0, 15.0, 20.0], [99e-6, 100e-6, 101e-6]), TH)
    # 0.2 us per block: 99 us - 10 x 0.2 us = 97 us fixed, 97 x 3 of the 300 us
    assert edge is not None and edge["fixed_s"] == pytest.approx(97e-6) and edge["fixed_share"] == pytest.approx(0.97)
    # equal times at three sizes: no slope, so nothing says the grid size tracks the work
    assert launch._scaling_fit(_group([10.0, 15.0, 20.0], [100e-6, 100e-6, 100e-6]), TH) is None
    # nothing to fit: no launch, or no grid size at all
    assert launch._scaling_fit(_group([], []), TH) is None
    assert launch._scaling_fit(pd.DataFrame({"time_s": [1e-6, 2e-6]}), TH) is None
    # a table without grid sizes: the short launches alone (this raised KeyError: 'grid_size')
    [f] = run(launch.overhead_regime, placed({"bound": "overhead", "time_s": 4e-6, "time_lower_bound_s": 1e-6}))
    assert f.time_at_stake_s == pytest.approx(3e-6)
    assert f.message == ("k0: launch-bound, 1 launch of 4 us near the few-us launch floor, up to 3 us to win. The "
                         "roofline explains only 1 us. Fuse with neighbours or give each launch more work (its "
                         "start-up and latency are paid once); a CUDA graph cuts only the host's gaps between "
                         "launches, which ncu's times leave out.")


def test_overhead_messages_for_several_short_launches_and_for_the_fit_alone() -> None:
    two = placed(*({"kernel": "k", "grid_size": 8.0, "time_s": 4e-6, "time_lower_bound_s": np.nan,
                    "bound": "overhead"} for _ in range(2)))
    [f] = run(launch.overhead_regime, two)
    assert f.time_at_stake_s is None  # no roofline bound: nothing known to win
    assert f.message == ("k: launch-bound, 2 launches of 4 us on average (8 us in all) near the few-us launch "
                         "floor. Its work is not measured. Fuse with neighbours or give each launch more work (its "
                         "start-up and latency are paid once); a CUDA graph cuts only the host's gaps between "
                         "launches, which ncu's times leave out.")
    # 4, 5 and 7 us launches at grids 10, 20, 40, none launch-bound alone: the fit's 3 us x 2 launches
    fit = placed(*({"kernel": "k", "grid_size": g, "time_s": 3e-6 + 1e-7 * g, "time_lower_bound_s": 1e-7,
                    "bound": "memory"} for g in (10.0, 20.0, 40.0)))
    [g] = run(launch.overhead_regime, fit)
    assert g.ids == (0, 1, 2)  # the fit's launches, none of them short
    assert g.message == ("k: launch-bound (3 launches, 16 us), up to 6 us to win. Time does not scale with size: "
                         "grid x4, time x1.75; a fit gives 3 us fixed per launch (56% of it). Fuse with neighbours "
                         "or give each launch more work (its start-up and latency are paid once); a CUDA graph "
                         "cuts only the host's gaps between launches, which ncu's times leave out.")


# --- traps: FP64 and FP16 --------------------------------------------------------------------------
def test_fp64_advice_by_rate_and_divisions() -> None:
    no_div = {"inst_dfma": 3200.0, "inst_dadd": 0.0, "inst_dmul": 0.0, "inst_fp64_rcp": 0.0}
    # exactly 1/8 of the FP32 rate is consumer rate ("at or below"): move to FP32
    assert traps._fp64_advice(no_div, {"fp64_divisions": 0.0, "fp64_over_fp32_peak": 0.125}, TH) == (
        " Use FP32 where accuracy allows; in float code FP64 often comes from double promotion "
        "(0.5 for 0.5f, sqrt for sqrtf: -Wdouble-promotion lists them).")
    assert traps._fp64_advice(no_div, {"fp64_divisions": 0.0, "fp64_over_fp32_peak": 0.5}, TH) == (
        " Cut FP64 operations (hoist, reuse, fewer divisions and square roots), FP32 where accuracy allows.")
    # 3.2 divisions x 8 of 100 FP64 warp instructions: 25.6%, the division advice alone at 1/2 rate
    div = {**no_div, "inst_fp64_rcp": 3.2}
    assert traps._fp64_advice(div, {"fp64_divisions": 3.2, "fp64_over_fp32_peak": 0.5}, TH) == (
        " Division is about 26% of it (3.2 MUFU.RCP64H, each then a chain of DFMAs): multiply by a reciprocal "
        "computed once.")


def test_fp64_pipe_message_names_the_busy_pipe_the_fp64_time_or_the_divisions() -> None:
    # 1/64 rate: 0.5 GFLOP of FP64 at 1 TFLOP/s take 500 us of the 1 ms; in FP32 the bound is
    # 0.5e9 / 64e12 = 7.8 us of the 500 us one, so the 1 ms scales to 15.6 us: 984 us to win
    # the FP64 pipe binds (700 us); in FP32 its work takes 700 / 64 = 10.9 us on the FMA pipe, the
    # 500 us FLOP roof becomes 7.8 us, and DRAM's 15.6 us binds: 984 us to win
    row = {"flops_fp64": 0.5e9, "flops": 0.5e9, "time_s": 1e-3, "time_lower_bound_s": 5e-4, "headroom_s": 5e-4,
           "peak_fp64_flops_per_s": 1e12, "peak_fp32_flops_per_s": 64e12, "device": "made-up",
           "pipe_fp64_pct": 70.0, "inst_dfma": 0.25e9, "inst_dadd": 0.0, "inst_dmul": 0.0, "inst_fp64_rcp": 0.0,
           "compute_precision": "fp64", **units(pipe_fp64=7e-4, flops=5e-4, dram=1e-3 * (0.5e9 / 64e12) / 5e-4)}
    [f] = run(traps.fp64_pipe, placed(row))
    assert f.time_at_stake_s == pytest.approx(1e-3 - 1e-3 * (0.5e9 / 64e12) / 5e-4)
    assert f.message == ("k0: the FP64 pipe is the limiter, 70% busy, up to 984 us of 1 ms at stake (1 launch). "
                         "made-up runs FP64 at 1/64 of FP32; 250M FP64 adds/muls/FMAs take 500 us of the pipe's 700 "
                         "us busy, conversions the rest. Use FP32 where accuracy allows; in float code FP64 often "
                         "comes from double promotion (0.5 for 0.5f, sqrt for sqrtf: -Wdouble-promotion lists them).")
    [g] = run(traps.fp64_pipe, placed({**row, "pipe_fp64_pct": np.nan}))
    assert "the limiter, up to 984 us" in g.message
    # a DADD takes the pipe as long as a DFMA: 350M DADDs (350 MFLOP) need 700 us, the pipe's whole busy time
    [d] = run(traps.fp64_pipe, placed({**row, "inst_dfma": 0.0, "inst_dadd": 0.35e9, "flops_fp64": 0.35e9}))
    assert "runs FP64 at 1/64 of FP32; its 350M FP64 adds/muls/FMAs alone need 700 us. Use FP32" in d.message
    # no instruction counts: the FLOPs at the FP64 peak
    [e] = run(traps.fp64_pipe, placed({**row, "inst_dfma": np.nan}))
    assert "(1 TFLOP/s vs 64 TFLOP/s); its 500 MFLOP in FP64 alone need 500 us. Use FP32" in e.message
    # divisions: 8 x 488,281.25 of 7,812,500 FP64 warp instructions = 50%: named instead of the FP64 time
    [h] = run(traps.fp64_pipe, placed({**row, "inst_fp64_rcp": 0.25e9 / 32 / 8 * 0.5}))
    assert "in FP64 alone" not in h.message
    assert h.message.endswith("lists them). Division is about 50% of it (488k MUFU.RCP64H, each then a chain of "
                              "DFMAs): multiply by a reciprocal computed once.")


def test_fp16_on_cuda_cores_only_for_compute_bound_fp16() -> None:
    fp16 = {"compute_precision": "fp16", "binding": "compute", "peak_flops_per_s": 1e13, "flops_fp16": 1e9,
            "cc": "8.6"}
    [f] = run(traps.fp16_on_cuda_cores, placed(fp16))
    assert f.message == ("k0: FP16 math on the CUDA cores (1 launch). It is judged against the FP16 roof "
                         "(10 TFLOP/s), not the tensor roof; if this is matrix math, tensor cores (mma/WMMA, "
                         "cuBLAS) raise the roof several-fold.")
    assert f.severity == "info" and f.time_at_stake_s is None
    [g] = run(traps.fp16_on_cuda_cores, placed({**fp16, "peak_flops_per_s": np.nan}))
    assert "against the FP16 roof, not the tensor roof" in g.message
    assert not run(traps.fp16_on_cuda_cores, placed({**fp16, "compute_precision": "fp32"}))
    assert not run(traps.fp16_on_cuda_cores, placed({**fp16, "binding": "dram"}))
    # a GTX 16xx has no tensor cores to point at
    [h] = run(traps.fp16_on_cuda_cores, placed({**fp16, "cc": "7.5", "device": "NVIDIA GeForce GTX 1660 SUPER"}))
    assert h.message.endswith("(10 TFLOP/s); this GPU has no tensor cores.")


# --- traps: above the DRAM roof and the stake wording ---------------------------------------------
def test_above_dram_roof_reports_the_worst_launch_and_its_basis() -> None:
    base = {"kernel": "k", "dram_peak_bytes_per_s": 1e12, "dram_roof_bytes_per_s": 0.88e12, "time_s": 1e-3,
            "achieved_dram_bytes_per_s": 1.5e12, "dram_bytes": 1.5e9, "l2_bytes": np.nan,
            "l2_roof_bytes_per_s": np.nan}
    [f] = run(traps.above_dram_roof, placed(base, {**base, "achieved_dram_bytes_per_s": 2e12}))
    assert f.evidence["over_peak"] == 2.0 and f.evidence["bytes_per_s"] == 2e12  # the worse of 1.5x and 2x
    assert f.message == ("k: above the DRAM roof, so its data came from cache (2 launches). The measured DRAM bytes "
                         "give 2 TB/s, 2.00x the 1 TB/s DRAM peak; the DRAM roofline does not describe it. There is "
                         "no L2 byte count to place it against L2 (capture with ncu-roof capture).")
    # 3 GB of algorithmic bytes in 1 ms: 3 TB/s, more than the 0.5 TB/s measured
    [g] = run(traps.above_dram_roof, placed({**base, "achieved_dram_bytes_per_s": 5e11, "alg_bytes": 3e9}))
    assert "(1 launch). The algorithmic bytes over the time give 3 TB/s, 3.00x the 1 TB/s DRAM peak" in g.message


def test_stake_of_exactly_5_percent_is_little() -> None:
    text = stake_text(placed({"time_s": 1e-3}), 0.05 * 1e-3, [{"relief": Relief(removes={"l1": 0.5})}])
    assert text.startswith("; little time at stake")


def test_uncoalesced_text_says_all_within_a_billionth_of_the_extra() -> None:
    # 3e9 extra sectors; the stores can carry at most 11 - 10 = 1 of them: the loads carry 3e9 - 1,
    # all of it within the 1e-9 tolerance (3e9 x 1e-9 = 3 sectors)
    row = {"global_sectors_theoretical": 4e9, "global_sectors_ideal": 1e9, "global_load_sectors": 4e9 - 11,
           "global_load_requests": 1e8, "global_store_sectors": 11.0, "global_store_requests": 10.0}
    text, side = traps._uncoalesced_text(row, {"load": (4e9 - 11) / 1e8, "store": 1.1}, 16.0)
    assert side == "loads"
    assert text == ("4G sectors requested per launch where 1G would do (4.0x, 8 of every 32 bytes used), all 3G "
                    "extra from loads. Sectors per request: loads 40.0, stores 1.1.")


# --- FP64 pipe signal: each path of the fix ---------------------------------------------------------
def test_fp64_signal_fixes_on_each_path() -> None:
    # consumer rate 1/64: 0.5 GFLOP of FP64 at 1 TFLOP/s take 500 us of 1 ms: the fix is FP32, the
    # FP64 pipe's 600 us move to the FMA pipe at 1/64 of that (9.4 us); DRAM's 25 us binds: 975 us to win
    consumer = {"flops_fp64": 0.5e9, "flops": 0.8e9, "time_s": 1e-3, "time_lower_bound_s": 5e-4, "headroom_s": 5e-4,
                "peak_fp64_flops_per_s": 1e12, "peak_fp32_flops_per_s": 64e12, "device": "made-up",
                **units(pipe_fp64=6e-4, dram=2.5e-5)}
    s = signals.fp64_signal(consumer, TH)
    assert s is not None and s["fp64_over_fp32_peak"] == 1 / 64 and s["fp64_time_at_roof_s"] == 5e-4
    assert s["fix"] == "fp32" and s["relief"].adds == {"pipe_fma": pytest.approx(6e-4 / 64)}
    assert stake(consumer, s["relief"]) == pytest.approx(975e-6)
    # no FP64 pipe measured: the FP64 work at its peak stands for the pipe's time (500 us -> 7.8 us)
    bare = {**consumer, **units(flops=5e-4, dram=2.5e-5)}
    del bare["unit_pipe_fp64_s"]
    s = signals.fp64_signal(bare, TH)
    assert s is not None and s["relief"].adds == {"pipe_fma": pytest.approx(5e-4 / 64)}
    # the FP64 pipe 70% busy with no FP64 FLOPs counted: fires on the pipe, no FP64 time
    s = signals.fp64_signal({**consumer, "flops_fp64": 0.0, "pipe_fp64_pct": 70.0}, TH)
    assert s is not None and np.isnan(s["fp64_time_at_roof_s"]) and stake(consumer, s["relief"]) == pytest.approx(
        975e-6)
    # no time, or nothing of FP64 even with a busy cut of 0: no signal
    assert signals.fp64_signal({**consumer, "time_s": 0.0}, TH) is None
    zero = {**consumer, "flops_fp64": 0.0, "pipe_fp64_pct": 0.0}
    assert signals.fp64_signal(zero, Thresholds(fp64_pipe_busy_pct=0.0)) is None
    # FP64 at the FP32 rate is never the limiter, however much FP64 work there is below the roof
    same = {**consumer, "peak_fp64_flops_per_s": 64e12, "flops_fp64": 0.5 * 64e12 * 1e-3, "bound": "memory",
            "pct_of_roof": 40.0}
    assert signals.fp64_signal(same, TH) is None


def test_fp64_signal_datacenter_rate_removes_the_divisions_or_the_fp64_work() -> None:
    # rate 1/2, no unit measured beyond the pipe: the FP64 pipe binds at 70%; divisions 8 x 1.75e6 of
    # 28e6 FP64 warp instructions = 50% of its work: 1 ms x 0.5 = 500 us, DRAM's 200 us does not bind
    dc = {"flops_fp64": 9.6e9, "flops": 9.6e9, "time_s": 1e-3, "peak_fp64_flops_per_s": 32e12,
          "peak_fp32_flops_per_s": 64e12, "device": "made-up", "bound": "compute", "compute_precision": "fp64",
          "inst_dfma": 0.896e9, "inst_dadd": 0.0, "inst_dmul": 0.0, "inst_fp64_rcp": 1.75e6,
          "warp_inst_executed": 56e6, **units(pipe_fp64=7e-4, flops=3e-4, dram=2e-4)}
    s = signals.fp64_signal(dc, TH)
    assert s is not None and s["fp64_over_fp32_peak"] == 0.5 and s["fix"] == "divisions"
    assert s["relief"].removes == {"pipe_fp64": pytest.approx(0.5), "flops": pytest.approx(0.5),
                                   "issue": pytest.approx(0.25)}  # 28e6 of 56e6 warp instructions, half removed
    assert stake(dc, s["relief"]) == pytest.approx(5e-4)
    # no divisions: fewer FP64 operations, at most until the next unit (the FLOP roof's 300 us) binds
    s = signals.fp64_signal({**dc, "inst_fp64_rcp": 0.0}, TH)
    assert s is not None and s["fix"] == "fewer" and stake(dc, s["relief"]) == pytest.approx(8e-4)
    # on its limit (the pipe 90% busy): not what holds it back
    assert signals.fp64_signal({**dc, **units(pipe_fp64=9e-4, dram=2e-4)}, TH) is None


# --- no-FMA signal: multiplies, FP16 weights, the memory term -----------------------------------------
def _no_fma(prec: str, fma: float, add: float, mul: float, **extra: Any) -> dict[str, Any]:
    ops = signals._FMA_OPS[prec]
    return {"compute_precision": prec, "binding": "compute", f"inst_{ops[0]}": fma, f"inst_{ops[1]}": add,
            f"inst_{ops[2]}": mul, "time_s": 1e-3, "time_lower_bound_s": 4e-4, f"peak_{prec}_flops_per_s": 1e13,
            **extra}


def test_no_fma_signal_counts_multiplies_and_the_fp16_weight() -> None:
    # 1.0e9 FFMA, 0.3e9 FADD, 0.3e9 FMUL: 37.5% unfused; 1.6e9 x 2 / 10 TFLOP/s = 320 us, 32% of 1 ms.
    # compute-binding at a roof of 2.6 GFLOP / 400 us = 6.5 TFLOP/s: the roof rises to the 10 TFLOP/s
    # FMA peak, 260 us of the 400 us bound: the 1 ms scales to 650 us, 350 us to win
    row = _no_fma("fp32", 1.0e9, 0.3e9, 0.3e9, flops=2.6e9, peak_flops_per_s=6.5e12, **units(flops=4e-4))
    s = signals.no_fma_signal(row, TH)
    assert without_relief(s) == {"fma_fraction": 0.625, "unfused_fraction": 0.375, "fusable_fraction": 0.375,
                                 "fma_peak_flops_per_s": 1e13}
    assert s is not None and stake(row, s["relief"]) == pytest.approx(1e-3 - 1e-3 * 2.6e-4 / 4e-4)
    # half the 0.6e9 adds and multiplies fuse: 0.3e9 of the 1.6e9 FP32 instructions leave the FMA pipe
    assert s["relief"].removes["pipe_fma"] == pytest.approx(0.3 / 1.6)
    # below its memory roof with DRAM binding: the fix relieves what does not bind, nothing to win
    below = {"binding": "dram", "bound": "memory", "pct_of_roof": 50.0, "headroom_s": 1e-3,
             **units(dram=5e-4, pipe_fma=3e-4)}
    row = _no_fma("fp32", 1.0e9, 0.3e9, 0.3e9, flops=2.6e9, **below)
    s = signals.no_fma_signal(row, TH)
    assert s is not None and stake(row, s["relief"]) == 0.0
    # FP16: an HFMA is 4 FLOPs; 1e9 instructions x 4 / 10 TFLOP/s = 400 us (40%); with no FP16 pipe
    # measured the fused HADD/HMUL leave the FMA pipe, here binding at 60%: 0.2 of its work, 120 us... of
    # the 1 ms it scales: 200 us to win
    row = _no_fma("fp16", 0.6e9, 0.2e9, 0.2e9, flops=3.2e9, **{**below, **units(dram=1e-4, pipe_fma=6e-4)})
    s = signals.no_fma_signal(row, TH)
    assert s is not None and s["unfused_fraction"] == pytest.approx(0.4)
    assert s["relief"].removes["pipe_fma"] == pytest.approx(0.2) and stake(row, s["relief"]) == pytest.approx(2e-4)
    # at 2 FLOPs per instruction the same FP16 work would be 200 us, 20% of the time: no signal
    assert signals.no_fma_signal(_no_fma("fp16", 0.6e9, 0.2e9, 0.2e9, peak_fp16_flops_per_s=2e13), TH) is None


def test_no_fma_stake_stops_where_the_next_unit_binds() -> None:
    # 1.38e9 FFMA + 0.31e9 FADD + 0.31e9 FMUL = 3.38 GFLOP: 338 us at the FMA peak, of a 400 us FLOP-roof bound
    mix = _no_fma("fp32", 1.38e9, 0.31e9, 0.31e9, flops=3.38e9, peak_flops_per_s=3.38e9 / 4e-4, **units(flops=4e-4))
    s = signals.no_fma_signal(mix, TH)
    assert s is not None and stake(mix, s["relief"]) == pytest.approx(1e-3 - 1e-3 * 3.38e-4 / 4e-4)
    # at 90% of a 3.76 TFLOP/s roof the FMA peak cuts the binding FLOP roof's work by 62%: 1 ms -> 376 us,
    # under DRAM's 850 us, which then binds: 150 us to win
    tight = {**mix, "peak_flops_per_s": 3.38e9 / 9e-4, **units(flops=9e-4, dram=8.5e-4)}
    s = signals.no_fma_signal(tight, TH)
    assert s is not None and stake(tight, s["relief"]) == pytest.approx(1.5e-4)
    # no time: no signal
    assert signals.no_fma_signal({**mix, "time_s": 0.0}, TH) is None


# --- above the DRAM peak, the division share ----------------------------------------------------
def test_above_dram_signal_needs_a_peak_and_a_time() -> None:
    row = {"dram_peak_bytes_per_s": 1e12, "dram_roof_bytes_per_s": 0.88e12, "achieved_dram_bytes_per_s": 2e12}
    assert signals.above_dram_signal({**row, "time_s": 0.0}, TH) is None
    assert signals.above_dram_signal({"achieved_dram_bytes_per_s": 2e12, "time_s": 1e-3}, TH) is None


def test_division_share_edges() -> None:
    fp64 = {"inst_dfma": 3200.0, "inst_dadd": 0.0, "inst_dmul": 0.0}
    # one division (8 FP64 instructions) of 100 FP64 warp instructions: 8%
    assert signals.division_share({**fp64, "inst_fp64_rcp": 1.0}) == pytest.approx(0.08)
    # one division against one FP64 warp instruction: 8 x 1 / 1, capped at the whole
    assert signals.division_share({**fp64, "inst_dfma": 32.0, "inst_fp64_rcp": 1.0}) == 1.0
    # divisions counted but no FP64 instructions: no share
    assert signals.division_share({**fp64, "inst_dfma": 0.0, "inst_fp64_rcp": 5.0}) == 0.0


# --- the limiter signals' numbers ---------------------------------------------------------------
BELOW = {"bound": "memory", "pct_of_roof": 40.0}


def test_binding_unit_signal_names_the_unit_and_the_next_one() -> None:
    row = {**BELOW, "time_s": 1e-3, "pipe_alu_pct": 70.0, "pipe_fma_pct": 40.0, "pipe_lsu_pct": np.nan,
           **units(pipe_alu=7e-4, pipe_fma=4e-4, dram=1e-4)}
    assert signals.busiest_pipe(row) == ("alu", 70.0)
    s = signals.binding_unit_signal(row, TH)
    assert without_relief(s) == {"unit": "pipe_alu", "unit_share": pytest.approx(0.7), "next_unit": "pipe_fma",
                                 "next_unit_share": pytest.approx(0.4), "coupled": (),
                                 "wavefronts_per_request": pytest.approx(np.nan, nan_ok=True), "serialized": False,
                                 "warp_rows": 1, "issue_relieved": False}
    assert s is not None and stake(row, s["relief"]) == pytest.approx(6e-4)  # until the FMA pipe binds
    # the issue slots measured (65% busy, under the ALU's 70%): the ALU's instructions may fill them all, so
    # they are relieved with it and never the next to bind (SimonLuder v3: 'then issue slots (67%)' stood
    # under a win of 128 ms, 56%, where the bound said 76.7 ms)
    issued = {**row, **units(pipe_alu=7e-4, pipe_fma=4e-4, dram=1e-4, issue=6.5e-4)}
    s = signals.binding_unit_signal(issued, TH)
    assert s is not None and s["issue_relieved"] and s["next_unit"] == "pipe_fma"
    assert stake(issued, s["relief"]) == pytest.approx(6e-4)
    assert stake(issued, Relief(removes={"pipe_alu": 1.0})) == pytest.approx(3.5e-4)  # issue kept: until it binds
    assert signals.busiest_pipe(BELOW) is None and signals.binding_unit_signal(BELOW, TH) is None
    # the roofline's own roofs (DRAM, the FLOP roof) and a latency-bound launch are left to other rules
    assert signals.binding_unit_signal({**row, **units(dram=7e-4, pipe_alu=1e-4)}, TH) is None
    assert signals.binding_unit_signal({**row, "bound": "latency"}, TH) is None


def test_stall_shares_per_issue_first_else_pc_samples() -> None:
    # per-issue ratios 0.3 and 0.1 (whole 0.4): 75% and 25%, largest first; 'selected' is no stall
    ratios = {"stall_wait": 0.1, "stall_long_scoreboard": 0.3, "stall_selected": 5.0}
    shares, family = stalls.stall_shares(ratios)
    assert list(shares) == ["long_scoreboard", "wait"]
    assert list(shares.values()) == [pytest.approx(0.75), pytest.approx(0.25)]
    assert family == "cycles per issued instruction"
    samples = {"stall_wait": 0.0, "stall_samples_barrier": 30.0, "stall_samples_wait": 10.0}
    assert stalls.stall_shares(samples) == ({"barrier": 0.75, "wait": 0.25}, "PC samples")
    assert stalls.stall_shares({"stall_wait": 0.0}) == ({}, "")
    # the nvprof-era % of active warp cycles: of the stalled cycles where "selected" is captured, else of all
    active = {"stall_active_barrier": 54.0, "stall_active_membar": 2.0}
    assert stalls.stall_shares(active) == ({"barrier": 0.54, "membar": 0.02}, "share of active warp cycles")
    assert stalls.stall_shares({**active, "stall_active_selected": 10.0}) == (
        {"barrier": pytest.approx(0.6), "membar": pytest.approx(2 / 90)}, "share of stalled warp cycles")
    # memory's share is not judged from a family without the long-scoreboard waits
    assert stalls.memory_waits(active) == 1.0


def test_stall_signal_names_at_most_two_reasons_and_the_idle_issue_share() -> None:
    three = {**BELOW, "stall_wait": 0.3, "stall_barrier": 0.3, "stall_long_scoreboard": 0.3, "stall_drain": 0.1}
    s = signals.stall_signal({**three, "issue_active": 0.4}, TH)
    # three at 0.3 of the stall cycles: the first two in ncu's order of the reasons
    assert without_relief(s) == {"reasons": ["long_scoreboard", "barrier"],
                                 "shares": [pytest.approx(0.3), pytest.approx(0.3)],
                                 "family": "cycles per issued instruction", "idle_issue_share": pytest.approx(0.6)}
    assert s is not None and s["relief"] == Relief(latency=1.0, share=pytest.approx(0.6))
    # issue slots unknown: the top reason's share stands for the idle share
    s = signals.stall_signal({**BELOW, "stall_wait": 0.1, "stall_barrier": 0.7}, TH)
    assert s is not None and s["reasons"] == ["barrier"] and s["idle_issue_share"] == pytest.approx(0.875)


def test_block_size_signal_numbers() -> None:
    # 100 threads: 4 warps, 28 of 128 lanes idle (21.9%); 4 blocks x 4 warps of 48 slots: 1/3 filled
    s = signals.block_size_signal({**BELOW, "block_size": 100.0, "occupancy_limit_blocks": 4.0,
                                   "max_warps_per_sm": 48.0}, TH)
    assert without_relief(s) == {"warps_per_block": 4, "idle_lane_share": 0.21875, "slot_fill": pytest.approx(1 / 3),
                                 "share": pytest.approx(2 / 3), "smaller": None}
    full = signals.block_size_signal({**BELOW, "block_size": 100.0, "occupancy_limit_blocks": 12.0,
                                      "max_warps_per_sm": 48.0}, TH)
    assert full is not None and full["slot_fill"] == 1.0 and full["share"] == 0.21875
    # a multiple of 32 whose blocks fill the SM, no block limit known, or no block: no signal
    assert signals.block_size_signal({**BELOW, "block_size": 64.0, "occupancy_limit_blocks": 24.0,
                                      "max_warps_per_sm": 48.0}, TH) is None
    assert signals.block_size_signal({**BELOW, "block_size": 64.0, "occupancy_limit_blocks": 0.0,
                                      "max_warps_per_sm": 48.0}, TH) is None
    assert signals.block_size_signal({**BELOW, "block_size": 0.0}, TH) is None


def test_no_tensor_signal_by_name_precision_and_gpu() -> None:
    gemm = {"kernel": "sgemm_128x64", "compute_precision": "fp32", "flops_tensor": 0.0, "cc": "8.6",
            "device": "made-up GPU"}
    assert signals.no_tensor_signal(gemm, TH) == {"precision": "fp32"}
    assert signals.no_tensor_signal({**gemm, "cc": "7.0"}, TH) == {"precision": "fp32"}  # Volta: tensor cores
    assert signals.no_tensor_signal({**gemm, "cc": "6.1"}, TH) is None  # Pascal: none
    assert signals.no_tensor_signal({**gemm, "cc": "n/a"}, TH) is None
    assert signals.no_tensor_signal({**gemm, "flops_tensor": 1.0}, TH) is None  # some tensor work already
    assert signals.no_tensor_signal({**gemm, "compute_precision": "fp64"}, TH) is None
    assert signals.no_tensor_signal({**gemm, "kernel": "reduce_sum"}, TH) is None
    # the demangled name is searched first; the device table decides where it knows the GPU
    named = {**gemm, "kernel": "k1", "kernel_demangled": "void wmma_kernel<float>(float *)"}
    assert signals.no_tensor_signal(named, TH) == {"precision": "fp32"}
    assert signals.no_tensor_signal({**gemm, "device": "NVIDIA GeForce GTX 1660 Ti", "cc": "7.5"}, TH) is None
    assert signals.no_tensor_signal({**gemm, "device": "Tesla T4", "cc": "6.0"}, TH) == {"precision": "fp32"}


# --- the limiter rules' wording (ncu_roof.rules.limiter) ------------------------------------------
LIMITED = {"bound": "memory", "pct_of_roof": 40.0, "headroom_s": 9e-4}  # below its roof, 900 us to its bound


def test_binding_unit_rule_message_and_the_fp64_pipe_left_to_its_own_rule() -> None:
    row = {**LIMITED, "pipe_alu_pct": 70.0, "pipe_fma_pct": 40.0, **units(pipe_alu=7e-4, pipe_fma=4e-4, dram=1e-4)}
    [f] = run(limiter.binding_unit, placed(row))
    assert f.time_at_stake_s == pytest.approx(0.6e-3)  # 1 ms until the FMA pipe's 400 us bind
    assert f.message == ("k0: bound by ALU pipe, 70% busy; relieving it alone wins at most 600 us of 1 ms; then FMA "
                         "pipe (40%) binds (1 launch). It runs integer and logic operations, comparisons, FP32 "
                         "min/max and conversions. Cut its work: less integer work per element: strength-reduce "
                         "index arithmetic, hoist invariant comparisons, fewer conversions.")
    # L1/TEX saturated while DRAM idles: the data is re-read through the caches
    l1 = {**LIMITED, **units(l1=9.5e-4, dram=5e-6, issue=3e-4)}
    [g] = run(limiter.binding_unit, placed(l1))
    assert g.message.startswith("k0: bound by L1/TEX, 95% busy; relieving it alone wins at most 700 us of 1 ms; "
                                "then issue slots (30%) binds")
    assert g.message.endswith("DRAM is only 0.5% busy: the data is re-read through the caches; keep it on chip "
                              "(tiles in shared memory and registers, wider loads).")
    # the FP64 pipe binding: named here only where the fp64-pipe rule does not fire
    fp64 = {**LIMITED, "pipe_fp64_pct": 70.0, **units(pipe_fp64=7e-4, dram=1e-4)}
    [h] = run(limiter.binding_unit, placed(fp64))
    assert h.message.startswith("k0: bound by FP64 pipe, 70% busy; relieving it alone wins at most 900 us of 1 ms; "
                                "then DRAM (10%) binds")
    consumer = {**fp64, "flops_fp64": 0.5e9, "flops": 0.5e9, "time_lower_bound_s": 1e-4,
                "peak_fp64_flops_per_s": 1e12, "peak_fp32_flops_per_s": 64e12}
    assert not run(limiter.binding_unit, placed(consumer))


def test_warp_stalls_message_with_and_without_the_issue_counters() -> None:
    row = {**LIMITED, "stall_wait": 0.1, "stall_barrier": 0.7, "issue_active": 0.4,
           "warps_eligible_per_scheduler": 0.8, **units(issue=4e-4, dram=1e-4)}
    [f] = run(limiter.warp_stalls, placed(row))
    assert f.time_at_stake_s == pytest.approx(0.6e-3)  # the idle 60% of the issue slots
    assert f.message == ("k0: warps stall, up to 600 us of 1 ms at stake (1 launch). Issue slots used 40%. Stalls "
                         "(cycles per issued instruction): barrier 88% (synchronization: fewer __syncthreads(), even "
                         "work between them). Under one warp ready per cycle: too few warps or too little ILP.")
    [g] = run(limiter.warp_stalls, placed({**row, "warps_eligible_per_scheduler": 1.0}))  # one ready: enough
    assert g.message.endswith("even work between them).")
    [h] = run(limiter.warp_stalls, placed({**row, "issue_active": np.nan, "warps_eligible_per_scheduler": np.nan}))
    # barrier's 7/8 of the time, within the 600 us above the binding issue slots' bound
    assert "Issue slots" not in h.message and h.time_at_stake_s == pytest.approx(0.6e-3)


def test_block_size_message_names_the_idle_lanes_and_the_empty_warp_slots() -> None:
    row = {**LIMITED, "block_size": 100.0, "occupancy_limit_blocks": 4.0, "max_warps_per_sm": 48.0,
           **units(dram=1e-4)}
    [f] = run(limiter.block_size, placed(row))
    assert f.time_at_stake_s == pytest.approx(2 / 3 * 1e-3)  # 2/3 of the warp slots empty
    assert f.message == ("k0: block size 100, up to 667 us of 1 ms at stake (1 launch). 100 threads is not a "
                         "multiple of 32: its last warp leaves 28 lanes idle (22% of the lanes); 4 warps per block "
                         "at 4 blocks per SM fill only 33% of the SM's 48 warp slots. Use a multiple of 32 threads, "
                         "128-256 per block.")
    [g] = run(limiter.block_size, placed({**row, "block_size": 64.0, "occupancy_limit_blocks": 8.0}))
    assert "(1 launch). 2 warps per block at 8 blocks per SM fill only 33% of the SM's 48 warp slots." in g.message
    [h] = run(limiter.block_size, placed({**row, "occupancy_limit_blocks": 12.0}))  # 48 of 48 slots
    assert "idle (22% of the lanes). Use a multiple" in h.message and h.time_at_stake_s == pytest.approx(0.21875e-3)


def test_one_block_size_finding_per_kernel_speaks_for_its_first_flagged_size() -> None:
    # one kernel flagged at 100 and 200 threads (both leave lanes idle): one finding, for the 100-thread launch
    row = {**LIMITED, "kernel": "k", "occupancy_limit_blocks": 12.0, "max_warps_per_sm": 48.0, **units(dram=1e-4)}
    [f] = run(limiter.block_size, placed({**row, "block_size": 100.0}, {**row, "block_size": 200.0}))
    assert f.ids == (0,) and f.message.startswith("k: block size 100, ")


def test_a_faster_block_shape_of_the_same_kernel_is_priced_at_its_measured_time() -> None:
    # the same 1,048,576 threads: 64 us in (32, 32, 1) blocks, 50 us in (32, 16, 1), where (16, 32, 1) took 20 us
    peer = {**LIMITED, "kernel": "t", "grid_size": 1024.0, "block_size": 1024.0, "block_dim": "(32, 32, 1)",
            "time_s": 64e-6, "shape_peer_time_s": 20e-6, "shape_peer_block": "(16, 32, 1)"}
    mid = {**peer, "grid_size": 2048.0, "block_size": 512.0, "block_dim": "(32, 16, 1)", "time_s": 50e-6}
    [f] = run(limiter.block_size, placed(peer, mid))
    assert f.ids == (0, 1) and f.time_at_stake_s == pytest.approx(44e-6 + 30e-6)
    assert f.message == ("t: block shape, up to 74 us of 114 us at stake (2 launches). The same kernel over the same "
                         "1.05M threads ran in 20 us a launch with (16, 32, 1) blocks; 64 us with (32, 32, 1), 50 us "
                         "with (32, 16, 1): the shape sets which threads are neighbours (how accesses coalesce) and "
                         "the blocks per SM. Launch it with (16, 32, 1) blocks.")
    assert signals.block_size_signal({**peer, "shape_peer_time_s": 64e-6}, TH) is None  # no faster: not measured


def test_no_tensor_cores_note() -> None:
    gemm = {"kernel": "sgemm_k", "compute_precision": "fp32", "flops_tensor": 0.0, "cc": "8.6", "device": "A GPU"}
    [f] = run(limiter.no_tensor_cores, placed(gemm))
    assert f.severity == "info" and f.time_at_stake_s is None
    assert f.message == ("sgemm_k: matrix math on the CUDA cores (fp32, no tensor-core work; 1 launch) on a GPU "
                         "with tensor cores. Its roof is the CUDA-core one; tensor cores (TF32, BF16 or FP16 on this "
                         "A GPU) raise it several-fold if the accuracy allows. Through cuBLAS, CUTLASS or mma/WMMA.")
    # the types each generation has: a Turing part no TF32 or BF16
    [g] = run(limiter.no_tensor_cores, placed({**gemm, "cc": "7.5"}))
    assert "(FP16 or INT8 on this A GPU)" in g.message and "TF32" not in g.message


def test_excess_side_named_at_exactly_half_and_the_bytes_used_rounded() -> None:
    # 100 extra sectors; the stores can carry at most 150 - 100 = 50: the loads at least 50, exactly
    # half ("half the excess or more"): named
    row = {"global_store_sectors": 150.0, "global_store_requests": 100.0, "global_load_sectors": 400.0,
           "global_load_requests": 100.0}
    assert traps._excess_side(row, 100.0) == ("loads", 50.0)
    # 300 sectors where 200 do: 32 x 200 / 300 = 21.3 of every 32 bytes used
    coalesced = {"global_sectors_theoretical": 300.0, "global_sectors_ideal": 200.0, "global_load_sectors": 290.0,
                 "global_load_requests": 100.0, "global_store_sectors": 10.0, "global_store_requests": 10.0}
    text, side = traps._uncoalesced_text(coalesced, {"load": 2.9, "store": 1.0}, 16.0)
    assert (text, side) == ("300 sectors requested per launch where 200 would do (1.5x, 21 of every 32 bytes "
                            "used), all 100 extra from loads. Sectors per request: loads 2.9, stores 1.0.", "loads")


def test_occupancy_advice_per_relaxed_resource() -> None:
    relax = {"blocks_now": 2.0, "blocks_after": 5.0, "warps_now": 6.0, "warps_after": 15.0}
    assert traps._occupancy_advice({}, {**relax, "shared_mem_per_block_after": 20480.0}) == (
        "at most 20.5 kB shared/block (smaller tiles) gives 5 blocks per SM, not 2, +9 warps (6 -> 15).")
    assert traps._occupancy_advice({}, relax) == "relaxing it gives 5 blocks per SM, not 2, +9 warps (6 -> 15)."
    registers = {"blocks_now": 6.0, "blocks_after": 8.0, "warps_now": 24.0, "warps_after": 32.0,
                 "registers_per_thread_after": 64.0}
    assert traps._occupancy_advice({"block_size": 128.0}, registers) == (
        "at most 64 (__launch_bounds__(128, 8)) gives 8 blocks per SM, not 6, +8 warps (24 -> 32).")
    assert traps._occupancy_advice({}, {"limiter": "registers"}) == (
        "use fewer registers or less shared memory per block, or more independent work per thread (ILP).")


def test_wave_tail_of_one_launch() -> None:
    # 2.25 waves of 100 slots: the last wave runs 25 blocks, (1 - 0.25) / 3 = 25% of all slots idle
    [f] = run(launch.wave_tail, placed({"kernel": "w", "waves": 2.25, "grid_size": 225.0, "time_s": 2e-3}))
    assert f.ids == (0,) and f.time_at_stake_s == pytest.approx(0.25 * 2e-3)
    assert f.message == ("w: a wave tail, up to 500 us of 2 ms to win (1 launch). 225 blocks on 100 slots (2.25 "
                         "waves): the last wave leaves 75 slots idle, 25% of all slots. Fill whole "
                         "waves (100 blocks or a multiple).")


def test_all_of_the_extra_within_exactly_the_tolerance() -> None:
    # 1e10 extra, the stores carry at most 20 - 10 = 10: the loads carry 1e10 - 10, exactly 1e10 x (1 - 1e-9): "all"
    exact = {"global_sectors_theoretical": 2e10, "global_sectors_ideal": 1e10, "global_store_sectors": 20.0,
             "global_store_requests": 10.0}
    assert ", all 10G extra from loads." in traps._uncoalesced_text(exact, {}, 16.0)[0]
    # 2e10 extra, the stores carry at most 21: 2e10 - 21 is under 2e10 x (1 - 1e-9) = 2e10 - 20: "at least"
    under = {**exact, "global_sectors_theoretical": 3e10, "global_store_sectors": 31.0}
    assert ", at least 20G of the 20G extra from loads." in traps._uncoalesced_text(under, {}, 16.0)[0]


def test_fp64_advice_at_the_consumer_cut_with_its_tolerance() -> None:
    s = {"fp64_divisions": 0.0, "fp64_over_fp32_peak": TH.consumer_fp64_ratio + EPS}  # 1/8 within the tolerance
    assert traps._fp64_advice({}, s, TH).startswith(" Use FP32")


def test_uncoalesced_and_divergence_messages_in_full() -> None:
    [f] = run(traps.uncoalesced_access, placed({"global_load_sectors": 4e5, "global_load_requests": 1e5,
                                                "global_store_sectors": 32e5, "global_store_requests": 1e5,
                                                "headroom_s": 8e-4, **units(l1=8e-4, dram=1e-4)}))
    assert f.message == ("k0: uncoalesced global stores, up to 875 us of 1 ms at stake. Stores use 32.0 sectors per "
                         "request, loads 4.0 (4-byte elements if both move one type): 8.0x the sectors needed. Make "
                         "consecutive threads touch consecutive words.")
    [h] = run(traps.uncoalesced_access, placed({"global_store_sectors": 32e5, "global_store_requests": 1e5,
                                                "headroom_s": 8e-4, **units(l1=8e-4, dram=1e-4)}))
    assert h.message == ("k0: uncoalesced global stores, up to 500 us of 1 ms at stake. Stores use 32.0 sectors per "
                         "request, more than the 16 that even 16-byte accesses need (at least 2.0x). Make consecutive "
                         "threads touch consecutive words.")
    [g] = run(traps.divergence, placed({"threads_per_inst": 8.0, "headroom_s": 9e-4, "pct_of_roof": 50.0,
                                        **units(issue=5e-4, dram=1e-4)}))
    assert g.message == ("k0: branch divergence, up to 750 us of 1 ms at stake. 8.0 of 32 threads are active per warp "
                         "instruction (25%), at 50% of its roof. Make neighbouring threads take the same branch (sort "
                         "or bucket the work, uniform loop trip counts).")


def test_speed_of_light_only_speaks_for_launches_without_a_percent_of_roof() -> None:
    sol = {"sm_throughput_pct": 20.0, "memory_throughput_pct": 30.0, "dram_throughput_pct": np.nan}
    frame = placed(sol,  # memory-bound at 50% of its roof
                   {**sol, "bound": "latency", "pct_of_roof": 30.0},  # latency-bound under its roof
                   {**sol, "bound": "latency", "pct_of_roof": np.nan},  # latency-bound by its SOL % alone
                   {**sol, "bound": "unknown", "pct_of_roof": np.nan},
                   {**sol, "bound": "unknown", "pct_of_roof": np.nan, "memory_throughput_pct": np.nan})  # SM % only
    assert [f.kernels for f in run(partial.speed_of_light_only, frame)] == [("k2",), ("k3",)]


def test_a_16_byte_element_stored_a_word_at_a_time_is_told_to_store_it_whole() -> None:
    """Each thread stores 4 bytes 16 bytes from its neighbour's (16 sectors a request, 4 would do): an
    int4 or a struct written field by field (GPUIndexSpaces bb's stores before align=16). Stores carry
    the excess, so the advice is theirs; the same 16 sectors on the loads' side leave it unsaid."""
    row = {"global_load_sectors": 4e5, "global_load_requests": 1e5, "global_store_sectors": 16e5,
           "global_store_requests": 1e5, "global_sectors_theoretical": 20e5, "global_sectors_ideal": 8e5,
           "headroom_s": 8e-4, **units(l1=8e-4, dram=1e-4)}
    [f] = run(traps.uncoalesced_access, placed(row))
    assert f.message.endswith(
        "(2.5x, 13 of every 32 bytes used), at least 900k of the 1.2M extra from stores. Stores: 16.0 sectors a "
        "request, 16-byte elements split: write them whole (float4/int4/double2).")
    assert fixes.split_element(row, 4.0, "stores") == ("stores", 16.0, 16.0)
    assert fixes.split_element(row, 4.0, "loads") is None  # loads use 4 sectors a request
    assert fixes.split_element(row, 9.0, "stores") is None  # 9 of 16 bytes: not a field of a 16-byte element
    assert fixes.split_element({**row, "global_store_sectors": 20e5}, 4.0, None) is None  # 20 a request: a stride


def test_loads_under_the_stride_are_split_where_the_stores_span_it_exactly() -> None:
    """GPUIndexSpaces bb before align=16: loads at 13.1 sectors a request (most span 16, some fewer) beside
    stores at exactly 16: the same 16-byte elements read piecewise. Loads at 13.1 alone are a stride."""
    row = {"global_load_sectors": 13.1e5, "global_load_requests": 1e5, "global_store_sectors": 16e5,
           "global_store_requests": 1e5}
    assert fixes.split_element(row, 4.0, "loads") == ("loads", 16.0, pytest.approx(13.1))
    assert fixes.split_element({**row, "global_load_sectors": 12.7e5}, 4.0, "loads") is None  # under 0.8 x 16
    assert fixes.split_element({**row, "global_store_sectors": 8e5}, 4.0, "loads") is None  # stores span 8
    assert fixes.split_element({**row, "global_store_sectors": 15e5}, 4.0, "loads") is None  # nor 16 exactly
    # seq_align fill_matrix (expert read): loads at 15.4 a request beside stores at 24.6: rows apart, no element
    walk = {"global_load_sectors": 37794.0, "global_load_requests": 2460.0, "global_store_sectors": 12100.0,
            "global_store_requests": 492.0}
    assert fixes.split_element(walk, 2.7, "loads") is None
    assert fixes.split_element({**walk, "global_store_sectors": 492 * 16.0}, 2.7, "loads") is not None
    ideal = {**row, "global_sectors_ideal": 8e5}  # 8e5 sectors x 32 B over 2e5 requests x 32 threads: 4 B a thread
    assert fixes.split_loads_text(ideal, "pipe_alu") == (
        "Global loads: 13.1 sectors a request, 4 bytes a thread: 16-byte elements read piecewise. Load them whole "
        "(float4/int4/double2, 16-B aligned): one wider load, and its address arithmetic, for several.")
    assert fixes.split_loads_text(ideal, "dram") is None  # the loads' instructions do not bind


def test_a_float3_read_a_field_at_a_time_is_told_to_pad_it_or_split_it_by_field() -> None:
    """4-byte fields of 12-byte elements: a warp's request spans 32 x 12 B = 12 sectors where 4 do
    (loads at 12.0 a request beside stores of 4-byte words); or, with no request counts, ncu's bytes
    used per sector at a third (GOATnote voxelize_occupancy_kernel, 33.33%)."""
    row = {"global_load_sectors": 12e5, "global_load_requests": 1e5, "global_store_sectors": 4e5,
           "global_store_requests": 1e5, "global_sectors_ideal": 8e5}
    assert fixes.split_element(row, 4.0, "loads") == ("loads", 12.0, 12.0)
    assert fixes.split_loads_text(row, "pipe_lsu") == (
        "Global loads: 12.0 sectors a request, 4 bytes a thread: 12-byte elements read piecewise. Load them whole "
        "(padded to float4, or one array a field (SoA)): one wider load, and its address arithmetic, for several.")
    third = "A third used: 4-byte fields 12 bytes apart, a float3 (or 3-field struct) read a field at a time."
    assert fixes.coalescing_advice({"global_load_bytes_per_sector_pct": 33.33})[0].startswith(third)
    assert fixes.coalescing_advice({"global_load_bytes_per_sector_pct": 34.8})[0] == (
        "Make consecutive threads touch consecutive words.")  # not a third
    assert fixes.coalescing_advice({"global_load_bytes_per_sector_pct": 31.9})[0] == (
        "Make consecutive threads touch consecutive words.")


def test_a_partial_roofline_under_a_busy_sm_is_read_from_the_speed_of_light() -> None:
    """Olajide gemm_tiled (RTX 5070, a 32 x 32 shared-memory tiled SGEMM, 10.2 ms): DRAM bytes and time
    only, 0.94% of the DRAM roof, ncu's SM throughput 88.9%, no memory throughput. Neither below-roof (the
    SM is at its roof) nor at-roof (the point is not) spoke, and the summary said 'Nothing to win'."""
    frame = placed({"bound": "compute", "binding_unit": "sm", "binding_unit_share": 0.889, "pct_of_roof": 0.94,
                    "time_s": 10.2e-3, "sm_throughput_pct": 88.9, "memory_throughput_pct": np.nan,
                    "dram_throughput_pct": np.nan})
    [f] = run(partial.speed_of_light_only, frame)
    assert f.time_at_stake_s is None
    assert f.message == ("k0: no roofline (its point is at 1% of a roof that does not bind); time at stake not "
                         "known (1 launch, 10.2 ms). ncu's speed of light: compute 89%, memory not measured: busy "
                         "inside the SMs (a pipe, the issue slots or shared memory), so only less work for its busiest "
                         "unit wins; the pipe counters and a roofline capture would say which unit and how much.")
    frame.loc[0, "binding_unit_share"] = 0.5  # the SM under its roof: below-roof speaks for it
    assert not run(partial.speed_of_light_only, frame)


def test_a_matrix_kernel_storing_one_output_a_thread_is_told_to_tile_in_registers() -> None:
    """Olajide gemm_tiled's launch shape and stores: 4,096 blocks of 1,024 threads store 524,288 sectors
    (4 a request, coalesced) = 16.8 MB = 4.19M floats, one a thread: no register tile."""
    row = {"kernel": "gemm_tiled_kernel", "grid_size": 4096.0, "block_size": 1024.0,
           "global_store_sectors": 524288.0, "global_store_requests": 131072.0}
    assert fixes.one_output_text(row) == (
        "A matrix kernel storing one 4-byte output a thread (4.19M, as many as threads): each multiply-add loads "
        "both operands. Register tiling (4x4 or 8x8 outputs a thread) loads each once for 4-8.")
    assert fixes.one_output_text({**row, "kernel": "scale_kernel"}) is None  # not matrix math by name
    assert fixes.one_output_text({**row, "grid_size": 2048.0}) is None  # two outputs a thread: tiled already
    assert fixes.one_output_text({**row, "global_store_requests": 65536.0}) is None  # 8 sectors a store request
    frame = placed({"kernel": "gemm_tiled_kernel", "bound": "compute", "binding_unit": "sm",
                    "binding_unit_share": 0.889, "pct_of_roof": 0.94, "time_s": 10.2e-3, "sm_throughput_pct": 88.9,
                    "memory_throughput_pct": np.nan, "dram_throughput_pct": np.nan,
                    **{k: v for k, v in row.items() if k != "kernel"}})
    [f] = run(partial.speed_of_light_only, frame)
    assert f.message.endswith("memory not measured: busy inside the SMs. " + fixes.one_output_text(row))


def test_a_latency_bound_launch_with_idle_sms_is_told_to_fill_them() -> None:
    # SMs active 70% of the elapsed cycles (30% idle) at SOL 40% / 30%: the grid first; at 81% active, not said
    frame = placed({"bound": "unknown", "pct_of_roof": np.nan, "sm_throughput_pct": 40.0, "memory_throughput_pct": 30.0,
                    "dram_throughput_pct": np.nan, "sm_active_cycles": 7e5, "sm_cycles": 1e6})
    [f] = run(partial.speed_of_light_only, frame)
    assert f.message.endswith("compute 40%, memory 30%: latency-bound; SMs idle 30%: too few blocks or a partial "
                              "last wave. Fill the SMs: more, smaller blocks, or whole waves.")
    frame.loc[0, "sm_active_cycles"] = 8.1e5
    [g] = run(partial.speed_of_light_only, frame)
    assert "idle" not in g.message and g.message.endswith("more bandwidth or FLOPs will not help.")


def test_uncoalesced_text_of_one_ideal_sector() -> None:
    # 2 sectors where 1 would do (the smallest flagged launch with both counts): the ideal wording
    text, side = traps._uncoalesced_text({"global_sectors_theoretical": 2.0, "global_sectors_ideal": 1.0}, {}, 16.0)
    assert (text, side) == ("2 sectors requested per launch where 1 would do (2.0x, 16 of every 32 bytes used).", None)


def test_speed_of_light_tie_reads_memory_bound() -> None:
    frame = placed({"bound": "unknown", "pct_of_roof": np.nan, "sm_throughput_pct": 70.0,
                    "memory_throughput_pct": 70.0, "dram_throughput_pct": np.nan})
    [f] = run(partial.speed_of_light_only, frame)
    assert "compute 70%, memory 70%: likely memory-bound" in f.message


def test_a_warp_over_rows_of_a_narrow_block_is_serialized_from_two_wavefronts_a_request() -> None:
    # an (8, 32, 1) block: a warp spans 4 rows of 8 threads; 3 wavefronts a request are its rows' segments,
    # while with 32-wide blocks 3 stay under the 4 that 16-byte accesses need
    assert [access.warp_rows({"block_dim": d}) for d in ("(8, 32, 1)", "(16, 16, 1)", "(32, 8, 1)", "(1, 128, 1)",
                                                          "(8, 1, 1)", "(12, 4, 2)", None)] == [4, 2, 1, 1, 1, 3, 1]
    l1 = {"bound": "memory", "pct_of_roof": 40.0, "time_s": 1e-3, "l1_data_pipe_pct": 48.0, "l1_requests_pct": 16.0,
          **units(l1=9.6e-4, l2=6e-5)}
    narrow = signals.binding_unit_signal({**l1, "block_dim": "(8, 32, 1)"}, TH)
    wide = signals.binding_unit_signal({**l1, "block_dim": "(256, 1, 1)"}, TH)
    assert narrow is not None and wide is not None
    assert (narrow["wavefronts_per_request"], narrow["warp_rows"], narrow["serialized"]) == (3.0, 4, True)
    assert (wide["warp_rows"], wide["serialized"]) == (1, False)
    one_wide = signals.binding_unit_signal({**l1, "l1_data_pipe_pct": 31.9, "block_dim": "(8, 32, 1)"}, TH)
    assert one_wide is not None and one_wide["serialized"] is False  # 1.99 wavefronts a request: under 2


def test_l2_rewrites_read_a_chart_only_launch_s_stores_from_l2_s_side() -> None:
    # COALDA rgb_increase_brightness (RTX 4050): 73,536 L2 sectors written by L1 for 24,576 touched (the
    # 786 KB image), reads 24,576: each sector written 3 times; what touching each once removes, of L2's
    # 98,545 sectors (3,153,440 bytes): 48,960 of them
    row = {"l2_write_sectors_from_l1": 73536.0, "l2_read_sectors_from_l1": 24576.0,
           "l2_missed_sectors_from_l1": 24576.0, "l2_bytes": 3153440.0}
    v = access.l2_rewrites(row, TH)
    assert v is not None and v["excess"] == pytest.approx(73536 / 24576)
    assert v["l2_share"] == pytest.approx(48960 * 32 / 3153440)
    # the unrolled kernel also re-reads: 196,544 written, 159,382 read, 24,576 touched, 354,172 L2 sectors
    unrolled = {"l2_write_sectors_from_l1": 196544.0, "l2_read_sectors_from_l1": 159382.0,
                "l2_missed_sectors_from_l1": 24576.0, "l2_bytes": 354172.0 * 32}
    u = access.l2_rewrites(unrolled, TH)
    assert u is not None and u["l2_share"] == pytest.approx((196544 + 159382 - 2 * 24576) / 354172)
    # coalesced stores write each sector once; with L1's own store sectors counted, L1 speaks instead
    assert access.l2_rewrites({**row, "l2_write_sectors_from_l1": 24576.0}, TH) is None
    assert access.l2_rewrites({**row, "l2_write_sectors_from_l1": 49151.0}, TH) is None  # under 2 writes a sector
    assert access.l2_rewrites({**row, "global_store_sectors": 73536.0}, TH) is None
    s = signals.uncoalesced_signal(row, TH)
    assert s is not None and s["relief"].removes == {"l2": pytest.approx(v["l2_share"])} and s["l2_view"] == v


def test_a_smaller_block_is_weighed_by_registers_warps_and_shared_memory() -> None:
    # 1,024 threads at 45 registers (48 allocated: 1,536 a warp): one block, 32 of 48 warps; 256 threads fit
    # min(42 // 8, 48 // 8, 24 blocks, 8 by shared memory) = 5 blocks, 40 warps: 1.25x, a fifth of the time
    row = {"bound": "latency", "pct_of_roof": 30.0, "block_size": 1024.0, "registers_per_thread": 45.0,
           "max_registers_per_sm": 65536.0, "max_warps_per_sm": 48.0, "max_blocks_per_sm": 24.0,
           **{f"occupancy_limit_{k}": v for k, v in (("blocks", 24.0), ("registers", 1.0), ("warps", 1.0),
                                                       ("shared_mem", 8.0))}}
    assert occupancy.smaller_block(row, TH) == {"block_after": 256.0, "warps_now": 32.0, "warps_after": 40.0,
                                                "share": pytest.approx(0.2)}
    # shared memory a block that fits one block an SM stays one block at any size: no gain said
    assert occupancy.smaller_block({**row, "occupancy_limit_shared_mem": 1.0}, TH) is None
    # ...unless the SM's most holds more of today's bytes a block: ncu's limit of 1 for GPU-DEMO's 1,024-thread
    # transposes at 5,248 B each is the carveout chosen for one block; 102,400 // 5,248 = 19 blocks of 256 fit
    carved = {**row, "occupancy_limit_shared_mem": 1.0, "shared_mem_per_block": 5248.0,
              "max_shared_mem_per_sm": 102400.0}
    assert occupancy.smaller_block(carved, TH) == {"block_after": 256.0, "warps_now": 32.0, "warps_after": 40.0,
                                                   "share": pytest.approx(0.2)}
    # 48 kB a block: two blocks of 256 threads (16 warps) where one of 1,024 holds 32: none
    assert occupancy.smaller_block({**carved, "shared_mem_per_block": 49152.0}, TH) is None
    # a saturated unit binds: more warps do not help; no unit measured: nothing says they would
    assert occupancy.smaller_block({**row, "bound": "memory", "binding_unit_share": 0.9}, TH) is None
    assert occupancy.smaller_block({**row, "bound": "memory", "binding_unit_share": 0.61}, TH) is not None
    assert occupancy.smaller_block({**row, "bound": "unknown", "pct_of_roof": np.nan}, TH) is None
    # a full queue holds most stalls (fill_vector's FP64 work on a GeForce: tex throttle 74%): warps only wait
    throttled = {**row, "stall_tex_throttle": 7.4, "stall_wait": 2.6}
    assert occupancy.smaller_block(throttled, TH) is None
    assert occupancy.smaller_block({**throttled, "stall_wait": 7.5}, TH) is not None  # 49.7%: under the half
    # 40 registers: 1,280 a warp, 51 warps' worth: 256-thread blocks fit 6, 48 warps; 512 threads stay at 32
    assert occupancy.smaller_block({**row, "registers_per_thread": 40.0}, TH)["warps_after"] == 48.0
    assert occupancy.smaller_block({**row, "block_size": 256.0}, TH) is None  # not a large block
