"""The rule machinery: findings, the inputs each rule needs, and evaluation.

A rule is a small pure function ``(context) -> list[Finding]`` registered with :func:`rule`,
declaring the tidy/placed columns it needs. :func:`evaluate` skips a rule whose inputs no
launch has, and records what capture would enable it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from ncu_roof.jsonable import num
from ncu_roof.model.roofline import Thresholds, reaches

if TYPE_CHECKING:
    from ncu_roof.rules.run import RuleRun

Severity = Literal["high", "medium", "low", "info"]
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass(frozen=True)
class SourceLine:
    """A source line (or, without a line table, one instruction) a finding points at: its share of
    the counter that ranks the finding's lines, and that share of the finding's stake."""

    file: str | None
    line: int | None
    function: str | None
    offsets: tuple[int, ...]
    counter: str
    value: float
    share: float
    time_s: float | None
    sass: str | None = None
    counters: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "offsets": list(self.offsets),
                "counter": self.counter, "value": self.value, "share": self.share, "time_s": self.time_s,
                "sass": self.sass, "counters": dict(self.counters)}


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
    lines: tuple[SourceLine, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "kernels": list(self.kernels), "region": self.region,
            "severity": self.severity, "message": self.message,
            "time_at_stake_s": self.time_at_stake_s, "evidence": self.evidence,
            "ids": list(self.ids), "report": self.report, "lines": [line.as_dict() for line in self.lines],
        }


def order_words(findings: list[Finding]) -> str:
    """How the findings are ordered, in words: by time at stake, and where a symptom follows a smaller
    cause (the rules' ``evidence["caused_by"]``), that too."""
    moved = any(f.evidence.get("caused_by") and (f.time_at_stake_s or 0.0) > (g.time_at_stake_s or 0.0)
                for g, f in zip(findings, findings[1:], strict=False))
    return "largest time at stake first" + (", a cause before the stalls it explains" if moved else "")


def make(rule: str, rows: pd.DataFrame, message: str, stake: float | None, ev: dict[str, Any],
         *, note: bool = False) -> Finding:
    """A finding about the launches in ``rows`` (one kernel of one report). Its severity is set by
    :func:`ncu_roof.rules.evaluate` from the run's time; ``note`` marks an "info" finding."""
    reports = rows["report"].dropna().astype(str).unique()
    kernels = tuple(dict.fromkeys(rows["kernel"].astype(str).tolist()))
    severity: Severity = "info" if note else "low"
    return Finding(rule, kernels, None, severity, message, num(stake), ev,
                   tuple(map(int, rows["id"].tolist())), str(reports[0]) if len(reports) == 1 else None)


@dataclass(frozen=True)
class Skipped:
    """A rule that could not run: the inputs it lacked and the capture that would provide them."""

    rule: str
    missing: tuple[str, ...]
    enable: str


@dataclass(frozen=True)
class Context:
    """What rules look at: placed launches, regions, thresholds, and the run that keeps what the
    rules share about the launches (:class:`~ncu_roof.rules.run.RuleRun`, one per context)."""

    placed: pd.DataFrame
    regions: pd.DataFrame
    thresholds: Thresholds
    run: RuleRun = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ncu_roof.rules.run import RuleRun

        run = RuleRun(self.placed, self.thresholds)
        object.__setattr__(self, "run", run)
        object.__setattr__(self, "placed", run.placed)  # launches found by label: one label each


RuleFunc = Callable[[Context], list[Finding]]


FixOf = Callable[["Finding", Thresholds], str]


@dataclass(frozen=True)
class About:
    """Everything the rest of the tool knows about a rule, declared with it.

    ``rank``: where stakes tie, the cause speaks before its symptom (extra bytes and reuse 0, the
    access pattern 1, the launch shape and instruction mix 2, the binding unit 3, divergence 4,
    occupancy and stalls 5, the generic verdict 6); ``answers``: the Nsight Compute rules whose
    advice it gives (the cross-examination matches them); ``fix``: the change its fix makes, shared by
    rules that advise the same change (one price per kernel and fix; a function of the finding where
    it depends on the evidence; None: its own); ``lines``: what ranks its source lines
    (:class:`ncu_roof.rules.lines.Ranking`; None: no lines); ``cause``: its signal explains a launch
    below its roof (below-roof and at-roof stay silent where it fires)."""

    rank: int = 3
    answers: tuple[str, ...] = ()
    fix: str | FixOf | None = None
    lines: Any = None
    cause: bool = False


@dataclass(frozen=True)
class Rule:
    """A registered rule: ``needs`` at least one launch must have for it to run (an entry "a|b": either
    column); ``reads`` every other column its signal looks at (what a capture must collect for it to
    speak fully)."""

    id: str
    func: RuleFunc
    needs: tuple[str, ...]
    enable: str
    needs_regions: bool = False
    reads: tuple[str, ...] = ()
    about: About = About()


PLAIN = About()  # a rule declaring nothing more
RULES: list[Rule] = []


def rule(rule_id: str, needs: tuple[str, ...] = (), enable: str = "", needs_regions: bool = False,
         reads: tuple[str, ...] = (), about: About = PLAIN) -> Callable[[RuleFunc], RuleFunc]:
    """Register a rule; ``needs`` are columns of the placed table at least one launch must have,
    ``reads`` the other columns its signal uses (the capture's metric set is checked against both);
    ``about`` the rest the tool knows of it."""

    def register(func: RuleFunc) -> RuleFunc:
        RULES.append(Rule(rule_id, func, needs, enable, needs_regions, reads, about))
        return func

    return register


def about(rule_id: str) -> About:
    """A registered rule's declaration (the defaults for an id no rule has)."""
    for r in RULES:
        if r.id == rule_id:
            return r.about
    return PLAIN


def alternatives(need: str) -> tuple[str, ...]:
    """The columns that each satisfy one entry of a rule's ``needs`` ("a|b": either will do)."""
    return tuple(need.split("|"))


def need_text(need: str) -> str:
    """An entry of ``needs`` as the skip note says it: its first column, the one a capture collects."""
    return alternatives(need)[0]


def _missing_inputs(r: Rule, ctx: Context) -> tuple[str, ...]:
    def present(c: str) -> bool:
        return c in ctx.placed and bool(ctx.placed[c].notna().any())

    missing = tuple(need_text(n) for n in r.needs if not any(present(c) for c in alternatives(n)))
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
