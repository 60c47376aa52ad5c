"""The one engine behind every per-launch rule: a rule declares what it looks for and how to say it;
the engine groups the launches, asks the signal, prices the fix and writes the finding.

A rule is a declaration (:func:`per_kernel`) over a message function::

    @per_kernel("bank-conflicts", signal=bank_conflict_signal, evidence=("shared_bank_conflicts", ...),
                signal_evidence=("conflict_share",), needs=(...), enable="...",
                about=About(rank=1, answers=("SharedMemoryConflicts",), lines=EXCESS_WAVEFRONTS, cause=True))
    def bank_conflicts(hit: Hit) -> str:
        \"\"\"Shared-memory accesses serialized by bank conflicts.\"\"\"
        return f"{hit.name}: shared-memory bank conflicts{hit.stake_text}. ..."

Per kernel group (report, device, kernel, plus ``group_by``): the launches the signal flags (each
signal's whole-column screen first, :meth:`ncu_roof.rules.run.RuleRun.fires`), optionally kept by
``keep``; the stake is what their fixes win (:meth:`ncu_roof.rules.run.RuleRun.price`, the one
pricing model); the message comes from the rule; the evidence is the placed table's values of
``evidence`` and the signal's own ``signal_evidence``. Ranking, severity, one price per fix and
overlaps are decided afterwards for all findings at once (:func:`ncu_roof.rules.evaluate`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ncu_roof.model.roofline import Thresholds
from ncu_roof.rules.base import PLAIN, RULES, About, Context, Finding, make, rule
from ncu_roof.rules.common import Row, evidence, name_of, val
from ncu_roof.rules.stakes import stake_text

Signal = Callable[[Row, Thresholds], "dict[str, Any] | None"]
Keep = Callable[[pd.DataFrame, "list[dict[str, Any]]", Context], "tuple[pd.DataFrame, list[dict[str, Any]]]"]


@dataclass(frozen=True)
class Hit:
    """One kernel group's flagged launches, as a rule's message sees them."""

    rows: pd.DataFrame
    signals: list[dict[str, Any]]
    stake: float | None
    ctx: Context

    @property
    def first(self) -> pd.Series:
        """The group's first flagged launch (launch order): the one the message quotes."""
        return self.rows.iloc[0]

    @property
    def signal(self) -> dict[str, Any]:
        """The first flagged launch's signal."""
        return self.signals[0]

    @property
    def name(self) -> str:
        """The kernel's name as a message prints it."""
        return name_of(self.first["kernel"])

    @property
    def stake_text(self) -> str:
        """', up to X of Y at stake', why little is at stake (the fix's units do not bind), or that no
        unit is measured to tell."""
        if self.stake is None:  # ncu's speed of light, where the SMs are far the busier side, says so
            sm, memory = val(self.first, "sm_throughput_pct"), val(self.first, "memory_throughput_pct")
            sol = (f"; ncu's speed of light: compute {sm:.0f}%, memory {memory:.0f}%" if sm >= 2 * memory > 0
                   else "")
            return f"; time at stake not known (no unit of its launches measured against a roof{sol})"
        return stake_text(self.rows, self.stake, self.signals)


Message = Callable[[Hit], "str | tuple[str, dict[str, Any]]"]


@dataclass(frozen=True)
class Advice:
    """A per-launch rule's declaration: its signal, its evidence and the engine's options."""

    signal: Signal
    evidence: tuple[str, ...]  # placed-table columns kept as the finding's evidence
    signal_evidence: tuple[str, ...] | None = ()  # the signal's keys kept too (None: all but the relief)
    group_by: tuple[str, ...] = ()  # grouping keys beyond report, device and kernel
    keep: Keep | None = None  # a filter of the flagged launches (another rule speaks for the others)
    note: bool = False  # an "info" finding with no stake
    needs_stake: bool = False  # no finding where the fix wins nothing


def findings_of(rule_id: str, advice: Advice, message: Message, ctx: Context) -> list[Finding]:
    """Every kernel group's finding for one declared rule."""
    out = []
    for group in ctx.run.groups(advice.group_by):
        rows, signals = ctx.run.fires(group, advice.signal)
        if advice.keep is not None and not rows.empty:
            rows, signals = advice.keep(rows, signals, ctx)
        if rows.empty:
            continue
        reliefs = [] if advice.note else [s["relief"] for s in signals]
        stake = None if advice.note or not ctx.run.judged(rows, reliefs) else ctx.run.price(rows, reliefs)
        if advice.needs_stake and not (stake is not None and stake > 0):
            continue
        said = message(Hit(rows, signals, stake, ctx))
        text, extra = said if isinstance(said, tuple) else (said, {})
        ev = evidence(rows, advice.evidence)
        first = signals[0]
        kept = [k for k in first if k != "relief"] if advice.signal_evidence is None else advice.signal_evidence
        ev.update({k: first[k] for k in kept})
        ev.update(extra)
        out.append(make(rule_id, rows, text, stake, ev, note=advice.note))
    return out


