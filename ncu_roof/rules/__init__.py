"""Rules: the placed table in, findings out.

Enters: a :class:`~ncu_roof.rules.base.Context` (the placed table, thresholds, regions, Nsight
Compute's own rule results). ``base`` holds the ``@rule`` registry and the finding types;
``common`` the row helpers; ``signals`` the per-launch signals (one row in, evidence or None out);
``stakes`` the one model that prices every fix; ``engine`` runs the per-launch rules declared with
:func:`~ncu_roof.rules.engine.per_kernel` (group, flag, price, evidence); the rule modules listed in
:data:`RULE_MODULES`
(``limiter``, ``launch``, ``traps``, ``reference``, ``checklist``) turn signals into findings,
and :mod:`~ncu_roof.rules.crossexam` sets ncu's own rule results beside ours.
:func:`evaluate` runs every rule that has its inputs. Leaves: findings (ranked by time at stake)
and the rules skipped with the capture that would enable them. A new rule: its per-launch signal in
``signals`` and a ``@per_kernel`` declaration over its message (copy ``traps.bank_conflicts``).
``timeline`` (not in ``RULE_MODULES``) judges a measured trace timeline instead of a placed table.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ncu_roof.fmt import fmt_seconds
from ncu_roof.gc_pause import paused_gc
from ncu_roof.model.roofline import Thresholds
from ncu_roof.rules import checklist, ladder, launch, limiter, partial, reference, traps
from ncu_roof.rules.base import (
    RULES,
    SEVERITY_ORDER,
    Context,
    Finding,
    Severity,
    Skipped,
    _missing_inputs,
    about,
    rule,
    run_severity,
)
from ncu_roof.rules.library import is_harness

# The rule modules: importing them registers their @rule functions in base.RULES; RULES runs (and
# lists skipped rules) in this module order, each module's rules in the order they are written.
RULE_MODULES = (limiter, launch, traps, partial, ladder, reference, checklist)
_ORDER = [m.__name__ for m in RULE_MODULES]
RULES.sort(key=lambda r: _ORDER.index(r.func.__module__))

__all__ = ["CONDITIONAL", "RULES", "RULE_MODULES", "Context", "Finding", "Skipped", "evaluate", "rule"]


# Findings that hold only if a hypothesis does (kernels in a row being one computation): at most
# medium severity; ranked by their stakes with the others.
CONDITIONAL = frozenset({"fusion-chain"})

def fix_of(f: Finding, th: Thresholds) -> str:
    """The change a finding's fix makes (its rule's ``About.fix``): rules that advise the same change
    (reuse through tiling, coalescing) share it; any other finding is its own."""
    fix = about(f.rule).fix
    if fix is None:
        return f.rule
    return fix if isinstance(fix, str) else fix(f, th)


def evaluate(ctx: Context) -> tuple[list[Finding], list[Skipped]]:
    """Run every rule that has its inputs; severity set here, in one place, from the share of the
    run's GPU time at stake; findings in :func:`ranking` order."""
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    # Python's cyclic garbage collector paused while the rules run: with a dict per launch alive,
    # each of its passes would walk them all (0.7 s of the rules' 1.9 s on 10,000 launches)
    with paused_gc():
        for r in RULES:
            missing = _missing_inputs(r, ctx)
            if missing:
                skipped.append(Skipped(r.id, missing, r.enable))
                continue
            findings.extend(r.func(ctx))
    findings = [_harness_note(f) for f in findings if not _negligible(f, ctx.thresholds)]
    run_time = float(ctx.placed["time_s"].sum(min_count=1)) if "time_s" in ctx.placed else float("nan")
    per_report = (ctx.placed.groupby(ctx.placed["report"].astype(str))["time_s"].sum(min_count=1).to_dict()
                  if "time_s" in ctx.placed and "report" in ctx.placed else {})
    # severity by the share of the finding's own report's time (inputs read together each keep theirs)
    findings = [replace(f, severity=_capped(f, run_severity(f, float(per_report.get(str(f.report), run_time)),
                                                              ctx.thresholds), ctx.thresholds)) for f in findings]
    findings.sort(key=ranking)
    return _mark_overlaps(_symptoms_after_causes(_one_price_per_fix(findings, ctx.thresholds))), skipped


