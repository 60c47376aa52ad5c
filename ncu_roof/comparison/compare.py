"""Before/after comparison of two diagnoses: a base and a new :class:`~ncu_roof.diagnosis.Diagnosis`
(and kernel renames) in, a :class:`Comparison` out: matched launches, one row per matched kernel and
per region present on both sides (before/after columns, moves, findings that appeared or
disappeared), what is only on one side, and notes.

Launches are paired by :mod:`ncu_roof.comparison.match`, then aggregated per kernel and compared
by :mod:`ncu_roof.comparison.deltas`; regions are compared by name. The JSON contract is schema
``ncu-roof/compare/1``; :mod:`ncu_roof.render.compare` renders a comparison (text, markdown, JSON)
and :mod:`ncu_roof.render.charts.compare` draws it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pandas as pd

from ncu_roof.comparison.deltas import aggregate, compare_row, ratio, region_aggregate
from ncu_roof.comparison.lines import LineMove, line_moves
from ncu_roof.comparison.match import PASSES, STEM, match_launches, pair_only_kernels, read_mapping, suggest_renames
from ncu_roof.diagnosis import DiagnoseRequest, Diagnosis, diagnose_request
from ncu_roof.fmt import plural

SCHEMA = "ncu-roof/compare/1"
COMPARABLE = 0.5  # the total speedup needs matched launches to hold this share of each side's time


@dataclass
class Comparison:
    """A matched before/after pair of diagnoses."""

    base: Diagnosis
    new: Diagnosis
    pairs: pd.DataFrame  # one row per matched launch: base_row, new_row, kernel, kernel_new, match
    kernels: pd.DataFrame  # one row per matched kernel (before/after columns)
    regions: pd.DataFrame  # one row per region present on both sides
    unmatched_base: pd.DataFrame  # per kernel: launches and time only in base
    unmatched_new: pd.DataFrame  # per kernel: launches and time only in new
    unmatched_regions: dict[str, list[str]] = field(default_factory=dict)
    renames: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # when nothing matched: (base, new) kernel pairs a --map file could rename, and how paired
    suggested_renames: list[tuple[str, str]] = field(default_factory=list)
    suggestion_basis: str = ""
    left_over: dict[str, list[str]] = field(default_factory=dict)  # kernels with no counterpart
    lines: list[LineMove] = field(default_factory=list)  # the source lines that moved on paired kernels

    @property
    def total_before_s(self) -> float:
        return self.base.total_time_s

    @property
    def total_after_s(self) -> float:
        return self.new.total_time_s

    @property
    def matched_share(self) -> tuple[float, float]:
        """Share of each side's GPU time held by matched launches (NaN where time is unknown)."""
        return (
            ratio(_matched_time(self.base.placed, self.pairs["base_row"]), self.total_before_s),
            ratio(_matched_time(self.new.placed, self.pairs["new_row"]), self.total_after_s),
        )

    @property
    def comparable(self) -> bool:
        """False when matched launches hold less than half of either side's known time."""
        return not any(share == share and share < COMPARABLE for share in self.matched_share)

    @property
    def speedup(self) -> float:
        """Total before / after time; NaN when the runs are not comparable."""
        return ratio(self.total_before_s, self.total_after_s) if self.comparable else math.nan


def _matched_time(placed: pd.DataFrame, rows: pd.Series) -> float:
    """Known GPU time of the matched launches (0 when none matched)."""
    return float(placed["time_s"].iloc[rows.to_numpy(dtype=int)].sum()) if len(rows) else 0.0


def _rules_for(findings: list[Any], names: set[str], region: str | None = None) -> set[str]:
    if region is not None:
        return {f.rule for f in findings if f.region == region}
    return {f.rule for f in findings if names & set(f.kernels)}


def _top_stake(findings: list[Any], names: set[str], after: list[Any] | None = None,
               names_after: set[str] | None = None) -> tuple[tuple[str, float] | None, tuple[str, float] | None]:
    """(the before-report's largest stake on these kernels among the findings whose evidence moved,
    or that the after-report no longer has, and its rule; the largest whose evidence stayed, which
    the win is not owed to). Without ``after`` every finding counts as moved."""
    staked = sorted((f for f in findings if names & set(f.kernels) and f.time_at_stake_s),
                    key=lambda f: -f.time_at_stake_s)
    still = {f.rule: f for f in (after or []) if (names_after or set()) & set(f.kernels)}
    moved = [f for f in staked if after is None or f.rule not in still or _evidence_moved(f, still[f.rule])]
    kept = [f for f in staked if f not in moved]
    return ((moved[0].rule, float(moved[0].time_at_stake_s)) if moved else None,
            (kept[0].rule, float(kept[0].time_at_stake_s)) if kept else None)


