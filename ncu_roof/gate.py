"""A CI gate: kernels and regions held to a percent of their roof, an extra-bytes bound and,
against a baseline, a noise band on time. ``ncu-roof check`` exits 1 on any violation.

Rules file (TOML)::

    [defaults]
    min_pct_of_roof = 50          # % of the roof each kernel/region must reach
    max_extra_bytes_factor = 2.0  # DRAM bytes / algorithmic bytes (needs --algorithmic counts)
    max_slowdown = 1.10           # time / baseline time (needs --baseline)
    min_time_s = 20e-6            # kernels/regions shorter than this (both runs) are not checked

    [[kernel]]                    # overrides for kernels whose name matches (re.search);
    match = "set_halo"            # later entries win over earlier ones
    min_pct_of_roof = 20

    [[region]]                    # the same for regions, by region name
    match = "layernorm"
    skip = true                   # not checked at all

A region's percent of roof is its ideal time (algorithmic counts at the roofs) over its time.
The JSON contract is schema ``ncu-roof/check/1``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof.compare import compare
from ncu_roof.diagnose import Diagnosis
from ncu_roof.errors import InputError
from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.jsonable import clean, json_num
from ncu_roof.report.summary import kernel_summary
from ncu_roof.tomlfile import read_toml

SCHEMA = "ncu-roof/check/1"


@dataclass(frozen=True)
class Limits:
    """The bounds one kernel or region is held to; None leaves a bound unchecked."""

    min_pct_of_roof: float | None = None
    max_extra_bytes_factor: float | None = None
    max_slowdown: float | None = None
    min_time_s: float = 0.0
    skip: bool = False


LIMIT_KEYS = {f.name for f in fields(Limits)}


@dataclass(frozen=True)
class GateRules:
    """Defaults plus ordered (pattern, overrides) entries for kernels and for regions."""

    defaults: Limits
    kernels: tuple[tuple[re.Pattern[str], dict[str, Any]], ...] = ()
    regions: tuple[tuple[re.Pattern[str], dict[str, Any]], ...] = ()
    source: str = "rules"

    def limits(self, name: str, kind: str = "kernel") -> Limits:
        """Limits for a kernel (or region) name: defaults, then each matching override in order."""
        limits = self.defaults
        for pattern, overrides in self.kernels if kind == "kernel" else self.regions:
            if pattern.search(name):
                limits = replace(limits, **overrides)
        return limits


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

    @property
    def passed(self) -> bool:
        return not self.violations


# --- rules file -------------------------------------------------------------------------------
def _entry(raw: dict[str, Any], where: str, path: Path) -> dict[str, Any]:
    unknown = sorted(set(raw) - LIMIT_KEYS - {"match"})
    if unknown:
        raise InputError(
            f"{path}: {where} has unknown key {unknown[0]!r}; "
            f"known: {', '.join(sorted(LIMIT_KEYS))}"
        )
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "match":
            continue
        if key == "skip":
            if not isinstance(value, bool):
                raise InputError(f"{path}: {where} skip must be true or false")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InputError(f"{path}: {where} {key} = {value!r}; give a non-negative number")
        out[key] = value if key == "skip" else float(value)
    return out


def _overrides(
    entries: Any, section: str, path: Path
) -> tuple[tuple[re.Pattern[str], dict[str, Any]], ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise InputError(f'{path}: write [[{section}]] tables (with match = "regex")')
    out = []
    for i, raw in enumerate(entries, 1):
        where = f"[[{section}]] #{i}"
        if not isinstance(raw.get("match"), str):
            raise InputError(f'{path}: {where} needs match = "regex" (a {section} name pattern)')
        try:
            pattern = re.compile(raw["match"])
        except re.error as exc:
            raise InputError(
                f"{path}: {where} match {raw['match']!r} is not a valid regex: {exc}"
            ) from None
        out.append((pattern, _entry(raw, where, path)))
    return tuple(out)


def parse_rules(data: dict[str, Any], path: Path) -> GateRules:
    """Gate rules from parsed TOML (see the module docstring)."""
    unknown = sorted(set(data) - {"defaults", "kernel", "region"})
    if unknown:
        raise InputError(
            f"{path}: unknown section [{unknown[0]}]; use [defaults], [[kernel]], [[region]]"
        )
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise InputError(f"{path}: [defaults] must be a table")
    rules = GateRules(
        Limits(**_entry(defaults, "[defaults]", path)),
        _overrides(data.get("kernel"), "kernel", path),
        _overrides(data.get("region"), "region", path),
        str(path),
    )
    bounds = ("min_pct_of_roof", "max_extra_bytes_factor", "max_slowdown")
    stated = [getattr(rules.defaults, k) for k in bounds] + [
        o.get(k) for _, o in rules.kernels + rules.regions for k in bounds
    ]
    if all(v is None for v in stated):
        raise InputError(
            f"{path}: states no bound; set min_pct_of_roof, max_extra_bytes_factor or max_slowdown"
        )
    return rules


def read_rules(path: str | Path) -> GateRules:
    """Read and validate a rules TOML file; any problem is one InputError line."""
    path = Path(path)
    data = read_toml(path, "no such rules file: {path}", "{path} is not valid TOML: {exc}")
    return parse_rules(data, path)


# --- checks -----------------------------------------------------------------------------------
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
    name: str, kind: str, before: float, after: float, lim: Limits
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
        f"{kind} {name}: {fmt_seconds(after)} vs {fmt_seconds(before)} in the baseline = "
        f"{ratio:.2f}x slower, beyond max_slowdown = {lim.max_slowdown:g}",
    )


def _kernel_violations(d: Diagnosis, rules: GateRules, counts: dict[str, int]) -> list[Violation]:
    found: list[Violation] = []
    for _, k in kernel_summary(d.placed).iterrows():
        name, lim = str(k["kernel"]), rules.limits(str(k["kernel"]), "kernel")
        if lim.skip or not (_known(k["time_s"]) and k["time_s"] >= lim.min_time_s):
            counts["skipped"] += 1
            continue
        counts["kernels"] += 1
        found += [
            v
            for v in (
                _roof_check(name, "kernel", k["pct_of_roof"], k["bound"], lim),
                _extra_check(name, "kernel", k["extra_bytes_factor"], lim),
            )
            if v
        ]
    return found


def _region_pct(region: pd.Series) -> float:
    ideal, time_s = json_num(region.get("ideal_time_s")), json_num(region.get("time_s"))
    return 100.0 * ideal / time_s if ideal is not None and time_s else math.nan


def _region_violations(d: Diagnosis, rules: GateRules, counts: dict[str, int]) -> list[Violation]:
    found: list[Violation] = []
    if d.regions.empty or "name" not in d.regions:
        return found
    for _, r in d.regions.iterrows():
        name, lim = str(r["name"]), rules.limits(str(r["name"]), "region")
        time_s = json_num(r.get("time_s"))
        if lim.skip or time_s is None or time_s < lim.min_time_s:
            counts["skipped"] += 1
            continue
        counts["regions"] += 1
        found += [
            v
            for v in (
                _roof_check(name, "region", _region_pct(r), None, lim),
                _extra_check(name, "region", json_num(r.get("extra_bytes_factor")) or math.nan, lim),
            )
            if v
        ]
    return found


def _baseline_violations(
    base: Diagnosis,
    d: Diagnosis,
    rules: GateRules,
    mapping: dict[str, str] | None,
    notes: list[str],
) -> list[Violation]:
    cmp = compare(base, d, mapping)
    found: list[Violation] = []
    rows = [("kernel", r["kernel_new"], r) for _, r in cmp.kernels.iterrows()]
    rows += [("region", r["region"], r) for _, r in cmp.regions.iterrows()]
    for kind, name, r in rows:
        lim = rules.limits(str(name), kind)
        longest = max(r["time_s_before"], r["time_s_after"])
        if lim.skip or not _known(longest) or longest < lim.min_time_s:
            continue
        v = _slowdown_check(str(name), kind, r["time_s_before"], r["time_s_after"], lim)
        found += [v] if v else []
    if len(cmp.unmatched_new):
        notes.append(
            f"{len(cmp.unmatched_new)} kernel(s) have no baseline to compare against: "
            + ", ".join(cmp.unmatched_new["kernel"].astype(str))
        )
    return found


def _coverage_notes(d: Diagnosis, rules: GateRules) -> list[str]:
    notes = []
    if rules.defaults.min_pct_of_roof is not None and d.placed["pct_of_roof"].isna().any():
        notes.append(
            f"{int(d.placed['pct_of_roof'].isna().sum())} launch(es) lack a % of roof "
            "(no roof known for their device: pass --ceilings) and were not held to min_pct_of_roof"
        )
    has_alg = "alg_bytes" in d.placed and d.placed["alg_bytes"].notna().any()
    has_region_alg = (
        not d.regions.empty and "alg_bytes" in d.regions and d.regions["alg_bytes"].notna().any()
    )
    if rules.defaults.max_extra_bytes_factor is not None and not (has_alg or has_region_alg):
        notes.append(
            "max_extra_bytes_factor not checked: no algorithmic counts "
            "(pass --algorithmic FILE.toml)"
        )
    return notes


def check(
    d: Diagnosis,
    rules: GateRules,
    baseline: Diagnosis | None = None,
    mapping: dict[str, str] | None = None,
) -> GateResult:
    """Hold every kernel and region of ``d`` to ``rules`` (and to ``baseline``'s times)."""
    counts = {"kernels": 0, "regions": 0, "skipped": 0}
    notes = _coverage_notes(d, rules)
    violations = _kernel_violations(d, rules, counts) + _region_violations(d, rules, counts)
    if baseline is not None:
        violations += _baseline_violations(baseline, d, rules, mapping, notes)
    elif (
        any(lim.get("max_slowdown") for _, lim in rules.kernels + rules.regions)
        or rules.defaults.max_slowdown
    ):
        notes.append("max_slowdown not checked: no --baseline given")
    return GateResult(
        violations,
        counts,
        notes,
        list(d.inputs),
        list(baseline.inputs) if baseline else [],
        rules.source,
    )


# --- output -----------------------------------------------------------------------------------
def to_dict(result: GateResult) -> dict[str, Any]:
    """The JSON contract (schema ``ncu-roof/check/1``)."""
    return clean(
        {
            "schema": SCHEMA,
            "passed": result.passed,
            "rules": result.rules,
            "inputs": result.inputs,
            "baseline": result.baseline,
            "checked": result.checked,
            "violations": [v.as_dict() for v in result.violations],
            "notes": result.notes,
        }
    )


def render_json(result: GateResult) -> str:
    return json.dumps(to_dict(result), indent=2, allow_nan=False) + "\n"


def render_text(result: GateResult) -> str:
    """One OK line, or FAILED and one line per violation; notes after."""
    c = result.checked
    scope = f"{c['kernels']} kernel(s), {c['regions']} region(s) checked against {result.rules}"
    if result.baseline:
        scope += " and the baseline"
    if c.get("skipped"):
        scope += f" ({c['skipped']} not checked: shorter than min_time_s or skip = true)"
    if result.passed:
        lines = [f"ncu-roof check: OK: {scope}"]
    else:
        lines = [f"ncu-roof check: FAILED: {len(result.violations)} violation(s); {scope}"]
        lines += [f"- {v.message}" for v in result.violations]
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


RENDERERS = {"text": render_text, "json": render_json}
