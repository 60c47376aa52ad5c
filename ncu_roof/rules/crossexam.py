"""Cross-examine Nsight Compute's own rule results with the roofline ("sanity-check a claimed speedup").

In: the rule results a report stores (``table.attrs["ncu_rule_results"]``, schema in
:mod:`ncu_roof.read.frame`), the placed launches and ncu-roof's findings. Out: one verdict record per
OPT/WRN result, grouped over the launches of one kernel whose messages differ only in numbers:

``agrees``           ncu-roof has a finding that says the same (:data:`ADVICE` maps the rule ids)
                     and its stake is within a factor of 2 of ncu's estimate (or both are under
                     :data:`SMALL_PCT` of the time);
``capped``           the roofline bounds the win below ncu's estimate: by the stake of the matching
                     finding (under half of ncu's), else by the time the launches could save and
                     still respect the roof the advice cannot move (see :data:`FLOOR_TEXT`);
``underestimated``   ncu-roof's matching finding puts more than twice ncu's estimate at stake;
``not-the-limiter``  the launches run near a roof (``Thresholds.at_roof_pct``) that the advice does
                     not touch (occupancy or issue advice at the DRAM roof, math advice at a memory
                     roof, memory advice at the compute roof);
``cannot-judge``     the reason says what is missing (roof, FLOPs, bytes, a matching rule).

The cap is a share of the launches' time, like ncu's "global" estimates; a "local" estimate is for
one unit, not the kernel's time, and is compared all the same (the kernel cannot gain more than
its cap whatever one unit gains).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_seconds
from ncu_roof.model.roofline import LEVELS, Thresholds
from ncu_roof.read.ncu_rules import ACTIONABLE, RuleResults
from ncu_roof.rules.base import RULES, Finding
from ncu_roof.rules.common import ratios

Verdict = Literal["agrees", "capped", "underestimated", "not-the-limiter", "cannot-judge"]
Floor = Literal["all", "memory", "compute"]
Resource = Literal["memory", "compute", "latency", "any"]
_NEEDED = ("time_s", "dram_bytes", "flops", "roof")  # of the placed table's ``missing``: what a cap needs

CAP_MARGIN_PCT = 5.0  # ncu's estimate above the cap by more than this (percentage points): capped
BIG_GAP_PCT = 20.0  # a capped / not-the-limiter verdict this far below ncu's estimate is worth showing
AGREE_FACTOR = 2.0  # a matching finding's stake within this factor of ncu's estimate agrees with it
SMALL_PCT = 5.0  # ...as do two estimates both under this share of the time


@dataclass(frozen=True)
class Advice:
    """What one ncu rule advises, as the roofline sees it.

    ``resource``: what it tries to speed up (memory, compute, latency: more warps or instructions in
    flight, any); ``floor``: the part of the lower bound the advice cannot move (all of it, the
    memory time, or the compute time). The ncu-roof rules that say the same thing declare it
    (``About.answers``): :attr:`findings`.
    """

    rule: str
    what: str
    resource: Resource
    floor: Floor

    @property
    def findings(self) -> tuple[str, ...]:
        """The ncu-roof rules that answer this ncu rule, in rule order."""
        return tuple(r.id for r in RULES if self.rule in r.about.answers)


_ADVICE = (
    ("UncoalescedGlobalAccess", "coalescing global accesses", "memory", "compute"),
    ("MemoryCacheAccessPattern", "a better memory access pattern", "memory", "compute"),
    ("UncoalescedSharedAccess", "fewer shared-memory wavefronts", "memory", "all"),
    ("SharedMemoryConflicts", "removing shared-memory bank conflicts", "memory", "all"),
    ("MemoryL2Compression", "L2 compression", "memory", "compute"),
    ("SOLFPRoofline", "FP32 instead of FP64", "compute", "memory"),
    ("FPInstructions", "fusing FADD/FMUL into FMA", "compute", "memory"),
    ("HighPipeUtilization", "relieving or using the compute pipes", "compute", "memory"),
    ("IssueSlotUtilization", "issuing more instructions per cycle", "latency", "all"),
    ("CPIStall", "fewer warp stalls", "latency", "all"),
    ("AchievedOccupancy", "higher achieved occupancy", "latency", "all"),
    ("TheoreticalOccupancy", "higher theoretical occupancy", "latency", "all"),
    ("Occupancy", "higher occupancy", "latency", "all"),
    ("LaunchConfiguration", "another launch configuration", "latency", "all"),
    ("WorkloadImbalance", "balancing the work across SMs", "latency", "all"),
    ("ThreadDivergence", "less divergence", "latency", "all"),
    ("SOLBottleneck", "working on the busiest unit", "any", "all"),
)
ADVICE: dict[str, Advice] = {rule: Advice(rule, what, resource, floor)  # type: ignore[arg-type]
                             for rule, what, resource, floor in _ADVICE}
FLOOR_TEXT = {"all": "its lower bound (the busiest unit at its limit)",
              "memory": "the time its bytes take at the memory roofs",
              "compute": "the time its FLOPs take at the compute roof"}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


# --- grouping ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _template(message: str) -> str:
    """The message with its numbers blanked (repeated launches repeat their messages: asked once)."""
    return _NUMBER.sub("#", message)


@dataclass(frozen=True)
class ResultGroup:
    """OPT/WRN results of one report and rule about one kernel whose messages differ only in
    numbers, in input order: each result's record, launch ID and ``speedup_pct`` (as :func:`_f` reads it)."""

    report: str  # as the placed table's ``report`` column spells it ("None" where the results name none)
    records: list[Mapping[str, Any]]
    ids: list[int]
    speedups: list[float]