def _symptoms_after_causes(findings: list[Finding]) -> list[Finding]:
    """A finding that names another finding on the same launches as its cause (``evidence["caused_by"]``:
    warps stalled for want of warps, on a grid too small to hold them) comes right after that finding,
    whatever the two stakes: the cause is the advice to take first."""
    place: dict[tuple[Any, ...], int] = {(f.report, f.ids, f.rule): i for i, f in enumerate(findings)}
    after: dict[int, list[Finding]] = {}
    moved = set()
    for i, f in enumerate(findings):
        j = place.get((f.report, f.ids, f.evidence.get("caused_by")))
        if j is not None and j > i:
            after.setdefault(j, []).append(f)
            moved.add(i)
    if not moved:
        return findings
    out = []
    for i, f in enumerate(findings):
        if i not in moved:
            out.append(f)
        out.extend(after.get(i, []))
    return out


def _one_price_per_fix(findings: list[Finding], th: Thresholds) -> list[Finding]:
    """Where several rules advise the same change for the same launches, the smallest claim speaks
    for it (the others' rules are named in its evidence, ``also``)."""
    lead: dict[tuple[Any, ...], Finding] = {}
    dropped: dict[tuple[Any, ...], list[str]] = {}
    keys = [(f.report, f.ids, fix_of(f, th)) for f in findings]
    for f, key in zip(findings, keys, strict=True):
        if not (f.time_at_stake_s and f.time_at_stake_s > 0 and f.ids):
            continue
        held = lead.get(key)
        if held is None or f.time_at_stake_s < (held.time_at_stake_s or 0.0):
            if held is not None:
                dropped.setdefault(key, []).append(held.rule)
            lead[key] = f
        else:
            dropped.setdefault(key, []).append(f.rule)
    keep = {id(f) for f in lead.values()}
    out = []
    for f, key in zip(findings, keys, strict=True):
        if f.time_at_stake_s and f.time_at_stake_s > 0 and f.ids and id(f) not in keep:
            continue
        if key in dropped and id(f) in keep:
            f = replace(f, evidence={**f.evidence, "also": sorted(set(dropped[key]))})
        out.append(f)
    return out


def _harness_note(f: Finding) -> Finding:
    """A finding about a library's test-harness kernels (CUTLASS's reference GEMM, its matrix fills)
    becomes a note without a stake: nobody tunes a verification kernel."""
    if not f.kernels or not all(is_harness(k) for k in f.kernels) or f.time_at_stake_s is None:
        return f
    text = (f"{', '.join(f.kernels)}: a library's test-harness kernel (a reference implementation or a matrix "
            f"fill that checks or feeds the kernel measured), left out of the advice; its {f.rule} finding "
            f"would put {fmt_seconds(f.time_at_stake_s)} at stake.")
    return replace(f, message=text, time_at_stake_s=None, severity="info", evidence={**f.evidence, "harness": True})


def _negligible(f: Finding, th: Thresholds) -> bool:
    """A finding with a stake, but under ``th.negligible_stake_s`` for all its launches."""
    stake = f.time_at_stake_s
    return stake is not None and 0.0 < stake < th.negligible_stake_s


def ranking(f: Finding) -> tuple[Any, ...]:
    """The one order of findings in every output: largest time at stake first (a finding with none
    after every finding with one), then the cause before its symptom, then severity."""
    stake = f.time_at_stake_s if f.time_at_stake_s and f.time_at_stake_s == f.time_at_stake_s else 0.0
    return (not stake > 0, -stake, about(f.rule).rank, SEVERITY_ORDER[f.severity], f.rule)


def _capped(f: Finding, severity: Severity, th: Thresholds) -> Severity:
    """A conditional finding is at most medium: it holds only if its hypothesis does; a finding known
    to have no time at stake is a note (info), whatever its rule; launches near the launch floor that
    win under ``th.overhead_low_stake_s`` in all are low, whatever the (small) run's share."""
    if f.time_at_stake_s is not None and not f.time_at_stake_s > 0:  # known to win nothing (None: unknown)
        return "info"
    if f.rule == "overhead-regime" and (f.time_at_stake_s or 0.0) < th.overhead_low_stake_s and severity != "info":
        return "low"
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
        note = f" Overlaps {lead.rule}: not in addition."
        out.append(replace(f, message=f.message + note, evidence={**f.evidence, "overlaps": lead.rule}))
    return out
