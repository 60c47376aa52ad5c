"""The Markdown summary: the same content as the terminal one, as tables and lists."""

from __future__ import annotations

import re

from ncu_roof.diagnosis import Diagnosis
from ncu_roof.fmt import fmt_pct, fmt_seconds, prose_seconds
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
    unjudged_line,
    unmeasured_advice,
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


_MD_SPECIAL = frozenset("\\`*_<>|[]")


def _md(text: object) -> str:
    """Text from a report (kernel names, messages) as literal Markdown: its significant characters
    backslash-escaped, so a name like ``a<b>_c*`` neither formats, nor opens HTML, nor splits a table."""
    return "".join(f"\\{c}" if c in _MD_SPECIAL else c for c in str(text).replace("\n", " "))


def _code(text: object) -> str:
    """A code span holding ``text`` whatever backticks it has (fence longer than any run inside it),
    with ``|`` escaped for table cells."""
    body = str(text).replace("\n", " ")
    longest = max((len(run) for run in re.findall("`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}".replace("|", "\\|")


def _kernel_table(d: Diagnosis) -> list[str]:
    extra_col = has_algorithmic(d.placed)
    lines = ["| kernel | device | launches | time | share | bound | limiter | % of roof |"
             + (" extra bytes |" if extra_col else ""),
             "|---|---|---:|---:|---:|---|---|---:|" + ("---:|" if extra_col else "")]
    for _, k in kernel_summary(d.placed).iterrows():
        share = fmt_pct(k["share"] * 100)
        device = k["device"] if isinstance(k["device"], str) else "unknown device"
        row = (f"| {_code(k['kernel'])} | {_cell(device)} | {k['launches']} | {fmt_seconds(k['time_s'])} "
               f"| {share} | {k['bound']} | {limiter_cell(k)} | {roof_cell(k)} |")
        if extra_col:
            extra = "-" if k["extra_bytes_factor"] != k["extra_bytes_factor"] else f"{k['extra_bytes_factor']:.1f}x"
            row += f" {extra} |"
        lines.append(row)
    note = practical_roof_note(d.placed)
    if note:
        lines += ["", _md(note)]
    if not extra_col and region_summary(d.regions).empty:  # regions carry their own extra bytes
        lines += ["", f"({_md(ALGORITHMIC_HINT)})"]
    return lines


def _region_table(d: Diagnosis) -> list[str]:
    regions = region_summary(d.regions)
    if regions.empty:
        return []
    lines = ["", "## Regions", "",
             "| region | launches | time | ideal | at stake | extra bytes | intensity (algorithmic / achieved) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for _, r in regions.iterrows():
        lines.append(f"| {_cell(r['name'])} | {r['launches']} | {fmt_seconds(r['time_s'])} | "
                     f"{fmt_seconds(r['ideal_time_s'])} | {fmt_seconds(r['time_at_stake_s'])} | {r['extra']} | "
                     f"{r['intensities']} |")
    return lines


def render_markdown(d: Diagnosis) -> str:
    lines = ["# ncu-roof diagnosis", "",
             f"{headline(d.placed)}; total GPU time {prose_seconds(d.total_time_s)}.", ""]
    for line in roof_lines(d.placed) + run_lines(d.runs):  # a paragraph each
        lines += [_md(line), ""]
    lines += _kernel_table(d) + _region_table(d)
    lines += ["", "## Advice", ""]
    ranked, notes = advice_groups(d.findings)
    verdict = unjudged_line(d.placed, bool(ranked), unmeasured_advice(d.findings), priced_launches(ranked))
    if verdict:
        lines.append(verdict)
    for f in ranked:
        stake = f" ({fmt_seconds(f.time_at_stake_s)} at stake)" if f.time_at_stake_s else ""
        lines.append(f"1. **{f.rule}** [{f.severity}]{stake}: {_md(f.message)}")
        lines += [f"   - at {_md(text)}" for text in finding_line_texts(f)]
    lines += [f"- {_md(text)}" for text in notes]
    head, disagree = ncu_rule_lines(d.ncu_rules, d.total_time_s)
    if head:
        title = "Nsight Compute's estimates the roofline contradicts" if disagree else "Nsight Compute's rules"
        unjudged = ncu_unjudged_lines(d.ncu_rules, d.findings)
        lines += ["", f"## {title}", "", _md(head)] + ([""] if disagree else []) + [f"- {_md(t)}" for t in disagree]
        if unjudged:
            lines += ["", *([f"{UNJUDGED_TITLE}:"] if disagree else []), *[f"- {_md(t)}" for t in unjudged]]
    if d.skipped:
        lines += ["", "## Rules skipped", ""]
        lines += [f"- `{s.rule}`: needs {', '.join(s.missing)}"
                  + (" (pass --algorithmic FILE.toml)" if "algorithmic counts" in s.missing
                     else f" ({s.enable})" if s.enable else "")
                  for s in d.skipped]
    if d.notes:
        lines += ["", "## Notes", ""] + [f"- {_cell(n)}" for n in d.notes]
    return "\n".join(lines) + "\n"
