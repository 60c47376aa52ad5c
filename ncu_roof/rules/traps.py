"""The traps the seeds name, one rule each: impossible points, FMA and precision, access pattern
(coalescing, bank conflicts), occupancy and divergence (the launch shape: :mod:`ncu_roof.rules.launch`).

Each ``*_signal(row, th)`` is a pure per-launch test returning the derived numbers when the
trap applies (None otherwise); the rules group launches of one kernel and word the advice.
The checklist's below-roof step asks whether any of them explains a launch
(:func:`~ncu_roof.rules.engine.cause_signals`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si
from ncu_roof.jsonable import num
from ncu_roof.model.roofline import EPS, Thresholds, reaches
from ncu_roof.model.units import READS as UNIT_READS
from ncu_roof.model.units import unit_column
from ncu_roof.rules.access import needed_sectors_per_request
from ncu_roof.rules.base import About, Context, Finding, make
from ncu_roof.rules.common import (
    Row,
    evidence,
    fmt_count,
    has_tensor_cores,
    known,
    launches_text,
    name_of,
    ratio,
    total,
    val,
)
from ncu_roof.rules.engine import Hit, per_group, per_kernel, unless
from ncu_roof.rules.fixes import OPS, coalescing_advice, divergence_advice, missing_warps_text, padding_advice
from ncu_roof.rules.library import fix_text, library_of
from ncu_roof.rules.lines import (
    EXCESS_SECTORS,
    EXCESS_WAVEFRONTS,
    FP64_INSTRUCTIONS,
    IDLE_LANES,
    UNFUSED_INSTRUCTIONS,
)
from ncu_roof.rules.occupancy import SPILL_RISK_REGISTERS
from ncu_roof.rules.signals import (
    FP_INST,
    _peak,
    above_dram_signal,
    bank_conflict_signal,
    divergence_signal,
    division_share,
    fp64_signal,
    no_fma_signal,
    occupancy_signal,
    uncoalesced_signal,
)
from ncu_roof.rules.stakes import Relief
from ncu_roof.rules.stalls import memory_waits


def _l2_text(rows: pd.DataFrame) -> tuple[str, float | None]:
    l2_bytes, l2_roof = total(rows, "l2_bytes"), float(rows["l2_roof_bytes_per_s"].mean())
    t = total(rows, "time_s")
    if not l2_bytes == l2_bytes:
        return "There is no L2 byte count to place it against L2 (capture with ncu-roof capture).", None
    rate = l2_bytes / t
    if not l2_roof == l2_roof:
        return (f"Against L2 it moved {fmt_si(l2_bytes, 'B')} at {fmt_si(rate, 'B/s')}; there is no L2 roof "
                "(the L2 peak counter) to judge it.", None)
    stake = max(t - l2_bytes / l2_roof, 0.0)
    return (f"Against L2: {fmt_si(l2_bytes, 'B')} at {fmt_si(rate, 'B/s')}, "
            f"{fmt_pct(rate / l2_roof * 100)} of the {fmt_si(l2_roof, 'B/s')} L2 roof.", stake)


@per_group("above-dram-roof", about=About(rank=1), needs=("time_s", "dram_peak_bytes_per_s"),
           reads=("dram_bytes", "l2_bytes", "peak_l2_bytes_per_s"),
           enable="capture dram__bytes and its peak (ncu-roof capture, or ncu --section SpeedOfLight_RooflineChart)")
def above_dram_roof(group: pd.DataFrame, ctx: Context) -> Finding | None:
    """A point above the DRAM roof is impossible: its data came from cache; judge it against L2."""
    rows, signals = ctx.run.fires(group, above_dram_signal)
    if rows.empty:
        return None
    s, first = max(signals, key=lambda x: x["over_peak"]), rows.iloc[0]
    basis = "the algorithmic bytes over the time" if s["basis"] else "the measured DRAM bytes"
    l2, stake = _l2_text(rows)
    won = f", up to {fmt_seconds(stake)} to win against L2" if stake else ""
    msg = (f"{name_of(first['kernel'])}: above the DRAM roof, so its data came from cache{won} "
           f"({launches_text(rows)}). {basis[0].upper()}{basis[1:]} give {fmt_si(s['bytes_per_s'], 'B/s')}, "
           f"{s['over_peak']:.2f}x the {fmt_si(val(first, 'dram_peak_bytes_per_s'), 'B/s')} DRAM peak; the DRAM "
           f"roofline does not describe it. {l2}")
    ev = evidence(rows, ("time_s", "dram_bytes", "alg_bytes", "achieved_dram_bytes_per_s",
                         "dram_peak_bytes_per_s", "l2_bytes", "achieved_l2_bytes_per_s", "l2_roof_bytes_per_s"))
    ev.update({"bytes_per_s": s["bytes_per_s"], "over_peak": s["over_peak"]})
    return make("above-dram-roof", rows, msg, stake, ev)


# --- FMA and precision ----------------------------------------------------------------------
# how to get FMAs, per precision: the intrinsic names differ (fmaf is FP32 only)
_FMA_ADVICE = {"fp64": "Write a*b+c as FMAs (fma() in C++, no -fmad=false; nvfortran contracts them unless -Mnofma).",
               "fp32": "Write a*b+c as FMAs (fmaf, no -fmad=false).",
               "fp16": "Write a*b+c as FMAs (__hfma/__hfma2, packed half2)."}


@per_kernel("no-fma-roof", signal=no_fma_signal,
            about=About(rank=2, answers=("FPInstructions", "HighPipeUtilization"), lines=UNFUSED_INSTRUCTIONS,
                        cause=True),
            evidence=("time_s", "flops", "inst_ffma", "inst_fadd", "inst_fmul", "inst_dfma", "inst_dadd", "inst_dmul",
                      "peak_flops_per_s", "compute_roof", "time_lower_bound_s", "headroom_s"),
            signal_evidence=("fma_fraction", "unfused_fraction", "fusable_fraction"), needs=("compute_precision",),
            reads=(*UNIT_READS, *FP_INST, "warp_inst_executed"),
            enable="capture smsp__sass_thread_inst_executed_op_{f,d,h}{fma,add,mul}_pred_on.sum (ncu-roof capture)")
def no_fma_roof(hit: Hit) -> str:
    """Adds and multiplies that could be FMAs: the unfused share and the time fusing would save."""
    first, s = hit.first, hit.signal
    prec = str(first["compute_precision"])
    return (f"{hit.name}: unfused {prec.upper()} adds and multiplies{hit.stake_text}. "
            f"{s['unfused_fraction']:.0%} of its {prec} instructions are not FMAs (one FLOP each, an FMA does two)"
            + (f", {s['fusable_fraction']:.0%} in pairs of a multiply and an add: "
               if s["fusable_fraction"] < s["unfused_fraction"] - 0.005 else ": ")
            + f"its roof is {fmt_si(val(first, 'peak_flops_per_s'), 'FLOP/s')}, not the "
            f"{fmt_si(s['fma_peak_flops_per_s'], 'FLOP/s')} FMA peak. "
            + fix_text(first, _FMA_ADVICE.get(prec, _FMA_ADVICE["fp32"])))


@per_group("fp16-on-cuda-cores", needs=("compute_precision",), reads=("flops_fp16", "peak_fp16_flops_per_s"),
           about=About(answers=("HighPipeUtilization",)),
           enable="capture smsp__sass_thread_inst_executed_op_h{fma,add,mul}_pred_on.sum (ncu-roof capture)")
def fp16_on_cuda_cores(group: pd.DataFrame, ctx: Context) -> Finding | None:
    """FP16 on the CUDA cores is judged against the FP16 roof, not the tensor roof."""
    rows = group[(group["compute_precision"] == "fp16") & (group["binding"] == "compute")]
    if rows.empty:
        return None
    first = rows.iloc[0]
    peak = val(first, "peak_flops_per_s")
    tensor = (", not the tensor roof; if this is matrix math, tensor cores (mma/WMMA, cuBLAS) raise the roof "
              "several-fold." if has_tensor_cores(first) else "; this GPU has no tensor cores.")
    msg = (f"{name_of(first['kernel'])}: FP16 math on the CUDA cores ({launches_text(rows)}). It is judged "
           "against the FP16 roof" + (f" ({fmt_si(peak, 'FLOP/s')})" if known(peak) else "") + tensor)
    ev = evidence(rows, ("time_s", "flops_fp16", "flops_tensor", "peak_flops_per_s", "compute_roof"))
    return make("fp16-on-cuda-cores", rows, msg, None, ev, note=True)


def _fp64_advice(row: Row, s: dict[str, float], th: Thresholds) -> str:
    share = division_share(row)
    div = (f" Division is about {share:.0%} of it ({fmt_count(s['fp64_divisions'])} MUFU.RCP64H, each then a chain "
           "of DFMAs): multiply by a reciprocal computed once." if reaches(share, th.fp64_division_share) else "")
    if s["fp64_over_fp32_peak"] <= th.consumer_fp64_ratio + EPS:
        return (" Use FP32 where accuracy allows; in float code FP64 often comes from double promotion "
                "(0.5 for 0.5f, sqrt for sqrtf: -Wdouble-promotion lists them)." + div)
    return div or " Cut FP64 operations (hoist, reuse, fewer divisions and square roots), FP32 where accuracy allows."


def _fp64_need(hit: Hit, peaks: str) -> str:
    """What the FP64 work needs at the pipe's rate, after the rate (``peaks``: the two peaks, said
    where the time is from FLOPs): its DFMA, DADD and DMUL each take one issue of the pipe (a DADD as
    long as a DFMA), so counted by instruction, not by FLOP; where the pipe is busy well beyond that,
    other FP64-pipe instructions (F2F conversions, DSETP) take the rest."""
    ops = sum(total(hit.rows, f"inst_{op}") for op in ("dfma", "dadd", "dmul"))
    peak = _peak(hit.first, "fp64")
    if not (ops > 0 and peak > 0):
        t64 = hit.signal["fp64_time_at_roof_s"]
        return (f" ({peaks}); its {fmt_si(total(hit.rows, 'flops_fp64'), 'FLOP')} in FP64 alone need "
                f"{fmt_seconds(t64)}" if known(t64) else f" ({peaks})")
    need = 2.0 * ops / peak  # the peak counts an FMA as 2 FLOPs: one instruction a lane takes 2 / peak
    busy = total(hit.rows, unit_column("pipe_fp64"))
    if known(busy) and busy > FP64_OTHER_WORK * need:
        return (f"; {fmt_count(ops)} FP64 adds/muls/FMAs take {fmt_seconds(need)} of the pipe's "
                f"{fmt_seconds(busy)} busy, conversions the rest")
    return f"; its {fmt_count(ops)} FP64 adds/muls/FMAs alone need {fmt_seconds(need)}"


FP64_OTHER_WORK = 1.25  # the pipe busy this many times the arithmetic's own time: other instructions on it


@per_kernel("fp64-pipe", signal=fp64_signal,
            about=About(rank=2, answers=("SOLFPRoofline", "HighPipeUtilization"), lines=FP64_INSTRUCTIONS, cause=True),
            evidence=("time_s", "flops_fp64", "flops", "inst_dfma", "inst_dadd", "inst_dmul", "inst_fp64_rcp",
                      "pipe_fp64_pct", "peak_fp64_flops_per_s", "peak_fp32_flops_per_s", "time_lower_bound_s",
                      "headroom_s"),
            signal_evidence=("fp64_over_fp32_peak", "fp64_time_at_roof_s", "division_share"), needs=("time_s",),
            reads=(*UNIT_READS, *FP_INST, "inst_fp64_rcp", "warp_inst_executed", "peak_fp64_flops_per_s",
                   "peak_fp32_flops_per_s"),
            enable="capture smsp__sass_thread_inst_executed_op_d{fma,add,mul}_pred_on.sum and the FP64/FP32 peaks, "
                   "or sm__inst_executed_pipe_fp64 (ncu --section ComputeWorkloadAnalysis)")
def fp64_pipe(hit: Hit) -> str:
    """The FP64 pipe is the limiter, on a GPU whose FP64 rate is below FP32 (1/64 to 1/2)."""
    first, s, th = hit.first, hit.signal, hit.ctx.thresholds
    rate = f"1/{1 / s['fp64_over_fp32_peak']:.0f}"
    busy = f", {fmt_pct(s['fp64_pipe_pct'])} busy" if known(s["fp64_pipe_pct"]) else ""
    peaks = f"{fmt_si(_peak(first, 'fp64'), 'FLOP/s')} vs {fmt_si(_peak(first, 'fp32'), 'FLOP/s')}"
    need = _fp64_need(hit, peaks) if not reaches(division_share(first), th.fp64_division_share) else f" ({peaks})"
    lead = ("the FP64 pipe is the limiter" if first.get("binding_unit") in ("pipe_fp64", "flops", None)
            or not known(val(first, "binding_unit_share")) else "FP64 work")
    return (f"{hit.name}: {lead}{busy}{hit.stake_text} ({launches_text(hit.rows)}). "
            f"{first['device']} runs FP64 at {rate} of FP32{need}."
            + " " + fix_text(first, _fp64_advice(first, s, th).strip()))


# --- access pattern -------------------------------------------------------------------------


def _excess_side(row: Row, extra: float) -> tuple[str, float] | None:
    """The side (load or store) that must carry most of ``extra`` excess sectors, and at least how many.

    Every request needs one sector at least, so the other side can carry at most its sectors minus
    its requests; the rest is this side's. Named only when that is half the excess or more."""
    for op, other in (("load", "store"), ("store", "load")):
        sectors, requests = val(row, f"global_{other}_sectors"), val(row, f"global_{other}_requests")
        if not known(sectors):
            continue
        at_least = extra - max(sectors - (requests if known(requests) else 0.0), 0.0)
        if at_least >= 0.5 * extra:
            return OPS[op], at_least
    return None


