"""Rules: the placed table in, findings out.

Enters: a :class:`~ncu_roof.rules.base.Context` (the placed table, thresholds, regions, Nsight
Compute's own rule results). ``base`` holds the ``@rule`` registry and the finding types;
``common`` the row helpers; ``signals`` the per-launch signals (one row in, evidence or None out);
``stakes`` the one engine that prices every fix; the rule modules listed in :data:`RULE_MODULES`
(``limiter``, ``launch``, ``traps``, ``reference``, ``checklist``) turn signals into findings,
and :mod:`~ncu_roof.rules.crossexam` sets ncu's own rule results beside ours.
:func:`evaluate` runs every rule that has its inputs. Leaves: findings (ranked by time at stake)
and the rules skipped with the capture that would enable them. A new rule: a ``@rule`` function in
the module of what it looks at (copy ``launch.grid_underfill``), its per-launch signal in ``signals``.
``timeline`` (not in ``RULE_MODULES``) judges a measured trace timeline instead of a placed table.
"""

from __future__ import annotations

from dataclasses import replace

from ncu_roof.rules import checklist, launch, limiter, reference, traps
from ncu_roof.rules.base import (
    CAUSE_ORDER,
    RULES,
    SEVERITY_ORDER,
    Context,
    Finding,
    Severity,
    Skipped,
    _missing_inputs,
    rule,
    run_severity,
)
from ncu_roof.rules.common import rows_cached

# The rule modules: importing them registers their @rule functions in base.RULES; RULES runs (and
# lists skipped rules) in this module order, each module's rules in the order they are written.
RULE_MODULES = (limiter, launch, traps, reference, checklist)
_ORDER = [m.__name__ for m in RULE_MODULES]
RULES.sort(key=lambda r: _ORDER.index(r.func.__module__))

__all__ = ["CONDITIONAL", "RULES", "RULE_MODULES", "Context", "Finding", "Skipped", "evaluate", "rule"]


# Findings that hold only if a hypothesis does (kernels in a row being one computation): ranked after
# every finding the measurements show, whatever their stakes.
CONDITIONAL = frozenset({"fusion-chain"})


def evaluate(ctx: Context) -> tuple[list[Finding], list[Skipped]]:
    """Run every rule that has its inputs; severity set here, in one place, from the share of the
    run's GPU time at stake; findings ranked by time at stake, then severity, conditional ones after
    the other findings with a stake."""
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
    findings = [replace(f, severity=_capped(f, run_severity(f, run_time, ctx.thresholds))) for f in findings]
    findings.sort(key=lambda f: (not f.time_at_stake_s, f.rule in CONDITIONAL, -(f.time_at_stake_s or 0.0),
                                 CAUSE_ORDER.get(f.rule, 3), SEVERITY_ORDER[f.severity], f.rule))
    return _mark_overlaps(findings), skipped


def _capped(f: Finding, severity: Severity) -> Severity:
    """A conditional finding is at most medium: it holds only if its hypothesis does."""
    return "medium" if f.rule in CONDITIONAL and severity == "high" else severity


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
