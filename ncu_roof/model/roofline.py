"""Place every launch under its roofs: attainable = min(P, I x beta) per memory level.

Roofs come, in order of preference, from measured ceilings (``--ceilings``), from the report
itself (peak per cycle x the unit's clock, as Nsight Compute draws its roofline), or from the
built-in device table (spec sheets). DRAM is judged against a *practical* roof: the measured
one, or 88% of the theoretical one, and the source label says which. The compute roof is the
one of the precision whose FLOPs take longest at their roof (FP64 on a GeForce part, even where
FP32 FLOPs are more), scaled by its FMA share (an add or a multiply is one FLOP where an FMA is
two, at the same instruction rate); that precision's FLOPs (``roof_flops``) are the ones placed.
The headroom is the time above the least time the work needs: the roofline's bound, less the FP64
work the FP64 fixes remove where FP64 binds (:func:`_least_compute_s`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from ncu_roof import devices
from ncu_roof.model.block_shapes import block_shape_peers
from ncu_roof.model.units import bind, bound_side, unit_column

PRACTICAL_DRAM_FRACTION = 0.88
# Thresholds are compared with this relative slack, so that a value on the boundary that floating
# point puts a hair below it (1 - 64/80 = 0.19999999999999996) still counts as reaching it.
EPS = 1e-9


def reaches(x: float, threshold: float) -> bool:
    """x >= threshold, with a relative tolerance of ``EPS`` (False where x is unknown)."""
    return x == x and x >= threshold - EPS * max(1.0, abs(threshold))


def under(x: float, threshold: float) -> bool:
    """x < threshold, by more than the tolerance of :func:`reaches` (False where x is unknown)."""
    return x == x and not reaches(x, threshold)


LEVELS = ("dram", "l2", "l1")
SECTOR_BYTES = 32.0  # an L1/L2 sector
PRECISIONS = ("fp64", "fp32", "fp16", "tensor")
# instruction quantities and FLOP weight of an FMA per CUDA-core precision
_FMA_MIX = {"fp64": ("dfma", "dadd", "dmul", 2.0), "fp32": ("ffma", "fadd", "fmul", 2.0),
            "fp16": ("hfma", "hadd", "hmul", 4.0)}


@dataclass(frozen=True)
class Thresholds:
    """Numbers the placement and the rules use; one place to tune them."""

    overhead_time_s: float = 10e-6  # launches shorter than this may be launch-bound
    # what an empty kernel takes under ncu (its gpu__time_duration): no fix wins that part of a launch.
    # The shortest launches of the real reports are 1.47-1.5 us (Turing); a ceilings file's
    # launch_floor_s replaces it
    launch_floor_s: float = 1.5e-6
    # a finding whose fix wins less than this over all its launches is dropped (under the launch
    # floor's own run-to-run jitter)
    negligible_stake_s: float = 250e-9
    overhead_explained: float = 0.5  # ...when the work explains less than this share of the time
    practical_dram_fraction: float = PRACTICAL_DRAM_FRACTION
    # rules (ncu_roof.rules): the five-step checklist and the traps
    at_roof_pct: float = 80.0  # at or above this % of its roof a launch is "on the roof"
    # "well below both" roofs: under this % of the binding roof (the attainable at its intensity, so
    # under the other roof too) and, where ncu's speed of light is known, both its SM and memory
    # throughput under sol_busy_pct: the launch is latency-bound, not memory- or compute-bound
    latency_pct_of_roof: float = 50.0
    sol_busy_pct: float = 60.0  # a speed-of-light % this high marks the busy side (not latency-bound)
    extra_bytes_factor: float = 1.5  # DRAM bytes / algorithmic bytes at or above this: fuse or reuse
    ideal_bytes_factor: float = 1.2  # ...at or below this: the point is at the ideal intensity
    min_stake_fraction: float = 0.005  # below-roof advice worth less than this share of the run is dropped
    overhead_fixed_share: float = 0.5  # fixed (size-independent) share of time that flags no scaling
    overhead_size_ratio: float = 2.0  # launches must differ this much in grid size to judge scaling
    overhead_scaling_max_time_s: float = 100e-6  # ...and be this short (longer ones are not launch-bound)
    underfill_min_idle: float = 0.05  # a grid with fewer blocks than SMs, leaving this share of SMs idle
    idle_warp_share: float = 0.75  # warps that never load or store global memory, of a grid's warps, at or above this
    wave_tail_min_loss: float = 0.2  # idle share of the wave slots (like ncu's 20% tail-effect cut)
    above_peak_tolerance: float = 1.02  # achieved / theoretical DRAM peak above this is impossible
    no_fma_min_unfused: float = 0.3  # adds and multiplies (not FMA) at or above this share of the FP instructions
    fp_time_share: float = 0.25  # ...on a launch whose FP work at its peak takes this share of the time
    consumer_fp64_ratio: float = 0.125  # FP64/FP32 peak at or below this: consumer-rate FP64 (1/32, 1/64)
    fp64_time_share: float = 0.25  # FP64 work at its roof taking this share of the time: FP64-heavy
    fp64_pipe_busy_pct: float = 50.0  # ...or the FP64 pipe this busy (where FP64 runs below the FP32 rate)
    fp64_division_share: float = 0.25  # FP64 divisions (x their DFMA chain) this share of the FP64 work: named
    busy_pipe_pct: float = 50.0  # a pipe this busy (% of its peak over elapsed cycles) names the limiter
    stall_dominant_share: float = 0.25  # a stall reason with this share of the stall cycles is named
    low_issue_active: float = 0.6  # issue slots used below this (1 = every cycle): latency not hidden
    block_slots_fill: float = 0.5  # a block size whose warps fill less than this share of an SM: too small
    uncoalesced_excess: float = 1.1  # sectors asked / sectors needed at or above this: uncoalesced (priced)
    uncoalesced_sectors_per_request: float = 16.0  # without the ideal count: above this (16-byte words)
    # L1 data-stage wavefronts per LSU request at or above this: accesses serialized (a warp's 16-byte
    # accesses need up to 4; more is strided or scattered addresses, or bank conflicts)
    serialized_wavefronts_per_request: float = 4.0
    # the same where a warp spans several rows of a block narrower than 32 threads (one segment a row)
    split_warp_wavefronts_per_request: float = 2.0
    bank_conflict_share: float = 0.25  # conflicts / shared wavefronts at or above this
    # without L1's sector counts: L2 sectors written by L1 per distinct sector touched at or above this
    l2_rewrites_per_sector: float = 2.0
    local_min_share: float = 0.02  # local-memory bytes at or above this share of L1's or L2's bytes: named
    low_occupancy_ratio: float = 0.7  # achieved / theoretical occupancy below this
    low_theoretical_occupancy_pct: float = 50.0  # theoretical occupancy below this
    occupancy_gain: float = 1.25  # latency-bound, and relaxing the limiting resource gives this many times the warps
    divergence_threads: float = 28.0  # active threads per warp instruction below this (of 32)
    # without threads per instruction: branch targets all of a warp's active threads take alike, % below this
    # (reduceNeighbored's modulo test: 90.3% on an RTX 4090, 88.5% on a T4; its contiguous rewrite 99.3%)
    divergence_uniform_branch_pct: float = 95.0
    severity_high_share: float = 0.10  # a finding whose stake is this share of the run's GPU time: high
    severity_medium_share: float = 0.02  # ...this share: medium (less: low; zero-stake notes stay info)
    # an overhead-regime finding winning less than this in all is low, whatever its share: a demo's few
    # launches near the launch floor (a 3.7 us cuBLAS call) are no one's first fix
    overhead_low_stake_s: float = 10e-6


def _table_value(device: object, field: str) -> float:
    spec = devices.lookup(device if isinstance(device, str) else None)
    value = getattr(spec, field, None) if spec is not None else None
    return float(value) if value else np.nan


def _pick(columns: list[tuple[pd.Series, pd.Series | str]], index: pd.Index) -> tuple[pd.Series, pd.Series]:
    """First non-NaN value per row over (values, label) candidates in preference order (a label per
    candidate, or per row)."""
    value = pd.Series(np.nan, index=index, dtype="float64")
    label = pd.Series(pd.NA, index=index, dtype="object")
    for candidate, name in columns:
        fill = value.isna() & candidate.notna() & (candidate > 0)
        value = value.where(~fill, candidate)
        label = label.where(~fill, name)
    return value, label


def _from_table(t: pd.DataFrame, field: str) -> pd.Series:
    """The device table's ``field`` for each launch's device (looked up once per distinct device)."""
    codes, names = pd.factorize(t["device"])  # launches share a few devices; no device: code -1
    found = np.array([*(_table_value(d, field) for d in names.tolist()), _table_value(None, field)], dtype="float64")
    return pd.Series(found[codes], index=t.index, dtype="float64")


def _from_table_at_clock(t: pd.DataFrame, field: str) -> tuple[pd.Series, pd.Series]:
    """The device table's compute peak ``field`` at each launch's measured SM clock (the table's is at the
    boost clock; ncu locks clocks to base by default: an A100's 312 TFLOP/s at 1410 MHz is 169 at 765 MHz),
    and its source label; the boost-clock figure where the clock or the table's boost clock is unknown."""
    boost = _from_table(t, "boost_clock_hz")
    clock = t["sm_clock_hz"].astype("float64") if "sm_clock_hz" in t else pd.Series(np.nan, index=t.index)
    scale = (clock / boost).where((clock > 0) & (boost > 0))
    scaled = scale.notna() & ((scale - 1.0).abs() >= CLOCK_SAME)

    def mhz(hz: pd.Series) -> np.ndarray:  # whole MHz, a column at a time (thousands of launches)
        return (hz.where(scaled, 0.0) / 1e6).round().to_numpy().astype("int64")

    # each distinct (clock, boost) pair's label written once: launches share a few clocks
    codes, pairs = pd.factorize(mhz(clock) * 2**32 + mhz(boost))
    labels = np.array([f"device table at the measured {pair >> 32} MHz SM clock ({pair & 0xFFFFFFFF} MHz boost)"
                       for pair in pairs.tolist()] + ["device table"], dtype=object)
    label = labels[np.where(scaled.to_numpy(), codes, len(labels) - 1)]
    return _from_table(t, field) * scale.where(scaled, 1.0), pd.Series(label, index=t.index, dtype="object")


CLOCK_SAME = 0.02  # a measured SM clock within this share of the table's boost clock: the table's figure as is


def _measured(ceilings: dict[str, Any] | None, key: str, index: pd.Index) -> pd.Series:
    value = (ceilings or {}).get("ceilings", {}).get(key)
    return pd.Series(float(value) if value else np.nan, index=index, dtype="float64")


def _compute_peaks(t: pd.DataFrame, ceilings: dict[str, Any] | None) -> dict[str, tuple[pd.Series, pd.Series]]:
    """Theoretical (FMA) peak and its source per CUDA-core precision."""
    src = (ceilings or {}).get("source", "ceilings file")
    peaks = {}
    for p in ("fp64", "fp32", "fp16"):
        peaks[p] = _pick([
            (_measured(ceilings, f"{p}_flops_per_s", t.index), f"measured ({src})"),
            (t.get(f"peak_{p}_flops_per_s", pd.Series(np.nan, index=t.index)), "report"),
            _from_table_at_clock(t, f"{p}_flops_per_s"),
        ], t.index)
    return peaks


def _tensor_peak(t: pd.DataFrame, ceilings: dict[str, Any] | None) -> tuple[pd.Series, pd.Series]:
    dtype = t["tensor_precision"].fillna("fp16").astype(str)
    report = pd.Series(np.nan, index=t.index, dtype="float64")
    table = pd.Series(np.nan, index=t.index, dtype="float64")
    table_src = pd.Series("device table", index=t.index, dtype="object")
    measured = pd.Series(np.nan, index=t.index, dtype="float64")
    clocks = t[[c for c in ("device", "sm_clock_hz") if c in t]]  # what the table's figure reads, not all
    for d in dtype.unique():
        rows = dtype == d
        col = f"peak_tensor_{d}_flops_per_s"
        if col in t:
            report[rows] = t.loc[rows, col]
        field = f"tensor_{d}_{'ops' if d.startswith('int') else 'flops'}_per_s"
        table[rows], table_src[rows] = _from_table_at_clock(clocks.loc[rows], field)
        measured[rows] = _measured(ceilings, f"{d}_tensor_flops_per_s", t.index)[rows]
    src = (ceilings or {}).get("source", "ceilings file")
    return _pick([(measured, f"measured ({src})"), (report, "report"), (table, table_src)], t.index)


def _dominant_precision(t: pd.DataFrame) -> pd.Series:
    flops = pd.DataFrame({p: t[f"flops_{p}"] for p in PRECISIONS}).fillna(0.0)
    dominant = flops.idxmax(axis=1)
    return dominant.where(flops.max(axis=1) > 0)


def _binding_precision(t: pd.DataFrame, roofs: dict[str, pd.Series]) -> pd.Series:
    """The precision whose FLOPs take longest at its own roof (``roofs``: FLOP/s per precision, FMA
    share applied): a kernel with 900k FP32 and 768k FP64 FLOPs on a 1/64-rate FP64 part is held
    to the FP64 roof, not to the FP32 one its larger FLOP count would pick. Where a precision
    it uses has a roof, the one with the most FLOPs."""
    times = pd.DataFrame({p: t[f"flops_{p}"].where(t[f"flops_{p}"] > 0) / roofs[p].where(roofs[p] > 0)
                          for p in PRECISIONS})
    used = pd.DataFrame({p: t[f"flops_{p}"] > 0 for p in PRECISIONS})
    known = (times.notna() | ~used).all(axis=1) & used.any(axis=1)  # every precision used has its roof
    dominant = _dominant_precision(t)
    return times.fillna(-1.0).idxmax(axis=1).where(known, dominant).where(dominant.notna())


DIVISION_CHAIN = 8.0  # FP64 instructions per division (the reciprocal's refinement and the correction step)


def division_share(rcp: Any, dfma: Any, dadd: Any, dmul: Any) -> Any:
    """About the share of the FP64 work that divisions take: each MUFU.RCP64H (one per division, a
    warp instruction) starts a Newton chain of about :data:`DIVISION_CHAIN` DFMA/DMUL, against all
    FP64 warp instructions (the thread counts / 32); 0 where either is unknown or none. Numbers or
    Series alike."""
    warp = (dfma + dadd + dmul) / 32.0  # thread -> warp instructions
    if isinstance(warp, pd.Series):
        known = (rcp > 0) & (warp > 0)
        return (DIVISION_CHAIN * rcp / warp.where(known)).clip(upper=1.0).where(known, 0.0)
    return min(DIVISION_CHAIN * rcp / warp, 1.0) if rcp > 0 and warp > 0 else 0.0


def _least_compute_s(t: pd.DataFrame, peaks: dict[str, pd.Series], shares: dict[str, pd.Series],
                     tensor_peak: pd.Series, precision: pd.Series, computed: pd.Series, th: Thresholds) -> pd.Series:
    """The compute term of the least time a launch's work needs: the roofline's (``computed``), but
    where FP64 binds its FLOPs lose the Newton chains FP64 divisions compile to (a multiply by a
    reciprocal computed once does without them) and, on a consumer FP64 rate (``consumer_fp64_ratio``
    of FP32 or less), run at the FP32 rate beside the FP32 FLOPs, on the same pipe: the fixes the
    fp64-pipe rule advises, which an upper bound on what can be won must allow. ``peaks``: each
    CUDA-core precision's FMA peak, ``shares`` its FMA share."""
    rows = (precision == "fp64") & (t["flops_fp64"] > 0)
    if not rows.any():
        return computed
    nan = pd.Series(np.nan, index=t.index)
    share = division_share(t.get("inst_fp64_rcp", nan), t["inst_dfma"], t["inst_dadd"], t["inst_dmul"])
    f64 = t["flops_fp64"] * (1.0 - share)
    consumer = peaks["fp64"] / peaks["fp32"] <= th.consumer_fp64_ratio * (1 + EPS)

    def flops(p: str) -> pd.Series:
        return t[f"flops_{p}"].where(t[f"flops_{p}"] > 0)

    times = pd.DataFrame({
        "fp64": (f64 / (peaks["fp64"] * shares["fp64"])).where(~consumer),
        "fp32": (flops("fp32").fillna(0.0) / (peaks["fp32"] * shares["fp32"])
                 + (f64 / (peaks["fp32"] * shares["fp64"])).where(consumer, 0.0)),
        "fp16": flops("fp16") / (peaks["fp16"] * shares["fp16"]),
        "tensor": flops("tensor") / tensor_peak.where(tensor_peak > 0),
    })
    least = times.max(axis=1, skipna=True)
    return computed.where(~rows | least.isna(), np.fmin(least, computed))


def _fma_share_factor(t: pd.DataFrame, precision: str) -> pd.Series:
    """FLOPs per instruction over FLOPs per FMA: 1 for pure FMA, 0.5 (or 0.25) for adds only."""
    fma, add, mul, weight = _FMA_MIX[precision]
    inst = t[f"inst_{fma}"] + t[f"inst_{add}"] + t[f"inst_{mul}"]
    return (t[f"flops_{precision}"] / (weight * inst.where(inst > 0))).clip(upper=1.0)


def _compute_roof(t: pd.DataFrame, ceilings: dict[str, Any] | None, th: Thresholds) -> pd.DataFrame:
    """Each launch's compute roof: that of the precision that binds (:func:`_binding_precision`),
    its label and source, ``roof_flops``: the FLOPs of that precision, the ones placed under it, and
    ``least_compute_s``: the compute time its work needs at least (:func:`_least_compute_s`)."""
    peaks = _compute_peaks(t, ceilings)
    tensor_peak, tensor_src = _tensor_peak(t, ceilings)
    shares = {p: _fma_share_factor(t, p).fillna(1.0) for p in ("fp64", "fp32", "fp16")}
    precision = _binding_precision(t, {**{p: peaks[p][0] * shares[p] for p in shares}, "tensor": tensor_peak})
    out = pd.DataFrame(index=t.index)
    out["compute_precision"] = precision
    out["roof_flops"] = t["flops"].copy()
    out["peak_flops_per_s"] = np.nan
    out["peak_flops_src"] = pd.Series(pd.NA, index=t.index, dtype="object")
    out["compute_roof"] = pd.Series(pd.NA, index=t.index, dtype="object")
    binds = {p: precision == p for p in PRECISIONS}  # each compared once
    for p in PRECISIONS:
        out.loc[binds[p], "roof_flops"] = t.loc[binds[p], f"flops_{p}"]
    for p in ("fp64", "fp32", "fp16"):
        rows = binds[p]
        share = shares[p]
        out.loc[rows, "peak_flops_per_s"] = (peaks[p][0] * share)[rows]
        out.loc[rows, "peak_flops_src"] = peaks[p][1][rows]
        codes, distinct = pd.factorize(share[rows], use_na_sentinel=False)  # each distinct share labelled once
        out.loc[rows, "compute_roof"] = np.array([_roof_label(p, s) for s in distinct.tolist()], dtype=object)[codes]
    rows = binds["tensor"]
    out.loc[rows, "peak_flops_per_s"] = tensor_peak[rows]
    out.loc[rows, "peak_flops_src"] = tensor_src[rows]
    out.loc[rows, "compute_roof"] = ("tensor " + t.loc[rows, "tensor_precision"].astype("object")).fillna(
        "tensor (input type unknown: fp16 assumed)")
    out["peak_flops_per_s"] = out["peak_flops_per_s"].astype("float64")
    out["least_compute_s"] = _least_compute_s(t, {p: peaks[p][0] for p in shares}, shares, tensor_peak, precision,
                                              out["roof_flops"] / out["peak_flops_per_s"], th)
    return out


def _roof_label(precision: str, share: float) -> str:
    if share >= 0.95:
        return f"{precision} FMA"
    if share <= 0.55:
        return f"{precision} no-FMA"
    return f"{precision} mixed ({share:.0%} of FMA rate)"


def _memory_roofs(t: pd.DataFrame, ceilings: dict[str, Any] | None, th: Thresholds) -> pd.DataFrame:
    out = pd.DataFrame(index=t.index)
    src = (ceilings or {}).get("source", "ceilings file")
    theoretical, theo_src = _pick([
        (t["peak_dram_bytes_per_s"], "report"),
        (_from_table(t, "dram_bytes_per_s"), "device table"),
    ], t.index)
    measured = _measured(ceilings, "dram_bytes_per_s", t.index)
    frac = th.practical_dram_fraction
    out["dram_peak_bytes_per_s"] = theoretical
    out["dram_roof_bytes_per_s"] = measured.fillna(theoretical * frac)
    out["dram_roof_src"] = pd.Series(np.where(
        measured.notna(), f"measured ({src})",
        np.where(theo_src.notna(), theo_src.fillna("").astype(str) + f" x {frac:.0%} (practical, not measured)",
                 None),  # type: ignore[call-overload]  # numpy's stubs refuse None as a choice
    ), index=t.index, dtype="object")
    for level in ("l2", "l1"):
        value, label = _pick([
            (_measured(ceilings, f"{level}_bytes_per_s", t.index), f"measured ({src})"),
            (t[f"peak_{level}_bytes_per_s"], "report"),
        ], t.index)
        out[f"{level}_roof_bytes_per_s"], out[f"{level}_roof_src"] = value, label
    return out


ROOF_SPREAD = 0.05  # a device's peaks of one kind within 5% of their median are one peak


def _one_value_per_peak(table: pd.DataFrame) -> pd.DataFrame:
    """The table with each device's report peaks (``peak_*_per_s``) made one number: a report's
    peak is a rate x each launch's measured clock, so one roof read 6.63, 6.57 and 6.58 TFLOP/s
    across launches and outputs. Values within :data:`ROOF_SPREAD` of the median of the device's
    launches take that median; a value further off (a launch at another clock) keeps its own."""
    columns = [c for c in table.columns if c.startswith("peak_") and c.endswith("_per_s")]
    if not columns or "device" not in table:
        return table
    t = table.copy()
    device = t["device"].fillna("").astype(str)
    for column in columns:
        values = t[column]
        if values.nunique() < 2:
            continue
        source = t[f"{column}_src"].fillna("").astype(str) if f"{column}_src" in t else pd.Series("", index=t.index)
        median = values.groupby([device, source], sort=False).transform("median")
        close = values.notna() & ((values / median - 1.0).abs() <= ROOF_SPREAD)
        t[column] = values.where(~close, median)
    return t


def _bound(t: pd.DataFrame, out: pd.DataFrame, units: pd.DataFrame, th: Thresholds) -> pd.Series:
    """The roofline's lower bound and binding roof (into ``out``), and the bound: the side (memory or
    compute) of the binding unit of the bottleneck model; latency when no unit is near its limit;
    overhead for short launches the work does not explain; unknown without any unit."""
    terms = pd.concat([(out["roof_flops"] / out["peak_flops_per_s"]).rename("compute"), _memory_terms(t, out)], axis=1)
    lower = terms.max(axis=1, skipna=True)
    out["time_lower_bound_s"] = lower
    out["binding"] = terms.fillna(-1.0).idxmax(axis=1).where(lower.notna())
    codes, names = pd.factorize(units["binding_unit"], use_na_sentinel=False)  # each distinct unit asked once
    side = pd.Series(np.array([bound_side(n) for n in names.tolist()], dtype=object)[codes], index=t.index)
    bound = pd.Series(side, index=t.index, dtype="object")
    known = t["time_s"].notna() & side.notna()
    bound = bound.where(known, "unknown")
    idle = _latency(units, th)
    # no unit near its limit: latency-bound where DRAM (or ncu's memory throughput) is measured, else unknown
    dram = units[[unit_column("dram"), unit_column("memory")]].notna().any(axis=1)
    bound = bound.where(~(known & idle), "latency").where(~(known & idle & ~dram), "unknown")
    overhead = ((t["time_s"] < th.overhead_time_s * (1 - EPS))
                & ~(lower >= th.overhead_explained * t["time_s"] * (1 - EPS)))
    return _per_kernel(t, bound.where(~overhead, "overhead"))


def _without_local(t: pd.DataFrame) -> pd.DataFrame:
    """The byte columns less local-memory traffic: its sectors at L1, those that missed L1 at L2, and
    DRAM's bytes in the share L2's lost (the local-memory rule's reading); unchanged where unknown."""
    missed = [c for c in ("local_load_sectors_missed", "local_store_sectors_missed") if c in t]
    at_l1 = [c for c in ("local_load_sectors", "local_store_sectors") if c in t]
    if not missed and not at_l1:
        return t
    out = t[[f"{level}_bytes" for level in LEVELS]].copy()
    if missed:
        past = t[missed].sum(axis=1, min_count=1) * SECTOR_BYTES
        out["l2_bytes"] = (t["l2_bytes"] - past).clip(lower=0.0).where(past.notna(), t["l2_bytes"])
        out["dram_bytes"] = dram_without_local(t["dram_bytes"], t["l2_bytes"], past)
    if at_l1:
        local = t[at_l1].sum(axis=1, min_count=1) * SECTOR_BYTES
        out["l1_bytes"] = (t["l1_bytes"] - local).clip(lower=0.0).where(local.notna(), t["l1_bytes"])
    return out


def dram_without_local(dram: Any, l2: Any, past_l1: Any) -> Any:
    """DRAM's bytes less their local-memory (spill, stack) part, read as the share of L2's bytes the
    local sectors that missed L1 make up (local bytes are not the kernel's data; which of them reach
    DRAM is not counted, so DRAM loses what L2 loses, in proportion); DRAM where that is unknown.
    Numbers or aligned Series alike: the roofline's headroom and the rules use this one reading."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.minimum(np.asarray(past_l1, dtype=float) / np.asarray(l2, dtype=float), 1.0)
    kept = np.where(np.isnan(share), np.asarray(dram, dtype=float), np.asarray(dram, dtype=float) * (1.0 - share))
    return pd.Series(kept, index=dram.index) if isinstance(dram, pd.Series) else float(kept)


def _memory_terms(t: pd.DataFrame, out: pd.DataFrame) -> pd.DataFrame:
    """The time each memory level's bytes take at its roof."""
    return pd.DataFrame({level: t[f"{level}_bytes"] / out[f"{level}_roof_bytes_per_s"] for level in LEVELS})


def _latency(units: pd.DataFrame, th: Thresholds) -> pd.Series:
    """Well below every limit: the roofline's work under ``latency_pct_of_roof`` of its binding roof
    and no unit (measured busy shares included) at ``sol_busy_pct`` of its peak."""
    roof = units["roofline_share"] * 100.0 >= th.latency_pct_of_roof * (1 - EPS)
    busy = units["binding_unit_share"] * 100.0 >= th.sol_busy_pct * (1 - EPS)
    return ~roof & ~busy


def _per_kernel(t: pd.DataFrame, bound: pd.Series) -> pd.Series:
    """Launches of one kernel with the same grid are judged together: each gets the bound that
    holds most of the group's time (a 9.9 us launch among 10.5 us ones is not launch-bound alone)."""
    keys = [t[k].astype(str) for k in ("report", "device", "kernel", "grid_size") if k in t]
    if not keys or bound.empty:
        return bound
    weight = t["time_s"].fillna(0.0) if t["time_s"].notna().any() else pd.Series(1.0, index=t.index)
    totals = weight.groupby([*keys, bound], sort=False, dropna=False).sum()
    best = totals.groupby(level=list(range(len(keys))), sort=False).idxmax()
    pick = {group: label[-1] for group, label in best.items()}
    codes = np.zeros(len(bound), dtype=np.int64)  # each launch's group, its keys looked up once per group
    for key in keys:
        part, uniques = pd.factorize(key.to_numpy(dtype=object), use_na_sentinel=False)
        codes = pd.factorize(codes * len(uniques) + part)[0]
    firsts = np.unique(codes, return_index=True)[1]
    values = [key.to_numpy(dtype=object) for key in keys]
    groups = [tuple(v[i] for v in values) if len(keys) > 1 else values[0][i] for i in firsts.tolist()]
    chosen = np.array([pick.get(g, _NO_PICK) for g in groups], dtype=object)[codes]
    own = bound.to_numpy(dtype=object)
    return pd.Series(np.where(chosen == _NO_PICK, own, chosen), index=bound.index, dtype="object")


_NO_PICK = object()  # a group without a pick (none: every group has one; each launch keeps its own)


def place(table: pd.DataFrame, ceilings: dict[str, Any] | None = None,
          thresholds: Thresholds | None = None) -> pd.DataFrame:
    """Roofline placement per launch: the tidy table plus roofs, intensities, attainable, bound."""
    th = thresholds or Thresholds()
    t = _one_value_per_peak(table)
    out = pd.concat([_compute_roof(t, ceilings, th), _memory_roofs(t, ceilings, th)], axis=1)
    seconds = t["time_s"].where(t["time_s"] > 0)
    flops = out["roof_flops"]  # the binding precision's FLOPs: those its roof holds (all, in one precision)
    out["achieved_flops_per_s"] = flops / seconds
    attainable = out["peak_flops_per_s"].copy()
    for level in LEVELS:
        bytes_ = t[f"{level}_bytes"]
        out[f"intensity_{level}"] = flops / bytes_.where(bytes_ > 0)
        out[f"achieved_{level}_bytes_per_s"] = bytes_ / seconds
        level_roof = out[f"intensity_{level}"] * out[f"{level}_roof_bytes_per_s"]
        out[f"attainable_{level}_flops_per_s"] = np.fmin(out["peak_flops_per_s"], level_roof)
        attainable = cast(pd.Series, np.fmin(attainable, level_roof))  # a Series in, a Series out
    out["attainable_flops_per_s"] = attainable
    out["ridge_dram"] = out["peak_flops_per_s"] / out["dram_roof_bytes_per_s"]
    has_flops = (flops > 0) & out["attainable_flops_per_s"].notna()
    by_flops = out["achieved_flops_per_s"] / out["attainable_flops_per_s"] * 100.0
    by_bandwidth = out["achieved_dram_bytes_per_s"] / out["dram_roof_bytes_per_s"] * 100.0
    out["pct_of_roof"] = by_flops.where(has_flops, by_bandwidth)
    basis = np.where(by_bandwidth.notna(), "dram bandwidth", None)  # type: ignore[call-overload]  # None is fine
    out["pct_basis"] = pd.Series(np.where(has_flops, "flops", basis), index=t.index, dtype="object")
    units = bind(pd.concat([t, out], axis=1), th.practical_dram_fraction)
    out = pd.concat([out, units], axis=1)
    out["bound"] = _bound(t, out, units, th)
    # above a practical (estimated, not measured) roof the point is *at* the roof: never a negative
    # headroom; ``above_practical_roof`` marks it so outputs can say so (and suggest measuring). The
    # headroom is above the least time the work needs, which the FP64 fixes lower (_least_compute_s)
    # headroom is also above the bytes the work needs: local-memory traffic (spills, stack) is not its data
    compute = out["least_compute_s"].where(out["least_compute_s"].notna(), out["roof_flops"] / out["peak_flops_per_s"])
    least = np.fmax(compute, _memory_terms(_without_local(t), out).max(axis=1, skipna=True))
    out["headroom_s"] = (t["time_s"] - least).clip(lower=0.0)
    out = out.drop(columns="least_compute_s")
    practical = out["dram_roof_src"].fillna("").astype(str).str.contains("practical")
    out["above_practical_roof"] = (out["pct_of_roof"] > 100.0) & practical & out["binding"].eq("dram")
    out["launch_floor_s"] = th.launch_floor_s  # the part of each launch no fix of the kernel wins
    placed = pd.concat([t, out], axis=1)
    placed = pd.concat([placed, block_shape_peers(placed)], axis=1)
    no_roof = out["peak_flops_per_s"].isna() & out["dram_roof_bytes_per_s"].isna() & (
        t["dram_bytes"].notna() | (t["flops"] > 0))
    placed["missing"] = placed["missing"].where(~no_roof, placed["missing"].map(lambda m: f"{m},roof" if m else "roof"))
    return placed
