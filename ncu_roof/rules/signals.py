"""Per-launch signals: one placed-table row (a dict) in, the evidence of one trap out (or None).

Each ``*_signal(row, thresholds)`` looks at one launch and returns a dict of the numbers that make
the trap fire there, or None; its ``relief`` says what the fix removes (:mod:`~ncu_roof.rules.stakes`
turns it into the time at stake). The rules (:mod:`~ncu_roof.rules.traps`, :mod:`~ncu_roof.rules.limiter`)
group launches by kernel and turn the signals into findings; the rules declared a cause (``About.cause``)
let the checklist ask, per launch, whether any trap fires. Signals import no rule module, so the
rule modules import each other only through here (no cycle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ncu_roof.model import roofline
from ncu_roof.model.roofline import EPS, Thresholds, reaches, under
from ncu_roof.model.units import BY_NAME, COUPLED, UNITS, unit_column
from ncu_roof.read.metrics import PIPES
from ncu_roof.rules import screens
from ncu_roof.rules.access import (
    l2_request_path_binds,
    l2_rewrites,
    sector_excess,
    shared_part,
    warp_rows,
    wavefronts_per_request,
)
from ncu_roof.rules.common import (
    Row,
    has_tensor_cores,
    is_convolution,
    is_matrix_kernel,
    known,
    limiter_row,
    ratio,
    screened,
    tiles_in_shared,
    val,
)
from ncu_roof.rules.library import library_of
from ncu_roof.rules.occupancy import occupancy_limiter, smaller_block, tail_loss
from ncu_roof.rules.stakes import SATURATED_SHARE, Relief
from ncu_roof.rules.stalls import memory_waits, stall_shares, tree_waits

_FMA_OPS = {"fp64": ("dfma", "dadd", "dmul"), "fp32": ("ffma", "fadd", "fmul"), "fp16": ("hfma", "hadd", "hmul")}
FP_INST = tuple(f"inst_{op}" for ops in _FMA_OPS.values() for op in ops)  # the FMA/add/mul counts rules read


# --- per-launch signals ---------------------------------------------------------------------
@screened(screens.wave)
def wave_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Few waves with a nearly empty last one: the share of wave slots left idle."""
    waves, grid = val(row, "waves"), val(row, "grid_size")
    if not (waves > 0 and grid > 0):
        return None
    lost = tail_loss(waves)
    if lost == 0 or under(lost, th.wave_tail_min_loss):
        return None
    slots = grid / waves
    return {"slots": slots, "lost_fraction": lost, "tail_blocks": grid - math.floor(waves) * slots,
            "relief": Relief(latency=1.0, share=lost)}


@screened(screens.underfill)
def underfill_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """A grid with fewer blocks than the GPU has SMs: whole SMs sit idle for the whole launch; or a
    grid under one wave whose warps fall short of the occupancy the launch allows (the grid, not the
    resources, limits the warps in flight)."""
    grid, sms = val(row, "grid_size"), val(row, "sm_count")
    if grid >= sms > 0:
        return _under_a_wave(row, th)
    if not (grid > 0 and sms > 0):
        return None
    idle = (sms - grid) / sms  # 64 of 80 SMs: 0.2 exactly here, where 1 - 64/80 is 0.19999999999999996
    if not reaches(idle, th.underfill_min_idle):
        return None
    out = {"idle_fraction": idle, "idle_sms": sms - grid, "relief": Relief(latency=1.0, share=idle)}
    warps, allowed = _grid_warps(row)
    # one block an SM: the busy SMs hold a block's warps each, all but empty too where that is few
    if known(allowed) and warps / grid < FEW_WARPS_SHARE * allowed / sms:
        out |= {"grid_warps": warps, "warps_allowed": allowed,
                "relief": Relief(latency=1.0, share=1.0 - warps / allowed)}
    return out


FEW_WARPS_SHARE = 0.25  # a block holding under this share of the warps an SM allows the launch


