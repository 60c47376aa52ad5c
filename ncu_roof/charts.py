"""Charts of a diagnosis (Altair / Vega-Lite): the roofline, time share, extra bytes, size sweeps.

Every ``*_chart`` function returns an Altair chart (or ``None`` where there is nothing to draw)
and never saves or shows it; :func:`save_chart` writes the roofline to .html (self-contained,
the Vega libraries inlined), .json (the Vega-Lite spec), .png or .svg (through vl-convert).
Altair is imported inside the functions so that ``ncu-roof --help`` stays fast.

Launches of one kernel are aggregated before plotting (sums of FLOPs, bytes and time, so the
intensities are ratios of sums), and only the kernels with the most time are drawn, so a run of
thousands of launches gives a chart of at most :data:`MAX_KERNELS` kernels.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ncu_roof.errors import InputError
from ncu_roof.files import check_writable, write_atomic
from ncu_roof.report.summary import fmt_pct, fmt_seconds, fmt_si

if TYPE_CHECKING:
    import altair as alt

    from ncu_roof.diagnose import Diagnosis

WIDTH, HEIGHT = 620, 400
MAX_KERNELS = 40  # kernels drawn on a roofline panel (most time first)
MAX_LABELS = 6  # kernels named on a roofline panel
ALWAYS_LABELLED = 3  # the kernels with the most time are named even where their label must overlap
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
    is already short and unique (ncu_roof.kernel_names), so nothing else is taken off: charts key
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
def _first_by_time(frame: pd.DataFrame, keys: list[str], column: str) -> pd.Series:
    """Per group, the value of ``column`` that holds the most time (NaN values ignored)."""
    ok = frame[frame[column].notna()]
    if ok.empty:
        return pd.Series(dtype="object")
    time = ok["time_s"].fillna(0.0).clip(lower=0.0) + 1e-30
    totals = time.groupby([ok[k] for k in keys] + [ok[column]], sort=False).sum()
    best = totals.groupby(level=list(range(len(keys))), sort=False).idxmax()
    return best.map(lambda key: key[-1])


def kernel_points(placed: pd.DataFrame, share_per_device: bool = False) -> pd.DataFrame:
    """One row per (device, kernel), most time first: sums, ratio-of-sums intensities, bound.

    Sums are unknown (NaN) where any launch lacks the quantity. ``share`` is of all the time, or
    of the device's time with ``share_per_device``. Vectorised: thousands of launches are cheap.
    """
    if placed.empty:
        return pd.DataFrame()
    t = placed.assign(device=placed["device"].fillna("unknown device").astype(str),
                      kernel=placed["kernel"].astype(str))
    keys = ["device", "kernel"]
    g = t.groupby(keys, sort=False)
    cols = ["time_s", "flops"] + [f"{lv}_bytes" for lv, _ in LEVELS] + [
        c for c in ("alg_flops", "alg_bytes") if c in t]
    sums = g[cols].sum(min_count=1).where(g[cols].count().eq(g.size(), axis=0))
    out = sums.copy()
    out["launches"] = g.size()
    w = t["time_s"].where(t["pct_of_roof"].notna() & (t["time_s"] > 0))
    out["pct_of_roof"] = (t["pct_of_roof"] * w).groupby([t[k] for k in keys], sort=False).sum() / \
        w.groupby([t[k] for k in keys], sort=False).sum().replace(0.0, np.nan)
    out["bound"] = _first_by_time(t, keys, "bound").reindex(out.index).fillna("unknown")
    out["compute_roof"] = _first_by_time(t, keys, "compute_roof").reindex(out.index)
    out["peak"] = _first_by_time(t, keys, "peak_flops_per_s").reindex(out.index).astype("float64")
    out["dram_roof"] = _first_by_time(t, keys, "dram_roof_bytes_per_s").reindex(out.index).astype("float64")
    out["full_name"] = g["kernel_demangled"].first().reindex(out.index)
    out = out.reset_index()
    out["full_name"] = out["full_name"].where(out["full_name"].notna(), out["kernel"]).astype(str)
    total = (out.groupby("device")["time_s"].transform("sum") if share_per_device
             else pd.Series(out["time_s"].sum(), index=out.index))
    out["share"] = out["time_s"] / total.where(total > 0)
    out["achieved"] = out["flops"] / out["time_s"].where(out["time_s"] > 0)
    for level, _ in LEVELS:
        out[f"intensity_{level}"] = out["flops"] / out[f"{level}_bytes"].where(out[f"{level}_bytes"] > 0)
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


# --- roofs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Roof:
    """One line of a roofline panel: a slope (bytes/s) or a flat compute roof (FLOP/s)."""

    kind: str  # "memory", "compute" (a roof launches are held to) or "context" (a peak for reference)
    name: str
    value: float
    source: str

    @property
    def label(self) -> str:
        unit = "B/s" if self.kind == "memory" else "FLOP/s"
        return f"{self.name} {fmt_si(self.value, unit)} ({_short_source(self.source)})"


def _short_source(source: str) -> str:
    text = str(source).replace(" (practical, not measured)", ", practical")
    return text.replace("report x ", "report ×").replace("device table x ", "device table ×")


def _distinct(values: pd.Series, names: pd.Series, sources: pd.Series, weights: pd.Series
              ) -> list[tuple[str, float, str]]:
    """The distinct (name, value, source) of the launches, most time first, merged only where a
    name and source are the same and the values equal to 0.1%."""
    frame = pd.DataFrame({"value": pd.to_numeric(values, errors="coerce"), "name": names.astype("object"),
                          "source": sources.astype("object"), "w": weights.fillna(0.0).clip(lower=0.0)})
    frame = frame[frame["value"].map(_finite)]
    frame["name"] = frame["name"].where(frame["name"].notna(), "?").astype(str)
    frame["source"] = frame["source"].where(frame["source"].notna(), "?").astype(str)
    found = frame.groupby(["name", "value", "source"], sort=False)["w"].sum().sort_values(ascending=False)
    out: list[tuple[str, float, str]] = []
    for key, _ in found.items():
        name, value, source = cast(tuple[str, float, str], key)
        if not any(n == name and s == source and abs(v - value) <= 1e-3 * v for n, v, s in out):
            out.append((str(name), float(value), str(source)))
    return out


def memory_roofs(placed: pd.DataFrame) -> list[Roof]:
    """DRAM (practical), L2 and L1 roofs: each distinct value the engine placed the launches under."""
    roofs = []
    for level, name in LEVELS:
        col = f"{level}_roof_bytes_per_s"
        if col not in placed:
            continue
        names = pd.Series(name, index=placed.index, dtype="object")
        for _, value, src in _distinct(placed[col], names, placed.get(f"{level}_roof_src", names), placed["time_s"]):
            roofs.append(Roof("memory", name, value, src))
    return roofs


def compute_roofs(placed: pd.DataFrame) -> list[Roof]:
    """The compute roofs the engine held the launches to: each distinct (compute_roof,
    peak_flops_per_s, peak_flops_src), with the engine's label and value. Where no launch has one
    (no FLOPs), the device's FP32 FMA peak, labelled as context."""
    roofs = [Roof("compute", name, value, src) for name, value, src in
             _distinct(placed["peak_flops_per_s"], placed["compute_roof"], placed["peak_flops_src"],
                       placed["time_s"])]
    if not roofs:
        roofs = _fallback_fp32(placed)
    return _merge_equal(sorted(roofs, key=lambda r: -r.value))


