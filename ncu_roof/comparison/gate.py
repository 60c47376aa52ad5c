"""A CI gate: kernels and regions held to a percent of their roof, an extra-bytes bound and,
against a baseline, a noise band on time. ``ncu-roof check`` exits 1 on any violation.

Rules file (TOML)::

    [defaults]
    min_pct_of_roof = 50          # % of its roof each kernel must reach
    min_pct_of_ideal = 30         # % of ideal (ideal time / time) each region must reach
    max_extra_bytes_factor = 2.0  # DRAM bytes / algorithmic bytes (needs --algorithmic counts)
    max_slowdown = 1.10           # time / baseline time (needs --baseline)
    min_time_s = 20e-6            # kernels/regions shorter than this (both runs) are not checked

    [[kernel]]                    # overrides for kernels whose name matches (RE2 search);
    match = "set_halo"            # later entries win over earlier ones
    min_pct_of_roof = 20

    [[region]]                    # the same for regions, by region name
    match = "layernorm"
    skip = true                   # not checked at all

A region's percent is its ideal time (algorithmic counts at the roofs) over its time, its
"% of ideal", bound by ``min_pct_of_ideal``; ``min_pct_of_roof`` holds kernels only. On a
``[[region]]`` entry ``min_pct_of_roof`` is read as ``min_pct_of_ideal`` (with a note).
A stated bound that can be checked on no kernel or region at all (the report lacks the
counters, no roof is known for the device, no --baseline) is listed in ``unchecked`` with the
reason and what to capture; ``ncu-roof check`` exits 2 on it unless ``--allow-unchecked``.
Kernels a bound could not check while others were checked are listed in the notes.
The JSON contract is schema ``ncu-roof/check/1``.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof import schema
from ncu_roof.comparison.match import compare, read_mapping
from ncu_roof.diagnose import Diagnosis, diagnose_paths
from ncu_roof.errors import InputError
from ncu_roof.fmt import fmt_pct, fmt_seconds, plural
from ncu_roof.jsonable import clean, json_num
from ncu_roof.render.summary import kernel_summary, short_name
from ncu_roof.tomlfile import read_toml

SCHEMA = "ncu-roof/check/1"


@dataclass(frozen=True)
class Limits:
    """The bounds one kernel or region is held to; None leaves a bound unchecked."""

    min_pct_of_roof: float | None = None  # kernels: % of roof
    min_pct_of_ideal: float | None = None  # regions: ideal time / time, in %
    max_extra_bytes_factor: float | None = None
    max_slowdown: float | None = None
    min_time_s: float = 0.0
    skip: bool = False


LIMIT_KEYS = {f.name for f in fields(Limits)}


@dataclass(frozen=True)
class GateRules:
    """Defaults plus ordered (pattern, overrides) entries for kernels and for regions."""

    defaults: Limits
    kernels: tuple[tuple[schema.Pattern, dict[str, Any]], ...] = ()
    regions: tuple[tuple[schema.Pattern, dict[str, Any]], ...] = ()
    source: str = "rules"
    notes: tuple[str, ...] = ()  # how the file was read (aliases)

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
    unchecked: list[str] = field(default_factory=list)  # bounds checked on nothing, and why
    bounds_checked: dict[str, int] = field(default_factory=dict)  # kernels + regions per bound

    @property
    def passed(self) -> bool:
        return not self.violations


# --- rules file -------------------------------------------------------------------------------
def _entry(
    raw: dict[str, Any], where: str, path: Path, notes: list[str] | None = None
) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InputError(f"{path}: {where} must be a table of bounds")
    schema.check_keys(raw, sorted(LIMIT_KEYS) + ([] if where == "[defaults]" else ["match"]), where, path)
    raw = dict(raw)
    if where.startswith("[[kernel]]") and "min_pct_of_ideal" in raw:
        raise InputError(
            f"{path}: {where} min_pct_of_ideal holds regions (ideal time / time); "
            "use min_pct_of_roof for kernels"
        )
    if where.startswith("[[region]]") and "min_pct_of_roof" in raw:
        if "min_pct_of_ideal" in raw:
            raise InputError(
                f"{path}: {where} states both min_pct_of_roof and min_pct_of_ideal; "
                "a region's bound is min_pct_of_ideal"
            )
        raw["min_pct_of_ideal"] = raw.pop("min_pct_of_roof")
        if notes is not None:
            notes.append(
                f"{path}: {where} min_pct_of_roof read as min_pct_of_ideal (a region's percent "
                "is ideal time / time); write min_pct_of_ideal"
            )
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "match":
            continue
        if key == "skip":
            if not isinstance(value, bool):
                raise InputError(f"{path}: {where} skip must be true or false")
        else:
            value = schema.positive_number(value, key, where, path, zero=key in ("min_time_s", "min_pct_of_roof",
                                                                                  "min_pct_of_ideal"))
        out[key] = value
    return out


def _overrides(
    entries: Any, section: str, path: Path, notes: list[str] | None = None
) -> tuple[tuple[schema.Pattern, dict[str, Any]], ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise InputError(f'{path}: write [[{section}]] tables (with match = "regex")')
    out = []
    for i, raw in enumerate(entries, 1):
        where = f"[[{section}]] #{i}"
        if not isinstance(raw, dict) or not isinstance(raw.get("match"), str):
            raise InputError(f'{path}: {where} needs match = "regex" (a {section} name pattern)')
        pattern = schema.compile_regex(raw["match"], "match", where, path)
        out.append((pattern, _entry(raw, where, path, notes)))
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
    notes: list[str] = []
    rules = GateRules(
        Limits(**_entry(defaults, "[defaults]", path)),
        _overrides(data.get("kernel"), "kernel", path),
        _overrides(data.get("region"), "region", path, notes),
        str(path),
        tuple(notes),
    )
    stated = [getattr(rules.defaults, k) for k in BOUNDS] + [
        o.get(k) for _, o in rules.kernels + rules.regions for k in BOUNDS
    ]
    if all(v is None for v in stated):
        raise InputError(
            f"{path}: states no bound; set min_pct_of_roof, min_pct_of_ideal, "
            "max_extra_bytes_factor or max_slowdown"
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


BOUNDS = ("min_pct_of_roof", "min_pct_of_ideal", "max_extra_bytes_factor", "max_slowdown")
PCT_NEEDS = ("time_s", "dram_bytes", "flops")  # what a % of roof is computed from
SHORT = "shorter than min_time_s"
NO_ROOF = "no roof: device unknown"
NO_ALG = "no algorithmic counts"
NO_ALG_ENTRY = "no algorithmic counts in the --algorithmic file"
NO_REGION = "no region in the report"
NO_LAUNCH = "matches no launch"
NO_BASELINE = "no --baseline given"
NOT_IN_BASELINE = "not in the baseline"


@dataclass
class Coverage:
    """Per bound: the kernels and regions it was checked on, and why the others held to it were not."""

    checked: dict[str, set[tuple[str, str]]] = field(
        default_factory=lambda: {b: set() for b in BOUNDS}
    )
    missed: dict[str, dict[str, list[tuple[str, str]]]] = field(
        default_factory=lambda: {b: {} for b in BOUNDS}
    )

    def hit(self, bound: str, kind: str, name: str) -> None:
        self.checked[bound].add((kind, name))

    def miss(self, bound: str, reason: str, kind: str, name: str) -> None:
        self.missed[bound].setdefault(reason, []).append((kind, name))

    def items(self, kind: str) -> int:
        return len({n for b in BOUNDS for k, n in self.checked[b] if k == kind})


def _hint(reason: str) -> str | None:
    """What to capture or pass so that a bound can be checked."""
    from ncu_roof.read.normalize import KEY_QUANTITIES

    if reason.startswith("lacks "):
        keys = [k.strip() for k in reason.removeprefix("lacks ").split(",")]
        return "capture " + ", ".join(KEY_QUANTITIES.get(k, k) for k in keys)
    return {
        NO_ROOF: "pass --ceilings FILE (from `ncu-roof ceilings`)",
        NO_ALG: "pass --algorithmic FILE.toml",
        NO_ALG_ENTRY: "no algorithmic entry covers these kernels",
        NO_REGION: "pass --algorithmic FILE.toml with [[region]] entries",
        NO_LAUNCH: "check the region's kernels pattern",
        NO_BASELINE: "pass --baseline REPORT",
        NOT_IN_BASELINE: "check the kernel names or pass --map FILE.toml",
        SHORT: "lower min_time_s",
    }.get(reason)


def _lacks(missing: set[str], needs: tuple[str, ...]) -> str | None:
    lacking = [m for m in needs if m in missing]
    return "lacks " + ", ".join(lacking) if lacking else None


def _pct_reason(missing: set[str], no_roof: bool) -> str:
    """Why a kernel has no % of roof: the counters it lacks, else no roof for its device."""
    lacks = _lacks(missing, PCT_NEEDS)
    if lacks and ("time_s" in missing or ("dram_bytes" in missing and "flops" in missing)):
        return lacks
    if no_roof:
        return NO_ROOF
    return lacks or "no % of roof"


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
                cov.miss("min_pct_of_roof", _pct_reason(missing, no_roof), "kernel", name)
        if lim.max_extra_bytes_factor is not None:
            if short:
                cov.miss("max_extra_bytes_factor", SHORT, "kernel", name)
            elif _known(k["extra_bytes_factor"]):
                cov.hit("max_extra_bytes_factor", "kernel", name)
                v = _extra_check(name, "kernel", k["extra_bytes_factor"], lim)
                found += [v] if v else []
            else:
                reason = _lacks(missing, ("dram_bytes",)) or no_alg
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
    cmp = compare(base, d, mapping)
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


def _who(items: list[tuple[str, str]], names: bool, most: int = 5) -> str:
    """``2 kernels, 1 region`` or, with names, ``kernel a, kernel b, … and 3 more``."""
    if names:
        shown = [f"{kind} {name}" for kind, name in items[:most]]
        more = f" and {len(items) - most} more" if len(items) > most else ""
        return ", ".join(shown) + more
    kernels = sum(1 for kind, _ in items if kind == "kernel")
    regions = len(items) - kernels
    parts = [plural(kernels, "kernel")] if kernels else []
    return ", ".join(parts + ([plural(regions, "region")] if regions else []))


def _reasons(missed: dict[str, list[tuple[str, str]]], names: bool) -> str:
    parts = []
    for reason, items in missed.items():
        hint = _hint(reason)
        parts.append(f"{reason} ({_who(items, names)})" + (f"; {hint}" if hint else ""))
    return "; ".join(parts)


def _coverage(
    rules: GateRules, cov: Coverage, skipped: bool = False
) -> tuple[list[str], list[str]]:
    """(bounds checked on nothing: one line each, notes on what some bounds could not check).

    ``skipped``: some region was left out by ``skip = true``."""
    unchecked, notes = [], []
    for bound in BOUNDS:
        missed = cov.missed[bound]
        held = len(cov.checked[bound]) + sum(len(v) for v in missed.values())
        if not cov.checked[bound]:
            if getattr(rules.defaults, bound) is not None or held:
                why = _reasons(missed, names=False) or (
                    f"{NO_REGION}; {_hint(NO_REGION)}"
                    if bound == "min_pct_of_ideal" and not skipped
                    else "skip = true for every kernel and region"
                )
                unchecked.append(f"{bound} could not be checked on any kernel or region: {why}")
            continue
        data = {r: items for r, items in missed.items() if r != SHORT}
        if data:
            n = sum(len(v) for v in data.values())
            notes.append(
                f"{bound} not checked on {n} of {held}: {_reasons(data, names=True)}"
            )
    return unchecked, notes


def _did_you_mean(pattern: str, names: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the name closest to a pattern, or the names there are."""
    close = difflib.get_close_matches(pattern, names, n=1, cutoff=0.3)
    if not close:
        close = [n for n in names if pattern.lower() in n.lower() or n.lower() in pattern.lower()][:1]
    if close:
        return f" (did you mean {short_name(close[0], 80)!r}?)"
    shown = ", ".join(short_name(n, 60) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f" (there are: {shown})" if names else ""


def _unmatched_entries(rules: GateRules, d: Diagnosis) -> list[str]:
    """One line per ``[[kernel]]``/``[[region]]`` entry whose pattern matches nothing in the
    input: a typo in a CI rule must fail the gate, not pass it silently."""
    kernels = sorted({str(k) for k in d.placed["kernel"].dropna()}) if "kernel" in d.placed else []
    regions = (
        sorted({str(n) for n in d.regions["name"].dropna()})
        if not d.regions.empty and "name" in d.regions else []
    )
    lines = []
    for section, entries, names in (("kernel", rules.kernels, kernels), ("region", rules.regions, regions)):
        for i, (pattern, _) in enumerate(entries, 1):
            if any(pattern.search(n) for n in names):
                continue
            what = f"no {section} in the input" if names else (
                "no region in the input (pass --algorithmic FILE.toml)" if section == "region"
                else "no kernel in the input")
            lines.append(
                f"[[{section}]] #{i} match = {pattern.pattern!r} matches {what}"
                + _did_you_mean(pattern.pattern, names)
            )
    return lines


def check(
    d: Diagnosis,
    rules: GateRules,
    baseline: Diagnosis | None = None,
    mapping: dict[str, str] | None = None,
) -> GateResult:
    """Hold every kernel and region of ``d`` to ``rules`` (and to ``baseline``'s times).

    A bound that could be checked on no kernel or region at all (no counters, no roof, no
    baseline) is listed in ``unchecked`` with the reason; ``ncu-roof check`` makes that an error.
    """
    counts = {"kernels": 0, "regions": 0, "skipped": 0}
    cov = Coverage()
    has_baseline = baseline is not None
    violations = _kernel_violations(d, rules, counts, cov, has_baseline)
    violations += _region_violations(d, rules, counts, cov, has_baseline)
    if baseline is not None:
        violations += _baseline_violations(baseline, d, rules, mapping, cov)
    counts["kernels"], counts["regions"] = cov.items("kernel"), cov.items("region")
    regions_skipped = not d.regions.empty and "name" in d.regions and any(
        rules.limits(str(n), "region").skip for n in d.regions["name"]
    )
    unchecked, notes = _coverage(rules, cov, regions_skipped)
    unchecked += _unmatched_entries(rules, d)
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
        list(baseline.inputs) if baseline else [],
        rules.source,
        unchecked,
        {b: len(cov.checked[b]) for b in BOUNDS},
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
            "bounds_checked": result.bounds_checked,
            "violations": [v.as_dict() for v in result.violations],
            "unchecked": result.unchecked,
            "notes": result.notes,
        }
    )


