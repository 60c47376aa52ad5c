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
from ncu_roof.render.summary import fmt_pct, fmt_seconds, fmt_si

if TYPE_CHECKING:
    import altair as alt

    from ncu_roof.diagnose import Diagnosis

WIDTH, HEIGHT = 620, 400
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
ROOF_SPREAD = 0.05  # roofs of one name and source within 5% are one roof (per-launch clocks, FMA shares)


@dataclass(frozen=True)
class Roof:
    """One line of a roofline panel: a slope (bytes/s) or a flat compute roof (FLOP/s).

    ``value`` is the median of the engine's per-launch roofs it stands for (launches differ only
    in clock, or in FMA share by a point); ``low``/``high``/``launches`` are their spread."""

    kind: str  # "memory", "compute" (a roof launches are held to) or "context" (a peak for reference)
    name: str
    value: float
    source: str
    low: float = math.nan
    high: float = math.nan
    launches: int = 1

    @property
    def unit(self) -> str:
        return "B/s" if self.kind == "memory" else "FLOP/s"

    @property
    def label(self) -> str:
        return f"{self.name} {fmt_si(self.value, self.unit)} ({_short_source(self.source)})"

    @property
    def short_label(self) -> str:
        """The label without its source (in the tooltip): where the whole label finds no room."""
        return f"{self.name} {fmt_si(self.value, self.unit)}"

    @property
    def spread(self) -> str:
        """'median of 4 launches: 26.7 to 27.1 TFLOP/s (clocks differ)', or '' with no spread."""
        low, high = fmt_si(self.low, self.unit), fmt_si(self.high, self.unit)
        if not (_finite(self.low) and _finite(self.high)) or low == high:
            return ""
        return (f"median of {self.launches} launches: {fmt_si(self.low, self.unit)} to "
                f"{fmt_si(self.high, self.unit)} (clocks differ)")

    @property
    def tip(self) -> str:
        """The tooltip: the label, the full source and the per-launch spread."""
        return "; ".join(t for t in (f"{self.name} {fmt_si(self.value, self.unit)} ({self.source})", self.spread) if t)


def _short_source(source: str, width: int = 32) -> str:
    text = str(source).replace(" (practical, not measured)", ", practical")
    text = text.replace("report x ", "report ×").replace("device table x ", "device table ×")
    return text if len(text) <= width else text[: width - 1] + "…"


def _name_pattern(name: str) -> str:
    """A roof's name with its numbers blanked: 'fp64 mixed (79% of FMA rate)' -> 'fp64 mixed (#% of FMA rate)'."""
    return re.sub(r"\d+(?:\.\d+)?", "#", name)


def _merged_name(names: list[str]) -> str:
    """One name for roofs whose names differ only in numbers: '... (79% ...)', '... (80% ...)' -> '... (79–80% ...)'."""
    unique = list(dict.fromkeys(names))
    if len(unique) == 1:
        return unique[0]
    parts = [re.split(r"(\d+(?:\.\d+)?)", n) for n in unique]
    out = []
    for i, piece in enumerate(parts[0]):
        numbers = sorted({p[i] for p in parts}, key=float) if i % 2 else [piece]
        out.append(numbers[0] if len(numbers) == 1 else f"{numbers[0]}–{numbers[-1]}")
    return "".join(out)


def _median_roofs(kind: str, values: pd.Series, names: pd.Series, sources: pd.Series) -> list[Roof]:
    """One roof per name (numbers aside) and source and cluster within :data:`ROOF_SPREAD`: the
    median of the launches' roofs, their spread kept for the tooltip. Most launches first."""
    frame = pd.DataFrame({"value": pd.to_numeric(values, errors="coerce"), "name": names.astype("object"),
                          "source": sources.astype("object")})
    frame = frame[frame["value"].map(_finite)]
    frame["name"] = frame["name"].where(frame["name"].notna(), "?").astype(str)
    frame["source"] = frame["source"].where(frame["source"].notna(), "?").astype(str)
    frame["pattern"] = frame["name"].map(_name_pattern)
    roofs: list[tuple[int, Roof]] = []
    for (_, source), group in frame.groupby(["pattern", "source"], sort=False):
        group = group.sort_values("value", kind="stable")
        start, ids = group["value"].iloc[0], []
        for v in group["value"]:
            if v > start * (1 + ROOF_SPREAD):
                start = v
            ids.append(start)
        cluster = pd.Series(ids, index=group.index)
        for _, part in group.groupby(cluster, sort=False):
            vals = part["value"].to_numpy(dtype=float)
            roofs.append((len(part), Roof(kind, _merged_name(list(part["name"])), float(np.median(vals)), str(source),
                                          float(vals.min()), float(vals.max()), len(part))))
    return [r for _, r in sorted(roofs, key=lambda t: -t[0])]


