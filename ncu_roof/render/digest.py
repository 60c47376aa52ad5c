"""The digest: a diagnosis in a token budget, for a coding agent (``diagnose --format digest``, the MCP
server's default).

What it says, most important first: the inputs, each device's roofs, the top kernels with their binding
unit, the findings with their stake (the top one in full: message, evidence, the source line it names
and the ncu command that re-collects what proves it, :mod:`ncu_roof.verify`; the others one line each:
rule, stake, kernels, line), and what the reports lack (skipped rules in one line). Every number names
its source: ``ncu_metric=value`` where it is one metric's value, else in brackets an ncu metric, the
catalogue's label for how a quantity was made, a formula, or a short key (``T``, ``S``, ``B``, ``P``)
that the legend line defines once; launches by their IDs in a report (``R1``...). Unknown is ``not
measured``, never 0 or nan. Tokens are estimated as characters / 4 (:data:`CHARS_PER_TOKEN`); items are
dropped, lowest ranked first, until the digest fits the budget, and the digest says how many were left
out. Over the 71 real reports of ``../shared/realdata`` it is a median 10.04x smaller than ``ncu
--import R --page details`` (tests/mcp/test_agent_outputs.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof.diagnosis import Diagnosis
from ncu_roof.fmt import fmt_seconds, fmt_si, plural
from ncu_roof.read.cubin import short_name
from ncu_roof.render.summary import debug_build_line

DEFAULT_BUDGET = 2000  # tokens
CHARS_PER_TOKEN = 4
NOT_MEASURED = "not measured"
TOP_KERNELS = 5
TOP_FINDINGS = 5
# How the model's own numbers are made (docs/model.md), where a finding's evidence quotes them.
FORMULAS = {
    "achieved_dram_bytes_per_s": "dram_bytes / time_s", "achieved_l2_bytes_per_s": "l2_bytes / time_s",
    "achieved_flops_per_s": "flops / time_s", "headroom_s": "time_s - work's least time",
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
    versions = {r.get("report"): r.get("ncu_version") for r in d.runs}
    names = {report: Path(report).name for report in tags}
    unique = len(set(names.values())) == len(names)  # file names where they tell the reports apart
    named = [f"{tag} = {names[report] if unique else report}"
             + (f" (ncu {versions[report]})" if versions.get(report) else "") for report, tag in tags.items()]
    line = f"{plural(kernels, 'kernel')}, {plural(len(p), 'launch')}, {_num(d.total_time_s)} GPU time [T, all]"
    return ([f"# ncu-roof digest of {named[0]}: {line}"] if len(named) == 1
            else [f"# ncu-roof digest: {line}", *named])


# The sources the digest names by a short key in brackets, each said once in its legend (only those used).
LEGEND = {
    "T": "gpu__time_duration.sum of the launches named",
    "S": "time_at_stake_s (stake model)",
    "B": "binding_unit_share (unit busy / duration)",
    "P": "pct_of_roof (achieved / attainable, basis)",
}


def _legend(body: str) -> str:
    used = [k for k in LEGEND if re.search(r"\[" + k + r"[],]", body)]
    keys = "; ".join(f"{k} = {LEGEND[k]}" for k in used)
    return f"Sources: ncu_metric=value, else [metric or formula]{'; ' + keys if keys else ''}"


def _launches(tag: str, ids: Any) -> str:
    ids = list(ids)
    return f"{tag} launch{'es' if len(ids) > 1 else ''} {_ids(ids)}"


def _roofs(d: Diagnosis, tags: dict[str, str]) -> list[str]:
    p = d.placed
    lines = ["## Device and roofs"]
    if "device" not in p or p.empty:
        return [*lines, f"device {NOT_MEASURED}"]
    for device, rows in p.groupby(p["device"].fillna(NOT_MEASURED).astype(str), sort=False):
        row = rows.iloc[0]
        roofs, unknown = [], []
        for label, col, src, unit in _ROOFS:
            value = row.get(col)
            if _known(value):
                roofs.append(f"{label} {_num(value, 'si', unit)} [{row.get(src) or col}]")
            else:
                unknown.append(label)
        if unknown:
            roofs.append(f"{', '.join(unknown)} roof{'s' if len(unknown) > 1 else ''} {NOT_MEASURED}")
        sms: Any = row.get("sm_count")
        extra = f", {int(sms)} SMs [device__attribute_multiprocessor_count]" if _known(sms) else ""
        where = f" ({_launches(tags.get(str(row.get('report')), '?'), [row['id']])})" if len(tags) > 1 else ""
        lines.append(f"{device}{extra}{where}: " + "; ".join(roofs))
    return lines + [line for run in d.runs if (line := debug_build_line(run, short=True))]


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
        binding = (f"binding unit {unit} busy {100 * float(share):.3g}% [B]" if _known(unit) and _known(share)
                   else f"binding unit {NOT_MEASURED}")
        roof: Any = k.get("pct_of_roof")
        roof_text = (f"{float(roof):.3g}% of roof [P, {k.get('pct_basis')}]" if _known(roof)
                     else f"% of roof {NOT_MEASURED}")
        out.append([f"- {k['kernel']}: {_num(k['time_s'])} [T, {_launches(','.join(reports), rows['id'])}], "
                    f"{_share(k['share'])} of all; {binding}; {roof_text}"])
    return out


_METRIC = re.compile(r"^[a-z0-9]+__[A-Za-z0-9_.]+$")


IDLE_PIPE_PCT = 5.0  # a pipe under this share of its peak is left out of a finding's evidence


def _evidence(f: Any, row: pd.Series | None, said: set[tuple[Any, ...]]) -> str:
    """The finding's numeric evidence with sources: ``metric=value`` where the number is one ncu
    metric's, else ``key=value [how it was made]``. What the digest already said of the same launch
    (``said``: (launch, key, value)), the device's SM count, the launch time (in the finding's head) and
    pipes under :data:`IDLE_PIPE_PCT` of their peak are not repeated."""
    from ncu_roof.read.metrics import quantity

    parts = []
    launch = None if row is None else (row.get("report"), row.get("id"))
    for key, value in list(f.evidence.items())[:8]:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or key in ("time_s", "sm_count"):
            continue
        if (launch, key, value) in said or (key.startswith("pipe_") and key.endswith("_pct") and value < IDLE_PIPE_PCT):
            continue  # said already, or a pipe all but idle: no evidence of what binds
        said.add((launch, key, value))
        alt = re.sub(r"_(bytes|flops)_per_s$", "_src", key)
        src = next((row.get(c) for c in (f"{key}_src", *([alt] if alt != key else []))
                    if row is not None and c in row.index and _known(row.get(c))), None) or FORMULAS.get(key)
        if not src:
            try:
                src = quantity(key).sources[0].label
            except (KeyError, IndexError):
                src = "ncu-roof model"
        if not _known(value):
            parts.append(f"{key}={NOT_MEASURED}")
        elif _METRIC.match(str(src)):
            parts.append(f"{src}={value:.4g}")
        else:
            parts.append(f"{key}={value:.4g} [{src}]")
    return "; ".join(parts)


def _line_text(d: Diagnosis, f: Any) -> str | None:
    """The one source line a finding names: its hottest, with its text where the report has it."""
    if not f.lines:
        return None
    x = f.lines[0]
    function = short_name(x.function) if x.function else "?"  # a mangled name by its short name, as ncu shows it
    where = f"{x.file}:{x.line}" if x.line is not None else f"{function}+0x{x.offsets[0]:x}" if x.offsets else function
    text = d.sources.get(x.file or "", {}).get(x.line) if x.line is not None else x.sass
    share = f"{100 * x.share:.3g}% of {x.counter} [Source Counters]" if _known(x.share) else ""
    return f"  line: {where} {share}" + (f": `{str(text).strip()[:80]}`" if text else "")


DETAILED_FINDINGS = 1  # findings said in full (message, evidence, line, verify); the rest one line each


def _kernel_said(d: Diagnosis) -> set[tuple[Any, ...]]:
    """(launch, key, value) the top kernels' lines say already: binding-unit share and % of roof of a
    kernel of one launch (a finding's evidence need not repeat them)."""
    from ncu_roof.model.kernels import kernel_summary

    p = d.placed
    said: set[tuple[Any, ...]] = set()
    if p.empty or "kernel" not in p:
        return said
    for _, k in kernel_summary(p).head(TOP_KERNELS).iterrows():
        rows = p[(p["kernel"] == k["kernel"]) & (p["device"].astype(str) == str(k["device"]))]
        if len(rows) == 1:
            row = rows.iloc[0]
            said |= {((row.get("report"), row.get("id")), key, row.get(key))
                     for key in ("binding_unit_share", "pct_of_roof") if key in row.index}
    return said


def _findings(d: Diagnosis, tags: dict[str, str]) -> list[list[str]]:
    """Each finding's lines: the top one in full (message, evidence, line, verify command), the
    others one line each (rule, stake, kernels, the line they name)."""
    from ncu_roof.verify import finding_verify

    out: list[list[str]] = []
    ranked = ([f for f in d.findings if f.severity != "info"] or list(d.findings))[:TOP_FINDINGS]
    for i, f in enumerate(ranked, 1):
        rows = d.placed[d.placed["id"].isin(f.ids)] if f.ids and "id" in d.placed else pd.DataFrame()
        if f.report is not None and not rows.empty and "report" in rows:
            rows = rows[rows["report"].astype(str) == f.report]
        time = rows["time_s"].sum(min_count=1) if "time_s" in rows else None
        stake = f"{_num(f.time_at_stake_s)} at stake [S]" if _known(f.time_at_stake_s) else f"stake {NOT_MEASURED}"
        where = _launches(tags.get(str(f.report), "?"), f.ids) if f.ids else "no launch"
        head = f"{i}. {f.rule} ({f.severity}): {stake} of {_num(time)} [T, {where}]"
        line = _line_text(d, f)
        if i > DETAILED_FINDINGS:
            at = line.split(" ", 4)[3] if line else None
            out.append([f"{head}: {', '.join(f.kernels)}" + (f", line {at}" if at else "")])
            continue
        item = [head, f"  {f.message}"]
        ev = _evidence(f, rows.iloc[0] if not rows.empty else None, _kernel_said(d))
        item += [f"  evidence: {ev}"] if ev else []
        item += [line] if line else []
        verify = finding_verify(d, f)
        item += [f"  verify: {verify['command']}"] if verify else []
        out.append(item)
    return out


_LACK = re.compile(r"^(\d+ of \d+ launch(?:es)?) lack (\w+) \(")


def _lacks(d: Diagnosis) -> list[str]:
    lines = ["## Lacking (not measured)"]
    by_count: dict[str, list[str]] = {}
    for n in d.notes:
        if not ("lack" in n or "not measured" in n or "unknown" in n):
            continue
        m = _LACK.match(n)
        if m:
            by_count.setdefault(m[1], []).append(m[2])
        else:
            lines.append(f"- {n}")
    lines += [f"- {count} lack {', '.join(keys)}" for count, keys in by_count.items()]
    lacking = {k for keys in by_count.values() for k in keys}
    inputs = list(dict.fromkeys(x for s in d.skipped for x in s.missing if x not in lacking))
    inputs += ["the quantities above"] if any(x in lacking for s in d.skipped for x in s.missing) else []
    if inputs:
        lines.append(f"- {plural(len(d.skipped), 'rule')} not run, lacking {', '.join(inputs)} (capture_plan "
                     "collects them)")
    return lines if len(lines) > 1 else [*lines, "- nothing a rule needs"]


def digest_parts(d: Diagnosis) -> Parts:
    """Every block of the digest, before the budget cuts it."""
    tags = _report_tags(d)
    return Parts(_head(d, tags), _roofs(d, tags), _kernels(d, tags), _findings(d, tags), _lacks(d))


def _join(p: Parts, budget: int, cut: dict[str, int]) -> str:
    kernels = ["## Top kernels (by time)"] + [x for item in p.kernels for x in item]
    findings = (["## Findings (by time at stake)"] + [x for item in p.findings for x in item]
                if p.findings else ["## Findings", "- none"])
    if len(p.findings) > DETAILED_FINDINGS:
        findings.append("(the rest in full: --format json or the diagnose tool; verify: capture_plan)")
    left = [what if what == "evidence lines" else f"{n} {what}" for what, n in cut.items() if n]
    tail = ([f"(left out to fit the budget of {budget} tokens, as characters / 4: {', '.join(left)}; ask with a "
             "larger budget, or --format json)"] if left else [])
    body = [*p.roofs, *kernels, *findings, *p.lacks, *tail]
    return "\n".join([*p.head, _legend("\n".join(p.head + body)), *body]) + "\n"


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
