"""The roofline chart: a diagnosis in, a chart (one panel per device, built by :mod:`.vegalite`) out.

Each panel draws the memory and compute roofs (:mod:`.roofs`), the kernels at each memory level
and the ideal -> achieved arrows of algorithmic regions (:mod:`.points`), and names them where the
label placer (:mod:`.labels`) finds room. The chart is never saved or shown here (:mod:`.save`).
"""

from __future__ import annotations

import math
import operator
from functools import reduce
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ncu_roof.fmt import plural
from ncu_roof.render.charts import vegalite as vl
from ncu_roof.render.charts.labels import CHAR_W, _labels
from ncu_roof.render.charts.points import (
    ARROW_COLOR,
    ARROW_OFFSET,
    BOUND_COLORS,
    LEVEL_SHAPES,
    LEVELS,
    MAX_KERNELS,
    _decades,
    _finite,
    _weighted_mode,
    finite_mask,
    kernel_points,
    region_points,
    short_device_name,
    truncate_name,
)
from ncu_roof.render.charts.roofs import (
    Frame,
    Look,
    Roof,
    _frame,
    _ridge_rows,
    _roof_rows,
    compute_roofs,
    context_roofs,
    memory_roofs,
)
from ncu_roof.render.summary import fmt_pct, fmt_seconds, fmt_si

if TYPE_CHECKING:
    from ncu_roof.diagnosis import Diagnosis


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
    x = vl.X(f"{fx}:Q", title="Arithmetic intensity (FLOP/byte)",
              scale=vl.Scale(type="log", domain=[frame.x_lo, frame.x_hi], nice=False),
              axis=vl.Axis(values=_decades(frame.x_lo, frame.x_hi), format="~g", grid=True))
    y = vl.Y(f"{fy}:Q", title="Performance (FLOP/s)",
              scale=vl.Scale(type="log", domain=[frame.y_lo, frame.y_hi], nice=False),
              axis=vl.Axis(values=_decades(frame.y_lo, frame.y_hi), format="~s", grid=True))
    return x, y


def _bound_color(bounds: list[str]) -> Any:
    domain = [b for b in BOUND_COLORS if b in bounds] + sorted(b for b in set(bounds) if b not in BOUND_COLORS)
    return vl.Color("bound:N", title="Bound", scale=vl.Scale(
        domain=domain, range=[BOUND_COLORS.get(b, "#17becf") for b in domain]),
        legend=vl.Legend(orient="right", symbolOpacity=1))


_TIPS = ["Kernel", "Device", "Launches", "Time", "Share of time", "Bound", "Intensity", "Bytes",
         "Achieved", "% of roof", "Compute roof"]


def _text_layers(rows: list[dict[str, Any]], x: Any, y: Any) -> list[Any]:
    """Leader lines, then one text layer per label (align, baseline and offsets are mark
    properties in Vega-Lite), each over a white halo."""
    leaders = [r["leader"] for r in rows if r.get("leader")]
    layers = [vl.Chart(vl.Data(values=leaders)).mark_rule(color="#555", strokeWidth=1).encode(
        x=x, y=y, x2="x2:Q", y2="y2:Q")] if leaders else []
    for r in rows:
        base = vl.Chart(vl.Data(values=[{"x": r["x"], "y": r["y"], "text": r["text"]}]))
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
    lines = vl.Chart(vl.Data(values=_roof_rows(frame, memory, compute))).mark_line(
        strokeWidth=1.6, clip=True).encode(
        x=x, y=y, detail="roof:N", order="order:Q",
        color=vl.condition("datum.kind == 'context'", vl.value("#aaa"), vl.value("#444")),
        strokeDash=vl.StrokeDash("kind:N", legend=None, scale=vl.Scale(
            domain=["memory", "compute", "context"], range=[[6, 3], [1, 0], [2, 3]])),
        tooltip=vl.Tooltip("tip:N", title="Roof"))
    layers = [lines]
    if ridges:
        base = vl.Chart(vl.Data(values=ridges))
        layers.append(base.mark_point(shape="cross", size=60, color="#444", filled=True).encode(
            x=x, y=y, tooltip=vl.Tooltip("Ridge:N")))
    return layers


