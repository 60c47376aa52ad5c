"""The launch shape, one rule each: the overhead regime (launches near the launch floor, time that
does not scale with the grid), wave tails, and grids that leave SMs idle or fill under one wave.

Each signal (:mod:`~ncu_roof.rules.signals`) is a pure per-launch test; its relief is latency (the
time above the binding unit's bound) within the share of the time the launch shape wastes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_seconds, fmt_si
from ncu_roof.model.roofline import EPS, Thresholds, under
from ncu_roof.model.units import READS as UNIT_READS
from ncu_roof.model.units import label as unit_label
from ncu_roof.rules.base import About, Context, Finding, make
from ncu_roof.rules.common import (
    evidence,
    fmt_count,
    is_matrix_kernel,
    known,
    launches_text,
    name_of,
    total,
    val,
)
from ncu_roof.rules.engine import Hit, per_group, per_kernel
from ncu_roof.rules.library import fix_text, launch_bound_text, single_tile_pass
from ncu_roof.rules.occupancy import tail_relaxed
from ncu_roof.rules.signals import idle_warps_signal, underfill_signal, wave_signal

# --- overhead regime ------------------------------------------------------------------------
OVERHEAD_FIT_SIZES = 3  # grid sizes a scaling fit needs (two points always fit a line)
def _scaling_fit(group: pd.DataFrame, th: Thresholds) -> dict[str, float] | None:
    """time = fixed + per_block x grid over launches of one kernel at several (3 or more) grid sizes;
    only where time grows with the grid (a positive slope: grid size tracks work)."""
    if "grid_size" not in group:  # no grid sizes: nothing to fit
        return None
    ok = group[(group["grid_size"] > 0) & (group["time_s"] > 0)]
    if ok["grid_size"].nunique() < OVERHEAD_FIT_SIZES or ok["time_s"].median() > th.overhead_scaling_max_time_s:
        return None
    size_ratio = ok["grid_size"].max() / ok["grid_size"].min()
    if under(size_ratio, th.overhead_size_ratio):
        return None
    per_block, fixed = np.polyfit(ok["grid_size"].astype(float), ok["time_s"].astype(float), 1)
    fixed_share = fixed * len(ok) / ok["time_s"].sum()
    grows = per_block * (ok["grid_size"].max() - ok["grid_size"].min()) > EPS * ok["time_s"].mean()
    if fixed <= 0 or not grows or under(fixed_share, th.overhead_fixed_share):
        return None
    # idxmin/idxmax give index labels (typed Hashable, which the stubs refuse as a .loc row key)
    t_small: float = ok.loc[ok["grid_size"].idxmin(), "time_s"]  # type: ignore[index, assignment]
    t_large: float = ok.loc[ok["grid_size"].idxmax(), "time_s"]  # type: ignore[index, assignment]
    return {"fixed_s": float(fixed), "per_block_s": float(per_block), "fixed_share": float(fixed_share),
            "size_ratio": float(size_ratio), "time_ratio": float(t_large / t_small), "launches_fit": len(ok)}


def _overhead_message(group: pd.DataFrame, short: pd.DataFrame, fit: dict[str, float] | None,
                      stake: float | None) -> str:
    name = name_of(group["kernel"].iloc[0])
    won = f", up to {fmt_seconds(stake)} to win" if stake else ""
    if len(short):
        n, t = len(short), total(short, "time_s")
        each = fmt_seconds(t) if n == 1 else f"{fmt_seconds(t / n)} on average ({fmt_seconds(t)} in all)"
        lb = total(short, "time_lower_bound_s")
        work = f"The roofline explains only {fmt_seconds(lb)}" if known(lb) else "Its work is not measured"
        parts = [f"{name}: launch-bound, {launches_text(short)} of {each} near the few-us launch floor{won}. {work}."]
    else:
        parts = [f"{name}: launch-bound ({launches_text(group)}, {fmt_seconds(total(group, 'time_s'))}){won}."]
    if fit:
        parts.append(f"Time does not scale with size: grid x{fit['size_ratio']:.3g}, time x{fit['time_ratio']:.2f}; "
                     f"a fit gives {fmt_seconds(fit['fixed_s'])} fixed per launch ({fit['fixed_share']:.0%} of it).")
    library = launch_bound_text(group.iloc[0])
    return " ".join([*parts, library or "Fuse with neighbours or give each launch more work (its start-up and latency "
                     "are paid once); a CUDA graph cuts only the host's gaps between launches, which ncu's times leave "
                     "out."])


@per_group("overhead-regime", needs=("time_s",), reads=("grid_size", "dram_bytes", "flops"),
           enable="capture gpu__time_duration.sum (any ncu capture has it)")
def overhead_regime(group: pd.DataFrame, ctx: Context) -> Finding | None:
    """Launches too short for the roofline, or whose time does not scale with grid size."""
    short = group[group["bound"] == "overhead"]
    fit = _scaling_fit(group, ctx.thresholds)
    if short.empty and fit is None:
        return None
    # each launch wins at most its time above its roofline bound, and never its launch floor
    floor = group["launch_floor_s"].fillna(0.0) if "launch_floor_s" in group else pd.Series(0.0, index=group.index)
    above = short["time_s"] - np.maximum(short["time_lower_bound_s"], floor[short.index])
    short_stake = float(above.clip(lower=0).sum(min_count=1))
    # merging the launches saves all but one fixed cost, never more than the launches take above their floors
    fit_stake = (min(fit["fixed_s"] * (fit["launches_fit"] - 1), float((group["time_s"] - floor).clip(lower=0).sum()))
                 if fit else np.nan)
    stakes = [x for x in (short_stake, fit_stake) if x == x]
    stake = max(stakes) if stakes else None
    rows = group if fit else short
    ev = evidence(rows, ("time_s", "time_lower_bound_s", "grid_size", "bound"))
    ev.update(fit or {})
    return make("overhead-regime", rows, _overhead_message(group, short, fit, stake), stake, ev)


# --- wave quantization ----------------------------------------------------------------------
@per_kernel("wave-tail", signal=wave_signal, group_by=("grid_size",), needs_stake=True,
            about=About(rank=2, answers=("LaunchConfiguration", "WorkloadImbalance"), cause=True),
            evidence=("time_s", "grid_size", "waves", "block_size", "sm_count"),
            signal_evidence=("slots", "lost_fraction", "tail_blocks"), needs=("waves", "grid_size"),
            reads=(*UNIT_READS, "occupancy_limit_registers", "occupancy_limit_shared_mem", "occupancy_limit_warps",
                   "occupancy_limit_blocks", "registers_per_thread", "shared_mem_per_block", "block_size", "sm_count",
                   "max_warps_per_sm", "max_registers_per_sm", "max_shared_mem_per_sm"),
            enable="capture with ncu-roof capture, or ncu --section LaunchStats --section Occupancy")
def wave_tail(hit: Hit) -> str:
    """A grid of a few waves whose last wave is nearly empty: time a full-wave grid would save."""
    first, s = hit.first, hit.signal
    grid, waves, slots = val(first, "grid_size"), val(first, "waves"), s["slots"]
    t = total(hit.rows, "time_s")
    return (f"{hit.name}: a wave tail, up to {fmt_seconds(hit.stake or 0.0)} of {fmt_seconds(t)}"
            f" to win ({launches_text(hit.rows)}). {grid:.0f} blocks on {slots:.0f} slots ({waves:.2f} waves): the "
            f"last wave leaves {slots - s['tail_blocks']:.0f} slots idle, {s['lost_fraction']:.0%} of all slots. "
            + fix_text(first, _tail_fix(first, slots)))


def _tail_fix(row: Any, slots: float) -> str:
    """Fill whole waves; first, where registers or shared memory set the slots and relaxing them
    shrinks the tail, that change (a fixed problem size rarely lets the grid change)."""
    fill = f"whole waves ({slots:.0f} blocks or a multiple)."
    r = tail_relaxed(row)
    if r is None:
        return "Fill " + fill
    now, after = r["blocks_now"], r["blocks_after"]
    if r["limiter"] == "registers":
        what = f"{val(row, 'registers_per_thread'):.0f} registers a thread fit {now:.0f} blocks per SM"
        change = (f"at most {r['registers_per_thread_after']:.0f} (__launch_bounds__({val(row, 'block_size'):.0f}, "
                  f"{after:.0f}))")
    else:
        what = f"{fmt_si(val(row, 'shared_mem_per_block'), 'B')} shared a block fit {now:.0f} blocks per SM"
        change = f"at most {fmt_si(r['shared_mem_per_block_after'], 'B')} (smaller tiles)"
    grid = val(row, "grid_size")
    then = (f"hold the {grid:.0f} blocks in one wave" if r["waves_after"] <= 1 + EPS
            else f"make {r['waves_after']:.2f} waves, {r['lost_after']:.0%} of them idle")
    return f"{what}; {change} fit {after:.0f}: {r['slots_after']:.0f} slots {then}. Else fill {fill}"


def _not_single_tile(rows: pd.DataFrame, signals: list[dict[str, Any]], ctx: Context
                     ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """No grid advice for a library pass that runs one block by design."""
    return (rows.iloc[:0], []) if single_tile_pass(rows.iloc[0]) else (rows, signals)


@per_kernel("grid-underfill", signal=underfill_signal, group_by=("grid_size",), keep=_not_single_tile,
            about=About(rank=2, answers=("LaunchConfiguration", "WorkloadImbalance"), cause=True),
            needs_stake=True,
            evidence=("time_s", "grid_size", "sm_count", "block_size", "waves", "achieved_occupancy_pct",
                      "theoretical_occupancy_pct", "headroom_s"),
            signal_evidence=("idle_fraction", "idle_sms"), needs=("grid_size", "sm_count"),
            reads=(*UNIT_READS, "waves", "block_size", "achieved_occupancy_pct", "theoretical_occupancy_pct",
                   "max_warps_per_sm", "sm_active_cycles", "sm_cycles"),
            enable="capture with ncu-roof capture, or ncu --section LaunchStats")
def grid_underfill(hit: Hit) -> str | tuple[str, dict[str, Any]]:
    """Fewer blocks than SMs: the roofline assumes the whole GPU works, this launch leaves SMs idle;
    or a grid under one wave whose missing warps only more blocks can add."""
    first, s = hit.first, hit.signal
    t, stake = total(hit.rows, "time_s"), hit.stake or 0.0
    grid, sms = val(first, "grid_size"), val(first, "sm_count")
    blocks = f"{grid:.0f} block{'' if grid == 1 else 's'}"
    split = "smaller tiles, split-K" if is_matrix_kernel(first) else "less work per block"
    if "uneven" in s:  # the binding unit saturated while the SMs work: the SMs idle at the end cost the time
        more = math.ceil(s["uneven"] - EPS)
        return (f"{hit.name}: the SMs finish unevenly, up to {fmt_seconds(stake)} of {fmt_seconds(t)} to win "
                f"({launches_text(hit.rows)}). {blocks} on {sms:.0f} SMs, {s['uneven']:.1f} each: some run {more}, "
                f"the rest fewer, so SMs sit idle {s['idle_fraction']:.0%} of the launch, while busy its "
                f"{unit_label(str(first.get('binding_unit')))} is at {s['busy_active']:.0%}: more warps cannot help. "
                + fix_text(first, f"A grid of a multiple of {sms:.0f} blocks ({split}), or more work per launch."))
    if "waves" in s:  # every SM has work, but the grid is under one wave: the grid limits the warps
        return (f"{hit.name}: the grid limits the warps in flight, up to {fmt_seconds(stake)} of {fmt_seconds(t)} to "
                f"win ({launches_text(hit.rows)}). {blocks} fill {s['waves']:.0%} of one wave ({s['slots']:.0f} "
                f"blocks fit at once), so {s['warps_missing']:.0%} of the warps the launch allows are missing; fewer "
                "registers or less shared memory per block cannot add them, more blocks can. "
                + fix_text(first, f"More blocks: {split}, or more work per launch."))
    if "grid_warps" in s:  # few blocks, and few warps in each: the busy SMs are all but empty too
        return (f"{hit.name}: the grid holds too few warps, up to {fmt_seconds(stake)} of {fmt_seconds(t)} to win "
                f"({launches_text(hit.rows)}). {blocks} of {val(first, 'block_size'):.0f} threads: "
                f"{s['grid_warps']:.0f} warps where the launch allows {s['warps_allowed']:.0f} at once "
                f"({s['grid_warps'] / s['warps_allowed']:.0%}), {s['idle_sms']:.0f} of {sms:.0f} SMs idle. "
                + fix_text(first, f"Many more warps: at least {sms:.0f} blocks and more threads per block "
                                  f"({split}), or more work per launch."),
                {"grid_warps": s["grid_warps"], "warps_allowed": s["warps_allowed"]})
    return (f"{hit.name}: the grid leaves SMs idle, up to {fmt_seconds(stake)} of {fmt_seconds(t)} to win "
            f"({launches_text(hit.rows)}). {blocks} for {sms:.0f} SMs: {s['idle_sms']:.0f} SMs "
            f"({s['idle_fraction']:.0%}) do nothing. "
            + fix_text(first, f"Split the work into at least {sms:.0f} blocks ({split}), or batch more work into "
                              "the launch."))


# --- idle warps -----------------------------------------------------------------------------
@per_kernel("idle-warps", signal=idle_warps_signal, group_by=("grid_size", "block_size"), needs_stake=True,
            about=About(rank=2, answers=("LaunchConfiguration",), cause=True),
            evidence=("time_s", "grid_size", "block_size", "global_load_inst", "global_store_inst"),
            signal_evidence=("warps", "memory_warp_inst", "idle_warp_share"),
            needs=("global_store_inst", "grid_size", "block_size"),
            reads=(*UNIT_READS, "global_load_inst", "global_store_inst", "shared_requests", "shared_mem_per_block"),
            enable="capture smsp__inst_executed_op_global_ld.sum and smsp__inst_executed_op_global_st.sum "
                   "(ncu --section InstructionStats --section LaunchStats)")
def idle_warps(hit: Hit) -> str:
    """Most of the grid's warps never touch global memory: a grid far larger than the data."""
    first, s = hit.first, hit.signal
    grid, block = val(first, "grid_size"), val(first, "block_size")
    return (f"{hit.name}: at least {s['idle_warp_share']:.0%} of its warps never load or store global memory "
            f"({fmt_count(s['memory_warp_inst'])} load/store warp instructions for {fmt_count(s['warps'])} warps, "
            f"{grid:,.0f} blocks of {block:.0f}), up to {fmt_seconds(hit.stake or 0.0)} of "
            f"{fmt_seconds(total(hit.rows, 'time_s'))} to win ({launches_text(hit.rows)}). The grid is far larger "
            "than the data, or the index mapping leaves most threads out of range: "
            + fix_text(first, "size the grid to the data (ceil(n / block) blocks, or a grid-stride loop)."))