def group_results(results: RuleResults, launches: PlacedColumns) -> list[ResultGroup]:
    """The OPT/WRN results grouped by report, rule, kernel and message up to its numbers, groups in
    the order of their first result. Worked out on the results' columns: each distinct record is
    looked at once, each (report, launch) pair's kernel found once."""
    distinct = results.distinct
    actionable = np.array([r["type"] in ACTIONABLE for r in distinct], dtype=bool)
    rows = np.flatnonzero(actionable[results.which]) if distinct else np.empty(0, dtype=np.int64)
    if not len(rows):
        return []
    kinds: dict[tuple[str, str], int] = {}
    kind_of = np.array([kinds.setdefault((r["rule"], _template(r["message"])), len(kinds)) if keep else -1
                        for r, keep in zip(distinct, actionable, strict=True)], dtype=np.int64)
    which, report_of, ids = results.which[rows], results.report_of[rows], results.ids[rows]
    reports = list(results.reports)
    if "None" not in reports:
        reports.append("None")
    report_of = np.where(report_of < 0, reports.index("None"), report_of)  # no report: as str(None) names it
    pair_of = _codes(report_of, ids)  # each distinct (report, launch) pair's kernel is found once
    first = np.unique(pair_of, return_index=True)[1]
    kernel_codes: dict[str, int] = {}
    kernel_of_pair = np.array([kernel_codes.setdefault(launches.kernel_of(reports[r], i), len(kernel_codes))
                               for r, i in zip(report_of[first].tolist(), ids[first].tolist(), strict=True)],
                              dtype=np.int64)
    group_of = _codes(report_of, kind_of[which], kernel_of_pair[pair_of])
    members = np.split(np.argsort(group_of, kind="stable"), np.cumsum(np.bincount(group_of))[:-1])
    speedup_of = np.array([_f(r["speedup_pct"]) for r in distinct], dtype=float)
    out = []
    for at in members:
        out.append(ResultGroup(reports[int(report_of[at[0]])], list(map(distinct.__getitem__, which[at].tolist())),
                               ids[at].tolist(), speedup_of[which[at]].tolist()))
    return out