@screened(screens.idle_warps)
def idle_warps_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Most of the grid's warps never load or store global memory: its global load and store warp
    instructions (each warp that touches memory issues one at least) fall under ``1 - idle_warp_share``
    of its warps. A grid far larger than its data, or an index mapping that leaves most threads out of
    range. Not where warps cooperate through shared memory or tensor cores (one warp of a block may
    load for all). The fix launches only the working warps: each took no less of the launch than an idle
    one, so the time after is at least their share of today's."""
    warps, _ = _grid_warps(row)
    touching = val(row, "global_load_inst") + val(row, "global_store_inst")
    shared = val(row, "shared_requests")
    cooperates = shared > 0 if known(shared) else tiles_in_shared(row)  # unknown: by its shared memory per block
    if not (warps > 0 and touching >= 0) or cooperates or val(row, "pipe_tensor_pct") > 0:
        return None
    idle = 1.0 - touching / warps
    if not reaches(idle, th.idle_warp_share) or row.get("bound") == "overhead":
        return None
    return {"warps": warps, "memory_warp_inst": touching, "idle_warp_share": idle,
            "relief": Relief(rewrite_s=val(row, "time_s") * (1.0 - idle))}


def _grid_warps(row: Row) -> tuple[float, float]:
    """(the grid's warps, the warps the launch allows on the whole GPU at once: its theoretical
    occupancy of every SM's warp slots); NaN where a count is unknown."""
    grid, block = val(row, "grid_size"), val(row, "block_size")
    slots = val(row, "theoretical_occupancy_pct") / 100.0 * val(row, "max_warps_per_sm") * val(row, "sm_count")
    warps = grid * math.ceil(block / 32.0) if block > 0 else math.nan
    return warps, (slots if slots > 0 and warps > 0 else math.nan)