def context_roofs(placed: pd.DataFrame, compute: list[Roof]) -> list[Roof]:
    """The device's plain FMA peak of each precision whose drawn roofs are all below FMA rate
    (e.g. the FP64 FMA peak above an 'fp64 mixed' roof), labelled as context: no launch is held to it."""
    out = []
    for p in ("fp64", "fp32", "fp16"):
        mine = [r for r in compute if r.name.startswith(p)]
        if not mine or any(r.name.endswith(f"{p} FMA") or f"{p} FMA =" in r.name for r in mine):
            continue
        col = f"peak_{p}_flops_per_s"
        value, _ = _weighted_mode(placed[col], placed["time_s"]) if col in placed else (math.nan, None)
        if _finite(value) and all(abs(r.value - value) > 1e-3 * value for r in compute):
            out.append(Roof("context", f"{p} FMA peak (context, no kernel held to it)", value,
                            str(placed.get(f"{col}_src", pd.Series(["report"])).dropna().iloc[0])
                            if placed.get(f"{col}_src") is not None and placed[f"{col}_src"].notna().any()
                            else "report"))
    return out


def _fallback_fp32(placed: pd.DataFrame) -> list[Roof]:
    value, _ = _weighted_mode(placed["peak_fp32_flops_per_s"], placed["time_s"])
    name = "fp32 FMA peak (context, no kernel has FLOPs)"
    if _finite(value):
        return [Roof("context", name, value, "report")]
    from ncu_roof import devices

    names = placed["device"].dropna().astype(str)
    spec = devices.lookup(names.iloc[0]) if len(names) else None
    spec_value: float | None = getattr(spec, "fp32_flops_per_s", None) if spec is not None else None
    if spec_value is None or not _finite(spec_value):
        return []
    return [Roof("context", name, float(spec_value), "device table")]


def _merge_equal(roofs: list[Roof]) -> list[Roof]:
    """Roofs equal to 0.1% drawn once (e.g. V100 FP64 FMA = FP32 no-FMA)."""
    out: list[Roof] = []
    for roof in roofs:
        if out and abs(out[-1].value - roof.value) <= 1e-3 * out[-1].value:
            prev = out[-1]
            source = prev.source if prev.source == roof.source else f"{prev.source}; {roof.source}"
            out[-1] = Roof(prev.kind, f"{prev.name} = {roof.name}", prev.value, source)
        else:
            out.append(roof)
    return out