def _l2_view_text(v: dict[str, Any]) -> tuple[str, str]:
    """The evidence of a chart-only report: L2's sectors written by L1 against the distinct sectors touched."""
    reads = (f", and reads {v['read'] / v['touched']:.1f} times" if known(v["read"]) and v["read"] >= 2 * v["touched"]
             else "")
    return (f"L1 writes each L2 sector {v['excess']:.1f} times ({fmt_count(v['written'])} sectors for "
            f"{fmt_count(v['touched'])} touched{reads}; no L1 sector counts here): stores split across instructions, "
            "or rewriting their data."), "stores"


def _uncoalesced_text(row: Row, spr: dict[str, float], limit: float, listed: bool = True) -> tuple[str, str | None]:
    """(the evidence, the excessive side where the counters tell) for one launch; ``listed``: with
    each side's sectors per request beside the sector counts."""
    per_request = [f"{OPS[op]} {x:.1f}" for op, x in spr.items() if known(x)] if listed else []
    theo, ideal = val(row, "global_sectors_theoretical"), val(row, "global_sectors_ideal")
    if theo > 0 and ideal > 0:
        extra = theo - ideal
        side = _excess_side(row, extra)
        text = (f"{fmt_count(theo)} sectors requested per launch where {fmt_count(ideal)} would do "
                f"({theo / ideal:.1f}x, {32 * ideal / theo:.0f} of every 32 bytes used)")
        if side:
            text += (f", all {fmt_count(extra)} extra from {side[0]}" if side[1] >= extra * (1 - 1e-9) else
                     f", at least {fmt_count(side[1])} of the {fmt_count(extra)} extra from {side[0]}")
        text += "." + (f" Sectors per request: {', '.join(per_request)}." if per_request else "")
        return text, side[0] if side else None
    used = val(row, "global_load_bytes_per_sector_pct")
    if used > 0:  # ncu's bytes used per sector of global loads (the signal's second source)
        text = (f"Global loads use {used:.0f}% of the bytes of each 32-byte sector they fetch "
                f"({100.0 / used:.1f}x the sectors the data needs).")
        return text + (f" Sectors per request: {', '.join(per_request)}." if per_request else ""), "loads"
    over = [op for op, x in spr.items() if known(x) and x > limit]
    if not over:
        return (f"Sectors per request: {', '.join(per_request)}." if per_request else ""), None
    words = [f"{OPS[op]} use {spr[op]:.1f} sectors per request" for op in over]
    measured = {op: x for op, x in spr.items() if known(x)}
    needed = needed_sectors_per_request(list(measured.values()), limit)
    if needed < limit:  # the narrower side's width (as the signal prices it): a transpose's 4-byte loads
        narrow = min(measured, key=lambda op: measured[op])
        text = (f"{' and '.join(words).capitalize()}, {OPS[narrow]} {spr[narrow]:.1f} ({needed:.0f}-byte "
                f"elements if both move one type): {max(spr[op] for op in over) / needed:.1f}x the sectors needed.")
    else:
        text = (f"{' and '.join(words).capitalize()}, more than the {limit:.0f} that even 16-byte accesses need "
                f"(at least {max(spr[op] for op in over) / limit:.1f}x).")
    return text, " and ".join(OPS[op] for op in over)


