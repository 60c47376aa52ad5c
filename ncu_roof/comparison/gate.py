"""A CI gate: a :class:`~ncu_roof.diagnosis.Diagnosis` (and a baseline) and the :class:`GateRules`
of a rules file in, a :class:`GateResult` (violations, what was checked, what could not be) out.

Kernels and regions are held to a percent of their roof, an extra-bytes bound and, against a
baseline, a noise band on time. A region's percent is its ideal time (algorithmic counts at the
roofs) over its time, its "% of ideal", bound by ``min_pct_of_ideal``; ``min_pct_of_roof`` holds
kernels only. A stated bound that can be checked on no kernel or region at all (the report lacks
the counters, no roof is known for the device, no --baseline) is listed in ``unchecked`` with the
reason and what to capture (see :mod:`ncu_roof.comparison.gate_coverage`); kernels a bound could
not check while others were checked are listed in the notes. The rules file is read by
:mod:`ncu_roof.comparison.gate_file`; :mod:`ncu_roof.render.gate` renders a result (the JSON
contract is schema ``ncu-roof/check/1``) and ``ncu-roof check`` (:mod:`ncu_roof.cli.check`) turns
it into an exit code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof.comparison.compare import compare
from ncu_roof.comparison.gate_coverage import (
    NO_ALG,
    NO_ALG_ENTRY,
    NO_BASELINE,
    NO_LAUNCH,
    NO_ROOF,
    NOT_IN_BASELINE,
    SHORT,
    Coverage,
    coverage_lines,
    lacks,
    pct_reason,
    unmatched_entries,
)
from ncu_roof.comparison.gate_file import BOUNDS, GateRules, Limits, read_rules
from ncu_roof.comparison.match import read_mapping
from ncu_roof.diagnosis import DiagnoseRequest, Diagnosis, diagnose_request
from ncu_roof.errors import InputError
from ncu_roof.fmt import fmt_pct, fmt_seconds, plural
from ncu_roof.jsonable import json_num
from ncu_roof.model.kernels import kernel_summary

SCHEMA = "ncu-roof/check/1"


@dataclass(frozen=True)
class Violation:
    """One broken bound, with a sentence that says why."""

    kernel: str
    kind: str  # "kernel" or "region"
    rule: str
    value: float
    limit: float
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "kind": self.kind,
            "rule": self.rule,
            "value": json_num(self.value),
            "limit": json_num(self.limit),
            "message": self.message,
        }


@dataclass
class GateResult:
    """What the gate checked and what it found."""

    violations: list[Violation]
    checked: dict[str, int]
    notes: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    baseline: list[str] = field(default_factory=list)
    rules: str = "rules"
    unchecked: list[str] = field(default_factory=list)  # bounds checked on nothing, and why
    bounds_checked: dict[str, int] = field(default_factory=dict)  # kernels + regions per bound

    @property
    def passed(self) -> bool:
        return not self.violations


def _known(value: Any) -> bool:
    return (
        value is not None
        and value == value
        and not (isinstance(value, float) and math.isinf(value))
    )


def _roof_check(
    name: str, kind: str, pct: float, bound: str | None, lim: Limits
) -> Violation | None:
    if lim.min_pct_of_roof is None or not _known(pct) or pct >= lim.min_pct_of_roof:
        return None
    what = f" ({bound} bound)" if bound else ""
    return Violation(
        name,
        kind,
        "min_pct_of_roof",
        pct,
        lim.min_pct_of_roof,
        f"{kind} {name}: {fmt_pct(pct)} of its roof{what} is below min_pct_of_roof = "
        f"{lim.min_pct_of_roof:g}",
    )


def _ideal_check(name: str, pct: float, lim: Limits) -> Violation | None:
    """A region below its min_pct_of_ideal (ideal time / time, in %)."""
    if lim.min_pct_of_ideal is None or not _known(pct) or pct >= lim.min_pct_of_ideal:
        return None
    return Violation(
        name,
        "region",
        "min_pct_of_ideal",
        pct,
        lim.min_pct_of_ideal,
        f"region {name}: {fmt_pct(pct)} of ideal (ideal time / time) is below "
        f"min_pct_of_ideal = {lim.min_pct_of_ideal:g}",
    )


def _extra_check(name: str, kind: str, factor: float, lim: Limits) -> Violation | None:
    if (
        lim.max_extra_bytes_factor is None
        or not _known(factor)
        or factor <= lim.max_extra_bytes_factor
    ):
        return None
    return Violation(
        name,
        kind,
        "max_extra_bytes_factor",
        factor,
        lim.max_extra_bytes_factor,
        f"{kind} {name}: moves {factor:.2f}x the algorithmic DRAM bytes, above "
        f"max_extra_bytes_factor = {lim.max_extra_bytes_factor:g}",
    )


def _slowdown_check(
    name: str, kind: str, before: float, after: float, lim: Limits, against: str = "in the baseline"
) -> Violation | None:
    if lim.max_slowdown is None or not (_known(before) and _known(after)) or before <= 0:
        return None
    ratio = after / before
    if ratio <= lim.max_slowdown:
        return None
    return Violation(
        name,
        kind,
        "max_slowdown",
        ratio,
        lim.max_slowdown,
        f"{kind} {name}: {fmt_seconds(after)} vs {fmt_seconds(before)} {against} = "
        f"{ratio:.2f}x slower, beyond max_slowdown = {lim.max_slowdown:g}",
    )


def _kernel_info(placed: pd.DataFrame) -> dict[tuple[Any, str], tuple[set[str], bool]]:
    """Per (device, kernel): the quantities any launch lacks, and whether no roof is known."""
    out = {}
    for (device, kernel), g in placed.groupby(["device", "kernel"], dropna=False, sort=False):
        missing = {m for text in g["missing"].fillna("").astype(str) for m in text.split(",") if m}
        no_roof = bool(g["peak_flops_per_s"].isna().all() and g["dram_roof_bytes_per_s"].isna().all())
        out[(device if device == device else None, str(kernel))] = (missing, no_roof)
    return out


def _region_kernels(d: Diagnosis) -> set[str]:
    """Kernels inside a region with launches: the region is held to the bounds for them."""
    if d.regions.empty or "kernels" not in d.regions:
        return set()
    return {
        str(k)
        for _, r in d.regions.iterrows()
        if (json_num(r.get("launches")) or 0) > 0 and isinstance(r["kernels"], (list, tuple))
        for k in r["kernels"]
    }


def _kernel_violations(
    d: Diagnosis, rules: GateRules, counts: dict[str, int], cov: Coverage, has_baseline: bool
) -> list[Violation]:
    found: list[Violation] = []
    info = _kernel_info(d.placed)
    no_alg = NO_ALG_ENTRY if not d.regions.empty else NO_ALG  # regions exist: --algorithmic given
    in_region = _region_kernels(d)
    for _, k in kernel_summary(d.placed).iterrows():
        name, lim = str(k["kernel"]), rules.limits(str(k["kernel"]), "kernel")
        if lim.skip:
            counts["skipped"] += 1
            continue
        device = k["device"] if k["device"] == k["device"] else None
        missing, no_roof = info.get((device, name), (set(), False))
        short = _known(k["time_s"]) and k["time_s"] < lim.min_time_s
        counts["skipped"] += int(short)
        if lim.min_pct_of_roof is not None:
            if short:
                cov.miss("min_pct_of_roof", SHORT, "kernel", name)
            elif _known(k["pct_of_roof"]):
                cov.hit("min_pct_of_roof", "kernel", name)
                v = _roof_check(name, "kernel", k["pct_of_roof"], k["bound"], lim)
                found += [v] if v else []
            else:
                cov.miss("min_pct_of_roof", pct_reason(missing, no_roof), "kernel", name)
        if lim.max_extra_bytes_factor is not None:
            if short:
                cov.miss("max_extra_bytes_factor", SHORT, "kernel", name)
            elif _known(k["extra_bytes_factor"]):
                cov.hit("max_extra_bytes_factor", "kernel", name)
                v = _extra_check(name, "kernel", k["extra_bytes_factor"], lim)
                found += [v] if v else []
            else:
                reason = lacks(missing, ("dram_bytes",)) or no_alg
                if reason != no_alg or name not in in_region:  # a region's kernels: by region
                    cov.miss("max_extra_bytes_factor", reason, "kernel", name)
        if lim.max_slowdown is not None and not has_baseline:
            cov.miss("max_slowdown", NO_BASELINE, "kernel", name)
    return found


def _region_pct(region: pd.Series) -> float:
    ideal, time_s = json_num(region.get("ideal_time_s")), json_num(region.get("time_s"))
    return 100.0 * ideal / time_s if ideal is not None and time_s else math.nan


def _region_violations(
    d: Diagnosis, rules: GateRules, counts: dict[str, int], cov: Coverage, has_baseline: bool
) -> list[Violation]:
    found: list[Violation] = []
    if d.regions.empty or "name" not in d.regions:
        return found
    for _, r in d.regions.iterrows():
        name, lim = str(r["name"]), rules.limits(str(r["name"]), "region")
        time_s = json_num(r.get("time_s"))
        if lim.skip:
            counts["skipped"] += 1
            continue
        short = time_s is not None and time_s < lim.min_time_s
        counts["skipped"] += int(short)
        has_alg = json_num(r.get("alg_bytes")) is not None or json_num(r.get("alg_flops")) is not None
        pct = _region_pct(r)
        factor = json_num(r.get("extra_bytes_factor"))
        checks = (
            ("min_pct_of_ideal", pct, _ideal_check(name, pct, lim)),
            (
                "max_extra_bytes_factor",
                factor,
                _extra_check(name, "region", math.nan if factor is None else factor, lim),
            ),
        )
        for bound, value, violation in checks:
            if getattr(lim, bound) is None:
                continue
            if short:
                cov.miss(bound, SHORT, "region", name)
            elif _known(value):
                cov.hit(bound, "region", name)
                found += [violation] if violation else []
            else:
                reason = (
                    NO_LAUNCH if not (json_num(r.get("launches")) or 0)
                    else "lacks time_s" if time_s is None
                    else NO_ALG if not has_alg
                    else "lacks dram_bytes" if bound == "max_extra_bytes_factor"
                    else NO_ROOF
                )
                cov.miss(bound, reason, "region", name)
        if lim.max_slowdown is not None and not has_baseline:
            cov.miss("max_slowdown", NO_BASELINE, "region", name)
    return found


def _baseline_violations(
    base: Diagnosis,
    d: Diagnosis,
    rules: GateRules,
    mapping: dict[str, str] | None,
    cov: Coverage,
) -> list[Violation]:
    cmp = compare(base, d, mapping, lines=False)
    found: list[Violation] = []
    rows = [("kernel", r["kernel_new"], r) for _, r in cmp.kernels.iterrows()]
    rows += [("region", r["region"], r) for _, r in cmp.regions.iterrows()]
    for kind, name, r in rows:
        lim = rules.limits(str(name), kind)
        if lim.skip or lim.max_slowdown is None:
            continue
        before, after = r["time_s_before"], r["time_s_after"]
        if not (_known(before) and _known(after)):
            cov.miss("max_slowdown", "lacks time_s", kind, str(name))
            continue
        if max(before, after) < lim.min_time_s:
            cov.miss("max_slowdown", SHORT, kind, str(name))
            continue
        cov.hit("max_slowdown", kind, str(name))
        v = _slowdown_check(str(name), kind, before, after, lim)
        found += [v] if v else []
    for name in cmp.unmatched_new["kernel"].astype(str):
        lim = rules.limits(name, "kernel")
        if not lim.skip and lim.max_slowdown is not None:
            cov.miss("max_slowdown", NOT_IN_BASELINE, "kernel", name)
    return found


def _history_violations(d: Diagnosis, history: pd.DataFrame, rules: GateRules, cov: Coverage) -> list[Violation]:
    """max_slowdown of each kernel against its time in ``history`` (columns device, kernel, time_s,
    runs: the median of a store's last runs, from :mod:`ncu_roof.store.history`)."""
    known: dict[tuple[Any, str], tuple[float, int]] = {
        (r["device"], str(r["kernel"])): (float(r["time_s"]), int(r["runs"])) for r in history.to_dict("records")}
    found: list[Violation] = []
    for row in kernel_summary(d.placed).to_dict("records"):
        name = str(row["kernel"])
        lim = rules.limits(name, "kernel")
        if lim.skip or lim.max_slowdown is None:
            continue
        if (row["device"], name) not in known:
            cov.miss("max_slowdown", NOT_IN_BASELINE, "kernel", name)
            continue
        before, runs = known[(row["device"], name)]
        after = float(row["time_s"])
        if not (_known(before) and _known(after)):
            cov.miss("max_slowdown", "lacks time_s", "kernel", name)
        elif max(before, after) < lim.min_time_s:
            cov.miss("max_slowdown", SHORT, "kernel", name)
        else:
            cov.hit("max_slowdown", "kernel", name)
            against = f"(the median of its last {plural(int(runs), 'run')} in the store)"
            v = _slowdown_check(name, "kernel", before, after, lim, against)
            found += [v] if v else []
    return found


def check(
    d: Diagnosis,
    rules: GateRules,
    baseline: Diagnosis | None = None,
    mapping: dict[str, str] | None = None,
    history: pd.DataFrame | None = None,
) -> GateResult:
    """Hold every kernel and region of ``d`` to ``rules`` (and to ``baseline``'s times, or to the
    times of ``history``: a store's median of the last runs per kernel and device).

    A bound that could be checked on no kernel or region at all (no counters, no roof, no
    baseline) is listed in ``unchecked`` with the reason; ``ncu-roof check`` makes that an error.
    """
    counts = {"kernels": 0, "regions": 0, "skipped": 0}
    cov = Coverage()
    has_baseline = baseline is not None or history is not None
    violations = _kernel_violations(d, rules, counts, cov, has_baseline)
    violations += _region_violations(d, rules, counts, cov, has_baseline and history is None)
    if baseline is not None:
        violations += _baseline_violations(baseline, d, rules, mapping, cov)
    if history is not None:
        violations += _history_violations(d, history, rules, cov)
    counts["kernels"], counts["regions"] = cov.items("kernel"), cov.items("region")
    regions_skipped = not d.regions.empty and "name" in d.regions and any(
        rules.limits(str(n), "region").skip for n in d.regions["name"]
    )
    unchecked, notes = coverage_lines(rules, cov, regions_skipped)
    unchecked += unmatched_entries(rules, d)
    notes[:0] = list(rules.notes)
    has_regions = not d.regions.empty
    if (
        has_regions
        and rules.defaults.min_pct_of_roof is not None
        and rules.defaults.min_pct_of_ideal is None
        and not any("min_pct_of_ideal" in o for _, o in rules.regions)
    ):
        notes.append(
            "min_pct_of_roof holds kernels only; regions are held to min_pct_of_ideal "
            "(ideal time / time): set it in [defaults] to check them"
        )
    return GateResult(
        violations,
        counts,
        notes,
        list(d.inputs),
        list(baseline.inputs) if baseline else list(history.attrs.get("inputs", [])) if history is not None else [],
        rules.source,
        unchecked,
        {b: len(cov.checked[b]) for b in BOUNDS},
    )


def check_paths(request: DiagnoseRequest, rules: Path, baseline: list[str] | None = None,
                mapping: Path | None = None) -> GateResult:
    """Read the rules (and --map file), diagnose the request's reports (and ``baseline``, asked the
    same way) and :func:`check` them."""
    gate_rules = read_rules(rules)
    renames = read_mapping(mapping) if mapping is not None else None
    request = replace(request, lines=False)
    current = diagnose_request(request)
    if gate_rules.regions and request.algorithmic is None and current.regions.empty:
        raise InputError(f"{rules}: [[region]] bounds need regions and the reports hold none: pass "
                         "--algorithmic F.toml (or wrap the work in ncu_roof.region)")
    base = diagnose_request(request.of(baseline)) if baseline else None
    return check(current, gate_rules, base, renames)
