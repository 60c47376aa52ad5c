"""What the gate could not check, and why: per bound, the kernels and regions it was checked on
and the reasons the others were not (a :class:`Coverage`) in; the lines for ``unchecked`` and the
notes out, each reason with what to capture or pass.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ncu_roof.comparison.gate_file import BOUNDS, GateRules
from ncu_roof.diagnosis import Diagnosis
from ncu_roof.fmt import plural, short_name

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


def lacks(missing: set[str], needs: tuple[str, ...]) -> str | None:
    lacking = [m for m in needs if m in missing]
    return "lacks " + ", ".join(lacking) if lacking else None


def pct_reason(missing: set[str], no_roof: bool) -> str:
    """Why a kernel has no % of roof: the counters it lacks, else no roof for its device."""
    lacking = lacks(missing, PCT_NEEDS)
    if lacking and ("time_s" in missing or ("dram_bytes" in missing and "flops" in missing)):
        return lacking
    if no_roof:
        return NO_ROOF
    return lacking or "no % of roof"


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


def coverage_lines(
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


def unmatched_entries(rules: GateRules, d: Diagnosis) -> list[str]:
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