def memory_roofs(placed: pd.DataFrame) -> list[Roof]:
    """DRAM (practical), L2 and L1 roofs: one per level and source, the median of the launches'."""
    roofs = []
    for level, name in LEVELS:
        col = f"{level}_roof_bytes_per_s"
        if col not in placed:
            continue
        names = pd.Series(name, index=placed.index, dtype="object")
        roofs += _median_roofs("memory", placed[col], names, placed.get(f"{level}_roof_src", names))
    return roofs


def compute_roofs(placed: pd.DataFrame) -> list[Roof]:
    """The compute roofs the engine held the launches to: one per precision and kind (engine's
    label, numbers aside) and source, the median of the launches' values. Where no launch has
    one (no FLOPs), the device's FP32 FMA peak, labelled as context."""
    roofs = _median_roofs("compute", placed["peak_flops_per_s"], placed["compute_roof"], placed["peak_flops_src"])
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
        if col not in placed:
            continue
        name = pd.Series(f"{p} FMA peak (context, no kernel held to it)", index=placed.index, dtype="object")
        src = placed[f"{col}_src"] if f"{col}_src" in placed else pd.Series("report", index=placed.index)
        found = _median_roofs("context", placed[col], name, src.fillna("report"))
        out += [r for r in found[:1] if all(abs(c.value - r.value) > 1e-3 * r.value for c in compute)]
    return out


def _fallback_fp32(placed: pd.DataFrame) -> list[Roof]:
    name = "fp32 FMA peak (context, no kernel has FLOPs)"
    found = _median_roofs("context", placed["peak_fp32_flops_per_s"],
                          pd.Series(name, index=placed.index, dtype="object"),
                          pd.Series("report", index=placed.index, dtype="object"))
    if found:
        return found[:1]
    from ncu_roof.model import devices

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
            out[-1] = Roof(prev.kind, f"{prev.name} = {roof.name}", prev.value, source, prev.low, prev.high,
                           prev.launches)
        else:
            out.append(roof)
    return out


# --- roofline panel geometry ---------------------------------------------------------------------
@dataclass(frozen=True)
class Look:
    """The size of a roofline panel and of its text: the default for chart files, a wider panel
    with larger text for the HTML report (:data:`REPORT_LOOK`)."""

    width: int = WIDTH
    height: int = HEIGHT
    font: int = 11


REPORT_LOOK = Look(width=1080, height=580, font=14)