def _codes(*columns: np.ndarray) -> np.ndarray:
    """Each row's code over ``columns`` together: 0, 1, ... in the order values first appear."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        key, _ = pd.factorize(key * len(uniques) + codes)  # below the row count: no overflow
    return key


# --- the numbers a verdict rests on -----------------------------------------------------------
class PlacedColumns:
    """The placed launches a verdict reads, as columns of plain Python values (a launch is in
    several groups: each value is converted once), found by (report, launch ID)."""

    def __init__(self, placed: pd.DataFrame) -> None:
        n = len(placed)

        def raw(column: str) -> list[Any]:
            return placed[column].tolist() if column in placed else [None] * n

        def floats(column: str) -> np.ndarray:
            """The column as float64, NaN where absent, unknown or infinite (as :func:`_f` reads a value)."""
            if column not in placed:
                return np.full(n, np.nan)
            values = placed[column]
            if values.dtype == np.float64:
                a = values.to_numpy()
                return np.where(np.isfinite(a), a, np.nan)
            return np.array([_f(v) for v in values.tolist()], dtype=float)

        self.where: dict[str, dict[int, int]] = {}  # report -> launch ID -> position (the last, if repeated)
        for k, (r, i) in enumerate(zip(raw("report"), raw("id"), strict=True)):
            self.where.setdefault(str(r), {})[int(i)] = k
        self.kernel = [str(k) for k in raw("kernel")]
        self.kernel_codes, self.kernels = _coded(self.kernel, bool)  # -1: the empty name
        self.time, self.pct = floats("time_s"), floats("pct_of_roof")
        self.binding_codes, self.bindings = _coded(raw("binding"), lambda b: isinstance(b, str))
        needed = {x: tuple(m for m in str(x or "").split(",") if m in _NEEDED) for x in set(raw("missing"))}
        self.missing_codes, self.missings = _coded(list(map(needed.__getitem__, raw("missing"))), bool)
        self._floats = floats
        self._floors: dict[Floor, np.ndarray] = {}
        self._summaries: dict[tuple[str, tuple[int, ...], Floor], tuple[list[int], Launches]] = {}

    def kernel_of(self, report: str, launch: int) -> str:
        """The kernel of a report's launch ("?" if not placed)."""
        k = self.where.get(report, {}).get(launch)
        return "?" if k is None else self.kernel[k]

    def kernels_at(self, at: Sequence[int]) -> list[str]:
        """The kernels of the launches at positions ``at``, each once, sorted."""
        codes = np.unique(self.kernel_codes[np.asarray(at, dtype=np.intp)]).tolist()
        return sorted(self.kernels[c] if c >= 0 else "" for c in codes)

    def times(self) -> dict[str, dict[int, float]]:
        """Each report's launch durations by launch ID."""
        time = self.time.tolist()
        return {report: {launch: time[k] for launch, k in at.items()} for report, at in self.where.items()}

    def positions(self, report: str, ids: Iterable[int]) -> list[int]:
        """Where a report's launches ``ids`` are among the placed ones (those placed)."""
        where = self.where.get(report, {})
        return [k for k in map(where.get, ids) if k is not None]

    def summary(self, report: str, ids: list[int], floor: Floor) -> tuple[list[int], Launches]:
        """Where a report's launches ``ids`` are (:meth:`positions`) and their :func:`summarize`, made
        once per launches and floor (ncu's rules about one kernel's launches name the same launches)."""
        key = (report, tuple(ids), floor)
        if key not in self._summaries:
            at = self.positions(report, ids)
            self._summaries[key] = (at, summarize(self, at, floor))
        return self._summaries[key]

    def floors(self, floor: Floor) -> np.ndarray:
        """Each launch's part of its lower bound that advice with this floor cannot move (NaN if unknown)."""
        if floor not in self._floors:
            self._floors[floor] = self._floors_of(floor)
        return self._floors[floor]

    def _floors_of(self, floor: Floor) -> np.ndarray:
        f = self._floats
        if floor == "all":  # the bottleneck model's bound (every measured unit), else the roofline's
            units = f("unit_lower_bound_s")
            return np.where(units == units, units, f("time_lower_bound_s"))
        if floor == "compute":
            flops = f("flops")
            return np.where(flops == 0, 0.0, ratios(flops, f("peak_flops_per_s")))
        levels = np.column_stack([ratios(f(f"{lv}_bytes"), f(f"{lv}_roof_bytes_per_s")) for lv in LEVELS])
        known = ~np.isnan(levels)
        most = np.max(np.where(known, levels, -np.inf), axis=1)
        return np.where(known.any(axis=1), most, np.nan)


