"""The arrows chart of a before/after comparison: each matched kernel's and region's move on the
log-log roofline, over the roofs of both sides.

Altair is imported inside the functions so that ``ncu-roof --help`` stays fast.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ncu_roof.comparison.compare import Comparison, kernel_label
from ncu_roof.comparison.deltas import aggregate, ratio
from ncu_roof.diagnosis import Diagnosis
from ncu_roof.errors import InputError
from ncu_roof.fmt import short_name

if TYPE_CHECKING:
    import altair as alt

WIDTH, HEIGHT = 640, 420
ARROW_COLS = ["intensity_before", "flops_per_s_before", "intensity_after", "flops_per_s_after"]


def _kernel_arrows(c: Comparison) -> list[dict[str, Any]]:
    """One arrow row per matched kernel (its intensity and FLOP/s before and after)."""
    return [
        {
            "kind": "kernel",
            "kernel": r["kernel"],
            "region": None,
            "label": kernel_label(r),
            "speedup": r["speedup"],
            "direction": r["direction"],
            **{col: r[col] for col in ARROW_COLS},
        }
        for _, r in c.kernels.iterrows()
    ]


def _region_arrows(c: Comparison) -> list[dict[str, Any]]:
    """One arrow row per region on both sides: intensity = FLOPs / DRAM bytes, FLOP/s = FLOPs /
    time."""
    return [
        {
            "kind": "region",
            "kernel": None,
            "region": r["region"],
            "label": f"region {r['region']}",
            "speedup": r["speedup"],
            "direction": r["direction"],
            **{
                f"intensity_{w}": ratio(r[f"flops_{w}"], r[f"dram_bytes_{w}"])
                for w in ("before", "after")
            },
            **{
                f"flops_per_s_{w}": ratio(r[f"flops_{w}"], r[f"time_s_{w}"])
                for w in ("before", "after")
            },
        }
        for _, r in c.regions.iterrows()
    ]


def _arrow_data(c: Comparison) -> pd.DataFrame:
    """One arrow per matched kernel and per region present on both sides, where intensity
    (FLOPs / DRAM bytes) and FLOP/s (FLOPs / time) are known and positive before and after."""
    data = pd.DataFrame(
        [*_kernel_arrows(c), *_region_arrows(c)],
        columns=["kind", "kernel", "region", "label", "speedup", "direction", *ARROW_COLS],
    )
    if data.empty:
        return data
    values = data[ARROW_COLS].apply(pd.to_numeric, errors="coerce").astype(float)
    ok = (np.isfinite(values) & (values > 0)).all(axis=1)
    out = data.loc[ok].copy()
    out[ARROW_COLS] = values.loc[ok]
    # the speedup at the arrow's middle (the geometric mean of its ends: the middle on log axes)
    out["mid_intensity"] = np.sqrt(out["intensity_before"] * out["intensity_after"])
    out["mid_flops_per_s"] = np.sqrt(out["flops_per_s_before"] * out["flops_per_s_after"])
    speed = pd.to_numeric(out["speedup"], errors="coerce")
    out["speedup_text"] = [f"{v:.2f}x" if v == v and v > 0 else "" for v in speed]
    return out.reset_index(drop=True)


def _domain(values: list[float]) -> tuple[float, float]:
    logs = np.log10([v for v in values if v == v and v > 0])
    return float(10 ** np.floor(logs.min() - 0.3)), float(10 ** np.ceil(logs.max() + 0.3))


def _side_roof(placed: pd.DataFrame) -> tuple[float, float, str, str] | None:
    """(peak FLOP/s, DRAM bytes/s, compute label, DRAM label) of launches: the compute roof of
    the precision that dominates their time (the median of the launches' roofs, as the roofline
    draws it), each label with value and source."""
    from ncu_roof.render.charts.roofs import compute_roofs, memory_roofs

    if placed.empty:
        return None
    dram = [r for r in memory_roofs(placed) if r.name == "DRAM"]
    flat = compute_roofs(placed)
    if not dram or not flat:
        return None
    precision = aggregate(placed)["precision"]
    pick = next(
        (r for r in flat if precision and r.name.lower().startswith(str(precision).lower())),
        flat[0],
    )
    return pick.value, dram[0].value, pick.label, dram[0].label


def side_roof(d: Diagnosis) -> tuple[float, float, str, str] | None:
    """:func:`_side_roof` of one side of a comparison."""
    return _side_roof(d.placed)


def _close(a: tuple[float, float, str, str], b: tuple[float, float, str, str]) -> bool:
    """Roofs of one kind within the roofline's spread (clocks differ between runs) are one roof."""
    from ncu_roof.render.charts.roofs import ROOF_SPREAD

    return a[2].split()[:2] == b[2].split()[:2] and all(
        abs(x - y) <= ROOF_SPREAD * max(x, y) for x, y in zip(a[:2], b[:2], strict=True)
    )


