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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import pandas as pd

from ncu_roof.fmt import fmt_seconds
from ncu_roof.model.roofline import LEVELS, Thresholds
from ncu_roof.read.ncu_rules import is_actionable
from ncu_roof.rules.base import Finding

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

    ``findings``: ncu-roof rule ids that say the same thing; ``resource``: what it tries to speed up
    (memory, compute, latency: more warps or instructions in flight, any); ``floor``: the part of the
    lower bound the advice cannot move (all of it, the memory time, or the compute time).
    """

    what: str
    findings: tuple[str, ...]
    resource: Resource
    floor: Floor


_FP64 = ("fp64-pipe", "fp64-on-consumer-gpu")
_OCCUPANCY = ("low-occupancy", "block-size")
ADVICE: dict[str, Advice] = {
    "UncoalescedGlobalAccess": Advice("coalescing global accesses", ("uncoalesced-access",), "memory", "compute"),
    "MemoryCacheAccessPattern": Advice("a better memory access pattern", ("uncoalesced-access",), "memory", "compute"),
    "UncoalescedSharedAccess": Advice("fewer shared-memory wavefronts", ("bank-conflicts",), "memory", "all"),
    "SharedMemoryConflicts": Advice("removing shared-memory bank conflicts", ("bank-conflicts",), "memory", "all"),
    "MemoryL2Compression": Advice("L2 compression", (), "memory", "compute"),
    "SOLFPRoofline": Advice("FP32 instead of FP64", _FP64, "compute", "memory"),
    "FPInstructions": Advice("fusing FADD/FMUL into FMA", ("no-fma-roof",), "compute", "memory"),
    "HighPipeUtilization": Advice("relieving or using the compute pipes",
                                  ("binding-unit", *_FP64, "no-fma-roof", "fp16-on-cuda-cores", "no-tensor-cores"),
                                  "compute", "memory"),
    "IssueSlotUtilization": Advice("issuing more instructions per cycle", ("warp-stalls", *_OCCUPANCY),
                                   "latency", "all"),
    "CPIStall": Advice("fewer warp stalls", ("warp-stalls",), "latency", "all"),
    "AchievedOccupancy": Advice("higher achieved occupancy", _OCCUPANCY, "latency", "all"),
    "TheoreticalOccupancy": Advice("higher theoretical occupancy", _OCCUPANCY, "latency", "all"),
    "Occupancy": Advice("higher occupancy", _OCCUPANCY, "latency", "all"),
    "LaunchConfiguration": Advice("another launch configuration", ("grid-underfill", "wave-tail", "block-size"),
                                  "latency", "all"),
    "WorkloadImbalance": Advice("balancing the work across SMs", ("wave-tail", "grid-underfill"), "latency", "all"),
    "ThreadDivergence": Advice("less divergence", ("divergence",), "latency", "all"),
    "SOLBottleneck": Advice("working on the busiest unit", ("below-roof", "speed-of-light-only"), "any", "all"),
}
FLOOR_TEXT = {"all": "its lower bound (the busiest unit at its limit)",
              "memory": "the time its bytes take at the memory roofs",
              "compute": "the time its FLOPs take at the compute roof"}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


# --- grouping ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _template(message: str) -> str:
    """The message with its numbers blanked (repeated launches repeat their messages: asked once)."""
    return _NUMBER.sub("#", message)


def group_results(results: Iterable[Mapping[str, Any]], kernels: Mapping[tuple[str, int], str]
                  ) -> list[list[Mapping[str, Any]]]:
    """OPT/WRN results grouped by report, rule, kernel and message up to its numbers, in input order."""
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for r in results:
        if not is_actionable(r):
            continue
        report = str(r.get("report"))
        kernel = kernels.get((report, int(r["id"])), "?")
        groups.setdefault((report, r["rule"], kernel, _template(r["message"])), []).append(r)
    return list(groups.values())


# --- the numbers a verdict rests on -----------------------------------------------------------
def _floor_s(row: Mapping[str, Any], floor: Floor) -> float:
    """The part of a launch's lower bound that advice with this floor cannot move (NaN if unknown)."""
    if floor == "all":  # the bottleneck model's bound (every measured unit), else the roofline's
        units = _f(row.get("unit_lower_bound_s"))
        return units if units == units else _f(row.get("time_lower_bound_s"))
    if floor == "compute":
        flops = _f(row.get("flops"))
        return 0.0 if flops == 0 else flops / _f(row.get("peak_flops_per_s"))
    terms = [_f(row.get(f"{lv}_bytes")) / _f(row.get(f"{lv}_roof_bytes_per_s")) for lv in LEVELS]
    known = [t for t in terms if t == t]
    return max(known) if known else math.nan


_FLOORS = "__floors__"  # a row's floors, once per floor kind, kept in the row while cross_examine runs


