"""The five-step checklist of the seeds, as rules.

1. ideal point (algorithmic FLOPs and bytes, from NVTX regions or the sidecar TOML) and
2. real point (measured time and bytes) are placed by ``roofline.place`` and
   ``algorithmic.summarize_regions``; the rules compare them:
3. real left of ideal -> ``fuse-extra-bytes`` (bytes saved, predicted time at the practical roof);
4. real below its roof -> ``below-roof`` when no limiter (access pattern, occupancy, instruction mix,
   pipes, stalls) explains it; :mod:`ncu_roof.rules.traps` and :mod:`ncu_roof.rules.limiter` name
   the limiter with the evidence;
5. on the roof at the ideal intensity -> ``at-roof-stop``; on the roof without algorithmic counts
   -> ``at-roof`` (a positive note: only fewer bytes or FLOPs help).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si, plural
from ncu_roof.jsonable import num
from ncu_roof.model.roofline import EPS, Thresholds, reaches
from ncu_roof.model.units import READS as UNIT_READS
from ncu_roof.rules import screens
from ncu_roof.rules.base import About, Context, Finding, Severity, make
from ncu_roof.rules.common import (
    Row,
    compute_capability,
    evidence,
    known,
    launches_text,
    name_of,
    total,
    val,
)
from ncu_roof.rules.engine import cause_signals, per_group, per_item
from ncu_roof.rules.run import RuleRun
from ncu_roof.rules.signals import above_dram_signal
from ncu_roof.rules.stakes import Relief

ALG = "give algorithmic counts: an ncu_roof.region NVTX range, or --algorithmic regions.toml"
_REGION_COLS = ("time_s", "dram_bytes", "alg_bytes", "alg_flops", "extra_bytes_factor", "ideal_time_s",
                "dram_roof_bytes_per_s", "peak_flops_per_s", "achieved_intensity", "alg_intensity", "launches",
                "occurrences", "time_at_stake_s")


def _region_finding(rule_id: str, region: pd.Series, severity: Severity, message: str, stake: float | None
                    ) -> Finding:
    """A region finding; its severity ("low" unless a note) is set by ``evaluate`` from the run's time."""
    reports = list(region.get("reports") or [])
    ev = {c: num(region.get(c)) for c in _REGION_COLS}
    return Finding(rule_id, tuple(region["kernels"]), str(region["name"]), severity, message, num(stake), ev,
                   tuple(int(i) for i in region.get("ids") or []), reports[0] if len(reports) == 1 else None)


def _usable_regions(ctx: Context) -> pd.DataFrame:
    r = ctx.regions
    ok = (r["launches"] > 0) & (r["alg_bytes"] > 0) & r["dram_bytes"].notna() & (r["time_s"] > 0)
    return r[ok]



def _bound_in(placed: pd.DataFrame, bounds: tuple[str, ...]) -> np.ndarray:
    return placed["bound"].isin(bounds).to_numpy(dtype=bool) if "bound" in placed else np.zeros(len(placed), bool)


def _below_roof_unexplained(run: RuleRun) -> np.ndarray:
    """What ``below-roof`` asks of each launch: below its roof (its binding unit's share, else its %
    of roof, under ``th.at_roof_pct``; :func:`ncu_roof.rules.common.below_roof`), with a roof
    percentage, and no trap's signal firing there."""
    placed, th = run.placed, run.th
    share, pct = screens.values(placed, "binding_unit_share"), screens.values(placed, "pct_of_roof")
    binding = np.where(np.isnan(share), pct, share * 100.0)
    below = _bound_in(placed, ("memory", "compute", "latency")) & screens.below(binding, th.at_roof_pct)
    return below & ~np.isnan(pct) & ~run.fires_any(tuple(cause_signals().values()))  # type: ignore[no-any-return]


def _on_roof_unexplained(run: RuleRun) -> np.ndarray:
    """What ``at-roof`` asks of each launch: memory or compute bound, at its roof, and no cause (not
    even reading past the DRAM roof)."""
    placed, th, causes = run.placed, run.th, run.fires_any((above_dram_signal, *cause_signals().values()))
    at_roof = screens.at_least(screens.values(placed, "pct_of_roof"), th.at_roof_pct)
    return _bound_in(placed, ("memory", "compute")) & at_roof & ~causes  # type: ignore[no-any-return]


def _regions(ctx: Context) -> list[pd.Series]:
    return [r for _, r in _usable_regions(ctx).iterrows()]