def _roofs(c: Comparison) -> list[tuple[str, float, float, str, str]]:
    """(who, peak, DRAM bandwidth, compute label, DRAM label) per side; one entry, from the
    median of both sides' launches, when both ran on one device and their roofs agree."""
    out: list[tuple[str, float, float, str, str]] = []
    sides = [(when, d, side_roof(d)) for when, d in (("before", c.base), ("after", c.new))]
    devices = {aggregate(d.placed)["device"] for _, d, _ in sides}
    roofs = [r for _, _, r in sides if r is not None]
    if len(roofs) == 2 and len(devices) == 1 and _close(*roofs):
        both = _side_roof(pd.concat([c.base.placed, c.new.placed], ignore_index=True))
        device = devices.pop()
        if both is not None:
            return [(f"before and after ({short_name(device)})" if device else "both", *both)]
    for when, d, roof in sides:
        if roof is not None:
            device = aggregate(d.placed)["device"]
            out.append((f"{when} ({short_name(device)})" if device else when, *roof))
    return out


def _roof_lines(c: Comparison, xdom: tuple[float, float]) -> pd.DataFrame:
    rows = []
    xs = np.logspace(np.log10(xdom[0]), np.log10(xdom[1]), 64)
    for who, peak, beta, flat, dram in _roofs(c):
        label = f"{who}: {flat}; {dram}"
        rows += [
            {"roof": label, "intensity": float(x), "flops_per_s": min(peak, beta * float(x))}
            for x in xs
        ]
    return pd.DataFrame(rows, columns=["roof", "intensity", "flops_per_s"])


# --- roof labels, placed where they touch no arrow and no other label (the placer of .labels) --
def _frame(xdom: tuple[float, float], ydom: tuple[float, float]) -> Any:
    from ncu_roof.render.charts.roofs import Frame

    return Frame(xdom[0], xdom[1], ydom[0], ydom[1], WIDTH, HEIGHT)


def _arrow_boxes(data: pd.DataFrame, frame: Any) -> list[tuple[float, float, float, float]]:
    """Screen boxes of the arrows: both ends and the shaft between them."""
    from ncu_roof.render.charts.labels import _point_box, _segment_boxes

    boxes = []
    for _, r in data.iterrows():
        ends = [(r["intensity_before"], r["flops_per_s_before"]), (r["intensity_after"], r["flops_per_s_after"])]
        boxes += [_point_box(frame, x, y, 160) for x, y in ends]
        (x0, y0), (x1, y1) = frame.px(*ends[0]), frame.px(*ends[1])
        boxes += _segment_boxes(x0, y0, x1, y1, half=2.0)
    return boxes


