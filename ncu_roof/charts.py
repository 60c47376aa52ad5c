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
from ncu_roof.files import check_writable
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
_FMA = {"fp64": ("dfma", "dadd", "dmul", 2.0), "fp32": ("ffma", "fadd", "fmul", 2.0),
        "fp16": ("hfma", "hadd", "hmul", 4.0)}
PNG_HINT = "pip install 'ncu-roof[png]'"
_GENERIC = {"kernel", "kernel2", "device_kernel", "global_kernel"}


# --- names and numbers --------------------------------------------------------------------------
def _strip_brackets(text: str, open_: str, close: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def short_kernel_name(name: object, width: int = 36) -> str:
    """A readable kernel name: no return type, template arguments, parameter list or namespace."""
    text = str(name).strip().replace("(anonymous namespace)::", "")
    head = text.split("(", 1)[0] if "(" in text and not text.startswith("(") else text
    core = _strip_brackets(head, "<", ">").strip()
    core = core.split()[-1] if core.split() else core  # drop 'void' and other return types
    core = core.rsplit("::", 1)[-1] or core
    if core.lower() in _GENERIC and "<" in head:  # cutlass::Kernel<gemm_name>: the argument is the name
        arg = re.split(r"[<>,\s]+", head.split("<", 1)[1].strip())[0].rsplit("::", 1)[-1]
        core = f"{core}<{arg}>" if arg else core
    core = core or text
    return core if len(core) <= width else core[: width - 1] + "…"


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
    out["short"] = out["kernel"].map(short_kernel_name)
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

    kind: str  # "memory" or "compute"
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


def memory_roofs(placed: pd.DataFrame) -> list[Roof]:
    """DRAM (practical), L2 and L1 roofs where known, as the engine placed the launches."""
    roofs = []
    for level, name in LEVELS:
        col = f"{level}_roof_bytes_per_s"
        value, src = _weighted_mode(placed[col], placed["time_s"], placed[f"{level}_roof_src"])
        if _finite(value):
            roofs.append(Roof("memory", name, value, src or "?"))
    return roofs


def _fma_share(placed: pd.DataFrame, precision: str) -> pd.Series:
    fma, add, mul, weight = _FMA[precision]
    inst = placed[f"inst_{fma}"] + placed[f"inst_{add}"] + placed[f"inst_{mul}"]
    return (placed[f"flops_{precision}"] / (weight * inst.where(inst > 0))).clip(upper=1.0).fillna(1.0)


def _fma_peak(placed: pd.DataFrame, precision: str) -> tuple[float, str | None, bool]:
    """FMA peak of a CUDA-core precision, its source, and whether launches run below FMA rate."""
    mine = placed[placed["compute_precision"] == precision]
    share = _fma_share(mine, precision) if len(mine) else pd.Series(dtype="float64")
    pure = mine[share >= 0.999]
    value, src = _weighted_mode(pure["peak_flops_per_s"], pure["time_s"], pure["peak_flops_src"])
    if not _finite(value) and len(mine):
        value, src = _weighted_mode(mine["peak_flops_per_s"] / share, mine["time_s"], mine["peak_flops_src"])
    if not _finite(value):
        value, _ = _weighted_mode(placed[f"peak_{precision}_flops_per_s"], placed["time_s"])
        src = "report"
    slow = bool((share < 0.95).any()) if len(mine) else False
    return value, src, slow


def compute_roofs(placed: pd.DataFrame) -> list[Roof]:
    """One flat roof per precision and pipe with FLOPs in the data (no-FMA where launches need it)."""
    roofs = []
    for p in ("fp64", "fp32", "fp16"):
        if not (placed[f"flops_{p}"].fillna(0) > 0).any():
            continue
        value, src, slow = _fma_peak(placed, p)
        if not _finite(value):
            continue
        roofs.append(Roof("compute", f"{p.upper()} FMA", value, src or "?"))
        if slow and p != "fp16":
            roofs.append(Roof("compute", f"{p.upper()} no-FMA", value / 2.0, src or "?"))
    if not roofs:  # no FLOPs in the data: still show the FP32 roof the kernels would be held to
        roofs += _fallback_fp32(placed)
    tensor = placed[placed["compute_precision"] == "tensor"]
    for dtype, group in tensor.groupby(tensor["tensor_precision"].fillna("fp16").astype(str)):
        value, src = _weighted_mode(group["peak_flops_per_s"], group["time_s"], group["peak_flops_src"])
        if _finite(value):
            roofs.append(Roof("compute", f"Tensor {dtype.upper()}", value, src or "?"))
    return _merge_equal(sorted(roofs, key=lambda r: -r.value))


def _fallback_fp32(placed: pd.DataFrame) -> list[Roof]:
    value, _ = _weighted_mode(placed["peak_fp32_flops_per_s"], placed["time_s"])
    if _finite(value):
        return [Roof("compute", "FP32 FMA", value, "report")]
    from ncu_roof import devices

    names = placed["device"].dropna().astype(str)
    spec = devices.lookup(names.iloc[0]) if len(names) else None
    spec_value: float | None = getattr(spec, "fp32_flops_per_s", None) if spec is not None else None
    if spec_value is None or not _finite(spec_value):
        return []
    return [Roof("compute", "FP32 FMA", float(spec_value), "device table")]


def _merge_equal(roofs: list[Roof]) -> list[Roof]:
    """Roofs within 1% of each other drawn once (e.g. V100 FP64 FMA = FP32 no-FMA)."""
    out: list[Roof] = []
    for roof in roofs:
        if out and abs(out[-1].value - roof.value) <= 0.01 * out[-1].value:
            prev = out[-1]
            source = prev.source if prev.source == roof.source else f"{prev.source}; {roof.source}"
            out[-1] = Roof("compute", f"{prev.name} = {roof.name}", prev.value, source)
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
        rows += [{"roof": c.label, "kind": "compute", "value": c.value, "x": max(x0, frame.x_lo), "y": c.value,
                  "order": 0},
                 {"roof": c.label, "kind": "compute", "value": c.value, "x": frame.x_hi, "y": c.value, "order": 1}]
    return rows


def _slope_label_rows(frame: Frame, memory: list[Roof], placer: _Placer) -> list[dict[str, Any]]:
    """Slope labels along their line, near the left end where nothing is in the way."""
    rows = []
    top = frame.y_hi / 3.0
    for m in memory:
        lo = max(frame.x_lo, frame.y_lo / m.value) * 1.3
        hi = min(frame.x_hi, top / m.value)
        if hi <= lo:
            continue
        spots = [lo * (hi / lo) ** f for f in (0.02, 0.12, 0.25, 0.4, 0.55)]
        candidates = [_text(m.label, x, m.value * x, "left", "bottom", 0, -5, angle=frame.slope_angle) for x in spots]
        rows.append(placer.place(candidates + [{**c, "baseline": "top", "dy": 5} for c in candidates]))
    return rows


def _ridge_rows(memory: list[Roof], compute: list[Roof], main_peak: float) -> list[dict[str, Any]]:
    """DRAM ridge points (where its slope meets each compute roof); the main one gets a label."""
    dram = next((m for m in memory if m.name == "DRAM"), None)
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


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and a[2] > b[0] and a[1] < b[3] and a[3] > b[1]


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
    for c in compute:
        start = max(c.value / fastest, frame.x_lo) if _finite(fastest) else frame.x_lo
        rows.append(placer.place([
            _text(c.label, frame.x_hi, c.value, "right", "bottom", -4, -4),
            _text(c.label, frame.x_hi, c.value, "right", "top", -4, 4),
            _text(c.label, start, c.value, "left", "bottom", 8, -4),
            _text(c.label, start, c.value, "left", "top", 8, 4),
        ]))
    return rows


def _kernel_label_rows(points: pd.DataFrame, frame: Frame, placer: _Placer) -> list[dict[str, Any]]:
    """Names of the kernels with the most time beside their points; past the first few, only
    where they hit nothing (the tooltip still names every point)."""
    rows = []
    for rank, (_, k) in enumerate(points.head(MAX_LABELS).iterrows()):
        xs = [k[f"intensity_{lvl}"] for lvl, _ in LEVELS if _finite(k[f"intensity_{lvl}"])]
        if not xs or not _finite(k["achieved"]):
            continue
        y, r = k["achieved"], math.sqrt(40 + 660 * max(k["share"], 0)) / 2 + 4
        roof = f", {fmt_pct(k['pct_of_roof'])} of roof" if _finite(k["pct_of_roof"]) else ""
        text = f"{short_kernel_name(k['kernel'], 28)} ({fmt_pct(k['share'] * 100)} of time{roof})"
        if k.get("is_region") is True and _finite(k["alg_bytes"]) and k["alg_bytes"] > 0:
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
    """Algorithmic point (ideal intensity, its attainable FLOP/s) and the way to the achieved one."""
    rows = []
    for _, k in points.iterrows():
        xi, peak, beta = k["alg_intensity"], k["peak"], k["dram_roof"]
        if not (_finite(xi) and _finite(k["achieved"]) and _finite(k["intensity_dram"])):
            continue
        yi = min(v for v in (peak, xi * beta) if _finite(v)) if (_finite(peak) or _finite(beta)) else math.nan
        if not _finite(yi):
            continue
        (x0, y0), (x1, y1) = frame.px(xi, yi), frame.px(k["intensity_dram"], k["achieved"])
        rows.append({"x": float(xi), "y": float(yi), "x2": float(k["intensity_dram"]), "y2": float(k["achieved"]),
                     "angle": math.degrees(math.atan2(x1 - x0, y0 - y1)), "bound": k["bound"],
                     "level": "ideal (algorithmic)", "Intensity": f"{xi:.3g} FLOP/byte (algorithmic)",
                     "Ideal": fmt_si(yi, "FLOP/s"), "Extra bytes": f"{k['dram_bytes'] / k['alg_bytes']:.2g}x"
                     if _finite(k["alg_bytes"]) else "?", **_tooltip_fields(k)})
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
        color="#444", strokeWidth=1.6, clip=True).encode(
        x=x, y=y, detail="roof:N", order="order:Q",
        strokeDash=alt.condition("datum.kind == 'memory'", alt.value([6, 3]), alt.value([1, 0])),
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
        layers += [
            ib.mark_rule(strokeDash=[4, 3], strokeWidth=1.4, clip=True).encode(
                x=x, y=y, x2="x2:Q", y2="y2:Q", color=color),
            ib.mark_point(shape="diamond", filled=False, size=110, strokeWidth=2, clip=True).encode(
                x=x, y=y, color=color, shape=shape,
                tooltip=[alt.Tooltip(f"{t}:N") for t in ("Kernel", "Intensity", "Ideal", "Extra bytes", "Achieved")]),
            ib.mark_point(shape="wedge", filled=True, size=90, clip=True).encode(
                x=_axes(frame, "x2", "y2")[0], y=_axes(frame, "x2", "y2")[1],
                color=color, angle=alt.Angle("angle:Q", scale=None)),
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
    occupied += [_point_box(frame, r["x"], r["y"], 110) for r in ideal]
    occupied += [_point_box(frame, r["x"], r["y"], 60) for r in ridges]
    placer = _Placer(frame, occupied)
    ridge_labels = [placer.place([_text(r["label"], r["x"], r["y"], align, base, dx, dy, size=10, color="#555")
                                  for align, base, dx, dy in (("left", "top", 5, 4), ("right", "bottom", -5, -4),
                                                              ("right", "top", -5, 4), ("left", "bottom", 5, -4))])
                    for r in ridges if r["label"]]
    slopes = _slope_label_rows(frame, memory, placer)
    return (slopes + ridge_labels + _compute_label_rows(frame, compute, memory, placer)
            + _kernel_label_rows(placeable, frame, placer))


def _roofline_panel(device: str, placed: pd.DataFrame, points: pd.DataFrame) -> Any:
    import altair as alt

    memory, compute = memory_roofs(placed), compute_roofs(placed)
    shown = points.head(MAX_KERNELS)
    levels_known = shown[[f"intensity_{lv}" for lv, _ in LEVELS]].apply(lambda c: c.map(_finite)).any(axis=1)
    placeable = shown[shown["achieved"].map(_finite) & levels_known]
    frame = _frame(placeable, memory, compute)
    x, y = _axes(frame)
    main_peak = _weighted_mode(placed["peak_flops_per_s"], placed["time_s"])[0]
    ridges = _ridge_rows(memory, compute, main_peak)
    rows, ideal = _point_rows(placeable), _ideal_rows(placeable, frame)
    layers = _roof_layers(frame, memory, compute, ridges, x, y) if memory or compute else []
    layers += _kernel_layers(rows, ideal, frame) if rows else []
    layers += _text_layers(_labels(frame, memory, compute, ridges, rows, ideal, placeable), x, y)
    subtitle = _panel_subtitle(points, placeable)
    if not layers:
        layers = [alt.Chart(alt.Data(values=[{"x": 1.0, "y": 1.0}])).mark_point(opacity=0).encode(x=x, y=y)]
    return alt.layer(*layers).properties(
        width=frame.width, height=frame.height,
        title=alt.TitleParams(f"Roofline: {device}", subtitle=subtitle, anchor="start"))


def roofline_chart(d: Diagnosis) -> alt.TopLevelMixin:
    """The roofline of a diagnosis: one panel per device, kernels placed at each memory level."""
    import altair as alt

    points = kernel_points(d.placed, share_per_device=True)
    regions = region_points(d)
    if len(regions):
        points = pd.concat([regions, points], ignore_index=True)
    panels = []
    for device, group in d.placed.groupby(d.placed["device"].fillna("unknown device").astype(str), sort=False):
        mine = points[points["device"].astype(str).isin([device, "nan", "None"])] if len(points) else points
        panels.append(_roofline_panel(device, group, mine.reset_index(drop=True)))
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
def time_share_chart(d: Diagnosis) -> alt.TopLevelMixin:
    """Time per kernel (most first, the rest as 'other'), coloured by the bound that holds the time."""
    import altair as alt

    points = kernel_points(d.placed)
    several = points["device"].nunique() > 1 if len(points) else False
    rows = []
    for _, k in points.head(MAX_BARS).iterrows():
        name = k["short"] + (f" · {short_device_name(k['device'])}" if several else "")
        rows.append({"name": name, "time_ms": k["time_s"] * 1e3, "bound": k["bound"],
                     "share": f"{fmt_pct(k['share'] * 100)} · {_plural(int(k['launches']), 'launch')}"
                     .replace("launchs", "launches"), **_tooltip_fields(k)})
    rest = points.iloc[MAX_BARS:]
    if len(rest):
        share = rest["share"].sum()
        rows.append({"name": f"other ({len(rest)} kernels)", "time_ms": rest["time_s"].sum() * 1e3,
                     "bound": "unknown", "share": fmt_pct(share * 100), "Kernel": f"{len(rest)} more kernels",
                     "Time": fmt_seconds(rest["time_s"].sum()), "Share of time": fmt_pct(share * 100)})
    order = [r["name"] for r in rows]
    base = alt.Chart(alt.Data(values=rows)).encode(
        y=alt.Y("name:N", sort=order, title=None, axis=alt.Axis(labelLimit=320)),
        x=alt.X("time_ms:Q", title="GPU time (ms)", axis=alt.Axis(tickCount=6),
                scale=alt.Scale(domain=[0, max([r["time_ms"] for r in rows], default=1.0) * 1.25])))
    bars = base.mark_bar().encode(color=_bound_color([r["bound"] for r in rows] or ["unknown"]),
                                  tooltip=[alt.Tooltip(f"{t}:N") for t in
                                           ("Kernel", "Time", "Share of time", "Bound", "% of roof")])
    text = base.mark_text(align="left", dx=4, fontSize=11).encode(text="share:N")
    return _configure((bars + text).properties(
        width=WIDTH - 200, height=max(60, 22 * len(rows)),
        title=alt.TitleParams("Where the time goes", subtitle="GPU time per kernel, coloured by bound",
                              anchor="start")))


def extra_bytes_chart(d: Diagnosis) -> alt.TopLevelMixin | None:
    """Measured DRAM bytes over algorithmic bytes per region (1x is ideal); None without regions."""
    import altair as alt

    regions = d.regions
    if regions is None or regions.empty or "extra_bytes_factor" not in regions:
        return None
    known = regions[regions["extra_bytes_factor"].map(_finite)]
    if known.empty:
        return None
    rows: list[dict[str, Any]] = [{"region": short_kernel_name(r["name"], 40), "factor": float(r["extra_bytes_factor"]),
             "Region": str(r["name"]), "Extra bytes": f"{r['extra_bytes_factor']:.3g}x",
             "Time": fmt_seconds(r.get("time_s")), "Time at stake": fmt_seconds(r.get("time_at_stake_s")),
             "label": f"{r['extra_bytes_factor']:.2g}x", "one": 1.0} for _, r in known.iterrows()]
    rows.sort(key=lambda r: -r["factor"])
    hi = max(10.0, max(r["factor"] for r in rows) * 2)
    base = alt.Chart(alt.Data(values=rows)).encode(
        y=alt.Y("region:N", sort=[r["region"] for r in rows], title=None, axis=alt.Axis(labelLimit=320)),
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
    rows = [{"kernel": short_kernel_name(r["kernel"], 30), "Kernel": str(r["kernel"]),
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
    color = alt.Color("kernel:N", title="Kernel")
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


def all_charts(d: Diagnosis) -> list[tuple[str, Any]]:
    """The charts of a report page, in order, with a heading each (those with something to show)."""
    charts = [("Roofline", roofline_chart(d)), ("Time share", time_share_chart(d)),
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
    spec = chart_spec(roofline_chart(d))
    if suffix == ".json":
        path.write_text(json.dumps(spec, indent=2, allow_nan=False, default=_json_default) + "\n", encoding="utf-8")
    elif suffix == ".html":
        path.write_text(chart_html(spec), encoding="utf-8")
    elif suffix == ".png":
        path.write_bytes(_vl_convert("PNG export").vegalite_to_png(spec, scale=2))
    else:
        path.write_text(_vl_convert("SVG export").vegalite_to_svg(spec), encoding="utf-8")
    return path