@dataclass(frozen=True)
class Frame:
    """The visible domain of one panel (log axes), its size in pixels and its label font size."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    width: int = WIDTH
    height: int = HEIGHT
    font: int = 11

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


def _frame(points: pd.DataFrame, memory: list[Roof], compute: list[Roof], look: Look = Look()) -> Frame:
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
    return Frame(x_lo, x_hi, 10 ** math.floor(math.log10(y_lo)), y_hi, look.width, look.height, look.font)


def _roof_rows(frame: Frame, memory: list[Roof], compute: list[Roof]) -> list[dict[str, Any]]:
    """Two points per roof line; slopes run up to the top compute roof, flats from their ridge."""
    top = max([c.value for c in compute], default=frame.y_hi / 3.0)
    fastest = max([m.value for m in memory], default=math.nan)
    rows = []
    for m in memory:
        x0 = max(frame.x_lo, frame.y_lo / m.value)
        rows += [{"roof": m.label, "tip": m.tip, "kind": "memory", "value": m.value, "x": x, "y": m.value * x,
                  "order": i} for i, x in enumerate((x0, top / m.value))]
    for c in compute:
        x0 = max(c.value / fastest if _finite(fastest) else frame.x_lo, frame.x_lo)
        rows += [{"roof": c.label, "tip": c.tip, "kind": c.kind, "value": c.value, "x": x, "y": c.value,
                  "order": i} for i, x in enumerate((x0, frame.x_hi))]
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


# --- label placement: screen boxes, candidate spots and a placer that never overlaps -----------------
# Labels are placed in screen pixels of a Frame. Every label is a text row (data x/y + pixel dx/dy);
# a label away from its point carries a leader line. A label is drawn only where neither it nor its
# leader touches a point, another label or leader, or the plot's edge.
Box = tuple[float, float, float, float]
CHAR_W = 6.3  # px per character at 11px (bold a little wider)
DIRECTIONS = ((1.0, 0.0, "left", "middle"), (-1.0, 0.0, "right", "middle"), (0.7, -0.7, "left", "bottom"),
              (0.7, 0.7, "left", "top"), (0.0, -1.0, "center", "bottom"), (0.0, 1.0, "center", "top"),
              (-0.7, -0.7, "right", "bottom"), (-0.7, 0.7, "right", "top"))  # unit step, align, baseline
RINGS = 12  # distances tried around a point (the first without a leader line)


def _text(text: str, x: float, y: float, align: str, baseline: str, dx: float, dy: float,
          angle: float = 0.0, bold: bool = False, size: int = 11, color: str = "#333",
          leader: dict[str, float] | None = None) -> dict[str, Any]:
    return {"text": text, "x": x, "y": y, "align": align, "baseline": baseline, "dx": dx, "dy": dy,
            "angle": angle, "bold": bold, "size": size, "color": color, "leader": leader}


def _box(frame: Frame, row: dict[str, Any]) -> Box:
    """Screen rectangle of an unrotated text row."""
    px, py = frame.px(row["x"], row["y"])
    lines = str(row["text"]).split("\n")
    w = max(len(t) for t in lines) * CHAR_W * (1.1 if row["bold"] else 1.0) * row["size"] / 11
    h = (row["size"] + 2) * len(lines)
    left = {"left": px + row["dx"], "right": px + row["dx"] - w, "center": px + row["dx"] - w / 2}[row["align"]]
    top = {"bottom": py + row["dy"] - h, "top": py + row["dy"], "middle": py + row["dy"] - h / 2}[row["baseline"]]
    return (left, top, left + w, top + h)


def _segment_boxes(x0: float, y0: float, x1: float, y1: float, half: float = 1.5) -> list[Box]:
    """A screen segment as a chain of small squares."""
    n = max(2, int(math.hypot(x1 - x0, y1 - y0) / (2 * half)) + 1)
    return [(x0 + (x1 - x0) * t - half, y0 + (y1 - y0) * t - half, x0 + (x1 - x0) * t + half,
             y0 + (y1 - y0) * t + half) for t in np.linspace(0.0, 1.0, n)]


def _boxes(frame: Frame, row: dict[str, Any]) -> list[Box]:
    """Screen boxes of a text row and its leader; a rotated text as a chain of boxes along its baseline."""
    leader = row.get("leader")
    extra = _segment_boxes(*frame.px(leader["cx"], leader["cy"]), *frame.px(leader["x2"], leader["y2"])) \
        if leader else []
    if not row["angle"]:
        return [_box(frame, row)] + extra
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
    return out + extra


def _overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


class _Placer:
    """Greedy label placement: the first candidate inside the plot that touches nothing placed so far."""

    def __init__(self, frame: Frame, occupied: list[Box]) -> None:
        self.frame, self.boxes = frame, list(occupied)

    def _free(self, boxes: list[Box]) -> bool:
        w, h = self.frame.width, self.frame.height
        inside = all(b[0] >= 0 and b[1] >= 0 and b[2] <= w and b[3] <= h for b in boxes)
        return inside and not any(_overlap(b, o) > 0 for b in boxes for o in self.boxes)

    def place(self, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The first candidate that touches nothing (now taken), or None when every one would."""
        for row in candidates:
            boxes = _boxes(self.frame, row)
            if self._free(boxes):
                self.boxes += boxes
                return row
        return None


