"""Two traces compared (:mod:`ncu_roof.comparison.traces`) as text, Markdown or JSON.

Enters: a :class:`~ncu_roof.comparison.traces.TraceComparison`. Leaves: a string. Unknown numbers
are ``?`` in text, ``null`` in JSON; text and Markdown show the first :data:`SHOWN` ops and kernels
that moved, JSON all of them.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ncu_roof.comparison.traces import TraceComparison
from ncu_roof.fmt import UNKNOWN, fmt_pct, fmt_seconds, short_name
from ncu_roof.jsonable import clean, json_num

SHOWN = 10
SCHEMA = "ncu-roof/compare-traces/1"
LABELS = {"span_s": "span", "gpu_busy_s": "GPU busy", "gpu_idle_s": "GPU idle", "idle_share": "idle share",
          "launches": "kernels", "launch_floor_s": "launch floor", "step_s": "step GPU span (mean)",
          "step_busy_s": "step busy (mean)", "step_idle_s": "step idle (mean)"}


def _label(number: str) -> str:
    if number in LABELS:
        return LABELS[number]
    if number.startswith("idle_"):
        return f"idle: {number[5:-2]} gaps"
    return f"{number[6:-2]} stake" if number.startswith("stake_") else number


def _value(number: str, v: float) -> str:
    if v != v:
        return UNKNOWN
    if number == "idle_share":
        return fmt_pct(100 * v)
    return f"{int(v):,}" if number == "launches" else fmt_seconds(v)


def _delta(number: str, row: pd.Series) -> str:
    d, r = row["delta"], row["ratio"]
    if d != d:
        return UNKNOWN
    if number == "idle_share":
        text = f"{100 * d:+.3g} points"
    elif number == "launches":
        text = f"{int(d):+,}"
    else:
        text = ("+" if d > 0 else "-" if d < 0 else "") + fmt_seconds(abs(d))
    return text + (f" (x{r:.3g})" if r == r and number != "idle_share" else "")


def _rows(c: TraceComparison) -> list[list[str]]:
    shown = c.totals[[not (n.startswith(("idle_", "stake_")) and n != "idle_share")
                      or r["base"] > 0 or r["new"] > 0 for n, r in zip(c.totals["number"], c.totals.to_dict("records"),
                                                                       strict=True)]]
    return [[_label(r["number"]), _value(r["number"], r["base"]), _value(r["number"], r["new"]),
             _delta(r["number"], pd.Series(r))] for r in shown.to_dict("records")]


def _moved(frame: pd.DataFrame, key: str) -> list[list[str]]:
    part = frame[frame["delta_s"] != 0].head(SHOWN)
    return [[short_name(str(r[key]), 60), f"{r['launches_base']:,} / {r['launches_new']:,}",
             fmt_seconds(r["time_s_base"]), fmt_seconds(r["time_s_new"]),
             ("+" if r["delta_s"] > 0 else "-") + fmt_seconds(abs(r["delta_s"]))] for r in part.to_dict("records")]


def _tables(c: TraceComparison) -> list[tuple[str, list[str], list[list[str]]]]:
    out = [("totals", ["", "base", "new", "change"], _rows(c))]
    moved = (("ops that moved (kernel time)", c.ops, "op"), ("kernels that moved", c.kernels, "kernel"))
    for title, frame, key in moved:
        rows = _moved(frame, key)
        if rows:
            out.append((title, [key, "launches", "base", "new", "change"], rows))
    return out


def render_text(c: TraceComparison) -> str:
    lines = [f"base {c.base}", f"new  {c.new}"]
    for title, header, rows in _tables(c):
        widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
        lines += ["", f"{title}:", "  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
        lines += ["  " + "  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)) for row in rows]
    lines += [""] + [f"note: {n}" for n in c.notes]
    return "\n".join(lines).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(c: TraceComparison) -> str:
    lines = ["# ncu-roof: two traces compared", "", f"- base: `{_cell(c.base)}`", f"- new: `{_cell(c.new)}`"]
    for title, header, rows in _tables(c):
        lines += ["", f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in rows]
    lines += [""] + [f"> note: {_cell(n)}" for n in c.notes]
    return "\n".join(lines).rstrip() + "\n"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [clean(r) for r in frame.astype(object).where(frame.notna(), None).to_dict("records")]


def render_json(c: TraceComparison) -> str:
    totals = {r["number"]: {"base": json_num(r["base"]), "new": json_num(r["new"]), "delta": json_num(r["delta"]),
                            "ratio": json_num(r["ratio"])} for r in c.totals.to_dict("records")}
    doc = {"schema": SCHEMA, "base": c.base, "new": c.new, "totals": totals, "ops": _records(c.ops),
           "kernels": _records(c.kernels), "notes": c.notes}
    return json.dumps(doc, indent=2) + "\n"


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
