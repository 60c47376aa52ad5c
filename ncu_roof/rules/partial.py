"""Partial data: a launch the roofline cannot place (a basic-set capture with no FLOP or byte counters,
an unnamed GPU with no peaks) or whose point misses the unit that binds, read from ncu's speed-of-light
percentages: one rule, speed-of-light-only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.model.kernels import time_weighted
from ncu_roof.model.roofline import EPS, Thresholds, reaches
from ncu_roof.rules import fixes
from ncu_roof.rules.base import About, Context, Finding, make
from ncu_roof.rules.common import (
    SHARED_RESERVED_BYTES,
    Row,
    evidence,
    known,
    launches_text,
    name_of,
    total,
)
from ncu_roof.rules.engine import cause_signals, per_group
from ncu_roof.rules.library import fix_text, library_of


# No `needs`: it only speaks for launches the roofline could not place, so listing it as skipped
# when every launch is placed (or when the SOL % are missing too, which the notes say) is noise.
def _without_roofline(ctx: Context) -> pd.DataFrame:
    """Launches the roofline could not place, with ncu's speed-of-light percentages; silent once a
    finer unit than ncu's compute/memory throughput binds (binding-unit speaks for it), except on a
    latency-bound launch no cause explains (no unit binds there: binding-unit is silent too)."""
    placed = ctx.placed
    binding = placed.get("binding_unit", pd.Series(None, index=placed.index, dtype="object"))
    coarse = binding.isna() | binding.isin(["sm", "memory"]) | _dram_at_roof(placed, ctx.thresholds)
    unexplained = (placed["bound"] == "latency").to_numpy() & ~ctx.run.fires_any(tuple(cause_signals().values()))
    bounds = placed["bound"].isin(["unknown", "latency", "memory", "compute"]) & placed["time_s"].notna()
    return placed[bounds & ((placed["pct_of_roof"].isna() & (coarse | unexplained)) | _partial_roofline(ctx))]


def _binding_at_roof(frame: pd.DataFrame, th: Thresholds) -> pd.Series:
    """Launches whose binding unit, by ncu's throughput, is at its roof (``at_roof_pct`` of it); False
    without the binding unit's columns."""
    if "binding_unit" not in frame or "binding_unit_share" not in frame:
        return pd.Series(False, index=frame.index)
    return frame["binding_unit_share"].astype(float) * 100.0 >= th.at_roof_pct * (1 - EPS)


def _dram_at_roof(frame: pd.DataFrame, th: Thresholds) -> pd.Series:
    """Memory-bound launches whose DRAM, by ncu's throughput alone (no bytes for a roofline point), is at
    its roof: at-roof cannot speak for them without a point."""
    at_roof = _binding_at_roof(frame, th)
    return at_roof & (frame["binding_unit"] == "dram") & (frame["bound"] == "memory") if at_roof.any() else at_roof


def _partial_roofline(ctx: Context) -> pd.Series:
    """Launches whose roofline point (bytes without FLOPs, say) sits under its roof while ncu's
    compute or memory throughput, the only unit measured, is at its roof: the roofline leaves out the
    unit that binds, so neither below-roof nor at-roof can speak (Olajide gemm_tiled: 1% of the DRAM
    roof, SM 89%)."""
    placed, th = ctx.placed, ctx.thresholds
    busy = _binding_at_roof(placed, th)
    if not busy.any():
        return busy
    under = placed["pct_of_roof"].astype(float) < th.at_roof_pct
    return placed["binding_unit"].isin(["sm", "memory"]) & busy & under


@per_group("speed-of-light-only", about=About(answers=("SOLBottleneck",)), within=_without_roofline,
           enable="capture FLOPs and bytes for a roofline (ncu-roof capture, or ncu --section "
                  "SpeedOfLight_RooflineChart)")
