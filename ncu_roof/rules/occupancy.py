"""What sets a launch's blocks per SM, and what a change gives: the resource to relax (registers, shared
memory) and by how much, or a smaller block where a large one strands warp slots; and what another block
shape of the same kernel measured."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ncu_roof.fmt import fmt_seconds
from ncu_roof.model.roofline import Thresholds, reaches, under
from ncu_roof.rules.common import Row, fmt_count, limiter_row, val
from ncu_roof.rules.stakes import SATURATED_SHARE
from ncu_roof.rules.stalls import stall_shares

SPILL_RISK_REGISTERS = 64  # a kernel using this many registers per thread likely keeps a tile in them
SPILL_RISK_CUT = 0.75  # ...and a cap under this share of its use likely spills
SPILL_RISK_HALF = 0.6  # a cap under this share of any kernel's registers likely spills (jacobi: 62 -> 32)


def occupancy_limiter(row: Row) -> tuple[str, dict[str, float] | None]:
    """The resource(s) that set the blocks per SM, and for registers or shared memory what it takes
    to reach the next limit: the most registers per thread (or shared bytes per block) and the warps."""
    have = _limits(row)
    if not have:
        return "unknown", None
    lowest = min(have.values())
    limiter = ", ".join(k.replace("_", " ") for k, v in have.items() if v == lowest)
    block, max_warps = val(row, "block_size"), val(row, "max_warps_per_sm")
    others = [v for k, v in have.items() if v > lowest]
    if limiter not in ("registers", "shared mem") or not (block > 0 and max_warps > 0) or not others:
        return limiter, None
    warps_per_block = math.ceil(block / 32)
    target = min(min(others), math.floor(max_warps / warps_per_block))
    grid, sms = val(row, "grid_size"), val(row, "sm_count")
    if grid > 0 and sms > 0:  # no more blocks per SM than the grid gives each SM
        target = min(target, math.ceil(grid / sms))
    if target <= lowest:
        return limiter, None
    regs = val(row, "max_registers_per_sm")
    if limiter == "registers" and regs > 0:
        # the most blocks per SM whose register cap does not likely spill (the next limit's may: jacobi's
        # 62 -> 32 for 8 blocks, where 6 blocks need only 40); the next limit's, at risk, where none is safe
        safe = [n for n in range(int(target), int(lowest), -1)
                if not _spills(row, _register_cap(regs, n, warps_per_block))]
        target = safe[0] if safe else target
    relax = {"blocks_now": lowest, "blocks_after": float(target), "warps_now": lowest * warps_per_block,
             "warps_after": float(target * warps_per_block)}
    if limiter == "registers":
        if regs > 0:
            relax["registers_per_thread_after"] = _register_cap(regs, target, warps_per_block)
            relax["spill_risk"] = _spills(row, relax["registers_per_thread_after"])
    else:
        smem = val(row, "max_shared_mem_per_sm")
        if smem > 0:
            relax["shared_mem_per_block_after"] = float(smem / target)
    return limiter, relax


def _limits(row: Row) -> dict[str, float]:
    """ncu's occupancy limits of the launch that are known: blocks per SM by each resource."""
    limits = {k: val(row, f"occupancy_limit_{k}") for k in ("registers", "shared_mem", "warps", "blocks", "barriers")}
    return {k: v for k, v in limits.items() if v == v}


def blocks_per_sm(row: Row) -> float:
    """The blocks an SM holds at once, the least of the known occupancy limits (NaN where none is)."""
    return min(_limits(row).values(), default=math.nan)


def _register_cap(registers_per_sm: float, blocks: float, warps_per_block: int) -> float:
    """The most registers a thread may use for ``blocks`` blocks per SM (allocated per warp, 256 at a
    time: 8 per thread)."""
    return float(math.floor(registers_per_sm / (blocks * warps_per_block * 32) / 8) * 8)


def _spills(row: Row, cap: float) -> bool:
    """Whether capping the kernel's registers at ``cap`` likely spills: a register-tiled kernel (64 or more)
    cut under :data:`SPILL_RISK_CUT` of its use, any kernel under :data:`SPILL_RISK_HALF`, or one that
    already spills (local memory) under any lower cap."""
    used = val(row, "registers_per_thread")
    return bool((used >= SPILL_RISK_REGISTERS and cap < SPILL_RISK_CUT * used) or cap < SPILL_RISK_HALF * used
                or val(row, "local_load_sectors") > 0)


def tail_loss(waves: float) -> float:
    """The share of a grid's wave slots its last, partial wave leaves idle (0 for whole waves or a
    grid under one wave): 1.07 waves leave (1 - 0.07) / 2 = 47%."""
    whole, partial = math.floor(waves), waves - math.floor(waves)
    return 0.0 if whole < 1 or partial < 1e-6 else (1.0 - partial) / (whole + 1)