@per_item("fuse-extra-bytes", items=_regions, about=About(rank=0), needs=("dram_bytes",), needs_regions=True,
          enable=ALG)
def fuse_extra_bytes(r: pd.Series, ctx: Context) -> Finding | None:
    """Step 3: the real point left of the ideal one: extra bytes to remove by fusion or reuse."""
    factor = r["extra_bytes_factor"]
    if not reaches(factor, ctx.thresholds.extra_bytes_factor):
        return None
    kernels = list(r["kernels"])
    saved = r["dram_bytes"] - r["alg_bytes"]
    how = (f"Fuse its {len(kernels)} kernels so intermediates stay on chip" if len(kernels) > 1
           else f"Add reuse in {name_of(kernels[0], 60)} (tiling, data kept in shared memory or registers)")
    ideal = r["ideal_time_s"]
    stake = max(r["time_s"] - ideal, 0.0) if known(ideal) else None
    lead = (f"region {r['name']}: {fmt_seconds(r['time_s'])} where {fmt_seconds(ideal)} would do at the "
            f"practical roof" + (f" ({fmt_si(r['dram_roof_bytes_per_s'], 'B/s')})"
                                 if known(r["dram_roof_bytes_per_s"]) else "")
            if known(ideal) else f"region {r['name']}: moves more bytes than the work needs")
    n = int(r["launches"])
    msg = (f"{lead}. Its {plural(n, 'launch')} move{'s' if n == 1 else ''} {fmt_si(r['dram_bytes'], 'B')} from "
           f"DRAM for {fmt_si(r['alg_bytes'], 'B')} of work ({factor:.1f}x extra bytes). {how}: saves "
           f"{fmt_si(saved, 'B')}.")
    return _region_finding("fuse-extra-bytes", r, "low", msg, stake)


@per_item("at-roof-stop", items=_regions, needs=("dram_bytes",), needs_regions=True, enable=ALG)
def at_roof_stop(r: pd.Series, ctx: Context) -> Finding | None:
    """Step 5: on the roof at the ideal intensity: only a new algorithm or a narrower type helps."""
    th = ctx.thresholds
    ideal = r["ideal_time_s"]
    if not (reaches(th.ideal_bytes_factor, r["extra_bytes_factor"]) and reaches(ideal / r["time_s"] * 100,
                                                                                 th.at_roof_pct)):
        return None
    if cache_resident(r, th):  # faster than DRAM allows: the DRAM roofline does not describe it
        return _region_finding("above-dram-roof", r, "info", _cache_resident_text(r, th), 0.0)
    msg = (f"region {r['name']}: stop, it is on the roof at its ideal intensity. It takes "
           f"{fmt_seconds(r['time_s'])} against an ideal {fmt_seconds(ideal)} "
           f"({fmt_pct(ideal / r['time_s'] * 100)} of the roof) and moves {fmt_si(r['dram_bytes'], 'B')} for "
           f"the {fmt_si(r['alg_bytes'], 'B')} the work needs ({r['extra_bytes_factor']:.2f}x). Only a new "
           "algorithm (fewer bytes or FLOPs) or a narrower data type can make it faster.")
    return _region_finding("at-roof-stop", r, "info", msg, max(r["time_s"] - ideal, 0.0))


def cache_resident(region: pd.Series, th: Thresholds) -> bool:
    """A region faster than its bytes allow even at the theoretical DRAM peak (the practical roof
    over its fraction, with the above-peak tolerance): its data came from cache."""
    pct = region["ideal_time_s"] / region["time_s"] * 100
    return bool(pct > 100.0 / th.practical_dram_fraction * th.above_peak_tolerance)


def _cache_resident_text(region: pd.Series, th: Thresholds) -> str:
    pct = region["ideal_time_s"] / region["time_s"] * 100
    l2 = region.get("l2_bytes")
    where = (f" Against L2 it moved {fmt_si(l2, 'B')} in {fmt_seconds(region['time_s'])}: judge it against the "
             "L2 roof (ncu-roof table has the L2 columns)." if known(l2) else
             " Capture L2 bytes (ncu-roof capture) to place it against L2.")
    return (f"region {region['name']}: at {fmt_pct(pct)} of its DRAM roof, faster than DRAM can feed it even at "
            f"the theoretical peak, so its data came from cache and the DRAM roofline does not describe it: "
            f"this is not the 'stop, on the roof' case.{where}")


