"""The digest: a diagnosis in a token budget, for a coding agent (``diagnose --format digest``, the MCP
server's default).

What it says, most important first: the inputs, each device's roofs, the top kernels with their binding
unit, the top findings with their stake, the one source line each names and the ncu command that
re-collects what proves it (:mod:`ncu_roof.verify`), and what the reports lack. Every number names its
source in brackets: an ncu metric, the catalogue's label for how a quantity was made, or the formula;
launches by their IDs in a report (``R1``...). Unknown is ``not measured``, never 0 or nan. Tokens are
estimated as characters / 4 (:data:`CHARS_PER_TOKEN`); items are dropped, lowest ranked first, until the
digest fits the budget, and the digest says how many were left out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ncu_roof.diagnosis import Diagnosis
from ncu_roof.fmt import fmt_seconds, fmt_si

DEFAULT_BUDGET = 2000  # tokens
CHARS_PER_TOKEN = 4
NOT_MEASURED = "not measured"
TOP_KERNELS = 5
TOP_FINDINGS = 5
# How the model's own numbers are made (docs/model.md), where a finding's evidence quotes them.
FORMULAS = {
    "achieved_dram_bytes_per_s": "dram_bytes / time_s", "achieved_l2_bytes_per_s": "l2_bytes / time_s",
    "achieved_flops_per_s": "flops / time_s", "headroom_s": "time_s - time_lower_bound_s",
    "time_lower_bound_s": "max(flops / compute roof, bytes / memory roof)", "intensity_dram": "flops / dram_bytes",
    "pct_of_roof": "achieved / attainable x 100", "binding_unit_share": "unit busy time / duration",
}
_ROOFS = (("DRAM", "dram_roof_bytes_per_s", "dram_roof_src", "B/s"),
          ("L2", "l2_roof_bytes_per_s", "l2_roof_src", "B/s"),
          ("L1", "l1_roof_bytes_per_s", "l1_roof_src", "B/s"),
          ("compute", "peak_flops_per_s", "peak_flops_src", "FLOP/s"))


def tokens(text: str) -> int:
    """The digest's token estimate: characters / 4, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _known(value: Any) -> bool:
    return value is not None and value is not pd.NA and not (isinstance(value, float) and math.isnan(value))


def _num(value: Any, fmt: str = "s", unit: str = "") -> str:
    if not _known(value):
        return NOT_MEASURED
    return fmt_seconds(float(value)) if fmt == "s" else fmt_si(float(value), unit)


def _share(value: Any) -> str:
    return f"{100 * float(value):.3g}%" if _known(value) else NOT_MEASURED


@dataclass
class Parts:
    """The digest's blocks: each a list of lines; ``kernels`` and ``findings`` items droppable."""

    head: list[str]
    roofs: list[str]
    kernels: list[list[str]]
    findings: list[list[str]]
    lacks: list[str]


def _report_tags(d: Diagnosis) -> dict[str, str]:
    reports = list(dict.fromkeys(d.placed["report"].astype(str))) if "report" in d.placed else []
    return {r: f"R{i}" for i, r in enumerate(reports, 1)}


def _ids(ids: Any, limit: int = 6) -> str:
    ids = sorted(int(i) for i in ids)
    shown = ",".join(map(str, ids[:limit]))
    return shown + (f",... ({len(ids)} launches)" if len(ids) > limit else "")


def _head(d: Diagnosis, tags: dict[str, str]) -> list[str]:
    p = d.placed
    kernels = p["kernel"].nunique() if "kernel" in p else 0
    lines = [f"# ncu-roof digest: {kernels} kernels, {len(p)} launches; total GPU time "
             f"{_num(d.total_time_s)} [sum of gpu__time_duration.sum]"]
    versions = {r.get("report"): r.get("ncu_version") for r in d.runs}
    lines += [f"{tag} = {report}" + (f" (ncu {versions[report]})" if versions.get(report) else "")
              for report, tag in tags.items()]
    return lines


