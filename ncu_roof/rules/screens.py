"""Whole-column screens of the per-launch signals: for every launch of the placed table at once, whether
a signal can fire there at all.

A screen is a necessary condition of its signal, read from the signal's first tests (a grid and an
SM count, FP64 work, sector counts...): where it is False the signal returns None, so the rules ask
the signal only about the launches a screen lets through (:meth:`ncu_roof.rules.run.RuleRun.fires`),
and a launch it stops is answered None without running the signal. On 10,000 launches most signals
fire nowhere and are then never run launch by launch. Values are read as
:func:`ncu_roof.rules.common.val` reads them (NaN where absent, unknown or infinite), with the
tolerance of :func:`ncu_roof.model.roofline.reaches`; a test checks every screen against its signal.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ncu_roof.model.roofline import EPS, Thresholds
from ncu_roof.rules.occupancy import SMALLER_BLOCKS

Mask = np.ndarray


def values(frame: pd.DataFrame, column: str) -> np.ndarray:
    """``val(row, column)`` of every row, as float64."""
    from ncu_roof.rules.common import val

    if column not in frame:
        return np.full(len(frame), np.nan)
    cells = frame[column]
    if cells.dtype == np.float64:
        out = cells.to_numpy(dtype="float64", copy=True)
        out[~np.isfinite(out)] = np.nan
        return out
    codes, uniques = pd.factorize(cells)  # missing cells: code -1, the NaN at the end
    known = uniques.tolist() if isinstance(uniques, np.ndarray) else list(uniques)
    return np.array([*(val({column: u}, column) for u in known), np.nan])[codes]


def below(x: np.ndarray, threshold: float) -> Mask:
    """``under(x, threshold)`` of every value (False where unknown)."""
    return x < threshold - EPS * max(1.0, abs(threshold))  # type: ignore[no-any-return]


def at_least(x: np.ndarray, threshold: float) -> Mask:
    """``reaches(x, threshold)`` of every value (False where unknown)."""
    return x >= threshold - EPS * max(1.0, abs(threshold))  # type: ignore[no-any-return]


def wave(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """At least one whole wave and a partial last one."""
    waves, grid = values(frame, "waves"), values(frame, "grid_size")
    with np.errstate(invalid="ignore"):
        return (waves >= 1) & (grid > 0) & (waves - np.floor(waves) >= 1e-6)  # type: ignore[no-any-return]


def idle_warps(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """Global load and store warp instructions under ``1 - idle_warp_share`` of the grid's warps."""
    warps = values(frame, "grid_size") * np.ceil(values(frame, "block_size") / 32.0)
    touching = values(frame, "global_load_inst") + values(frame, "global_store_inst")
    with np.errstate(invalid="ignore", divide="ignore"):
        idle = 1.0 - touching / warps
    return (warps > 0) & at_least(idle, th.idle_warp_share)  # type: ignore[no-any-return]