def _point_box(frame: Frame, x: float, y: float, size: float) -> Box:
    px, py = frame.px(x, y)
    r = math.sqrt(size) / 2 + 1
    return (px - r, py - r, px + r, py + r)


def _around(frame: Frame, text: str, x: float, y: float, r: float, **style: Any) -> list[dict[str, Any]]:
    """Spots for a label around a point of radius ``r`` px, nearest first: beside it, then further
    out on rings, each of those with a leader line from the point's edge to the text."""
    px, py = frame.px(x, y)
    step = frame.font + 5
    out = []
    for ring in range(RINGS):
        for ux, uy, align, baseline in DIRECTIONS:
            edge = (r + 1) * (1.42 if ux and uy else 1.0) + 2  # clear of the point's box, corners too
            d = edge + 1 + ring * step
            leader = None
            if ring:  # drawn from the point's edge; checked from just outside its box
                (lx, ly), (cx, cy), (ex, ey) = (frame.data(px + ux * t, py + uy * t) for t in (r, edge + 2, d - 2))
                leader = {"x": lx, "y": ly, "x2": ex, "y2": ey, "cx": cx, "cy": cy}
            out.append(_text(text, x, y, align, baseline, ux * d, uy * d, leader=leader, **style))
    return out


def _along_flat(frame: Frame, text: str, y: float, start: float, **style: Any) -> list[dict[str, Any]]:
    """Spots for a flat roof's label: above then below it, from its right end leftwards."""
    x0, _ = frame.px(start, y)
    spots = [("right", frame.x_hi, -4.0)] + [("center", frame.data(x0 + f * (frame.width - x0), 0)[0], 0.0)
                                            for f in (0.75, 0.5, 0.25)] + [("left", start, 8.0)]
    lift = frame.font + 2.0
    beside = [_text(text, start, y, "right", "middle", -10.0, 0.0, **style)]  # left of where the roof starts
    return [_text(text, x, y, align, baseline, dx, dy, **style)
            for baseline, dy in (("bottom", -4.0), ("top", 4.0)) for align, x, dx in spots] + beside + [
        _text(text, x, y, align, baseline, dx, dy, **style)
        for baseline, dy in (("bottom", -4.0 - lift), ("top", 4.0 + lift)) for align, x, dx in spots]


def _along_slope(frame: Frame, text: str, value: float, top: float, **style: Any) -> list[dict[str, Any]]:
    """Spots for a slope's label along its line, from the left end up, above then below it."""
    lo = max(frame.x_lo, frame.y_lo / value) * 1.3
    hi = min(frame.x_hi, top / value)
    if hi <= lo:
        return []
    spots = [lo * (hi / lo) ** f for f in np.linspace(0.02, 0.9, 12)]
    lift = frame.font + 2
    return [_text(text, x, value * x, "left", baseline, 0, dy, angle=frame.slope_angle, **style)
            for baseline, dy in (("bottom", -5), ("top", 5), ("bottom", -5 - lift), ("top", 5 + lift))
            for x in spots]


# --- the labels of a roofline panel ----------------------------------------------------------------
@dataclass
class PanelLabels:
    """What a panel writes: text rows (with leader lines) and lines for its subtitle (the key of
    the kernels numbered on the plot, the roofs whose label found no room)."""

    texts: list[dict[str, Any]]
    notes: list[str]