@per_kernel("uncoalesced-access", signal=uncoalesced_signal,
            about=About(rank=1,
                        answers=("UncoalescedGlobalAccess", "MemoryCacheAccessPattern"),
                        fix="coalescing",
                        lines=EXCESS_SECTORS,
                        cause=True),
            evidence=("time_s", "global_load_sectors", "global_load_requests", "global_store_sectors",
                      "global_store_requests", "global_sectors_theoretical", "global_sectors_ideal",
                      "time_lower_bound_s"),
            needs=("global_load_sectors|global_load_bytes_per_sector_pct|global_sectors_theoretical|"
                   "l2_write_sectors_from_l1",
                   "global_load_requests|global_load_bytes_per_sector_pct|global_sectors_ideal|l2_missed_sectors_from_l1"),
            reads=(*UNIT_READS, "global_store_sectors", "global_store_requests", "global_load_bytes_per_sector_pct",
                   "stall_long_scoreboard", "global_load_inst", "local_load_inst", "l1_data_pipe_pct"),
            enable="capture with ncu-roof capture, or ncu --section MemoryWorkloadAnalysis_Tables --section "
                   "SourceCounters")
def uncoalesced_access(hit: Hit) -> tuple[str, dict[str, Any]]:
    """Global loads/stores that touch more 32-byte sectors than the data they use."""
    first, s = hit.first, hit.signal
    spr = {op: ratio(val(first, f"global_{op}_sectors"), val(first, f"global_{op}_requests"))
           for op in ("load", "store")}
    limit = hit.ctx.thresholds.uncoalesced_sectors_per_request
    listed = library_of(first) is None  # a library's sectors per request are not the user's to change
    text, side = _l2_view_text(s["l2_view"]) if "l2_view" in s else _uncoalesced_text(first, spr, limit, listed)
    advice, split = coalescing_advice(first, side)
    if split and listed:  # the advice names the side's sectors per request itself
        text, _ = _uncoalesced_text(first, spr, limit, listed=False)
    msg = f"{hit.name}: uncoalesced global {side or 'accesses'}{hit.stake_text}. {text} " + fix_text(first, advice)
    return msg, {"sectors_per_load_request": num(spr["load"]), "sectors_per_store_request": num(spr["store"]),
                 "excess": s["excess"], "bytes_used_per_sector": s["bytes_used_per_sector"], "excess_side": side}