def tail_relaxed(row: Row) -> dict[str, Any] | None:
    """For a wave tail set by registers or shared memory: the blocks per SM relaxing it gives (no
    likely spill), the slots, waves and idle share then, where that idles at most half today's
    slots (one_d_vec: 71 registers fit 3 blocks, 240 slots for 256 blocks; 64 fit 4, one wave)."""
    limiter, relax = occupancy_limiter(row)
    grid, sms, waves = val(row, "grid_size"), val(row, "sm_count"), val(row, "waves")
    if not relax or relax.get("spill_risk") or not (grid > 0 and sms > 0 and waves > 0):
        return None
    slots = relax["blocks_after"] * sms
    lost = tail_loss(grid / slots)
    if lost > tail_loss(waves) / 2:
        return None
    return {**relax, "limiter": limiter, "slots_after": slots, "waves_after": grid / slots, "lost_after": lost}


SMALLER_BLOCKS = (128, 256, 512)  # the block sizes a large block is weighed against
THROTTLES = ("math_pipe_throttle", "tex_throttle", "mio_throttle", "lg_throttle")  # a full pipe or queue
THROTTLED_SHARE = 0.5  # throttle stalls at or above this share of the stalls: more warps add nothing


def smaller_block(row: Row, th: Thresholds) -> dict[str, float] | None:
    """A large block whose registers leave warp slots no whole block fits (1,024 threads at 45 registers:
    one block, 32 of 48 warps; 256-thread blocks fit 5, 40 warps), on a launch no unit saturates: the
    smaller size giving ``occupancy_gain`` times the warps, at the same registers a thread and shared
    memory a block (registers are allocated per warp, 256 at a time). Unsaid where no unit is measured:
    a launch its memory or a pipe saturates gains nothing from more warps."""
    block, regs = val(row, "block_size"), val(row, "registers_per_thread")
    per_sm, max_warps, max_blocks = (val(row, c) for c in ("max_registers_per_sm", "max_warps_per_sm",
                                                          "max_blocks_per_sm"))
    limits = [val(row, f"occupancy_limit_{k}") for k in ("blocks", "registers", "warps", "shared_mem")]
    if not (block >= max(SMALLER_BLOCKS) and regs > 0 and per_sm > 0 and max_warps > 0 and max_blocks > 0
            and all(x > 0 for x in limits)) or not limiter_row(row, th.at_roof_pct):
        return None
    # more warps hide latency: only where the units measured show none saturated, and no full queue or
    # pipe (a throttle stall) holds most of the stalls: there more warps only wait in the same queue
    if row.get("bound") != "latency" and not under(val(row, "binding_unit_share"), SATURATED_SHARE):
        return None
    shares, _ = stall_shares(row)
    if sum(shares.get(r, 0.0) for r in THROTTLES) >= THROTTLED_SHARE:
        return None
    per_warp = math.ceil(regs * 32 / 256) * 256
    now = min(limits) * math.ceil(block / 32)

    # shared memory: the SM's most at today's bytes a block (the carveout follows the blocks' need: ncu's
    # limit of 1 for 1,024-thread blocks at 5 kB each is the warps' limit, not the memory's)
    shared, shared_sm = val(row, "shared_mem_per_block"), val(row, "max_shared_mem_per_sm")
    by_shared = max(limits[3], shared_sm // shared) if shared > 0 and shared_sm > 0 else limits[3]

    def warps_with(size: int) -> float:
        w = size // 32
        return min(per_sm // (per_warp * w), max_warps // w, max_blocks, by_shared) * w

    best = max((s for s in SMALLER_BLOCKS if s < block), key=lambda s: (warps_with(s), s))  # ties: the larger
    after = warps_with(best)
    if not reaches(after / now, th.occupancy_gain):
        return None
    return {"block_after": float(best), "warps_now": float(now), "warps_after": float(after),
            "share": 1.0 - now / after}


def one_block_size(rows: pd.DataFrame, signals: list[dict[str, Any]], ctx: Any  # a Context: base imports us
                   ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The launches one block-size finding speaks for: every shape the same kernel ran faster in another
    shape (measured, one price for the kernel), else the first flagged block size's."""
    peered = [i for i, s in enumerate(signals) if "peer_s" in s]
    size = rows["block_size"].to_numpy()
    keep = peered or [i for i in range(len(rows)) if size[i] == size[0]]
    return rows.iloc[keep], [signals[i] for i in keep]


def shape_peer_text(rows: pd.DataFrame, signal: dict[str, Any]) -> str:
    """'the same kernel over the same 1.05M threads ran in 20 us a launch with (16, 32, 1) blocks; 64.9 us
    with (32, 32, 1), 49.7 us with (32, 16, 1)': the peer shape's median time, then each slower shape's."""
    first = rows.iloc[0]
    threads = val(first, "block_size") * val(first, "grid_size")
    shapes = rows.groupby("block_dim", sort=False)["time_s"].median()
    slower = ", ".join(f"{fmt_seconds(t)} with {dim}" for dim, t in shapes.sort_values(ascending=False).items())
    return (f"the same kernel over the same {fmt_count(threads)} threads ran in {fmt_seconds(signal['peer_s'])} a "
            f"launch with {signal['peer_block']} blocks; {slower}: the shape sets which threads are neighbours (how "
            "accesses coalesce) and the blocks per SM")
