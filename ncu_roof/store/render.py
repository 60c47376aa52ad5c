"""A :class:`~ncu_roof.store.trend.Trend` as text, Markdown, JSON (schema ``ncu-roof/trend/1``) and an
Altair chart (one line per kernel, its noise band shaded around its median)."""

from __future__ import annotations

import json
from typing import Any

from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si, plural
from ncu_roof.jsonable import clean
from ncu_roof.store.trend import METRICS, Move, Series, Trend

SCHEMA = "ncu-roof/trend/1"


def fmt_value(value: float, metric: str) -> str:
    unit = METRICS[metric][1]
    if value != value:
        return "unknown"
    if unit == "s":
        return fmt_seconds(value)
    if unit == "%":
        return fmt_pct(value)
    if metric == "launches":
        return f"{value:g}"
    return fmt_si(value, unit)


def move_text(move: Move, metric: str) -> str:
    """``1.78x faster`` for a time, ``x1.35`` up or down for the rest; and whether beyond the noise."""
    ratio = move.ratio
    if METRICS[metric][3]:  # lower is better
        text = f"{1 / ratio:.2f}x faster" if ratio < 1 else f"{ratio:.2f}x slower"
    else:
        text = f"{ratio:.2f}x up" if ratio >= 1 else f"{1 / ratio:.2f}x down"
    return text + (", beyond the noise" if move.beyond_noise else " (within the noise)")


def _title(t: Trend) -> str:
    runs = {p.group for s in t.series for p in s.points}
    by = {"run": "by run", "date": "by day of ingest"}.get(t.by) or f"by {t.by.split(':', 1)[-1]}"
    return (f"trend of {METRICS[t.metric][2]} ({t.metric}) in {t.store}, {by}: {plural(len(t.series), 'kernel')}, "
            f"{plural(len(runs), 'point')}")


def _band_text(s: Series) -> str:
    return f"+/-{s.band:.0%} ({s.band_basis})"


def trend_text(t: Trend) -> str:
    lines = [_title(t), t.definition, ""]
    for s in t.series:
        lines.append(f"{s.device or '(no device)'}  {s.kernel}  median {fmt_value(s.median, t.metric)}  "
                     f"band {_band_text(s)}")
        moves = {m.after: m for m in s.moves}
        for p in s.points:
            move = f"  {move_text(moves[p.group], t.metric)}" if p.group in moves else ""
            lines.append(f"  {p.group}  {fmt_value(p.value, t.metric)} ({plural(p.runs, 'run')}){move}")
    lines += ["", _moved_line(t)]
    lines += [f"note: {n}" for n in t.notes]
    return "\n".join(lines) + "\n"


def _moved_line(t: Trend) -> str:
    moved = t.moved
    if not moved:
        return "no kernel moved beyond the noise"
    return f"{plural(len(moved), 'move')} beyond the noise: " + "; ".join(
        f"{s.kernel} {m.before} -> {m.after} {move_text(m, t.metric).split(',')[0]}" for s, m in moved)


def trend_markdown(t: Trend) -> str:
    lines = [f"## {_title(t)}", "", f"_{t.definition}_", "",
             "| device | kernel | points | median | noise band | last | moves beyond the noise |",
             "|---|---|---|---|---|---|---|"]
    for s in t.series:
        moved = [f"{m.before} -> {m.after}: {move_text(m, t.metric).split(',')[0]}"
                 for m in s.moves if m.beyond_noise]
        last = fmt_value(s.points[-1].value, t.metric) if s.points else ""
        lines.append(f"| {s.device or ''} | `{s.kernel}` | {len(s.points)} | {fmt_value(s.median, t.metric)} | "
                     f"{_band_text(s)} | {last} | {'; '.join(moved) or 'none'} |")
    lines += ["", _moved_line(t)] + [f"- note: {n}" for n in t.notes]
    return "\n".join(lines) + "\n"


def to_dict(t: Trend) -> dict[str, Any]:
    return clean({
        "schema": SCHEMA, "store": t.store, "metric": t.metric, "column": METRICS[t.metric][0],
        "unit": METRICS[t.metric][1], "by": t.by, "definition": t.definition, "notes": t.notes,
        "series": [{"device": s.device, "kernel": s.kernel, "median": s.median, "noise_band": s.band,
                    "noise_basis": s.band_basis,
                    "points": [{"group": p.group, "runs": p.runs, "value": p.value, "first_ingest": p.first_ingest}
                               for p in s.points],
                    "moves": [{"before": m.before, "after": m.after, "ratio": m.ratio, "beyond_noise": m.beyond_noise}
                              for m in s.moves]} for s in t.series],
    })


def trend_json(t: Trend) -> str:
    return json.dumps(to_dict(t), indent=2, allow_nan=False) + "\n"


RENDERERS = {"text": trend_text, "markdown": trend_markdown, "json": trend_json}


TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def time_unit(values: list[float]) -> tuple[str, float]:
    """The unit a time axis reads in, as the text's times do: the largest in which the middle of the
    data's range (the geometric mean of its least and largest positive values) is at least 1."""
    positive = [v for v in values if v == v and v > 0]
    if not positive:
        return "s", 1.0
    middle = (min(positive) * max(positive)) ** 0.5
    return next(((unit, scale) for unit, scale in TIME_UNITS if middle >= scale), TIME_UNITS[-1])


def trend_chart(t: Trend) -> Any:
    """One line per kernel over the points (log scale), its median +/- band shaded; times in the
    unit of :func:`time_unit` (``value`` keeps the base unit, ``shown`` the text's reading)."""
    import altair as alt
    import pandas as pd

    unit = METRICS[t.metric][1]
    values = [p.value for s in t.series for p in s.points]
    if unit == "s":
        unit, scale = time_unit(values)
    else:
        scale = 1.0
    rows, bands = [], []
    for s in t.series:
        name = f"{s.kernel} ({s.device})" if s.device else s.kernel
        for order, p in enumerate(s.points):
            if p.value == p.value and p.value > 0:
                rows.append({"kernel": name, "point": p.group, "order": order, "first": p.first_ingest,
                             "value": p.value, "y": p.value / scale,
                             "shown": fmt_value(p.value, t.metric), "runs": p.runs})
        if s.median == s.median and s.median > 0:
            bands += [{"kernel": name, "point": p.group, "order": order, "low": s.median / (1 + s.band) / scale,
                       "high": s.median * (1 + s.band) / scale} for order, p in enumerate(s.points)]
    y_title = f"{METRICS[t.metric][2]}" + (f" ({unit})" if unit else "")
    # the points in order of their first ingest, across every series (not each series' own position)
    ordered = sorted(rows, key=lambda r: (str(r["first"]), int(str(r["order"]))))
    sort = list(dict.fromkeys(str(r["point"]) for r in ordered))
    x = alt.X("point:N", sort=sort, title={"run": "run", "date": "day of ingest"}.get(t.by, t.by.split(":", 1)[-1]))
    scale_y = alt.Scale(type="log")  # only positive values are drawn
    band = alt.Chart(pd.DataFrame(bands)).mark_area(opacity=0.15).encode(
        x=x, y=alt.Y("low:Q", scale=scale_y, title=y_title), y2="high:Q", color="kernel:N")
    lines = alt.Chart(pd.DataFrame(rows)).mark_line(point=True).encode(
        x=x, y=alt.Y("y:Q", scale=scale_y, title=y_title), color=alt.Color("kernel:N", title="kernel"),
        tooltip=["kernel:N", "point:N", alt.Tooltip("shown:N", title=METRICS[t.metric][2]), "runs:Q"])
    return (band + lines).properties(title=_title(t), width=640, height=360)