def _roof_label_rows(frame: Frame, memory: list[Roof], compute: list[Roof], placer: _Placer
                     ) -> tuple[list[dict[str, Any]], list[str]]:
    """One label per roof on its line (flat roofs above or below, slopes along them; without its
    source where the whole label finds no room), and the labels that found no free spot (for the
    subtitle)."""
    fastest = max([m.value for m in memory], default=math.nan)
    top = max([c.value for c in compute], default=frame.y_hi / 3.0)
    rows, missing = [], []
    for c in compute:
        start = max(c.value / fastest, frame.x_lo) if _finite(fastest) else frame.x_lo
        color = "#888" if c.kind == "context" else "#333"
        row = placer.place([spot for text in (c.label, c.short_label)
                            for spot in _along_flat(frame, text, c.value, start, color=color, size=frame.font)])
        rows.append(row) if row else missing.append(c.label)
    for m in memory:
        row = placer.place([spot for text in (m.label, m.short_label)
                            for spot in _along_slope(frame, text, m.value, top, size=frame.font)])
        rows.append(row) if row else missing.append(m.label)
    return rows, missing


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


def _kernel_text(group: pd.DataFrame, sep: str = "\n") -> str:
    """'name' over '22% of time, 30% of roof' (``sep`` between them); 'name + 2 more' for kernels on
    one spot; a region's extra bytes."""
    k, share = group.iloc[0], float(group["share"].clip(lower=0).sum())
    if k.get("is_region") is True and _finite(k["alg_bytes"]) and k["alg_bytes"] > 0:
        return f"{k['kernel']}: {k['dram_bytes'] / k['alg_bytes']:.1f}x the algorithmic bytes"
    name = truncate_name(k["kernel"], 28) + (f" + {len(group) - 1} more" if len(group) > 1 else "")
    roof = f", {fmt_pct(k['pct_of_roof'])} of roof" if _finite(k["pct_of_roof"]) and len(group) == 1 else ""
    return f"{name}{sep}{fmt_pct(share * 100)} of time{roof}"


def _anchor(k: pd.Series) -> tuple[float, float, float]:
    """(x, y, radius px) of the point a kernel's label stands beside: its DRAM point, else its first level."""
    x = next(k[f"intensity_{lv}"] for lv, _ in LEVELS if _finite(k[f"intensity_{lv}"]))
    return x, k["achieved"], math.sqrt(40 + 660 * max(float(k["share"]), 0)) / 2


def _kernel_label_rows(points: pd.DataFrame, frame: Frame, placer: _Placer
                       ) -> tuple[list[dict[str, Any]], list[str]]:
    """Every drawn kernel identified: the :data:`MAX_LABELS` with most time by name beside their
    point (a leader line where it must stand off), the others (and any name without room) by a
    number beside the point, listed in the key (subtitle lines). Kernels on one spot share a label."""
    rows: list[dict[str, Any]] = []
    key: list[str] = []
    groups = _colocated(points, frame)
    numbered = []
    for rank, group in enumerate(groups):
        x, y, r = _anchor(group.iloc[0])
        row = placer.place(_around(frame, _kernel_text(group), x, y, r, bold=True, size=frame.font)) \
            if rank < MAX_LABELS else None
        if row is not None:
            rows.append(row)
        else:
            numbered.append(group)
        if len(group) > 1:
            key.append(f"on one spot: {', '.join(truncate_name(n, 40) for n in group['kernel'])}")
    for n, group in enumerate(numbered, start=1):
        x, y, r = _anchor(group.iloc[0])
        row = placer.place(_around(frame, str(n), x, y, r, bold=True, size=frame.font))
        rows += [row] if row else []
        key.append(f"{n}: {_kernel_text(group, ': ')}" + ("" if row else " (no room for its number: see the tooltip)"))
    return rows, key


def _arrow_label_rows(ideal: list[dict[str, Any]], frame: Frame, placer: _Placer
                      ) -> tuple[list[dict[str, Any]], list[str]]:
    """'ideal 908 us → 4.55 ms, 5.0x bytes' beside each ideal → achieved arrow (its middle, else
    its ideal point, a leader line where it must stand off), and those without room."""
    rows, missing = [], []
    for r in ideal:
        (x0, y0), (x1, y1) = frame.px(r["x"], r["y"]), frame.px(r["x2"], r["y2"])
        mid = frame.data((x0 + x1) / 2, (y0 + y1) / 2)
        style: dict[str, Any] = {"bold": True, "color": ARROW_COLOR, "size": frame.font}
        row = placer.place(_around(frame, r["arrow_label"], *mid, 4.0, **style)
                           + _around(frame, r["arrow_label"], r["x"], r["y"], 6.0, **style))
        rows += [row] if row else []
        missing += [] if row else [f"{r['Kernel']}: {r['arrow_label']}"]
    return rows, missing