def _roof_labels(
    c: Comparison, xdom: tuple[float, float], ydom: tuple[float, float], data: pd.DataFrame
) -> tuple[list[dict[str, Any]], list[str]]:
    """Text rows for each roof (the compute roof along its flat part, the DRAM roof along its
    slope), none touching an arrow or another label, and the labels that found no room."""
    from ncu_roof.render.charts.labels import _along_flat, _along_slope, _Placer

    frame = _frame(xdom, ydom)
    placer = _Placer(frame, _arrow_boxes(data, frame))
    roofs = _roofs(c)
    rows, missing = [], []
    slopes = {(beta, dram): who for who, _, beta, _, dram in roofs}  # the same slope once
    style = {"size": 10, "color": "dimgray"}
    for who, peak, beta, flat, _ in roofs:
        text = (f"{who}: " if len(roofs) > 1 else "") + flat
        row = placer.place(_along_flat(frame, text, peak, max(xdom[0], peak / beta), **style))
        rows.append(row) if row else missing.append(text)
    for (beta, dram), who in slopes.items():
        text = (f"{who}: " if len(slopes) > 1 else "") + dram
        top = min(p for _, p, b, _, _ in roofs if b == beta)
        row = placer.place(_along_slope(frame, text, beta, top, **style))
        rows.append(row) if row else missing.append(text)
    return rows, missing


def _angles(
    data: pd.DataFrame, xdom: tuple[float, float], ydom: tuple[float, float]
) -> list[float]:
    """Screen angle (degrees clockwise from up) of each arrow, for a rotated triangle head."""
    sx = WIDTH / (math.log10(xdom[1]) - math.log10(xdom[0]))
    sy = HEIGHT / (math.log10(ydom[1]) - math.log10(ydom[0]))
    dx = sx * (
        np.log10(data["intensity_after"].astype(float))
        - np.log10(data["intensity_before"].astype(float))
    )
    dy = sy * (
        np.log10(data["flops_per_s_after"].astype(float))
        - np.log10(data["flops_per_s_before"].astype(float))
    )
    return [float(math.degrees(math.atan2(a, b))) for a, b in zip(dx, dy, strict=True)]


def _domains(
    c: Comparison, data: pd.DataFrame
) -> tuple[tuple[float, float], tuple[float, float], pd.DataFrame]:
    """(x domain, y domain, roof lines): the arrows, the ridges and the roofs all in view."""
    ridges = [peak / beta for _, peak, beta, _, _ in _roofs(c)]
    xdom = _domain([*data["intensity_before"], *data["intensity_after"], *ridges])
    roofs = _roof_lines(c, xdom)
    ydom = _domain(
        [
            *data["flops_per_s_before"],
            *data["flops_per_s_after"],
            *(roofs["flops_per_s"] if not roofs.empty else []),
        ]
    )
    return xdom, ydom, roofs


def _axes(xdom: tuple[float, float], ydom: tuple[float, float]) -> tuple[Any, Any, Any, Any]:
    """(x, y, x scale, y scale): log-log, with a tick per decade."""
    import altair as alt

    from ncu_roof.render.charts.points import _decades

    xscale = alt.Scale(type="log", domain=list(xdom))
    yscale = alt.Scale(type="log", domain=list(ydom))
    x = alt.X(
        "intensity_before:Q",
        scale=xscale,
        title="arithmetic intensity (FLOP / DRAM byte)",
        axis=alt.Axis(values=_decades(*xdom), format="~g", grid=True),
    )
    y = alt.Y(
        "flops_per_s_before:Q",
        scale=yscale,
        title="FLOP/s",
        axis=alt.Axis(values=_decades(*ydom), format="~s", grid=True),
    )
    return x, y, xscale, yscale