@per_kernel("bank-conflicts", signal=bank_conflict_signal,
            about=About(rank=1,
                        answers=("UncoalescedSharedAccess", "SharedMemoryConflicts"),
                        lines=EXCESS_WAVEFRONTS,
                        cause=True),
            evidence=("time_s", "shared_bank_conflicts", "shared_wavefronts", "time_lower_bound_s"),
            signal_evidence=("conflict_share", "wavefronts_per_needed"),
            needs=("shared_bank_conflicts", "shared_wavefronts"), reads=UNIT_READS,
            enable="capture with ncu-roof capture, or ncu --section MemoryWorkloadAnalysis_Tables")
def bank_conflicts(hit: Hit) -> str:
    """Shared-memory accesses serialized by bank conflicts (conflicts / wavefronts)."""
    first, s = hit.first, hit.signal
    return (f"{hit.name}: shared-memory bank conflicts{hit.stake_text}. "
            f"{fmt_count(val(first, 'shared_bank_conflicts'))} of {fmt_count(val(first, 'shared_wavefronts'))} "
            f"shared wavefronts ({s['conflict_share']:.0%}) are conflicts, {s['wavefronts_per_needed']:.1f}x the "
            "wavefronts needed. " + fix_text(first, padding_advice(first)))


def _limit_text(row: Row, limiter: str) -> str:
    """'registers (64 registers/thread, 48 kB shared/block)', leaving out what is unknown."""
    facts = []
    if known(val(row, "registers_per_thread")) and limiter != "shared mem":
        facts.append(f"{val(row, 'registers_per_thread'):.0f} registers/thread")
    if known(val(row, "shared_mem_per_block")) and limiter != "registers":
        facts.append(f"{fmt_si(val(row, 'shared_mem_per_block'), 'B')} shared/block")
    what = f"the {limiter} limit" if limiter != "unknown" else "its resources limit"
    return what + (f" ({', '.join(facts)})" if facts else "")


