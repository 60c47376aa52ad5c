"""Label placement: a panel's frame, roofs and points in, text rows that never overlap out.

Every label (roof names, kernel names, ridge points, the ideal -> achieved arrows) is a screen
box; :class:`_Placer` tries candidate spots around its anchor, ring by ring, and takes the first
that overlaps nothing already placed (a leader line when it had to move away).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ncu_roof.render.charts.points import ARROW_COLOR, LEVELS, MAX_LABELS, _finite, truncate_name
from ncu_roof.render.charts.roofs import Frame, Roof
from ncu_roof.render.summary import fmt_pct

if TYPE_CHECKING:
    pass


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

    def _free(self, boxes: list[Box], avoid: np.ndarray | None = None) -> bool:
        w, h = self.frame.width, self.frame.height
        if not all(b[0] >= 0 and b[1] >= 0 and b[2] <= w and b[3] <= h for b in boxes):
            return False
        taken = np.asarray(self.boxes, dtype="float64").reshape(-1, 4)
        if avoid is not None:
            taken = np.concatenate([taken, avoid])
        if not len(taken):
            return True
        mine = np.asarray(boxes, dtype="float64")[:, None, :]
        across = np.minimum(mine[..., 2], taken[:, 2]) - np.maximum(mine[..., 0], taken[:, 0])
        down = np.minimum(mine[..., 3], taken[:, 3]) - np.maximum(mine[..., 1], taken[:, 1])
        return not bool(((across > 0) & (down > 0)).any())

    def place(self, candidates: list[dict[str, Any]], avoid: list[Box] | None = None) -> dict[str, Any] | None:
        """The first candidate that touches nothing (now taken) nor any of ``avoid`` (lines a label
        may not cross, not taken), or None when every one would."""
        lines = np.asarray(avoid, dtype="float64").reshape(-1, 4) if avoid else None
        for row in candidates:
            boxes = _boxes(self.frame, row)
            if self._free(boxes, lines):
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


def _flat_tiers(frame: Frame, text: str, y: float, start: float, **style: Any
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Spots for a flat roof's label in three tiers: right against its line (above, then below),
    from its right end leftwards; left of where the roof starts; a text row further off the line."""
    x0, _ = frame.px(start, y)
    spots = [("right", frame.x_hi, -4.0)] + [("center", frame.data(x0 + f * (frame.width - x0), 0)[0], 0.0)
                                            for f in (0.75, 0.5, 0.25)] + [("left", start, 8.0)]
    lift = frame.font + 2.0
    near = [_text(text, x, y, align, baseline, dx, dy, **style)
            for baseline, dy in (("bottom", -4.0), ("top", 4.0)) for align, x, dx in spots]
    beside = [_text(text, start, y, "right", "middle", -10.0, 0.0, **style)]  # left of where the roof starts
    lifted = [_text(text, x, y, align, baseline, dx, dy, **style)
              for baseline, dy in (("bottom", -4.0 - lift), ("top", 4.0 + lift)) for align, x, dx in spots]
    return near, beside, lifted


def _along_flat(frame: Frame, text: str, y: float, start: float, **style: Any) -> list[dict[str, Any]]:
    """Spots for a flat roof's label: above then below it, from its right end leftwards."""
    near, beside, lifted = _flat_tiers(frame, text, y, start, **style)
    return near + beside + lifted


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


def roof_line_boxes(frame: Frame, memory: list[Roof], compute: list[Roof]) -> list[Box]:
    """Screen boxes of every roof line as drawn (:func:`.roofs._roof_rows`: slopes from the plot's
    foot up to the top compute roof, flat roofs from their DRAM ridge to the right edge), 1 px
    either side of the line: what no roof label may cross (lines 3 px apart, as the H100's two
    DRAM slopes or the RTX 4070 Ti's fp32 mixed and no-FMA roofs, used to run through each
    other's labels)."""
    fastest = max([m.value for m in memory], default=math.nan)
    top = max([c.value for c in compute], default=frame.y_hi / 3.0)
    boxes: list[Box] = []
    for m in memory:
        x0 = max(frame.x_lo, frame.y_lo / m.value)
        boxes += _segment_boxes(*frame.px(x0, m.value * x0), *frame.px(top / m.value, top), half=1.0)
    for c in compute:
        x0 = max(c.value / fastest if _finite(fastest) else frame.x_lo, frame.x_lo)
        (left, y), right = frame.px(x0, c.value), frame.width
        boxes.append((left, y - 1.0, right, y + 1.0))
    return boxes


def _across_a_roof(frame: Frame, row: dict[str, Any], line_y: float, others: list[tuple[float, float]]) -> bool:
    """Whether a flat roof's label set a row off its line (at ``line_y`` px) has another flat roof
    (start px, y px) between it and its line: it would read as that roof's label."""
    left, top, right, bottom = _box(frame, row)
    lo, hi = (bottom, line_y) if bottom <= line_y else (line_y, top)
    return any(lo < y < hi and x0 < right for x0, y in others)


def _roof_label_rows(frame: Frame, memory: list[Roof], compute: list[Roof], placer: _Placer
                     ) -> tuple[list[dict[str, Any]], list[str]]:
    """One label per roof beside its line (flat roofs above or below, slopes along them; without
    its source where the whole label finds no room), crossed by no roof line (its own or a
    neighbour's), and the labels that found no free spot (for the subtitle)."""
    fastest = max([m.value for m in memory], default=math.nan)
    top = max([c.value for c in compute], default=frame.y_hi / 3.0)
    lines = roof_line_boxes(frame, memory, compute)
    rows, missing = [], []
    starts = [max(c.value / fastest, frame.x_lo) if _finite(fastest) else frame.x_lo for c in compute]
    flats = [(frame.px(x0, c.value)[0], frame.px(x0, c.value)[1]) for x0, c in zip(starts, compute, strict=True)]
    for i, (c, start) in enumerate(zip(compute, starts, strict=True)):
        style: dict[str, Any] = {"color": "#888" if c.kind == "context" else "#333", "size": frame.font}
        tiers = [_flat_tiers(frame, text, c.value, start, **style) for text in (c.label, c.short_label)]
        above_left = [_text(text, start, c.value, "right", "bottom", -10.0, -4.0, **style)
                      for text in (c.label, c.short_label)]
        others = flats[:i] + flats[i + 1:]
        candidates = ([spot for near, _, _ in tiers for spot in near] + above_left
                      + [spot for _, beside, _ in tiers for spot in beside]
                      + [spot for _, _, lifted in tiers for spot in lifted
                         if not _across_a_roof(frame, spot, flats[i][1], others)])
        row = placer.place(candidates, avoid=lines)
        rows.append(row) if row else missing.append(c.label)
    for m in memory:
        row = placer.place([spot for text in (m.label, m.short_label)
                            for spot in _along_slope(frame, text, m.value, top, size=frame.font)], avoid=lines)
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