def _ridge_label_rows(ridges: list[dict[str, Any]], frame: Frame, placer: _Placer) -> list[dict[str, Any]]:
    rows = []
    for r in ridges:
        if r["label"]:
            row = placer.place([_text(r["label"], r["x"], r["y"], align, base, dx, dy, size=frame.font - 1,
                                      color="#555")
                                for align, base, dx, dy in (("left", "top", 5, 4), ("right", "bottom", -5, -4),
                                                            ("right", "top", -5, 4), ("left", "bottom", 5, -4))])
            rows += [row] if row else []
    return rows


def _occupied(frame: Frame, rows: list[dict[str, Any]], ideal: list[dict[str, Any]],
              ridges: list[dict[str, Any]]) -> list[Box]:
    """Screen boxes no label may touch: the points, the ideal points and arrows, the ridges."""
    boxes = [_point_box(frame, r["x"], r["y"], 40 + 660 * max(r["share"], 0)) for r in rows]
    boxes += [_point_box(frame, r["x"], r["y"], 130) for r in ideal]
    for r in ideal:  # the arrow's shaft and head
        boxes += _segment_boxes(*frame.px(r["sx"], r["sy"]), *frame.px(r["x2"], r["y2"]), half=3.0)
        boxes.append(_point_box(frame, r["x2"], r["y2"], 260))
    return boxes + [_point_box(frame, r["x"], r["y"], 60) for r in ridges]


def _labels(frame: Frame, memory: list[Roof], compute: list[Roof], ridges: list[dict[str, Any]],
            rows: list[dict[str, Any]], ideal: list[dict[str, Any]], placeable: pd.DataFrame) -> PanelLabels:
    """Every label of a panel, none touching a point or another label: kernels first (they must
    stand by their points), then the arrows, the roofs (anywhere along their line) and the ridge."""
    placer = _Placer(frame, _occupied(frame, rows, ideal, ridges))
    kernels, key = _kernel_label_rows(placeable, frame, placer)
    arrows, lost = _arrow_label_rows(ideal, frame, placer)
    roofs, missing = _roof_label_rows(frame, memory, compute, placer)
    notes = key + [f"arrow {t}" for t in lost] + ([f"roofs: {'; '.join(missing)}"] if missing else [])
    return PanelLabels(kernels + arrows + roofs + _ridge_label_rows(ridges, frame, placer), notes)


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
    """Leader lines, then one text layer per label (align, baseline and offsets are mark
    properties in Vega-Lite), each over a white halo."""
    import altair as alt

    leaders = [r["leader"] for r in rows if r.get("leader")]
    layers = [alt.Chart(alt.Data(values=leaders)).mark_rule(color="#555", strokeWidth=1).encode(
        x=x, y=y, x2="x2:Q", y2="y2:Q")] if leaders else []
    for r in rows:
        base = alt.Chart(alt.Data(values=[{"x": r["x"], "y": r["y"], "text": r["text"]}]))
        more = str(r["text"]).count("\n") * (r["size"] + 2)  # Vega sets further lines below the first
        shift = {"bottom": more, "middle": more / 2}.get(r["baseline"], 0.0)
        props = dict(align=r["align"], baseline=r["baseline"], dx=r["dx"], dy=r["dy"] - shift, lineHeight=r["size"] + 2,
                     angle=round((r["angle"] + 360) % 360, 3), fontSize=r["size"],
                     fontWeight="bold" if r["bold"] else "normal", clip=False, lineBreak="\n")
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
        tooltip=alt.Tooltip("tip:N", title="Roof"))
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


def _placeable(points: pd.DataFrame) -> pd.DataFrame:
    """The points a panel draws: the top :data:`MAX_KERNELS` with achieved FLOP/s and an intensity."""
    shown = points.head(MAX_KERNELS)
    if shown.empty:
        return shown
    levels_known = shown[[f"intensity_{lv}" for lv, _ in LEVELS]].apply(lambda c: c.map(_finite)).any(axis=1)
    return shown[shown["achieved"].map(_finite) & levels_known]