def _where(row: Row) -> str:
    """'at 25% of its roof', else 'latency-bound' or 'with no roofline' (a capture without FLOPs or bytes)."""
    pct = val(row, "pct_of_roof")
    if known(pct):
        return f"at {fmt_pct(pct)} of its roof"
    return "latency-bound" if row.get("bound") == "latency" else "with no roofline"


def _occupancy_advice(row: Row, s: dict[str, Any]) -> str:
    """What to change and what it gives: 'at most 40 registers/thread (__launch_bounds__(512, 3)): 3 blocks...'."""
    if "warps_after" not in s:
        return "use fewer registers or less shared memory per block, or more independent work per thread (ILP)."
    gain = (f"{s['blocks_after']:.0f} blocks per SM, not {s['blocks_now']:.0f}, "
            f"+{s['warps_after'] - s['warps_now']:.0f} warps ({s['warps_now']:.0f} -> {s['warps_after']:.0f})")
    if "registers_per_thread_after" in s:
        used = val(row, "registers_per_thread")
        kept = "a register tile" if used >= SPILL_RISK_REGISTERS else "values it keeps in registers"
        spill = f" From {used:.0f}, that likely spills {kept}: check ptxas -v for spills." if s.get("spill_risk") \
            else ""
        return (f"at most {s['registers_per_thread_after']:.0f} (__launch_bounds__("
                f"{val(row, 'block_size'):.0f}, {s['blocks_after']:.0f})) gives {gain}.{spill}")
    if "shared_mem_per_block_after" in s:
        return f"at most {fmt_si(s['shared_mem_per_block_after'], 'B')} shared/block (smaller tiles) gives {gain}."
    return f"relaxing it gives {gain}."


