"""The causes real optimisation ladders fix (issue 45), on the real reports they come from: local
memory, the launch-floor gate, register caps that would spill, and what is said where nothing can
be judged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import cached_diagnosis, roofless_diagnosis

from ncu_roof.model.roofline import Thresholds
from ncu_roof.render.summary import unjudged_line
from ncu_roof.rules import Context, evaluate, fixes
from ncu_roof.rules.ladder import _local_cause, local_memory_signal
from ncu_roof.rules.limiter import register_rung
from ncu_roof.rules.lines import called_function
from ncu_roof.rules.stalls import MEMORY_WAITS, stall_shares


def _of(d: Any, rule: str, kernel: str | None = None) -> list[Any]:
    return [f for f in d.findings if f.rule == rule and (kernel is None or kernel in f.kernels)]


def test_local_memory_is_named_with_its_bytes_and_priced_by_what_it_removes(realdata: Path) -> None:
    """tkhenry delayAndSumFast (ncu's details page shows local loads and stores): 16.6G load and 16.6G
    store sectors = 1.06 TB at L1, 18.5% of L1's bytes; 6.51G sectors (208 GB) miss L1, 10.3% of L2's.
    The ALU pipe is the busiest unit at 53% (6.50 s of 12.25 s), under the 80% at which a unit binds:
    the 5.75 s above it is latency, whose waits on memory (and their part of the barriers') shrink at most with the
    largest share of memory work the fix removes (L1's 18.5%); more than the long-scoreboard waits on
    local loads alone (their share of the waits, times the local loads' share of all loads)."""
    d = cached_diagnosis(realdata / "tkhenry-uofa__mixes-reconstruction" / "full_profile.ncu-rep")
    [f] = _of(d, "local-memory", "delayAndSumFast")
    ev = f.evidence
    assert (ev["local_load_sectors"], ev["local_store_sectors"]) == (16630990848.0, 16630990848.0)
    assert ev["local_bytes"] == 32 * (16630990848.0 * 2)
    assert ev["local_l1_share"] == pytest.approx(0.1849, abs=1e-4)
    assert ev["local_l2_bytes"] == 32 * (218801148.0 + 6291454036.0)
    assert ev["local_l2_share"] == pytest.approx(0.1027, abs=1e-4)
    row = d.placed[d.placed["kernel"] == "delayAndSumFast"].iloc[0].to_dict()
    shares, _ = stall_shares(row)
    # smsp__sass_inst_executed_op_global_ld.sum: the local loads are 21% of the loads that wait there
    assert (row["local_load_inst"], row["global_load_inst"]) == (4157747712.0, 15607795122.0)
    wait = shares["long_scoreboard"] * 4157747712.0 / (4157747712.0 + 15607795122.0)
    gap = row["time_s"] - row["unit_pipe_alu_s"]
    assert row["unit_pipe_alu_s"] / row["time_s"] == pytest.approx(0.531, abs=1e-3)
    # the waits on memory: 10.8% of the stalls, and of the 3.6% at barriers the same share of the rest
    memory, barrier = sum(shares.get(r, 0.0) for r in MEMORY_WAITS), shares["barrier"]
    assert (memory, barrier) == (pytest.approx(0.1083, abs=1e-4), pytest.approx(0.0363, abs=1e-4))
    memory += barrier * memory / (1 - barrier)
    assert memory == pytest.approx(0.1123, abs=1e-4) and gap * wait == pytest.approx(0.0862, abs=1e-4)
    assert f.time_at_stake_s == pytest.approx(gap * ev["local_l1_share"] * memory, rel=1e-9)
    assert f.time_at_stake_s == pytest.approx(0.1195, abs=1e-4)
    assert "1.06 TB local (18% of L1's bytes; 208 GB past L1, 10% of L2's)" in f.message
    # a debug build (MOV 44% of the instructions run, memory through generic loads): the flag is the cause
    assert ("10% of L2's). A debug build (nvcc -G) keeps variables, and the registers of calls it does not inline, "
            "on the stack: rebuild without -G (-lineinfo keeps the source lines).") in f.message
    # built otherwise, every local sector in sqrtf's register saves and restores (no line table there) would
    # make the call the cause
    assert {x.function for x in f.lines} == {"sqrtf"} and sum(x.share for x in f.lines) == pytest.approx(1.0)
    spills = _local_cause({**row, "inst_mov": 0.0}) + "."
    assert spills.startswith("Spills (56 registers; -Xptxas -v counts them)")
    built = replace(f, message=f.message.replace(ev["cause_text"], spills), evidence={**ev, "cause_text": spills})
    assert ("10% of L2's). All of it is in sqrtf, a called function saving registers on the stack: inline it "
            "(__forceinline__; -use_fast_math for math such as sqrtf, if accuracy allows).") in called_function(
                built).message
    assert f.lines and f.lines[0].counter == "l2_sectors_local"  # lines ranked by local sectors


def test_local_memory_under_two_percent_of_l1_and_l2_is_not_named() -> None:
    row = {"local_load_sectors": 10.0, "local_store_sectors": 10.0, "l1_bytes": 32 * 1000.0, "l2_bytes": 1e9}
    assert local_memory_signal(row, Thresholds()) is not None  # 640 B of 32 kB: 2% exactly is named
    row["l1_bytes"] = 32 * 2000.0
    assert local_memory_signal(row, Thresholds()) is None  # 1%
    row |= {"local_load_sectors_missed": 20.0, "l2_bytes": 32 * 1000.0}
    assert local_memory_signal(row, Thresholds()) is not None  # 2% of L2's bytes


def test_a_launch_at_the_launch_floor_gets_only_the_overhead_note(realdata: Path) -> None:
    """alife populate_grid_indices and update_positions_velocities: 4.7 us launches the placement calls
    launch-bound were priced 19.3 and 18.1 us of grid-underfill; the 10-13 us kernels keep theirs."""
    d = cached_diagnosis(realdata / "jonahshader__alife_cuda" / "profile_output.ncu-rep")
    underfilled = {f.kernels[0] for f in _of(d, "grid-underfill")}
    assert underfilled == {"compute_forces", "compute_density"}
    at_floor = set(d.placed.loc[d.placed["bound"] == "overhead", "id"])
    for f in d.findings:
        if f.rule != "overhead-regime":
            assert not at_floor & set(f.ids), f.rule


def test_one_block_demo_launches_get_no_grid_advice_and_no_more_than_their_time_above_the_floor(
        realdata: Path) -> None:
    """aplainjane shared_report: seven one-block 3-5 us launches were told seven times to split the grid;
    setColReadCol (5.25 us) was put 5.21 us at stake, more than its time above the 1.5 us floor."""
    d = cached_diagnosis(realdata / "aplainjane__CUDA_Learning" / "shared_report.ncu-rep")
    assert {f.rule for f in d.findings} == {"overhead-regime"}
    [f] = _of(d, "overhead-regime", "setColReadCol")
    row = d.placed[d.placed["kernel"] == "setColReadCol"].iloc[0]
    assert f.time_at_stake_s == pytest.approx(row["time_s"] - 1.5e-6, rel=1e-12)


def test_a_grid_of_one_warp_blocks_is_told_it_holds_too_few_warps(realdata: Path) -> None:
    """cornflexxx GSZ (GTX 1660 Ti class, 34 SMs): 31 blocks of one warp each, 3.2% achieved occupancy.
    It was called a 9% underfill (3 idle SMs, 39.2 us of 444 us); the busy SMs hold one warp of the 16 the
    launch allows each, so the grid's 31 warps are 6% of the 544 it allows. Priced as the missing warps
    (latency, within the DRAM unit's bound at 26%): 335 us."""
    d = cached_diagnosis(realdata / "cornflexxx__HomCmprsr" / "report.ncu-rep")
    [f] = _of(d, "grid-underfill", "GSZ_compress_kernel_outlier_vec")
    assert (f.evidence["grid_warps"], f.evidence["warps_allowed"]) == (31.0, 544.0)
    rows = d.placed[d.placed["kernel"] == "GSZ_compress_kernel_outlier_vec"]
    bound = rows[[c for c in rows.columns if c.startswith("unit_") and c.endswith("_s")
                  and c not in ("unit_lower_bound_s", "unit_headroom_s")]].max(axis=1)
    assert f.time_at_stake_s == pytest.approx(float((rows["time_s"] - bound).sum()), rel=1e-6)
    assert f.time_at_stake_s == pytest.approx(334.9e-6, abs=0.1e-6)
    assert "31 blocks of 32 threads: 31 warps where the launch allows 544 at once (6%)" in f.message
    # alife's 4 blocks of 8 warps fill a third of each busy SM: the idle SMs are the fault, as before
    [g] = _of(cached_diagnosis(realdata / "jonahshader__alife_cuda" / "profile_output.ncu-rep"), "grid-underfill",
              "compute_forces")
    assert "grid_warps" not in g.evidence and "36 SMs (90%) do nothing" in g.message


def test_no_finding_is_priced_above_its_launches_time_less_the_floor(realdata: Path) -> None:
    from tests.rules.test_screens import _inputs

    checked = 0
    for path in _inputs(realdata):
        try:
            d = cached_diagnosis(path)
        except Exception:  # noqa: BLE001 - inputs the tool refuses
            continue
        for f in d.findings:
            if not f.time_at_stake_s or not f.ids or f.region:
                continue
            rows = d.placed[d.placed["id"].isin(f.ids)]
            if f.report:
                rows = rows[rows["report"].astype(str) == f.report]
            room = float((rows["time_s"] - rows["launch_floor_s"].fillna(0.0)).clip(lower=0).sum())
            assert f.time_at_stake_s <= room * (1 + 1e-9), f"{path.name}: {f.rule} {f.kernels[0]}"
            checked += 1
    assert checked > 150


def test_a_register_cap_that_would_spill_a_register_tile_is_not_advised(realdata: Path) -> None:
    """piragi matmul_2d_tiling (128 registers, a register-tiled GEMM): told to cap at 40 for 370 ms,
    a cap that spills the tile; its runtime occupancy (32% of 33%) leaves nothing else to say."""
    d = cached_diagnosis(realdata / "piragi__fuzigrad" / "output.ncu-rep")
    assert not _of(d, "low-occupancy")
    assert [f.rule for f in d.findings] == ["binding-unit"]


def test_no_roof_and_no_finding_is_cannot_judge_not_nothing_to_win(realdata: Path) -> None:
    """copy_blocked (no GPU name, no FLOPs; its T4 left unnamed): ncu's own rules report 75% excess sectors
    there; ncu-roof said 'Nothing to win'."""
    d = roofless_diagnosis(realdata / "brycelelbach__nsightful" / "copy_blocked.csv")
    assert not d.findings
    line = unjudged_line(d.placed, False)
    assert line is not None and line.startswith("Cannot judge 100% of the time: no roof, FLOPs or bytes")


def test_priced_findings_without_a_roofline_say_where_their_stakes_come_from(realdata: Path) -> None:
    """cornflexxx (speed of light and launch statistics only): 'Cannot judge 100% of the time' stood over
    findings priced at 335 us and 238 us; what cannot be judged is the roofline, not the launches."""
    d = cached_diagnosis(realdata / "cornflexxx__HomCmprsr" / "report.ncu-rep")
    assert d.findings and d.findings[0].time_at_stake_s
    assert unjudged_line(d.placed, True) == (
        "No roofline: no roof, FLOPs or bytes for those launches (see the notes); the stakes below come from what "
        "the report does hold (ncu's unit throughputs, the launch shape).")
    assert unjudged_line(d.placed, False).startswith("Cannot judge 100% of the time")  # nothing priced: as before


def test_roofless_launches_a_finding_prices_are_not_called_unjudged(realdata: Path) -> None:
    """alife (expert read 2): 'Cannot judge 63% of the time' stood over fp64-pipe's 3.1 ms on
    mix_give_take_3_kernel, 61% of the time, priced from ncu's FP64 pipe throughput; the 2% left unpriced
    is under the 5% worth a line, so the line says where the stakes come from instead."""
    from ncu_roof.render.summary import advice_groups, priced_launches

    d = cached_diagnosis(realdata / "jonahshader__alife_cuda" / "profile_output.ncu-rep")
    ranked, _ = advice_groups(d.findings)
    assert unjudged_line(d.placed, True) == (
        "Cannot judge 63% of the time: no roof, FLOPs or bytes for those launches (see the notes).")
    assert unjudged_line(d.placed, True, priced=priced_launches(ranked)) == (
        "No roofline for 63% of the time: no roof, FLOPs or bytes for those launches (see the notes); the stakes "
        "below come from what the report does hold (ncu's unit throughputs, the launch shape).")
    unpriced = priced_launches([f for f in ranked if "mix_give_take_3_kernel" not in f.kernels])
    assert unjudged_line(d.placed, True, priced=unpriced) == (
        "Cannot judge 61% of the time: no roof, FLOPs or bytes for those launches (see the notes).")


def test_nothing_to_win_stays_where_a_roof_judged_every_launch() -> None:
    placed = pd.DataFrame({"time_s": [1e-3], "bound": ["memory"], "pct_of_roof": [95.0]})
    assert unjudged_line(placed, False) == "Nothing to win: no rule found time at stake in these launches."


ASYNC_ROW = {"report": "r", "device": "NVIDIA A10G", "kernel": "tiled", "id": 0, "cc": "8.6", "time_s": 1e-3,
             "bound": "latency", "binding_unit": "l1", "binding_unit_share": 0.3, "pct_of_roof": 20.0,
             "unit_l1_s": 0.3e-3, "launch_floor_s": 1.5e-6, "shared_mem_per_block": 16384.0,
             "shared_wavefronts": 1e6, "global_load_sectors": 1e6, "stall_long_scoreboard": 3.0,
             "stall_barrier": 1.0, "stall_wait": 1.0, "issue_active": 0.3}


def test_tiles_staged_by_synchronous_loads_are_told_to_pipeline_with_cp_async() -> None:
    """Long-scoreboard 60% and barrier 20% of the stall cycles on an A10G kernel staging 16 kB tiles:
    a pipeline covers both waits (80% of the time above the bound), within the idle issue slots (70%)."""

    from ncu_roof.rules.ladder import async_copy_signal

    s = async_copy_signal(ASYNC_ROW, Thresholds())
    assert s is not None and s["long_scoreboard_share"] == pytest.approx(0.6)
    assert s["barrier_share"] == pytest.approx(0.2)
    assert s["relief"].latency == pytest.approx(0.8) and s["relief"].share == pytest.approx(0.7)
    assert not s["pipelined"]
    assert async_copy_signal({**ASYNC_ROW, "cc": "7.5"}, Thresholds()) is None  # no cp.async before Ampere
    assert async_copy_signal({**ASYNC_ROW, "shared_mem_per_block": 1024.0}, Thresholds()) is None  # no tiles
    findings, _ = evaluate(Context(pd.DataFrame([ASYNC_ROW]), pd.DataFrame(), Thresholds()))
    [f] = [f for f in findings if f.rule == "async-copy"]
    assert f.time_at_stake_s == pytest.approx(0.8 * 0.7e-3)  # 80% of the 0.7 ms above the L1 bound
    assert "cp.async (LDGSTS)" in f.message and "double buffering" in f.message and "TMA" not in f.message
    assert not [f for f in findings if f.rule == "warp-stalls"]  # async-copy speaks for these waits


def test_tiles_copied_by_cp_async_and_still_waited_for_are_told_to_deepen_the_pipeline() -> None:
    """The second rung of a cp.async ladder (one stage -> two won 15.3 -> 14.8 ms on an unseen one):
    LDGSTS counted, long-scoreboard and barrier waits still 80% of the stalls. Priced as the first
    rung (the waits a deeper pipeline covers, within the idle issue slots); no cp.async advice again."""
    from ncu_roof.rules.ladder import async_copy_signal

    row = {**ASYNC_ROW, "async_copy_inst": 5e5}
    s = async_copy_signal(row, Thresholds())
    assert s is not None and s["pipelined"] and s["relief"].latency == pytest.approx(0.8)
    # waits split between the copy's scoreboard and the barrier after it count together once pipelined
    split = {**row, "stall_long_scoreboard": 0.5, "stall_barrier": 1.5, "stall_wait": 3.0}
    assert async_copy_signal(split, Thresholds()) is not None
    plain = {k: v for k, v in split.items() if k != "async_copy_inst"}
    assert async_copy_signal({**ASYNC_ROW, **plain}, Thresholds()) is None  # plain loads: 10% are not the copies'
    # plain loads whose own waits are 20% of the stalls, the barrier after them another 20%: their waits
    barrier = async_copy_signal({**ASYNC_ROW, "stall_long_scoreboard": 1.0, "stall_barrier": 1.0, "stall_wait": 3.0},
                                Thresholds())
    assert barrier is not None and not barrier["pipelined"] and barrier["relief"].latency == pytest.approx(0.4)
    tma = {**split, "async_copy_inst": 0.0, "tensor_path_tma_pct": 40.0, "global_load_sectors": 0.0, "cc": "9.0"}
    assert async_copy_signal(tma, Thresholds())["pipelined"] == "the TMA"  # an H100 kernel fed by the TMA
    quiet = {**row, "stall_long_scoreboard": 0.2, "stall_barrier": 0.2, "stall_wait": 4.6}
    assert async_copy_signal(quiet, Thresholds()) is None  # 8% of the stalls: the pipeline covers them
    findings, _ = evaluate(Context(pd.DataFrame([row]), pd.DataFrame(), Thresholds()))
    [f] = [f for f in findings if f.rule == "async-copy"]
    assert f.time_at_stake_s == pytest.approx(0.8 * 0.7e-3)
    assert "by cp.async and still waited for" in f.message and "cp.async.wait_group(stages - 2)" in f.message
    assert "double buffering" not in f.message


def test_ldgsts_is_read_from_a_full_set_report(realdata: Path) -> None:
    """A full set (ncu 2023 on) counts LDGSTS as smsp__inst_executed_op_ldgsts.sum and by cache policy,
    not as sm__sass_inst_executed_op_ldgsts.sum: the CUTLASS int8 GEMM of panjd123 (A100) issues 2,688
    per launch. Read as absent, async-copy would tell a cp.async kernel to use cp.async."""
    d = cached_diagnosis(realdata / "panjd123__cutlass" / "report-s4.ncu-rep")
    ldgsts = d.placed.set_index("kernel")["async_copy_inst"]
    assert ldgsts.max() == 2688.0
    assert d.placed["global_load_inst"].max() == 3543552.0  # smsp__sass_inst_executed_op_global_ld.sum


def test_the_first_rung_of_a_gemm_ladder_is_tiling_in_shared_memory(realdata: Path) -> None:
    """princ0301 matMul (naive, RTX 2050): the LSU pipe 99% busy loading both operands for every FMA; the
    measured change (32 x 32 shared tiles) won 1.76 ms of 10.2 ms. Its advice was 'fewer, wider accesses,
    values kept in registers'. Tiling is a rewrite: it removes the loads' instructions and address
    arithmetic too, so binding-unit and matrix-reuse price it alike, down to what 128 x 128 tiles need
    (71.3 MB at the DRAM roof, 845 us), and the smaller claim (matrix-reuse's) speaks for both."""
    d = cached_diagnosis(realdata / "princ0301__cuda_gpu_kernel" / "matmul_naive.ncu-rep")
    f = d.findings[0]
    assert f.rule == "matrix-reuse" and f.evidence["also"] == ["binding-unit"]
    assert "128 x 128 block tiles move 71.3 MB, 845 us at the DRAM roof" in f.message
    assert f.time_at_stake_s == pytest.approx(10.224e-3 - 0.845e-3, abs=2e-6) and f.time_at_stake_s >= 1.76e-3
    tiled = cached_diagnosis(realdata / "princ0301__cuda_gpu_kernel" / "matmul_shared_32.ncu-rep")
    assert "tiles in shared memory: each block" not in tiled.findings[0].message  # it tiles already


BLOCK_ORDER_ROW = {"report": "r", "device": "NVIDIA A100-SXM4-80GB", "kernel": "sgemm_tiled", "id": 0, "cc": "8.0",
                   "time_s": 10e-3, "bound": "memory", "binding": "dram", "binding_unit": "dram",
                   "binding_unit_share": 0.9, "pct_of_roof": 90.0,
                   "unit_dram_s": 9e-3, "unit_l2_s": 3e-3, "launch_floor_s": 1.5e-6, "compute_precision": "fp32",
                   "flops": 2 * 4096.0 ** 3, "dram_bytes": 10 * 1024 ** 3, "l2_bytes": 12 * 1024 ** 3,
                   "shared_mem_per_block": 32768.0, "kernel_demangled": "sgemm_tiled"}


def test_tiles_fetched_from_dram_again_are_told_to_swizzle_the_block_order() -> None:
    """A tiled SGEMM of N = 4096 moving 10 GiB from DRAM with L2 serving few re-reads (DRAM 83% of L2's
    bytes): 128 x 128 tiles need 65 x 4096^2 x 4 B = 4.36 GB. The fix removes the DRAM bytes above that:
    DRAM binds, so the launch shrinks with them (10 ms -> 4.06 ms)."""

    from ncu_roof.rules.reference import block_order_signal

    s = block_order_signal(BLOCK_ORDER_ROW, Thresholds())
    tiled = 65 * 4096.0 ** 2 * 4
    assert s is not None and s["n"] == pytest.approx(4096) and s["tiled_bytes"] == pytest.approx(tiled)
    assert s["relief"].removes["dram"] == pytest.approx(1 - tiled / (10 * 1024 ** 3))
    assert block_order_signal({**BLOCK_ORDER_ROW, "shared_mem_per_block": 1024.0}, Thresholds()) is None  # untiled
    assert block_order_signal({**BLOCK_ORDER_ROW, "l2_bytes": 30 * 1024 ** 3}, Thresholds()) is None  # L2 reuses
    spills = {"local_load_sectors_missed": 6 * 1024 ** 3 / 32, "local_store_sectors_missed": 0.0}
    assert block_order_signal({**BLOCK_ORDER_ROW, **spills}, Thresholds()) is None  # the DRAM bytes are spills
    # a third of L2's bytes spills: DRAM loses the same share (the roofline's reading), 6.67 of its 10 GiB
    third = {"local_load_sectors_missed": 4 * 1024 ** 3 / 32, "local_store_sectors_missed": 0.0}
    some = block_order_signal({**BLOCK_ORDER_ROW, **third}, Thresholds())
    assert some is not None and some["over_tiled"] == pytest.approx(10 * 1024 ** 3 * (2 / 3) / tiled)
    assert some["dram_over_l2"] == pytest.approx(10 / 12)
    findings, _ = evaluate(Context(pd.DataFrame([BLOCK_ORDER_ROW]), pd.DataFrame(), Thresholds()))
    [f] = [f for f in findings if f.rule == "block-order"]
    # DRAM binds and keeps its efficiency: its 9 ms and the 1 ms above them shrink with its bytes; L2's 3 ms stay
    after = max(10e-3 * tiled / (10 * 1024 ** 3), 3e-3)
    assert f.time_at_stake_s == pytest.approx(10e-3 - after)
    assert "Rasterize (swizzle) the block order" in f.message and findings[0] is f


def test_large_tiles_fetched_again_are_told_the_block_order_not_larger_tiles() -> None:
    """The same SGEMM with its roofs known (A100: DRAM 1.5 TB/s, its 137 GFLOP 7.05 ms at the FP32 roof):
    matrix-reuse would price a rewrite to 128 x 128 tiles and say 'larger shared tiles'. With 1,024 blocks
    for N = 4096 each computes 16.4k outputs, a 128 x 128 tile already: the size is not what refetches
    them, their order is, and block-order speaks alone. With 16,384 blocks (32 x 32 tiles) larger tiles
    are the first fix: matrix-reuse speaks (block-order beside it)."""
    roofs = {"dram_roof_bytes_per_s": 1.5e12, "unit_flops_s": 7.05e-3, "block_size": 256.0}
    large = {**BLOCK_ORDER_ROW, **roofs, "grid_size": 1024.0}
    findings, _ = evaluate(Context(pd.DataFrame([large]), pd.DataFrame(), Thresholds()))
    rules = [f.rule for f in findings if f.time_at_stake_s]
    assert "matrix-reuse" not in rules and rules[0] == "block-order"
    assert findings[0].evidence["large_tiles"] is True
    assert "2.5x what 128 x 128 tiles need at N about 4096, as large as its blocks (16.4k outputs each)," in (
        findings[0].message)
    small = {**large, "grid_size": 16384.0}
    findings, _ = evaluate(Context(pd.DataFrame([small]), pd.DataFrame(), Thresholds()))
    by_rule = {f.rule: f for f in findings}
    assert "Larger shared tiles" in by_rule["matrix-reuse"].message
    order = by_rule["block-order"]
    assert order.evidence["large_tiles"] is False and "as large as" not in order.message


def test_a_matrix_kernel_whose_traffic_is_spills_is_told_of_its_spills_not_tiles() -> None:
    """The 32 x 32-tiled SGEMM again, 7 GiB of its 12 GiB through L2 local memory (spills missing L1):
    its DRAM bytes are spills, not operands fetched again, so matrix-reuse ('larger tiles') is silent
    and local-memory leads; without the spills matrix-reuse speaks."""
    roofs = {"dram_roof_bytes_per_s": 1.5e12, "unit_flops_s": 7.05e-3, "block_size": 256.0, "grid_size": 16384.0}
    sectors = 7 * 1024 ** 3 / 32 / 2
    spills = {"local_load_sectors": sectors, "local_store_sectors": sectors, "local_load_sectors_missed": sectors,
              "local_store_sectors_missed": sectors, "l1_bytes": 20 * 1024 ** 3, "registers_per_thread": 255.0}
    row = {**BLOCK_ORDER_ROW, **roofs, **spills}
    findings, _ = evaluate(Context(pd.DataFrame([row]), pd.DataFrame(), Thresholds()))
    rules = [f.rule for f in findings if f.time_at_stake_s]
    assert rules[0] == "local-memory" and "matrix-reuse" not in rules
    assert "255 registers per thread, the most allowed: spills" in findings[0].message
    findings, _ = evaluate(Context(pd.DataFrame([{**BLOCK_ORDER_ROW, **roofs}]), pd.DataFrame(), Thresholds()))
    assert "matrix-reuse" in {f.rule for f in findings}


def test_about_one_sector_over_per_request_is_named_as_straddling_not_a_stride(realdata: Path) -> None:
    """Swagatam conv2d: variant_1 asks 1.73G sectors for 1.27G of data, 0.90 sector more per request:
    accesses straddling sector boundaries (a stencil's shifted window), not a stride between threads;
    variant2 already tiles in shared memory, so only alignment is left to say."""
    folder = realdata / "Swagatam1812__hpca-gpu-memory-profiling"
    [v1] = _of(cached_diagnosis(folder / "variant1.ncu-rep"), "uncoalesced-access")
    assert v1.message.endswith("Accesses straddle sectors: align arrays to 128 B, or stage a stencil window in "
                               "shared memory. Overlaps matrix-reuse: not in addition.")
    # the straddling explains 27% of L1's work: the rest is re-reading, which tiling removes
    [reuse] = _of(cached_diagnosis(folder / "variant1.ncu-rep"), "matrix-reuse")
    assert "Tile in shared memory" in reuse.message and reuse.time_at_stake_s > v1.time_at_stake_s
    assert "consecutive threads" not in v1.message
    [v2] = _of(cached_diagnosis(folder / "variant2.ncu-rep"), "uncoalesced-access")
    assert "Accesses straddle sectors: align arrays and row pitches to 128 B." in v2.message
    row = {"global_sectors_theoretical": 500.0, "global_sectors_ideal": 400.0, "global_load_requests": 100.0}
    from ncu_roof.rules.fixes import one_sector_over

    assert one_sector_over(row) and not one_sector_over({**row, "global_sectors_theoretical": 800.0})


def test_bytes_used_per_sector_alone_names_the_uncoalesced_loads(realdata: Path) -> None:
    """reduceInteger (a `ncu --metrics` CSV: time, DRAM bytes, ncu's bytes used per sector, no sector or
    request counts): reduceNeighbored and reduceNeighboredLess use 25.02% of each sector they load, and
    had no finding at all (the rule needed sector and request counts). With only DRAM measured the
    relieved units (L1, L2) are not, so the stake is the waste's share within the gap: 75% of 581 us for
    Less, whose measured interleaved fix won 44.3 us (a bound that holds, not a near one)."""
    d = cached_diagnosis(realdata / "Lashi0812__CudaProgramming" / "ncu_reduceInteger.csv",
                         device="NVIDIA GeForce RTX 4090")
    found = {f.kernels[0]: f for f in _of(d, "uncoalesced-access")}
    assert set(found) == {"reduceNeighbored", "reduceNeighboredLess"}  # reduceInterleaved uses 96%
    less = found["reduceNeighboredLess"]
    assert less.evidence["excess"] == pytest.approx(100 / 25.02)
    assert less.time_at_stake_s == pytest.approx(581.056e-6 * (1 - 25.02 / 100), rel=1e-3)
    assert less.time_at_stake_s >= 44.3e-6
    assert "Global loads use 25% of the bytes of each 32-byte sector" in less.message
    assert "uncoalesced-access" not in {s.rule for s in d.skipped}


def test_nvprof_era_stall_percentages_name_the_reduction_trees_fix(realdata: Path) -> None:
    """reduceInteger (a `ncu --metrics` CSV with nvprof's stall_sync as
    smsp__warp_issue_stalled_{barrier,membar}_per_warp_active.pct, no issue counters): reduceInterleaved's
    warps spend 53.88% of their active cycles at barriers. Told the tree's fix (several elements a thread),
    priced as the rewrite to its DRAM bound: 457 us of 537 us; the measured unroll-by-2 rung won 240 us, and
    the ladder's last rungs ran in 124-130 us (pairs reduce.interleaved-unroll2, unroll2-unroll4)."""
    d = cached_diagnosis(realdata / "Lashi0812__CudaProgramming" / "ncu_reduceInteger.csv",
                         device="NVIDIA GeForce RTX 4090")
    found = {f.kernels[0]: f for f in _of(d, "warp-stalls")}
    inter = found["reduceInterleaved"]
    assert inter.evidence["stall_family"] == "share of active warp cycles"
    assert inter.evidence["stall_shares"] == [pytest.approx(0.5388)]
    assert inter.time_at_stake_s == pytest.approx(457e-6, rel=2e-3) and inter.time_at_stake_s >= 240e-6
    assert ("Stalls (share of active warp cycles): barrier 54% (synchronization: a reduction tree: sum several "
            "elements per thread (independent work per thread)") in inter.message
    assert found["reduceUnroll2"].time_at_stake_s == pytest.approx(216e-6, rel=3e-3)
    # the stall family without "selected": the shares are of all active cycles, not rescaled over two reasons
    assert "reduceCompleteUnroll8Warps" not in found  # barrier 13.77%: under the dominant share


def test_branch_uniformity_alone_names_the_divergent_reduction(realdata: Path) -> None:
    """reduceInteger (a `ncu --metrics` CSV without threads per instruction): reduceNeighbored's modulo test
    leaves 90.32% of its branch targets uniform (9.7% split a warp); its contiguous rewrite, Less, 99.29%, and
    won 233 us (pair reduce.neighbored-less). Named from the branch counters, first, its stake the most that
    packing warps can win: every instruction's work, so the time above the DRAM bound (a bound that holds). A
    kernel without branches reads 0% (no evidence, as IndexSpaces' julia__5 kernels, 32 threads an
    instruction)."""
    d = cached_diagnosis(realdata / "Lashi0812__CudaProgramming" / "ncu_reduceInteger.csv",
                         device="NVIDIA GeForce RTX 4090")
    [f] = _of(d, "divergence")
    assert d.findings[0] is f and f.kernels == ("reduceNeighbored",)
    assert f.evidence["branch_uniform_pct"] == pytest.approx(90.32)
    assert f.time_at_stake_s == pytest.approx(697e-6, rel=2e-3) and f.time_at_stake_s >= 233e-6
    assert ("branch divergence, up to 697 us of 814 us at stake. 9.7% of branch targets split a warp (how many "
            "lanes then idle is not captured). A reduction tree: keep active threads contiguous") in f.message
    assert not _of(cached_diagnosis(realdata / "eschnett__IndexSpaces.jl" / "profile.7dc4fa58ec.ncu-rep"), "divergence")


def test_a_need_met_by_either_column_names_the_one_a_capture_collects() -> None:
    """An entry "a|b" of a rule's needs is met by either column; a skip note names the first."""
    from ncu_roof.rules.base import alternatives, need_text

    assert alternatives("global_load_sectors|global_load_bytes_per_sector_pct") == (
        "global_load_sectors", "global_load_bytes_per_sector_pct")
    assert need_text("a|b") == "a" and need_text("a") == "a"
    _, skipped = evaluate(Context(pd.DataFrame([BLOCK_ORDER_ROW]), pd.DataFrame(), Thresholds()))
    [s] = [s for s in skipped if s.rule == "uncoalesced-access"]
    assert s.missing == ("global_load_sectors", "global_load_requests")


def test_tiling_a_matrix_kernel_is_priced_as_the_rewrite(realdata: Path) -> None:
    """Swagatam conv2d variant_1 (A100, 4 launches of 7.83 ms): L1/TEX 85% busy, no tiles in shared
    memory; 27% of its sectors are straddling waste, the rest re-reading. Priced as relieving L1 alone,
    the issue slots (81%) bounded the fix at 1.52 ms a launch, under the 3.19 ms the shared-memory tiles
    won: tiling also removes the loads' instructions. As the rewrite it is, the floor is what a tiled
    kernel needs (its FLOPs at the FP32 roof, 1.07 ms a launch): 6.76 ms a launch, a bound that holds.
    matrix-reuse (untiled) and binding-unit claim the same; one speaks, naming the other."""
    d = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant1.ncu-rep")
    f = d.findings[0]
    assert f.rule == "matrix-reuse" and f.evidence["untiled"] is True and f.evidence["also"] == ["binding-unit"]
    launches = d.placed[d.placed["kernel"] == "kernel_conv2d_variant_1"]
    floor = float(launches["unit_flops_s"].sum())
    assert f.time_at_stake_s == pytest.approx(float(launches["time_s"].sum()) - floor, rel=1e-9)
    assert f.time_at_stake_s / len(launches) >= 3.19e-3
    assert f.message.startswith("kernel_conv2d_variant_1: a convolution with no tiles in shared memory, reading its "
                                "input through L1/L2 for every tap, up to 27 ms of 31.3 ms at stake")
    [straddle] = _of(d, "uncoalesced-access")
    assert straddle.time_at_stake_s == pytest.approx(6.086e-3, abs=1e-6)  # 27% of L1's sectors: not the rung


def test_an_untiled_kernel_wasting_most_sectors_coalesces_first(realdata: Path) -> None:
    """Swagatam conv2d baseline: 3.8x the sectors its loads need (threadIdx.x on rows); the measured next
    rung was coalescing (37.6 -> 7.83 ms), not tiling: uncoalesced-access speaks, matrix-reuse waits."""
    d = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "naive.ncu-rep")
    assert d.findings[0].rule == "uncoalesced-access" and d.findings[0].evidence["excess"] == pytest.approx(3.834,
                                                                                                           abs=1e-3)
    assert not _of(d, "matrix-reuse") and not _of(d, "binding-unit")


def test_binding_unit_stands_beside_a_specific_fix_only_on_matrix_math(realdata: Path) -> None:
    """A specific fix removing under half of a memory-side unit's work leaves the rest to binding-unit
    only where the rest is re-reading that tiling removes (matrix math): Swagatam conv2d variant2 (tiled,
    L1 99%) gets register tiling first, at most 14.3 ms of 18.5 ms; bwd29's nodeCalculationsKernel (L2
    85%, not matrix math) keeps its uncoalesced loads first (17 s of 52 s), with no generic L2 finding."""
    conv = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant2.ncu-rep")
    assert conv.findings[0].rule == "binding-unit" and "register tiling" in conv.findings[0].message
    assert conv.findings[0].time_at_stake_s == pytest.approx(14.3e-3, rel=5e-3)
    join = cached_diagnosis(realdata / "bwd29__self-join-MiSTIC" / "profileTINYK1.out.ncu-rep")
    assert join.findings[0].rule == "uncoalesced-access" and not _of(join, "binding-unit", "nodeCalculationsKernel")


def test_a_fix_on_launches_no_unit_measures_has_an_unknown_stake(realdata: Path) -> None:
    """reduceInteger without --device: no roof, so no unit is measured against a limit. Its uncoalesced
    loads are named with their stake unknown (null), not 0 with 'little time at stake'."""
    d = cached_diagnosis(realdata / "Lashi0812__CudaProgramming" / "ncu_reduceInteger.csv")
    found = _of(d, "uncoalesced-access")
    assert found and all(f.time_at_stake_s is None for f in found)
    assert "time at stake not known (no unit of its launches measured against a roof)" in found[0].message
    assert "little time at stake" not in found[0].message


def _rung_row(per_load: float, widths: tuple[float, float, float], **extra: Any) -> dict[str, Any]:
    """A tiled FP32 GEMM launch: 10M shared loads split 32/64/128-bit by ``widths``, ``per_load`` FFMA each."""
    loads = 10e6
    row = {"kernel": "sgemm_2d_tiles", "kernel_demangled": "sgemm_2d_tiles", "shared_mem_per_block": 16384.0,
           "compute_precision": "fp32", "inst_ffma": per_load * loads * 32, "inst_dfma": 0.0, "inst_hfma": 0.0}
    row.update({f"inst_shared_load_{bits}": share * loads for bits, share in zip((32, 64, 128), widths, strict=True)})
    return {**row, **extra}


def test_the_register_rung_is_read_from_ffma_per_shared_load_and_the_load_widths() -> None:
    """The rungs after shared-memory tiles (Boehm's SGEMM ladder): about one shared load per FFMA is
    no register tiling; register tiles read 4 or 8 bytes at a time are the vector-load rung (a 2D
    blocktiling kernel: 8 scalar A loads and 2 LDS.128 of B for 64 FFMA, 6.4 per load); tiles read
    16 bytes at a time leave warp tiling. Without the per-opcode counts, or on FP64 math, no rung."""
    assert register_rung(_rung_row(1.0, (1.0, 0.0, 0.0))) == (
        "register tiling: several outputs per thread, operands in registers, then wider loads; now 1.0 FFMA per "
        "shared load (10M loads, 100% under 16 bytes)")
    assert register_rung(_rung_row(1.99, (1.0, 0.0, 0.0))).startswith("register tiling")
    assert register_rung(_rung_row(6.4, (0.8, 0.0, 0.2))) == (
        "wider (16-byte) shared loads: float4 reads of a transposed A tile (LDS.128) load 4 values per "
        "instruction; it tiles in registers, 6.4 FFMA per shared load (10M loads, 80% under 16 bytes)")
    assert register_rung(_rung_row(3.1, (0.14, 0.36, 0.5))).startswith("wider (16-byte) shared loads")  # 50%: at
    assert register_rung(_rung_row(16.0, (0.0, 0.0, 1.0))) == (
        "larger register tiles (warp tiling: a sub-tile per warp, more outputs per thread); now 16.0 FFMA per "
        "shared load (10M loads, 0% under 16 bytes)")
    assert register_rung(_rung_row(3.1, (0.14, 0.35, 0.51))).startswith("larger register tiles")
    no_counts = {k: v for k, v in _rung_row(6.4, (0.8, 0.0, 0.2)).items() if not k.startswith("inst_shared")}
    assert register_rung(no_counts) is None
    assert register_rung(_rung_row(6.4, (0.8, 0.0, 0.2), inst_dfma=7e9)) is None  # FP64 math: LDS.64 is scalar
    conv = _rung_row(3.1, (0.14, 0.86, 0.0), kernel="conv2d_variant3_kernel", kernel_demangled="conv2d_variant3_kernel")
    assert register_rung(conv).startswith("wider (16-byte) shared loads: float4 reads of its input tile (LDS.128)")


def test_an_issue_bound_tiled_kernel_is_told_its_next_rung_but_not_at_the_fma_roof(realdata: Path) -> None:
    """Swagatam conv2d_variant3 (RTX A6000): issue slots 79% busy, 3.1 FFMA per shared load, all LDS.64:
    the shared loads beside the FFMAs fill the issue slots, so the vector-load rung is the next one (it got
    the generic issue-slot advice). ZSL98's sgemm at 95% of its FMA pipe is matrix math with a full pipe, no rung."""
    d = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant3.ncu-rep")
    [f] = [f for f in d.findings if f.rule == "binding-unit"]
    assert f.evidence["unit"] == "issue" and f.time_at_stake_s == pytest.approx(3.069e-3, rel=1e-3)
    assert f.message.endswith("then L1/TEX (67%) binds (4 launches). Cut its work: wider (16-byte) shared loads: "
                              "float4 reads of its input tile (LDS.128) load 4 values per instruction; it tiles in "
                              "registers, 3.1 FFMA per shared load (80.7M loads, 100% under 16 bytes).")
    sgemm = cached_diagnosis(realdata / "ZSL98__bitwise_spgemm" / "sgemm.ncu-rep")
    [g] = [g for g in sgemm.findings if g.rule == "binding-unit"]
    assert "Matrix math with its FMA pipe full" in g.message and "rung" not in g.message
    assert "shared loads" not in g.message


def test_binding_unit_names_the_register_rung_from_the_per_opcode_counts(realdata: Path) -> None:
    """Swagatam conv2d variant2 (A100, --set full): one LDS per FFMA (254M of each a launch, all 32-bit),
    L1 99% busy; its measured next step was register tiling (variant3: 3.1 FFMA per shared load)."""
    d = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant2.ncu-rep")
    row = d.placed.iloc[0]
    assert (row["inst_shared_load_32"], row["inst_shared_load_64"], row["inst_shared_load_128"]) == (
        253755392.0, 0.0, 0.0)
    assert d.findings[0].message.endswith(
        "L1's data stage is 97% shared memory (49% bank conflicts): fewer shared loads (register tiling: several "
        "outputs per thread, operands in registers, then wider loads; now 1.0 FFMA per shared load (254M loads, 100% "
        "under 16 bytes)).")
    sgemm = cached_diagnosis(realdata / "AshunFeiyu__Cuda_Gemm_Practice" / "gemm_v9.ncu-rep").placed
    assert sgemm.set_index("kernel")["inst_shared_load_128"].to_dict() == {"gemm": 976800.0,
                                                                           "ampere_sgemm_128x64_nn": 991200.0}


def test_uncoalesced_loads_of_a_latency_bound_reduction_are_priced_above_their_measured_win(realdata: Path) -> None:
    """aplainjane reduceNeighboredLess (T4, 13.1 ms): ALU 44% busiest, stalls barrier 47% and wait 41%;
    70.8M of 100M sectors extra. Interleaved pairing (t4.reduce.less-interleaved) won 385 us; the
    waits on its loads alone priced 99.8 us, every barrier wait counted as memory 2.92 ms. The 7.3 ms
    above the ALU's bound shrinks by at most the extra sectors' share (71%) of its memory waits (9% of
    the stalls) and of the barrier waits the share memory holds of the rest (9% / 53%)."""
    d = cached_diagnosis(realdata / "aplainjane__CUDA_Learning" / "report.ncu-rep")
    [f] = _of(d, "uncoalesced-access", "reduceNeighboredLess")
    row = d.placed[d.placed["kernel"] == "reduceNeighboredLess"].iloc[0].to_dict()
    shares, _ = stall_shares(row)
    memory, barrier = sum(shares.get(r, 0.0) for r in MEMORY_WAITS), shares["barrier"]
    assert (memory, barrier) == (pytest.approx(0.0883, abs=1e-4), pytest.approx(0.4743, abs=1e-4))
    waste = 1.0 - 29360128 / 100139008
    gap = row["time_s"] - row["unit_pipe_alu_s"]
    assert f.time_at_stake_s == pytest.approx(gap * waste * (memory + barrier * memory / (1 - barrier)), rel=1e-9)
    assert f.time_at_stake_s == pytest.approx(871e-6, abs=1e-6)
    assert 385e-6 <= f.time_at_stake_s <= 3 * 385e-6  # the measured win: the promise holds, and is near
    assert "up to 871 us of 13.1 ms at stake" in f.message


def test_a_tiled_matrix_kernel_without_instruction_counts_is_told_the_ladder_not_one_rung(realdata: Path) -> None:
    """ESMM ee5 (speed of light only): one_blocktiling and one_warptiling already tile in registers, and
    the report has no per-opcode counts to say which rung is next; variant2's counts name its rung."""
    d = cached_diagnosis(realdata / "AveryClapp__ESMM-Research" / "profile.ee5ce73827.ncu-rep")
    for kernel in ("smem_blocking", "one_blocktiling", "one_warptiling"):
        [f] = _of(d, "binding-unit", kernel)
        assert f.message.endswith("keep it on chip (the next tiling rung: register tiling, then wider (16-byte) "
                                  "loads, then warp tiles; no instruction counts here to say which)."), f.message
    v2 = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant2.ncu-rep")
    [g] = _of(v2, "binding-unit", "kernel_conv2d_variant2")
    assert "now 1.0 FFMA per shared load (254M loads, 100% under 16 bytes)" in g.message
    assert "no instruction counts" not in g.message


def test_a_tiled_matrix_kernel_holding_a_register_tile_is_told_the_rungs_after_it(realdata: Path) -> None:
    """fuzigrad matmul_2d_tiling (expert read 6, row 146): 128 registers a thread with 9 KB of shared tiles
    and no per-opcode counts: the registers hold a 2-D register tile (ESMM's 8 x 8 two_blocktiling takes 150,
    its 1-D one_blocktiling 51, its one-output smem_blocking 36), so the rungs left are wider shared loads,
    then warp tiles, not register tiling."""
    d = cached_diagnosis(realdata / "piragi__fuzigrad" / "output.ncu-rep")
    [f] = _of(d, "binding-unit", "matmul_2d_tiling")
    assert f.message.endswith("keep it on chip (the next rung: 128 registers a thread hold a register tile already, "
                              "so wider (16-byte) shared loads, then warp tiles).") and len(f.message) < 400


TC_TILED_ROW = {"report": "r", "device": "NVIDIA A100-SXM4-80GB", "kernel": "hgemm_mma",
                "kernel_demangled": "hgemm_mma", "id": 0, "cc": "8.0", "time_s": 1e-3, "bound": "memory",
                "binding": "dram", "binding_unit": "l1", "binding_unit_share": 0.9, "pct_of_roof": 20.0,
                "unit_l1_s": 0.9e-3, "unit_dram_s": 0.1e-3, "unit_l2_s": 0.3e-3, "unit_pipe_tensor_s": 0.3e-3,
                "launch_floor_s": 1.5e-6, "compute_precision": "fp16", "flops": 2 * 4096.0 ** 3,
                "flops_tensor": 2 * 4096.0 ** 3, "dram_bytes": 0.3e9, "l2_bytes": 2e9, "l1_bytes": 20e9,
                "shared_mem_per_block": 49152.0, "grid_size": 1024.0, "block_size": 256.0,
                "dram_roof_bytes_per_s": 1.5e12, "unit_flops_s": 0.45e-3}


def test_a_tiled_tensor_core_kernel_re_reading_shared_tiles_is_told_larger_warp_tiles() -> None:
    """An FP16 tensor-core GEMM (N = 4096, A100) tiling in shared memory, L1 90% busy, DRAM 10%: 300 MB from
    DRAM, where the 128 x 128 tile model (no L2 reuse) says 2.18 GB, 1.45 ms at the roof, longer than the
    launch. The next rung keeps DRAM as it is (L2 serves the re-reads now and would then), so its floor is
    the FLOPs' 450 us: 550 us at stake (the model's bytes priced it at nothing). Its rung is larger warp
    tiles (more MMA fragments per warp), not FP32 register tiling."""
    findings, _ = evaluate(Context(pd.DataFrame([TC_TILED_ROW]), pd.DataFrame(), Thresholds()))
    [f] = [f for f in findings if f.rule == "binding-unit"]
    assert f.time_at_stake_s == pytest.approx(1e-3 - 0.45e-3)
    assert "a tiled kernel needs at least 450 us" in f.message
    assert f.message.endswith("keep it on chip (larger warp tiles: more MMA fragments per warp, each A and B "
                              "fragment loaded from shared memory once (ldmatrix) and used for several MMAs).")


def test_a_wave_tail_set_by_registers_leads_with_the_register_cap(realdata: Path) -> None:
    """ESMM 049ec61 one_d_vec (expert read 4, row 11): 256 blocks on 240 slots, 3 blocks per SM set by 71
    registers a thread; "fill whole waves" is no fix for a fixed 1024^3 GEMM, 64 registers (4 blocks per
    SM) are. The stake is the tail's, unchanged: 47% of 343 us."""
    d = cached_diagnosis(realdata / "AveryClapp__ESMM-Research" / "profile.049ec61252.ncu-rep")
    [f] = _of(d, "wave-tail", "one_d_vec")
    assert f.time_at_stake_s == pytest.approx(160.01e-6, rel=1e-3)
    assert f.message.endswith(
        "71 registers a thread fit 3 blocks per SM; at most 64 (__launch_bounds__(256, 4)) fit 4: 320 slots hold "
        "the 256 blocks in one wave. Else fill whole waves (240 blocks or a multiple).")
    # one_blocktiling's two blocks per SM are held by a register tile no cap keeps: only the grid's advice
    [g] = _of(d, "wave-tail", "one_blocktiling")
    assert g.message.endswith("Fill whole waves (160 blocks or a multiple).")


def test_float3_loads_read_a_field_at_a_time_are_told_to_pad_or_split_by_field(realdata: Path) -> None:
    """GOATnote robogoat voxelize_occupancy_kernel (expert read 4, row 22; an 8-metric CSV, no time): 562,500
    load sectors for 500,000 float3 points (187,500 sectors' worth), ncu's bytes used per sector 33.33%.
    Consecutive threads do touch consecutive elements: the fix is a padded float4 or one array a field.
    resample_trajectory (37.94%) is no third: the stride advice stays."""
    d = cached_diagnosis(realdata / "GOATnote-Inc__robogoat" / "metrics.csv")
    [f] = _of(d, "uncoalesced-access", "voxelize_occupancy_kernel")
    [g] = _of(d, "uncoalesced-access", "resample_trajectory_fp32_kernel")
    assert g.message.endswith("(2.6x the sectors the data needs). Make consecutive threads touch consecutive words.")
    # no time to price either: where ncu's speed of light has the SMs far the busier side, the message says so
    # (expert read 6, row 42: the SMs at 70% under resample_trajectory's loads, memory at 15%)
    assert ("time at stake not known (no unit of its launches measured against a roof; ncu's speed of light: "
            "compute 70%, memory 15%)") in g.message and "speed of light" not in f.message  # 7% and 51%
    assert f.message.endswith(
        "(3.0x the sectors the data needs). A third used: 4-byte fields 12 bytes apart, a float3 (or 3-field "
        "struct) read a field at a time. Pad it to float4 (one load) or keep one array a field (SoA).")


def test_a_tiled_gemm_with_one_output_a_thread_is_told_to_tile_in_registers(realdata: Path) -> None:
    """Olajide gemm_tiled (expert read 4, row 26; RTX 5070, 10.2 ms): SM 88.9% busy, DRAM 1%, a 32 x 32
    shared tile with 1,024-thread blocks storing 2048 x 2048 floats, one a thread. It said only "a pipe,
    the issue slots or shared memory"; the next rung is register tiling. No stake: nothing measures it."""
    d = cached_diagnosis(realdata / "Olajide-Badejo__GPU-Roofline-Profiler" / "gemm_tiled.csv")
    [f] = _of(d, "speed-of-light-only", "gemm_tiled_kernel")
    assert f.time_at_stake_s is None
    assert f.message.endswith(
        "busy inside the SMs. A matrix kernel storing one 4-byte output a thread (4.19M, as many as threads): each "
        "multiply-add loads both operands. Register tiling (4x4 or 8x8 outputs a thread) loads each once for 4-8.")


def test_below_roof_beside_a_same_work_peer_says_the_peer_tells_where(realdata: Path) -> None:
    """wangzy V100 CUTLASS Kernel<Gemm> (expert read 4, row 47): below-roof said "no counters to tell why"
    beside a same-work peer (cuBLAS, 8.16x less DRAM at the same L2 bytes) that does tell. Its stake, the
    time above the roofline bound, stays: 1.28 s of 2.82 s."""
    d = cached_diagnosis(realdata / "wangzy0327__cuda-roofline" / "output.csv")
    [peer] = [f for f in d.findings if f.rule == "same-work-peer"]
    [f] = _of(d, "below-roof", peer.kernels[0])
    assert f.time_at_stake_s == pytest.approx(1.28, rel=5e-3)
    assert "No counters say why; the same-work peer's bytes and units say where the gap is." in f.message
    assert "capture with ncu-roof capture" not in f.message


def test_a_block_shape_the_same_kernel_ran_faster_in_is_named_with_its_measured_time(realdata: Path) -> None:
    """GPU-DEMO occupancy (expert read 4, M1: no finding before; a metrics-only capture): one 1024 x 1024
    transpose launched 11 times in each of four block shapes. (16, 32, 1) blocks take 20.0 us (median);
    (32, 32, 1) 64.9 us and (32, 16, 1) 49.7 us. One finding for the kernel; its stake is measured: each slower
    launch's time less 20.0 us, 823 us of the 1.26 ms those 22 launches take."""
    d = cached_diagnosis(realdata / "2388612861__GPU-DEMO" / "ncu_detailed_occupancy_report.ncu-rep")
    [f] = _of(d, "block-size")
    launches = d.placed
    best = float(launches.loc[launches["block_dim"] == "(16, 32, 1)", "time_s"].median())
    slower = launches.loc[launches["block_dim"].isin(["(32, 32, 1)", "(32, 16, 1)"]), "time_s"]
    assert len(f.ids) == 22 and f.time_at_stake_s == pytest.approx(float((slower - best).sum()), rel=1e-9)
    assert f.time_at_stake_s == pytest.approx(823e-6, rel=2e-3)
    assert f.message.endswith(
        "block shape, up to 823 us of 1.26 ms at stake (22 launches). The same kernel over the same 1.05M threads ran "
        "in 20 us a launch with (16, 32, 1) blocks; 64.9 us with (32, 32, 1), 49.7 us with (32, 16, 1): the shape "
        "sets which threads are neighbours (how accesses coalesce) and the blocks per SM. Launch it with (16, 32, 1) "
        "blocks.")


def test_a_latency_bound_launch_whose_sms_idle_names_the_grid(realdata: Path) -> None:
    """CodeGandee's CUTLASS bf16 GEMM (expert read 4, row 20; an unnamed Blackwell GPU, so no SM count to
    count waves by; its RTX 5090, which its 2,000 MHz base clock names, left unnamed): SM active cycles 543,805
    of 809,400 elapsed (averages over the SMs), 33% idle, while compute is 32% and memory 26% busy. The stake
    stays the idle share of the busiest side: 273 us."""
    d = roofless_diagnosis(realdata / "CodeGandee__llm-perf-opt" / "ncu.details.csv")
    [f] = _of(d, "speed-of-light-only")
    assert f.time_at_stake_s == pytest.approx(273.3e-6, rel=1e-3)
    assert ("compute 32%, memory 26%: latency-bound; SMs idle 33%: too few blocks or a partial last wave. A CUTLASS"
            " kernel: change the call") in f.message
    assert (f.evidence["sm_active_cycles"], f.evidence["sm_cycles"]) == pytest.approx((543804.64, 809400), rel=1e-6)


def test_launch_floor_demos_get_low_overhead_notes_and_1024_thread_blocks_are_named_on_every_kernel(
        realdata: Path) -> None:
    """Expert read 5: torchLinear's 3.74 us cuBLAS launch and aplainjane's 3-5 us shared-memory demos were
    '(high)' overhead-regime findings of 1-4 us (a share of a run of a few microseconds): low now, their
    stakes unchanged. GPU-DEMO's four 1,024-thread transposes (16 registers, 5,248 B shared a block, ncu's
    shared-memory limit 1 matching its warps' 1): block-size named on all four, not only on the one whose
    shared limit read 8; 512-thread blocks fit 48 warps where one block holds 32."""
    linear = cached_diagnosis(realdata / "Lashi0812__CudaProgramming" / "torchLinear.ncu-rep")
    [sgemm] = _of(linear, "overhead-regime", "ampere_sgemm_128x32_tn")
    assert sgemm.time_at_stake_s == pytest.approx(2.244e-6, rel=1e-6) and sgemm.severity == "low"
    demos = _of(cached_diagnosis(realdata / "aplainjane__CUDA_Learning" / "shared_report.ncu-rep"), "overhead-regime")
    assert len(demos) == 7 and {f.severity for f in demos} == {"low"}
    d = cached_diagnosis(realdata / "2388612861__GPU-DEMO" / "ncu_report_optimized.ncu-rep")
    sized = {f.kernels[0]: f for f in _of(d, "block-size")}
    assert set(sized) == {"transposeMatrix", "transposeMatrixOptimized", "transposeMatrixHighlyOptimized",
                          "transposeMatrixAdvanced"}
    optimized = sized["transposeMatrixOptimized"].message
    assert ("At 16 registers a thread the SM fits 32 of its 48 warps (achieved 43% of 67%: a block frees its slots "
            "only when its last warp exits); 512-thread blocks would fit 48." in optimized)
    assert sized["transposeMatrixOptimized"].time_at_stake_s == pytest.approx(67.1e-6 / 3, rel=2e-3)
    # low-occupancy (43% achieved of 67%) blamed load imbalance, then the block's drain; block-size, the same fix
    # (smaller blocks), now says both in one finding (expert read 6, rows 1-8)
    assert not _of(d, "low-occupancy")
    row = d.placed[d.placed["kernel"] == "transposeMatrixOptimized"].iloc[0]
    assert fixes.missing_warps_text(row).endswith("1024-thread blocks, 1 an SM, free their slots only when their last "
                                                  "warp exits; smaller blocks drain finer")


def test_a_convolution_is_told_to_stage_its_input_tile_and_an_openacc_loop_its_loop_order(realdata: Path) -> None:
    """Expert read 5, rows 41 and 34. Swagatam's 11 x 11 convolution (variant 1, no shared tiles) was 'matrix
    math' tiled as a GEMM; its fix, measured 31.3 -> 18.5 ms, staged the input tile. The stake is still the
    tiled rewrite's, priced as a square GEMM of its FLOPs (27 ms). miniWeather's halo copies are OpenACC loops
    (set_halo_values_x_419_gpu): no one writes a float4 there; the loop mapping sets the stride."""
    conv = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant1.ncu-rep")
    [f] = _of(conv, "matrix-reuse")
    assert f.time_at_stake_s == pytest.approx(27.045e-3, rel=1e-3)
    assert f.message.startswith("kernel_conv2d_variant_1: a convolution with no tiles in shared memory, reading its "
                                "input through L1/L2 for every tap, up to 27 ms of 31.3 ms at stake (4 launches). As a "
                                "GEMM, for its 16.2 GFLOP (N about 2008, a guess) 128 x 128 block tiles move 532 MB")
    assert f.message.endswith("Tile in shared memory (a block's input with its halo, and the filter), or cuDNN.")
    mw = cached_diagnosis(realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep")
    [halo] = _of(mw, "uncoalesced-access", "set_halo_values_x_419_gpu")
    assert ("Sectors per request: loads 8.0, stores 16.0. An OpenACC/OpenMP loop: run its vector loop over the "
            "contiguous index (loop order, collapse).") in halo.message


def test_data_left_in_host_memory_is_named_with_all_its_waiting_at_stake(realdata: Path) -> None:
    """shortstheory simpleReduce1 (RTX 3080 Laptop, 10^9 floats): L2 fills 0.0949% of its peak from
    system memory and 0.000544% from device memory (174 times less), DRAM 0.0017% busy: the input is in
    host memory, read over PCIe. The fix moves it to the GPU; what it wins is the time above the busiest
    unit's bound (the LSU pipe, 7.36% busy: 0.286 s of 3.888 s), 3.602 s, every stall counted (no stall
    counters in a basic set). speed-of-light-only's 'dependent chains' reading is silent: a cause fired."""
    d = cached_diagnosis(realdata / "shortstheory__cuda-experiments" / "report3.ncu-rep")
    [f] = _of(d, "host-memory", "simpleReduce1")
    row = d.placed[d.placed["kernel"] == "simpleReduce1"].iloc[0]
    assert row["l2_fill_sysmem_pct"] == pytest.approx(0.094877, abs=1e-6)
    assert row["l2_fill_device_pct"] == pytest.approx(0.000544, abs=1e-6)
    assert f.time_at_stake_s == pytest.approx(row["time_s"] - row["unit_pipe_lsu_s"], rel=1e-9)
    assert f.time_at_stake_s == pytest.approx(3.6024, abs=1e-4)
    assert "L2 fills 174 times as many sectors from system memory as from device memory (DRAM idle)" in f.message
    assert "cudaMemPrefetchAsync" in f.message and f.severity == "high"
    assert not _of(d, "speed-of-light-only")  # all three kernels read host memory: none is left unexplained
    assert {k for x in _of(d, "host-memory") for k in x.kernels} == {"simpleReduce1", "simpleReduce2",
                                                                       "simpleReduce14float"}


def test_host_memory_needs_system_fills_ten_times_the_device_fills() -> None:
    """At 0.01% of L2's fill peak from system memory and ten times the fills from DRAM, and not below
    either: a kernel streaming from DRAM that also reads a little host data (DarrenLu filter_warp_k: 0.0053%
    against 17.4%) is not told to move it."""
    from ncu_roof.rules.traps import host_memory_signal

    th = Thresholds()
    assert host_memory_signal({"l2_fill_sysmem_pct": 0.01, "l2_fill_device_pct": 0.001}, th) is not None
    assert host_memory_signal({"l2_fill_sysmem_pct": 0.0099, "l2_fill_device_pct": 0.0}, th) is None
    assert host_memory_signal({"l2_fill_sysmem_pct": 0.1, "l2_fill_device_pct": 0.0101}, th) is None
    assert host_memory_signal({"l2_fill_sysmem_pct": 0.0053, "l2_fill_device_pct": 17.4}, th) is None
    assert host_memory_signal({"l2_fill_sysmem_pct": 0.1}, th) is None  # device fills unknown: no ratio


def test_spills_under_the_register_cap_a_big_block_sets_name_the_block_size(realdata: Path) -> None:
    """IndexSpaces.jl julia_frb_5885: 768-thread blocks hold 80 registers a thread, all a 65,536-register
    file gives 768 threads (85, allocated 8 at a time), and 4.31 GB go to local memory: the block size
    caps the registers, so halving it (160 registers) removes the spills; GPUIndexSpaces' 1024-thread
    julia_runsteps_6563 at 64 the same (expert read 6, row 98)."""
    d = cached_diagnosis(realdata / "eschnett__IndexSpaces.jl" / "profile.7dc4fa58ec.ncu-rep")
    [f] = _of(d, "local-memory", "julia_frb_5885")
    assert ("80 registers a thread, all 768-thread blocks allow (65.5k / 768): spills. Use 384-thread blocks (160 "
            "registers) or keep fewer values live.") in f.message
    bb = cached_diagnosis(realdata / "eschnett__GPUIndexSpaces" / "profile.db02bc1e7d.ncu-rep")
    [g] = _of(bb, "local-memory", "julia_runsteps_6563")
    assert "64 registers a thread, all 1024-thread blocks allow (65.5k / 1024): spills. Use 512-thread blocks (128" \
        in g.message and len(g.message) < 400