def _roofline_panel(device: str, placed: pd.DataFrame, points: pd.DataFrame, finding: str | None = None,
                    look: Look = Look()) -> Any:
    import altair as alt

    points, unknown = _panel_points(placed, points)
    placeable = _placeable(points)
    drawn = placed[placed["kernel"].astype(str).isin(set(placeable["kernel"].astype(str)))]
    roofs_of = drawn if len(drawn) else placed  # the roofs of the launches drawn, as the engine set them
    memory = memory_roofs(roofs_of) or memory_roofs(placed)
    compute = compute_roofs(roofs_of)
    compute = sorted(compute + context_roofs(placed, compute), key=lambda r: -r.value)
    frame = _frame(placeable, memory, compute, look)
    x, y = _axes(frame)
    main_peak = _weighted_mode(roofs_of["peak_flops_per_s"], roofs_of["time_s"])[0]
    ridges = _ridge_rows(memory, compute, main_peak)
    rows, ideal = _point_rows(placeable), _ideal_rows(placeable, frame)
    layers = _roof_layers(frame, memory, compute, ridges, x, y) if memory or compute else []
    layers += _kernel_layers(rows, ideal, frame) if rows else []
    labels = _labels(frame, memory, compute, ridges, rows, ideal, placeable)
    layers += _text_layers(labels.texts, x, y)
    subtitle = _panel_subtitle(points, placeable) + labels.notes
    if unknown:
        subtitle.append(f"{' and '.join(unknown)} roof{'s' if len(unknown) > 1 else ''} unknown for this device: "
                        f"no {'/'.join(unknown)} points drawn")
    if finding:
        subtitle.insert(0, finding)
    if not layers:
        layers = [alt.Chart(alt.Data(values=[{"x": 1.0, "y": 1.0}])).mark_point(opacity=0).encode(x=x, y=y)]
    return alt.layer(*layers).properties(
        width=frame.width, height=frame.height,
        title=alt.TitleParams(f"Roofline: {device}", subtitle=_wrap(subtitle, frame), anchor="start"))


def _wrap(lines: list[str], frame: Frame) -> list[str]:
    """Subtitle lines wrapped to the panel's width (Vega never wraps a title)."""
    import textwrap

    width = max(40, int(frame.width / (CHAR_W * frame.font / 11)))
    return [part for line in lines for part in textwrap.wrap(line, width, subsequent_indent="  ") or [""]]


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


def _panel_devices(groups: list[tuple[str, pd.DataFrame]], points: pd.DataFrame
                   ) -> tuple[list[tuple[str, pd.DataFrame, pd.DataFrame]], list[str]]:
    """(device, launches, points) of each device with a point to draw, and the devices without
    one (no panel for them; all of them when no device has a point, so the chart says why)."""
    with_points: list[tuple[str, pd.DataFrame, pd.DataFrame]] = []
    empty: list[tuple[str, pd.DataFrame, pd.DataFrame]] = []
    for device, group in groups:
        mine = points[points["device"].astype(str).isin([device, "nan", "None"])] if len(points) else points
        mine = mine.reset_index(drop=True)
        has = len(mine) > 0 and not _placeable(_panel_points(group, mine)[0]).empty
        (with_points if has else empty).append((device, group, mine))
    if not with_points:
        return empty, []
    return with_points, [device for device, _, _ in empty]


