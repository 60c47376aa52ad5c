"""Per-kernel aggregates for the summaries: launches of one kernel name taken together."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _weighted(group: pd.DataFrame, column: str) -> float:
    values, weights = group[column], group["time_s"]
    ok = values.notna() & weights.notna() & (weights > 0)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else np.nan


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
            "bound": bound, "compute_roof": group["compute_roof"].dropna().iloc[0] if group["compute_roof"].notna().any() else None,
            "pct_of_roof": _weighted(group, "pct_of_roof"),
            "pct_basis": group["pct_basis"].dropna().iloc[0] if group["pct_basis"].notna().any() else None,
            "intensity_dram": _weighted(group, "intensity_dram"),
            "extra_bytes_factor": dram / alg if alg and alg > 0 else np.nan,
            "headroom_s": group["headroom_s"].sum(min_count=1),
            "missing": group["missing"].iloc[0],
        })
    frame = pd.DataFrame(rows)
    return frame.sort_values("time_s", ascending=False, na_position="last").reset_index(drop=True)


def fmt_seconds(s: float | None) -> str:
    if s is None or s != s:
        return "?"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_si(value: float | None, unit: str) -> str:
    if value is None or value != value:
        return "?"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def fmt_pct(value: float | None) -> str:
    return "?" if value is None or value != value else f"{value:.0f}%"


def short_name(name: str, width: int = 40) -> str:
    """A readable kernel name: no template arguments or parameter list, cut to width."""
    text = str(name)
    if len(text) <= width:
        return text
    return text[: width - 1] + "…"