def _f(value: Any) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


@dataclass(frozen=True)
class Launches:
    """The placed launches one group of results is about, summed."""

    time_s: float
    floor_s: float  # NaN when a launch lacks it
    pct_of_roof: float  # time-weighted
    binding: str | None  # the roof that binds most of the time: compute, dram, l2, l1
    missing: tuple[str, ...]

    @property
    def cap_pct(self) -> float:
        if not self.time_s > 0 or self.floor_s != self.floor_s:
            return math.nan
        return min(100.0, max(0.0, (self.time_s - self.floor_s) / self.time_s * 100.0))


def _coded(values: list[Any], counted: Callable[[Any], bool]) -> tuple[np.ndarray, list[Any]]:
    """Each value's code (-1 where not ``counted``) and the values coded, in order of first appearance."""
    names: dict[Any, int] = {}
    codes = [names.setdefault(v, len(names)) if counted(v) else -1 for v in values]
    return np.array(codes, dtype=np.int64), list(names)


def summarize(launches: PlacedColumns, at: Sequence[int], floor: Floor) -> Launches:
    """Time, unmovable floor, roof share and binding roof of the launches at positions ``at``
    (sums in launch order, as Python adds them)."""
    where = np.asarray(at, dtype=np.intp)
    times = launches.time[where]
    timed = ~np.isnan(times)
    time = sum(times[timed].tolist()) if timed.any() else math.nan
    floors = launches.floors(floor)[where]
    floor_s = sum(floors.tolist()) if len(where) and not np.isnan(floors).any() else math.nan
    pcts = launches.pct[where]
    both = timed & ~np.isnan(pcts)
    weight = sum(times[both].tolist())
    pct = sum((pcts[both] * times[both]).tolist()) / weight if weight > 0 else math.nan
    codes = launches.binding_codes[where]
    by_binding = {launches.bindings[c]: sum(np.where(timed, times, 0.0)[codes == c].tolist())
                  for c in pd.unique(codes[codes >= 0]).tolist()}
    binding = max(by_binding, key=lambda k: by_binding[k]) if by_binding else None
    codes = launches.missing_codes[where]
    missing = sorted({m for c in np.unique(codes[codes >= 0]).tolist() for m in launches.missings[c]})
    return Launches(time, floor_s, pct, binding, tuple(missing))


def estimate_pct(ids: Sequence[int], speedups: Sequence[float], times: Mapping[int, float]) -> float:
    """ncu's estimate over several launches: the time-weighted mean of each result's ``speedups``
    (the share of their summed time); ``ids``: each result's launch. Summed in result order."""
    s = np.asarray(speedups, dtype=float)
    t = np.fromiter(map(times.get, ids, repeat(math.nan)), dtype=float, count=len(ids))
    estimated = ~np.isnan(s)
    s, t = s[estimated], t[estimated]
    if not len(s):
        return math.nan
    if np.all(t > 0):  # every launch's time known
        return cast(float, sum((s * t).tolist()) / sum(t.tolist()))
    return cast(float, sum(s.tolist()) / len(s))


