"""The one-page HTML report: charts, per-kernel table, ranked findings; works with no network.

The Vega libraries are inlined (from vl-convert), each chart's spec sits in a
``<script type="application/json">`` block with ``<``, ``>`` and ``&`` escaped so nothing in it can
close the script, and every string that comes from a report goes through :func:`html.escape`.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from ncu_roof.diagnosis import Diagnosis
from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si
from ncu_roof.model.kernels import kernel_summary
from ncu_roof.render.lines import where
from ncu_roof.render.summary import limiter_cell, run_condition_text, run_lines
from ncu_roof.rules.base import Finding, order_words
from ncu_roof.rules.lines import CONTEXT, ranking_words

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px auto;
       max-width: 1360px; color: #222; line-height: 1.4; padding: 0 16px; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.summary { color: #444; } .inputs { color: #666; font-size: 0.85em; }
table { border-collapse: collapse; font-size: 0.9em; } th, td { padding: 3px 8px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.92em; } .chart { margin: 12px 0 24px; }
.sev { font-weight: bold; padding: 0 6px; border-radius: 3px; color: #fff; font-size: 0.8em; }
.sev-high { background: #c62828; } .sev-medium { background: #ef6c00; } .sev-low { background: #546e7a; }
.sev-info { background: #90a4ae; } .bound-compute { color: #d62728; } .bound-memory { color: #1f77b4; }
.bound-overhead { color: #ff7f0e; } .bound-latency { color: #9467bd; } .bound-unknown { color: #777; }
li { margin: 4px 0; } details.ncu-rules > summary { cursor: pointer; color: #1565c0; margin: 6px 0; }
.verdict-capped, .verdict-not-the-limiter { color: #c62828; font-weight: bold; } .verdict-agrees { color: #2e7d32; }
.verdict-underestimated { color: #ef6c00; font-weight: bold; }
table.source td { vertical-align: top; } pre.source { margin: 0; font-size: 0.85em; white-space: pre-wrap; }
pre.source .hot { background: #fff3cd; display: block; }
"""


def _e(value: object) -> str:
    """Escaped text (quotes too: it may end up in an attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


def _summary_line(d: Diagnosis) -> str:
    devices = ", ".join(sorted({str(x) for x in d.placed["device"].dropna().unique()})) or "unknown device"
    placed = d.placed
    total = d.total_time_s
    by = placed.groupby("bound")["time_s"].sum().sort_values(ascending=False)
    parts = [f"{b}-bound {t / total:.0%}" for b, t in by.items() if total and total > 0 and t / total >= 0.005]
    return (f"{len(placed)} launches, {placed['kernel'].nunique()} kernels on {devices}; total GPU time "
            f"{_time(total)}" + (f"; {', '.join(parts)} of the time" if parts else "") + ".")


def _time(seconds: object) -> str:
    """A duration, or "unknown" where no launch has one (never "0 ns")."""
    return "unknown" if _missing(seconds) else fmt_seconds(seconds)  # type: ignore[arg-type]


def _region_factors(d: Diagnosis) -> dict[str, str]:
    """'5.0x (layernorm)' per kernel of a region of several kernels with a known factor."""
    regions = d.regions
    out: dict[str, str] = {}
    if regions is None or regions.empty or "extra_bytes_factor" not in regions:
        return out
    for _, r in regions.iterrows():
        factor = r["extra_bytes_factor"]
        if not (factor == factor and factor > 0) or len(set(r["kernels"])) < 2:
            continue
        for kernel in r["kernels"]:
            out.setdefault(str(kernel), f"{factor:.2g}x ({r['name']})")
    return out


def _missing(value: object) -> bool:
    try:
        return value is None or value != value or value is pd.NA  # type: ignore[comparison-overlap]
    except (TypeError, ValueError):
        return True


def _kernel_table(d: Diagnosis) -> str:
    """One table per device (a heading each when there are several), shares of that device's time."""
    from ncu_roof.render.charts.points import truncate_name

    summary = kernel_summary(d.placed)
    factors = _region_factors(d)
    extra_col = bool(factors)
    head = ("<tr><th>kernel</th><th>launches</th><th>time</th><th>share</th><th>bound</th><th>limiter</th>"
            "<th>compute roof</th><th>% of roof</th><th>FLOP/byte (DRAM)</th>"
            + ("<th>extra bytes (region)</th>" if extra_col else "") + "<th>headroom</th></tr>")
    summary["device"] = summary["device"].where(summary["device"].notna(), "unknown device").astype(str)
    devices = list(dict.fromkeys(summary["device"]))
    blocks = []
    for device in devices:
        mine = summary[summary["device"] == device]
        total = mine["time_s"].sum(min_count=1)
        rows = []
        for _, k in mine.iterrows():
            share = fmt_pct(k["time_s"] / total * 100) if not _missing(total) and total > 0 \
                and not _missing(k["time_s"]) else "unknown"
            x = k["intensity_dram"]
            intensity = "–" if _missing(x) or x <= 0 else f"{x:.3g}"  # no FLOPs: no intensity, not 0
            roof = "–" if _missing(k["compute_roof"]) or str(k["compute_roof"]) in ("nan", "<NA>", "None") \
                else str(k["compute_roof"])
            head_s = k["headroom_s"]
            headroom = ("–" if _missing(head_s) else "0 (above the practical roof)" if head_s < 0
                        else fmt_seconds(head_s))
            extra = f"<td class=\"num\">{_e(factors.get(str(k['kernel']), '–'))}</td>" if extra_col else ""
            rows.append(
                f"<tr><td title=\"{_e(k['kernel'])}\"><code>{_e(truncate_name(k['kernel'], 60))}</code></td>"
                f"<td class=\"num\">{int(k['launches'])}</td>"
                f"<td class=\"num\">{_e(_time(k['time_s']))}</td><td class=\"num\">{_e(share)}</td>"
                f"<td class=\"bound-{_e(k['bound'])}\">{_e(k['bound'])}</td><td>{_e(limiter_cell(k))}</td>"
                f"<td>{_e(roof)}</td>"
                f"<td class=\"num\">{_e(fmt_pct(k['pct_of_roof']))}</td><td class=\"num\">{_e(intensity)}</td>"
                f"{extra}<td class=\"num\">{_e(headroom)}</td></tr>")
        blocks.append(f"<h3>{_e(device)}</h3>\n<p class=\"inputs\">{len(mine)} kernel{'' if len(mine) == 1 else 's'}, "
                      f"{_e(_time(total))}; shares are of this device's time</p>\n"
                      f"<table>\n{head}\n" + "\n".join(rows) + "\n</table>")
    return "\n".join(blocks)


