"""The terminal summary: the top kernels, the regions, then the advice ranked by time at stake.

Prose is wrapped to ``width`` columns (the CLI passes the terminal's; else 100) and the kernel
table fits a given width by narrowing the name column.
"""

from __future__ import annotations

from ncu_roof.diagnosis import Diagnosis
from ncu_roof.fmt import PROSE_WIDTH, fmt_pct, fmt_seconds, prose_seconds, short_name, wrap
from ncu_roof.model.kernels import kernel_summary
from ncu_roof.render.lines import finding_line_texts
from ncu_roof.render.summary import (
    ALGORITHMIC_HINT,
    UNJUDGED_TITLE,
    advice_groups,
    has_algorithmic,
    headline,
    limiter_cell,
    ncu_rule_lines,
    ncu_unjudged_lines,
    practical_roof_note,
    priced_launches,
    region_summary,
    roof_cell,
    roof_lines,
    run_lines,
    skipped_lines,
    unjudged_line,
    unmeasured_advice,
)
from ncu_roof.rules.base import order_words

TOP_KERNELS = 10
TOP_FINDINGS = 10
NAME_MIN = 16  # the kernel column never narrower than this


def _kernel_lines(d: Diagnosis, width: int) -> list[str]:
    summary = kernel_summary(d.placed).head(TOP_KERNELS)
    extra_col = has_algorithmic(d.placed)
    rest = 61 + (12 if extra_col else 0)  # the columns after the name
    name_w = max(NAME_MIN, min(40, width - rest))
    header = (f"{'kernel':<{name_w}} {'launches':>8} {'time':>10} {'share':>6} {'bound':<9} {'limiter':<13} "
              f"{'% of roof':>9}"
              + (f" {'extra bytes':>11}" if extra_col else ""))
    lines = [header, "-" * len(header)]
    for _, k in summary.iterrows():
        row = (f"{short_name(k['kernel'], name_w):<{name_w}} {k['launches']:>8} {fmt_seconds(k['time_s']):>10} "
               f"{fmt_pct(k['share'] * 100 if k['share'] == k['share'] else None):>6} {k['bound']:<9} "
               f"{limiter_cell(k):<13} {roof_cell(k):>9}")
        if extra_col:
            extra = "-" if k["extra_bytes_factor"] != k["extra_bytes_factor"] else f"{k['extra_bytes_factor']:.1f}x"
            row += f" {extra:>11}"
        lines.append(row)
    hidden = d.placed["kernel"].nunique() - len(summary)
    if hidden > 0:
        lines.append(f"... and {hidden} more kernels (see --format json or ncu-roof table)")
    note = practical_roof_note(d.placed)
    if note:
        lines += wrap(note, width)
    if not extra_col and region_summary(d.regions).empty:  # regions carry their own extra bytes
        lines += wrap(f"({ALGORITHMIC_HINT})", width)
    return lines


def _region_lines(d: Diagnosis, width: int = PROSE_WIDTH) -> list[str]:
    """The regions' table, its name column narrowed (to ``NAME_MIN``) to fit ``width``."""
    regions = region_summary(d.regions)
    if regions.empty:
        return []
    name_w = max(NAME_MIN, min(24, width - 77))  # the columns after the name take 77
    header = (f"{'region':<{name_w}} {'launches':>8} {'time':>10} {'ideal':>10} {'at stake':>10} "
              f"{'extra bytes':>11} {'intensity alg/achieved':>22}")
    lines = ["", header, "-" * len(header)]
    for _, r in regions.iterrows():
        lines.append(f"{short_name(r['name'], name_w):<{name_w}} {r['launches']:>8} {fmt_seconds(r['time_s']):>10} "
                     f"{fmt_seconds(r['ideal_time_s']):>10} {fmt_seconds(r['time_at_stake_s']):>10} "
                     f"{r['extra']:>11} {r['intensities']:>22}")
    return lines


def _finding_lines(d: Diagnosis, width: int) -> list[str]:
    ranked, notes = advice_groups(d.findings)
    verdict = unjudged_line(d.placed, bool(ranked), unmeasured_advice(d.findings), priced_launches(ranked))
    lines = wrap(verdict, width) if verdict else []
    for i, f in enumerate(ranked[:TOP_FINDINGS], 1):
        stake = f" [{fmt_seconds(f.time_at_stake_s)} at stake]" if f.time_at_stake_s else ""
        lines += wrap(f"{i}. ({f.severity}) {f.rule}{stake}: {f.message}", width, indent="   ")
        for text in finding_line_texts(f):
            lines += wrap(f"at {text}", width, indent="      ", first="   ")
    if len(ranked) > TOP_FINDINGS:
        lines.append(f"... and {len(ranked) - TOP_FINDINGS} more (see --format json)")
    for text in notes:
        lines += wrap(f"- {text}", width, indent="  ")
    return lines


def render_text(d: Diagnosis, width: int | None = None) -> str:
    """The summary, wrapped to ``width`` columns (None: prose at 100, tables whole)."""
    width = width or PROSE_WIDTH
    devices = ", ".join(sorted({str(x) for x in d.placed["device"].dropna().unique()})) or "unknown device"
    lines = wrap(f"ncu-roof: {headline(d.placed)} on {devices}; total GPU time {prose_seconds(d.total_time_s)}",
                 width, indent="  ")
    for line in roof_lines(d.placed) + run_lines(d.runs):
        lines += wrap(line, width, indent="  ")
    lines += [""] + _kernel_lines(d, width)
    lines += _region_lines(d, width)
    lines += ["", f"Advice ({order_words(d.findings)}):"]
    lines += _finding_lines(d, width)
    head, disagree = ncu_rule_lines(d.ncu_rules, d.total_time_s)
    if head:
        title = "Nsight Compute's estimates the roofline contradicts:" if disagree else "Nsight Compute's rules:"
        lines += ["", title, *wrap(head, width)]
        for text in disagree:
            lines += wrap(f"- {text}", width, indent="  ")
        unjudged = ncu_unjudged_lines(d.ncu_rules, d.findings)
        if unjudged and disagree:
            lines += wrap(f"{UNJUDGED_TITLE}:", width)
        for text in unjudged:
            lines += wrap(f"- {text}", width, indent="  ")
    if d.skipped:
        lines += ["", "Rules skipped:"]
        for text in skipped_lines(d.skipped):
            lines += wrap(f"- {text}", width, indent="  ")
    if d.notes:
        lines += ["", "Notes:"]
        for n in d.notes:
            lines += wrap(f"- {n}", width, indent="  ")
    return "\n".join(lines) + "\n"
