"""Kernel sequences that could be one fused kernel, found from sizes and order alone.

Enters: the placed table (launch order within each report, process and stream; DRAM bytes read and
written, the binding unit). Leaves: :class:`Chain` records (the kernels in order, how often the
sequence ran, the bytes a fused kernel would still move) and the ``[[region]]`` TOML stanzas a user
fills in to check them (:func:`region_stanzas`).

Two consecutive launches link when both are DRAM-bound (fusion removes DRAM bytes, nothing else
here), they are different kernels, they do not do the same arithmetic work (two GEMMs of one size
in a benchmark are alternatives, not a pipeline: 64 FLOPs per thread or more, FLOPs within 10%),
and the second reads about what the first wrote (or, where the first writes next to nothing, a
reduction, what the first read): between :data:`LINK_LOW` and :data:`LINK_HIGH` times it. A chain is
a run of :data:`MIN_KERNELS` to :data:`MAX_KERNELS` linked launches; the same kernel sequence seen
again (a training loop) is one chain with more occurrences.

A fused kernel still reads what the chain's first kernel reads, what its last kernel reads beyond
what the kernel before it wrote (the last kernel's own inputs), and writes what its last writes:
those bytes are a lower bound of what fusing the chain can reach (inputs read only by middle
kernels add to it), so the time at that floor bounds what fusing can win from above. Two launches
of one name stem that read and write the same amounts are variants of one computation, never a
chain; nor are launches that are not memory-bound (DRAM their largest unit, but latency-bound).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

LINK_LOW, LINK_HIGH = 0.9, 4.0  # the second kernel reads this many times what the first wrote (or read)
REDUCTION_WRITES = 0.01  # a kernel writing under this share of what it reads is a reduction
MIN_KERNELS, MAX_KERNELS = 2, 16
VARIANT_TOLERANCE = 0.05  # reads and writes within this share of the neighbour's (and one name stem): variants
SAME_WORK_FLOPS_PER_THREAD, SAME_WORK_TOLERANCE = 64.0, 0.10
_NEEDS = ("report", "kernel", "dram_bytes", "dram_read_bytes", "binding_unit", "time_s")


@dataclass(frozen=True)
class Chain:
    """A kernel sequence that ran ``occurrences`` times; totals over every occurrence."""

    kernels: tuple[str, ...]
    launches: tuple[Any, ...]  # index labels in the placed table, every occurrence
    occurrences: int
    time_s: float
    dram_bytes: float
    fused_bytes: float  # the first kernel's reads, the last's own inputs and writes, every occurrence
    flops: float  # measured, every occurrence (NaN where unknown)
    fused_floor_s: float  # fused bytes at the DRAM roof, or the FLOPs at the compute roof if longer


def _links(g: pd.DataFrame) -> np.ndarray:
    """Whether launch i links to launch i + 1 (one flag per consecutive pair)."""
    read = g["dram_read_bytes"].to_numpy(float)
    wrote = g["dram_bytes"].to_numpy(float) - read
    ref = np.where(wrote > REDUCTION_WRITES * read, wrote, read)
    nxt = read[1:]
    dram = (g["binding_unit"] == "dram").to_numpy()
    if "bound" in g:  # DRAM the largest unit of a launch that is not memory-bound (latency): no link
        dram = dram & (g["bound"] == "memory").to_numpy()
    names = g["kernel"].astype(str).to_numpy()
    ok = dram[:-1] & dram[1:] & (names[:-1] != names[1:])
    ok &= (ref[:-1] > 0) & (nxt >= LINK_LOW * ref[:-1]) & (nxt <= LINK_HIGH * ref[:-1])
    # the same reads, the same writes and one name stem (reduceNeighbored, reduceNeighboredLess):
    # variants of one computation (a benchmark's alternatives), not a producer and its consumer
    with np.errstate(invalid="ignore", divide="ignore"):
        same_in = np.abs(read[1:] - read[:-1]) <= VARIANT_TOLERANCE * np.maximum(read[1:], read[:-1])
        same_out = np.abs(wrote[1:] - wrote[:-1]) <= VARIANT_TOLERANCE * np.maximum(wrote[1:], wrote[:-1])
    variants = ok & same_in & same_out  # of these pairs, those of one name stem are variants
    for i in np.flatnonzero(variants).tolist():
        variants[i] = _one_stem(names[i], names[i + 1])
    ok &= ~variants
    if "alg_bytes" in g:  # launches the user already described are judged from their counts
        free = g["alg_bytes"].isna().to_numpy()
        ok &= free[:-1] & free[1:]
    if {"flops", "grid_size", "block_size"} <= set(g.columns):
        flops = g["flops"].to_numpy(float)
        per_thread = flops / (g["grid_size"] * g["block_size"]).to_numpy(float)
        work = per_thread >= SAME_WORK_FLOPS_PER_THREAD
        with np.errstate(invalid="ignore", divide="ignore"):
            close = np.abs(flops[1:] - flops[:-1]) <= SAME_WORK_TOLERANCE * np.maximum(flops[1:], flops[:-1])
        ok &= ~(work[:-1] & work[1:] & close)
    return ok


def _one_stem(a: str, b: str) -> bool:
    """Two kernel names of one stem: a common prefix of at least half the shorter name (and 6 characters)."""
    common = len(os.path.commonprefix([a, b]))
    return common >= max(6, 0.5 * min(len(a), len(b)))


def _runs(g: pd.DataFrame) -> list[list[Any]]:
    """Runs of linked launches (index labels), cut at ``MAX_KERNELS``."""
    links = _links(g)
    if not links.any() and MIN_KERNELS > 1:  # no launch links to the next: every run is one launch
        return []
    labels = list(g.index)
    runs, current = [], [labels[0]]
    for i, linked in enumerate(links):
        if linked and len(current) < MAX_KERNELS:
            current.append(labels[i + 1])
            continue
        runs.append(current)
        current = [labels[i + 1]]
    runs.append(current)
    return [r for r in runs if len(r) >= MIN_KERNELS]


def find_chains(placed: pd.DataFrame) -> list[Chain]:
    """Every fusable-looking kernel sequence, longest time first."""
    if any(c not in placed for c in _NEEDS) or placed.empty:
        return []
    keys = [c for c in ("report", "process", "stream") if c in placed]
    by_kernels: dict[tuple[str, ...], list[list[Any]]] = {}
    for _, g in placed.groupby(keys, sort=False, dropna=False):
        if len(g) < MIN_KERNELS:
            continue
        for run in _runs(g):
            by_kernels.setdefault(tuple(placed.loc[run, "kernel"].astype(str)), []).append(run)
    chains = [_chain(placed, kernels, runs) for kernels, runs in by_kernels.items()]
    return sorted(chains, key=lambda c: -c.time_s)


def _chain(placed: pd.DataFrame, kernels: tuple[str, ...], runs: list[list[Any]]) -> Chain:
    rows = placed.loc[[label for run in runs for label in run]]
    first, last = placed.loc[[r[0] for r in runs]], placed.loc[[r[-1] for r in runs]]
    before_last = placed.loc[[r[-2] for r in runs]]
    # what the last kernel reads beyond what the kernel before it wrote: its own inputs, which a
    # fused kernel reads too
    own = (last["dram_read_bytes"].to_numpy(float)
           - (before_last["dram_bytes"] - before_last["dram_read_bytes"]).to_numpy(float))
    own = np.maximum(own, 0.0)
    fused = float(first["dram_read_bytes"].sum() + own.sum() + (last["dram_bytes"] - last["dram_read_bytes"]).sum())
    flops = float(rows["flops"].sum(min_count=1)) if "flops" in rows else float("nan")
    roof = float(first["dram_roof_bytes_per_s"].iloc[0]) if "dram_roof_bytes_per_s" in first else float("nan")
    peak = float(first["peak_flops_per_s"].iloc[0]) if "peak_flops_per_s" in first else float("nan")
    bounds = [fused / roof if roof > 0 else math.nan, flops / peak if peak > 0 else math.nan]
    floor = max((b for b in bounds if b == b), default=math.nan)
    return Chain(kernels, tuple(rows.index), len(runs), float(rows["time_s"].sum()), float(rows["dram_bytes"].sum()),
                 fused, flops, float(floor))


def _regex(kernels: tuple[str, ...]) -> str:
    return "^(" + "|".join(re.escape(k) for k in dict.fromkeys(kernels)) + ")$"


def _name(kernels: tuple[str, ...]) -> str:
    """The kernels' common prefix (``ln_``), else the first kernel's name, as a region name."""
    prefix = ""
    for chars in zip(*kernels, strict=False):
        if len(set(chars)) > 1:
            break
        prefix += chars[0]
    prefix = prefix.rstrip("_ :.<(")
    return (prefix if len(prefix) >= 2 else kernels[0][:40]) + "-fused"


def region_stanzas(chains: list[Chain]) -> str:
    """The sidecar ``[[region]]`` stanzas of ``chains``: the measured numbers filled in where they
    stand for the work (FLOPs do not change when kernels fuse), the bytes a first guess to check."""
    parts = ["# Kernel sequences that look fusable (ncu-roof diagnose --suggest-regions). Check each count",
             "# against what the computation needs, then pass this file with --algorithmic.", ""]
    for c in chains:
        per = c.occurrences
        flops = c.flops / per if c.flops == c.flops else None
        parts += [
            f"# {len(c.kernels)} kernels, {per} time(s): {c.dram_bytes / per:.0f} bytes from DRAM per time now",
            "[[region]]",
            f"name = {json.dumps(_name(c.kernels))}",
            f"kernels = {json.dumps(_regex(c.kernels))}",
            (f"flops = {flops:.0f}  # measured: the work is the same fused" if flops
             else "# flops = ?  # the FLOPs the computation needs (none measured)"),
            f"bytes = {c.fused_bytes / per:.0f}  # the first kernel's reads + the last's writes: add inputs "
            "only later kernels read",
            f"occurrences = {per}",
            "",
        ]
    return "\n".join(parts)