def underfill(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """Fewer blocks than SMs, idling ``underfill_min_idle`` of them; or at most one wave whose
    achieved occupancy is under ``low_occupancy_ratio`` of the theoretical."""
    grid, sms, waves = values(frame, "grid_size"), values(frame, "sm_count"), values(frame, "waves")
    theoretical = values(frame, "theoretical_occupancy_pct")
    with np.errstate(invalid="ignore", divide="ignore"):
        idle = (sms - grid) / sms
        short = below(values(frame, "achieved_occupancy_pct") / theoretical, th.low_occupancy_ratio)
    one_wave = (grid >= sms) & (waves > 0) & (waves <= 1.0 + EPS) & (theoretical > 0) & short
    few_blocks = (grid < sms) & at_least(idle, th.underfill_min_idle)
    return (grid > 0) & (sms > 0) & (few_blocks | one_wave)  # type: ignore[no-any-return]


def uncoalesced(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """Some sector count to judge by: ideal and actual sectors, bytes used per sector, sectors and
    requests, or L2's sectors written by L1 and the distinct sectors touched."""
    ideal = (values(frame, "global_sectors_theoretical") > 0) & (values(frame, "global_sectors_ideal") > 0)
    out = ideal | (values(frame, "global_load_bytes_per_sector_pct") > 0)
    for op in ("load", "store"):
        out |= (values(frame, f"global_{op}_requests") > 0) & ~np.isnan(values(frame, f"global_{op}_sectors"))
    # a chart-only report: L2's sectors written by L1 against the distinct sectors touched
    out |= (values(frame, "l2_write_sectors_from_l1") > 0) & (values(frame, "l2_missed_sectors_from_l1") > 0)
    return out  # type: ignore[no-any-return]


def bank_conflict(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """Shared-memory wavefronts and bank conflicts."""
    return (values(frame, "shared_wavefronts") > 0) & (values(frame, "shared_bank_conflicts") > 0)  # type: ignore[no-any-return]


def occupancy(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """Achieved and theoretical occupancy, on a grid of more than one wave."""
    waves = values(frame, "waves")
    grid_limited = waves <= 1.0 + EPS
    return (~np.isnan(values(frame, "achieved_occupancy_pct")) & (values(frame, "theoretical_occupancy_pct") > 0)
            & ~grid_limited)  # type: ignore[no-any-return]


def divergence(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """Under ``divergence_threads`` active threads per instruction; where that is unmeasured, branch
    uniformity above 0 and under ``divergence_uniform_branch_pct``."""
    tpi, uniform = values(frame, "threads_per_inst"), values(frame, "branch_uniform_pct")
    by_branches = np.isnan(tpi) & (uniform > 0) & below(uniform, th.divergence_uniform_branch_pct)
    return below(tpi, th.divergence_threads) | by_branches  # type: ignore[no-any-return]


def fp64(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """A time, and FP64 FLOPs or a busy FP64 pipe."""
    work = (values(frame, "flops_fp64") > 0) | (values(frame, "pipe_fp64_pct") > 0)
    return (values(frame, "time_s") > 0) & work  # type: ignore[no-any-return]


def no_fma(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """A CUDA-core precision (FP64, FP32 or FP16) and a time."""
    if "compute_precision" not in frame:
        return np.zeros(len(frame), dtype=bool)
    precision = frame["compute_precision"].isin(["fp64", "fp32", "fp16"]).to_numpy(dtype=bool)
    return precision & (values(frame, "time_s") > 0)  # type: ignore[no-any-return]


def above_dram(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """Measured (or counted) bytes per second above ``above_peak_tolerance`` of a DRAM peak."""
    t = values(frame, "time_s")
    peak = np.fmax(values(frame, "dram_peak_bytes_per_s"), values(frame, "dram_roof_bytes_per_s"))
    with np.errstate(invalid="ignore", divide="ignore"):
        counted = values(frame, "alg_bytes") / t
    worst = np.fmax(np.fmax(values(frame, "achieved_dram_bytes_per_s"), counted), 0.0)
    return (t > 0) & (peak > 0) & (worst > th.above_peak_tolerance * peak)  # type: ignore[no-any-return]


def block_size(frame: pd.DataFrame, th: Thresholds) -> Mask:
    """A block size that leaves lanes of its last warp idle, whose warps fill under
    ``block_slots_fill`` of the SM's warp slots at the per-SM block limit, or of 512 threads or more
    with registers counted (a smaller block may fit more warps: the signal weighs it); or a block
    shape the same kernel ran faster than over the same threads."""
    block = values(frame, "block_size")
    known = block > 0
    warps = np.where(known, np.ceil(np.where(known, block, 32.0) / 32), np.nan)
    idle_lanes = 1.0 - block / (32 * warps) > 0
    limit, max_warps = values(frame, "occupancy_limit_blocks"), values(frame, "max_warps_per_sm")
    with np.errstate(invalid="ignore", divide="ignore"):
        fill = np.where((limit > 0) & (max_warps > 0), limit * warps / max_warps, np.nan)
    large = (block >= max(SMALLER_BLOCKS)) & (values(frame, "registers_per_thread") > 0)
    with np.errstate(invalid="ignore"):
        peered = values(frame, "shape_peer_time_s") < values(frame, "time_s")
    return known & (idle_lanes | below(fill, th.block_slots_fill) | large | peered)  # type: ignore[no-any-return]