def _under_a_wave(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """A grid under one wave: its warps fall short of the occupancy the launch allows; where the unit
    that binds is saturated while the SMs work (:data:`SATURATED_SHARE` of its peak over their
    active cycles), more warps cannot help: what is lost is the time SMs sit idle, their blocks done
    while others run one more (256 blocks on 80 SMs: 16 run 4, 64 run 3)."""
    waves = val(row, "waves")
    achieved, theoretical = val(row, "achieved_occupancy_pct"), val(row, "theoretical_occupancy_pct")
    if not (waves > 0 and grid_limited(row) and theoretical > 0) or not limiter_row(row, th.at_roof_pct):
        return None
    short = 1.0 - achieved / theoretical
    if not under(achieved / theoretical, th.low_occupancy_ratio):
        return None
    active = ratio(val(row, "sm_active_cycles"), val(row, "sm_cycles"))
    busy = val(row, "binding_unit_share") / active if known(active) and 0 < active <= 1 else math.nan
    if reaches(busy, SATURATED_SHARE):
        idle = 1.0 - active
        if not reaches(idle, th.underfill_min_idle):
            return None
        return {"idle_fraction": idle, "idle_sms": 0.0, "uneven": val(row, "grid_size") / val(row, "sm_count"),
                "busy_active": busy, "relief": Relief(latency=1.0, share=idle)}
    return {"idle_fraction": 0.0, "idle_sms": 0.0, "waves": waves, "slots": val(row, "grid_size") / waves,
            "warps_missing": short, "relief": Relief(latency=1.0, share=short)}


@screened(screens.uncoalesced)
def uncoalesced_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Global accesses that fetch more sectors than the data needs; the fix removes the extra sectors
    from L1/TEX and L2 (DRAM moves whole sectors either way: the caches absorb most of the waste), and
    on a launch waiting on its loads, the same share of the long-scoreboard waits (a load waits for
    every sector it asks for)."""
    excess = sector_excess(row, th)
    if excess is None:
        rewrites = l2_rewrites(row, th)
        return None if rewrites is None else {  # a chart-only report: L2's view of the stores
            "excess": rewrites["excess"], "bytes_used_per_sector": 32.0 / rewrites["excess"], "l2_view": rewrites,
            "relief": Relief(removes={"l2": rewrites["l2_share"]}, waits=memory_waits(row))}
    waste = 1.0 - 1.0 / excess
    # L1's data stage also serves shared memory: the extra sectors are a share of its global part only
    shared = shared_part(row)
    global_part = 1.0 - shared if known(shared) else 1.0
    return {"excess": excess, "bytes_used_per_sector": 32.0 / excess,
            "relief": Relief(removes={"l1": waste * global_part, "l2": waste}, latency=_load_wait(row) * waste,
                             waits=memory_waits(row))}


def _load_wait(row: Row) -> float:
    """The long-scoreboard share of the stalls, times the global loads' share of the global sectors
    (stores wait for nothing) and of the loads that wait there (local loads wait too)."""
    shares, _ = stall_shares(row)
    waits = shares.get("long_scoreboard", 0.0)
    loads, stores = val(row, "global_load_sectors"), val(row, "global_store_sectors")
    if waits > 0 and loads > 0 and stores > 0:
        waits *= loads / (loads + stores)
    local, global_ = val(row, "local_load_inst"), val(row, "global_load_inst")
    if waits > 0 and local > 0 and global_ > 0:
        waits *= global_ / (global_ + local)
    return float(waits)


@screened(screens.bank_conflict)
def bank_conflict_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    conflicts, wavefronts = val(row, "shared_bank_conflicts"), val(row, "shared_wavefronts")
    if not (wavefronts > 0 and conflicts > 0):
        return None
    share = conflicts / wavefronts
    if under(share, th.bank_conflict_share):
        return None
    needed = max(wavefronts - conflicts, 1.0)
    # the extra wavefronts leave the shared-memory pipe and, as its part of them, the L1 data stage
    l1_share = ratio(val(row, unit_column("l1")), val(row, "time_s")) * 100.0
    shared_pct = val(row, "shared_pipe_pct")
    of_l1 = min(share * shared_pct / l1_share, 1.0) if shared_pct >= 0 and l1_share > 0 else share
    return {"conflict_share": share, "wavefronts_per_needed": wavefronts / needed,
            "relief": Relief(removes={"shared": share, "l1": of_l1}, waits=memory_waits(row))}


@screened(screens.occupancy)
def occupancy_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Below its limit (or with no unit measured) with warps missing: achieved far under theoretical,
    a low theoretical occupancy, or a latency-bound launch whose limiting resource, relaxed, gives
    ``occupancy_gain`` times the warps (not a library kernel at its own theoretical occupancy: its tiles
    were sized for it). Names the limiter and what relaxing it gives; silent where the
    grid itself cannot fill the SMs at today's occupancy (more blocks per SM need more blocks)."""
    achieved, theoretical = val(row, "achieved_occupancy_pct"), val(row, "theoretical_occupancy_pct")
    if not (achieved == achieved and theoretical > 0) or not limiter_row(row, th.at_roof_pct):
        return None
    if grid_limited(row):
        return None
    occ = achieved / theoretical
    limiter, relax = occupancy_limiter(row)
    gain = relax["warps_after"] / relax["warps_now"] if relax else np.nan
    runtime_short = under(occ, th.low_occupancy_ratio)
    theory_low = under(theoretical, th.low_theoretical_occupancy_pct)
    latency_gain = row.get("bound") == "latency" and reaches(gain, th.occupancy_gain)
    if not (runtime_short or theory_low or latency_gain):
        return None
    if not runtime_short and library_of(row) is not None:
        return None  # a library kernel at the occupancy its tiles were built for: its design, not a cause
    if not theory_low and not latency_gain and underfill_signal(row, th) is not None:
        return None  # too few blocks for the SMs: grid-underfill names the cause
    if relax and relax.get("spill_risk"):  # a register cap that spills a register tile wins nothing
        theory_low = latency_gain = False
        if not runtime_short:
            return None
    theory = theory_low or latency_gain
    # the share of the time more warps could win: the missing run-time warps, or the warps relaxing gives
    share = max(1.0 - occ if runtime_short else 0.0, 1.0 - 1.0 / gain if theory and gain == gain else 0.0)
    share = share if share > 0 else 1.0 - occ
    return {"achieved_over_theoretical": occ, "limiter": limiter, "runtime_short": runtime_short,
            "theory_limited": theory, "share": share, **(relax or {}),
            "relief": Relief(latency=1.0, share=max(share, 0.0))}


def grid_limited(row: Row) -> bool:
    """A grid of at most one wave: every block is resident from the start, so more blocks per SM
    (fewer registers, less shared memory) cannot add warps; only more blocks can."""
    waves = val(row, "waves")
    return bool(waves == waves and waves <= 1.0 + EPS)


@screened(screens.divergence)
def divergence_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Warps running part of their lanes: threads per warp instruction under ``divergence_threads``, priced by
    the idle lanes' share of the warp instructions; where only ncu's branch uniformity is measured (a
    ``--metrics`` export), branch targets that split warps, priced as at most every instruction's work (how
    many lanes sit idle after a split is not measured)."""
    if row.get("bound") == "overhead":
        return None
    tpi = val(row, "threads_per_inst")
    if not known(tpi):
        uniform = val(row, "branch_uniform_pct")  # 0 where the kernel has no branch: no evidence
        if not (uniform > 0 and under(uniform, th.divergence_uniform_branch_pct)):
            return None
        removes = {"issue": 1.0, **{f"pipe_{p}": 1.0 for p in PIPES}}
        return {"active_lane_fraction": np.nan, "branch_uniform_share": uniform / 100.0,
                "relief": Relief(removes=removes)}
    if not under(tpi, th.divergence_threads):
        return None  # on its roof too: the price (0 where the pipes do not bind) says whether it matters
    idle = 1.0 - tpi / 32.0  # packing the active threads into full warps: this share of warp instructions goes
    removes = {"issue": idle, **{f"pipe_{p}": idle for p in PIPES}}
    return {"active_lane_fraction": tpi / 32.0, "relief": Relief(removes=removes, share=idle)}


def _peak(row: Row, precision: str) -> float:
    """A CUDA-core FMA peak: the report's, else the device table's."""
    value = val(row, f"peak_{precision}_flops_per_s")
    if value > 0:
        return value
    from ncu_roof import devices

    spec = devices.lookup(row.get("device") if isinstance(row.get("device"), str) else None)
    table = getattr(spec, f"{precision}_flops_per_s", None) if spec is not None else None
    return float(table) if table else np.nan


def fp64_rate(row: Row) -> float:
    """The FP64 peak as a share of FP32's (1/64 on GeForce parts, 1/2 on datacenter ones; NaN unknown)."""
    return _peak_ratio(row)