def matching(findings: Iterable[Finding], report: str, ids: set[int], rule_ids: Sequence[str]) -> list[Finding]:
    """ncu-roof findings of the mapped rules about any of these launches."""
    return [f for f in findings if f.rule in rule_ids and f.report == report and ids & set(f.ids)]


def finding_cap_pct(f: Finding, times: Mapping[int, float]) -> float:
    """A finding's stake as a share of its launches' time (NaN without a stake)."""
    time = sum(times.get(i, math.nan) for i in f.ids)
    stake = _f(f.time_at_stake_s)
    return min(100.0, stake / time * 100.0) if time > 0 and stake == stake else math.nan


# --- the verdict ------------------------------------------------------------------------------
def _roof_name(binding: str | None) -> str:
    return {"compute": "compute", "dram": "DRAM", "l2": "L2", "l1": "L1"}.get(binding or "", "?")


def _near_other_roof(advice: Advice, s: Launches, th: Thresholds) -> bool:
    if advice.resource == "any" or not s.pct_of_roof >= th.at_roof_pct or s.binding is None:
        return False
    if advice.resource == "latency":
        return True
    return (s.binding == "compute") != (advice.resource == "compute")


def _est_text(est: float, speedup_type: str | None) -> str:
    if est != est:
        return "ncu gives no estimate"
    local = " (local: for one unit, not the kernel's time)" if speedup_type == "local" else ""
    return f"ncu estimates {est:.1f}%{local}"


def judge(advice: Advice | None, s: Launches, est: float, speedup_type: str | None,
          matched: Sequence[tuple[Finding, float]], th: Thresholds) -> tuple[Verdict, float, str]:
    """(verdict, roofline cap in %, reason) for one group of results."""
    ncu = _est_text(est, speedup_type)
    roof = _roof_name(s.binding)
    where = (f"at {s.pct_of_roof:.0f}% of its {roof} roof" if s.pct_of_roof == s.pct_of_roof and roof != "?"
             else "its roof percentage unknown")
    if matched:
        f, cap = max(matched, key=lambda fc: fc[1] if fc[1] == fc[1] else -1.0)
        context = f" ({where})" if s.pct_of_roof == s.pct_of_roof else ""
        if cap == cap and est == est and not _alike(cap, est):
            if est > cap:
                return "capped", cap, (f"ncu-roof's {f.rule} finding puts at most {cap:.1f}% of the time at stake"
                                       f"{context}; {ncu}.")
            return "underestimated", cap, (f"ncu-roof's {f.rule} finding puts {cap:.1f}% of the time at stake, more "
                                           f"than twice ncu's estimate{context}; {ncu}.")
        return "agrees", cap, f"ncu-roof's {f.rule} finding says the same ({_pct(cap)} at stake); {ncu}."
    if advice is None:
        return "cannot-judge", s.cap_pct, f"ncu-roof has no rule that looks at this; {ncu}."
    if s.time_s != s.time_s:
        return "cannot-judge", math.nan, f"no kernel duration (gpu__time_duration.sum); {ncu}."
    if s.cap_pct != s.cap_pct:
        need = ", ".join(s.missing) or "a roof"
        return "cannot-judge", math.nan, f"no roofline for these launches (missing: {need}); {ncu}."
    floor = (f"{FLOOR_TEXT[advice.floor]} ({fmt_seconds(s.floor_s)} of {fmt_seconds(s.time_s)}) leaves at most "
             f"{s.cap_pct:.1f}% to win")
    if _near_other_roof(advice, s, th):
        binds = "compute" if s.binding == "compute" else "memory"
        return "not-the-limiter", s.cap_pct, (f"{advice.what} is not what limits it: {where}, {binds} binds, and "
                                              f"{floor}; {ncu}.")
    if est == est and est > s.cap_pct + CAP_MARGIN_PCT:
        return "capped", s.cap_pct, f"the roofline bounds the win: {where}, {floor}; {ncu}."
    mapped = "/".join(advice.findings) or "matching"
    return "cannot-judge", s.cap_pct, (f"the roofline does not rule it out ({where}, {floor}) but ncu-roof has no "
                                       f"{mapped} finding for these launches to confirm it; {ncu}.")


