"""The ``timeline`` command's HTML page: each trace's headline, idle by cause, the timeline chart,
its tables, the trace beside its report and the ranked findings, as one page that works offline.

Enters: :class:`~ncu_roof.traces.TraceResult` per trace and the notes. Leaves: a string. The
page follows :mod:`ncu_roof.render.html`: Vega inlined, each chart's spec in a JSON script block
with ``<``, ``>`` and ``&`` escaped, every string from a trace or report through :func:`html.escape`.
"""

from __future__ import annotations

from typing import Any

from ncu_roof.fmt import fmt_seconds
from ncu_roof.render.html import CSS, _e
from ncu_roof.render.timeline import _causes, _headline, _op_table, _ranked, _report_tables, _tables
from ncu_roof.traces import TraceResult


def _table(title: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{_e(x)}</td>" for x in row) + "</tr>" for row in rows)
    return f"<h3>{_e(title)}</h3>\n<table>\n<tr>{head}</tr>\n{body}\n</table>"


def _chart(res: TraceResult, i: int) -> str:
    from ncu_roof.render.charts.points import script_json
    from ncu_roof.render.charts.save import chart_spec
    from ncu_roof.render.charts.timeline import timeline_chart

    chart = timeline_chart(res)
    if chart is None:
        return ""
    return (f"<div class=\"chart\" id=\"chart{i}\"></div>\n<script type=\"application/json\" data-chart=\"chart{i}\">"
            f"{script_json(chart_spec(chart))}</script>")


def _findings(res: TraceResult) -> str:
    found = _ranked(res)
    if not found:
        return "<p>None: no stake of 1% of the span.</p>"
    items = []
    for f in found:
        stake = f" <b>{_e(fmt_seconds(f.time_at_stake_s))} at stake</b>" if f.time_at_stake_s is not None else ""
        about = f" <code>{_e(', '.join(f.kernels))}</code>" if f.kernels else ""
        items.append(f"<li><span class=\"sev sev-{_e(f.severity)}\">{_e(f.severity)}</span> <code>{_e(f.rule)}</code>"
                     f"{about}{stake}: {_e(f.message)}</li>")
    return "<ol>\n" + "\n".join(items) + "\n</ol>"


def trace_section(res: TraceResult, i: int) -> str:
    """One trace's part of the page (``i`` numbers its chart)."""
    tl = res.timeline
    head = _headline(tl)
    causes = [[c, fmt_seconds(s), words] for c, s, words in _causes(tl)]
    parts = [f"<h2>{_e(head[0])}</h2>", "<ul class=\"summary\">" + "".join(f"<li>{_e(h)}</li>" for h in head[1:])
             + "</ul>", _chart(res, i), _table("idle by cause", ["cause", "time", "meaning"], causes) if causes else ""]
    tables = [*_tables(tl), *_op_table(res), *_report_tables(res)]
    parts += [_table(title, header, rows) for title, header, rows in tables]
    heading = "Findings, one ranking with the report's (weighed by the trace)" if res.report else "Findings"
    parts += [f"<h3>{_e(heading)}</h3>", _findings(res)]
    return "\n".join(p for p in parts if p)


def render_html(results: list[TraceResult], notes: list[str], title: str = "ncu-roof timeline") -> str:
    """The traces as one self-contained HTML page."""
    from ncu_roof.render.charts.save import EMBED_JS, FIT_CSS, vega_bundle

    parts: list[Any] = [
        "<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>{_e(title)}</title>", f"<style>{CSS}{FIT_CSS}</style>", f"<script>{vega_bundle()}</script>",
        "</head><body>",
        f"<h1>{_e(title)}</h1>", *(trace_section(r, i) for i, r in enumerate(results)),
        "<h2>Notes</h2>\n<ul>\n" + "\n".join(f"<li>{_e(n)}</li>" for n in notes) + "\n</ul>" if notes else "",
        f"<script>{EMBED_JS}</script>", "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