MOVED = 0.05  # a piece of evidence that changed by more than this share moved


def _evidence_moved(before: Any, after: Any) -> bool:
    """Whether any number of a finding's evidence other than times (those move with any win) changed
    by more than :data:`MOVED`: COALDA's wave-tail (64 blocks of 1,024 in 3.2 waves) did not move
    when coalescing won 3.4 us; its stake shrank with the time alone."""
    for key, value in before.evidence.items():
        other = after.evidence.get(key)
        if key.endswith("_s") or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not isinstance(other, (int, float)) or other != other or value != value:
            return True
        if abs(other - value) > MOVED * max(abs(value), abs(other), 1e-30):
            return True
    return False


def clocks_locked(base: Diagnosis, new: Diagnosis) -> bool:
    """Both sides captured with clocks locked: every report says so (ncu's default, base clocks), or,
    where reports do not say (ncu before 2023 kept no launch settings), both sides' SM clocks
    agree to 0.5% and sit under 90% of the GPU's spec clock: locked to base, not boosting
    (GPUIndexSpaces on an A40: 1,303 to 1,305 MHz in five reports, spec 1,740 MHz)."""
    controls = {r.get("clock_control") for r in base.runs + new.runs}
    if controls == {"base"}:
        return True
    if controls != {None}:
        return False
    clocks = [_median(d.placed, "sm_clock_hz") for d in (base, new)]
    spec = _median(base.placed, "sm_clock_spec_hz")
    return all(c == c for c in clocks) and abs(clocks[0] / clocks[1] - 1) <= 0.005 and spec == spec and (
        max(clocks) <= 0.9 * spec)


def _median(placed: pd.DataFrame, column: str) -> float:
    return float(placed[column].median()) if column in placed and placed[column].notna().any() else float("nan")


def _names(launches: pd.DataFrame) -> set[str]:
    return set(launches["kernel"].astype(str)) | set(
        launches["kernel_demangled"].dropna().astype(str)
    )


def _kernel_rows(cmp_pairs: pd.DataFrame, base: Diagnosis, new: Diagnosis) -> pd.DataFrame:
    rows = []
    locked = clocks_locked(base, new)
    for (kernel, kernel_new), group in cmp_pairs.groupby(["kernel", "kernel_new"], sort=False):
        b = base.placed.iloc[group["base_row"].to_numpy()]
        n = new.placed.iloc[group["new_row"].to_numpy()]
        row: dict[str, Any] = {
            "kernel": kernel,
            "kernel_new": kernel_new,
            "match": ", ".join(sorted(group["match"].unique(), key=[k for _, k in PASSES].index)),
        }
        top, kept = _top_stake(base.findings, _names(b), new.findings, _names(n))
        sides = [{**aggregate(x), "clocks_locked": locked} for x in (b, n)]
        row.update(compare_row(sides[0], sides[1], predicted=top, kept=kept))
        before, after = _rules_for(base.findings, _names(b)), _rules_for(new.findings, _names(n))
        row["findings_appeared"], row["findings_disappeared"] = (
            sorted(after - before),
            sorted(before - after),
        )
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values("time_s_before", ascending=False, na_position="last").reset_index(
        drop=True
    )


def _unmatched(placed: pd.DataFrame, rows: pd.Series) -> pd.DataFrame:
    left = placed.drop(index=placed.index[rows.to_numpy(dtype=int)]) if len(rows) else placed
    if left.empty:
        return pd.DataFrame(
            {
                "kernel": pd.Series(dtype=str),
                "launches": pd.Series(dtype="int64"),
                "time_s": pd.Series(dtype="float64"),
            }
        )
    out = left.groupby(left["kernel"].astype(str), sort=False).agg(
        launches=("kernel", "size"), time_s=("time_s", lambda s: s.sum(min_count=1))
    )
    return out.reset_index().sort_values("time_s", ascending=False).reset_index(drop=True)


def _live_regions(d: Diagnosis) -> dict[str, pd.Series]:
    if d.regions.empty or "name" not in d.regions:
        return {}
    return {str(r["name"]): r for _, r in d.regions.iterrows() if (r.get("launches") or 0) > 0}