def roofline_chart(d: Diagnosis, look: Look = Look()) -> alt.TopLevelMixin:
    """The roofline of a diagnosis: one panel per device with a point to draw, kernels placed at
    each memory level; ``look`` sets the panel size and text (wider for the HTML report)."""
    import altair as alt

    points = kernel_points(d.placed, share_per_device=True)
    regions = region_points(d)
    if len(regions):
        points = pd.concat([regions, points], ignore_index=True)
    top = _top_finding(d)
    shown, empty = _panel_devices(_device_groups(d.placed), points)
    home = next((dev for dev, g, _ in shown if top and top[1] & set(g["kernel"].astype(str))),
                shown[0][0] if shown else None)
    panels = []
    for i, (device, group, mine) in enumerate(shown):
        finding = top[0] if top and device == home else None
        panel = _roofline_panel(device, group, mine, finding, look)
        if i == 0 and empty:
            note = (f"no roofline for {', '.join(short_device_name(e) for e in empty)}: no kernel there has "
                    "FLOPs (> 0) and bytes (see the time share)")
            lines = [*panel.title.subtitle, *_wrap([note], Frame(1, 10, 1, 10, look.width, look.height, look.font))]
            panel = panel.properties(title=alt.TitleParams(panel.title.text, anchor="start", subtitle=lines))
        panels.append(panel)
    if not panels:
        return alt.Chart(alt.Data(values=[{"t": "no launches"}])).mark_text().encode(text="t:N")
    chart = panels[0] if len(panels) == 1 else alt.vconcat(*panels).resolve_scale(
        color="independent", shape="independent", size="independent")
    return _configure(chart, look.font)


def _configure(chart: Any, font: int = 11) -> Any:
    return chart.configure_axis(labelFontSize=font, titleFontSize=font + 1, gridColor="#e6e6e6").configure_legend(
        labelFontSize=font, titleFontSize=font, symbolStrokeWidth=1).configure_title(
        fontSize=font + 3, subtitleFontSize=font, subtitleColor="#444").configure_view(stroke="#bbb")


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
    from ncu_roof.model.roofline import Thresholds

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


def _main_chart(d: Diagnosis, look: Look = Look()) -> tuple[str, Any]:
    """The roofline, or the speed-of-light view where no kernel can be placed on a roofline."""
    if placeable_kernels(d) == 0:
        sol = sol_chart(d)
        if sol is not None:
            return "Speed of light", sol
    return "Roofline", roofline_chart(d, look)


def all_charts(d: Diagnosis, look: Look = Look()) -> list[tuple[str, Any]]:
    """The charts of a report page, in order, with a heading each (those with something to show);
    ``look`` sizes the roofline."""
    charts = [_main_chart(d, look), ("Time share", time_share_chart(d)),
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


def check_chart_path(path: str | Path, force: bool = False) -> Path:
    """Raise the one-line InputError that saving a chart at ``path`` would raise, before any work:
    a suffix other than .html/.json/.png/.svg, an existing file without ``force``, no folder, or
    .html/.png/.svg without vl-convert-python (it supplies the inlined Vega and the renderer)."""
    path = Path(path)
    check_writable(path, force, CHART_SUFFIXES, "chart", "--chart")
    if path.suffix.lower() != ".json":
        _vl_convert(f"saving {path.suffix.lower()}")
    return path


def save_chart(chart: Any, path: str | Path, force: bool = False) -> Path:
    """Save a chart by suffix: .html (self-contained, works offline), .json (the Vega-Lite spec),
    .png or .svg; never overwrite without ``force``. ``chart`` is an Altair chart, a Vega-Lite
    spec, or a Diagnosis (its main chart: the roofline, or speed of light where nothing can be
    placed). The one save path of every chart the tool writes."""
    path = check_chart_path(path, force)
    if hasattr(chart, "placed"):
        chart = _main_chart(chart)[1]
    spec = chart if isinstance(chart, dict) else chart_spec(chart)
    suffix = path.suffix.lower()
    if suffix == ".json":
        data: str | bytes = json.dumps(spec, indent=2, allow_nan=False, default=_json_default) + "\n"
    elif suffix == ".html":
        data = chart_html(spec, _title_text(spec))
    elif suffix == ".png":
        data = _vl_convert("PNG export").vegalite_to_png(spec, scale=2)
    else:
        data = _vl_convert("SVG export").vegalite_to_svg(spec)
    return write_atomic(path, data)


def _title_text(spec: dict[str, Any]) -> str:
    """The page title of a chart: its own title, else the roofline's."""
    title = spec.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    return str(text) if isinstance(text, str) and text else "ncu-roof roofline"
