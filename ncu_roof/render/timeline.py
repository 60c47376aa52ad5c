"""The ``timeline`` command's outputs: each trace's measured timeline and findings as text,
Markdown or JSON.

Enters: :class:`~ncu_roof.traces.TraceResult` per trace and the input notes. Leaves: a string.
JSON holds everything (every stream, step, annotation and op); text and Markdown the first rows
of each table. Unknown numbers are ``?`` in text, ``null`` in JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ncu_roof.fmt import PROSE_WIDTH, UNKNOWN, fmt_pct, fmt_seconds, fmt_si, plural, short_name, wrap
from ncu_roof.jsonable import clean, json_num
from ncu_roof.model.timeline import GAP_CAUSES, Timeline
from ncu_roof.rules.base import Finding
from ncu_roof.traces import TraceResult

SHOWN = 10  # rows of each table in text and Markdown
CAUSE_WORDS = {
    "launch": "waiting for the next launch",
    "sync": "after a sync drained the queue",
    "queued": "next kernel already queued (waiting on something the trace does not show: an event, a graph's "
              "host node, another stream or process)",
    "unknown": "next kernel launched before the trace began",
    "end": "after the last kernel (copies)",
}


def _share(part: float, whole: float) -> str:
    return fmt_pct(100 * part / whole) if whole > 0 else UNKNOWN


def _headline(tl: Timeline) -> list[str]:
    who = ", ".join(x for x in (f"rank {tl.rank}" if tl.rank is not None else "", tl.gpu_name or "GPU not named") if x)
    streams = len(tl.streams)
    return [
        f"trace {tl.trace} ({who})",
        f"span {fmt_seconds(tl.span_s)}: GPU busy {fmt_seconds(tl.gpu_busy_s)} ({_share(tl.gpu_busy_s, tl.span_s)}), "
        f"idle {fmt_seconds(tl.gpu_idle_s)} ({_share(tl.gpu_idle_s, tl.span_s)}); copies and sets busy "
        f"{fmt_seconds(tl.copy_busy_s)}",
        f"{tl.launches:,} kernels ({fmt_si(tl.launch_rate_hz, '/s')}) on {plural(streams, 'stream')} (overlap "
        f"{fmt_seconds(tl.stream_overlap_s)}), {tl.copies:,} copies and sets",
        _floor_line(tl),
        f"{plural(tl.syncs, 'blocking sync call')}; CPU-bound: {fmt_seconds(tl.cpu_bound_s)} of idle with the "
        "launching thread inside a CPU op",
    ]


def _floor_line(tl: Timeline) -> str:
    """The launch floor, the launch calls and the GPU's own gap; what the trace cannot tell, said so."""
    call = f"the call itself {fmt_seconds(tl.launch_call_s)}, {fmt_seconds(tl.launch_call_total_s)} in all"
    if _known(tl.launch_floor_s) and tl.sub_floor_kernels is not None:
        floor = (f"launch floor {fmt_seconds(tl.launch_floor_s)} between launches on a thread ({call}); "
                 f"{tl.sub_floor_kernels:,} kernels ({_share(tl.sub_floor_kernels, tl.launches)}) shorter")
    else:
        floor = f"launch floor not measured: no launches in a row on one thread ({call})"
    switch = tl.kernel_switch_s
    return floor + "; GPU's own gap between queued kernels " + (
        fmt_seconds(switch) if _known(switch) else "not measured (none queued)")


def _known(x: float | None) -> bool:
    return x is not None and x == x


def _causes(tl: Timeline) -> list[tuple[str, float, str]]:
    by = tl.idle_by_cause()
    return [(c, by[c], CAUSE_WORDS[c]) for c in GAP_CAUSES if by[c] > 0]


def _rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in r.items()} for r in frame.to_dict("records")]


