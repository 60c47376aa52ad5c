"""The terminal summary: the top kernels, the regions, then the advice ranked by time at stake."""

from __future__ import annotations

from ncu_roof.diagnose import Diagnosis
from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.report.summary import (
    advice_groups,
    kernel_summary,
    ncu_rule_lines,
    region_summary,
    roof_cell,
    roof_lines,
    short_name,
    unjudged_line,
)

TOP_KERNELS = 10
TOP_FINDINGS = 10


def _kernel_lines(d: Diagnosis) -> list[str]:
    summary = kernel_summary(d.placed).head(TOP_KERNELS)
    header = (f"{'kernel':<40} {'launches':>8} {'time':>10} {'share':>6} {'bound':<9} {'% of roof':>9} "
              f"{'extra bytes':>11}")
    lines = [header, "-" * len(header)]
    for _, k in summary.iterrows():
        extra = "?" if k["extra_bytes_factor"] != k["extra_bytes_factor"] else f"{k['extra_bytes_factor']:.1f}x"
        lines.append(f"{short_name(k['kernel']):<40} {k['launches']:>8} {fmt_seconds(k['time_s']):>10} "
                     f"{fmt_pct(k['share'] * 100 if k['share'] == k['share'] else None):>6} {k['bound']:<9} "
                     f"{roof_cell(k):>9} {extra:>11}")
    hidden = d.placed["kernel"].nunique() - len(summary)
    if hidden > 0:
        lines.append(f"... and {hidden} more kernels (see --format json or ncu-roof table)")
    return lines


def _region_lines(d: Diagnosis) -> list[str]:
    regions = region_summary(d.regions)
    if regions.empty:
        return []
    header = (f"{'region':<24} {'launches':>8} {'time':>10} {'ideal':>10} {'at stake':>10} {'extra bytes':>11} "
              f"{'intensity alg/achieved':>22}")
    lines = ["", header, "-" * len(header)]
    for _, r in regions.iterrows():
        lines.append(f"{short_name(r['name'], 24):<24} {r['launches']:>8} {fmt_seconds(r['time_s']):>10} "
                     f"{fmt_seconds(r['ideal_time_s']):>10} {fmt_seconds(r['time_at_stake_s']):>10} "
                     f"{r['extra']:>11} {r['intensities']:>22}")
    return lines


def _finding_lines(d: Diagnosis) -> list[str]:
    ranked, notes = advice_groups(d.findings)
    verdict = unjudged_line(d.placed, bool(ranked))
    lines = [verdict] if verdict else []
    for i, f in enumerate(ranked[:TOP_FINDINGS], 1):
        stake = f" [{fmt_seconds(f.time_at_stake_s)} at stake]" if f.time_at_stake_s else ""
        lines.append(f"{i}. ({f.severity}) {f.rule}{stake}: {f.message}")
    if len(ranked) > TOP_FINDINGS:
        lines.append(f"... and {len(ranked) - TOP_FINDINGS} more (see --format json)")
    lines += [f"- {text}" for text in notes]
    return lines


def render_text(d: Diagnosis) -> str:
    devices = ", ".join(sorted({str(x) for x in d.placed["device"].dropna().unique()})) or "unknown device"
    lines = [f"ncu-roof: {len(d.placed)} launches, {d.placed['kernel'].nunique()} kernels on {devices}; "
             f"total GPU time {fmt_seconds(d.total_time_s)}"]
    lines += roof_lines(d.placed) + [""]
    lines += _kernel_lines(d)
    lines += _region_lines(d)
    lines += ["", "Advice (largest time at stake first):"]
    lines += _finding_lines(d)
    head, disagree = ncu_rule_lines(d.ncu_rules, d.total_time_s)
    if head:
        title = "Nsight Compute's estimates the roofline contradicts:" if disagree else "Nsight Compute's rules:"
        lines += ["", title, head] + [f"- {text}" for text in disagree]
    if d.skipped and any(f.time_at_stake_s for f in d.findings):
        lines += ["", f"{len(d.skipped)} rules skipped for lack of metrics ({', '.join(s.rule for s in d.skipped)}); "
                  "--format json says what to capture."]
    elif d.skipped:
        lines += ["", "Rules skipped for lack of metrics (--format json says what to capture): "
                  + ", ".join(f"{s.rule} ({', '.join(s.missing)})" for s in d.skipped)]
    if d.notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in d.notes]
    return "\n".join(lines) + "\n"