def _kernel_layers(rows: list[dict[str, Any]], ideal: list[dict[str, Any]], frame: Frame) -> list[Any]:
    x, y = _axes(frame)
    bounds = [r["bound"] for r in rows + ideal] or ["unknown"]
    color = _bound_color(bounds)
    levels = [lv for lv in LEVEL_SHAPES if any(r["level"] == lv for r in rows + ideal)]
    shape = vl.Shape("level:N", title="Memory level", scale=vl.Scale(
        domain=levels, range=[LEVEL_SHAPES[lv] for lv in levels]))
    size = vl.Size("share:Q", title="Share of time", scale=vl.Scale(domain=[0, 1], range=[40, 700]),
                    legend=vl.Legend(format=".0%", values=[0.1, 0.5, 1.0]))
    base = vl.Chart(vl.Data(values=rows))
    layers = [
        base.mark_line(strokeWidth=1.2, opacity=0.55, clip=True).encode(
            x=x, y=y, detail="key:N", color=color, order="x:Q"),
        base.mark_point(filled=True, opacity=0.85, stroke="white", strokeWidth=0.6, clip=True).encode(
            x=x, y=y, color=color, shape=shape, size=size, tooltip=[vl.Tooltip(f"{t}:N") for t in _TIPS]),
    ]
    if ideal:
        ib = vl.Chart(vl.Data(values=ideal))
        tips = [vl.Tooltip(f"{t}:N") for t in ("Kernel", "Intensity", "Ideal", "Extra bytes", "Achieved")]
        sx, sy = _axes(frame, "sx", "sy")
        layers += [  # solid, thick and in a colour of its own: visible even along a dashed roof
            ib.mark_rule(color="white", strokeWidth=6, opacity=0.8, clip=True).encode(
                x=sx, y=sy, x2="x2:Q", y2="y2:Q"),
            ib.mark_rule(color=ARROW_COLOR, strokeWidth=3, strokeCap="round", clip=True).encode(
                x=sx, y=sy, x2="x2:Q", y2="y2:Q", tooltip=tips),
            ib.mark_point(filled=True, size=130, strokeWidth=2, clip=True).encode(
                x=x, y=y, shape=shape, color=vl.value(ARROW_COLOR), tooltip=tips),
            ib.mark_point(shape="triangle-up", filled=True, size=260, color=ARROW_COLOR, opacity=1,
                          stroke="white", strokeWidth=1, clip=True).encode(
                x=_axes(frame, "x2", "y2")[0], y=_axes(frame, "x2", "y2")[1],
                angle=vl.Angle("angle:Q", scale=None), tooltip=tips),
        ]
    return layers


def _panel_subtitle(points: pd.DataFrame, placeable: pd.DataFrame) -> list[str]:
    """What the panel shows in words: kernels, time, the bound that holds the time, what is left out."""
    if "is_region" in points:
        kernels = points["is_region"].ne(True)
        points, placeable = points[kernels], placeable[placeable["is_region"].ne(True)]
    total = float(points["time_s"].sum())
    by = points.groupby("bound")["time_s"].sum().sort_values(ascending=False)
    parts = [f"{b}-bound {t / total:.0%}" for b, t in by.items() if total > 0 and t / total >= 0.005]
    launches = plural(int(points["launches"].sum()), "launch")
    lines = [f"{plural(len(points), 'kernel')}, {launches}, {fmt_seconds(total)}"
             + (f"; {', '.join(parts)} of time" if parts else "")]
    missing = len(points) - len(placeable)
    if placeable.empty:
        lines.append("no kernel can be placed: none has both FLOPs (> 0) and bytes measured "
                     "(see the time share and the notes)")
    elif missing:
        lost = total - float(placeable["time_s"].sum())
        pct = "<1%" if total > 0 and 0 < lost / total < 0.005 else (f"{lost / total:.0%}" if total > 0 else "?")
        lines.append(f"not placed: {plural(missing, 'kernel')} ({pct} of time) without FLOPs (> 0) or bytes"
                     + (f" or beyond the top {MAX_KERNELS}" if len(points) > MAX_KERNELS else ""))
    return lines


