"""Before/after comparison of two diagnoses: which launches match, and how each kernel moved.

Launches are matched by kernel name (after the renames of a mapping file), launch shape
(grid and block dimensions) and NVTX path, in order within each kernel. Launches that do not
match on all three are matched again on name and NVTX path, then on name alone (the match
kind says which); the rest are listed as unmatched, never dropped. Matched launches are then
aggregated per kernel, and regions are compared by name. The JSON contract is schema
``ncu-roof/compare/1``.

This module matches and aggregates; :mod:`ncu_roof.render.compare` renders a comparison (text,
markdown, JSON) and :mod:`ncu_roof.render.charts.compare` draws it.

Mapping file (TOML)::

    [rename]
    addConstDouble3 = "addConstDouble"   # base kernel name = new kernel name
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from ncu_roof import schema
from ncu_roof.diagnose import Diagnosis, diagnose_paths
from ncu_roof.errors import InputError
from ncu_roof.fmt import fmt_pct, plural
from ncu_roof.jsonable import json_num
from ncu_roof.tomlfile import read_toml

SCHEMA = "ncu-roof/compare/1"
LEVELS = ("dram", "l2", "l1", "shared")
SAME = 0.02  # relative changes below this are "unchanged"
NOISE_MIN_LAUNCHES = 3  # launches per side needed to measure the run-to-run spread
NOISE_UNKNOWN = 0.15  # without that spread, a smaller change may be noise (short kernels vary so)
COMPARABLE = 0.5  # the total speedup needs matched launches to hold this share of each side's time
# match passes: the key columns, and the match kind they give
PASSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("_name", "_nvtx", "_grid", "_block"), "exact"),
    (("_name", "_nvtx"), "shape changed"),
    (("_name",), "nvtx changed"),
)


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
            _ratio(_matched_time(self.base.placed, self.pairs["base_row"]), self.total_before_s),
            _ratio(_matched_time(self.new.placed, self.pairs["new_row"]), self.total_after_s),
        )

    @property
    def comparable(self) -> bool:
        """False when matched launches hold less than half of either side's known time."""
        return not any(share == share and share < COMPARABLE for share in self.matched_share)

    @property
    def speedup(self) -> float:
        """Total before / after time; NaN when the runs are not comparable."""
        return _ratio(self.total_before_s, self.total_after_s) if self.comparable else math.nan


def _matched_time(placed: pd.DataFrame, rows: pd.Series) -> float:
    """Known GPU time of the matched launches (0 when none matched)."""
    return float(placed["time_s"].iloc[rows.to_numpy(dtype=int)].sum()) if len(rows) else 0.0


# --- mapping ----------------------------------------------------------------------------------
def read_mapping(path: str | Path) -> dict[str, str]:
    """Kernel renames from a TOML file's ``[rename]`` table (old name = "new name")."""
    path = Path(path)
    data = read_toml(path, "no such --map file: {path}", "{path} is not valid TOML ({exc})")
    rename = data.get("rename")
    if not isinstance(rename, dict) or not rename:
        raise InputError(f'{path}: expected a [rename] table of old_name = "new_name" entries')
    schema.check_keys(data, ("rename",), "the --map file", path)
    bad = [k for k, v in rename.items() if not isinstance(v, str) or not v.strip()]
    if bad:
        raise InputError(f"{path}: [rename] {bad[0]} must be a kernel name in quotes")
    return dict(rename)


def _keyed(placed: pd.DataFrame, mapping: dict[str, str]) -> pd.DataFrame:
    """The launches with the key columns used for matching (names renamed on the base side)."""
    kernel = placed["kernel"].astype(str)
    demangled = placed["kernel_demangled"].fillna(placed["kernel"]).astype(str)
    name = [mapping.get(k, mapping.get(d, k)) for k, d in zip(kernel, demangled, strict=True)]
    return pd.DataFrame(
        {
            "_row": np.arange(len(placed)),
            "_name": name,
            "_nvtx": placed["nvtx"].fillna("").astype(str).to_numpy(),
            "_grid": placed["grid_dim"].fillna("").astype(str).to_numpy(),
            "_block": placed["block_dim"].fillna("").astype(str).to_numpy(),
        }
    )