def _tables(tl: Timeline) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each table text and Markdown show."""
    streams = [[str(int(r["stream"])) if r["stream"] == r["stream"] else UNKNOWN, f"{r['launches']:,}",
                fmt_seconds(r["busy_s"]), _share(r["busy_s"], tl.span_s)] for r in _rows(tl.streams)]
    out = [("streams", ["stream", "kernels", "busy", "of span"], streams)]
    for title, frame, key in (("steps", tl.steps, "step"), ("annotations", tl.annotations, "annotation")):
        if len(frame):
            rows = frame if key == "step" else frame.sort_values("gpu_busy_s", ascending=False, kind="stable")
            out.append((f"{title} ({len(frame)})" if len(frame) > SHOWN else title,
                        [key, "times", "span", "busy", "idle", "kernels"],
                        [[short_name(r[key], 50), f"{r['count']:,}", fmt_seconds(r["span_s"]),
                          fmt_seconds(r["gpu_busy_s"]), f"{fmt_seconds(r['gpu_idle_s'])} "
                          f"({_share(r['gpu_idle_s'], r['span_s'])})", f"{r['launches']:,}"]
                         for r in _rows(rows.head(SHOWN))]))
    if len(tl.ops):
        out.append(("CPU ops by kernel time", ["op", "kernels", "kernel time", "of busy"],
                    [[short_name(r["op"], 50), f"{r['launches']:,}", fmt_seconds(r["kernel_time_s"]),
                      _share(r["kernel_time_s"], tl.gpu_busy_s)] for r in _rows(tl.ops.head(SHOWN))]))
    return out


def _report_tables(res: TraceResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the trace beside its report: the matched kernels, the unprofiled."""
    w, tl = res.report, res.timeline
    if w is None:
        return []
    pct = lambda v: UNKNOWN if v != v or v is None else f"{v:.3g}%"  # noqa: E731
    kernels = [[short_name(r["kernel"], 40), f"{r['trace_launches']:,}", fmt_seconds(r["trace_time_s"]),
                _share(r["trace_time_s"], tl.gpu_busy_s), f"{r['ncu_launches']:,}", fmt_seconds(r["ncu_time_s"]),
                UNKNOWN if r["scale"] != r["scale"] else f"{r['scale']:.3g}", str(r["bound"] or UNKNOWN),
                pct(r["pct_of_roof"]), str(r["match"] or "not in the trace")]
               for r in _rows(w.match.kernels.head(SHOWN))]
    out = [(f"kernels beside the report ({fmt_pct(100 * w.match.matched_share)} of the trace's kernel time "
            "matched)" if w.match.matched_share == w.match.matched_share else "kernels beside the report",
            ["kernel", "trace", "trace time", "of busy", "report", "report time", "scale", "bound", "of roof",
             "matched by"], kernels)]
    if len(w.match.unprofiled):
        out.append(("trace kernels the report does not hold", ["kernel", "launches", "time", "of kernel time"],
                    [[short_name(r["name"], 60), f"{r['launches']:,}", fmt_seconds(r["time_s"]),
                      fmt_pct(100 * r["share"])] for r in _rows(w.match.unprofiled.head(SHOWN))]))
    return out