def _findings(d: Diagnosis) -> str:
    if not d.findings:
        from ncu_roof.render.summary import unjudged_line

        return f"<p>{_e(unjudged_line(d.placed, False) or '')}</p>"
    items = []
    for f in d.findings:
        stake = f" <b>{_e(fmt_seconds(f.time_at_stake_s))} at stake</b>" if f.time_at_stake_s else ""
        where = ", ".join(f.kernels[:3]) + (f" and {len(f.kernels) - 3} more" if len(f.kernels) > 3 else "")
        where = f"<br><small>kernels: <code>{_e(where)}</code></small>" if where else ""
        region = f" <small>region {_e(f.region)}</small>" if f.region else ""
        items.append(f"<li><span class=\"sev sev-{_e(f.severity)}\">{_e(f.severity)}</span> "
                     f"<code>{_e(f.rule)}</code>{stake}{region}: {_e(f.message)}{where}"
                     f"{_source_view(f, d.sources)}</li>")
    return "<ol>\n" + "\n".join(items) + "\n</ol>"


def _source_view(f: Finding, sources: dict[str, dict[int, str]]) -> str:
    """The finding's hot lines: where, share of what ranks them, time, and the source text around
    each where the report carries it (else the SASS instruction where known)."""
    if not f.lines:
        return ""
    words = ranking_words(f)
    rows = []
    for x in f.lines:
        known = sources.get(x.file or "", {}) if x.line is not None else {}
        text = {n: t for n, t in known.items() if abs(n - (x.line or 0)) <= CONTEXT}
        if text:
            body = "".join(f"<span class=\"hot\">{n:>5}  {_e(t)}</span>" if n == x.line else f"{n:>5}  {_e(t)}\n"
                           for n, t in sorted(text.items()))
            code = f"<pre class=\"source\">{body}</pre>"
        else:
            code = f"<code>{_e(x.sass)}</code>" if x.sass else ""
        time = _e(fmt_seconds(x.time_s)) if x.time_s is not None and x.time_s > 0 else "–"
        rows.append(f"<tr><td><code>{_e(where(x))}</code></td><td class=\"num\">{x.share:.0%}</td>"
                    f"<td class=\"num\">{_e(fmt_si(x.value, '').strip())}</td><td class=\"num\">{time}</td>"
                    f"<td>{code}</td></tr>")
    return (f"<details><summary>where in the code: {len(f.lines)} line{'s' * (len(f.lines) > 1)}, by "
            f"{_e(words)}</summary>\n<table class=\"source\"><tr><th>line</th><th>share</th><th>{_e(words)}</th>"
            "<th>time</th><th>source</th></tr>\n" + "\n".join(rows) + "\n</table></details>")