def match_launches(
    base: pd.DataFrame, new: pd.DataFrame, mapping: dict[str, str] | None = None
) -> pd.DataFrame:
    """Pairs of launch rows (positions in each placed table), with the kind of match."""
    left, right = _keyed(base, mapping or {}), _keyed(new, {})
    found = []
    for key, kind in PASSES:
        cols = list(key)
        lft = left.assign(_seq=left.groupby(cols, sort=False).cumcount())
        rgt = right.assign(_seq=right.groupby(cols, sort=False).cumcount())
        merged = lft.merge(rgt[cols + ["_seq", "_row"]], on=cols + ["_seq"], suffixes=("_b", "_n"))
        if merged.empty:
            continue
        found.append(
            pd.DataFrame({"base_row": merged["_row_b"], "new_row": merged["_row_n"], "match": kind})
        )
        left = left[~left["_row"].isin(merged["_row_b"])]
        right = right[~right["_row"].isin(merged["_row_n"])]
    pairs = (
        pd.concat(found, ignore_index=True)
        if found
        else pd.DataFrame(
            {
                "base_row": pd.Series(dtype="int64"),
                "new_row": pd.Series(dtype="int64"),
                "match": pd.Series(dtype=str),
            }
        )
    )
    pairs["kernel"] = base["kernel"].astype(str).to_numpy()[pairs["base_row"].to_numpy(dtype=int)]
    pairs["kernel_new"] = new["kernel"].astype(str).to_numpy()[pairs["new_row"].to_numpy(dtype=int)]
    return pairs.sort_values("base_row").reset_index(drop=True)


# --- aggregation ------------------------------------------------------------------------------
def _sum(series: pd.Series) -> float:
    return float(series.sum(min_count=1)) if series.notna().any() else math.nan


def _weighted(launches: pd.DataFrame, column: str) -> float:
    values, weights = launches[column], launches["time_s"]
    ok = values.notna() & weights.notna() & (weights > 0)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else math.nan


def _ratio(a: float, b: float) -> float:
    return a / b if a == a and b == b and b > 0 else math.nan


def _dominant(launches: pd.DataFrame, column: str) -> str | None:
    by = launches.groupby(column, dropna=True)["time_s"].sum()
    if by.empty:
        return None
    return str(by.idxmax()) if by.notna().any() and by.max() > 0 else str(by.index[0])


def aggregate(launches: pd.DataFrame) -> dict[str, Any]:
    """Totals of a set of launches: time, FLOPs, bytes per level, intensity, % of roof, bound."""
    time_s, flops = _sum(launches["time_s"]), _sum(launches["flops"])
    out: dict[str, Any] = {"launches": len(launches), "time_s": time_s, "flops": flops}
    for level in LEVELS:
        out[f"{level}_bytes"] = _sum(launches[f"{level}_bytes"])
    out["intensity"] = _ratio(flops, out["dram_bytes"])
    out["flops_per_s"] = _ratio(flops, time_s)
    out["dram_bytes_per_s"] = _ratio(out["dram_bytes"], time_s)
    out["pct_of_roof"] = _weighted(launches, "pct_of_roof")
    out["peak_flops_per_s"] = _weighted(launches, "peak_flops_per_s")
    out["dram_roof_bytes_per_s"] = _weighted(launches, "dram_roof_bytes_per_s")
    out["time_cv"] = _time_cv(launches["time_s"])
    out["bound"] = _dominant(launches, "bound")
    out["device"] = _dominant(launches, "device")
    out["precision"] = (
        _dominant(launches, "compute_precision") if "compute_precision" in launches else None
    )
    return out


def _time_cv(times: pd.Series) -> float:
    """Spread of the launch times (std / mean), NaN with fewer than ``NOISE_MIN_LAUNCHES`` known."""
    known = times.dropna()
    if len(known) < NOISE_MIN_LAUNCHES or not known.mean() > 0:
        return float("nan")
    return float(known.std(ddof=1) / known.mean())


def time_noise(b: dict[str, Any], n: dict[str, Any]) -> float:
    """Run-to-run noise of a speedup, as a relative change: twice the standard error of the
    ratio of mean times, from each side's launch-to-launch spread (NaN with too few launches)."""
    cv_b, cv_n = b.get("time_cv", float("nan")), n.get("time_cv", float("nan"))
    if not (cv_b == cv_b and cv_n == cv_n):
        return float("nan")
    return 2.0 * math.sqrt(cv_b**2 / b["launches"] + cv_n**2 / n["launches"])