def _roof_text(row: Row) -> str:
    """'7.7 TFLOP/s of an attainable 30.9 TFLOP/s (compute-bound at 100 FLOP/B, fp32 FMA roof)',
    leaving out what the report does not know ('' when neither rate is known)."""
    if row.get("pct_basis") == "flops":
        achieved, attainable = val(row, "achieved_flops_per_s"), val(row, "attainable_flops_per_s")
        if not (known(achieved) and known(attainable)):
            return ""
        how = [f"{row.get('bound')}-bound"]
        if known(val(row, "intensity_dram")):
            how[0] += f" at {val(row, 'intensity_dram'):.3g} FLOP/B"
        if row.get("compute_roof"):
            how.append(f"{row.get('compute_roof')} roof")
        return f"{fmt_si(achieved, 'FLOP/s')} of an attainable {fmt_si(attainable, 'FLOP/s')} ({', '.join(how)})"
    achieved, roof = val(row, "achieved_dram_bytes_per_s"), val(row, "dram_roof_bytes_per_s")
    if not (known(achieved) and known(roof)):
        return ""
    return f"{fmt_si(achieved, 'B/s')} of a {fmt_si(roof, 'B/s')} practical DRAM roof"


_PLACE_COLS = ("time_s", "flops", "dram_bytes", "intensity_dram", "achieved_flops_per_s", "attainable_flops_per_s",
               "achieved_dram_bytes_per_s", "dram_roof_bytes_per_s", "peak_flops_per_s", "pct_of_roof",
               "time_lower_bound_s", "headroom_s")
# the trap counters below-roof looks at, and how its message names them
_COUNTERS = {"achieved_occupancy_pct": "occupancy", "threads_per_inst": "active lanes",
             "global_load_sectors": "coalescing", "shared_bank_conflicts": "bank conflicts", "waves": "waves",
             "pipe_alu_pct": "pipes", "issue_active": "stalls"}


def _checked_text(rows: pd.DataFrame, peered: bool = False) -> str:
    """Why the point sits under its roof, as far as the counters say; ``peered``: a kernel doing the same
    work faster (same-work-peer) says where the gap lies, where no counter does."""
    first = rows.iloc[0]
    seen = [word for c, word in _COUNTERS.items() if known(val(first, c))]
    waves, grid = val(first, "waves"), val(first, "grid_size")
    partial = ""
    if 0 < waves < 1 and grid > 0:  # under one wave: the grid, not a tail, sets the blocks in flight
        seen.remove("waves")
        partial = (f"The grid fills {fmt_pct(waves * 100)} of one wave ({grid:.0f} of {grid / waves:.0f} block "
                   "slots): more threads (less work each) add warps; smaller blocks alone spread the same ones. ")
    busiest = _busy_pipe_text(first)
    if busiest:  # a pipe or the issue slots busiest, under binding-unit's cut: the work the FLOPs leave out
        return partial + busiest
    if not seen and peered:
        return partial + "No counters say why; the same-work peer's bytes and units say where the gap is."
    if not seen:
        return partial + "No occupancy, access or instruction counters to tell why: capture with ncu-roof capture."
    listed = seen[0] if len(seen) == 1 else f"{', '.join(seen[:-1])} or {seen[-1]}"
    if "stalls" in seen:
        return f"{partial}No fault in {listed}: look at the hottest instructions (ncu's Source page)."
    return f"{partial}No fault in {listed}: look at latency (stall reasons, work per thread, synchronization)."


def _busy_pipe_text(row: Row) -> str:
    """Where the busiest unit is a pipe or the issue slots, ``BUSY_PIPE_PCT`` busy or more (tkhenry's delayAndSum:
    the ALU pipe at 55%, FMA at 10%, placed by its FLOPs at 6% of its roof): what it runs, and less of it."""
    from ncu_roof.model.units import label
    from ncu_roof.rules.limiter import unit_meaning  # here: importing it first would register its rules first

    unit, share = row.get("binding_unit"), val(row, "binding_unit_share")
    if not isinstance(unit, str) or not (unit.startswith("pipe_") or unit == "issue") or \
            not reaches(share * 100.0, BUSY_PIPE_PCT):
        return ""
    return f"Its busiest unit is the {label(unit)} ({fmt_pct(share * 100)}): {unit_meaning(unit)[1]}."


BUSY_PIPE_PCT = 40.0  # a pipe or the issue slots this busy, the busiest unit, is named under the roofline's point