def _alike(ours: float, theirs: float) -> bool:
    """Two estimates of the same win agree: both small, or within a factor of 2 of each other."""
    if ours < SMALL_PCT and theirs < SMALL_PCT:
        return True
    return ours <= AGREE_FACTOR * theirs and theirs <= AGREE_FACTOR * ours


def _pct(value: float) -> str:
    return "an unknown share" if value != value else f"{value:.1f}%"


# --- everything -------------------------------------------------------------------------------
def cross_examine(results: Iterable[Mapping[str, Any]], placed: pd.DataFrame, findings: Sequence[Finding],
                  thresholds: Thresholds | None = None) -> list[dict[str, Any]]:
    """One verdict record per group of OPT/WRN rule results, largest ncu estimate first."""
    th = thresholds or Thresholds()
    rules = results if isinstance(results, RuleResults) else RuleResults(results)
    if not len(rules):
        return []
    launches = PlacedColumns(placed)
    times = launches.times()
    verdicts = [_record(g, launches, times.get(g.report, {}), findings, th) for g in group_results(rules, launches)]
    return sorted(verdicts, key=lambda r: -(r["ncu_estimated_speedup_pct"]
                                           if r["ncu_estimated_speedup_pct"] == r["ncu_estimated_speedup_pct"]
                                           else -1.0))


def _record(group: ResultGroup, launches: PlacedColumns, times: Mapping[int, float],
            findings: Sequence[Finding], th: Thresholds) -> dict[str, Any]:
    """The verdict record of one group of results (``times``: launch durations of its report)."""
    first, report = group.records[0], group.report
    ids = sorted(set(group.ids))
    advice = ADVICE.get(first["rule"])
    at, s = launches.summary(report, ids, advice.floor if advice else "all")
    est = estimate_pct(group.ids, group.speedups, times)
    speedups = np.asarray(group.speedups, dtype=float)
    lead = group.records[int(np.argmax(np.where(np.isnan(speedups), -1.0, speedups)))]  # the first largest
    found = matching(findings, report, set(ids), advice.findings) if advice else []
    matched = [(f, finding_cap_pct(f, times)) for f in found]
    verdict, cap, reason = judge(advice, s, est, lead.get("speedup_type"), matched, th)
    return {
        "rule": first["rule"], "report": report,
        "kernels": launches.kernels_at(at) or ["?"],
        "ids": ids, "type": first["type"], "ncu_message": lead["message"],
        "ncu_estimated_speedup_pct": est, "ncu_speedup_type": lead.get("speedup_type"),
        "verdict": verdict, "roofline_cap_pct": cap, "reason": reason,
        "findings": sorted({f.rule for f, _ in matched}), "time_s": s.time_s,
    }


def disagreements(records: Iterable[Mapping[str, Any]], run_time_s: float,
                  th: Thresholds | None = None) -> list[Mapping[str, Any]]:
    """The verdicts worth a line in a summary: capped or not-the-limiter, ncu's estimate at least
    :data:`BIG_GAP_PCT` above the cap, on launches worth ``min_stake_fraction`` of the run."""
    th = th or Thresholds()
    out = []
    for r in records:
        est, cap, time = (_f(r.get(k)) for k in ("ncu_estimated_speedup_pct", "roofline_cap_pct", "time_s"))
        big = est == est and cap == cap and est - cap >= BIG_GAP_PCT
        share = time / run_time_s if run_time_s > 0 and time == time else 1.0
        if r["verdict"] in ("capped", "not-the-limiter") and big and share >= th.min_stake_fraction:
            out.append(r)
    return out
