"""The causes real optimisation ladders fix that the traps do not name: local memory (register
spills, arrays indexed at run time) and the latency a pipeline of asynchronous copies would hide.
Each is a per-launch signal and a :func:`per_kernel` declaration.
"""

from __future__ import annotations

from typing import Any

from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si
from ncu_roof.model.build import DEBUG_LOCAL_CAUSE, is_debug_build
from ncu_roof.model.roofline import Thresholds, reaches
from ncu_roof.model.units import READS as UNIT_READS
from ncu_roof.rules.base import About
from ncu_roof.rules.common import (
    SECTOR_BYTES,
    Row,
    compute_capability,
    fmt_count,
    known,
    known_sum,
    limiter_row,
    local_bytes_past_l1,
    ratio,
    tiles_in_shared,
    val,
)
from ncu_roof.rules.engine import Hit, per_kernel
from ncu_roof.rules.library import fix_text
from ncu_roof.rules.lines import LOCAL_SECTORS, STALL_SAMPLES
from ncu_roof.rules.stakes import Relief
from ncu_roof.rules.stalls import memory_waits, stall_shares

TMA_BUSY_PCT = 1.0  # the TMA unit busy this much of the time: the kernel's copies go through it
COPY_WAITS_SHARE = 0.15  # long-scoreboard waits of at least this share of the stalls: plain staging loads waited for
MAX_REGISTERS = 255  # per thread: a kernel at this count spills what does not fit
LOCAL_COLUMNS = ("local_load_sectors", "local_store_sectors", "local_load_sectors_missed",
                 "local_store_sectors_missed", "local_load_inst", "local_store_inst")


# --- local memory -----------------------------------------------------------------------------
def local_memory_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Local-memory traffic (register spills, arrays indexed at run time, per-thread arrays) at or
    above ``th.local_min_share`` of L1's or L2's bytes. Its fix keeps those values in registers:
    it removes the local sectors from L1, those that missed L1 from L2 (and DRAM in proportion: local
    bytes are not compulsory bytes), the local instructions from the issue slots and the LSU, and the
    long-scoreboard waits on local loads from the time above the bound."""
    sectors = known_sum(row, "local_load_sectors", "local_store_sectors")
    if not sectors > 0:
        return None
    past_l1 = local_bytes_past_l1(row)
    l1, l2 = ratio(sectors * SECTOR_BYTES, val(row, "l1_bytes")), ratio(past_l1, val(row, "l2_bytes"))
    if not (reaches(l1, th.local_min_share) or reaches(l2, th.local_min_share)):
        return None
    inst = known_sum(row, "local_load_inst", "local_store_inst")
    removes = {"l1": min(l1, 1.0) if known(l1) else 0.0, "l2": min(l2, 1.0) if known(l2) else 0.0}
    removes["dram"] = removes["l2"]
    issue = ratio(inst, val(row, "warp_inst_executed"))
    if known(issue):
        removes["issue"] = min(issue, 1.0)
    return {"local_bytes": sectors * SECTOR_BYTES, "local_l1_share": l1, "local_l2_bytes": past_l1,
            "local_l2_share": l2, "local_inst": inst,
            "relief": Relief(removes=removes, latency=_local_wait(row), waits=memory_waits(row))}


def _local_wait(row: Row) -> float:
    """The share of the time above the bound spent waiting on local loads: the long-scoreboard share
    of the stalls times the local loads' share of the loads that wait there."""
    shares, _ = stall_shares(row)
    local, global_ = val(row, "local_load_inst"), val(row, "global_load_inst")
    if not shares or not local > 0:
        return 0.0
    loads = local + (global_ if known(global_) else 0.0)
    return float(shares.get("long_scoreboard", 0.0) * local / loads)


def _local_cause(row: Any) -> str:
    """A debug build's stack; spills where the kernel holds the most registers a thread may have; else the
    usual suspects."""
    if is_debug_build(row):
        return DEBUG_LOCAL_CAUSE
    regs, block, file = val(row, "registers_per_thread"), val(row, "block_size"), val(row, "max_registers_per_sm")
    if known(regs) and regs >= MAX_REGISTERS:
        return (f"{regs:.0f} registers per thread, the most allowed: spills. Keep fewer values live (smaller "
                "per-thread tiles or unrolls)")
    cap = file // block // 8 * 8 if block > 0 and file > 0 else float("nan")  # allocated 8 at a time
    if known(cap) and regs >= cap and block > 32:  # the block's size caps the registers, not the compiler's need
        more = min(cap * 2, MAX_REGISTERS)
        return (f"{regs:.0f} registers a thread, all {block:.0f}-thread blocks allow ({fmt_count(file)} / "
                f"{block:.0f}): spills. Use {block / 2:.0f}-thread blocks ({more:.0f} registers) or keep fewer values "
                "live")
    held = f"{regs:.0f} registers; " if known(regs) else ""
    return (f"Spills ({held}-Xptxas -v counts them), run-time-indexed arrays (unroll so indices are constant), "
            "big per-thread arrays or calls not inlined")


@per_kernel("local-memory", signal=local_memory_signal,
            about=About(rank=1, lines=LOCAL_SECTORS, cause=True),
            evidence=("time_s", *LOCAL_COLUMNS, "l1_bytes", "l2_bytes", "registers_per_thread"),
            signal_evidence=("local_bytes", "local_l1_share", "local_l2_bytes", "local_l2_share", "local_inst"),
            needs=("local_load_sectors",), reads=(*UNIT_READS, *LOCAL_COLUMNS, "registers_per_thread",
                                                  "global_load_inst", "warp_inst_executed"),
            enable="capture l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum (ncu-roof capture, or ncu --section "
                   "MemoryWorkloadAnalysis_Tables)")
