"""The rule machinery: findings, the inputs each rule needs, and evaluation.

A rule is a small pure function ``(context) -> list[Finding]`` registered with :func:`rule`,
declaring the tidy/placed columns it needs. :func:`evaluate` skips a rule whose inputs no
launch has, and records what capture would enable it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pandas as pd

from ncu_roof.model.roofline import Thresholds, reaches

Severity = Literal["high", "medium", "low", "info"]
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass(frozen=True)
class Finding:
    """One piece of advice: which rule, about what, how sure, and how much time is at stake."""

    rule: str
    kernels: tuple[str, ...]
    region: str | None
    severity: Severity
    message: str
    time_at_stake_s: float | None
    evidence: dict[str, Any] = field(default_factory=dict)
    ids: tuple[int, ...] = ()
    report: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "kernels": list(self.kernels), "region": self.region,
            "severity": self.severity, "message": self.message,
            "time_at_stake_s": self.time_at_stake_s, "evidence": self.evidence,
            "ids": list(self.ids), "report": self.report,
        }


@dataclass(frozen=True)
class Skipped:
    """A rule that could not run: the inputs it lacked and the capture that would provide them."""

    rule: str
    missing: tuple[str, ...]
    enable: str


@dataclass(frozen=True)
class Context:
    """What rules look at: placed launches, regions, per-kernel aggregates, thresholds."""

    placed: pd.DataFrame
    regions: pd.DataFrame
    thresholds: Thresholds


RuleFunc = Callable[[Context], list[Finding]]


@dataclass(frozen=True)
class Rule:
    id: str
    func: RuleFunc
    needs: tuple[str, ...]
    enable: str
    needs_regions: bool = False


RULES: list[Rule] = []


def rule(rule_id: str, needs: tuple[str, ...] = (), enable: str = "", needs_regions: bool = False
         ) -> Callable[[RuleFunc], RuleFunc]:
    """Register a rule; ``needs`` are columns of the placed table at least one launch must have."""

    def register(func: RuleFunc) -> RuleFunc:
        RULES.append(Rule(rule_id, func, needs, enable, needs_regions))
        return func

    return register


def _missing_inputs(r: Rule, ctx: Context) -> tuple[str, ...]:
    missing = tuple(c for c in r.needs if c not in ctx.placed or not ctx.placed[c].notna().any())
    if r.needs_regions and (ctx.regions.empty or "alg_bytes" not in ctx.regions):
        missing += ("algorithmic counts",)
    return missing


def run_severity(f: Finding, run_time_s: float, th: Thresholds) -> Severity:
    """Severity by the share of the whole run's GPU time at stake (not the kernel's own time):
    high at ``th.severity_high_share`` or more, medium at ``th.severity_medium_share``, else low.
    A rule's "info" (a note with nothing to win) stays info."""
    if f.severity == "info":
        return "info"
    stake = f.time_at_stake_s
    if stake is None or stake != stake or not run_time_s > 0:
        return "low"
    share = stake / run_time_s
    return ("high" if reaches(share, th.severity_high_share) else "medium" if reaches(share, th.severity_medium_share)
            else "low")


def evaluate(ctx: Context) -> tuple[list[Finding], list[Skipped]]:
    """Run every rule that has its inputs; severity set here, in one place, from the share of the
    run's GPU time at stake; findings ranked by time at stake, then severity."""
    from ncu_roof import rules as _rules  # noqa: F401 - importing the package registers the rules
    from ncu_roof.rules.common import rows_cached

    findings: list[Finding] = []
    skipped: list[Skipped] = []
    with rows_cached(ctx.placed):
        for r in RULES:
            missing = _missing_inputs(r, ctx)
            if missing:
                skipped.append(Skipped(r.id, missing, r.enable))
                continue
            findings.extend(r.func(ctx))
    run_time = float(ctx.placed["time_s"].sum(min_count=1)) if "time_s" in ctx.placed else float("nan")
    findings = [replace(f, severity=run_severity(f, run_time, ctx.thresholds)) for f in findings]
    findings.sort(key=lambda f: (-(f.time_at_stake_s or 0.0), CAUSE_ORDER.get(f.rule, 3),
                                 SEVERITY_ORDER[f.severity], f.rule))
    return _mark_overlaps(findings), skipped


# Where two rules claim the same time, the cause comes before the symptom: extra bytes and the
# access pattern before the launch shape, and those before occupancy and the generic verdict.
CAUSE_ORDER = {"fuse-extra-bytes": 0, "uncoalesced-access": 1, "bank-conflicts": 1, "above-dram-roof": 1,
               "grid-underfill": 2, "wave-tail": 2, "fp64-pipe": 2, "no-fma-roof": 2, "block-size": 2,
               "busy-pipe": 3, "divergence": 4, "low-occupancy": 5, "warp-stalls": 5, "below-roof": 6}


def _mark_overlaps(findings: list[Finding]) -> list[Finding]:
    """Several rules can claim the same launches' headroom: say so on all but the largest claim,
    so nobody adds the stakes up."""
    first: dict[tuple[str | None, tuple[int, ...]], Finding] = {}
    out = []
    for f in findings:
        key = (f.report, f.ids)
        lead = first.get(key)
        if lead is None or not f.time_at_stake_s or not f.ids:
            first.setdefault(key, f)
            out.append(f)
            continue
        note = f" Overlaps {lead.rule}: the same time, not in addition."
        out.append(replace(f, message=f.message + note, evidence={**f.evidence, "overlaps": lead.rule}))
    return out