# the launches block-size does not speak for with its smaller block: where it does, the block's size is what
# holds warps back, and it says so (one finding for one fix, with the achieved occupancy)
_not_smaller_blocks = unless("block-size", lambda said, _: bool(said.get("smaller")))


@per_kernel("low-occupancy", signal=occupancy_signal, keep=_not_smaller_blocks,
            about=About(rank=5,
                        answers=("IssueSlotUtilization", "AchievedOccupancy", "TheoreticalOccupancy", "Occupancy"),
                        cause=True),
            evidence=("time_s", "pct_of_roof", "achieved_occupancy_pct", "theoretical_occupancy_pct",
                      "occupancy_limit_registers", "occupancy_limit_shared_mem", "occupancy_limit_warps",
                      "occupancy_limit_blocks", "registers_per_thread", "shared_mem_per_block", "block_size",
                      "time_lower_bound_s", "headroom_s"),
            signal_evidence=None, needs=("achieved_occupancy_pct", "theoretical_occupancy_pct"),
            reads=(*UNIT_READS, "occupancy_limit_registers", "occupancy_limit_shared_mem", "occupancy_limit_warps",
                   "occupancy_limit_blocks", "registers_per_thread", "shared_mem_per_block", "block_size", "waves",
                   "grid_size", "sm_count", "max_warps_per_sm", "max_registers_per_sm", "max_shared_mem_per_sm"),
            enable="capture with ncu-roof capture, or ncu --section Occupancy --section LaunchStats")
def low_occupancy(hit: Hit) -> str:
    """Below its roof with warps missing: the limiting resource, what to change and the warps it gives."""
    first, s = hit.first, hit.signal
    theo, achieved = val(first, "theoretical_occupancy_pct"), val(first, "achieved_occupancy_pct")
    msg = (f"{hit.name}: low occupancy, up to {fmt_seconds(hit.stake or 0.0)} of "
           f"{fmt_seconds(total(hit.rows, 'time_s'))} at stake: {fmt_pct(achieved)} achieved of a theoretical "
           f"{fmt_pct(theo)}, {_where(first)}")
    if s["runtime_short"]:
        msg += f". {missing_warps_text(first)}"
    if s["theory_limited"] and library_of(first) is None:
        limit = _limit_text(first, str(s["limiter"]))
        return msg + f". {limit[0].upper()}{limit[1:]} binds: {_occupancy_advice(first, s)}"
    return msg + "." + (" " + fix_text(first, "") if library_of(first) else "")