# --- roofline panel geometry ---------------------------------------------------------------------
@dataclass(frozen=True)
class Frame:
    """The visible domain of one panel (log axes) and its size in pixels."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    width: int = WIDTH
    height: int = HEIGHT

    def px(self, x: float, y: float) -> tuple[float, float]:
        fx = math.log10(x / self.x_lo) / math.log10(self.x_hi / self.x_lo)
        fy = math.log10(y / self.y_lo) / math.log10(self.y_hi / self.y_lo)
        return fx * self.width, (1 - fy) * self.height

    def data(self, px: float, py: float) -> tuple[float, float]:
        """The data point at screen position (px, py): the inverse of :meth:`px`."""
        fx, fy = px / self.width, 1 - py / self.height
        return (self.x_lo * (self.x_hi / self.x_lo) ** fx, self.y_lo * (self.y_hi / self.y_lo) ** fy)

    @property
    def slope_angle(self) -> float:
        """Screen angle (degrees, Vega's clockwise) of a line of slope 1 in log-log."""
        per_x = self.width / math.log10(self.x_hi / self.x_lo)
        per_y = self.height / math.log10(self.y_hi / self.y_lo)
        return -math.degrees(math.atan2(per_y, per_x))


def _frame(points: pd.DataFrame, memory: list[Roof], compute: list[Roof]) -> Frame:
    xs = [v for lvl, _ in LEVELS for v in points.get(f"intensity_{lvl}", pd.Series(dtype=float)) if _finite(v)]
    xs += [v for v in points.get("alg_intensity", pd.Series(dtype=float)) if _finite(v)]
    ys = [v for v in points.get("achieved", pd.Series(dtype=float)) if _finite(v)]
    ys += [v for v in points.get("ideal", pd.Series(dtype=float)) if _finite(v)]
    ridges = [c.value / m.value for c in compute for m in memory]
    top = max([c.value for c in compute] + ys, default=math.nan)
    if not _finite(top):
        top = max([m.value * 10.0 for m in memory], default=1.0)
    xs_all = xs + ridges or [1.0]
    x_lo = 10 ** math.floor(math.log10(min(xs_all) / 1.5))
    x_hi = 10 ** math.ceil(math.log10(max(xs_all) * 1.5))
    x_lo, x_hi = min(x_lo, x_hi / 1e3), max(x_hi, x_lo * 1e3)
    y_hi = top * 3.0
    y_lo = min([top / 1e3] + [y / 3.0 for y in ys])
    if memory:
        y_lo = min(y_lo, max(min(m.value for m in memory) * x_lo, top / 1e6))
    return Frame(x_lo, x_hi, 10 ** math.floor(math.log10(y_lo)), y_hi)


def _roof_rows(frame: Frame, memory: list[Roof], compute: list[Roof]) -> list[dict[str, Any]]:
    """Two points per roof line; slopes run up to the top compute roof, flats from their ridge."""
    top = max([c.value for c in compute], default=frame.y_hi / 3.0)
    fastest = max([m.value for m in memory], default=math.nan)
    rows = []
    for m in memory:
        x0 = max(frame.x_lo, frame.y_lo / m.value)
        rows += [{"roof": m.label, "kind": "memory", "value": m.value, "x": x0, "y": m.value * x0, "order": 0},
                 {"roof": m.label, "kind": "memory", "value": m.value, "x": top / m.value, "y": top, "order": 1}]
    for c in compute:
        x0 = c.value / fastest if _finite(fastest) else frame.x_lo
        rows += [{"roof": c.label, "kind": c.kind, "value": c.value, "x": max(x0, frame.x_lo), "y": c.value,
                  "order": 0},
                 {"roof": c.label, "kind": c.kind, "value": c.value, "x": frame.x_hi, "y": c.value, "order": 1}]
    return rows


def _slope_label_rows(frame: Frame, memory: list[Roof], placer: _Placer) -> list[dict[str, Any]]:
    """Slope labels along their line, near the left end where nothing is in the way."""
    rows = []
    top = frame.y_hi / 3.0
    for group in _label_groups(memory):
        m, label = group[0], _group_label(group)
        lo = max(frame.x_lo, frame.y_lo / m.value) * 1.3
        hi = min(frame.x_hi, top / m.value)
        if hi <= lo:
            continue
        spots = [lo * (hi / lo) ** f for f in (0.02, 0.12, 0.25, 0.4, 0.55)]
        candidates = [_text(label, x, m.value * x, "left", "bottom", 0, -5, angle=frame.slope_angle) for x in spots]
        rows.append(placer.place(candidates + [{**c, "baseline": "top", "dy": 5} for c in candidates]))
    return rows


def _ridge_rows(memory: list[Roof], compute: list[Roof], main_peak: float) -> list[dict[str, Any]]:
    """DRAM ridge points (where its slope meets each compute roof); the main one gets a label."""
    dram = next((m for m in memory if m.name == "DRAM"), None)
    compute = [c for c in compute if c.kind == "compute"] or compute
    if dram is None:
        return []
    main = min(compute, key=lambda c: abs(math.log(c.value / main_peak)) if _finite(main_peak) else -c.value,
               default=None)
    return [{"x": c.value / dram.value, "y": c.value, "Ridge": f"DRAM × {c.name}: {c.value / dram.value:.3g} FLOP/byte",
             "label": f"ridge {c.value / dram.value:.3g}" if c is main else ""} for c in compute]


# --- labels that do not overlap ------------------------------------------------------------------
Box = tuple[float, float, float, float]
CHAR_W = 6.3  # px per character at 11px (bold a little wider)


def _text(text: str, x: float, y: float, align: str, baseline: str, dx: float, dy: float,
          angle: float = 0.0, bold: bool = False, size: int = 11, color: str = "#333") -> dict[str, Any]:
    return {"text": text, "x": x, "y": y, "align": align, "baseline": baseline, "dx": dx, "dy": dy,
            "angle": angle, "bold": bold, "size": size, "color": color}


def _box(frame: Frame, row: dict[str, Any]) -> Box:
    """Screen rectangle of an unrotated text row."""
    px, py = frame.px(row["x"], row["y"])
    w = len(row["text"]) * CHAR_W * (1.1 if row["bold"] else 1.0) * row["size"] / 11
    h = row["size"] + 2
    left = {"left": px + row["dx"], "right": px + row["dx"] - w, "center": px + row["dx"] - w / 2}[row["align"]]
    top = {"bottom": py + row["dy"] - h, "top": py + row["dy"], "middle": py + row["dy"] - h / 2}[row["baseline"]]
    return (left, top, left + w, top + h)


def _boxes(frame: Frame, row: dict[str, Any]) -> list[Box]:
    """Screen boxes of a text row; a rotated one as a chain of small boxes along its baseline."""
    if not row["angle"]:
        return [_box(frame, row)]
    px, py = frame.px(row["x"], row["y"])
    w = len(row["text"]) * CHAR_W * row["size"] / 11
    h = row["size"] + 2
    cos, sin = math.cos(math.radians(row["angle"])), math.sin(math.radians(row["angle"]))
    normal = -row["dy"] + (h / 2 if row["baseline"] == "bottom" else -h / 2)  # towards the glyph tops
    out = []
    for t in np.arange(0.0, w, h):
        cx = px + (t + h / 2) * cos + normal * sin
        cy = py + (t + h / 2) * sin - normal * cos
        out.append((cx - h / 2, cy - h / 2, cx + h / 2, cy + h / 2))
    return out


class _Placer:
    """Greedy label placement: the first candidate inside the plot that hits nothing placed so far."""

    def __init__(self, frame: Frame, occupied: list[Box]) -> None:
        self.frame, self.boxes = frame, list(occupied)

    def _cost(self, box: Box) -> float:
        f = self.frame
        outside = max(0.0, -box[0]) + max(0.0, box[2] - f.width) + max(0.0, -box[1]) + max(0.0, box[3] - f.height)
        hit = sum(max(0.0, min(box[2], b[2]) - max(box[0], b[0])) * max(0.0, min(box[3], b[3]) - max(box[1], b[1]))
                  for b in self.boxes)
        return hit + 100.0 * outside

    def _best(self, candidates: list[dict[str, Any]]) -> tuple[int, float]:
        costs = [sum(self._cost(b) for b in _boxes(self.frame, row)) for row in candidates]
        best = next((i for i, c in enumerate(costs) if c == 0), int(np.argmin(costs)))
        return best, costs[best]

    def place(self, candidates: list[dict[str, Any]]) -> dict[str, Any]:
        """The first candidate that hits nothing, else the one that hits least."""
        best, _ = self._best(candidates)
        self.boxes += _boxes(self.frame, candidates[best])
        return candidates[best]

    def place_if_free(self, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The first candidate that hits nothing, or None when every one would overlap."""
        best, cost = self._best(candidates)
        return self.place([candidates[best]]) if cost == 0 else None


def _point_box(frame: Frame, x: float, y: float, size: float) -> Box:
    px, py = frame.px(x, y)
    r = math.sqrt(size) / 2
    return (px - r, py - r, px + r, py + r)


def _compute_label_rows(frame: Frame, compute: list[Roof], memory: list[Roof], placer: _Placer
                        ) -> list[dict[str, Any]]:
    fastest = max([m.value for m in memory], default=math.nan)
    rows = []
    for group in _label_groups(compute):
        c = group[0]
        start = max(c.value / fastest, frame.x_lo) if _finite(fastest) else frame.x_lo
        label = _group_label(group)
        color = "#888" if c.kind == "context" else "#333"
        rows.append(placer.place([
            _text(label, frame.x_hi, c.value, "right", "bottom", -4, -4, color=color),
            _text(label, frame.x_hi, c.value, "right", "top", -4, 4, color=color),
            _text(label, start, c.value, "left", "bottom", 8, -4, color=color),
            _text(label, start, c.value, "left", "top", 8, 4, color=color),
        ]))
    return rows


def _label_groups(roofs: list[Roof]) -> list[list[Roof]]:
    """Roofs of one kind and source within 3% of each other (clock differences between launches,
    FMA shares a point apart) share one label; each keeps its own line and tooltip."""
    groups: list[list[Roof]] = []
    for r in sorted(roofs, key=lambda r: -r.value):
        g = next((g for g in groups if g[0].kind == r.kind and g[0].source == r.source
                  and abs(g[-1].value - r.value) <= 0.03 * g[-1].value), None)
        if g is None:
            groups.append([r])
        else:
            g.append(r)
    return groups


def _group_label(group: list[Roof]) -> str:
    if len(group) == 1:
        return group[0].label
    unit = "B/s" if group[0].kind == "memory" else "FLOP/s"
    ordered = sorted(group, key=lambda r: r.value)
    if len({r.name for r in group}) > 1:  # e.g. 'fp64 mixed (79% of FMA rate) 5.27 / (80% ...) 5.31 TFLOP/s'
        return " / ".join(f"{r.name} {fmt_si(r.value, unit)}" for r in ordered) + f" ({_short_source(group[0].source)})"
    values = " / ".join(fmt_si(r.value, unit).split()[0] for r in ordered)
    return f"{group[0].name} {values} {fmt_si(group[0].value, unit).split()[-1]} ({_short_source(group[0].source)})"


def _colocated(points: pd.DataFrame, frame: Frame) -> list[pd.DataFrame]:
    """Kernels whose points sit on the same spot (within a few pixels at every level), most time first."""
    groups: list[tuple[list[tuple[float, float]], list[int]]] = []
    for i, (_, k) in enumerate(points.iterrows()):
        spots = [frame.px(k[f"intensity_{lv}"], k["achieved"]) for lv, _ in LEVELS if _finite(k[f"intensity_{lv}"])]
        if not spots or not _finite(k["achieved"]):
            continue
        g = next((g for g in groups if k.get("is_region") is not True and len(g[0]) == len(spots) and all(
            abs(a[0] - b[0]) <= 4 and abs(a[1] - b[1]) <= 4 for a, b in zip(g[0], spots, strict=True))), None)
        if g is None or points.iloc[g[1][0]].get("is_region") is True:
            groups.append((spots, [i]))
        else:
            g[1].append(i)
    return [points.iloc[idx] for _, idx in groups]


def _kernel_label_rows(points: pd.DataFrame, frame: Frame, placer: _Placer) -> list[dict[str, Any]]:
    """Names of the kernels with the most time beside their points; past the first few, only
    where they hit nothing (the tooltip still names every point). Kernels on one spot are named
    together ("3 kernels, 60% of time"), so no name hides the others."""
    rows = []
    for rank, group in enumerate(_colocated(points, frame)[:MAX_LABELS]):
        k = group.iloc[0]
        xs = [k[f"intensity_{lvl}"] for lvl, _ in LEVELS if _finite(k[f"intensity_{lvl}"])]
        share = float(group["share"].clip(lower=0).sum())
        y, r = k["achieved"], math.sqrt(40 + 660 * max(k["share"], 0)) / 2 + 4
        roof = f", {fmt_pct(k['pct_of_roof'])} of roof" if _finite(k["pct_of_roof"]) else ""
        text = f"{truncate_name(k['kernel'], 28)} ({fmt_pct(share * 100)} of time{roof})"
        if len(group) > 1:
            text = f"{len(group)} kernels, {fmt_pct(share * 100)} of time"
        elif k.get("is_region") is True and _finite(k["alg_bytes"]) and k["alg_bytes"] > 0:
            text = f"{k['kernel']}: {k['dram_bytes'] / k['alg_bytes']:.1f}x the algorithmic bytes"
        anchor = xs[0]
        place = placer.place if rank < ALWAYS_LABELLED else placer.place_if_free
        row = place([
            _text(text, max(xs), y, "left", "middle", r, 0, bold=True),
            _text(text, min(xs), y, "right", "middle", -r, 0, bold=True),
            _text(text, anchor, y, "center", "bottom", 0, -r, bold=True),
            _text(text, anchor, y, "center", "top", 0, r, bold=True),
            _text(text, max(xs), y, "left", "bottom", r * 0.7, -r * 0.7, bold=True),
            _text(text, min(xs), y, "right", "top", -r * 0.7, r * 0.7, bold=True),
            _text(text, max(xs), y, "left", "top", r * 0.7, r * 0.7, bold=True),
            _text(text, min(xs), y, "right", "bottom", -r * 0.7, -r * 0.7, bold=True),
        ])
        if row is not None:
            rows.append(row)
    return rows


def _arrow_label_rows(ideal: list[dict[str, Any]], frame: Frame, placer: _Placer) -> list[dict[str, Any]]:
    """'ideal 908 us → 4.55 ms, 5.0x bytes' beside each ideal → achieved arrow."""
    rows = []
    for r in ideal:
        (x0, y0), (x1, y1) = frame.px(r["x"], r["y"]), frame.px(r["x2"], r["y2"])
        mid = frame.data((x0 + x1) / 2, (y0 + y1) / 2)
        cands = [_text(r["arrow_label"], x, y, align, base, dx, dy, bold=True, color=ARROW_COLOR)
                 for (x, y) in (mid, (r["x"], r["y"]))
                 for align, base, dx, dy in (("left", "top", 10, 6), ("right", "bottom", -10, -6),
                                             ("left", "bottom", 10, -6), ("right", "top", -10, 6))]
        rows.append(placer.place(cands))
    return rows


# --- kernel marks --------------------------------------------------------------------------------
def _tooltip_fields(k: pd.Series) -> dict[str, Any]:
    return {"Kernel": k["full_name"], "Device": k["device"], "Launches": int(k["launches"]),
            "Time": fmt_seconds(k["time_s"]), "Share of time": fmt_pct(k["share"] * 100),
            "Bound": k["bound"], "Achieved": fmt_si(k["achieved"], "FLOP/s"),
            "% of roof": fmt_pct(k["pct_of_roof"]),
            "Compute roof": k["compute_roof"] if isinstance(k["compute_roof"], str) else "?"}


def _point_rows(points: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for _, k in points.iterrows():
        if not _finite(k["achieved"]):
            continue
        for level, name in LEVELS:
            x = k[f"intensity_{level}"]
            if _finite(x):
                rows.append({"key": f"{k['device']}|{k['kernel']}", "level": name, "x": float(x),
                             "y": float(k["achieved"]), "bound": k["bound"], "share": float(k["share"]),
                             "Intensity": f"{x:.3g} FLOP/byte ({name})",
                             "Bytes": fmt_si(k[f"{level}_bytes"], "B"), **_tooltip_fields(k)})
    return rows


def _ideal_rows(points: pd.DataFrame, frame: Frame) -> list[dict[str, Any]]:
    """Algorithmic point (ideal intensity, its attainable FLOP/s) and the arrow to the achieved one."""
    rows = []
    for _, k in points.iterrows():
        xi, peak, beta = k["alg_intensity"], k["peak"], k["dram_roof"]
        if not (_finite(xi) and _finite(k["achieved"]) and _finite(k["intensity_dram"])):
            continue
        yi = min(v for v in (peak, xi * beta) if _finite(v)) if (_finite(peak) or _finite(beta)) else math.nan
        if not _finite(yi):
            continue
        factor = k.get("extra_bytes_factor", math.nan)
        if not _finite(factor) and _finite(k["alg_bytes"]) and _finite(k["dram_bytes"]):
            factor = k["dram_bytes"] / k["alg_bytes"]
        ideal_s = k.get("ideal_time_s", math.nan)
        if not _finite(ideal_s):
            ideal_s = max([v for v in (k["alg_flops"] / peak if _finite(peak) else math.nan,
                                       k["alg_bytes"] / beta if _finite(beta) else math.nan) if _finite(v)],
                          default=math.nan)
        (x0, y0), (x1, y1) = frame.px(xi, yi), frame.px(k["intensity_dram"], k["achieved"])
        length = math.hypot(x1 - x0, y1 - y0) or 1.0
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        nx, ny = (uy, -ux) if ux > 0 else (-uy, ux)  # the normal towards the top of the screen
        off = ARROW_OFFSET  # the shaft runs beside a roof it would otherwise hide in
        back = min(math.sqrt(40 + 660 * max(float(k["share"]), 0)) / 2 + 6, 0.5 * length)
        sx, sy = frame.data(x0 + ux * 8 + nx * off, y0 + uy * 8 + ny * off)
        hx, hy = frame.data(x1 - ux * back + nx * off, y1 - uy * back + ny * off)
        label = (f"ideal {fmt_seconds(ideal_s)} → {fmt_seconds(k['time_s'])}" if _finite(ideal_s) else "ideal") + (
            f", {factor:.1f}x bytes" if _finite(factor) else "")
        rows.append({"x": float(xi), "y": float(yi), "x2": float(hx), "y2": float(hy), "sx": sx, "sy": sy,
                     "angle": math.degrees(math.atan2(x1 - x0, y0 - y1)), "bound": k["bound"],
                     "level": "ideal (algorithmic)", "Intensity": f"{xi:.3g} FLOP/byte (algorithmic)",
                     "Ideal": fmt_si(yi, "FLOP/s"), "arrow_label": label,
                     "Extra bytes": f"{factor:.2g}x" if _finite(factor) else "?", **_tooltip_fields(k)})
    return rows


# --- roofline chart ------------------------------------------------------------------------------
def _axes(frame: Frame, fx: str = "x", fy: str = "y") -> tuple[Any, Any]:
    import altair as alt

    x = alt.X(f"{fx}:Q", title="Arithmetic intensity (FLOP/byte)",
              scale=alt.Scale(type="log", domain=[frame.x_lo, frame.x_hi], nice=False),
              axis=alt.Axis(values=_decades(frame.x_lo, frame.x_hi), format="~g", grid=True))
    y = alt.Y(f"{fy}:Q", title="Performance (FLOP/s)",
              scale=alt.Scale(type="log", domain=[frame.y_lo, frame.y_hi], nice=False),
              axis=alt.Axis(values=_decades(frame.y_lo, frame.y_hi), format="~s", grid=True))
    return x, y


def _bound_color(bounds: list[str]) -> Any:
    import altair as alt

    domain = [b for b in BOUND_COLORS if b in bounds] + sorted(b for b in set(bounds) if b not in BOUND_COLORS)
    return alt.Color("bound:N", title="Bound", scale=alt.Scale(
        domain=domain, range=[BOUND_COLORS.get(b, "#17becf") for b in domain]),
        legend=alt.Legend(orient="right", symbolOpacity=1))


_TIPS = ["Kernel", "Device", "Launches", "Time", "Share of time", "Bound", "Intensity", "Bytes",
         "Achieved", "% of roof", "Compute roof"]


def _text_layers(rows: list[dict[str, Any]], x: Any, y: Any) -> list[Any]:
    """One text layer per label (align, baseline and offsets are mark properties in Vega-Lite)."""
    import altair as alt

    layers = []
    for r in rows:
        base = alt.Chart(alt.Data(values=[{"x": r["x"], "y": r["y"], "text": r["text"]}]))
        props = dict(align=r["align"], baseline=r["baseline"], dx=r["dx"], dy=r["dy"],
                     angle=round((r["angle"] + 360) % 360, 3), fontSize=r["size"],
                     fontWeight="bold" if r["bold"] else "normal", clip=False)
        layers += [base.mark_text(stroke="white", strokeWidth=3, strokeOpacity=0.85, **props).encode(
                       x=x, y=y, text="text:N"),
                   base.mark_text(color=r["color"], **props).encode(x=x, y=y, text="text:N")]
    return layers


def _roof_layers(frame: Frame, memory: list[Roof], compute: list[Roof], ridges: list[dict[str, Any]],
                 x: Any, y: Any) -> list[Any]:
    import altair as alt

    lines = alt.Chart(alt.Data(values=_roof_rows(frame, memory, compute))).mark_line(
        strokeWidth=1.6, clip=True).encode(
        x=x, y=y, detail="roof:N", order="order:Q",
        color=alt.condition("datum.kind == 'context'", alt.value("#aaa"), alt.value("#444")),
        strokeDash=alt.StrokeDash("kind:N", legend=None, scale=alt.Scale(
            domain=["memory", "compute", "context"], range=[[6, 3], [1, 0], [2, 3]])),
        tooltip=alt.Tooltip("roof:N", title="Roof"))
    layers = [lines]
    if ridges:
        base = alt.Chart(alt.Data(values=ridges))
        layers.append(base.mark_point(shape="cross", size=60, color="#444", filled=True).encode(
            x=x, y=y, tooltip=alt.Tooltip("Ridge:N")))
    return layers


def _kernel_layers(rows: list[dict[str, Any]], ideal: list[dict[str, Any]], frame: Frame) -> list[Any]:
    import altair as alt

    x, y = _axes(frame)
    bounds = [r["bound"] for r in rows + ideal] or ["unknown"]
    color = _bound_color(bounds)
    levels = [lv for lv in LEVEL_SHAPES if any(r["level"] == lv for r in rows + ideal)]
    shape = alt.Shape("level:N", title="Memory level", scale=alt.Scale(
        domain=levels, range=[LEVEL_SHAPES[lv] for lv in levels]))
    size = alt.Size("share:Q", title="Share of time", scale=alt.Scale(domain=[0, 1], range=[40, 700]),
                    legend=alt.Legend(format=".0%", values=[0.1, 0.5, 1.0]))
    base = alt.Chart(alt.Data(values=rows))
    layers = [
        base.mark_line(strokeWidth=1.2, opacity=0.55, clip=True).encode(
            x=x, y=y, detail="key:N", color=color, order="x:Q"),
        base.mark_point(filled=True, opacity=0.85, stroke="white", strokeWidth=0.6, clip=True).encode(
            x=x, y=y, color=color, shape=shape, size=size, tooltip=[alt.Tooltip(f"{t}:N") for t in _TIPS]),
    ]
    if ideal:
        ib = alt.Chart(alt.Data(values=ideal))
        tips = [alt.Tooltip(f"{t}:N") for t in ("Kernel", "Intensity", "Ideal", "Extra bytes", "Achieved")]
        sx, sy = _axes(frame, "sx", "sy")
        layers += [  # solid, thick and in a colour of its own: visible even along a dashed roof
            ib.mark_rule(color="white", strokeWidth=6, opacity=0.8, clip=True).encode(
                x=sx, y=sy, x2="x2:Q", y2="y2:Q"),
            ib.mark_rule(color=ARROW_COLOR, strokeWidth=3, strokeCap="round", clip=True).encode(
                x=sx, y=sy, x2="x2:Q", y2="y2:Q", tooltip=tips),
            ib.mark_point(filled=True, size=130, strokeWidth=2, clip=True).encode(
                x=x, y=y, shape=shape, color=alt.value(ARROW_COLOR), tooltip=tips),
            ib.mark_point(shape="triangle-up", filled=True, size=260, color=ARROW_COLOR, opacity=1,
                          stroke="white", strokeWidth=1, clip=True).encode(
                x=_axes(frame, "x2", "y2")[0], y=_axes(frame, "x2", "y2")[1],
                angle=alt.Angle("angle:Q", scale=None), tooltip=tips),
        ]
    return layers


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _panel_subtitle(points: pd.DataFrame, placeable: pd.DataFrame) -> list[str]:
    """What the panel shows in words: kernels, time, the bound that holds the time, what is left out."""
    if "is_region" in points:
        kernels = points["is_region"].ne(True)
        points, placeable = points[kernels], placeable[placeable["is_region"].ne(True)]
    total = float(points["time_s"].sum())
    by = points.groupby("bound")["time_s"].sum().sort_values(ascending=False)
    parts = [f"{b}-bound {t / total:.0%}" for b, t in by.items() if total > 0 and t / total >= 0.005]
    lines = [f"{_plural(len(points), 'kernel')}, {_plural(int(points['launches'].sum()), 'launch')}"
             .replace("launchs", "launches") + f", {fmt_seconds(total)}"
             + (f"; {', '.join(parts)} of time" if parts else "")]
    missing = len(points) - len(placeable)
    if placeable.empty:
        lines.append("no kernel can be placed: none has both FLOPs (> 0) and bytes measured "
                     "(see the time share and the notes)")
    elif missing:
        lost = total - float(placeable["time_s"].sum())
        pct = "<1%" if total > 0 and 0 < lost / total < 0.005 else (f"{lost / total:.0%}" if total > 0 else "?")
        lines.append(f"not placed: {_plural(missing, 'kernel')} ({pct} of time) without FLOPs (> 0) or bytes"
                     + (f" or beyond the top {MAX_KERNELS}" if len(points) > MAX_KERNELS else ""))
    return lines


def _labels(frame: Frame, memory: list[Roof], compute: list[Roof], ridges: list[dict[str, Any]],
            rows: list[dict[str, Any]], ideal: list[dict[str, Any]], placeable: pd.DataFrame
            ) -> list[dict[str, Any]]:
    """Every text label of a panel, kept off the points, the ridges and each other."""
    occupied = [_point_box(frame, r["x"], r["y"], 40 + 660 * max(r["share"], 0)) for r in rows]
    occupied += [_point_box(frame, r["x"], r["y"], 130) for r in ideal]
    for r in ideal:  # the arrow's shaft, as a chain of small boxes
        (x0, y0), (x1, y1) = frame.px(r["x"], r["y"]), frame.px(r["x2"], r["y2"])
        occupied += [(x0 + (x1 - x0) * t - 4, y0 + (y1 - y0) * t - 4, x0 + (x1 - x0) * t + 4, y0 + (y1 - y0) * t + 4)
                     for t in np.linspace(0.0, 1.0, 12)]
    occupied += [_point_box(frame, r["x"], r["y"], 60) for r in ridges]
    placer = _Placer(frame, occupied)
    ridge_labels = [placer.place([_text(r["label"], r["x"], r["y"], align, base, dx, dy, size=10, color="#555")
                                  for align, base, dx, dy in (("left", "top", 5, 4), ("right", "bottom", -5, -4),
                                                              ("right", "top", -5, 4), ("left", "bottom", 5, -4))])
                    for r in ridges if r["label"]]
    slopes = _slope_label_rows(frame, memory, placer)
    arrows = _arrow_label_rows(ideal, frame, placer)
    return (slopes + ridge_labels + arrows + _compute_label_rows(frame, compute, memory, placer)
            + _kernel_label_rows(placeable, frame, placer))


def _panel_points(placed: pd.DataFrame, points: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The panel's points with the intensities of levels whose roof is unknown for the device
    blanked (a point without its roof would be judged against nothing), and those levels' names."""
    points = points.copy()
    unknown = []
    for level, name in LEVELS:
        col = f"intensity_{level}"
        if col in points and not placed[f"{level}_roof_bytes_per_s"].map(_finite).any():
            if points[col].map(_finite).any():
                unknown.append(name)
            points[col] = np.nan
    return points, unknown


def _roofline_panel(device: str, placed: pd.DataFrame, points: pd.DataFrame, finding: str | None = None) -> Any:
    import altair as alt

    points, unknown = _panel_points(placed, points)
    shown = points.head(MAX_KERNELS)
    levels_known = shown[[f"intensity_{lv}" for lv, _ in LEVELS]].apply(lambda c: c.map(_finite)).any(axis=1)
    placeable = shown[shown["achieved"].map(_finite) & levels_known]
    drawn = placed[placed["kernel"].astype(str).isin(set(placeable["kernel"].astype(str)))]
    roofs_of = drawn if len(drawn) else placed  # the roofs of the launches drawn, as the engine set them
    memory = memory_roofs(roofs_of) or memory_roofs(placed)
    compute = compute_roofs(roofs_of)
    compute = sorted(compute + context_roofs(placed, compute), key=lambda r: -r.value)
    frame = _frame(placeable, memory, compute)
    x, y = _axes(frame)
    main_peak = _weighted_mode(roofs_of["peak_flops_per_s"], roofs_of["time_s"])[0]
    ridges = _ridge_rows(memory, compute, main_peak)
    rows, ideal = _point_rows(placeable), _ideal_rows(placeable, frame)
    layers = _roof_layers(frame, memory, compute, ridges, x, y) if memory or compute else []
    layers += _kernel_layers(rows, ideal, frame) if rows else []
    layers += _text_layers(_labels(frame, memory, compute, ridges, rows, ideal, placeable), x, y)
    subtitle = _panel_subtitle(points, placeable)
    if unknown:
        subtitle.append(f"{' and '.join(unknown)} roof{'s' if len(unknown) > 1 else ''} unknown for this device: "
                        f"no {'/'.join(unknown)} points drawn")
    if finding:
        subtitle.insert(0, finding)
    if not layers:
        layers = [alt.Chart(alt.Data(values=[{"x": 1.0, "y": 1.0}])).mark_point(opacity=0).encode(x=x, y=y)]
    return alt.layer(*layers).properties(
        width=frame.width, height=frame.height,
        title=alt.TitleParams(f"Roofline: {device}", subtitle=subtitle, anchor="start"))


def _top_finding(d: Diagnosis) -> tuple[str, set[str]] | None:
    """The top finding's rule and time at stake, for a panel subtitle, and the kernels it names."""
    if not d.findings:
        return None
    f = d.findings[0]
    stake = f", {fmt_seconds(f.time_at_stake_s)} at stake" if f.time_at_stake_s else ""
    where = f" (region {f.region})" if f.region else (f" ({truncate_name(f.kernels[0], 40)})" if f.kernels else "")
    return f"top finding: {f.rule}{where}{stake}", set(f.kernels)


def _device_groups(placed: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    return [(str(dev), g) for dev, g in placed.groupby(placed["device"].fillna("unknown device").astype(str),
                                                        sort=False)]


def placeable_kernels(d: Diagnosis) -> int:
    """How many kernels a roofline of the diagnosis can place (achieved FLOP/s and an intensity)."""
    if d.placed.empty:
        return 0
    points = kernel_points(d.placed, share_per_device=True)
    n = 0
    for device, group in _device_groups(d.placed):
        mine, _ = _panel_points(group, points[points["device"] == device])
        known = mine[[f"intensity_{lv}" for lv, _ in LEVELS]].apply(lambda c: c.map(_finite)).any(axis=1)
        n += int((mine["achieved"].map(_finite) & known).sum())
    return n


def roofline_chart(d: Diagnosis) -> alt.TopLevelMixin:
    """The roofline of a diagnosis: one panel per device, kernels placed at each memory level."""
    import altair as alt

    points = kernel_points(d.placed, share_per_device=True)
    regions = region_points(d)
    if len(regions):
        points = pd.concat([regions, points], ignore_index=True)
    top = _top_finding(d)
    groups = _device_groups(d.placed)
    home = next((dev for dev, g in groups if top and top[1] & set(g["kernel"].astype(str))),
                groups[0][0] if groups else None)
    panels = []
    for device, group in groups:
        mine = points[points["device"].astype(str).isin([device, "nan", "None"])] if len(points) else points
        finding = top[0] if top and device == home else None
        panels.append(_roofline_panel(device, group, mine.reset_index(drop=True), finding))
    if not panels:
        return alt.Chart(alt.Data(values=[{"t": "no launches"}])).mark_text().encode(text="t:N")
    chart = panels[0] if len(panels) == 1 else alt.vconcat(*panels).resolve_scale(
        color="independent", shape="independent", size="independent")
    return _configure(chart)


def _configure(chart: Any) -> Any:
    return chart.configure_axis(labelFontSize=11, titleFontSize=12, gridColor="#e6e6e6").configure_legend(
        labelFontSize=11, titleFontSize=11, symbolStrokeWidth=1).configure_title(
        fontSize=14, subtitleFontSize=11, subtitleColor="#444").configure_view(stroke="#bbb")


# --- other views ---------------------------------------------------------------------------------
def time_unit(seconds: list[float]) -> tuple[str, float]:
    """The unit (s, ms or µs) that suits the largest of some durations, and its scale."""
    top = max([t for t in seconds if _finite(t)], default=1.0)
    return ("s", 1.0) if top >= 1.0 else ("ms", 1e3) if top >= 1e-3 else ("µs", 1e6)


def _time_share_panel(points: pd.DataFrame, title: str, subtitle: str) -> Any:
    import altair as alt

    rows = []
    for _, k in points.head(MAX_BARS).iterrows():
        rows.append({"key": str(k["kernel"]), "name": k["short"], "time_s": k["time_s"], "bound": k["bound"],
                     "share": f"{fmt_pct(k['share'] * 100)} · {_plural(int(k['launches']), 'launch')}"
                     .replace("launchs", "launches"), **_tooltip_fields(k)})
    rest = points.iloc[MAX_BARS:]
    if len(rest):
        share = rest["share"].sum()
        rows.append({"key": "(other kernels)", "name": f"other ({len(rest)} kernels)", "time_s": rest["time_s"].sum(),
                     "bound": "unknown", "share": fmt_pct(share * 100), "Kernel": f"{len(rest)} more kernels",
                     "Time": fmt_seconds(rest["time_s"].sum()), "Share of time": fmt_pct(share * 100)})
    unit, scale = time_unit([r["time_s"] for r in rows])
    for r in rows:
        r["time"] = r.pop("time_s") * scale
    labels = {r["key"]: r["name"] for r in rows}
    base = alt.Chart(alt.Data(values=rows)).encode(  # keyed on the whole kernel name, labelled with the cut one
        y=alt.Y("key:N", sort=[r["key"] for r in rows], title=None,
                axis=alt.Axis(labelLimit=320, labelExpr=f"{script_json(labels)}[datum.value]")),
        x=alt.X("time:Q", title=f"GPU time ({unit})", axis=alt.Axis(tickCount=6),
                scale=alt.Scale(domain=[0, max([r["time"] for r in rows], default=1.0) * 1.25])))
    bars = base.mark_bar().encode(color=_bound_color([r["bound"] for r in rows] or ["unknown"]),
                                  tooltip=[alt.Tooltip(f"{t}:N") for t in
                                           ("Kernel", "Time", "Share of time", "Bound", "% of roof")])
    text = base.mark_text(align="left", dx=4, fontSize=11).encode(text="share:N")
    return (bars + text).properties(width=WIDTH - 200, height=max(60, 22 * len(rows)),
                                    title=alt.TitleParams(title, subtitle=subtitle, anchor="start"))


def time_share_chart(d: Diagnosis) -> alt.TopLevelMixin:
    """Time per kernel (most first, the rest as 'other'), coloured by the bound that holds the time;
    one panel per device, shares of that device's time."""
    import altair as alt

    points = kernel_points(d.placed, share_per_device=True)
    devices = list(dict.fromkeys(points["device"])) if len(points) else []
    if len(devices) <= 1:
        return _configure(_time_share_panel(points, "Where the time goes", "GPU time per kernel, coloured by bound"))
    panels = [_time_share_panel(points[points["device"] == dev].reset_index(drop=True), f"Where the time goes: {dev}",
                                "GPU time per kernel on this device (shares of its time), coloured by bound")
              for dev in devices]
    return _configure(alt.vconcat(*panels).resolve_scale(color="independent", x="independent"))


def extra_bytes_chart(d: Diagnosis) -> alt.TopLevelMixin | None:
    """Measured DRAM bytes over algorithmic bytes per region (1x is ideal); None without regions."""
    import altair as alt

    regions = d.regions
    if regions is None or regions.empty or "extra_bytes_factor" not in regions:
        return None
    known = regions[regions["extra_bytes_factor"].map(_finite)]
    if known.empty:
        return None
    rows: list[dict[str, Any]] = [{"region": str(r["name"]), "factor": float(r["extra_bytes_factor"]),
             "Region": str(r["name"]), "Extra bytes": f"{r['extra_bytes_factor']:.3g}x",
             "Time": fmt_seconds(r.get("time_s")), "Time at stake": fmt_seconds(r.get("time_at_stake_s")),
             "label": f"{r['extra_bytes_factor']:.2g}x", "one": 1.0} for _, r in known.iterrows()]
    rows.sort(key=lambda r: -r["factor"])
    hi = max(10.0, max(r["factor"] for r in rows) * 2)
    base = alt.Chart(alt.Data(values=rows)).encode(
        y=alt.Y("region:N", sort=[r["region"] for r in rows], title=None,
                axis=alt.Axis(labelLimit=320, labelExpr="truncate(datum.label, 40)")),
        x=alt.X("factor:Q", title="DRAM bytes moved / algorithmic bytes (log)",
                scale=alt.Scale(type="log", domain=[min(0.5, min(r["factor"] for r in rows) / 2), hi])))
    bars = base.mark_bar(color="#9467bd").encode(
        x2="one:Q", tooltip=[alt.Tooltip(f"{t}:N") for t in ("Region", "Extra bytes", "Time", "Time at stake")])
    text = base.mark_text(align="left", dx=4, fontSize=11).encode(text="label:N")
    ideal = alt.Chart(alt.Data(values=[{"factor": 1.0}])).mark_rule(color="#2ca02c", strokeDash=[4, 3]).encode(
        x="factor:Q")
    return _configure((bars + text + ideal).properties(
        width=WIDTH - 200, height=max(60, 22 * len(rows)),
        title=alt.TitleParams("Extra bytes per region", subtitle="1x (green) moves only the bytes the "
                              "algorithm needs", anchor="start")))


def _throughput(group: pd.DataFrame) -> tuple[pd.Series, str]:
    if group["flops"].notna().all() and (group["flops"] > 0).any():
        return group["flops"] / group["time_s"], "FLOP/s"
    if group["dram_bytes"].notna().all() and (group["dram_bytes"] > 0).any():
        return group["dram_bytes"] / group["time_s"], "DRAM bytes/s"
    return group["grid_size"] * group["block_size"] / group["time_s"], "threads/s"


def _sweep_rows(placed: pd.DataFrame) -> tuple[list[dict[str, Any]], str]:
    ok = placed[placed["grid_size"].map(_finite) & placed["time_s"].map(_finite)]
    counts = ok.groupby("kernel")["grid_size"].nunique()
    kernels = counts[counts >= 3].index
    if not len(kernels):
        return [], ""
    swept = ok[ok["kernel"].isin(kernels)]
    top = swept.groupby("kernel")["time_s"].sum().sort_values(ascending=False).head(MAX_SWEEPS).index
    swept = swept[swept["kernel"].isin(top)].copy()
    swept["thr"], unit = _throughput(swept)
    agg = swept.groupby(["kernel", "grid_size"]).agg(time_s=("time_s", "median"), thr=("thr", "median"),
                                                     launches=("time_s", "size")).reset_index()
    rows = [{"kernel": str(r["kernel"]), "Kernel": str(r["kernel"]),
             "grid_size": float(r["grid_size"]), "time_us": float(r["time_s"]) * 1e6, "thr": float(r["thr"]),
             "Time": fmt_seconds(r["time_s"]), "Throughput": fmt_si(r["thr"], unit), "Launches": int(r["launches"])}
            for _, r in agg.iterrows()]
    return rows, unit


def sweep_chart(d: Diagnosis) -> alt.TopLevelMixin | None:
    """Time and throughput against grid size for kernels launched at 3+ sizes; None without any.

    Flat time at small sizes (throughput rising in proportion) is the overhead regime; where
    throughput levels off the kernel fills the GPU: the decode batch dial.
    """
    import altair as alt

    rows, unit = _sweep_rows(d.placed)
    if not rows:
        return None
    sizes = [r["grid_size"] for r in rows]
    grid = alt.X("grid_size:Q", title="Grid size (blocks)", scale=alt.Scale(type="log"),
                 axis=alt.Axis(values=_decades(min(sizes) / 1.01, max(sizes) * 10), format="~s"))
    color = alt.Color("kernel:N", title="Kernel", legend=alt.Legend(labelExpr="truncate(datum.label, 30)"))
    tips = [alt.Tooltip(f"{t}:N") for t in ("Kernel", "Time", "Throughput", "Launches")]
    base = alt.Chart(alt.Data(values=rows)).encode(x=grid, color=color, tooltip=tips)
    times = [r["time_us"] for r in rows] + [10.0]
    time = base.mark_line(point=True).encode(y=alt.Y("time_us:Q", title="Time per launch (µs)",
                                                     scale=alt.Scale(type="log"),
                                                     axis=alt.Axis(values=_decades(min(times) / 10, max(times) * 10),
                                                                   format="~g")))
    overhead = alt.Chart(alt.Data(values=[{"y": 10.0, "t": "~10 µs: launch overhead"}])).encode(
        y=alt.Y("y:Q", scale=alt.Scale(type="log")))
    time_panel = (time + overhead.mark_rule(strokeDash=[4, 3], color="#888")
                  + overhead.mark_text(align="left", x=4, dy=-6, color="#666", fontSize=10).encode(text="t:N")
                  ).properties(width=320, height=260, title="Time vs size")
    thrs = [r["thr"] for r in rows if _finite(r["thr"])] or [1.0]
    thr = base.mark_line(point=True).encode(y=alt.Y("thr:Q", title=f"Throughput ({unit})",
                                                    scale=alt.Scale(type="log"), axis=alt.Axis(
                                                        format="~s", values=_decades(min(thrs) / 10, max(thrs) * 10))))
    return _configure(alt.hconcat(time_panel, thr.properties(width=320, height=260, title="Throughput vs size"))
                      .properties(title=alt.TitleParams("Size sweep", subtitle="flat time at small sizes = "
                                                        "overhead regime; throughput levelling off = GPU full",
                                                        anchor="start")))


def sol_points(placed: pd.DataFrame) -> pd.DataFrame:
    """Per (device, kernel): time-weighted compute and memory speed-of-light %, share of the device's time."""
    cols = ["sm_throughput_pct", "memory_throughput_pct"]
    if placed.empty or not all(c in placed for c in cols):
        return pd.DataFrame()
    t = placed.assign(device=placed["device"].fillna("unknown device").astype(str), kernel=placed["kernel"].astype(str))
    t = t[t["time_s"].map(_finite)]
    rows = []
    for (device, kernel), g in t.groupby(["device", "kernel"], sort=False):
        ok = g[g[cols].notna().all(axis=1)]
        if ok.empty:
            continue
        w = ok["time_s"]
        rows.append({"device": device, "kernel": kernel, "time_s": float(g["time_s"].sum()), "launches": len(g),
                     "sm": float((ok["sm_throughput_pct"] * w).sum() / w.sum()),
                     "mem": float((ok["memory_throughput_pct"] * w).sum() / w.sum())})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    total = t.groupby("device")["time_s"].sum()
    out["share"] = out["time_s"] / out["device"].map(total)
    return out.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)


def sol_chart(d: Diagnosis) -> alt.TopLevelMixin | None:
    """Speed of light: compute SOL % against memory SOL % per kernel (time-weighted), sized by share
    of the device's time; the view when no kernel has the FLOPs and bytes a roofline needs."""
    import altair as alt

    points = sol_points(d.placed)
    if points.empty:
        return None
    from ncu_roof.roofline import Thresholds

    busy = Thresholds().sol_busy_pct
    rows = [{"key": f"{k['device']}|{k['kernel']}", "device": short_device_name(k["device"]), "sm": k["sm"],
             "mem": k["mem"], "share": float(k["share"]), "Kernel": k["kernel"], "Device": k["device"],
             "Launches": int(k["launches"]), "Time": fmt_seconds(k["time_s"]),
             "Share of time": fmt_pct(k["share"] * 100), "Compute SOL": fmt_pct(k["sm"]),
             "Memory SOL": fmt_pct(k["mem"])} for _, k in points.iterrows()]
    x = alt.X("mem:Q", title="Memory throughput (% of speed of light)", scale=alt.Scale(domain=[0, 100]))
    y = alt.Y("sm:Q", title="Compute (SM) throughput (% of speed of light)", scale=alt.Scale(domain=[0, 100]))
    several = points["device"].nunique() > 1
    color = alt.Color("device:N", title="Device") if several else alt.value("#1f77b4")
    dots = alt.Chart(alt.Data(values=rows)).mark_circle(opacity=0.75, stroke="white", strokeWidth=0.6).encode(
        x=x, y=y, detail="key:N", color=color,
        size=alt.Size("share:Q", title="Share of time", scale=alt.Scale(domain=[0, 1], range=[30, 900]),
                      legend=alt.Legend(format=".0%", values=[0.1, 0.5, 1.0])),
        tooltip=[alt.Tooltip(f"{t}:N") for t in ("Kernel", "Device", "Launches", "Time", "Share of time",
                                                 "Compute SOL", "Memory SOL")])
    guides = alt.Chart(alt.Data(values=[{"v": busy}]))
    lines = guides.mark_rule(strokeDash=[4, 3], color="#999").encode(x="v:Q") + \
        guides.mark_rule(strokeDash=[4, 3], color="#999").encode(y="v:Q")
    corner: list[dict[str, Any]] = [{"mem": 98, "sm": 98, "t": "both busy", "a": "right"},
              {"mem": 98, "sm": 2, "t": "memory-busy", "a": "right"},
              {"mem": 2, "sm": 98, "t": "compute-busy", "a": "left"},
              {"mem": 2, "sm": 2, "t": "neither busy: latency or launch-bound", "a": "left"}]
    corners = [alt.Chart(alt.Data(values=[c])).mark_text(align=c["a"], baseline="middle", color="#888",
                                                         fontSize=11).encode(x=x, y=y, text="t:N") for c in corner]
    named: list[dict[str, Any]] = []
    for _, k in points.head(MAX_LABELS).iterrows():  # the biggest, where no label is already near
        if k["share"] >= 0.02 and not any(abs(n["mem"] - k["mem"]) < 12 and abs(n["sm"] - k["sm"]) < 4 for n in named):
            named.append({"mem": k["mem"], "sm": k["sm"],
                          "t": f"{truncate_name(k['kernel'], 36)} ({fmt_pct(k['share'] * 100)})"})
    names = alt.Chart(alt.Data(values=named)).mark_text(align="left", dx=9, dy=-7, fontSize=11, fontWeight="bold",
                                                        color="#333").encode(x=x, y=y, text="t:N")
    total = float(points["time_s"].sum())
    subtitle = [f"no kernel has the FLOPs and bytes a roofline needs (basic set?): {_plural(len(points), 'kernel')}"
                f", {fmt_seconds(total)}; time-weighted speed-of-light % per kernel, size = share of its device's time",
                f"dashed: {busy:.0f}% (busy)"]
    return _configure(alt.layer(lines, *corners, dots, names).properties(
        width=WIDTH - 120, height=HEIGHT,
        title=alt.TitleParams("Speed of light", subtitle=subtitle, anchor="start")))


def _main_chart(d: Diagnosis) -> tuple[str, Any]:
    """The roofline, or the speed-of-light view where no kernel can be placed on a roofline."""
    if placeable_kernels(d) == 0:
        sol = sol_chart(d)
        if sol is not None:
            return "Speed of light", sol
    return "Roofline", roofline_chart(d)


def all_charts(d: Diagnosis) -> list[tuple[str, Any]]:
    """The charts of a report page, in order, with a heading each (those with something to show)."""
    charts = [_main_chart(d), ("Time share", time_share_chart(d)),
              ("Extra bytes", extra_bytes_chart(d)), ("Size sweep", sweep_chart(d))]
    return [(title, c) for title, c in charts if c is not None]


# --- specs and files -----------------------------------------------------------------------------
def chart_spec(chart: Any) -> dict[str, Any]:
    """The Vega-Lite spec of a chart, with Altair's row limit lifted for this conversion only."""
    import altair as alt

    with alt.data_transformers.disable_max_rows():
        return _finite_json(chart.to_dict())


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


def _vl_convert(what: str) -> Any:
    try:
        import vl_convert
    except ImportError as exc:
        raise InputError(f"{what} needs vl-convert-python: {PNG_HINT}") from exc
    return vl_convert


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (from vl-convert), to inline in HTML."""
    return _vl_convert("a self-contained HTML chart").javascript_bundle()


EMBED_JS = """
document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function (el) {
  vegaEmbed('#' + el.dataset.chart, JSON.parse(el.textContent), {actions: false, renderer: 'svg'})
    .catch(function (err) { document.getElementById(el.dataset.chart).textContent = 'chart failed: ' + err; });
});
"""


def chart_html(spec: dict[str, Any], title: str = "ncu-roof roofline") -> str:
    """A self-contained HTML page with one chart (no network needed)."""
    import html

    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>\n"
            f"<script>{vega_bundle()}</script></head>\n<body><div id=\"chart0\"></div>\n"
            f"<script type=\"application/json\" data-chart=\"chart0\">{script_json(spec)}</script>\n"
            f"<script>{EMBED_JS}</script></body></html>\n")


CHART_SUFFIXES = (".html", ".json", ".png", ".svg")


def save_chart(d: Diagnosis, path: str | Path, force: bool = False) -> Path:
    """Save the roofline chart by suffix: .html, .json, .png or .svg; never overwrite without force."""
    path = Path(path)
    suffix = path.suffix.lower()
    check_writable(path, force, CHART_SUFFIXES, "chart", "--chart")
    spec = chart_spec(_main_chart(d)[1])  # the speed-of-light view where nothing can be placed
    if suffix == ".json":
        data: str | bytes = json.dumps(spec, indent=2, allow_nan=False, default=_json_default) + "\n"
    elif suffix == ".html":
        data = chart_html(spec)
    elif suffix == ".png":
        data = _vl_convert("PNG export").vegalite_to_png(spec, scale=2)
    else:
        data = _vl_convert("SVG export").vegalite_to_svg(spec)
    return write_atomic(path, data)