def _region_rows(base: Diagnosis, new: Diagnosis) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    b_regions, n_regions = _live_regions(base), _live_regions(new)
    rows = []
    for name in [n for n in b_regions if n in n_regions]:
        b, n = region_aggregate(b_regions[name]), region_aggregate(n_regions[name])
        row = {
            "region": name,
            **compare_row(b, n, "region"),
            "extra_bytes_factor_before": b["extra_bytes_factor"],
            "extra_bytes_factor_after": n["extra_bytes_factor"],
        }
        before, after = (
            _rules_for(base.findings, set(), name),
            _rules_for(new.findings, set(), name),
        )
        row["findings_appeared"], row["findings_disappeared"] = (
            sorted(after - before),
            sorted(before - after),
        )
        rows.append(row)
    unmatched = {
        "base": [n for n in b_regions if n not in n_regions],
        "new": [n for n in n_regions if n not in b_regions],
    }
    return pd.DataFrame(rows), unmatched


def _devices(placed: pd.DataFrame) -> list[str]:
    return sorted(set(placed["device"].dropna().astype(str)))


def _compare_notes(
    base: Diagnosis, new: Diagnosis, mapping: dict[str, str], pairs: pd.DataFrame, auto_note: str | None
) -> list[str]:
    """Notes of a comparison, in order: the automatic pairing, a device mismatch, renames that
    name no base kernel, and launch pairs matched by name only."""
    notes = [auto_note] if auto_note else []
    devices = _devices(base.placed), _devices(new.placed)
    if devices[0] and devices[1] and devices[0] != devices[1]:
        notes.append(
            f"warning: different devices: BASE ran on {', '.join(devices[0])}, "
            f"NEW on {', '.join(devices[1])}"
        )
    unused = sorted(
        set(mapping)
        - set(base.placed["kernel"].astype(str))
        - set(base.placed["kernel_demangled"].dropna().astype(str))
    )
    if unused:
        notes.append(f"mapping names no base kernel: {', '.join(unused)}")
    stems = pairs[pairs["match"] == STEM][["kernel", "kernel_new"]].drop_duplicates()
    if len(stems):
        shown = ", ".join(f"{a} -> {b}" for a, b in stems.itertuples(index=False))
        notes.append(f"paired by the stem Julia keeps across builds (its numeric suffix changed): {shown}")
    loose = pairs[~pairs["match"].isin(["exact", STEM])]
    if len(loose):
        notes.append(
            f"{plural(len(loose), 'launch pair')} matched by name although shape or NVTX path "
            "changed"
        )
    return notes


def compare(
    base: Diagnosis,
    new: Diagnosis,
    mapping: dict[str, str] | None = None,
    auto_pair: bool = True,
    lines: bool = True,
) -> Comparison:
    """Match launches of ``base`` and ``new`` and compare them per kernel and per region; with
    ``lines``, the source lines that moved on paired kernels with findings (:mod:`ncu_roof.comparison.lines`).

    When no launch matched and each side runs exactly one kernel, the two are paired (with a
    note) unless ``auto_pair`` is False; otherwise, when nothing matched, the renames a --map
    file would need are suggested (see :func:`suggest_renames`)."""
    mapping = dict(mapping or {})
    pairs, auto_note = pair_only_kernels(
        base, new, mapping, match_launches(base.placed, new.placed, mapping), auto_pair
    )
    suggested: list[tuple[str, str]] = []
    basis, left_over = "", cast("dict[str, list[str]]", {})
    if pairs.empty:
        suggested, basis, left_over = suggest_renames(base.placed, new.placed)
    regions, unmatched_regions = _region_rows(base, new)
    moved, line_notes = line_moves(base, new, pairs) if lines and len(pairs) else ([], [])
    return Comparison(
        base,
        new,
        pairs,
        _kernel_rows(pairs, base, new),
        regions,
        _unmatched(base.placed, pairs["base_row"]),
        _unmatched(new.placed, pairs["new_row"]),
        unmatched_regions,
        mapping,
        _compare_notes(base, new, mapping, pairs, auto_note) + line_notes,
        suggested,
        basis,
        left_over,
        moved,
    )


def compare_paths(base: DiagnoseRequest, new: DiagnoseRequest, mapping: Path | None = None) -> Comparison:
    """Read the ``mapping`` file (if any), diagnose both sides and :func:`compare` them."""
    renames = read_mapping(mapping) if mapping is not None else None
    return compare(diagnose_request(base), diagnose_request(new), renames)


def kernel_label(row: pd.Series) -> str:
    """A compared kernel's name: ``old -> new`` where it was renamed."""
    return (
        row["kernel"]
        if row["kernel"] == row["kernel_new"]
        else f"{row['kernel']} -> {row['kernel_new']}"
    )
