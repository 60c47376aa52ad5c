"""The ideal point without a sidecar: what the reports themselves say a launch could need.

- ``same-work-peer``: another kernel of the reports given together does the same work (same
  device, same compute precision, FLOPs within :data:`FLOP_TOLERANCE`, 64 FLOPs per thread or more:
  elementwise kernels share FLOP counts without sharing work) faster: an achieved ideal.
  Its fix brings every unit down to what the peer needs for that work; the stake never exceeds
  the time the peer saves (its measured time, scaled to this launch's FLOPs).
- ``matrix-reuse``: matrix-shaped work (a GEMM or convolution by name, tensor-core work, or a dot
  product per thread: nearly pure FMAs, 256 FLOPs or more per thread, operands re-read through L1)
  moving :data:`MATRIX_EXTRA` times or more the DRAM bytes of a square matmul of the same FLOPs
  (3 N² elements for 2 N³ FLOPs), and :data:`MATRIX_OVER_TILED` times what a kernel with 128 x 128
  block tiles would move (each operand read N / 128 times, no reuse in L2 assumed): its operands are
  re-read from DRAM. The fix is tiling; the stake assumes that kernel.

Both are checklist step 3 (the real point left of the ideal one) where no algorithmic counts exist.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds, fmt_si
from ncu_roof.model.chains import find_chains
from ncu_roof.model.roofline import Thresholds, dram_without_local
from ncu_roof.model.units import READS as UNIT_READS
from ncu_roof.model.units import UNITS, unit_column
from ncu_roof.model.units import label as unit_label
from ncu_roof.rules.base import About, Context, Finding, make
from ncu_roof.rules.common import (
    Row,
    evidence,
    fmt_count,
    is_convolution,
    is_matrix_kernel,
    known,
    launches_text,
    local_bytes_past_l1,
    name_of,
    ratio,
    tiles_in_shared,
    total,
    val,
)
from ncu_roof.rules.engine import Hit, per_group, per_item, per_kernel, unless
from ncu_roof.rules.library import fix_text, library_of
from ncu_roof.rules.run import RuleRun
from ncu_roof.rules.signals import FP_INST, uncoalesced_signal
from ncu_roof.rules.stakes import UNIT_COLUMNS, Relief
from ncu_roof.rules.stalls import memory_waits

FLOP_TOLERANCE = 0.10  # two launches do the same work when their FLOPs differ by at most this share
PEER_MIN_GAIN = 0.10  # ...and the peer is named when it takes at most 1 - this of the time per FLOP
PEER_FLOPS_PER_THREAD = 64.0  # only kernels doing this many FLOPs per thread: elementwise kernels on one
# tensor share FLOP counts without doing the same work
MATRIX_EXTRA = 4.0  # DRAM bytes over a square matmul's of the same FLOPs at or above this: operands re-read
MATRIX_OVER_TILED = 1.5  # ...and this many times what a kernel of 128 x 128 block tiles would move
MATRIX_FMA_SHARE = 0.9  # FP work of this share of FMAs (or more)...
MATRIX_FLOPS_PER_THREAD = 256.0  # ...and this many FLOPs per thread (a dot product of 128) counts as matrix-shaped
TILE = 128  # the block tile the matrix-reuse stake assumes
_ELEMENT_BYTES = {"fp64": 8.0, "fp32": 4.0, "fp16": 2.0, "tensor": 2.0}
_FMA = {"fp64": ("dfma", "dadd", "dmul"), "fp32": ("ffma", "fadd", "fmul"), "fp16": ("hfma", "hadd", "hmul")}


# --- same work, done faster elsewhere ----------------------------------------------------------
def peer_of(placed: pd.DataFrame) -> dict[Any, Any]:
    """For each launch, the index of the fastest launch (time per FLOP) of another kernel on the
    same device with the same compute precision and FLOPs within the tolerance; only launches whose
    FLOPs per thread mark real arithmetic work (``PEER_FLOPS_PER_THREAD``). Launches of one kernel
    with one FLOP count are judged as one (its fastest launch stands for them)."""
    cols = ["device", "compute_precision", "kernel", "flops", "time_s"]
    if any(c not in placed for c in cols):
        return {}
    threads = placed["grid_size"] * placed["block_size"] if "grid_size" in placed and "block_size" in placed else np.nan
    per_thread = placed["flops"] / threads
    ok = placed[(placed["flops"] > 0) & (placed["time_s"] > 0) & placed["compute_precision"].notna()
                & (per_thread >= PEER_FLOPS_PER_THREAD)]
    if ok.empty:
        return {}
    frame = pd.DataFrame({"device": ok["device"].astype(str), "precision": ok["compute_precision"].astype(str),
                          "kernel": ok["kernel"].astype(str), "flops": ok["flops"].astype(float),
                          "per_flop": (ok["time_s"] / ok["flops"]).astype(float)}, index=ok.index)
    # one candidate per (device, precision, kernel, FLOP count): its fastest launch
    best = frame.sort_values("per_flop", kind="stable").drop_duplicates(["device", "precision", "kernel", "flops"])
    out: dict[Any, Any] = {}
    for _, cands in best.groupby(["device", "precision"], sort=False):
        cands = cands.sort_values("flops", kind="stable")
        flops, per_flop = cands["flops"].to_numpy(), cands["per_flop"].to_numpy()
        kernels, index = cands["kernel"].to_numpy(), cands.index.to_numpy()
        mine = frame[(frame["device"] == cands["device"].iloc[0]) & (frame["precision"] == cands["precision"].iloc[0])]
        lo = np.searchsorted(flops, mine["flops"].to_numpy() * (1 - FLOP_TOLERANCE), side="left")
        hi = np.searchsorted(flops, mine["flops"].to_numpy() / (1 - FLOP_TOLERANCE), side="right")
        for launch, kernel, f, a, b in zip(mine.index.tolist(), mine["kernel"].tolist(), mine["per_flop"].tolist(),
                                           lo.tolist(), hi.tolist(), strict=True):
            window = [j for j in range(a, b) if kernels[j] != kernel]
            if window:
                j = min(window, key=lambda k: per_flop[k])
                if per_flop[j] <= f * (1 - PEER_MIN_GAIN):
                    out[launch] = index[j]
    return out


def peer_signal(row: Row, peer: Row) -> dict[str, Any]:
    """What the peer needs less of (each unit's time, scaled to this launch's FLOPs) and the relief:
    every unit down to the peer's need, the win within the time the peer saves."""
    scale = val(row, "flops") / val(peer, "flops")
    t, t_peer = val(row, "time_s"), val(peer, "time_s") * scale
    removes, excess = {}, {}
    for u in UNITS:
        mine, theirs = val(row, unit_column(u.name)), val(peer, unit_column(u.name)) * scale
        if known(mine) and known(theirs) and mine > theirs:
            removes[u.name] = 1.0 - theirs / mine
            excess[u.name] = mine - theirs
    ratios = {lv: val(row, f"{lv}_bytes") / (val(peer, f"{lv}_bytes") * scale) for lv in ("dram", "l2", "l1")}
    unit = max(excess, key=lambda u: excess[u]) if excess else None
    return {"peer": str(peer.get("kernel")), "peer_time_s": val(peer, "time_s"), "peer_flops": val(peer, "flops"),
            "bytes_ratio": {k: v for k, v in ratios.items() if known(v)}, "unit": unit,
            "unit_s": val(row, unit_column(unit)) if unit else np.nan,
            "peer_unit_s": val(peer, unit_column(unit)) * scale if unit else np.nan,
            "relief": Relief(removes=removes, share=max(1.0 - t_peer / t, 0.0))}