def _rules_for(findings: list[Any], names: set[str], region: str | None = None) -> set[str]:
    if region is not None:
        return {f.rule for f in findings if f.region == region}
    return {f.rule for f in findings if names & set(f.kernels)}


def _names(launches: pd.DataFrame) -> set[str]:
    return set(launches["kernel"].astype(str)) | set(
        launches["kernel_demangled"].dropna().astype(str)
    )


def _move(before: float, after: float, up: str, down: str) -> str | None:
    if not (before == before and after == after) or before <= 0 or after <= 0:
        return None
    change = after / before - 1.0
    return "same" if abs(change) < SAME else (up if change > 0 else down)


def _pct_move(before: float, after: float) -> str | None:
    if not (before == before and after == after):
        return None
    return "same" if abs(after - before) < 1.0 else ("closer" if after > before else "further")


def _compare_row(b: dict[str, Any], n: dict[str, Any], kind: str = "kernel") -> dict[str, Any]:
    """Before/after columns of one kernel or region, and its move on the roofline.

    ``pct_of_roof_*`` holds a kernel's % of roof; for a region it is its % of ideal (ideal time /
    time), named so in every output."""
    row: dict[str, Any] = {}
    for key in (
        "launches",
        "time_s",
        "flops",
        *(f"{lv}_bytes" for lv in LEVELS),
        "intensity",
        "flops_per_s",
        "pct_of_roof",
        "bound",
        "device",
        "precision",
        "peak_flops_per_s",
        "dram_roof_bytes_per_s",
    ):
        row[f"{key}_before"], row[f"{key}_after"] = b.get(key), n.get(key)
    row["speedup"] = _ratio(b["time_s"], n["time_s"])
    row["time_noise"] = time_noise(b, n)
    row["delta_s"] = n["time_s"] - b["time_s"]
    row["time_move"] = _move(b["time_s"], n["time_s"], "slower", "faster")
    row["intensity_move"] = _move(b["intensity"], n["intensity"], "right", "left")
    row["perf_move"] = _move(b["flops_per_s"], n["flops_per_s"], "up", "down")
    row["roof_move"] = _pct_move(b["pct_of_roof"], n["pct_of_roof"])
    row["direction"] = describe_move(row, kind)
    return row


def describe_move(row: dict[str, Any] | pd.Series, kind: str = "kernel") -> str:
    """One phrase: faster/slower, the move on the roofline and toward or away from the roof
    (for a region: toward or away from its ideal time)."""
    speed = row["speedup"]
    parts = []
    if row["time_move"] == "same":
        parts.append("time unchanged")
    elif row["time_move"] is not None:
        parts.append((f"{speed:.2f}x faster" if speed > 1 else f"{1 / speed:.2f}x slower") + _noise_note(row))
    flops = _flops_change(row)
    if flops:
        parts.append(flops)
    arrow = [m for m in (row["perf_move"], row["intensity_move"]) if m not in (None, "same")]
    if arrow:
        parts.append("moved " + "-".join(arrow) + " on the roofline")
    changed = _bytes_changes(row)
    if changed:
        parts.append("bytes " + ", ".join(changed))
    if row["roof_move"] in ("closer", "further"):
        where = "closer to" if row["roof_move"] == "closer" else "further from"
        pcts = f"{fmt_pct(row['pct_of_roof_before'])} -> {fmt_pct(row['pct_of_roof_after'])}"
        if kind == "region":
            parts.append(f"{where} its ideal time ({pcts} of ideal)")
        else:
            parts.append(f"{where} the roof ({pcts})")
    if row["bound_before"] != row["bound_after"] and row["bound_before"] and row["bound_after"]:
        parts.append(f"{row['bound_before']} -> {row['bound_after']} bound")
    return "; ".join(parts) or "no comparable numbers"


