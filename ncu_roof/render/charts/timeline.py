"""The timeline chart of a trace: kernels per stream over time, the idle gaps marked by cause, the
top CPU ops coloured.

A :class:`~ncu_roof.traces.TraceResult` in (its trace kept), an Altair chart out (``None``
without a kernel). One lane per stream, one bar per kernel coloured by its launching op (the
:data:`TOP_OPS` with the most kernel time, the rest 'other op'); a lane of gaps, coloured by cause. A trace
with more than :data:`MAX_MARKS` kernels is drawn as each stream's busy blocks, merged where less
than a pixel (span / :data:`PIXELS`) apart, and only gaps of a pixel or more are drawn: a million
launches stay a chart a browser opens (each block coloured by the op with the most kernel time in
it). The subtitle says what was merged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_seconds, plural
from ncu_roof.model.intervals import union
from ncu_roof.model.timeline import GAP_CAUSES
from ncu_roof.render.charts.points import WIDTH, truncate_name
from ncu_roof.render.charts.roofline import _configure
from ncu_roof.render.charts.views import time_unit

if TYPE_CHECKING:
    from ncu_roof.traces import TraceResult

TOP_OPS = 8  # ops named in the legend; the others are "other op"
MAX_MARKS = 3000  # kernels drawn one by one up to this many
PIXELS = 1500  # time resolution of a merged chart: span / PIXELS
GAP_LANE = "idle gaps"
CAUSE_COLORS = {"launch": "#d62728", "sync": "#9467bd", "queued": "#ff7f0e", "unknown": "#7f7f7f", "end": "#bcbd22"}


def _lane(stream: object) -> str:
    return f"stream {int(stream)}" if stream == stream and stream is not None else "stream ?"  # type: ignore[call-overload]


def _op_labels(kernels: pd.DataFrame) -> tuple[pd.Series, list[str]]:
    """Each kernel's op for the legend (the top ops by kernel time, the rest 'other op'), and the legend."""
    ops = kernels["op"].astype("string").fillna("(no op)")
    top = list(kernels.groupby(ops)["duration_s"].sum().sort_values(ascending=False).head(TOP_OPS).index)
    label = ops.where(ops.isin(top), "other op").astype(str)
    return label, [*map(str, top), *(["other op"] if (label == "other op").any() else [])]


def _kernel_rows(kernels: pd.DataFrame, label: pd.Series, scale: float) -> list[dict[str, Any]]:
    """One bar per kernel, coloured by its op."""
    return [{"lane": _lane(st), "start": s * scale, "end": e * scale, "op": op,
             "Kernel": truncate_name(name, 80), "Duration": fmt_seconds(d), "Op": op}
            for st, s, e, d, name, op in zip(kernels["stream"], kernels["start_s"], kernels["end_s"],
                                             kernels["duration_s"], kernels["name"], label, strict=True)]


def _block_rows(kernels: pd.DataFrame, label: pd.Series, scale: float, pixel: float) -> list[dict[str, Any]]:
    """Each stream's busy blocks, merged where less than ``pixel`` seconds apart, coloured by the op
    with the most kernel time in the block."""
    rows = []
    for stream, part in kernels.groupby("stream", dropna=False, sort=True):
        s, e = union(part["start_s"].to_numpy(), part["end_s"].to_numpy())
        if not len(s):
            continue
        keep = np.r_[True, s[1:] - e[:-1] >= pixel]
        first = np.flatnonzero(keep)
        last = np.r_[first[1:] - 1, len(s) - 1]
        busy = np.add.reduceat(e - s, first)
        block = np.searchsorted(s[first], part["start_s"].to_numpy(), side="right") - 1
        time = part["duration_s"].groupby([block, label.loc[part.index].to_numpy()]).sum()
        top = time.groupby(level=0).idxmax().map(lambda key: key[1])
        rows += [{"lane": _lane(stream), "start": a * scale, "end": b * scale, "op": str(top.get(i, "(no op)")),
                  "Kernel": f"{n:,} kernels" if n != 1 else "1 kernel", "Duration": fmt_seconds(float(k)),
                  "Op": f"mostly {top.get(i, '(no op)')}"}
                 for i, (a, b, k, n) in enumerate(zip(s[first], e[last], busy, np.bincount(block, minlength=len(first)),
                                                      strict=True))]
    return rows


