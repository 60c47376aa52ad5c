"""The five-step checklist of the seeds, as rules.

1. ideal point (algorithmic FLOPs and bytes, from NVTX regions or the sidecar TOML) and
2. real point (measured time and bytes) are placed by ``roofline.place`` and
   ``algorithmic.summarize_regions``; the rules compare them:
3. real left of ideal -> ``fuse-extra-bytes`` (bytes saved, predicted time at the practical roof);
4. real below its roof -> ``below-roof`` when no trap (access pattern, occupancy, instruction mix)
   explains it; the traps in :mod:`ncu_roof.rules.traps` carry the evidence that does;
5. on the roof at the ideal intensity -> ``at-roof-stop``; on the roof without algorithmic counts
   -> ``at-roof`` (a positive note: only fewer bytes or FLOPs help).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si
from ncu_roof.jsonable import num
from ncu_roof.rules.base import Context, Finding, rule
from ncu_roof.rules.common import (
    Row,
    below_roof,
    evidence,
    headroom,
    kernel_groups,
    launches_text,
    make,
    rows_of,
    severity_for,
    total,
    val,
)
from ncu_roof.rules.traps import above_dram_signal, row_causes

ALG = "give algorithmic counts: an ncu_roof.region NVTX range, or --algorithmic regions.toml"
_REGION_COLS = ("time_s", "dram_bytes", "alg_bytes", "alg_flops", "extra_bytes_factor", "ideal_time_s",
                "dram_roof_bytes_per_s", "peak_flops_per_s", "achieved_intensity", "alg_intensity", "launches",
                "occurrences", "time_at_stake_s")


def _region_finding(rule_id: str, region: pd.Series, severity: Any, message: str, stake: float | None) -> Finding:
    reports = list(region.get("reports") or [])
    ev = {c: num(region.get(c)) for c in _REGION_COLS}
    return Finding(rule_id, tuple(region["kernels"]), str(region["name"]), severity, message, num(stake), ev,
                   tuple(int(i) for i in region.get("ids") or []), reports[0] if len(reports) == 1 else None)


def _usable_regions(ctx: Context) -> pd.DataFrame:
    r = ctx.regions
    ok = (r["launches"] > 0) & (r["alg_bytes"] > 0) & r["dram_bytes"].notna() & (r["time_s"] > 0)
    return r[ok]


@rule("fuse-extra-bytes", needs=("dram_bytes",), needs_regions=True, enable=ALG)
def fuse_extra_bytes(ctx: Context) -> list[Finding]:
    """Step 3: the real point left of the ideal one: extra bytes to remove by fusion or reuse."""
    out = []
    for _, r in _usable_regions(ctx).iterrows():
        factor = r["extra_bytes_factor"]
        if not factor >= ctx.thresholds.extra_bytes_factor:
            continue
        kernels = list(r["kernels"])
        saved = r["dram_bytes"] - r["alg_bytes"]
        how = (f"fuse its {len(kernels)} kernels ({', '.join(kernels)}) so intermediates stay on chip"
               if len(kernels) > 1 else f"add reuse in {kernels[0]} (tiling, keeping data in shared memory/registers)")
        stake = max(r["time_s"] - r["ideal_time_s"], 0.0) if r["ideal_time_s"] == r["ideal_time_s"] else None
        msg = (f"region {r['name']}: {r['launches']} launches move {fmt_si(r['dram_bytes'], 'B')} from DRAM where "
               f"the work needs {fmt_si(r['alg_bytes'], 'B')} ({factor:.1f}x extra bytes). {how[0].upper()}{how[1:]}: "
               f"saves {fmt_si(saved, 'B')}; predicted {fmt_seconds(r['ideal_time_s'])} at the practical roof "
               f"({fmt_si(r['dram_roof_bytes_per_s'], 'B/s')}) instead of {fmt_seconds(r['time_s'])}.")
        out.append(_region_finding("fuse-extra-bytes", r, severity_for(stake, r["time_s"]), msg, stake))
    return out


@rule("at-roof-stop", needs=("dram_bytes",), needs_regions=True, enable=ALG)
def at_roof_stop(ctx: Context) -> list[Finding]:
    """Step 5: on the roof at the ideal intensity: only a new algorithm or a narrower type helps."""
    th, out = ctx.thresholds, []
    for _, r in _usable_regions(ctx).iterrows():
        ideal = r["ideal_time_s"]
        if not (r["extra_bytes_factor"] <= th.ideal_bytes_factor and ideal / r["time_s"] * 100 >= th.at_roof_pct):
            continue
        msg = (f"region {r['name']}: stop. It moves {fmt_si(r['dram_bytes'], 'B')} for the "
               f"{fmt_si(r['alg_bytes'], 'B')} the work needs ({r['extra_bytes_factor']:.2f}x) and takes "
               f"{fmt_seconds(r['time_s'])} against an ideal {fmt_seconds(ideal)} "
               f"({fmt_pct(ideal / r['time_s'] * 100)} of the "
               "roof): it sits on the roof at its ideal intensity. Only a new algorithm (fewer bytes or FLOPs) or a "
               "narrower data type can make it faster.")
        out.append(_region_finding("at-roof-stop", r, "info", msg, max(r["time_s"] - ideal, 0.0)))
    return out


def _roof_text(row: Row) -> str:
    """'7.7 TFLOP/s of an attainable 30.9 TFLOP/s (fp32 FMA roof, intensity 100 FLOP/B)'."""
    if row.get("pct_basis") == "flops":
        return (f"{fmt_si(val(row, 'achieved_flops_per_s'), 'FLOP/s')} of an attainable "
                f"{fmt_si(val(row, 'attainable_flops_per_s'), 'FLOP/s')} at intensity "
                f"{val(row, 'intensity_dram'):.3g} FLOP/B ({row.get('bound')}-bound, {row.get('compute_roof')} roof "
                f"{fmt_si(val(row, 'peak_flops_per_s'), 'FLOP/s')}, "
                f"DRAM {fmt_si(val(row, 'dram_roof_bytes_per_s'), 'B/s')})")
    return (f"{fmt_si(val(row, 'achieved_dram_bytes_per_s'), 'B/s')} of a "
            f"{fmt_si(val(row, 'dram_roof_bytes_per_s'), 'B/s')} practical DRAM roof")


_PLACE_COLS = ("time_s", "flops", "dram_bytes", "intensity_dram", "achieved_flops_per_s", "attainable_flops_per_s",
               "achieved_dram_bytes_per_s", "dram_roof_bytes_per_s", "peak_flops_per_s", "pct_of_roof",
               "time_lower_bound_s", "headroom_s")
_COUNTERS = ("achieved_occupancy_pct", "threads_per_inst", "global_load_sectors", "shared_bank_conflicts", "waves")


def _checked_text(rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    seen = [c for c in _COUNTERS if val(first, c) == val(first, c)]
    if not seen:
        return ("The report has no access-pattern, occupancy or instruction counters to tell which: capture with "
                "ncu-roof capture (or ncu --set full).")
    return (f"Its counters ({', '.join(seen)}) show no clear access-pattern, occupancy or instruction-mix fault: "
            "look at latency (stall reasons, too little independent work per thread, synchronization).")


@rule("below-roof", needs=("pct_of_roof", "time_lower_bound_s"),
      enable="capture time, FLOPs and bytes (ncu-roof capture, or ncu --section SpeedOfLight_RooflineChart)")
def below_roof_rule(ctx: Context) -> list[Finding]:
    """Step 4: below the roof with no trap to explain it: the hardware is used badly."""
    th, out = ctx.thresholds, []
    run_time = float(ctx.placed["time_s"].sum(min_count=1))
    for group in kernel_groups(ctx.placed):
        mask = [below_roof(r, th.at_roof_pct) and not row_causes(r, th) for _, r in rows_of(group)]
        rows = group[mask]
        stake = float(sum(headroom(r) for _, r in rows_of(rows)))
        if rows.empty or not stake > th.min_stake_fraction * run_time:
            continue
        first = rows.iloc[0]
        msg = (f"{first['kernel']}: runs at {fmt_pct(float(np.average(rows['pct_of_roof'], weights=rows['time_s'])))} "
               f"of its roof ({_roof_text(first)}): the hardware is used badly, {fmt_seconds(stake)} of "
               f"{fmt_seconds(total(rows, 'time_s'))} is above the roofline bound ({launches_text(rows)}). "
               f"{_checked_text(rows)}")
        ev = evidence(rows, _PLACE_COLS + _COUNTERS)
        out.append(make("below-roof", rows, severity_for(stake, total(rows, "time_s")), msg, stake, ev))
    return out


def _at_roof_advice(bound: str) -> str:
    if bound == "memory":
        return ("excellent for memory-bound work (percent of peak FLOP/s is the wrong question here). Only fewer "
                "bytes can make it faster: fusion, reuse, or a narrower data type")
    return "only fewer FLOPs (a new algorithm), tensor cores or a narrower data type can make it faster"


@rule("at-roof", needs=("pct_of_roof",), enable="capture time, FLOPs and bytes (ncu-roof capture)")
def at_roof(ctx: Context) -> list[Finding]:
    """A positive note: a kernel on its roof (nothing to win in the kernel as it stands)."""
    th, out = ctx.thresholds, []
    for group in kernel_groups(ctx.placed):
        ok = [r.get("bound") in ("memory", "compute") and val(r, "pct_of_roof") >= th.at_roof_pct
              and above_dram_signal(r, th) is None and not row_causes(r, th) for _, r in rows_of(group)]
        rows = group[ok]
        if rows.empty:
            continue
        first = rows.iloc[0]
        pct = float(np.average(rows["pct_of_roof"], weights=rows["time_s"]))
        msg = (f"{first['kernel']}: at the roof, {fmt_pct(pct)} of it ({_roof_text(first)}; {launches_text(rows)}): "
               f"{_at_roof_advice(str(first['bound']))}.")
        out.append(make("at-roof", rows, "info", msg, 0.0, evidence(rows, _PLACE_COLS)))
    return out