def _noise_note(row: dict[str, Any] | pd.Series) -> str:
    """What the speedup rests on: within the measured run-to-run noise, or too few launches to
    tell a small change from noise (changes above ``NOISE_UNKNOWN`` are left unqualified)."""
    change = abs(row["speedup"] - 1.0)
    noise = row.get("time_noise", float("nan"))
    launches = f"{row['launches_before']} and {row['launches_after']} launches"
    if noise == noise:
        if change <= noise:
            return f" (within run-to-run noise: +/-{noise:.0%} from {launches})"
        return ""
    if change < NOISE_UNKNOWN:
        return f" (from {launches}: too few to tell from run-to-run noise)"
    return ""


def _change(before: Any, after: Any) -> float | None:
    """Relative change after / before - 1 of two known, positive-before numbers, else None."""
    if before is None or after is None or before != before or after != after or before <= 0:
        return None
    return float(after / before - 1.0)


def _flops_change(row: dict[str, Any] | pd.Series) -> str | None:
    """``FLOPs -59%`` when the FLOP count changed by more than 5%."""
    change = _change(row.get("flops_before"), row.get("flops_after"))
    return f"FLOPs {100 * change:+.0f}%" if change is not None and abs(change) > 0.05 else None


def _bytes_changes(row: dict[str, Any] | pd.Series) -> list[str]:
    """Levels whose bytes changed by more than 5%, as "L1 -15%"."""
    out = []
    for level in LEVELS:
        b, a = row[f"{level}_bytes_before"], row[f"{level}_bytes_after"]
        if (
            b == b
            and a == a
            and b is not None
            and a is not None
            and b > 0
            and abs(a / b - 1) > 0.05
        ):
            out.append(
                f"{level.upper() if level != 'shared' else 'shared'} {100 * (a / b - 1):+.0f}%"
            )
    return out


def _kernel_rows(cmp_pairs: pd.DataFrame, base: Diagnosis, new: Diagnosis) -> pd.DataFrame:
    rows = []
    for (kernel, kernel_new), group in cmp_pairs.groupby(["kernel", "kernel_new"], sort=False):
        b = base.placed.iloc[group["base_row"].to_numpy()]
        n = new.placed.iloc[group["new_row"].to_numpy()]
        row: dict[str, Any] = {
            "kernel": kernel,
            "kernel_new": kernel_new,
            "match": ", ".join(sorted(group["match"].unique(), key=[k for _, k in PASSES].index)),
        }
        row.update(_compare_row(aggregate(b), aggregate(n)))
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


def _region_aggregate(region: pd.Series) -> dict[str, Any]:
    values = {
        k: json_num(region.get(k))
        for k in ("launches", "time_s", "flops", "dram_bytes", "l2_bytes", "l1_bytes")
    }
    out: dict[str, Any] = {k: (math.nan if v is None else v) for k, v in values.items()}
    out["shared_bytes"] = math.nan
    out["intensity"] = json_num(region.get("achieved_intensity")) or _ratio(
        out["flops"], out["dram_bytes"]
    )
    out["flops_per_s"] = _ratio(out["flops"], out["time_s"])
    ideal = json_num(region.get("ideal_time_s"))
    out["pct_of_roof"] = (
        100.0 * ideal / out["time_s"] if ideal is not None and out["time_s"] > 0 else math.nan
    )
    out["peak_flops_per_s"] = json_num(region.get("peak_flops_per_s"))
    out["dram_roof_bytes_per_s"] = json_num(region.get("dram_roof_bytes_per_s"))
    out["extra_bytes_factor"] = json_num(region.get("extra_bytes_factor"))
    out["bound"], out["device"], out["precision"] = None, None, None
    return out


def _live_regions(d: Diagnosis) -> dict[str, pd.Series]:
    if d.regions.empty or "name" not in d.regions:
        return {}
    return {str(r["name"]): r for _, r in d.regions.iterrows() if (r.get("launches") or 0) > 0}