def _roofs(d: Diagnosis, tags: dict[str, str]) -> list[str]:
    p = d.placed
    lines = ["## Device and roofs (a device's first launch)"]
    if "device" not in p or p.empty:
        return [*lines, f"device {NOT_MEASURED}"]
    for device, rows in p.groupby(p["device"].fillna(NOT_MEASURED).astype(str), sort=False):
        row = rows.iloc[0]
        where = f"launch {int(row['id'])} of {tags.get(str(row.get('report')), '?')}"
        roofs = []
        for label, col, src, unit in _ROOFS:
            value = row.get(col)
            roofs.append(f"{label} {_num(value, 'si', unit)}"
                         + (f" [{row.get(src) or col}]" if _known(value) else ""))
        sms: Any = row.get("sm_count")
        extra = f", {int(sms)} SMs [device__attribute_multiprocessor_count]" if _known(sms) else ""
        lines.append(f"{device}{extra} ({where}): " + "; ".join(roofs))
    return lines


def _kernels(d: Diagnosis, tags: dict[str, str]) -> list[list[str]]:
    from ncu_roof.model.kernels import kernel_summary

    p = d.placed
    if p.empty or "kernel" not in p:
        return []
    out = []
    for _, k in kernel_summary(p).head(TOP_KERNELS).iterrows():
        rows = p[(p["kernel"] == k["kernel"]) & (p["device"].astype(str) == str(k["device"]))]
        reports = sorted({tags.get(str(r), "?") for r in rows.get("report", pd.Series(dtype=str))})
        unit = k.get("binding_unit")
        share: Any = k.get("binding_unit_share")
        binding = (f"binding unit {unit} busy {100 * float(share):.3g}% of its time [binding_unit_share: unit busy "
                   "time / duration, docs/model.md]" if _known(unit) and _known(share)
                   else f"binding unit {NOT_MEASURED}")
        roof: Any = k.get("pct_of_roof")
        roof_text = (f"{float(roof):.3g}% of roof [pct_of_roof: achieved / attainable, {k.get('pct_basis')}]"
                     if _known(roof) else f"% of roof {NOT_MEASURED}")
        out.append([f"- {k['kernel']}: {_num(k['time_s'])} [gpu__time_duration.sum over launches "
                    f"{_ids(rows['id'])} of {','.join(reports)}], {_share(k['share'])} of the total; "
                    f"{binding}; {roof_text}"])
    return out


def _evidence(f: Any, row: pd.Series | None) -> str:
    from ncu_roof.read.metrics import quantity

    parts = []
    for key, value in list(f.evidence.items())[:8]:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        alt = re.sub(r"_(bytes|flops)_per_s$", "_src", key)
        src = next((row.get(c) for c in (f"{key}_src", *([alt] if alt != key else []))
                    if row is not None and c in row.index and _known(row.get(c))), None) or FORMULAS.get(key)
        if not src:
            try:
                src = quantity(key).sources[0].label
            except (KeyError, IndexError):
                src = "ncu-roof model"
        parts.append(f"{key}={value:.4g} [{src}]" if _known(value) else f"{key}={NOT_MEASURED}")
    return "; ".join(parts)


def _line_text(d: Diagnosis, f: Any) -> str | None:
    """The one source line a finding names: its hottest, with its text where the report has it."""
    if not f.lines:
        return None
    x = f.lines[0]
    where = f"{x.file}:{x.line}" if x.line is not None else f"{x.function or '?'}+0x{x.offsets[0]:x}" if x.offsets \
        else str(x.function)
    text = d.sources.get(x.file or "", {}).get(x.line) if x.line is not None else x.sass
    share = f"{100 * x.share:.3g}% of {x.counter} [Source Counters]" if _known(x.share) else ""
    return f"  line: {where} {share}" + (f": `{str(text).strip()[:120]}`" if text else "")


