"""Algorithmic counts (what the work must do) and regions (the launches that did it).

Counts come from ``ncu_roof.region`` NVTX ranges (the counts ride in the range name) or from a
sidecar TOML file::

    [[region]]
    name = "layernorm"      # a name for the output
    nvtx = "layernorm"      # launches inside this NVTX range (a level of the push/pop stack), or
    kernels = "regex"       # launches whose kernel name matches (RE2 search: linear time)
    flops = 536870912       # per occurrence of the region
    bytes = 536870912       # compulsory bytes per occurrence
    occurrences = 1         # optional; default: launches of the region's first kernel

Counts are per occurrence of the region. The number of occurrences is taken from the file,
else counted as the launches of the kernel that opens the region (a region run 10 times has
its first kernel launched 10 times).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ncu_roof import schema
from ncu_roof.errors import InputError
from ncu_roof.region import parse_range_message
from ncu_roof.tomlfile import read_toml


@dataclass(frozen=True)
class RegionSpec:
    """A named set of launches and what the work must do per occurrence."""

    name: str
    flops: float | None
    bytes: float | None
    nvtx: str | None = None
    kernels: str | None = None
    occurrences: int | None = None
    origin: str = "nvtx"


def _levels(nvtx: object) -> list[str]:
    """The push/pop range names of a launch's NVTX paths (all domains, outermost first)."""
    if not isinstance(nvtx, str) or not nvtx:
        return []
    names: list[str] = []
    for path in nvtx.split(" | "):
        path = path.split("@", 1)[1] if "@" in path.split("/", 1)[0] else path
        names.extend(path.split("/"))
    return names


def regions_from_nvtx(table: pd.DataFrame) -> list[RegionSpec]:
    """Regions opened with ``ncu_roof.region`` (NVTX ranges whose name carries counts)."""
    found: dict[str, RegionSpec] = {}
    for nvtx in table["nvtx"].dropna().unique():
        for level in _levels(nvtx):
            counts = parse_range_message(level)
            if (counts.flops is not None or counts.bytes is not None) and counts.name not in found:
                found[counts.name] = RegionSpec(counts.name, counts.flops, counts.bytes, nvtx=counts.name)
    return list(found.values())


REGION_KEYS = ("name", "nvtx", "kernels", "flops", "bytes", "occurrences")


def read_algorithmic(path: str | Path) -> list[RegionSpec]:
    """Regions from a sidecar TOML file (see the module docstring for the format); every key is
    checked (types, finite positive counts, whole occurrences >= 1, unknown keys refused with
    the nearest valid one, unique names, regexes compiled with RE2)."""
    path = Path(path)
    data = read_toml(path, "no such file: {path}",
                     "{path} is not valid TOML ({exc}): see docs/model.md, 'Algorithmic counts'")
    schema.check_keys(data, ("region",), "the file", path)
    entries = data.get("region")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"{path} has no [[region]] entries: see docs/model.md, 'Algorithmic counts'")
    specs: list[RegionSpec] = []
    for i, entry in enumerate(entries, 1):
        specs.append(_region_entry(entry, f"[[region]] #{i}", path))
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{path}: two [[region]] entries are named {twice[0]!r}: give each region its own name")
    return specs


def _region_entry(entry: dict[str, object], where: str, path: Path) -> RegionSpec:
    schema.check_keys(entry, REGION_KEYS, where, path)
    if "name" not in entry:
        raise InputError(f"{path}: every [[region]] needs a name and an nvtx or kernels key ({where} has no name)")
    name = schema.text(entry["name"], "name", where, path)
    where = f"[[region]] {name!r}"
    if entry.get("nvtx") is None and entry.get("kernels") is None:
        raise InputError(f"{path}: every [[region]] needs a name and an nvtx or kernels key ({where} has neither "
                         "nvtx nor kernels)")
    nvtx = schema.text(entry["nvtx"], "nvtx", where, path) if "nvtx" in entry else None
    kernels = None
    if "kernels" in entry:
        kernels = schema.compile_regex(entry["kernels"], "kernels", where, path).pattern
    if "flops" not in entry and "bytes" not in entry:
        raise InputError(f"{path}: {where} states neither flops nor bytes: give what the work must do "
                         "(see docs/model.md, 'Algorithmic counts')")
    flops = schema.positive_number(entry["flops"], "flops", where, path) if "flops" in entry else None
    nbytes = schema.positive_number(entry["bytes"], "bytes", where, path) if "bytes" in entry else None
    occurrences = (schema.positive_int(entry["occurrences"], "occurrences", where, path)
                   if "occurrences" in entry else None)
    return RegionSpec(name, flops, nbytes, nvtx=nvtx, kernels=kernels, occurrences=occurrences, origin=str(path))


def unmatched_notes(table: pd.DataFrame, specs: list[RegionSpec]) -> list[str]:
    """One note per sidecar region that matches no launch."""
    return [f"{spec.origin}: region {spec.name!r} matches no launch (check its "
            f"{'kernels regex' if spec.kernels else 'nvtx name'})"
            for spec in specs if spec.origin != "nvtx" and not region_mask(table, spec).any()]