def _region_rows(base: Diagnosis, new: Diagnosis) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    b_regions, n_regions = _live_regions(base), _live_regions(new)
    rows = []
    for name in [n for n in b_regions if n in n_regions]:
        b, n = _region_aggregate(b_regions[name]), _region_aggregate(n_regions[name])
        row = {
            "region": name,
            **_compare_row(b, n, "region"),
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



def _kernel_order(placed: pd.DataFrame) -> list[str]:
    """Kernel names in the order of their first launch."""
    return placed["kernel"].astype(str).drop_duplicates().tolist()


def _by_time(placed: pd.DataFrame) -> list[str]:
    """Kernel names by total time, longest first (ties: first launched first)."""
    order = _kernel_order(placed)
    times = placed.groupby(placed["kernel"].astype(str), sort=False)["time_s"].sum(min_count=1)
    return sorted(order, key=lambda k: (-(t if (t := float(times[k])) == t else -1.0), order.index(k)))


FUSION = "fusion or split"


def suggest_renames(
    base: pd.DataFrame, new: pd.DataFrame
) -> tuple[list[tuple[str, str]], str, dict[str, list[str]]]:
    """(base, new) kernel pairs for a ``[rename]`` table when no launch matched, how they were
    paired, and the kernels left without a counterpart on each side.

    With as many kernels on each side they pair by launch order (first launch of each kernel).
    With different counts the runs were fused or split, not renamed: no pairs are guessed (the
    basis says ``fusion or split``) and every kernel is left over, longest first."""
    b_order, n_order = _kernel_order(base), _kernel_order(new)
    if not b_order or not n_order:
        return [], "", {}
    if len(b_order) == len(n_order):
        return list(zip(b_order, n_order, strict=True)), "launch order", {}
    return [], FUSION, {"base": _by_time(base), "new": _by_time(new)}


def rename_lines(pairs: list[tuple[str, str]]) -> list[str]:
    """``[rename]`` and one ``"old" = "new"`` line per pair, ready for a --map file."""
    return ["[rename]", *(f"{json.dumps(a)} = {json.dumps(b)}" for a, b in pairs)]


def _auto_pair(
    base: Diagnosis, new: Diagnosis, mapping: dict[str, str], pairs: pd.DataFrame, auto_pair: bool
) -> tuple[pd.DataFrame, str | None]:
    """When nothing matched and each side runs one kernel, pair the two (adding the rename to
    ``mapping``): the new pairs and a note that says so; else ``pairs`` unchanged and no note."""
    b_order, n_order = _kernel_order(base.placed), _kernel_order(new.placed)
    if not (pairs.empty and auto_pair and len(b_order) == 1 and len(n_order) == 1):
        return pairs, None
    mapping[b_order[0]] = n_order[0]
    note = (
        f"paired the only kernel of each side: {b_order[0]} -> {n_order[0]} "
        f"(a --map file with [rename] {json.dumps(b_order[0])} = {json.dumps(n_order[0])} "
        "says so explicitly)"
    )
    return match_launches(base.placed, new.placed, mapping), note


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
    loose = pairs[pairs["match"] != "exact"]
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
) -> Comparison:
    """Match launches of ``base`` and ``new`` and compare them per kernel and per region.

    When no launch matched and each side runs exactly one kernel, the two are paired (with a
    note) unless ``auto_pair`` is False; otherwise, when nothing matched, the renames a --map
    file would need are suggested (see :func:`suggest_renames`)."""
    mapping = dict(mapping or {})
    pairs, auto_note = _auto_pair(
        base, new, mapping, match_launches(base.placed, new.placed, mapping), auto_pair
    )
    suggested: list[tuple[str, str]] = []
    basis, left_over = "", cast("dict[str, list[str]]", {})
    if pairs.empty:
        suggested, basis, left_over = suggest_renames(base.placed, new.placed)
    regions, unmatched_regions = _region_rows(base, new)
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
        _compare_notes(base, new, mapping, pairs, auto_note),
        suggested,
        basis,
        left_over,
    )


def compare_paths(
    base: str | Path,
    new: str | Path,
    mapping: Path | None = None,
    algorithmic: Path | None = None,
    ceilings: Path | None = None,
    device: str | None = None,
) -> Comparison:
    """Read the ``mapping`` file (if any), diagnose both sides and :func:`compare` them."""
    renames = read_mapping(mapping) if mapping is not None else None
    return compare(
        diagnose_paths(base, algorithmic, ceilings, device=device),
        diagnose_paths(new, algorithmic, ceilings, device=device),
        renames,
    )


def kernel_label(row: pd.Series) -> str:
    """A compared kernel's name: ``old -> new`` where it was renamed."""
    return (
        row["kernel"]
        if row["kernel"] == row["kernel_new"]
        else f"{row['kernel']} -> {row['kernel_new']}"
    )