def per_kernel(rule_id: str, *, signal: Signal, evidence: tuple[str, ...],
               signal_evidence: tuple[str, ...] | None = (), group_by: tuple[str, ...] = (),
               keep: Keep | None = None, note: bool = False, needs_stake: bool = False,
               needs: tuple[str, ...] = (), reads: tuple[str, ...] = (), enable: str = "",
               about: About = PLAIN) -> Callable[[Message], Callable[[Context], list[Finding]]]:
    """Declare a per-launch rule over its message function; registers it (:func:`ncu_roof.rules.base.rule`)
    and returns what runs it on a context (named and documented as the message function)."""
    advice = Advice(signal, evidence, signal_evidence, group_by, keep, note, needs_stake)

    def declare(message: Message) -> Callable[[Context], list[Finding]]:
        def run(ctx: Context) -> list[Finding]:
            return findings_of(rule_id, advice, message, ctx)

        run.advice = advice  # type: ignore[attr-defined]
        return _registered(rule_id, run, message, needs, reads, enable, about)

    return declare


Judge = Callable[[pd.DataFrame, Context], "Finding | None"]


def per_group(rule_id: str, *, within: Callable[[Context], pd.DataFrame] | None = None,
              needs: tuple[str, ...] = (), reads: tuple[str, ...] = (), enable: str = "",
              about: About = PLAIN) -> Callable[[Judge], Callable[[Context], list[Finding]]]:
    """Declare a rule that judges each kernel group as a whole (its launches in, a finding or None
    out) instead of flagging launches with a signal; ``within`` picks the launches it looks at.
    Registers it like :func:`per_kernel`."""
    def declare(judge: Judge) -> Callable[[Context], list[Finding]]:
        def run(ctx: Context) -> list[Finding]:
            groups = ctx.run.groups(frame=within(ctx)) if within is not None else ctx.run.groups()
            return [f for group in groups if (f := judge(group, ctx)) is not None]

        run.judge = judge  # type: ignore[attr-defined]
        return _registered(rule_id, run, judge, needs, reads, enable, about)

    return declare


def per_item(rule_id: str, *, items: Callable[[Context], Iterable[Any]], needs: tuple[str, ...] = (),
             reads: tuple[str, ...] = (), enable: str = "", needs_regions: bool = False,
             about: About = PLAIN) -> Callable[[Callable[[Any, Context], Finding | None]],
                                               Callable[[Context], list[Finding]]]:
    """Declare a rule judged one item at a time over what ``items`` gives (the user's regions,
    chains of kernels): each item in, a finding or None out. Registers it like :func:`per_kernel`."""
    def declare(judge: Callable[[Any, Context], Finding | None]) -> Callable[[Context], list[Finding]]:
        def run(ctx: Context) -> list[Finding]:
            return [f for item in items(ctx) if (f := judge(item, ctx)) is not None]

        run.judge = judge  # type: ignore[attr-defined]
        return _registered(rule_id, run, judge, needs, reads, enable, about, needs_regions)

    return declare


def _registered(rule_id: str, run: Callable[[Context], list[Finding]], declared: Callable[..., Any],
                needs: tuple[str, ...], reads: tuple[str, ...], enable: str, about: About,
                needs_regions: bool = False) -> Callable[[Context], list[Finding]]:
    """``run`` named and documented as the function it was declared over, and registered."""
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(run, attr, getattr(declared, attr))
    rule(rule_id, needs=needs, reads=reads, enable=enable, needs_regions=needs_regions, about=about)(run)
    return run


def cause_signals() -> dict[str, Signal]:
    """The signals of the rules declared a cause (``About.cause``), by rule: where one fires, a launch
    below its roof is explained, and below-roof and at-roof say nothing of it."""
    return {r.id: r.func.advice.signal for r in RULES if r.about.cause}  # type: ignore[attr-defined]


def unless(other: Signal | str, speaks: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None) -> Keep:
    """A ``keep`` that leaves out the launches another signal speaks for: ``other`` (a signal, or the id of a
    cause rule, whose signal is looked up when the rule runs) answers there, and ``speaks(its answer, this
    launch's signal)`` holds (any answer where ``speaks`` is None)."""

    def keep(rows: pd.DataFrame, signals: list[dict[str, Any]], ctx: Context
             ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
        said = ctx.run.answers(cause_signals()[other] if isinstance(other, str) else other)
        kept = [i for i, p in enumerate(ctx.run.positions(rows).tolist())
                if said[p] is None or (speaks is not None and not speaks(said[p], signals[i]))]
        return rows.iloc[kept], [signals[i] for i in kept]

    return keep