def _ncu_rules(d: Diagnosis) -> str:
    """Every verdict on Nsight Compute's OPT/WRN rule results, as one table."""
    if not d.ncu_rules:
        return ""
    head = ("<tr><th>ncu rule</th><th>kernels</th><th>launches</th><th>time</th><th>ncu estimate</th>"
            "<th>roofline cap</th><th>verdict</th><th>why</th><th>ncu's message</th></tr>")
    rows = []
    for r in sorted(d.ncu_rules, key=_at_stake, reverse=True):
        est, cap = r["ncu_estimated_speedup_pct"], r["roofline_cap_pct"]
        kind = f" ({r['ncu_speedup_type']})" if r.get("ncu_speedup_type") else ""
        ids = r["ids"]
        title = "launch IDs " + ", ".join(str(i) for i in ids[:20]) + (" …" if len(ids) > 20 else "")
        rows.append(
            f"<tr><td><code>{_e(r['rule'])}</code> <small>{_e(r['type'])}</small></td>"
            f"<td><code>{_e(', '.join(r['kernels']))}</code></td>"
            f"<td class=\"num\" title=\"{_e(title)}\">{len(ids)}</td>"
            f"<td class=\"num\">{_e(_time(r.get('time_s')))}</td>"
            f"<td class=\"num\">{_e('–' if _missing(est) else f'{est:.1f}%' + kind)}</td>"
            f"<td class=\"num\">{_e('–' if _missing(cap) else f'{cap:.1f}%')}</td>"
            f"<td class=\"verdict-{_e(r['verdict'])}\">{_e(r['verdict'])}</td><td>{_e(r['reason'])}</td>"
            f"<td><small>{_e(r['ncu_message'])}</small></td></tr>")
    counts: dict[str, int] = {}
    for r in d.ncu_rules:
        counts[str(r["verdict"])] = counts.get(str(r["verdict"]), 0) + 1
    n = len(d.ncu_rules)
    kernels = len({k for r in d.ncu_rules for k in r["kernels"]})
    count = (f"{n} rule result{'' if n == 1 else 's'} on {kernels} kernel{'' if kernels == 1 else 's'}: "
             + ", ".join(f"{c} <span class=\"verdict-{_e(v)}\">{_e(v)}</span>" for v, c in counts.items()) + ".")
    return ("<h2>Nsight Compute's rules, cross-examined</h2>\n<p class=\"inputs\">Every OPT/WRN rule result the "
            "reports store, against the roofline: the cap is the share of the launches' time any fix can win.</p>\n"
            f"<p class=\"ncu-rules-count\">{count}</p>\n<details class=\"ncu-rules\"><summary>The {n} rule "
            f"result{'' if n == 1 else 's'}, largest time at stake first</summary>\n"
            f"<table>\n{head}\n" + "\n".join(rows) + "\n</table>\n</details>")


def _at_stake(record: dict[str, Any]) -> float:
    """A verdict's weight for sorting: the time ncu's estimate puts at stake (else the cap's)."""
    time, est, cap = (record.get(k) for k in ("time_s", "ncu_estimated_speedup_pct", "roofline_cap_pct"))
    share = est if not _missing(est) else cap
    if time is None or share is None or _missing(time) or _missing(share):
        return -1.0
    return float(time) * float(share) / 100.0


def _list_section(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"<h2>{_e(title)}</h2>\n<ul>\n" + "\n".join(f"<li>{i}</li>" for i in items) + "\n</ul>"


def _charts(d: Diagnosis) -> str:
    from ncu_roof.render.charts.points import script_json
    from ncu_roof.render.charts.roofs import REPORT_LOOK
    from ncu_roof.render.charts.save import chart_spec
    from ncu_roof.render.charts.views import all_charts

    blocks = []
    for i, (title, chart) in enumerate(all_charts(d, REPORT_LOOK)):  # the roofline uses the page's width
        blocks.append(f"<h2>{_e(title)}</h2>\n<div class=\"chart\" id=\"chart{i}\"></div>\n"
                      f"<script type=\"application/json\" data-chart=\"chart{i}\">{script_json(chart_spec(chart))}"
                      "</script>")
    return "\n".join(blocks)


def _run_items(d: Diagnosis) -> list[str]:
    """Each report's capture conditions and command line, then what the conditions mean."""
    items = [f"{_e(r['report'])}: {_e(run_condition_text(r))}"
             + (f"<br><code>{_e(r['command_line'])}</code>" if r.get("command_line") else "") for r in d.runs]
    return items + [_e(line) for line in run_lines(d.runs) if not line.startswith("Captured (")]


def render_html(d: Diagnosis, title: str = "ncu-roof report") -> str:
    """The whole report as one self-contained HTML page."""
    from ncu_roof.render.charts.save import EMBED_JS, FIT_CSS, vega_bundle

    skipped = [f"<code>{_e(s.rule)}</code>: needs {_e(', '.join(s.missing))}"
               + (f" ({_e(s.enable)})" if s.enable else "") for s in d.skipped]
    inputs = ", ".join(_e(i) for i in d.inputs)
    parts: list[Any] = [
        "<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>{_e(title)}</title>", f"<style>{CSS}{FIT_CSS}</style>",
        f"<script>{vega_bundle()}</script>", "</head><body>",
        f"<h1>{_e(title)}</h1>", f"<p class=\"summary\">{_e(_summary_line(d))}</p>",
        f"<p class=\"inputs\">Inputs: {inputs}" + (f"; ceilings: {_e(d.ceilings)}" if d.ceilings else "") + "</p>"
        if inputs or d.ceilings else "",
        _charts(d), "<h2>Kernels</h2>", _kernel_table(d),
        f"<h2>Advice ({order_words(d.findings)})</h2>", _findings(d), _ncu_rules(d),
        _list_section("Rules skipped for lack of metrics", skipped),
        _list_section("How it was captured", _run_items(d)),
        _list_section("Notes", [_e(n) for n in d.notes]),
        f"<script>{EMBED_JS}</script>", "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
