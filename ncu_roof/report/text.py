"""The terminal summary: a table of the top kernels, then the advice, ranked by time at stake."""

from __future__ import annotations

from ncu_roof.diagnose import Diagnosis
from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.report.summary import kernel_summary, short_name

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
                     f"{fmt_pct(k['pct_of_roof']):>9} {extra:>11}")
    return lines


def _finding_lines(d: Diagnosis) -> list[str]:
    if not d.findings:
        return ["Nothing to win: no rule found time at stake in these launches."]
    lines = [] if any(f.time_at_stake_s for f in d.findings) else [
        "Nothing to win: no rule found time at stake in these launches (notes below)."]
    for i, f in enumerate(d.findings[:TOP_FINDINGS], 1):
        stake = f" [{fmt_seconds(f.time_at_stake_s)} at stake]" if f.time_at_stake_s else ""
        lines.append(f"{i}. ({f.severity}) {f.rule}{stake}: {f.message}")
    if len(d.findings) > TOP_FINDINGS:
        lines.append(f"... and {len(d.findings) - TOP_FINDINGS} more (see --format json)")
    return lines


def render_text(d: Diagnosis) -> str:
    devices = ", ".join(sorted({str(x) for x in d.placed["device"].dropna().unique()})) or "unknown device"
    lines = [f"ncu-roof: {len(d.placed)} launches, {d.placed['kernel'].nunique()} kernels on {devices}; "
             f"total GPU time {fmt_seconds(d.total_time_s)}", ""]
    lines += _kernel_lines(d)
    lines += ["", "Advice (largest time at stake first):"]
    lines += _finding_lines(d)
    if d.skipped:
        lines += ["", "Rules skipped for lack of metrics:"]
        lines += [f"- {s.rule}: needs {', '.join(s.missing)}" + (f" ({s.enable})" if s.enable else "")
                  for s in d.skipped]
    if d.notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in d.notes]
    return "\n".join(lines) + "\n"