def _findings(d: Diagnosis, tags: dict[str, str]) -> list[list[str]]:
    from ncu_roof.verify import finding_verify

    out = []
    ranked = [f for f in d.findings if f.severity != "info"] or list(d.findings)
    for i, f in enumerate(ranked[:TOP_FINDINGS], 1):
        rows = d.placed[d.placed["id"].isin(f.ids)] if f.ids and "id" in d.placed else pd.DataFrame()
        if f.report is not None and not rows.empty and "report" in rows:
            rows = rows[rows["report"].astype(str) == f.report]
        time = rows["time_s"].sum(min_count=1) if "time_s" in rows else None
        stake = (f"{_num(f.time_at_stake_s)} at stake [time_at_stake_s: ncu-roof's stake model, docs/diagnosis.md]"
                 if _known(f.time_at_stake_s) else f"stake {NOT_MEASURED}")
        where = f"launches {_ids(f.ids)} of {tags.get(str(f.report), '?')}" if f.ids else "no launch"
        item = [f"{i}. {f.rule} ({f.severity}): {stake} of {_num(time)} [gpu__time_duration.sum of {where}]",
                f"  {f.message}"]
        ev = _evidence(f, rows.iloc[0] if not rows.empty else None)
        item += [f"  evidence: {ev}"] if ev else []
        line = _line_text(d, f)
        item += [line] if line else []
        verify = finding_verify(d, f)
        item += [f"  verify: {verify['command']}"] if verify else []
        out.append(item)
    return out


def _lacks(d: Diagnosis) -> list[str]:
    lines = ["## Not measured (what the reports lack)"]
    lines += [f"- {n}" for n in d.notes if "lack" in n or "not measured" in n or "unknown" in n]
    by_input: dict[str, list[str]] = {}
    for s in d.skipped:
        by_input.setdefault(", ".join(s.missing), []).append(s.rule)
    if by_input:
        lines.append("- rules not run for want of: " + "; ".join(f"{k} ({', '.join(v)})" for k, v in by_input.items())
                     + " (capture_plan, or `ncu-roof capture`, names what collects them)")
    return lines if len(lines) > 1 else [*lines, "- nothing a rule needs"]


def digest_parts(d: Diagnosis) -> Parts:
    """Every block of the digest, before the budget cuts it."""
    tags = _report_tags(d)
    return Parts(_head(d, tags), _roofs(d, tags), _kernels(d, tags), _findings(d, tags), _lacks(d))


def _join(p: Parts, budget: int, cut: dict[str, int]) -> str:
    said = [f"(budget {budget} tokens, estimated as characters / 4)"]
    kernels = ["## Top kernels (by time)"] + [x for item in p.kernels for x in item]
    findings = ["## Findings (largest time at stake first)"] + [x for item in p.findings for x in item]
    left = [what if what == "evidence lines" else f"{n} {what}" for what, n in cut.items() if n]
    tail = ([f"(left out to fit the budget: {', '.join(left)}; ask with a larger budget, or --format json)"]
            if left else [])
    return "\n".join([*p.head, *said, *p.roofs, *kernels, *findings, *p.lacks, *tail]) + "\n"


def render_digest(d: Diagnosis, budget: int = DEFAULT_BUDGET) -> str:
    """The digest of ``d`` in at most ``budget`` tokens (characters / 4): what is lacking beyond its
    first lines, then findings beyond the first, then kernels beyond the first, then the rest of
    what is lacking, are left out until it fits."""
    p = digest_parts(d)
    cut = {"findings": 0, "kernels": 0, "lacking lines": 0, "evidence lines": 0}
    text = _join(p, budget, cut)
    while tokens(text) > budget:
        if len(p.lacks) > 4:
            p.lacks.pop()
            cut["lacking lines"] += 1
        elif len(p.findings) > 1:
            p.findings.pop()
            cut["findings"] += 1
        elif len(p.kernels) > 1:
            p.kernels.pop()
            cut["kernels"] += 1
        elif len(p.lacks) > 1:
            p.lacks.pop()
            cut["lacking lines"] += 1
        elif any(x.startswith("  evidence: ") for item in p.findings for x in item):
            p.findings = [[x for x in item if not x.startswith("  evidence: ")] for item in p.findings]
            cut["evidence lines"] = 1
        else:
            keep = budget * CHARS_PER_TOKEN - 40
            return text[:max(keep, 0)].rstrip() + "\n(cut to fit the budget)\n"
        text = _join(p, budget, cut)
    return text