def _peak_ratio(row: Row) -> float:
    """FP64/FP32 peak ratio from the report's peaks, else from the device table."""
    return ratio(_peak(row, "fp64"), _peak(row, "fp32"))


def _fp64_warp_share(row: Row) -> float:
    """FP64 warp instructions over all warp instructions (0 where unknown)."""
    fp64 = sum(val(row, f"inst_{op}") for op in _FMA_OPS["fp64"]) / 32.0
    every = val(row, "warp_inst_executed")
    return min(fp64 / every, 1.0) if fp64 > 0 and every > 0 else 0.0


@screened(screens.fp64)
def fp64_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """The FP64 pipe is the limiter: FP64 runs below the FP32 rate (1/64 consumer, 1/2 datacenter) and
    the FP64 work at its peak takes ``fp64_time_share`` of the time, or the FP64 pipe is that busy.

    The fix: on a consumer rate, FP32 (the FP64 pipe's work moves to the FMA pipe at the FP32 rate);
    on a datacenter rate, fewer FP64 operations: the division chains where divisions are a large
    share, else FP64 work until the next unit binds."""
    f64, t = val(row, "flops_fp64"), val(row, "time_s")
    r64, pipe = _peak_ratio(row), val(row, "pipe_fp64_pct")
    if not (t > 0 and r64 == r64 and under(r64, 1.0)) or not (f64 > 0 or pipe > 0):
        return None
    t64 = f64 / _peak(row, "fp64") if f64 > 0 else np.nan
    consumer = r64 <= th.consumer_fp64_ratio + EPS
    # on a consumer rate (1/32, 1/64) the FP64 pipe as the binding unit is enough, however busy
    binding = consumer and row.get("binding_unit") == "pipe_fp64"
    if not (reaches(t64, th.fp64_time_share * t) or reaches(pipe, th.fp64_pipe_busy_pct) or binding):
        return None
    if not consumer and not limiter_row(row, th.at_roof_pct):
        return None  # datacenter rate on its limit: FP64 is not what holds it back
    flops = val(row, "flops")
    of_flops = min(f64 / flops, 1.0) if f64 > 0 and flops > 0 and row.get("compute_precision") == "fp64" else 0.0
    share = division_share(row)
    pipe_time = val(row, unit_column("pipe_fp64"))
    pipe_time = pipe_time if known(pipe_time) else t64
    if consumer:
        fix = "fp32"
        relief = Relief(removes={"pipe_fp64": 1.0, "flops": of_flops * (1.0 - r64)},
                        adds={"pipe_fma": pipe_time * r64} if known(pipe_time) else {})
    elif reaches(share, th.fp64_division_share):
        fix = "divisions"
        relief = Relief(removes={"pipe_fp64": share, "flops": of_flops * share,
                                 "issue": share * _fp64_warp_share(row)})
    else:
        fix = "fewer"
        relief = Relief(removes={"pipe_fp64": 1.0, "flops": of_flops})
    return {"fp64_over_fp32_peak": r64, "fp64_time_at_roof_s": t64, "fp64_pipe_pct": pipe,
            "fp64_divisions": val(row, "inst_fp64_rcp"), "division_share": share, "fix": fix, "relief": relief}