def _floor_of(row: Mapping[str, Any], floor: Floor) -> float:
    """:func:`_floor_s`, remembered in a row that cross_examine owns (a launch is in several groups)."""
    held = row.get(_FLOORS)
    if held is None:
        return _floor_s(row, floor)
    if floor not in held:
        held[floor] = _floor_s(row, floor)
    return cast(float, held[floor])


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


def summarize(rows: Sequence[Mapping[str, Any]], floor: Floor) -> Launches:
    """Time, unmovable floor, roof share and binding roof of some placed launches."""
    times = [_f(r.get("time_s")) for r in rows]
    floors = [_floor_of(r, floor) for r in rows]
    time = sum(t for t in times if t == t) if any(t == t for t in times) else math.nan
    floor_s = sum(floors) if rows and all(x == x for x in floors) else math.nan
    pcts = [(_f(r.get("pct_of_roof")), t) for r, t in zip(rows, times, strict=True)]
    weight = sum(t for p, t in pcts if p == p and t == t)
    pct = sum(p * t for p, t in pcts if p == p and t == t) / weight if weight > 0 else math.nan
    by_binding: dict[str, float] = {}
    for r, t in zip(rows, times, strict=True):
        b = r.get("binding")
        if isinstance(b, str):
            by_binding[b] = by_binding.get(b, 0.0) + (t if t == t else 0.0)
    binding = max(by_binding, key=lambda k: by_binding[k]) if by_binding else None
    missing = sorted({m for r in rows for m in str(r.get("missing") or "").split(",") if m in _NEEDED})
    return Launches(time, floor_s, pct, binding, tuple(missing))


def estimate_pct(results: Sequence[Mapping[str, Any]], times: Mapping[int, float]) -> float:
    """ncu's estimate over several launches: the time-weighted mean (the share of their summed time)."""
    pairs = [(_f(r["speedup_pct"]), times.get(int(r["id"]), math.nan)) for r in results]
    pairs = [(s, t) for s, t in pairs if s == s]
    if not pairs:
        return math.nan
    if all(t == t and t > 0 for _, t in pairs):
        return sum(s * t for s, t in pairs) / sum(t for _, t in pairs)
    return sum(s for s, _ in pairs) / len(pairs)


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
_COLUMNS = ("report", "id", "kernel", "time_s", "time_lower_bound_s", "unit_lower_bound_s", "pct_of_roof", "binding",
            "missing", "flops",
            "peak_flops_per_s", *(f"{lv}_bytes" for lv in LEVELS), *(f"{lv}_roof_bytes_per_s" for lv in LEVELS))


def cross_examine(results: Iterable[Mapping[str, Any]], placed: pd.DataFrame, findings: Sequence[Finding],
                  thresholds: Thresholds | None = None) -> list[dict[str, Any]]:
    """One verdict record per group of OPT/WRN rule results, largest ncu estimate first."""
    th = thresholds or Thresholds()
    results = list(results)
    if not results:
        return []
    columns = [c for c in _COLUMNS if c in placed]
    records = cast("list[dict[str, Any]]", placed[columns].to_dict("records"))
    for r in records:  # its own dicts: each row's floors are kept in it (summarize asks per group)
        r[_FLOORS] = {}
    rows = {(str(r["report"]), int(r["id"])): r for r in records}
    kernels = {key: str(r.get("kernel")) for key, r in rows.items()}
    times: dict[str, dict[int, float]] = {}
    for (report, launch), r in rows.items():
        times.setdefault(report, {})[launch] = _f(r.get("time_s"))
    verdicts = [_record(g, rows, times.get(str(g[0].get("report")), {}), findings, th)
                for g in group_results(results, kernels)]
    return sorted(verdicts, key=lambda r: -(r["ncu_estimated_speedup_pct"]
                                           if r["ncu_estimated_speedup_pct"] == r["ncu_estimated_speedup_pct"]
                                           else -1.0))


def _record(group: Sequence[Mapping[str, Any]], rows: Mapping[tuple[str, int], Mapping[str, Any]],
            times: Mapping[int, float], findings: Sequence[Finding], th: Thresholds) -> dict[str, Any]:
    """The verdict record of one group of results (``times``: launch durations of its report)."""
    first = group[0]
    report = str(first.get("report"))
    ids = sorted({int(r["id"]) for r in group})
    launches = [rows[(report, i)] for i in ids if (report, i) in rows]
    advice = ADVICE.get(first["rule"])
    s = summarize(launches, advice.floor if advice else "all")
    est = estimate_pct(group, times)
    lead = max(group, key=lambda r: _f(r["speedup_pct"]) if _f(r["speedup_pct"]) == _f(r["speedup_pct"]) else -1.0)
    found = matching(findings, report, set(ids), advice.findings) if advice else []
    matched = [(f, finding_cap_pct(f, times)) for f in found]
    verdict, cap, reason = judge(advice, s, est, lead.get("speedup_type"), matched, th)
    return {
        "rule": first["rule"], "report": report,
        "kernels": sorted({str(r.get("kernel")) for r in launches}) or ["?"],
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