def speed_of_light_only(group: pd.DataFrame, ctx: Context) -> Finding | None:
    """Launches with no roofline data: a partial reading from ncu's compute and memory SOL %."""
    sm, mem = group["sm_throughput_pct"].notna(), group["memory_throughput_pct"].notna()
    # a partial point (its pct_of_roof known) may lack one side: the other is the unit the roofline misses
    rows = group[(sm & mem) | ((sm | mem) & group["pct_of_roof"].notna())]
    if rows.empty:
        return None
    time_s = total(rows, "time_s")
    compute, memory = time_weighted(rows, "sm_throughput_pct"), time_weighted(rows, "memory_throughput_pct")
    busiest = max(x for x in (compute, memory) if known(x))
    side = "memory" if known(memory) and not compute > memory else "compute"
    why = _no_roofline_reason(rows.iloc[0])
    if rows["pct_of_roof"].notna().all():  # a partial point: the roofline misses the unit that binds
        why = f"its point is at {fmt_pct(time_weighted(rows, 'pct_of_roof'))} of a roof that does not bind"
    sol = f"ncu's speed of light: compute {_sol_text(compute)}, memory {_sol_text(memory)}"
    name = name_of(rows["kernel"].iloc[0])
    library = library_of(rows.iloc[0]) is not None
    stake: float | None
    if reaches(busiest, ctx.thresholds.sol_busy_pct):
        # a busy unit: latency hiding wins at most its idle share, less work on it more; neither is known
        stake = None
        msg = f"{name}: no roofline ({why}); time at stake not known ({launches_text(rows)}, {fmt_seconds(time_s)}). "
        if side == "memory" and _dram_at_roof(rows, ctx.thresholds).all():
            dram = time_weighted(rows, "dram_throughput_pct")
            msg += (f"{sol}, DRAM {_sol_text(dram)}: at the DRAM roof, so only fewer DRAM bytes make it faster "
                    "(fusion with its neighbours, reuse, narrower types).")
        elif library:  # the user changes the call, not the kernel's work
            msg += (f"{sol}: " + ("likely memory-bound" if side == "memory" else "busy inside the SMs") + ". "
                    + fix_text(rows.iloc[0], ""))
        elif side == "compute" and (one := fixes.one_output_text(rows.iloc[0])):
            msg += f"{sol}: busy inside the SMs. {one}"
        else:
            msg += (f"{sol}: " + ("likely memory-bound" if side == "memory" else
                                  "busy inside the SMs (a pipe, the issue slots or shared memory)")
                    + ", so only less work for its busiest unit wins; the pipe counters and a roofline capture would "
                    "say which unit and how much.")
    else:
        stake = time_s * (1.0 - min(busiest, 100.0) / 100.0)
        idle = _idle_sms_text(rows)
        reading = (f"latency-bound{idle}. {fix_text(rows.iloc[0], '')}" if library else
                   f"latency-bound{idle}. Fill the SMs: more, smaller blocks, or whole waves." if idle else
                   f"{_latency_reading(rows)}.")
        msg = (f"{name}: no roofline ({why}); at most {fmt_seconds(stake)} of {fmt_seconds(time_s)} to win "
               f"({launches_text(rows)}). {sol}: {reading}")
    ev = evidence(rows, ("time_s", "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
                         "sm_active_cycles", "sm_cycles"))
    ev.update({"time_weighted_sm_throughput_pct": compute, "time_weighted_memory_throughput_pct": memory})
    return make("speed-of-light-only", rows, msg, stake, ev)


def _sol_text(pct: float) -> str:
    return f"{pct:.0f}%" if known(pct) else "not measured"


RESIDENT_PCT = 50.0  # achieved occupancy at or above this: warps are there, and wait


def _latency_reading(rows: pd.DataFrame) -> str:
    """What a latency-bound launch lacks: warps (low achieved occupancy), or, with warps resident and
    every unit idle, independent work per warp."""
    occupancy = time_weighted(rows, "achieved_occupancy_pct") if "achieved_occupancy_pct" in rows else np.nan
    if not reaches(occupancy, RESIDENT_PCT):
        return ("latency-bound (too little parallelism in flight, syncs, divergence or dependent chains); "
                "more bandwidth or FLOPs will not help")
    shared = rows["shared_mem_per_block"] if "shared_mem_per_block" in rows else pd.Series(dtype="float64")
    if shared.notna().all() and len(shared) and not (shared > SHARED_RESERVED_BYTES).any():
        return (f"latency-bound, its warps resident ({fmt_pct(occupancy)} occupancy) but waiting on dependent chains "
                "(no shared memory, so no block barriers): more independent work per thread (several elements, "
                "unrolled), loads issued before their values are used")
    return (f"latency-bound, its warps resident ({fmt_pct(occupancy)} occupancy) but waiting on dependent chains "
            "or barriers: more independent work per thread (several elements, unrolled), fewer __syncthreads")


SM_IDLE_SHARE = 0.2  # SMs idle this share of the elapsed cycles or more: the grid, before what runs on them


def _idle_sms_text(rows: pd.DataFrame) -> str:
    """'; SMs idle 33%: too few blocks or a partial last wave' where ncu's SM active cycles
    (their sum over the launches, against the elapsed cycles) say the SMs wait for work ``SM_IDLE_SHARE``
    of the launch; '' elsewhere (CodeGandee's CUTLASS bf16 GEMM on an unnamed GPU: no SM count to count waves by)."""
    if "sm_active_cycles" not in rows or "sm_cycles" not in rows:
        return ""
    active, elapsed = rows["sm_active_cycles"].sum(min_count=1), rows["sm_cycles"].sum(min_count=1)
    if not (known(active) and known(elapsed) and elapsed > 0 and 1.0 - active / elapsed >= SM_IDLE_SHARE):
        return ""
    return f"; SMs idle {fmt_pct((1.0 - active / elapsed) * 100)}: too few blocks or a partial last wave"


def _no_roofline_reason(row: Row) -> str:
    """Why a launch has no roofline: no counters, or counters but no peaks for an unknown device."""
    if "roof" in str(row.get("missing") or "").split(","):
        device = row.get("device")
        named = device if isinstance(device, str) and device else "this device"
        return f"no peaks known for {named}: --device NAME or --ceilings FILE"
    return "no FLOP or byte counters"