_FMA_PIPE = {"fp64": "pipe_fp64", "fp32": "pipe_fma", "fp16": "pipe_fp16"}


@screened(screens.no_fma)
def no_fma_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Adds and multiplies that could be FMAs, on a launch whose FP work matters: an FMA takes one
    multiply and one add, so at most min(adds, multiplies) pairs fuse (adds of converted or loaded
    values, with no multiply of the same precision, fuse with nothing); the fix takes one instruction of
    each pair off the pipe and the issue slots and raises the FLOP roof toward the FMA peak."""
    precision = row.get("compute_precision")
    if precision not in _FMA_OPS:
        return None
    fma, add, mul = (val(row, f"inst_{op}") for op in _FMA_OPS[str(precision)])
    inst, t = fma + add + mul, val(row, "time_s")
    peak = _peak(row, str(precision))
    pairs = min(add, mul)
    if not (inst > 0 and t > 0 and peak > 0) or under(2.0 * pairs / inst, th.no_fma_min_unfused):
        return None
    weight = 4.0 if precision == "fp16" else 2.0  # FLOPs per FMA: the peak is FMAs x weight
    if under(weight * inst / peak, th.fp_time_share * t):
        return None
    if row.get("binding") != "compute" and not limiter_row(row, th.at_roof_pct):
        return None  # memory-bound on its roof: the instruction mix is not what limits it
    fused = pairs / inst
    every = val(row, "warp_inst_executed")
    issue = min(fused * inst / 32.0 / every, 1.0) if every > 0 else 0.0
    roof = val(row, "peak_flops_per_s")
    pipe = _FMA_PIPE[str(precision)]
    if precision == "fp16" and not known(val(row, unit_column(pipe))):
        pipe = "pipe_fma"
    removes = {pipe: fused, "issue": issue, "flops": max(1.0 - roof / peak, 0.0) if roof > 0 else 0.0}
    return {"fma_fraction": fma / inst, "unfused_fraction": (add + mul) / inst, "fusable_fraction": 2.0 * pairs / inst,
            "fma_peak_flops_per_s": peak,
            "relief": Relief(removes=removes)}


# --- impossible points ----------------------------------------------------------------------
@screened(screens.above_dram)
def above_dram_signal(row: Row, th: Thresholds) -> dict[str, float] | None:
    """Bytes per second (measured, or the algorithmic count over the time) above the DRAM peak."""
    peak = max((v for v in (val(row, "dram_peak_bytes_per_s"), val(row, "dram_roof_bytes_per_s")) if v == v),
               default=math.nan)
    t = val(row, "time_s")
    if not (peak > 0 and t > 0):
        return None
    measured = val(row, "achieved_dram_bytes_per_s")
    counted = val(row, "alg_bytes") / t
    worst = max(v for v in (measured, counted, 0.0) if v == v)
    if worst <= th.above_peak_tolerance * peak:
        return None
    return {"bytes_per_s": float(worst), "over_peak": float(worst / peak), "basis": float(counted == worst)}


def division_share(row: Row) -> float:
    """About the share of the FP64 work that divisions take (:func:`ncu_roof.model.roofline.division_share`)."""
    return float(roofline.division_share(*(val(row, c) for c in ("inst_fp64_rcp", "inst_dfma", "inst_dadd",
                                                                 "inst_dmul"))))


# --- per-launch signals ---------------------------------------------------------------------
def busiest_pipe(row: Row) -> tuple[str, float] | None:
    """The pipe with the highest utilisation (% of peak over active cycles), where any is known."""
    known_pipes = [(p, val(row, f"pipe_{p}_pct")) for p in PIPES if known(val(row, f"pipe_{p}_pct"))]
    return max(known_pipes, key=lambda x: x[1]) if known_pipes else None


# binding units other rules speak for: the roofline's roofs (at-roof, below-roof, fuse-extra-bytes)
# and ncu's compute/memory throughput (speed-of-light-only)
_NOT_HERE = ("dram", "flops", "sm", "memory")


def binding_unit_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """The binding unit is one the roofline does not draw (L1/TEX, L2 or shared-memory throughput,
    the issue slots, a pipe) and is ``busy_pipe_pct`` busy: relieving it alone wins at most the time
    until the next unit binds."""
    unit, share = row.get("binding_unit"), val(row, "binding_unit_share")
    if not isinstance(unit, str) or unit in _NOT_HERE or row.get("bound") not in ("memory", "compute"):
        return None  # latency-bound: no unit is near its limit (the stall and occupancy rules speak)
    if not reaches(share * 100.0, th.busy_pipe_pct):
        return None
    coupled_units = COUPLED.get(unit, ())
    if unit == "l1" and l2_request_path_binds(row):  # L1's requests out are L2's input: fewer of them relieve both
        coupled_units = (*coupled_units, "l2")
    relieved = (unit, *coupled_units)  # the units serving the same accesses lose their work with it
    # An instruction pipe takes the issue slots with it: each of its instructions takes a slot and it accepts
    # at most one a cycle on a scheduler, so its instructions may fill as many slots as it is busy, which, as it
    # binds, is every slot used. A stake is a bound ("wins at most"): the pipe's own rate (an ALU takes one
    # instruction every other cycle on most GPUs), which would leave some slots, is not assumed.
    issued = unit.startswith("pipe_") and known(val(row, unit_column("issue")))
    slots = ("issue",) if issued else ()
    relieved = (*relieved, *slots)
    if "next_binding_unit" in row and row.get("next_binding_unit") not in relieved:  # the placed table's
        runner = row.get("next_binding_unit")
        runner, runner_share = (runner if isinstance(runner, str) else None), val(row, "next_binding_share")
    else:
        others = {u: val(row, unit_column(u)) for u in _UNIT_NAMES if u not in relieved and not BY_NAME[u].coarse}
        others = {u: v for u, v in others.items() if known(v)}
        runner = max(others, key=lambda u: others[u]) if others else None
        t = val(row, "time_s")
        runner_share = others[runner] / t if runner and t > 0 else np.nan
    coupled = tuple(u for u in coupled_units if known(val(row, unit_column(u))))
    per_request, rows = wavefronts_per_request(row), warp_rows(row)
    # a warp over several rows of a narrow block touches a segment per row: two wavefronts a request tell
    serialized = unit in ("l1", "pipe_lsu") and reaches(
        per_request, th.serialized_wavefronts_per_request if rows < 2 else th.split_warp_wavefronts_per_request)
    return {"unit": unit, "unit_share": share, "next_unit": runner, "next_unit_share": runner_share,
            "coupled": coupled, "wavefronts_per_request": per_request, "serialized": serialized,
            "warp_rows": rows, "issue_relieved": issued,
            "relief": Relief(removes=dict.fromkeys((unit, *coupled, *slots), 1.0))}


def stall_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """The dominant stall reasons of a launch that leaves issue slots idle, below its roof."""
    shares, family = stall_shares(row)
    if not shares or not limiter_row(row, th.at_roof_pct):
        return None
    issue = val(row, "issue_active")
    if known(issue) and not under(issue, th.low_issue_active) and row.get("bound") != "latency":
        return None
    top = [r for r, s in shares.items() if reaches(s, th.stall_dominant_share)][:2]
    if not top:
        return None
    idle = 1.0 - issue if known(issue) else shares[top[0]]
    # a reduction tree's fix (several elements a thread) removes its steps, issued or waited for: a rewrite,
    # whose time after is the kernel's bound at its roof
    floor = val(row, "time_lower_bound_s") if tree_waits(row, top[0]) else math.nan
    relief = Relief(rewrite_s=floor) if known(floor) else Relief(latency=1.0, share=max(idle, 0.0))
    return {"reasons": top, "shares": [shares[r] for r in top], "family": family, "idle_issue_share": idle,
            "relief": relief}


@screened(screens.block_size)
def block_size_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """A block size that is not a multiple of 32 (idle lanes in its last warp), or so small that the
    per-SM block limit leaves warp slots empty; or, measured, a block shape the same kernel ran faster
    than over the same threads (``shape_peer_time_s``: priced as that time, whatever the units say)."""
    block, t, peer = val(row, "block_size"), val(row, "time_s"), val(row, "shape_peer_time_s")
    if block > 0 and peer < t:  # measured: the same kernel over the same threads, faster in another shape
        return {"warps_per_block": math.ceil(block / 32), "idle_lane_share": 0.0, "slot_fill": math.nan,
                "share": 1.0 - peer / t, "smaller": None, "peer_s": peer, "peer_block": row.get("shape_peer_block"),
                "relief": Relief(rewrite_s=peer)}
    if not (block > 0) or not limiter_row(row, th.at_roof_pct):
        return None
    warps = math.ceil(block / 32)
    lanes_idle = 1.0 - block / (32 * warps)
    limit, max_warps = val(row, "occupancy_limit_blocks"), val(row, "max_warps_per_sm")
    fill = limit * warps / max_warps if limit > 0 and max_warps > 0 else math.nan
    too_small = known(fill) and under(fill, th.block_slots_fill)
    smaller = smaller_block(row, th)
    if lanes_idle <= 0 and not too_small and smaller is None:
        return None
    share = max(lanes_idle, 1.0 - fill if too_small else 0.0, smaller["share"] if smaller else 0.0)
    return {"warps_per_block": warps, "idle_lane_share": lanes_idle, "slot_fill": fill, "share": share,
            "smaller": smaller, "relief": Relief(latency=1.0, share=share)}


CONV_NEAR_ROOF_PCT = 50.0  # a convolution's roofline point this near its CUDA-core roof: tensor cores may matter


def no_tensor_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Matrix math (a GEMM/convolution by its name) on the CUDA cores of a GPU with tensor cores, where a
    higher roof can shorten it: not latency-bound (no unit near its limit: a higher roof changes nothing);
    a convolution at least ``CONV_NEAR_ROOF_PCT`` of its roof (its output channels, which decide what tensor
    cores give, are not in the counters, and one far under its roof has nearer limits)."""
    if not is_matrix_kernel(row) or row.get("compute_precision") not in ("fp32", "fp16"):
        return None
    if row.get("bound") == "latency" or (is_convolution(row) and not reaches(val(row, "pct_of_roof"),
                                                                                CONV_NEAR_ROOF_PCT)):
        return None
    tensor = val(row, "flops_tensor")
    if tensor > 0 or not has_tensor_cores(row):
        return None
    return {"precision": row.get("compute_precision")}


_UNIT_NAMES = tuple(u.name for u in UNITS)