def _lane_order(lanes: set[str]) -> list[str]:
    def key(lane: str) -> tuple[int, float]:
        tail = lane.rsplit(" ", 1)[-1]
        return (0, float(tail)) if tail.lstrip("-").isdigit() else (1, 0.0)

    return sorted(lanes, key=key)


def timeline_chart(res: TraceResult) -> Any:
    """Kernels per stream over time, gaps marked by cause, top ops coloured (None without kernels
    or without the trace)."""
    import altair as alt

    tl, trace = res.timeline, res.trace
    if trace is None:
        return None
    kernels = trace.gpu[trace.gpu["kind"] == "kernel"]
    if kernels.empty or not tl.span_s > 0:
        return None
    unit, scale = time_unit([tl.span_s])
    pixel = tl.span_s / PIXELS
    merged = len(kernels) > MAX_MARKS
    label, ops = _op_labels(kernels)
    rows = _block_rows(kernels, label, scale, pixel) if merged else _kernel_rows(kernels, label, scale)
    for r in rows:
        r["start"] -= tl.start_s * scale
        r["end"] -= tl.start_s * scale
    gaps = tl.gaps
    drawn = gaps[gaps["idle_s"] >= pixel] if merged else gaps
    gap_rows = [{"lane": GAP_LANE, "start": (s - tl.start_s) * scale, "end": (e - tl.start_s) * scale,
                 "cause": str(c), "Cause": str(c), "Idle": fmt_seconds(i), "Next kernel": truncate_name(k, 80),
                 "Next op": "?" if o is None or o != o else str(o)}
                for s, e, c, i, k, o in zip(drawn["start_s"], drawn["end_s"], drawn["cause"], drawn["idle_s"],
                                            drawn["next_kernel"], drawn["next_top_op"], strict=True)]
    lanes = _lane_order({r["lane"] for r in rows}) + [GAP_LANE]
    y = alt.Y("lane:N", sort=lanes, title=None, axis=alt.Axis(labelLimit=200))
    x = alt.X("start:Q", title=f"time from the first GPU activity ({unit})",
              scale=alt.Scale(domain=[0, tl.span_s * scale], nice=False), axis=alt.Axis(tickCount=8))
    palette = ["#1f77b4", "#2ca02c", "#17becf", "#8c564b", "#e377c2", "#aec7e8", "#98df8a", "#c49c94", "#c7c7c7"]
    bars = alt.Chart(alt.Data(values=rows)).mark_bar(height=14).encode(
        y=y, x=x, x2="end:Q", color=alt.Color("op:N", scale=alt.Scale(domain=ops, range=palette[: len(ops)]),
                                                  legend=alt.Legend(title="launching op", labelLimit=200)),
        tooltip=[alt.Tooltip(f"{t}:N") for t in ("Kernel", "Duration", "Op")])
    causes = [c for c in GAP_CAUSES if any(r["cause"] == c for r in gap_rows)] or ["launch"]
    idle = alt.Chart(alt.Data(values=gap_rows)).mark_bar(height=14).encode(
        y=y, x=x, x2="end:Q",
        color=alt.Color("cause:N", scale=alt.Scale(domain=causes, range=[CAUSE_COLORS[c] for c in causes]),
                        legend=alt.Legend(title="gap cause")),
        tooltip=[alt.Tooltip(f"{t}:N") for t in ("Cause", "Idle", "Next kernel", "Next op")])
    how = (f"{tl.launches:,} kernels drawn as each stream's busy blocks (gaps under {fmt_seconds(pixel)} merged, "
           "coloured by the op with the most kernel time in the block); "
           f"{plural(len(drawn), 'gap')} of {fmt_seconds(pixel)} or more of {len(gaps):,}"
           if merged else f"{plural(tl.launches, 'kernel')}, coloured by the CPU op that launched them")
    title = alt.TitleParams(f"Timeline: busy {fmt_seconds(tl.gpu_busy_s)}, idle {fmt_seconds(tl.gpu_idle_s)} of "
                            f"{fmt_seconds(tl.span_s)}", subtitle=how, anchor="start")
    chart = alt.layer(bars, idle).resolve_scale(color="independent").properties(
        width=WIDTH, height=24 * len(lanes) + 20, title=title)  # with lanes and legends: within a 1,024 px page
    return _configure(chart)