def _op_table(res: TraceResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """The ops placed on the roofline from recorded shapes (:mod:`ncu_roof.model.trace_ops`)."""
    ops = res.op_roofline
    if ops is None or ops.empty:
        return []
    pct = lambda v: UNKNOWN if v != v else f"{v:.3g}%"  # noqa: E731
    num = lambda v: UNKNOWN if v != v else f"{v:.3g}"  # noqa: E731
    rows = [[short_name(r["op"], 24), short_name(str(r["input_dims"]), 36), f"{r['calls']:,}",
             fmt_seconds(r["time_s"]), fmt_si(r["flops"], "FLOP"), fmt_si(r["bytes"], "B"), num(r["intensity"]),
             str(r["bound"] or UNKNOWN), pct(r["pct_of_roof"]), fmt_seconds(r["headroom_s"])]
            for r in _rows(ops.head(SHOWN))]
    title = (f"ops on the roofline from their recorded shapes ({len(ops):,} op shapes, "
             f"{fmt_seconds(float(ops['time_s'].sum()))} of kernel time)")
    return [(title, ["op", "input shapes", "calls", "kernel time", "FLOPs", "bytes", "FLOP/B", "bound", "of roof",
                     "headroom"], rows)]


def _per_step(tl: Timeline) -> str:
    n = int(tl.steps["count"].sum()) if len(tl.steps) else 0
    return f" (over {plural(n, 'profiler step')}: per step, half of each stake)" if n == 2 else \
        f" (over {plural(n, 'profiler step')}: per step, 1/{n} of each stake)" if n > 2 else ""


def render_text(results: list[TraceResult], notes: list[str]) -> str:
    lines: list[str] = []
    for res in results:
        tl = res.timeline
        head = _headline(tl)
        lines += [head[0], *("  " + h for h in head[1:]), "  idle by cause:"]
        lines += [f"    {c:<8} {fmt_seconds(s):>9}  {words}" for c, s, words in _causes(tl)]
        for title, header, rows in _tables(tl):
            widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
            lines += ["", f"  {title}:", "    " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
            lines += ["    " + "  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)) for row in rows]
        for title, header, rows in [*_op_table(res), *_report_tables(res)]:
            widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
            lines += ["", f"  {title}:", "    " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
            lines += ["    " + "  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)) for row in rows]
        if res.report is not None:
            lines += ["", "  findings, one ranking: the trace's gaps and the report's findings weighed by the trace"
                      f"{_per_step(tl)}:"]
        else:
            lines += ["", "  findings:" if res.findings else "  findings: none (no stake of 1% of the span)"]
        for i, f in enumerate(_ranked(res), 1):
            about = f" ({', '.join(short_name(k, 40) for k in f.kernels)})" if f.kernels else ""
            lines.append(f"  {i}. [{f.severity}] {f.rule}{about}: {fmt_seconds(f.time_at_stake_s)} at stake")
            lines += wrap(f.message, PROSE_WIDTH, indent="     ", first="     ")
        lines.append("")
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines).rstrip() + "\n"


def _ranked(res: TraceResult) -> list[Finding]:
    return res.report.ranking if res.report is not None else res.findings


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(results: list[TraceResult], notes: list[str]) -> str:
    lines: list[str] = []
    for res in results:
        tl = res.timeline
        head = _headline(tl)
        lines += [f"## {_md_cell(head[0])}", "", *(f"- {_md_cell(h)}" for h in head[1:]), "",
                  "| idle cause | time | meaning |", "|---|---:|---|"]
        lines += [f"| {c} | {fmt_seconds(s)} | {_md_cell(words)} |" for c, s, words in _causes(tl)]
        for title, header, rows in _tables(tl):
            lines += ["", f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in rows]
        for title, header, rows in [*_op_table(res), *_report_tables(res)]:
            lines += ["", f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in rows]
        lines += ["", "### Findings" + (" (one ranking with the report's, weighed by the trace)"
                                        + _md_cell(_per_step(tl)) if res.report else ""), ""]
        lines += [f"{i}. **{f.rule}**{' ' + _md_cell(', '.join(f.kernels)) if f.kernels else ''} ({f.severity}, "
                  f"{fmt_seconds(f.time_at_stake_s)} at stake): {_md_cell(f.message)}"
                  for i, f in enumerate(_ranked(res), 1)] or ["None: no stake of 1% of the span."]
        lines.append("")
    lines += [f"> note: {_md_cell(n)}" for n in notes]
    return "\n".join(lines).rstrip() + "\n"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [clean(r) for r in frame.astype(object).where(frame.notna(), None).to_dict("records")]


def timeline_dict(tl: Timeline) -> dict[str, Any]:
    """The ``timeline`` section of one trace: base units, unknown as None."""
    num = json_num
    return {
        "span_s": num(tl.span_s), "gpu_busy_s": num(tl.gpu_busy_s), "gpu_idle_s": num(tl.gpu_idle_s),
        "idle_share": num(tl.idle_share), "copy_busy_s": num(tl.copy_busy_s), "launches": tl.launches,
        "copies": tl.copies, "launch_rate_hz": num(tl.launch_rate_hz), "launch_call_s": num(tl.launch_call_s),
        "launch_call_total_s": num(tl.launch_call_total_s), "launch_floor_s": num(tl.launch_floor_s),
        "sub_floor_kernels": tl.sub_floor_kernels, "sub_floor_time_s": num(tl.sub_floor_time_s),
        "kernel_switch_s": num(tl.kernel_switch_s), "syncs": tl.syncs, "stream_overlap_s": num(tl.stream_overlap_s),
        "cpu_bound_s": num(tl.cpu_bound_s), "unlinked": tl.unlinked,
        "idle_by_cause_s": {k: num(v) for k, v in tl.idle_by_cause().items()},
        "streams": _records(tl.streams), "steps": _records(tl.steps.drop(columns="start_s")),
        "annotations": _records(tl.annotations.drop(columns="start_s")), "ops": _records(tl.ops),
    }


def report_dict(res: TraceResult) -> dict[str, Any] | None:
    """The ``report`` section of a trace beside its report: the kernels matched, those the report
    lacks, and one ranking of findings (the report's weighed by the trace)."""
    w = res.report
    if w is None:
        return None
    return {"inputs": w.inputs, "matched_share": json_num(w.match.matched_share),
            "kernels": _records(w.match.kernels), "unprofiled": _records(w.match.unprofiled),
            "ranking": [clean(f.as_dict()) for f in w.ranking]}


def trace_dict(r: TraceResult) -> dict[str, Any]:
    doc = {"trace": r.timeline.trace, "gpu": r.timeline.gpu_name, "rank": r.timeline.rank,
           "timeline": timeline_dict(r.timeline), "findings": [clean(f.as_dict()) for f in r.findings]}
    if r.report is not None:
        doc["report"] = report_dict(r)
    if r.op_roofline is not None and len(r.op_roofline):
        doc["op_roofline"] = _records(r.op_roofline)
    return doc


def render_json(results: list[TraceResult], notes: list[str]) -> str:
    doc = {"traces": [trace_dict(r) for r in results], "notes": notes}
    return json.dumps(doc, indent=2) + "\n"


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