@per_group("below-roof", needs=("pct_of_roof", "time_lower_bound_s"), reads=UNIT_READS,
           about=About(rank=6, answers=("SOLBottleneck",)),
           enable="capture time, FLOPs and bytes (ncu-roof capture, or ncu --section SpeedOfLight_RooflineChart)")
def below_roof_rule(group: pd.DataFrame, ctx: Context) -> Finding | None:
    """Step 4: below the roof with no trap to explain it: the hardware is used badly. At stake: the
    time above the binding unit's bound (the roofline's roofs and every measured unit)."""
    th, run = ctx.thresholds, ctx.run
    rows = group[run.where(group, _below_roof_unexplained)]
    stake = run.price(rows, [Relief(latency=1.0)] * len(rows))
    run_time = run.once("run time", lambda: float(ctx.placed["time_s"].sum(min_count=1)))
    if rows.empty or not stake > th.min_stake_fraction * run_time * (1 + EPS):
        return None
    first = rows.iloc[0]
    pct = float(np.average(rows["pct_of_roof"], weights=rows["time_s"]))
    roof = _roof_text(first)
    msg = (f"{name_of(first['kernel'])}: {fmt_seconds(stake)} of {fmt_seconds(total(rows, 'time_s'))} above "
           f"its roofline bound, at {fmt_pct(pct)} of its roof ({launches_text(rows)}). "
           + (f"{roof[0].upper()}{roof[1:]}. " if roof else "") + _checked_text(rows, _peered(rows, ctx)))
    ev = evidence(rows, _PLACE_COLS + tuple(_COUNTERS))
    return make("below-roof", rows, msg, stake, ev)


def _peered(rows: pd.DataFrame, ctx: Context) -> bool:
    """Whether a launch of these has a same-work peer (:func:`~ncu_roof.rules.reference.peer_of`)."""
    from ncu_roof.rules.reference import peer_of  # here: importing it first would register its rules first

    peers = ctx.run.once("peers", lambda: peer_of(ctx.placed))
    return any(label in peers for label in rows.index)


L2_NO_REUSE = 0.9  # DRAM bytes at or above this share of L2's: L2 reuses (almost) nothing


def _at_roof_advice(bound: str, row: Any = None) -> str:
    if bound != "memory":
        if row is not None and "tensor" in str(row.get("compute_roof") or ""):  # on the tensor cores already
            cc = compute_capability(row)
            narrower = "FP8" if cc and cc >= (8, 9) else "INT8" if cc and cc >= (7, 5) else None
            if narrower is None:
                return "Only fewer FLOPs (a new algorithm) makes it faster"
            return (f"Only fewer FLOPs (a new algorithm) or a narrower type ({narrower} where accuracy allows) make "
                    "it faster")
        return "Only fewer FLOPs (a new algorithm), tensor cores or a narrower type make it faster"
    dram, l2 = (val(row, "dram_bytes"), val(row, "l2_bytes")) if row is not None else (math.nan, math.nan)
    if known(dram) and known(l2) and l2 > 0 and dram >= L2_NO_REUSE * l2:
        share = fmt_pct(min(dram / l2, 1.0) * 100)
        return (f"Only fewer bytes make it faster, and L2 reuses nothing (DRAM moves {share} of L2's "
                f"{fmt_si(l2, 'B')}): if the work reads a byte twice, block its loops for reuse in L2; if once, this "
                "is its floor")
    return ("Only fewer bytes make it faster: fusion, reuse or a narrower type (% of peak FLOP/s is the wrong "
            "question here)")


@per_group("at-roof", needs=("pct_of_roof",), reads=("dram_bytes", "l2_bytes"),
           enable="capture time, FLOPs and bytes (ncu-roof capture)")
def at_roof(group: pd.DataFrame, ctx: Context) -> Finding | None:
    """A positive note: a kernel on its roof (nothing to win in the kernel as it stands)."""
    run = ctx.run
    rows = group[run.where(group, _on_roof_unexplained)]
    if rows.empty:
        return None
    first = rows.iloc[0]
    pct = float(np.average(rows["pct_of_roof"], weights=rows["time_s"]))
    bound, roof = str(first["bound"]), _roof_text(first)
    good = ", excellent for memory-bound work" if bound == "memory" else ""
    msg = (f"{name_of(first['kernel'])}: on its roof at {fmt_pct(pct)} ({launches_text(rows)}){good}. "
           + (f"{roof[0].upper()}{roof[1:]}. " if roof else "") + f"{_at_roof_advice(bound, first)}.")
    return make("at-roof", rows, msg, 0.0, evidence(rows, _PLACE_COLS), note=True)
