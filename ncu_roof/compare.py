"""Before/after comparison of two diagnoses: which launches match, and how each kernel moved.

Launches are matched by kernel name (after the renames of a mapping file), launch shape
(grid and block dimensions) and NVTX path, in order within each kernel. Launches that do not
match on all three are matched again on name and NVTX path, then on name alone (the match
kind says which); the rest are listed as unmatched, never dropped. Matched launches are then
aggregated per kernel, and regions are compared by name. The JSON contract is schema
``ncu-roof/compare/1``.

Mapping file (TOML)::

    [rename]
    addConstDouble3 = "addConstDouble"   # base kernel name = new kernel name
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ncu_roof.diagnose import Diagnosis
from ncu_roof.errors import InputError
from ncu_roof.files import check_writable
from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si
from ncu_roof.jsonable import clean, json_num
from ncu_roof.report.summary import short_name
from ncu_roof.tomlfile import read_toml

if TYPE_CHECKING:
    import altair as alt

SCHEMA = "ncu-roof/compare/1"
LEVELS = ("dram", "l2", "l1", "shared")
SAME = 0.02  # relative changes below this are "unchanged"
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
    data = read_toml(path, "no such mapping file: {path}", "{path} is not valid TOML: {exc}")
    rename = data.get("rename")
    if not isinstance(rename, dict) or not rename:
        raise InputError(f'{path}: expected a [rename] table of old_name = "new_name" entries')
    bad = [k for k, v in rename.items() if not isinstance(v, str)]
    if bad:
        raise InputError(f"{path}: [rename] {bad[0]} must be a kernel name in quotes")
    return dict(rename)


# --- matching ---------------------------------------------------------------------------------
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
    out["bound"] = _dominant(launches, "bound")
    out["device"] = _dominant(launches, "device")
    out["precision"] = (
        _dominant(launches, "compute_precision") if "compute_precision" in launches else None
    )
    return out


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
        parts.append(f"{speed:.2f}x faster" if speed > 1 else f"{1 / speed:.2f}x slower")
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


def _plural(n: int, word: str) -> str:
    """``1 launch``, ``2 launches``, ``1 kernel``, ``3 kernels``."""
    tail = "" if n == 1 else ("es" if word.endswith(("ch", "sh", "s", "x")) else "s")
    return f"{n} {word}{tail}"


def _kernel_order(placed: pd.DataFrame) -> list[str]:
    """Kernel names in the order of their first launch."""
    return placed["kernel"].astype(str).drop_duplicates().tolist()


def _by_time(placed: pd.DataFrame) -> list[str]:
    """Kernel names by total time, longest first (ties: first launched first)."""
    order = _kernel_order(placed)
    times = placed.groupby(placed["kernel"].astype(str), sort=False)["time_s"].sum(min_count=1)
    return sorted(order, key=lambda k: (-(t if (t := float(times[k])) == t else -1.0), order.index(k)))


def suggest_renames(
    base: pd.DataFrame, new: pd.DataFrame
) -> tuple[list[tuple[str, str]], str, dict[str, list[str]]]:
    """(base, new) kernel pairs for a ``[rename]`` table when no launch matched, how they were
    paired, and the kernels left without a counterpart on each side.

    With as many kernels on each side they pair by launch order (first launch of each kernel);
    otherwise by time share, longest with longest."""
    b_order, n_order = _kernel_order(base), _kernel_order(new)
    if not b_order or not n_order:
        return [], "", {}
    if len(b_order) == len(n_order):
        return list(zip(b_order, n_order, strict=True)), "launch order", {}
    b_time, n_time = _by_time(base), _by_time(new)
    k = min(len(b_time), len(n_time))
    return (
        list(zip(b_time[:k], n_time[:k], strict=True)),
        "time share",
        {"base": b_time[k:], "new": n_time[k:]},
    )


def rename_lines(pairs: list[tuple[str, str]]) -> list[str]:
    """``[rename]`` and one ``"old" = "new"`` line per pair, ready for a --map file."""
    return ["[rename]", *(f"{json.dumps(a)} = {json.dumps(b)}" for a, b in pairs)]


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
    pairs = match_launches(base.placed, new.placed, mapping)
    auto_note = None
    b_order, n_order = _kernel_order(base.placed), _kernel_order(new.placed)
    if pairs.empty and auto_pair and len(b_order) == 1 and len(n_order) == 1:
        mapping[b_order[0]] = n_order[0]
        pairs = match_launches(base.placed, new.placed, mapping)
        auto_note = (
            f"paired the only kernel of each side: {b_order[0]} -> {n_order[0]} "
            f"(a --map file with [rename] {json.dumps(b_order[0])} = {json.dumps(n_order[0])} "
            "says so explicitly)"
        )
    suggested: list[tuple[str, str]] = []
    basis, left_over = "", cast("dict[str, list[str]]", {})
    if pairs.empty:
        suggested, basis, left_over = suggest_renames(base.placed, new.placed)
    kernels = _kernel_rows(pairs, base, new)
    regions, unmatched_regions = _region_rows(base, new)
    notes = []
    unused = sorted(
        set(mapping)
        - set(base.placed["kernel"].astype(str))
        - set(base.placed["kernel_demangled"].dropna().astype(str))
    )
    if unused:
        notes.append(f"mapping names no base kernel: {', '.join(unused)}")
    devices = _devices(base.placed), _devices(new.placed)
    if devices[0] and devices[1] and devices[0] != devices[1]:
        notes.insert(
            0,
            f"warning: different devices: BASE ran on {', '.join(devices[0])}, "
            f"NEW on {', '.join(devices[1])}",
        )
    loose = pairs[pairs["match"] != "exact"]
    if len(loose):
        notes.append(
            f"{_plural(len(loose), 'launch pair')} matched by name although shape or NVTX path "
            "changed"
        )
    if auto_note:
        notes.insert(0, auto_note)
    return Comparison(
        base,
        new,
        pairs,
        kernels,
        regions,
        _unmatched(base.placed, pairs["base_row"]),
        _unmatched(new.placed, pairs["new_row"]),
        unmatched_regions,
        mapping,
        notes,
        suggested,
        basis,
        left_over,
    )


# --- JSON -------------------------------------------------------------------------------------
def _side(row: pd.Series, when: str, kind: str = "kernel") -> dict[str, Any]:
    pct = "pct_of_ideal" if kind == "region" else "pct_of_roof"
    return {
        "launches": json_num(row[f"launches_{when}"]),
        "time_s": json_num(row[f"time_s_{when}"]),
        "flops": json_num(row[f"flops_{when}"]),
        "bytes": {lv: json_num(row[f"{lv}_bytes_{when}"]) for lv in LEVELS},
        "intensity": json_num(row[f"intensity_{when}"]),
        "flops_per_s": json_num(row[f"flops_per_s_{when}"]),
        pct: json_num(row[f"pct_of_roof_{when}"]),
        "bound": row[f"bound_{when}"],
        "device": row[f"device_{when}"],
        "precision": p if isinstance(p := row.get(f"precision_{when}"), str) else None,
    }


def _moves(row: pd.Series, kind: str = "kernel") -> dict[str, Any]:
    return {
        "speedup": json_num(row["speedup"]),
        "delta_s": json_num(row["delta_s"]),
        "time": row["time_move"],
        "intensity": row["intensity_move"],
        "performance": row["perf_move"],
        ("ideal" if kind == "region" else "roof"): row["roof_move"],
        "summary": row["direction"],
        "findings_appeared": list(row["findings_appeared"]),
        "findings_disappeared": list(row["findings_disappeared"]),
    }


def to_dict(c: Comparison) -> dict[str, Any]:
    """The JSON contract of a comparison (schema ``ncu-roof/compare/1``)."""
    kernels = [
        {
            "kernel": r["kernel"],
            "kernel_new": r["kernel_new"],
            "match": r["match"],
            "before": _side(r, "before"),
            "after": _side(r, "after"),
            **_moves(r),
        }
        for _, r in c.kernels.iterrows()
    ]
    regions = [
        {
            "region": r["region"],
            "before": {
                **_side(r, "before", "region"),
                "extra_bytes_factor": json_num(r["extra_bytes_factor_before"]),
            },
            "after": {
                **_side(r, "after", "region"),
                "extra_bytes_factor": json_num(r["extra_bytes_factor_after"]),
            },
            **_moves(r, "region"),
        }
        for _, r in c.regions.iterrows()
    ]
    return clean(
        {
            "schema": SCHEMA,
            "base": {
                "inputs": c.base.inputs,
                "launches": len(c.base.placed),
                "total_time_s": json_num(c.total_before_s),
            },
            "new": {
                "inputs": c.new.inputs,
                "launches": len(c.new.placed),
                "total_time_s": json_num(c.total_after_s),
            },
            "speedup": json_num(c.speedup),
            "comparable": c.comparable,
            "matched_time_share": {
                "base": json_num(c.matched_share[0]),
                "new": json_num(c.matched_share[1]),
            },
            "matched_launches": len(c.pairs),
            "renames": c.renames,
            "suggested_renames": dict(c.suggested_renames),
            "kernels": kernels,
            "regions": regions,
            "unmatched": {
                "base": c.unmatched_base.to_dict(orient="records"),
                "new": c.unmatched_new.to_dict(orient="records"),
                "regions_base": c.unmatched_regions.get("base", []),
                "regions_new": c.unmatched_regions.get("new", []),
            },
            "notes": c.notes,
        }
    )


def render_json(c: Comparison) -> str:
    return json.dumps(to_dict(c), indent=2, allow_nan=False) + "\n"


# --- text and markdown ------------------------------------------------------------------------
def _x(value: float) -> str:
    return "?" if value != value else f"{value:.2f}x"


def _arrow(before: Any, after: Any, fmt: Any) -> str:
    return f"{fmt(before)} -> {fmt(after)}"


def _intensity(v: float | None) -> str:
    return "?" if v is None or v != v else f"{v:.3g}"


def _kernel_label(row: pd.Series) -> str:
    return (
        row["kernel"]
        if row["kernel"] == row["kernel_new"]
        else f"{row['kernel']} -> {row['kernel_new']}"
    )


def _cells(row: pd.Series) -> list[str]:
    """Table cells of one compared kernel or region."""
    return [
        _arrow(row["time_s_before"], row["time_s_after"], fmt_seconds),
        _x(row["speedup"]),
        _flops_cell(row),
        _arrow(row["dram_bytes_before"], row["dram_bytes_after"], lambda v: fmt_si(v, "B", kilo="K")),
        _arrow(row["intensity_before"], row["intensity_after"], _intensity),
        _arrow(row["pct_of_roof_before"], row["pct_of_roof_after"], fmt_pct),
        _arrow(row["bound_before"] or "?", row["bound_after"] or "?", str),
    ]


HEADERS = ["time", "speedup", "FLOPs", "DRAM bytes", "FLOP/B", "% of roof", "bound"]
# a region's percent is its ideal time (algorithmic counts at the roofs) over its time
REGION_HEADERS = [h if h != "% of roof" else "% of ideal" for h in HEADERS]


def _headers(first: str) -> list[str]:
    return REGION_HEADERS if first == "region" else HEADERS


def _flops_cell(row: pd.Series) -> str:
    """``22.8 G -> 9.33 G fp64``: the FLOP counts and the precision that dominates them."""
    cell = _arrow(row["flops_before"], row["flops_after"], lambda v: fmt_si(v, "").strip())
    before, after = (
        p if isinstance(p, str) else None
        for p in (row.get("precision_before"), row.get("precision_after"))
    )
    if before and after and before != after:
        return f"{cell} {before} -> {after}"
    return f"{cell} {before or after}" if before or after else cell


def _headline(c: Comparison) -> str:
    if c.comparable:
        total = _x(c.speedup)
    else:
        share = min(s for s in c.matched_share if s == s)
        total = f"not comparable: only {fmt_pct(100 * share)} of the time matched"
    return (
        f"ncu-roof compare: {len(c.base.placed)} -> {_plural(len(c.new.placed), 'launch')}, "
        f"{len(c.pairs)} matched; "
        f"total GPU time {fmt_seconds(c.total_before_s)} -> {fmt_seconds(c.total_after_s)} "
        f"({total})"
    )


def _finding_changes(row: pd.Series) -> str:
    parts = []
    if row["findings_appeared"]:
        parts.append("+" + ", +".join(row["findings_appeared"]))
    if row["findings_disappeared"]:
        parts.append("-" + ", -".join(row["findings_disappeared"]))
    return " ".join(parts)


def _unmatched_lines(c: Comparison, bullet: str = "- ") -> list[str]:
    lines = []
    for side, frame in (("base", c.unmatched_base), ("new", c.unmatched_new)):
        for _, r in frame.iterrows():
            lines.append(
                f"{bullet}only in {side}: {r['kernel']} "
                f"({_plural(int(r['launches']), 'launch')}, {fmt_seconds(r['time_s'])})"
            )
    for side in ("base", "new"):
        lines += [
            f"{bullet}region only in {side}: {name}" for name in c.unmatched_regions.get(side, [])
        ]
    return lines


def _suggestion(c: Comparison) -> list[str]:
    """The ``[rename]`` table a --map file would need, with the left-over kernels as comments."""
    lines = rename_lines(c.suggested_renames)
    for side, word in (("base", "BASE"), ("new", "NEW")):
        left = c.left_over.get(side, [])
        if left:
            lines.append(
                f"# no counterpart for {_plural(len(left), 'kernel')} of {word} (fused or split?): "
                + ", ".join(left)
            )
    return lines


def _no_match_lines(c: Comparison) -> list[str]:
    if not c.suggested_renames:
        return ["No launches matched: check kernel names (use --map FILE.toml for renames)."]
    return [
        "No launches matched. If kernels were renamed, save these lines as a --map FILE.toml "
        f"(paired by {c.suggestion_basis}; check each pair):",
        "",
        *_suggestion(c),
    ]


def _text_table(rows: list[tuple[str, list[str], str]], first: str) -> list[str]:
    headers = _headers(first)
    widths = [max(len(first), *(len(short_name(r[0])) for r in rows))]
    widths += [max(len(h), *(len(r[1][i]) for r in rows)) for i, h in enumerate(headers)]
    header = "  ".join(h.ljust(w) for h, w in zip([first, *headers], widths, strict=True))
    lines = [header, "-" * len(header)]
    for name, cells, tail in rows:
        lines.append(
            "  ".join(v.ljust(w) for v, w in zip([short_name(name), *cells], widths, strict=True))
        )
        lines.append(f"    {tail}")
    return lines


def _region_table_rows(c: Comparison) -> list[tuple[str, list[str], str]]:
    """(region, cells, direction and extra-bytes move) per region, for the text and Markdown tables."""
    return [
        (
            r["region"],
            _cells(r),
            r["direction"] + f"; extra bytes {_x(r['extra_bytes_factor_before'])} -> "
            f"{_x(r['extra_bytes_factor_after'])}",
        )
        for _, r in c.regions.iterrows()
    ]


def render_text(c: Comparison) -> str:
    """The terminal comparison: per kernel and region before -> after, moves, unmatched."""
    lines = [_headline(c), ""]
    if not c.kernels.empty:
        rows = [
            (
                _kernel_label(r),
                _cells(r),
                r["direction"]
                + (f"; findings {_finding_changes(r)}" if _finding_changes(r) else ""),
            )
            for _, r in c.kernels.iterrows()
        ]
        lines += _text_table(rows, "kernel")
    else:
        lines += _no_match_lines(c)
    if not c.regions.empty:
        lines += ["", *_text_table(_region_table_rows(c), "region")]
    unmatched = _unmatched_lines(c)
    if unmatched:
        lines += ["", "Unmatched:", *unmatched]
    if c.notes:
        lines += ["", "Notes:", *(f"- {n}" for n in c.notes)]
    return "\n".join(lines) + "\n"


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(first: str, rows: list[tuple[str, list[str], str]]) -> list[str]:
    headers = _headers(first)
    lines = ["| " + " | ".join([first, *headers, "move"]) + " |", "|" + "---|" * (len(headers) + 2)]
    lines += [
        "| " + " | ".join(_md(v) for v in (f"`{name}`", *cells, tail)) + " |"
        for name, cells, tail in rows
    ]
    return lines


def render_markdown(c: Comparison) -> str:
    """The comparison as markdown tables."""
    lines = ["# ncu-roof compare", "", _headline(c).removeprefix("ncu-roof compare: "), ""]
    if not c.kernels.empty:
        rows = [
            (
                _kernel_label(r),
                _cells(r),
                " ".join(filter(None, (r["direction"], _finding_changes(r)))),
            )
            for _, r in c.kernels.iterrows()
        ]
        lines += ["## Kernels", "", *_md_table("kernel", rows), ""]
    elif c.suggested_renames:
        lines += [
            "## Kernels",
            "",
            f"No launches matched. If kernels were renamed, save this as a `--map` file "
            f"(paired by {c.suggestion_basis}; check each pair):",
            "",
            "```toml",
            *_suggestion(c),
            "```",
            "",
        ]
    else:
        lines += ["No launches matched: check kernel names (use `--map FILE.toml` for renames).", ""]
    if not c.regions.empty:
        lines += ["## Regions", "", *_md_table("region", _region_table_rows(c)), ""]
    unmatched = _unmatched_lines(c)
    if unmatched:
        lines += ["## Unmatched", "", *unmatched, ""]
    if c.notes:
        lines += ["## Notes", "", *(f"- {n}" for n in c.notes), ""]
    return "\n".join(lines)


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}


# --- chart ------------------------------------------------------------------------------------
WIDTH, HEIGHT = 640, 420
ARROW_COLS = ["intensity_before", "flops_per_s_before", "intensity_after", "flops_per_s_after"]


def _arrow_data(c: Comparison) -> pd.DataFrame:
    """One arrow per matched kernel and per region present on both sides, where intensity
    (FLOPs / DRAM bytes) and FLOP/s (FLOPs / time) are known and positive before and after."""
    rows: list[dict[str, Any]] = []
    for _, r in c.kernels.iterrows():
        rows.append(
            {
                "kind": "kernel",
                "kernel": r["kernel"],
                "region": None,
                "label": _kernel_label(r),
                "speedup": r["speedup"],
                "direction": r["direction"],
                **{col: r[col] for col in ARROW_COLS},
            }
        )
    for _, r in c.regions.iterrows():
        rows.append(
            {
                "kind": "region",
                "kernel": None,
                "region": r["region"],
                "label": f"region {r['region']}",
                "speedup": r["speedup"],
                "direction": r["direction"],
                **{
                    f"intensity_{w}": _ratio(r[f"flops_{w}"], r[f"dram_bytes_{w}"])
                    for w in ("before", "after")
                },
                **{
                    f"flops_per_s_{w}": _ratio(r[f"flops_{w}"], r[f"time_s_{w}"])
                    for w in ("before", "after")
                },
            }
        )
    data = pd.DataFrame(
        rows, columns=["kind", "kernel", "region", "label", "speedup", "direction", *ARROW_COLS]
    )
    if data.empty:
        return data
    values = data[ARROW_COLS].apply(pd.to_numeric, errors="coerce").astype(float)
    ok = (np.isfinite(values) & (values > 0)).all(axis=1)
    out = data.loc[ok].copy()
    out[ARROW_COLS] = values.loc[ok]
    return out.reset_index(drop=True)


def _domain(values: list[float]) -> tuple[float, float]:
    logs = np.log10([v for v in values if v == v and v > 0])
    return float(10 ** np.floor(logs.min() - 0.3)), float(10 ** np.ceil(logs.max() + 0.3))


def side_roof(d: Diagnosis) -> tuple[float, float, str, str] | None:
    """(peak FLOP/s, DRAM bytes/s, compute label, DRAM label) of one side's roofline: the
    compute roof of the precision that dominates its time, each label with value and source."""
    from ncu_roof.charts import compute_roofs, memory_roofs

    if d.placed.empty:
        return None
    dram = [r for r in memory_roofs(d.placed) if r.name == "DRAM"]
    flat = compute_roofs(d.placed)
    if not dram or not flat:
        return None
    precision = aggregate(d.placed)["precision"]
    pick = next(
        (r for r in flat if precision and r.name.lower().startswith(str(precision).lower())),
        flat[0],
    )
    return pick.value, dram[0].value, pick.label, dram[0].label


def _roofs(c: Comparison) -> list[tuple[str, float, float, str, str]]:
    """(who, peak, DRAM bandwidth, compute label, DRAM label); one entry when both sides agree."""
    out: list[tuple[str, float, float, str, str]] = []
    for when, d in (("before", c.base), ("after", c.new)):
        roof = side_roof(d)
        if roof is None:
            continue
        device = aggregate(d.placed)["device"]
        who = f"{when} ({short_name(device)})" if device else when
        if out and out[0][1:] == roof:
            out[0] = (f"before and after ({short_name(device)})" if device else "both", *roof)
            continue
        out.append((who, *roof))
    return out


def _roof_lines(c: Comparison, xdom: tuple[float, float]) -> pd.DataFrame:
    rows = []
    xs = np.logspace(np.log10(xdom[0]), np.log10(xdom[1]), 64)
    for who, peak, beta, flat, dram in _roofs(c):
        label = f"{who}: {flat}; {dram}"
        rows += [
            {"roof": label, "intensity": float(x), "flops_per_s": min(peak, beta * float(x))}
            for x in xs
        ]
    return pd.DataFrame(rows, columns=["roof", "intensity", "flops_per_s"])


def _roof_labels(
    c: Comparison, xdom: tuple[float, float], ydom: tuple[float, float]
) -> pd.DataFrame:
    """Text on each roof: the compute roof at its right end, the DRAM roof along its slope."""
    sx = WIDTH / (math.log10(xdom[1]) - math.log10(xdom[0]))
    sy = HEIGHT / (math.log10(ydom[1]) - math.log10(ydom[0]))
    slope = -math.degrees(math.atan2(sy, sx))  # text angle is clockwise; the slope climbs
    rows = []
    roofs = _roofs(c)
    slopes = {(beta, dram): who for who, _, beta, _, dram in roofs}  # the same slope once
    for who, peak, _, flat, _ in roofs:
        prefix = f"{who}: " if len(roofs) > 1 else ""
        rows.append(
            {"x": xdom[1], "y": peak, "text": prefix + flat, "angle": 0.0, "align": "right"}
        )
    for (beta, dram), who in slopes.items():
        prefix = f"{who}: " if len(slopes) > 1 else ""
        lo = max(xdom[0], ydom[0] / beta)
        hi = min(xdom[1], min(p for _, p, b, _, _ in roofs if b == beta) / beta)
        if hi > lo:
            x = lo * (hi / lo) ** 0.25  # a quarter up the slope, clear of the ridge
            rows.append(
                {"x": x, "y": beta * x, "text": prefix + dram, "angle": slope, "align": "center"}
            )
    return pd.DataFrame(rows, columns=["x", "y", "text", "angle", "align"])


def _angles(
    data: pd.DataFrame, xdom: tuple[float, float], ydom: tuple[float, float]
) -> list[float]:
    """Screen angle (degrees clockwise from up) of each arrow, for a rotated triangle head."""
    sx = WIDTH / (math.log10(xdom[1]) - math.log10(xdom[0]))
    sy = HEIGHT / (math.log10(ydom[1]) - math.log10(ydom[0]))
    dx = sx * (
        np.log10(data["intensity_after"].astype(float))
        - np.log10(data["intensity_before"].astype(float))
    )
    dy = sy * (
        np.log10(data["flops_per_s_after"].astype(float))
        - np.log10(data["flops_per_s_before"].astype(float))
    )
    return [float(math.degrees(math.atan2(a, b))) for a, b in zip(dx, dy, strict=True)]


def compare_chart(c: Comparison) -> alt.LayerChart:
    """Each matched kernel's and each region's move on the log-log roofline: an arrow from
    before to after, over the labelled roofs of both sides. Raises InputError (before anything
    is written) when there is nothing to draw."""
    import altair as alt

    from ncu_roof.charts import _decades

    data = _arrow_data(c)
    if data.empty:
        raise InputError(
            "no matched kernel or region has FLOPs, DRAM bytes and time on both sides: "
            "nothing to draw"
        )
    ridges = [peak / beta for _, peak, beta, _, _ in _roofs(c)]
    xdom = _domain([*data["intensity_before"], *data["intensity_after"], *ridges])
    roofs = _roof_lines(c, xdom)
    ydom = _domain(
        [
            *data["flops_per_s_before"],
            *data["flops_per_s_after"],
            *(roofs["flops_per_s"] if not roofs.empty else []),
        ]
    )
    data["angle"] = _angles(data, xdom, ydom)
    xscale = alt.Scale(type="log", domain=list(xdom))
    yscale = alt.Scale(type="log", domain=list(ydom))
    x = alt.X(
        "intensity_before:Q",
        scale=xscale,
        title="arithmetic intensity (FLOP / DRAM byte)",
        axis=alt.Axis(values=_decades(*xdom), format="~g", grid=True),
    )
    y = alt.Y(
        "flops_per_s_before:Q",
        scale=yscale,
        title="FLOP/s",
        axis=alt.Axis(values=_decades(*ydom), format="~s", grid=True),
    )
    base = alt.Chart(data)
    tooltip = ["kind:N", "label:N", alt.Tooltip("speedup:Q", format=".2f"), "direction:N"]
    color = alt.Color("label:N", title="kernel or region", legend=alt.Legend(labelLimit=400))
    dash = alt.StrokeDash(
        "kind:N",
        title="",
        scale=alt.Scale(domain=["kernel", "region"], range=[[1, 0], [6, 3]]),
    )
    layers: list[Any] = [
        base.mark_rule(strokeWidth=2).encode(
            x=x,
            y=y,
            x2="intensity_after:Q",
            y2="flops_per_s_after:Q",
            color=color,
            strokeDash=dash,
            tooltip=tooltip,
        ),
        base.mark_point(filled=False, size=60).encode(x=x, y=y, color="label:N", tooltip=tooltip),
        base.mark_point(shape="triangle-up", filled=True, size=140, opacity=1).encode(
            x=alt.X("intensity_after:Q", scale=xscale),
            y=alt.Y("flops_per_s_after:Q", scale=yscale),
            angle=alt.Angle("angle:Q", scale=None),
            color="label:N",
            tooltip=tooltip,
        ),
    ]
    if not roofs.empty:
        labels = _roof_labels(c, xdom, ydom)
        layers[:0] = [
            alt.Chart(roofs)
            .mark_line(color="gray", strokeDash=[4, 3])
            .encode(
                x=alt.X("intensity:Q", scale=xscale),
                y=alt.Y("flops_per_s:Q", scale=yscale),
                detail="roof:N",
                tooltip=["roof:N"],
            ),
            *(
                alt.Chart(labels[labels["align"] == align])
                .mark_text(align=align, baseline="bottom", dy=-3, fontSize=10, color="dimgray")
                .encode(
                    x=alt.X("x:Q", scale=xscale),
                    y=alt.Y("y:Q", scale=yscale),
                    text="text:N",
                    angle=alt.Angle("angle:Q", scale=None),
                )
                for align in ("right", "center")
                if (labels["align"] == align).any()
            ),
        ]
    # altair types layer(...).properties(...) as LayerChart | FacetChart; a layer stays a layer here
    return cast(
        "alt.LayerChart",
        alt.layer(*layers).properties(
            width=WIDTH,
            height=HEIGHT,
            title="ncu-roof compare: each kernel's and region's move (o before, > after)",
        ),
    )


def check_chart_path(path: str | Path, force: bool = False) -> Path:
    """Raise the one-line InputError that saving a chart at ``path`` would raise, before any work:
    a suffix other than .html/.json/.png/.svg, an existing file without ``force``, no folder, or
    .png/.svg without vl-convert-python."""
    path = Path(path)
    check_writable(path, force, (".html", ".json", ".png", ".svg"), "chart", "--chart")
    if path.suffix in (".png", ".svg"):
        try:
            import vl_convert  # noqa: F401
        except ImportError:
            raise InputError(
                f"saving {path.suffix} needs vl-convert-python: pip install vl-convert-python, "
                "or save .html"
            ) from None
    return path


def save_compare_chart(
    c: Comparison, path: str | Path, force: bool = False, chart: alt.LayerChart | None = None
) -> None:
    """Save :func:`compare_chart` (or ``chart``, built already) as .html, .json, .png or .svg;
    never overwrite unless ``force``."""
    path = check_chart_path(path, force)
    (chart if chart is not None else compare_chart(c)).save(str(path))