def local_memory(hit: Hit) -> tuple[str, dict[str, Any]]:
    """Traffic to local memory: values a thread should keep in registers, moved through L1 and L2. Its
    cause sentence is in the evidence (``cause_text``): where the lines show the traffic in a called
    function, :mod:`ncu_roof.rules.lines` puts the call in its place."""
    first, s = hit.first, hit.signal
    shares = [f"{fmt_pct(s['local_l1_share'] * 100)} of L1's bytes"] if known(s["local_l1_share"]) else []
    if known(s["local_l2_share"]) and s["local_l2_share"] >= 0.01:
        shares.append(f"{fmt_si(s['local_l2_bytes'], 'B')} past L1, {fmt_pct(s['local_l2_share'] * 100)} of L2's")
    where = f" ({'; '.join(shares)})" if shares else ""
    cause = fix_text(first, f"{_local_cause(first)}.")
    return (f"{hit.name}: local memory{hit.stake_text}. {fmt_si(s['local_bytes'], 'B')} local{where}. {cause}",
            {"cause_text": cause})


# --- latency an asynchronous-copy pipeline hides ------------------------------------------------


def async_copy_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Tiles staged from global into shared memory, on a GPU with cp.async (CC 8.0 on), below its
    roof, with the copies' waits dominant: long scoreboard and the barrier after it together at
    least ``th.stall_dominant_share`` of the stalls (the warps whose loads came back first wait at the
    barrier for the others). Staged by plain loads (no LDGSTS where the counter is there; long
    scoreboard itself at least ``COPY_WAITS_SHARE``), a pipeline of asynchronous copies (double
    buffering) covers both; staged by cp.async (LDGSTS counted) or the TMA already and still waiting,
    the pipeline is too shallow: more stages cover the same waits."""
    cc = compute_capability(row)
    if cc is None or cc < (8, 0) or not limiter_row(row, th.at_roof_pct):
        return None
    if val(row, "grid_size") < val(row, "sm_count"):  # a grid under the SMs: each block's pipeline prologue is
        return None  # the launch, which no deeper pipeline hides (grid-underfill names the grid)
    # copies already asynchronous: cp.async (LDGSTS counted) or the TMA (Hopper on) busy
    pipelined = "cp.async" if val(row, "async_copy_inst") > 0 else (
        "the TMA" if val(row, "tensor_path_tma_pct") >= TMA_BUSY_PCT else None)
    loads = val(row, "global_load_sectors") > 0 or pipelined  # the TMA's copies are no LSU loads
    if not (tiles_in_shared(row) and val(row, "shared_wavefronts") > 0 and loads):
        return None
    shares, family = stall_shares(row)
    waits = shares.get("long_scoreboard", 0.0)
    covered = min(waits + shares.get("barrier", 0.0), 1.0)
    # the copies' waits, and the barrier waits of the warps that finished theirs first, dominant together
    if not (reaches(covered, th.stall_dominant_share) and (pipelined or reaches(waits, COPY_WAITS_SHARE))):
        return None
    issue = val(row, "issue_active")
    idle = 1.0 - issue if known(issue) else covered
    return {"reasons": ["long_scoreboard"], "long_scoreboard_share": waits,
            "barrier_share": shares.get("barrier", 0.0), "stall_family": family, "tma": cc >= (9, 0),
            "pipelined": pipelined, "relief": Relief(latency=covered, share=max(idle, 0.0))}


@per_kernel("async-copy", signal=async_copy_signal,
            about=About(rank=2, answers=("CPIStall",), lines=STALL_SAMPLES, cause=True),
            evidence=("time_s", "shared_mem_per_block", "stall_long_scoreboard", "stall_barrier", "issue_active",
                      "async_copy_inst", "headroom_s"),
            signal_evidence=("reasons", "long_scoreboard_share", "barrier_share", "stall_family", "pipelined"),
            # async_copy_inst (LDGSTS) is not among the reads: it exists from CC 8.0 on, where the capture adds it
            needs=("shared_mem_per_block",), reads=(*UNIT_READS, "shared_wavefronts", "global_load_sectors",
                                                    "stall_long_scoreboard", "stall_barrier", "issue_active",
                                                    "grid_size", "sm_count"),
            enable="capture the warp stalls and the shared-memory and LDGSTS counters (ncu --section "
                   "WarpStateStats --section MemoryWorkloadAnalysis_Tables --section LaunchStats)")
def async_copy(hit: Hit) -> str:
    """Global-to-shared staging whose loads the warps wait for: by plain loads, or by cp.async in a
    pipeline too shallow to cover them."""
    first, s = hit.first, hit.signal
    barrier = f", barrier {fmt_pct(s['barrier_share'] * 100)}" if s["barrier_share"] >= 0.01 else ""
    tma = " (on Hopper and later, TMA: cp.async.bulk.tensor)" if s["tma"] else ""
    how = f"by {s['pipelined']} and still waited for" if s["pipelined"] else "by synchronous loads"
    fix = ("Deepen the pipeline: 3-4 stages of shared buffers (cp.async.wait_group(stages - 2), or as many TMA "
           "barriers), so the next tiles' copies stay in flight while this one computes." if s["pipelined"] else
           f"Pipeline the copies: cp.async (LDGSTS) into a second buffer while this tile computes (double "
           f"buffering){tma}.")
    return (f"{hit.name}: tiles staged into shared memory {how}, up to "
            f"{fmt_seconds(hit.stake or 0.0)} of {fmt_seconds(sum(hit.rows['time_s']))} at stake "
            f"({fmt_si(val(first, 'shared_mem_per_block'), 'B')} shared per block; stalls: long scoreboard "
            f"{fmt_pct(s['long_scoreboard_share'] * 100)}{barrier}). " + fix_text(first, fix))
