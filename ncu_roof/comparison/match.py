"""Launch matching between two runs: the placed tables of a base and a new run (and the renames of
a mapping file) in, pairs of launch rows with the kind of match out; when nothing matched, the
renames a --map file would need.

Launches are matched by kernel name (after the renames of a mapping file), launch shape
(grid and block dimensions) and NVTX path, in order within each kernel. Launches that do not
match on all three are matched again on name and NVTX path, then on name alone, then (a Julia
kernel whose build counter changed: ``julia_runsteps_6563`` -> ``julia_runsteps_6724``) on the
name's stable stem (:func:`ncu_roof.read.kernel_names.stable_stem`) with and without shape and
NVTX path; the match kind says which. The rest are left unmatched, never dropped
(:mod:`ncu_roof.comparison.compare` lists them).

Mapping file (TOML)::

    [rename]
    addConstDouble3 = "addConstDouble"   # base kernel name = new kernel name
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ncu_roof import schema
from ncu_roof.diagnosis import Diagnosis
from ncu_roof.errors import InputError
from ncu_roof.read.kernel_names import stable_stem
from ncu_roof.tomlfile import read_toml

STEM = "build suffix changed"
# match passes: the key columns, and the match kind they give
PASSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("_name", "_nvtx", "_grid", "_block"), "exact"),
    (("_name", "_nvtx"), "shape changed"),
    (("_name",), "nvtx changed"),
    (("_stem", "_nvtx", "_grid", "_block"), STEM),
    (("_stem",), STEM),
)


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
            "_stem": [stable_stem(n) for n in name],
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


def pair_only_kernels(
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
