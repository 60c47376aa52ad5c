"""Per-kernel totals: the placed table in, one row per (device, kernel) out (launches, time, share
of the run, dominant bound and binding unit, time-weighted % of roof and speed of light, extra bytes, headroom,
the intensity as a ratio of sums: :func:`intensity`, which the charts, compare and the store use too),
longest first. The summaries (:mod:`ncu_roof.render`) print it and the gate
(:mod:`ncu_roof.comparison.gate`) holds each row to its bounds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LEVELS = ("dram", "l2", "l1")


def time_weighted(group: pd.DataFrame, column: str) -> float:
    """A column's mean over launches weighted by their time (NaN where no launch has both)."""
    values, weights = group[column], group["time_s"]
    ok = values.notna() & weights.notna() & (weights > 0)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else np.nan


def intensity(launches: pd.DataFrame, level: str = "dram") -> float:
    """A set of launches' achieved intensity at a memory level: the sum of their FLOPs over the sum of
    their bytes, over the launches that have both (never a mean of per-launch intensities: two
    launches of 100 FLOP, one moving 10 B and one 100 B, make 200 / 110 = 1.82 FLOP/B, not 5.5)."""
    column = f"{level}_bytes"
    if "flops" not in launches or column not in launches:
        return np.nan
    both = launches["flops"].notna() & launches[column].notna()
    moved = float(launches.loc[both, column].sum())
    return float(launches.loc[both, "flops"].sum()) / moved if both.any() and moved > 0 else np.nan


def intensities(placed: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """:func:`intensity` per group of ``keys`` and per memory level (columns ``intensity_<level>``),
    vectorised: one groupby for thousands of launches."""
    out = {}
    for level in LEVELS:
        column = f"{level}_bytes"
        if "flops" not in placed or column not in placed:
            continue
        both = placed["flops"].notna() & placed[column].notna()
        parts = pd.DataFrame({"flops": placed["flops"].where(both), "bytes": placed[column].where(both)})
        sums = parts.groupby([placed[k] for k in keys], sort=False, dropna=False).sum(min_count=1)
        out[f"intensity_{level}"] = sums["flops"] / sums["bytes"].where(sums["bytes"] > 0)
    return pd.DataFrame(out)


def kernel_summary(placed: pd.DataFrame) -> pd.DataFrame:
    """One row per (device, kernel): launches, time, share, bound, % of roof, extra bytes."""
    total = placed["time_s"].sum(min_count=1)
    rows = []
    for (device, kernel), group in placed.groupby(["device", "kernel"], dropna=False, sort=False):
        time_s = group["time_s"].sum(min_count=1)
        by_bound = group.groupby("bound")["time_s"].sum()
        bound = str(by_bound.idxmax()) if len(by_bound) and by_bound.notna().any() else str(group["bound"].iloc[0])
        alg = group["alg_bytes"].sum(min_count=1) if "alg_bytes" in group else np.nan
        dram = group["dram_bytes"].sum(min_count=1)
        rows.append({
            "device": device, "kernel": kernel, "launches": len(group), "time_s": time_s,
            "share": time_s / total if total and total > 0 else np.nan,
            "bound": bound,
            "compute_roof": group["compute_roof"].dropna().iloc[0] if group["compute_roof"].notna().any() else None,
            "pct_of_roof": time_weighted(group, "pct_of_roof"),
            "pct_basis": group["pct_basis"].dropna().iloc[0] if group["pct_basis"].notna().any() else None,
            "intensity_dram": intensity(group, "dram"),
            "extra_bytes_factor": dram / alg if alg and alg > 0 else np.nan,
            "headroom_s": group["headroom_s"].sum(min_count=1),
            "missing": group["missing"].iloc[0],
            "sol_pct": _busiest_sol(group),
            **_limiter(group),
            "above_practical_roof": bool(group["above_practical_roof"].fillna(False).astype(bool).any())
            if "above_practical_roof" in group else False,
        })
    frame = pd.DataFrame(rows)
    return frame.sort_values("time_s", ascending=False, na_position="last").reset_index(drop=True)


def _limiter(group: pd.DataFrame) -> dict[str, object]:
    """The unit that binds most of the kernel's time, and its time-weighted busy share."""
    if "binding_unit" not in group or not group["binding_unit"].notna().any():
        return {"binding_unit": None, "binding_unit_share": np.nan}
    weight = group["time_s"].fillna(0.0)
    unit = str(weight.groupby(group["binding_unit"]).sum().idxmax())
    return {"binding_unit": unit,
            "binding_unit_share": time_weighted(group[group["binding_unit"] == unit], "binding_unit_share")}


def _busiest_sol(group: pd.DataFrame) -> float:
    """ncu's speed of light of the busier side (compute or memory), time-weighted; NaN if unknown."""
    sides = [time_weighted(group, c) for c in ("sm_throughput_pct", "memory_throughput_pct") if c in group]
    known = [v for v in sides if v == v]
    return max(known) if known else np.nan
