"""The arrows chart of a before/after comparison: each matched kernel's and region's move on the
log-log roofline, over the roofs of both sides.

Altair is imported inside the functions so that ``ncu-roof --help`` stays fast.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ncu_roof.compare import Comparison, _ratio, aggregate
from ncu_roof.diagnose import Diagnosis
from ncu_roof.errors import InputError
from ncu_roof.files import check_writable, write_atomic
from ncu_roof.report.compare import _kernel_label
from ncu_roof.report.summary import short_name

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
            "label": _kernel_label(r),
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
                f"intensity_{w}": _ratio(r[f"flops_{w}"], r[f"dram_bytes_{w}"])
                for w in ("before", "after")
            },
            **{
                f"flops_per_s_{w}": _ratio(r[f"flops_{w}"], r[f"time_s_{w}"])
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
    return out.reset_index(drop=True)


def _domain(values: list[float]) -> tuple[float, float]:
    logs = np.log10([v for v in values if v == v and v > 0])
    return float(10 ** np.floor(logs.min() - 0.3)), float(10 ** np.ceil(logs.max() + 0.3))


def side_roof(d: Diagnosis) -> tuple[float, float, str, str] | None:
    """(peak FLOP/s, DRAM bytes/s, compute label, DRAM label) of one side's roofline: the
    compute roof of the precision that dominates its time, each label with value and source."""
    from ncu_roof.charts import compute_roofs, memory_roofs

    if d.placed.empty:
        return None
    dram = [r for r in memory_roofs(d.placed) if r.name == "DRAM"]
    flat = compute_roofs(d.placed)
    if not dram or not flat:
        return None
    precision = aggregate(d.placed)["precision"]
    pick = next(
        (r for r in flat if precision and r.name.lower().startswith(str(precision).lower())),
        flat[0],
    )
    return pick.value, dram[0].value, pick.label, dram[0].label


def _roofs(c: Comparison) -> list[tuple[str, float, float, str, str]]:
    """(who, peak, DRAM bandwidth, compute label, DRAM label); one entry when both sides agree."""
    out: list[tuple[str, float, float, str, str]] = []
    for when, d in (("before", c.base), ("after", c.new)):
        roof = side_roof(d)
        if roof is None:
            continue
        device = aggregate(d.placed)["device"]
        who = f"{when} ({short_name(device)})" if device else when
        if out and out[0][1:] == roof:
            out[0] = (f"before and after ({short_name(device)})" if device else "both", *roof)
            continue
        out.append((who, *roof))
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


def _roof_labels(
    c: Comparison, xdom: tuple[float, float], ydom: tuple[float, float]
) -> pd.DataFrame:
    """Text on each roof: the compute roof at its right end, the DRAM roof along its slope."""
    sx = WIDTH / (math.log10(xdom[1]) - math.log10(xdom[0]))
    sy = HEIGHT / (math.log10(ydom[1]) - math.log10(ydom[0]))
    slope = -math.degrees(math.atan2(sy, sx))  # text angle is clockwise; the slope climbs
    rows = []
    roofs = _roofs(c)
    slopes = {(beta, dram): who for who, _, beta, _, dram in roofs}  # the same slope once
    for who, peak, _, flat, _ in roofs:
        prefix = f"{who}: " if len(roofs) > 1 else ""
        rows.append(
            {"x": xdom[1], "y": peak, "text": prefix + flat, "angle": 0.0, "align": "right"}
        )
    for (beta, dram), who in slopes.items():
        prefix = f"{who}: " if len(slopes) > 1 else ""
        lo = max(xdom[0], ydom[0] / beta)
        hi = min(xdom[1], min(p for _, p, b, _, _ in roofs if b == beta) / beta)
        if hi > lo:
            x = lo * (hi / lo) ** 0.25  # a quarter up the slope, clear of the ridge
            rows.append(
                {"x": x, "y": beta * x, "text": prefix + dram, "angle": slope, "align": "center"}
            )
    return pd.DataFrame(rows, columns=["x", "y", "text", "angle", "align"])


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

    from ncu_roof.charts import _decades

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
    a triangle after, turned along the arrow."""
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
    ]


def _roof_layers(roofs: pd.DataFrame, labels: pd.DataFrame, xscale: Any, yscale: Any) -> list[Any]:
    """The roofs as dashed gray lines, and their labels (flat at the right end, along a slope)."""
    import altair as alt

    return [
        alt.Chart(roofs)
        .mark_line(color="gray", strokeDash=[4, 3])
        .encode(
            x=alt.X("intensity:Q", scale=xscale),
            y=alt.Y("flops_per_s:Q", scale=yscale),
            detail="roof:N",
            tooltip=["roof:N"],
        ),
        *(
            alt.Chart(labels[labels["align"] == align])
            .mark_text(align=align, baseline="bottom", dy=-3, fontSize=10, color="dimgray")
            .encode(
                x=alt.X("x:Q", scale=xscale),
                y=alt.Y("y:Q", scale=yscale),
                text="text:N",
                angle=alt.Angle("angle:Q", scale=None),
            )
            for align in ("right", "center")
            if (labels["align"] == align).any()
        ),
    ]


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
    if not roofs.empty:
        layers[:0] = _roof_layers(roofs, _roof_labels(c, xdom, ydom), xscale, yscale)
    # altair types layer(...).properties(...) as LayerChart | FacetChart; a layer stays a layer here
    return cast(
        "alt.LayerChart",
        alt.layer(*layers).properties(
            width=WIDTH,
            height=HEIGHT,
            title="ncu-roof compare: each kernel's and region's move (o before, > after)",
        ),
    )


def check_chart_path(path: str | Path, force: bool = False) -> Path:
    """Raise the one-line InputError that saving a chart at ``path`` would raise, before any work:
    a suffix other than .html/.json/.png/.svg, an existing file without ``force``, no folder, or
    .png/.svg without vl-convert-python."""
    path = Path(path)
    check_writable(path, force, (".html", ".json", ".png", ".svg"), "chart", "--chart")
    if path.suffix in (".png", ".svg"):
        try:
            import vl_convert  # noqa: F401
        except ImportError:
            raise InputError(
                f"saving {path.suffix} needs vl-convert-python: pip install vl-convert-python, "
                "or save .html"
            ) from None
    return path


def save_compare_chart(
    c: Comparison, path: str | Path, force: bool = False, chart: alt.LayerChart | None = None
) -> None:
    """Save :func:`compare_chart` (or ``chart``, built already) as .html, .json, .png or .svg;
    never overwrite unless ``force``."""
    path = check_chart_path(path, force)
    fmt = path.suffix.lower().lstrip(".")
    buffer: io.BytesIO | io.StringIO = io.BytesIO() if fmt == "png" else io.StringIO()
    (chart if chart is not None else compare_chart(c)).save(buffer, format=fmt)  # type: ignore[arg-type]
    write_atomic(path, buffer.getvalue())
