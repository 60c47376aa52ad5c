"""Chart inputs: the placed table in, one point per kernel (and per algorithmic region) out.

Also the charts' shared constants (sizes, how many kernels are drawn and named, colors and shapes),
name shortening and JSON for a ``<script>`` tag. Launches of one kernel are aggregated before
plotting (sums of FLOPs, bytes and time, so intensities are ratios of sums), and only the kernels
with the most time are drawn, so thousands of launches give at most :data:`MAX_KERNELS` points.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ncu_roof.model.kernels import intensities

if TYPE_CHECKING:
    from ncu_roof.diagnosis import Diagnosis


WIDTH = 620


HEIGHT = 400


MAX_KERNELS = 40  # kernels drawn on a roofline panel (most time first)


MAX_LABELS = 6  # kernels named on a roofline panel


MAX_BARS = 15  # kernels in the time-share chart before "other"


MAX_SWEEPS = 6  # kernels in the sweep chart


LEVELS = (("dram", "DRAM"), ("l2", "L2"), ("l1", "L1"))


LEVEL_SHAPES = {"DRAM": "circle", "L2": "square", "L1": "triangle-up", "ideal (algorithmic)": "diamond"}


BOUND_COLORS = {"compute": "#d62728", "memory": "#1f77b4", "overhead": "#ff7f0e",
                "latency": "#9467bd", "unknown": "#8c8c8c"}


ARROW_COLOR = "#e6007e"  # the ideal -> achieved arrow: no bound or roof uses it


ARROW_OFFSET = 7.0  # px the arrow's shaft runs beside the line from the ideal to the achieved point


PNG_HINT = "pip install 'ncu-roof[png]'"


# --- names and numbers --------------------------------------------------------------------------
def truncate_name(name: object, width: int = 36) -> str:
    """A kernel name cut to ``width`` characters (its start kept, "…" added). The ``kernel`` column
    is already short and unique (ncu_roof.read.kernel_names), so nothing else is taken off: charts key
    their encodings on the whole name and show this only as a label."""
    text = str(name).strip()
    return text if len(text) <= width else text[: width - 1] + "…"


def short_device_name(name: object, width: int = 22) -> str:
    """'NVIDIA GeForce RTX 2080 Ti' -> 'RTX 2080 Ti'."""
    text = re.sub(r"^(NVIDIA\s+)?(GeForce\s+|Tesla\s+|Quadro\s+)?", "", str(name).strip()) or str(name)
    return text if len(text) <= width else text[: width - 1] + "…"


def _decades(lo: float, hi: float) -> list[float]:
    return [10.0 ** k for k in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]


def _finite(value: object) -> bool:
    try:
        return math.isfinite(float(value)) and float(value) > 0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def finite_mask(values: pd.Series) -> pd.Series:
    """:func:`_finite` of each value (a boolean Series on the same index): at once where the values
    are numbers (booleans, integers or floats, nullable or not), one by one otherwise."""
    if values.dtype.kind in "biuf":
        numbers = values.to_numpy(dtype="float64", na_value=np.nan)
        with np.errstate(invalid="ignore"):
            return pd.Series(np.isfinite(numbers) & (numbers > 0), index=values.index)
    return values.map(_finite).astype(bool)


def _weighted_mode(values: pd.Series, weights: pd.Series, labels: pd.Series | None = None
                   ) -> tuple[float, str | None]:
    """The value (and its label) that holds the most time: an engine number, never an average."""
    ok = values.notna() & (values > 0)
    if not ok.any():
        return math.nan, None
    w = weights.where(weights.notna() & (weights > 0), 0.0)[ok] + 1e-30
    totals = w.groupby(values[ok]).sum()
    value = float(cast(float, totals.idxmax()))
    label = None
    if labels is not None:
        hits = labels[ok][values[ok] == value].dropna()
        label = str(hits.iloc[0]) if len(hits) else None
    return value, label


# --- per-kernel aggregation ---------------------------------------------------------------------
def _first_by_time(frame: pd.DataFrame, group: np.ndarray, column: str) -> pd.Series:
    """Per group (``group``: each launch's group number), the value of ``column`` that holds the
    most time (NaN values ignored)."""
    ok = frame[column].notna().to_numpy()
    if not ok.any():
        return pd.Series(dtype="object")
    time = frame["time_s"].fillna(0.0).clip(lower=0.0)[ok] + 1e-30
    totals = time.groupby([group[ok], frame[column][ok]], sort=False).sum()
    best = totals.groupby(level=0, sort=False).idxmax()
    return best.map(lambda key: key[-1])


def kernel_points(placed: pd.DataFrame, share_per_device: bool = False) -> pd.DataFrame:
    """One row per (device, kernel), most time first: sums, ratio-of-sums intensities, bound.

    Sums are unknown (NaN) where any launch lacks the quantity. ``share`` is of all the time, or
    of the device's time with ``share_per_device``. Vectorised: thousands of launches are cheap
    (the names are grouped once; every sum after that is by group number).
    """
    if placed.empty:
        return pd.DataFrame()
    t = placed.assign(device=placed["device"].fillna("unknown device").astype(str),
                      kernel=placed["kernel"].astype(str))
    keys = ["device", "kernel"]
    by_name = t.groupby(keys, sort=False)
    names = by_name.size().index  # (device, kernel) of group number 0, 1, ... (first seen first)
    group = by_name.ngroup().to_numpy()
    g = t.groupby(group, sort=False)
    cols = ["time_s", "flops"] + [f"{lv}_bytes" for lv, _ in LEVELS] + [
        c for c in ("alg_flops", "alg_bytes") if c in t]
    sums = g[cols].sum(min_count=1).where(g[cols].count().eq(g.size(), axis=0))
    out = sums.copy()
    out["launches"] = g.size()
    w = t["time_s"].where(t["pct_of_roof"].notna() & (t["time_s"] > 0))
    out["pct_of_roof"] = (t["pct_of_roof"] * w).groupby(group, sort=False).sum() / \
        w.groupby(group, sort=False).sum().replace(0.0, np.nan)
    out["bound"] = _first_by_time(t, group, "bound").reindex(out.index).fillna("unknown")
    out["compute_roof"] = _first_by_time(t, group, "compute_roof").reindex(out.index)
    out["peak"] = _first_by_time(t, group, "peak_flops_per_s").reindex(out.index).astype("float64")
    out["dram_roof"] = _first_by_time(t, group, "dram_roof_bytes_per_s").reindex(out.index).astype("float64")
    out["full_name"] = g["kernel_demangled"].first().reindex(out.index)
    ratios = intensities(t.assign(group=group), ["group"])  # the one per-kernel intensity (ncu_roof.model.kernels)
    ratios = ratios.reindex(out.index)
    out.index = names
    out = out.reset_index()
    out["full_name"] = out["full_name"].where(out["full_name"].notna(), out["kernel"]).astype(str)
    total = (out.groupby("device")["time_s"].transform("sum") if share_per_device
             else pd.Series(out["time_s"].sum(), index=out.index))
    out["share"] = out["time_s"] / total.where(total > 0)
    out["achieved"] = out["flops"] / out["time_s"].where(out["time_s"] > 0)
    for level, _ in LEVELS:
        column = f"intensity_{level}"
        out[column] = ratios[column].to_numpy() if column in ratios else np.nan
    for col in ("alg_flops", "alg_bytes"):
        if col not in out:
            out[col] = np.nan
    out["alg_intensity"] = out["alg_flops"] / out["alg_bytes"].where(out["alg_bytes"] > 0)
    out["short"] = out["kernel"].map(truncate_name)
    return out.sort_values("time_s", ascending=False, na_position="last", kind="stable").reset_index(drop=True)


def region_points(d: Diagnosis) -> pd.DataFrame:
    """Regions of several launches per occurrence as points of their own (the whole program's
    achieved point and its algorithmic ideal), in the columns of :func:`kernel_points`."""
    regions = d.regions
    if regions.empty or "alg_bytes" not in regions:
        return pd.DataFrame()
    rows = []
    for _, r in regions.iterrows():
        if not (_finite(r.get("alg_flops")) and _finite(r.get("alg_bytes")) and _finite(r.get("dram_bytes"))):
            continue
        if not r.get("launches") or r["launches"] <= r.get("occurrences", 1):
            continue  # one launch per occurrence: the kernel's own point carries the ideal already
        mine = d.placed[d.placed["report"].isin(r["reports"]) & d.placed["id"].isin(r["ids"])]
        achieved = r["flops"] / r["time_s"] if r["time_s"] > 0 else math.nan
        intensity = {lv: r["flops"] / r[f"{lv}_bytes"] if _finite(r[f"{lv}_bytes"]) and r[f"{lv}_bytes"] > 0
                     else math.nan for lv, _ in LEVELS}
        attainable = min(r["peak_flops_per_s"], intensity["dram"] * r["dram_roof_bytes_per_s"])
        rows.append({
            "device": str(mine["device"].dropna().iloc[0]) if mine["device"].notna().any() else "unknown device",
            "kernel": f"region {r['name']}", "full_name": f"region {r['name']}: " + ", ".join(r["kernels"]),
            "launches": int(r["launches"]), "time_s": r["time_s"], "flops": r["flops"],
            **{f"{lv}_bytes": r[f"{lv}_bytes"] for lv, _ in LEVELS},
            "alg_flops": r["alg_flops"], "alg_bytes": r["alg_bytes"],
            "alg_intensity": r["alg_flops"] / r["alg_bytes"] if r["alg_bytes"] > 0 else math.nan,
            "pct_of_roof": 100 * achieved / attainable if _finite(attainable) and attainable > 0 else math.nan,
            "bound": "memory" if intensity["dram"] * r["dram_roof_bytes_per_s"] < r["peak_flops_per_s"] else "compute",
            "compute_roof": None, "peak": r["peak_flops_per_s"], "dram_roof": r["dram_roof_bytes_per_s"],
            "achieved": achieved, **{f"intensity_{lv}": v for lv, v in intensity.items()},
            "short": f"region {r['name']}", "is_region": True,
            "ideal_time_s": r.get("ideal_time_s", math.nan),
            "extra_bytes_factor": r.get("extra_bytes_factor", math.nan),
        })
    points = pd.DataFrame(rows)
    if not points.empty:
        total = d.placed.groupby(d.placed["device"].fillna("unknown device").astype(str))["time_s"].sum()
        points["share"] = points["time_s"] / points["device"].map(total)
    return points


def _finite_json(value: Any) -> Any:
    """NaN and infinities (never valid JSON) become null."""
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def script_json(value: Any) -> str:
    """JSON safe inside <script>: '<', '>' and '&' escaped so no '</script>' can break out."""
    text = json.dumps(value, allow_nan=False, default=_json_default)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