def _panel_points(placed: pd.DataFrame, points: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The panel's points with the intensities of levels whose roof is unknown for the device
    blanked (a point without its roof would be judged against nothing), and those levels' names."""
    points = points.copy()
    unknown = []
    for level, name in LEVELS:
        col = f"intensity_{level}"
        if col in points and not finite_mask(placed[f"{level}_roof_bytes_per_s"]).any():
            if finite_mask(points[col]).any():
                unknown.append(name)
            points[col] = np.nan
    return points, unknown


def _placeable(points: pd.DataFrame) -> pd.DataFrame:
    """The points a panel draws: the top :data:`MAX_KERNELS` with achieved FLOP/s and an intensity."""
    shown = points.head(MAX_KERNELS)
    if shown.empty:
        return shown
    return shown[_placeable_mask(shown)]


def _placeable_mask(points: pd.DataFrame) -> pd.Series:
    """Which points have achieved FLOP/s and an intensity at some level."""
    at_some_level = reduce(operator.or_, (finite_mask(points[f"intensity_{lv}"]) for lv, _ in LEVELS))
    return finite_mask(points["achieved"]) & at_some_level


def _roofline_panel(device: str, placed: pd.DataFrame, points: pd.DataFrame, finding: str | None = None,
                    look: Look = Look(), note: str | None = None) -> vl.LayerChart:
    """One device's panel; ``finding`` opens its subtitle and ``note`` closes it."""
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
    if note:
        subtitle.append(note)
    if not layers:
        layers = [vl.Chart(vl.Data(values=[{"x": 1.0, "y": 1.0}])).mark_point(opacity=0).encode(x=x, y=y)]
    return vl.layer(*layers).properties(
        width=frame.width, height=frame.height,
        title=vl.TitleParams(f"Roofline: {device}", subtitle=_wrap(subtitle, frame), anchor="start"))


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


def placeable_kernels(d: Diagnosis, points: pd.DataFrame | None = None) -> int:
    """How many kernels a roofline of the diagnosis can place (achieved FLOP/s and an intensity);
    ``points``: its :func:`kernel_points` with shares per device, where the caller has them."""
    if d.placed.empty:
        return 0
    if points is None:
        points = kernel_points(d.placed, share_per_device=True)
    n = 0
    for device, group in _device_groups(d.placed):
        mine, _ = _panel_points(group, points[points["device"] == device])
        n += int(_placeable_mask(mine).sum())
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


def roofline_chart(d: Diagnosis, look: Look = Look(), points: pd.DataFrame | None = None) -> vl.TopLevel:
    """The roofline of a diagnosis: one panel per device with a point to draw, kernels placed at
    each memory level; ``look`` sets the panel size and text (wider for the HTML report), ``points``
    are its :func:`kernel_points` with shares per device, where the caller has them."""
    if points is None:
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
        note = (f"no roofline for {', '.join(short_device_name(e) for e in empty)}: no kernel there has "
                "FLOPs (> 0) and bytes (see the time share)") if i == 0 and empty else None
        panels.append(_roofline_panel(device, group, mine, finding, look, note))
    if not panels:
        return vl.Chart(vl.Data(values=[{"t": "no launches"}])).mark_text().encode(text="t:N")
    chart = panels[0] if len(panels) == 1 else vl.vconcat(*panels).resolve_scale(
        color="independent", shape="independent", size="independent")
    return _configure(chart, look.font)


def _configure(chart: Any, font: int = 11) -> Any:
    return chart.configure_axis(labelFontSize=font, titleFontSize=font + 1, gridColor="#e6e6e6").configure_legend(
        labelFontSize=font, titleFontSize=font, symbolStrokeWidth=1).configure_title(
        fontSize=font + 3, subtitleFontSize=font, subtitleColor="#444").configure_view(stroke="#bbb")
