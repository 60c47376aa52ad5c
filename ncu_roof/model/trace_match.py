"""A trace's kernels matched to an Nsight Compute report of the same program.

Enters: the ``gpu`` frame of a :class:`~ncu_roof.read.trace.Trace` and a placed table (with its
per-kernel totals, :func:`~ncu_roof.model.kernels.kernel_summary`). Leaves: a :class:`TraceMatch`:

``launches``   one row per trace kernel: ``kernel`` (the report's kernel it is, ``<NA>`` where the
               report has none), ``match`` (how), ``ncu_id`` (the report launch it pairs with in
               order, NaN where the report profiled fewer launches of it);
``kernels``    one row per report kernel: launches and time in the trace and in the report,
               ``scale`` = trace time / report time (what weighs the report's stakes by the real
               run), the pairs' median ``replay_ratio`` (report time / trace time of one launch),
               and the kernel's placement (bound, % of roof, binding unit, headroom);
``unprofiled`` trace kernels the report does not hold, by name: launches, time, share.

A trace kernel is the report's kernel of the same name (the whole demangled signature, whitespace
aside), grid and block; else of the same name; else of the same function name (ncu's short name:
:func:`~ncu_roof.read.kernel_names.short_kernel_name`; a mangled trace name is read with
:func:`~ncu_roof.read.kernel_names.mangled_function_name`) with grid and block, else of that name.
Within a kernel, grid and block, the i-th launch of the trace pairs with the i-th of the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ncu_roof.read.kernel_names import mangled_function_name, short_kernel_name

PASSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("_full", "_grid", "_block"), "name, grid, block"),
    (("_full",), "name"),
    (("_short", "_grid", "_block"), "function name, grid, block"),
    (("_short",), "function name"),
)
_SPACE = re.compile(r"\s+")
PLACEMENT = ("bound", "pct_of_roof", "compute_roof", "intensity_dram", "binding_unit", "headroom_s")


@dataclass(frozen=True)
class TraceMatch:
    """The trace's kernels matched to the report's (see the module docstring)."""

    launches: pd.DataFrame
    kernels: pd.DataFrame
    unprofiled: pd.DataFrame

    @property
    def matched_share(self) -> float:
        """Share of the trace's kernel time in kernels the report holds (NaN without kernels)."""
        total = float(self.launches["duration_s"].sum())
        return float(self.launches.loc[self.launches["kernel"].notna(), "duration_s"].sum()) / total \
            if total > 0 else float("nan")


def _full(name: str) -> str:
    return _SPACE.sub(" ", name).strip()


def _short(name: str) -> str:
    return mangled_function_name(name) or short_kernel_name(name)


def _keys(names: pd.Series, grid: pd.Series, block: pd.Series) -> pd.DataFrame:
    text = names.astype(str)
    return pd.DataFrame({"_full": text.map(_full).to_numpy(), "_short": text.map(_short).to_numpy(),
                         "_grid": grid.astype("string").fillna("").to_numpy(),
                         "_block": block.astype("string").fillna("").to_numpy()})