@per_kernel("divergence", signal=divergence_signal,
            about=About(rank=4, answers=("ThreadDivergence",), lines=IDLE_LANES, cause=True),
            evidence=("time_s", "threads_per_inst", "branch_uniform_pct", "pct_of_roof", "time_lower_bound_s"),
            signal_evidence=None, needs=("threads_per_inst|branch_uniform_pct",), reads=UNIT_READS,
            enable="capture smsp__thread_inst_executed_per_inst_executed.ratio (ncu --section InstructionStats)")
def divergence(hit: Hit) -> str:
    """Warps running only part of their lanes (threads per instruction < 32), priced by the warp
    instructions that full warps would not need."""
    first, s = hit.first, hit.signal
    if not known(s["active_lane_fraction"]):  # only ncu's branch uniformity
        return (f"{hit.name}: branch divergence{hit.stake_text}. {100 - val(first, 'branch_uniform_pct'):.1f}% of "
                "branch targets split a warp (how many lanes then idle is not captured). "
                + fix_text(first, divergence_advice(first)))
    return (f"{hit.name}: branch divergence{hit.stake_text}. {val(first, 'threads_per_inst'):.1f} of 32 threads "
            f"are active per warp instruction ({s['active_lane_fraction']:.0%}), {_where(first)}. "
            + fix_text(first, divergence_advice(first)))


# --- data left in host memory ---------------------------------------------------------------
HOST_FILL_PCT = 0.01  # L2 filling at least this % of its peak from system memory: host data read in earnest
HOST_FILL_RATIO = 10.0  # ... and at least this many times its fills from device memory (DRAM)


def host_memory_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """L2 filling its sectors from system memory (``HOST_FILL_PCT`` of its peak or more) and at least
    ``HOST_FILL_RATIO`` times less from device memory: the kernel's data is in zero-copy (mapped, pinned)
    or managed memory left on the host, read over PCIe (or the chip-to-chip link). Its fix moves the data
    to device memory; what that wins is the time spent waiting for it, the time above the busiest unit's
    bound (its waits on memory where the stalls say)."""
    host, device = val(row, "l2_fill_sysmem_pct"), val(row, "l2_fill_device_pct")
    if not (reaches(host, HOST_FILL_PCT) and known(device) and host >= HOST_FILL_RATIO * device):
        return None
    return {"host_fill_pct": host, "device_fill_pct": device,
            "relief": Relief(latency=1.0, waits=memory_waits(row))}


@per_kernel("host-memory", signal=host_memory_signal, about=About(rank=1, cause=True),
            evidence=("time_s", "l2_fill_sysmem_pct", "l2_fill_device_pct", "dram_throughput_pct", "headroom_s"),
            signal_evidence=("host_fill_pct", "device_fill_pct"), needs=("l2_fill_sysmem_pct",),
            reads=(*UNIT_READS, "l2_fill_device_pct", "dram_throughput_pct"),
            enable="capture lts__d_sectors_fill_sysmem and lts__d_sectors_fill_device (the memory breakdown of "
                   "ncu --section SpeedOfLight)")
def host_memory(hit: Hit) -> str:
    """A kernel reading its data from host memory: where L2 fills from, and how to move the data."""
    first, s = hit.first, hit.signal
    dram = val(first, "dram_throughput_pct")
    idle = "" if not known(dram) else " (DRAM idle)" if dram < 1.0 else f" (DRAM {fmt_pct(dram)} busy)"
    times = (f"{s['host_fill_pct'] / s['device_fill_pct']:,.0f} times as many sectors from system memory as from "
             f"device memory" if s["device_fill_pct"] > 0 else "sectors from system memory, none from device memory")
    return (f"{hit.name}: its data is in host memory{hit.stake_text}. L2 fills {times}{idle}: zero-copy (mapped, "
            "pinned) or managed memory left on the host, read over PCIe. "
            + fix_text(first, "Copy it to device memory before the launch (cudaMalloc and cudaMemcpy), or prefetch "
                              "managed memory to the GPU (cudaMemPrefetchAsync)."))