def peer_reliefs(run: RuleRun, at: np.ndarray, peer_at: np.ndarray) -> list[Relief]:
    """:func:`peer_signal`'s relief for each launch (positions ``at`` in the placed table) against its
    peer (``peer_at``), on the columns as arrays; launches with the same numbers (copies) share one."""
    flops, t = run.values("flops"), run.values("time_s")
    scale = flops[at] / flops[peer_at]
    mine = np.column_stack([run.values(c)[at] for _, c in UNIT_COLUMNS])
    theirs = np.column_stack([run.values(c)[peer_at] for _, c in UNIT_COLUMNS]) * scale[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        removes = np.where(mine > theirs, 1.0 - theirs / mine, np.nan)  # unknown on either side: nothing
        share = np.maximum(1.0 - t[peer_at] * scale / t[at], 0.0)
    names = [name for name, _ in UNIT_COLUMNS]
    made: dict[bytes, Relief] = {}
    reliefs = []
    for cut, won in zip(removes, share.tolist(), strict=True):
        key = cut.tobytes() + np.float64(won).tobytes()
        if key not in made:
            made[key] = Relief(removes={n: v for n, v in zip(names, cut.tolist(), strict=True) if v == v}, share=won)
        reliefs.append(made[key])
    return reliefs


SPILLED_SHARE = 0.5  # local bytes past L1 of at least this share of L2's: the launch's traffic is its spills


def _block_order_gap(s: dict[str, Any]) -> bool:
    """The peer moves as many L2 bytes but a fraction of the DRAM bytes: the same tiles, re-fetched from DRAM
    because the blocks that share them run apart (CUTLASS's GemmIdentityThreadblockSwizzle<1> on V100: 8.16x
    the DRAM bytes of cuBLAS at 0.978x the L2 bytes)."""
    ratios = s["bytes_ratio"]
    dram, l2 = ratios.get("dram", 1.0), ratios.get("l2", np.inf)
    return s["unit"] == "dram" and dram >= BLOCK_ORDER_DRAM and l2 <= BLOCK_ORDER_L2


BLOCK_ORDER_DRAM, BLOCK_ORDER_L2 = 2.0, 1.25  # DRAM bytes over the peer's at least, L2 bytes at most


def _peer_advice(s: dict[str, Any], row: Row) -> str:
    unit = s["unit"] or ""
    if _block_order_gap(s):
        return ("The same L2 traffic, more DRAM: its blocks share less in L2. Order them so neighbours share "
                "tiles (a swizzled or rasterized grid).")
    spilled = local_bytes_past_l1(row)
    if spilled >= SPILLED_SHARE * val(row, "l2_bytes") and unit in ("dram", "l2", "l1", "memory"):
        return (f"Most of its traffic is local memory ({fmt_si(spilled, 'B')} past L1: see local-memory): keep its "
                "tiles in registers (constant indices), then reuse as the library call does.")
    if unit in ("dram", "l2", "memory") or s["bytes_ratio"].get("dram", 1.0) >= 1.5:
        return "Reuse what it fetches: tiles in shared memory and registers, or the library call."
    if unit in ("l1", "shared"):
        return "Fewer L1/shared accesses per FLOP: register tiling, wider (vector) loads, coalescing."
    return "Fewer instructions per FLOP: register tiling, vector loads, an unrolled inner loop."


def _peer_fix(row: Row, s: dict[str, Any], launch: Row) -> str:
    """The fix a same-work finding ends with; for a library kernel whose gap is block order, the call's block
    order (a template or algorithm setting), not its whole template."""
    lib = library_of(row)
    if lib is not None and _block_order_gap(s):
        return (f"A {lib.name} kernel: change its block order (CUTLASS's ThreadblockSwizzle<4 or 8>, cublasLt's "
                "CTA swizzling): the same L2 traffic, more DRAM.")
    return fix_text(row, _peer_advice(s, launch))


def _bytes_text(ratios: dict[str, float]) -> str:
    names = {"dram": "DRAM", "l2": "L2", "l1": "L1"}
    parts = [f"{r:.3g}x {'its ' if i == 0 else ''}{names[lv]}" for i, (lv, r) in enumerate(ratios.items())]
    return f"It moves {', '.join(parts)} bytes; " if parts else ""


@per_group("same-work-peer", needs=("flops",), reads=(*UNIT_READS, "grid_size", "block_size"),
           about=About(rank=0, fix="reuse"),
           enable="capture FLOP counters (ncu-roof capture)")
def same_work_peer(group: pd.DataFrame, ctx: Context) -> Finding | None:
    """Another kernel does the same work faster: an achieved ideal point from the reports themselves."""
    peers = ctx.run.once("peers", lambda: peer_of(ctx.placed))
    floor = ctx.run.at_floor()[ctx.run.positions(group)]
    hits = [label for label, gated in zip(group.index, floor.tolist(), strict=True) if label in peers and not gated]
    if not hits:
        return None
    rows = group.loc[hits]
    at, peer_at = ctx.run.positions(rows), ctx.run.positions(pd.Index([peers[label] for label in hits]))
    stake = ctx.run.price(rows, peer_reliefs(ctx.run, at, peer_at))
    if not stake > 0:
        return None
    first, s = rows.iloc[0], peer_signal(ctx.run.rows[at[0]], ctx.run.rows[peer_at[0]])
    differs = (f"the gap is in {unit_label(s['unit'])} ({fmt_seconds(s['unit_s'])} here, "
               f"{fmt_seconds(s['peer_unit_s'])} there). " if s["unit"] else "")
    msg = (f"{name_of(first['kernel'])}: {name_of(s['peer'], 40)} does the same "
           f"{fmt_si(val(first, 'flops'), 'FLOP')} ({first['compute_precision']}) in "
           f"{fmt_seconds(s['peer_time_s'])}, this in {fmt_seconds(val(first, 'time_s'))}: up to "
           f"{fmt_seconds(stake)} at stake ({launches_text(rows)}). "
           f"{_bytes_text(s['bytes_ratio'])}{differs}" + _peer_fix(first, s, ctx.run.rows[at[0]]))
    ev = evidence(rows, ("time_s", "flops", "dram_bytes", "l2_bytes", "l1_bytes", "binding_unit"))
    ev.update({k: s[k] for k in ("peer", "peer_time_s", "peer_flops", "bytes_ratio", "unit")})
    return make("same-work-peer", rows, msg, stake, ev)


# --- matrix math far left of its ridge ----------------------------------------------------------
def matrix_shaped(row: Row) -> bool:
    """A GEMM/convolution by name, tensor-core work, or a dot product per thread: FP work of nearly
    pure FMAs, ``MATRIX_FLOPS_PER_THREAD`` FLOPs or more per thread, its operands re-read through L1
    (L1 bytes twice the DRAM bytes or more). Elementwise kernels do a few FLOPs per thread."""
    if is_matrix_kernel(row) or val(row, "flops_tensor") > 0:
        return True
    ops = _FMA.get(str(row.get("compute_precision")))
    if not ops:
        return False
    fma, add, mul = (val(row, f"inst_{op}") for op in ops)
    inst, threads = fma + add + mul, val(row, "grid_size") * val(row, "block_size")
    per_thread = val(row, "flops") / threads if threads > 0 else np.nan
    reread = val(row, "l1_bytes") >= 2.0 * val(row, "dram_bytes")
    return bool(inst > 0 and fma / inst >= MATRIX_FMA_SHARE and per_thread >= MATRIX_FLOPS_PER_THREAD and reread)


def matrix_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Matrix-shaped work moving ``MATRIX_EXTRA`` times a square matmul's DRAM bytes of the same FLOPs
    (not where its blocks are as large as the model's tiles and block-order fires, nor where most of its
    traffic is local memory), or with no tiles in shared memory at all (the first rung of a GEMM ladder:
    every multiply-add loads its operands through L1/L2, however few of them reach DRAM)."""
    flops, dram, t = val(row, "flops"), val(row, "dram_bytes"), val(row, "time_s")
    element = _ELEMENT_BYTES.get(str(row.get("compute_precision")))
    if not (flops > 0 and dram > 0 and t > 0 and element) or row.get("bound") == "overhead" or not matrix_shaped(row):
        return None
    n, tiled = square_matmul_bytes(row) or (np.nan, np.nan)  # known: FLOPs and precision checked above
    ideal = 3.0 * n * n * element  # A, B and C once each
    rereads = dram >= MATRIX_EXTRA * ideal and dram >= MATRIX_OVER_TILED * tiled
    if rereads and block_tiles_at_least(row, TILE * TILE) and block_order_signal(row, th) is not None:
        rereads = False  # its tiles are as large as the model's: their order, not their size (block-order)
    if rereads and local_bytes_past_l1(row) >= SPILLED_SHARE * val(row, "l2_bytes"):
        rereads = False  # most of its traffic is spills, not operands fetched again: local-memory speaks
    untiled = known(val(row, "shared_mem_per_block")) and not tiles_in_shared(row)
    if not (rereads or untiled):
        return None  # near the compulsory bytes, or no worse than a plainly tiled kernel
    tiled_s, flops_s, floor = tiled_floor(row)
    if not known(floor):
        return None
    return {"n": n, "ideal_bytes": ideal, "tiled_bytes": tiled, "extra": dram / ideal, "tiled_s": tiled_s,
            "flops_s": flops_s, "untiled": not rereads, "relief": Relief(rewrite_s=floor)}


def tiled_floor(row: Row) -> tuple[float, float, float]:
    """What a kernel of ``TILE`` x ``TILE`` block tiles doing the row's matrix math needs at least: its
    bytes at the DRAM roof, its FLOPs at the compute roof, and the floor: the larger of its FLOPs' time
    and its bytes' time, those no more than the kernel moves today (L2 serving re-reads now would
    serve the tiled kernel's too) (NaN where unknown)."""
    square = square_matmul_bytes(row)
    roof = val(row, "dram_roof_bytes_per_s")
    tiled_s = square[1] / roof if square else np.nan
    flops_s = val(row, unit_column("flops"))
    now_s = ratio(dram_less_spills(row), roof)
    bytes_s = min(tiled_s, now_s) if known(now_s) and known(tiled_s) else tiled_s
    return tiled_s, flops_s, max((x for x in (bytes_s, flops_s) if known(x)), default=np.nan)


COALESCE_FIRST = 0.5  # uncoalesced loads wasting this share of L1's sectors are fixed before tiling


# the launches tiling is the next rung for: an untiled kernel whose loads waste most of their sectors
# coalesces first (the ladder's order; uncoalesced-access speaks for it)
_coalesced_first = unless(uncoalesced_signal, lambda waste, own: bool(
    own["untiled"] and waste["relief"].removes.get("l1", 0.0) >= COALESCE_FIRST))


@per_kernel("matrix-reuse", about=About(rank=0, fix="reuse"), signal=matrix_signal, needs_stake=True,
            keep=_coalesced_first,
            evidence=("time_s", "flops", "dram_bytes", "l2_bytes", "compute_precision", "binding_unit"),
            signal_evidence=("n", "ideal_bytes", "tiled_bytes", "extra", "tiled_s", "flops_s", "untiled"),
            needs=("flops", "dram_bytes"),
            reads=(*UNIT_READS, *FP_INST, "grid_size", "block_size", "shared_mem_per_block"),
            enable="capture FLOP and DRAM byte counters (ncu-roof capture)")
def matrix_reuse(hit: Hit) -> str:
    """Matrix math far left of its ridge: its operands are re-read from DRAM (and through the unit that
    binds, where that is L1, shared memory or a pipe), or it tiles nothing in shared memory; the fix is
    tiling."""
    first, s, rows, stake = hit.first, hit.signal, hit.rows, hit.stake or 0.0
    flops = (f", its FLOPs {fmt_seconds(s['flops_s'])} at the {first.get('compute_roof') or 'compute'} roof"
             if known(s["flops_s"]) else "")
    at_stake = f"up to {fmt_seconds(stake)} of {fmt_seconds(total(rows, 'time_s'))} at stake ({launches_text(rows)})"
    conv = is_convolution(first)
    what = "a convolution" if conv else "matrix math"
    if s["untiled"]:  # few of its re-reads reach DRAM: L1 and L2 serve them, one load per multiply-add
        loads = "reading its input through L1/L2 for every tap" if conv else \
            "loading its operands through L1/L2 for every multiply-add"
        head = (f"{name_of(first['kernel'])}: {what} with no tiles in shared memory, {loads}, {at_stake}. "
                f"{'As a GEMM, for' if conv else 'For'} its {fmt_si(val(first, 'flops'), 'FLOP')} "
                f"(N about {s['n']:.0f}, a guess{'' if conv else ' from the FLOPs'}) ")
    else:
        unit, busy = first.get("binding_unit"), val(first, "binding_unit_share")
        where = ("from DRAM" if not isinstance(unit, str) or unit == "dram" or not known(busy) else
                 f"({unit_label(unit)} {fmt_pct(busy * 100)} busy)")  # the unit that binds, where DRAM does not
        head = (f"{name_of(first['kernel'])}: {what} re-reading its operands {where}, {at_stake}. "
                f"It moves {fmt_si(val(first, 'dram_bytes'), 'B')} of DRAM, {s['extra']:.0f}x what a square matmul "
                f"of its FLOPs needs (N about {s['n']:.0f}, a guess). ")
    return (head + f"{TILE} x {TILE} block tiles move {fmt_si(s['tiled_bytes'], 'B')}, "
            f"{fmt_seconds(s['tiled_s'])} at the DRAM roof{flops}. "
            + fix_text(first, _reuse_fix(first)))


def _reuse_fix(row: Row) -> str:
    """Tiling, or larger tiles where the kernel tiles in shared memory already; the library by the math."""
    library = "cuDNN" if is_convolution(row) else "cuBLAS/CUTLASS"
    if tiles_in_shared(row):
        inner = "more MMA fragments per warp" if val(row, "flops_tensor") > 0 else "register tiles inside"
        return f"Larger shared tiles with {inner}, or call {library}."
    if is_convolution(row):  # a stencil's reuse: each input read by every filter tap over it
        return f"Tile in shared memory (a block's input with its halo, and the filter), or {library}."
    return f"Tile in shared memory and registers, or call {library}."


# --- tiles re-read from DRAM: the block order --------------------------------------------------
L2_POOR_REUSE = 0.5  # DRAM bytes at or above this share of L2's: L2 serves few of the tiles' re-reads


def square_matmul_bytes(row: Row) -> tuple[float, float] | None:
    """(N, the DRAM bytes of a square N x N x N matmul of the row's FLOPs in ``TILE`` x ``TILE`` block
    tiles: A and B once per tile row and column, C once); None without FLOPs or a known precision."""
    flops, element = val(row, "flops"), _ELEMENT_BYTES.get(str(row.get("compute_precision")))
    if not (flops > 0 and element):
        return None
    n = (flops / 2.0) ** (1.0 / 3.0)
    return n, (2.0 * max(math.ceil(n / TILE), 1) + 1.0) * n * n * element


def dram_less_spills(row: Row) -> float:
    """DRAM's bytes less their local-memory (spill) part, which is not the matmul's data: the roofline's
    reading (:func:`~ncu_roof.model.roofline.dram_without_local`), DRAM's where no local sector is counted."""
    past, dram = local_bytes_past_l1(row), val(row, "dram_bytes")
    return dram_without_local(dram, val(row, "l2_bytes"), past) if past > 0 else dram


def block_tiles_at_least(row: Row, outputs: float) -> bool:
    """Whether a shared-memory-tiled matrix kernel's blocks each compute at least ``outputs`` elements
    of a square matmul of its FLOPs (N x N over its grid: a guess, as N is)."""
    sized, grid = square_matmul_bytes(row), val(row, "grid_size")
    return bool(sized and grid > 0 and tiles_in_shared(row) and sized[0] ** 2 / grid >= outputs * (1 - 1e-9))


def block_order_signal(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """A matrix kernel that already tiles in shared memory, yet DRAM moves ``MATRIX_OVER_TILED`` times
    what its tiles need and L2 serves few of their re-reads (DRAM bytes at least ``L2_POOR_REUSE`` of
    L2's): blocks that share A rows and B columns run far apart, so each tile is fetched from DRAM
    again. A rasterized (swizzled) block order keeps them in L2 together; the fix removes the DRAM
    bytes above the tiles' own."""
    if not (tiles_in_shared(row) and matrix_shaped(row)):
        return None
    sized, l2, spilled = square_matmul_bytes(row), val(row, "l2_bytes"), local_bytes_past_l1(row)
    if spilled >= SPILLED_SHARE * l2:
        return None  # most of its traffic is spills, not tiles fetched again: local-memory speaks
    dram, l2 = dram_less_spills(row), l2 - min(spilled, l2) if spilled > 0 else l2
    if sized is None or not (dram > 0 and l2 > 0) or row.get("bound") == "overhead":
        return None
    n, tiled = sized
    if dram < L2_POOR_REUSE * l2 or dram < MATRIX_OVER_TILED * tiled:
        return None
    return {"n": n, "tiled_bytes": tiled, "dram_over_l2": dram / l2, "over_tiled": dram / tiled,
            "large_tiles": block_tiles_at_least(row, TILE * TILE),
            "relief": Relief(removes={"dram": 1.0 - tiled / dram}, waits=memory_waits(row))}


@per_kernel("block-order", signal=block_order_signal, needs_stake=True,
            about=About(rank=0, cause=True),
            evidence=("time_s", "flops", "dram_bytes", "l2_bytes", "shared_mem_per_block", "grid_size"),
            signal_evidence=("n", "tiled_bytes", "dram_over_l2", "over_tiled", "large_tiles"),
            needs=("dram_bytes", "l2_bytes", "flops"), reads=(*UNIT_READS, *FP_INST, "shared_mem_per_block",
                                                               "grid_size", "block_size"),
            enable="capture DRAM and L2 bytes and the FLOP counters (ncu-roof capture)")
def block_order(hit: Hit) -> str:
    """Tiles fetched from DRAM again and again: the blocks that share them run far apart."""
    first, s = hit.first, hit.signal
    return (f"{hit.name}: tiles re-read from DRAM{hit.stake_text}. It moves {fmt_si(val(first, 'dram_bytes'), 'B')} "
            f"from DRAM, {s['over_tiled']:.1f}x what {TILE} x {TILE} tiles {_tiles_of(first, s)}, and L2 serves few "
            f"re-reads (DRAM {fmt_pct(s['dram_over_l2'] * 100)} of L2's bytes). "
            + fix_text(first, "Rasterize (swizzle) the block order so blocks sharing A rows and B columns run "
                              "together, or set an L2 persistence window (cudaAccessPolicyWindow)."))


def _tiles_of(row: Row, s: dict[str, Any]) -> str:
    """Which matmul the model's tiles are for; where the kernel's own blocks are as large, that too (their
    size is not the cause)."""
    if not s["large_tiles"]:
        return f"of a matmul of its FLOPs need (N about {s['n']:.0f})"
    outputs = s["n"] ** 2 / val(row, "grid_size")
    return f"need at N about {s['n']:.0f}, as large as its blocks ({fmt_count(outputs)} outputs each)"


# --- kernels in a row that could be one ---------------------------------------------------------
def _chains(ctx: Context) -> list[Any]:
    """The chains of DRAM-bound kernels in a row that no region of the user's counts describes (its
    counts judge those: fuse-extra-bytes)."""
    described = [set(r["kernels"]) for _, r in ctx.regions.iterrows()
                 if "alg_bytes" in r and known(r["alg_bytes"]) and r.get("kernels") is not None]
    return [c for c in find_chains(ctx.placed) if not any(set(c.kernels) <= kernels for kernels in described)]


@per_item("fusion-chain", items=_chains, needs=("dram_read_bytes", "binding_unit"),
          reads=("dram_bytes", "dram_read_bytes", "binding_unit", "flops", "grid_size", "block_size"),
          enable="capture DRAM reads and writes apart (dram__bytes_read.sum, dram__bytes_write.sum)")
def fusion_chain(c: Any, ctx: Context) -> Finding | None:
    """DRAM-bound kernels in a row, each reading what the one before wrote: if they are one
    computation, a fused kernel moves only the first one's reads and the last one's writes."""
    stake = c.time_s - c.fused_floor_s if known(c.fused_floor_s) else None
    if stake is None or not stake > 0:
        return None
    rows = ctx.placed.loc[list(c.launches)]
    shown = c.kernels if len(c.kernels) <= 3 else (c.kernels[0], "…", c.kernels[-1])
    names = " → ".join(name_of(k, 40) for k in shown)
    times = f", {c.occurrences} times" if c.occurrences > 1 else ""
    msg = (f"{names} ({len(c.kernels)} DRAM-bound kernels in a row{times}, each reading what the one before "
           f"wrote): if they are one computation, one fused kernel moves {fmt_si(c.fused_bytes, 'B')} (first "
           f"reads, last inputs and writes), not {fmt_si(c.dram_bytes, 'B')}: {fmt_seconds(c.time_s)} -> "
           f"{fmt_seconds(c.fused_floor_s)} at the roof. Fuse them, or check with --suggest-regions FILE.")
    ev = evidence(rows, ("time_s", "dram_bytes", "dram_read_bytes", "binding_unit"))
    ev.update({"chain": list(c.kernels), "occurrences": c.occurrences, "fused_bytes": c.fused_bytes,
               "fused_floor_s": c.fused_floor_s})
    return make("fusion-chain", rows, msg, stake, ev)