def _assign(trace_keys: pd.DataFrame, report: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each trace launch's report kernel (object array, None where none) and the pass that found it."""
    kernel = np.full(len(trace_keys), None, dtype=object)
    how = np.full(len(trace_keys), None, dtype=object)
    for cols, kind in PASSES:
        todo = kernel == None  # noqa: E711 - elementwise on an object array
        if not todo.any():
            break
        # the key's kernel: the one with the most launches of that key in the report
        counts = report.groupby([*cols, "kernel"], sort=False).size().reset_index(name="_n")
        best = counts.sort_values("_n", ascending=False, kind="stable").drop_duplicates(list(cols))
        lookup = dict(zip(map(tuple, best[list(cols)].to_numpy()), best["kernel"], strict=True))
        keys = map(tuple, trace_keys.loc[todo, list(cols)].to_numpy())
        found = np.array([lookup.get(k) for k in keys], dtype=object)
        kernel[todo] = found
        how[np.flatnonzero(todo)[found != None]] = kind  # noqa: E711
    return kernel, how


def _pair(trace: pd.DataFrame, report: pd.DataFrame) -> np.ndarray:
    """The report launch id each trace launch pairs with: in order within (kernel, grid, block)."""
    ids = np.full(len(trace), np.nan)
    rep = report.sort_values("id", kind="stable").groupby(["kernel", "_grid", "_block"], sort=False)["id"]
    by_key = {key: part.to_numpy(dtype=np.float64) for key, part in rep}
    tr = trace[trace["kernel"].notna()].sort_values("start_s", kind="stable")
    for key, part in tr.groupby(["kernel", "_grid", "_block"], sort=False):
        theirs = by_key.get(key)
        if theirs is None:
            continue
        n = min(len(part), len(theirs))
        ids[part["_row"].to_numpy()[:n]] = theirs[:n]
    return ids


def match_trace(gpu: pd.DataFrame, placed: pd.DataFrame, kernels: pd.DataFrame) -> TraceMatch:
    """The kernels of ``gpu`` (a trace) matched to those of ``placed`` (a report) and their totals
    ``kernels`` (:func:`~ncu_roof.model.kernels.kernel_summary`)."""
    k = gpu[gpu["kind"] == "kernel"].reset_index(drop=True)
    trace = pd.concat([k[["name", "start_s", "duration_s", "grid_dim", "block_dim"]],
                       _keys(k["name"], k["grid_dim"], k["block_dim"])], axis=1)
    trace["_row"] = np.arange(len(trace))
    names = placed["kernel_demangled"].where(placed["kernel_demangled"].notna(), placed["kernel"])
    report = pd.concat([placed[["id", "kernel", "time_s"]].reset_index(drop=True),
                        _keys(names.reset_index(drop=True), placed["grid_dim"].reset_index(drop=True),
                              placed["block_dim"].reset_index(drop=True))], axis=1)
    report["kernel"] = report["kernel"].astype(str)
    kernel, how = _assign(trace, report) if len(report) and len(trace) else (
        np.full(len(trace), None, dtype=object), np.full(len(trace), None, dtype=object))
    trace["kernel"] = pd.Series(kernel, dtype="string")
    trace["match"] = pd.Series(how, dtype="string")
    trace["ncu_id"] = _pair(trace, report) if len(report) else np.nan
    launches = trace[["name", "start_s", "duration_s", "grid_dim", "block_dim", "kernel", "match", "ncu_id"]]
    return TraceMatch(launches, _kernel_rows(trace, report, kernels), _unprofiled(trace))


def _kernel_rows(trace: pd.DataFrame, report: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    total = float(trace["duration_s"].sum())
    ncu_time = dict(zip(report["id"], report["time_s"], strict=True))
    rows = []
    per_kernel = kernels.groupby(kernels["kernel"].astype(str), sort=False)
    for name, group in per_kernel:
        mine = trace[trace["kernel"] == name]
        pairs = mine[mine["ncu_id"].notna()]
        ratio = pairs["ncu_id"].map(ncu_time) / pairs["duration_s"]
        t = float(mine["duration_s"].sum())
        n = float(group["time_s"].sum(min_count=1))
        first = group.iloc[0]
        rows.append({
            "kernel": name, "match": mine["match"].mode().iloc[0] if len(mine) else None,
            "trace_launches": len(mine), "ncu_launches": int(group["launches"].sum()), "paired": len(pairs),
            "trace_time_s": t, "ncu_time_s": n, "scale": t / n if n > 0 else np.nan,
            "trace_share": t / total if total > 0 else np.nan,
            "replay_ratio": float(ratio.median()) if len(ratio.dropna()) else np.nan,
            **{c: first.get(c) for c in PLACEMENT},
        })
    cols = ["kernel", "match", "trace_launches", "ncu_launches", "paired", "trace_time_s", "ncu_time_s", "scale",
            "trace_share", "replay_ratio", *PLACEMENT]
    frame = pd.DataFrame(rows, columns=cols)
    frame["headroom_s"] = frame["headroom_s"].astype(float)
    frame["trace_headroom_s"] = frame["headroom_s"] * frame["scale"]
    return frame.sort_values(["trace_time_s", "ncu_time_s"], ascending=False, kind="stable").reset_index(drop=True)


def _unprofiled(trace: pd.DataFrame) -> pd.DataFrame:
    total = float(trace["duration_s"].sum())
    rest = trace[trace["kernel"].isna()]
    out = rest.groupby(rest["name"].astype(str), sort=False).agg(launches=("duration_s", "size"),
                                                                 time_s=("duration_s", "sum"))
    out["share"] = out["time_s"] / total if total > 0 else np.nan
    return out.sort_values("time_s", ascending=False, kind="stable").rename_axis("name").reset_index()
