"""Roofs and panel geometry: the placed table in, the roofs to draw and a panel's frame out.

:class:`Roof` is one memory or compute ceiling (merged across launches whose clocks differ a
little); :class:`Frame` maps data to screen pixels (log axes, the panel's extent, its ridges).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ncu_roof.render.charts.points import HEIGHT, LEVELS, WIDTH, _finite, finite_mask
from ncu_roof.render.summary import fmt_si

if TYPE_CHECKING:
    pass


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
    """The source in words for a label: a metric formula (the report's peak per cycle x its clock)
    reads 'report'; the whole formula stays in the tooltip."""
    text = str(source).replace(" (practical, not measured)", ", practical")
    if "__" in text:
        text = "report" + (", practical" if "practical" in text else "")
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
    numbers = pd.to_numeric(values, errors="coerce")
    keep = finite_mask(numbers)
    frame = pd.DataFrame({"value": numbers[keep].astype("float64"), "name": _as_text(names[keep]),
                          "source": _as_text(sources[keep])})
    patterns = {name: _name_pattern(name) for name in frame["name"].unique()}
    frame["pattern"] = frame["name"].map(patterns)
    roofs: list[tuple[int, Roof]] = []
    for (_, source), group in frame.groupby(["pattern", "source"], sort=False):
        group = group.sort_values("value", kind="stable")
        vals, group_names = group["value"].to_numpy(), group["name"].to_numpy()
        distinct = np.unique(vals)
        starts = _cluster_starts(distinct)[np.searchsorted(distinct, vals)]
        for start in dict.fromkeys(starts.tolist()):
            part = starts == start
            mine = vals[part]
            roofs.append((len(mine), Roof(kind, _merged_name(list(group_names[part])), float(np.median(mine)),
                                          str(source), float(mine.min()), float(mine.max()), len(mine))))
    return [r for _, r in sorted(roofs, key=lambda t: -t[0])]


def _as_text(column: pd.Series) -> pd.Series:
    """Names or sources as text, '?' where missing."""
    column = column.astype("object")
    return column.where(column.notna(), "?").astype(str)


def _cluster_starts(distinct: np.ndarray) -> np.ndarray:
    """For each of some sorted distinct values, the first value of its cluster: a cluster starts at
    the first value more than :data:`ROOF_SPREAD` above the start of the one before."""
    starts = np.empty_like(distinct)
    start = distinct[0] if len(distinct) else 0.0
    for i, v in enumerate(distinct.tolist()):
        if v > start * (1 + ROOF_SPREAD):
            start = v
        starts[i] = start
    return starts


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
    (e.g. the FP64 FMA peak above an 'fp64 mixed' roof), labelled as context: no launch is held to it;
    and of each precision a launch has FLOPs in but none is held to (the FP32 FLOPs of a kernel the
    FP64 roof binds): one roof per precision used."""
    out = []
    for p in ("fp64", "fp32", "fp16"):
        mine = [r for r in compute if r.name.startswith(p)]
        if any(r.name.endswith(f"{p} FMA") or f"{p} FMA =" in r.name for r in mine):
            continue
        used = f"flops_{p}" in placed and bool((placed[f"flops_{p}"] > 0).any())
        col = f"peak_{p}_flops_per_s"
        if col not in placed or not (mine or used):
            continue
        why = "context, no kernel held to it" if mine else f"context: {p.upper()} FLOPs here, not binding"
        name = pd.Series(f"{p} FMA peak ({why})", index=placed.index, dtype="object")
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