def render_json(result: GateResult, unchecked_fatal: bool = False) -> str:
    return json.dumps(to_dict(result), indent=2, allow_nan=False) + "\n"


def render_text(result: GateResult, unchecked_fatal: bool = False) -> str:
    """One OK line, or FAILED and one line per violation; notes after.

    ``unchecked_fatal``: the bounds checked on nothing are left out of the notes (``ncu-roof
    check`` reports them as the error that follows) and the OK line says it covers only the
    bounds that were checked."""
    c = result.checked
    scope = (
        f"{plural(c['kernels'], 'kernel')}, {plural(c['regions'], 'region')} checked "
        f"against {result.rules}"
    )
    if result.baseline:
        scope += " and the baseline"
    if c.get("skipped"):
        scope += f" ({c['skipped']} not checked: shorter than min_time_s or skip = true)"
    if result.passed and unchecked_fatal and result.unchecked:
        lines = [f"ncu-roof check: OK on the bounds that could be checked: {scope}"]
    elif result.passed:
        lines = [f"ncu-roof check: OK: {scope}"]
    else:
        lines = [f"ncu-roof check: FAILED: {plural(len(result.violations), 'violation')}; {scope}"]
        lines += [f"- {v.message}" for v in result.violations]
    unchecked = [] if unchecked_fatal else result.unchecked
    lines += [f"note: {n}" for n in unchecked + result.notes]
    return "\n".join(lines) + "\n"