def region_mask(table: pd.DataFrame, spec: RegionSpec) -> pd.Series:
    """Which launches belong to a region."""
    if spec.kernels:
        pattern = schema.compile_regex(spec.kernels, "kernels", f"region {spec.name!r}", Path(spec.origin))
        names = table["kernel_demangled"].fillna(table["kernel"]).astype(str)
        by_kernel = names.map(lambda n: bool(pattern.search(n))) | table["kernel"].astype(str).map(
            lambda n: bool(pattern.search(n)))
    else:
        by_kernel = pd.Series(True, index=table.index)
    if spec.nvtx:
        target = spec.nvtx
        by_nvtx = table["nvtx"].map(lambda v: any(parse_range_message(x).name == target for x in _levels(v)))
    else:
        by_nvtx = pd.Series(True, index=table.index)
    return (by_kernel & by_nvtx).astype(bool)


def occurrences(launches: pd.DataFrame, spec: RegionSpec) -> int:
    if spec.occurrences:
        return spec.occurrences
    first = launches.sort_values(["report", "id"])["kernel"].iloc[0]
    return int((launches["kernel"] == first).sum())


def summarize_regions(placed: pd.DataFrame, specs: list[RegionSpec]) -> pd.DataFrame:
    """Per region: time, achieved bytes/FLOPs, algorithmic counts, extra bytes, ideal time, stake."""
    rows = []
    for spec in specs:
        mask = region_mask(placed, spec)
        launches = placed[mask]
        if launches.empty:
            rows.append({"name": spec.name, "origin": spec.origin, "launches": 0, "kernels": []})
            continue
        rows.append(_region_row(spec, launches))
    return pd.DataFrame(rows)


def _sum(series: pd.Series) -> float:
    return float(series.sum(min_count=1)) if series.notna().any() else np.nan


def _region_row(spec: RegionSpec, launches: pd.DataFrame) -> dict[str, object]:
    n = occurrences(launches, spec)
    alg_flops = spec.flops * n if spec.flops is not None else np.nan
    alg_bytes = spec.bytes * n if spec.bytes is not None else np.nan
    time_s = _sum(launches["time_s"])
    dram = _sum(launches["dram_bytes"]) if launches["dram_bytes"].notna().all() else np.nan
    flops = _sum(launches["flops"])
    peak = _time_weighted(launches, "peak_flops_per_s")
    beta = _time_weighted(launches, "dram_roof_bytes_per_s")
    terms = [x for x in (alg_flops / peak, alg_bytes / beta) if x == x]
    ideal = max(terms) if terms else np.nan
    return {
        "name": spec.name, "origin": spec.origin, "launches": len(launches), "occurrences": n,
        "kernels": sorted(launches["kernel"].astype(str).unique()),
        "ids": launches["id"].tolist(), "reports": sorted(launches["report"].astype(str).unique()),
        "time_s": time_s, "flops": flops, "dram_bytes": dram,
        "l2_bytes": _sum(launches["l2_bytes"]), "l1_bytes": _sum(launches["l1_bytes"]),
        "alg_flops": alg_flops, "alg_bytes": alg_bytes,
        "alg_intensity": alg_flops / alg_bytes if alg_bytes > 0 else np.nan,
        "achieved_intensity": flops / dram if dram > 0 else np.nan,
        "extra_bytes_factor": dram / alg_bytes if alg_bytes > 0 else np.nan,
        "peak_flops_per_s": peak, "dram_roof_bytes_per_s": beta,
        "ideal_time_s": ideal, "time_at_stake_s": max(time_s - ideal, 0.0) if ideal == ideal else np.nan,
    }


def _time_weighted(launches: pd.DataFrame, column: str) -> float:
    """The roof a region is held to: its launches' roofs, weighted by their time."""
    values, weights = launches[column], launches["time_s"]
    ok = values.notna() & weights.notna() & (weights > 0)
    if not ok.any():
        return float(values.dropna().mean()) if values.notna().any() else np.nan
    return float(np.average(values[ok], weights=weights[ok]))


def attach_kernel_algorithmic(placed: pd.DataFrame, specs: list[RegionSpec]) -> pd.DataFrame:
    """Per-launch algorithmic counts where a region is one launch per occurrence."""
    placed = placed.copy()
    placed["alg_flops"] = np.nan
    placed["alg_bytes"] = np.nan
    for spec in specs:
        mask = region_mask(placed, spec)
        launches = placed[mask]
        if launches.empty or occurrences(launches, spec) != len(launches):
            continue
        if spec.flops is not None:
            placed.loc[mask, "alg_flops"] = spec.flops
        if spec.bytes is not None:
            placed.loc[mask, "alg_bytes"] = spec.bytes
    placed["alg_intensity"] = placed["alg_flops"] / placed["alg_bytes"].where(placed["alg_bytes"] > 0)
    return placed