def _arrow_layers(data: pd.DataFrame, x: Any, y: Any, xscale: Any, yscale: Any) -> list[Any]:
    """The arrows: a line from before to after (dashed for regions), a hollow point before and
    a triangle after, turned along the arrow, the speedup at its middle."""
    import altair as alt

    base = alt.Chart(data)
    tooltip = ["kind:N", "label:N", alt.Tooltip("speedup:Q", format=".2f"), "direction:N"]
    color = alt.Color("label:N", title="kernel or region", legend=alt.Legend(labelLimit=400))
    dash = alt.StrokeDash(
        "kind:N",
        title="",
        scale=alt.Scale(domain=["kernel", "region"], range=[[1, 0], [6, 3]]),
    )
    return [
        base.mark_rule(strokeWidth=2).encode(
            x=x,
            y=y,
            x2="intensity_after:Q",
            y2="flops_per_s_after:Q",
            color=color,
            strokeDash=dash,
            tooltip=tooltip,
        ),
        base.mark_point(filled=False, size=60).encode(x=x, y=y, color="label:N", tooltip=tooltip),
        base.mark_point(shape="triangle-up", filled=True, size=140, opacity=1).encode(
            x=alt.X("intensity_after:Q", scale=xscale),
            y=alt.Y("flops_per_s_after:Q", scale=yscale),
            angle=alt.Angle("angle:Q", scale=None),
            color="label:N",
            tooltip=tooltip,
        ),
        base.mark_text(dx=8, dy=-8, align="left", fontSize=11).encode(
            x=alt.X("mid_intensity:Q", scale=xscale),
            y=alt.Y("mid_flops_per_s:Q", scale=yscale),
            text="speedup_text:N",
            color="label:N",
        ),
    ]


def _roof_layers(roofs: pd.DataFrame, labels: list[dict[str, Any]], xscale: Any, yscale: Any) -> list[Any]:
    """The roofs as solid light gray lines (dashes are the legend's mark of a region's arrow), and
    their labels (text rows of the placer in .labels)."""
    import altair as alt

    from ncu_roof.render.charts import vegalite as vl
    from ncu_roof.render.charts.roofline import _text_layers

    line = (
        alt.Chart(roofs)
        .mark_line(color="#aaaaaa", strokeWidth=1.5)
        .encode(
            x=alt.X("intensity:Q", scale=xscale),
            y=alt.Y("flops_per_s:Q", scale=yscale),
            detail="roof:N",
            tooltip=["roof:N"],
        )
    )
    texts = _text_layers(labels, vl.X("x:Q", scale=xscale), vl.Y("y:Q", scale=yscale))  # Altair's scales kept
    return [line, *vl.to_altair(texts)]


def compare_chart(c: Comparison) -> alt.LayerChart:
    """Each matched kernel's and each region's move on the log-log roofline: an arrow from
    before to after, over the labelled roofs of both sides. Raises InputError (before anything
    is written) when there is nothing to draw."""
    import altair as alt

    data = _arrow_data(c)
    if data.empty:
        raise InputError(
            "no matched kernel or region has FLOPs, DRAM bytes and time on both sides: "
            "nothing to draw"
        )
    xdom, ydom, roofs = _domains(c, data)
    data["angle"] = _angles(data, xdom, ydom)
    x, y, xscale, yscale = _axes(xdom, ydom)
    layers = _arrow_layers(data, x, y, xscale, yscale)
    missing: list[str] = []
    if not roofs.empty:
        labels, missing = _roof_labels(c, xdom, ydom, data)
        layers[:0] = _roof_layers(roofs, labels, xscale, yscale)
    title = "ncu-roof compare: each kernel's and region's move (o before, > after)"
    # altair types layer(...).properties(...) as LayerChart | FacetChart; a layer stays a layer here
    return cast(
        "alt.LayerChart",
        alt.layer(*layers).properties(
            width=WIDTH,
            height=HEIGHT,
            title=alt.TitleParams(title, subtitle=[f"roofs: {'; '.join(missing)}"]) if missing else title,
        ),
    )


def save_compare_chart(
    c: Comparison, path: str | Path, force: bool = False, chart: alt.LayerChart | None = None
) -> Path:
    """Save :func:`compare_chart` (or ``chart``, built already) through the one chart save path
    (:func:`ncu_roof.render.charts.save.save_chart`: .html works offline, .json, .png or .svg); never
    overwrite unless ``force``."""
    from ncu_roof.render.charts.save import save_chart

    return save_chart(chart if chart is not None else compare_chart(c), path, force)