RENDERERS = {"text": render_text, "json": render_json}


# --- the check command ------------------------------------------------------------------------
EXIT_OK, EXIT_VIOLATION, EXIT_INPUT = 0, 1, 2


@dataclass(frozen=True)
class CheckOutcome:
    """What ``ncu-roof check`` prints and how it exits.

    ``exit_code``: 0 all bounds hold, 1 a violation, 2 a stated bound checked on nothing (and
    no violation). ``error``: the unchecked bounds, when they are an error: after ``text``, a
    line on stderr with exit 1 (a violation wins), or the InputError of exit 2."""

    text: str
    exit_code: int
    error: str | None = None


def run_check(
    reports: list[str],
    rules: Path,
    baseline: list[str] | None = None,
    algorithmic: Path | None = None,
    ceilings: Path | None = None,
    mapping: Path | None = None,
    fmt: str = "text",
    allow_unchecked: bool = False,
    device: str | None = None,
) -> CheckOutcome:
    """Read the rules (and --map file), diagnose ``reports`` (and ``baseline``), :func:`check`
    them and render the result as ``fmt``."""
    gate_rules = read_rules(rules)
    renames = read_mapping(mapping) if mapping is not None else None
    current = diagnose_paths(reports, algorithmic, ceilings, device=device)
    if gate_rules.regions and algorithmic is None and current.regions.empty:
        raise InputError(f"{rules}: [[region]] bounds need regions and the reports hold none: pass "
                         "--algorithmic F.toml (or wrap the work in ncu_roof.region)")
    base = diagnose_paths(baseline, algorithmic, ceilings, device=device) if baseline else None
    result = check(current, gate_rules, base, renames)
    fatal = bool(result.unchecked) and not allow_unchecked
    text = RENDERERS[fmt](result, unchecked_fatal=fatal)
    if not fatal:
        return CheckOutcome(text, EXIT_OK if result.passed else EXIT_VIOLATION)
    error = "; ".join(result.unchecked) + " (--allow-unchecked to pass anyway)"
    return CheckOutcome(text, EXIT_INPUT if result.passed else EXIT_VIOLATION, error)
