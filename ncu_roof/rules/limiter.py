"""Below the roof, name the limiter (checklist step 4): the busiest pipe, the dominant warp stalls,
the block size, CUDA-core matrix math where tensor cores exist.

Each ``*_signal(row, th)`` is a pure per-launch test returning the derived numbers when it applies
(None otherwise). They speak for launches below their roof and for launches with no roofline at
all (launch-statistics-only captures); never for launch-bound ones. Stakes come from the signals'
reliefs (:mod:`~ncu_roof.rules.stakes`).
"""

from __future__ import annotations

import math
from typing import Any

from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.model.build import is_debug_build
from ncu_roof.model.kernels import time_weighted
from ncu_roof.model.roofline import Thresholds, under
from ncu_roof.model.units import READS as UNIT_READS
from ncu_roof.model.units import label as unit_label
from ncu_roof.model.units import unit_column
from ncu_roof.read.metrics import PIPES, STALL_REASONS
from ncu_roof.rules.access import l2_request_path_binds, shared_part
from ncu_roof.rules.base import About, Context, Finding
from ncu_roof.rules.common import (
    evidence,
    fmt_count,
    is_convolution,
    is_matrix_kernel,
    known,
    known_sum,
    launches_text,
    ratio,
    tensor_types,
    tiles_in_shared,
    total,
    val,
)
from ncu_roof.rules.engine import Hit, per_kernel, unless
from ncu_roof.rules.fixes import REDUCTION_TREE_FIX, split_loads_text
from ncu_roof.rules.library import fix_text, library_of
from ncu_roof.rules.lines import PIPE_INSTRUCTIONS, STALL_SAMPLES
from ncu_roof.rules.occupancy import one_block_size, shape_peer_text
from ncu_roof.rules.reference import matrix_shaped, tiled_floor
from ncu_roof.rules.signals import (
    bank_conflict_signal,
    binding_unit_signal,
    block_size_signal,
    divergence_signal,
    fp64_rate,
    fp64_signal,
    no_fma_signal,
    no_tensor_signal,
    stall_signal,
    uncoalesced_signal,
    underfill_signal,
)
from ncu_roof.rules.stakes import Relief
from ncu_roof.rules.stalls import ACTIVE_CYCLES, STALLED_CYCLES, busy_pipe, tree_waits

# What a busy pipe runs, and what to do about it.
PIPE_MEANING = {
    "fp64": ("FP64 arithmetic (DFMA, DADD, DMUL; divisions and square roots run as chains of them)",
             "fewer FP64 operations (divisions to multiplications by a reciprocal), or FP32 where accuracy allows"),
    "fma": ("FP32 FMA, add and multiply, and integer multiply-add (IMAD)",
            "fewer FP32 operations (fuse add and multiply into FMA, hoist invariants), tensor cores for matrix math"),
    "fmaheavy": ("FP32 FMA and IMAD on the heavy half of the FMA pipe",
                 "fewer FP32 or IMAD operations; move index arithmetic out of the loop"),
    "alu": ("integer and logic operations, comparisons, FP32 min/max and conversions",
            "less integer work per element: strength-reduce index arithmetic, hoist invariant comparisons, "
            "fewer conversions"),
    "fp16": ("FP16 arithmetic on the CUDA cores", "packed half2 math, or tensor cores for matrix math"),
    "lsu": ("load and store instructions (global, local, shared)",
            "fewer, wider accesses (vector loads), values kept in registers"),
    "xu": ("special functions (sin, cos, exp, rsqrt, reciprocals) and conversions",
           "fewer transcendental calls (precompute, table, fast intrinsics), fewer type conversions"),
    "tensor": ("tensor-core matrix instructions", "it is at the tensor roof: a narrower type or less math"),
    "adu": ("branch targets, constant-memory loads (LDC) and block barriers",
            "fewer, more uniform branches (a grid-stride loop), constants read once into registers, "
            "fewer __syncthreads"),
    "cbu": ("branches, barriers and warp-level convergence", "fewer and more uniform branches"),
    "uniform": ("warp-uniform instructions", "fewer uniform datapath operations"),
    "tex": ("texture and surface instructions", "fewer texture fetches, or plain global loads"),
}

# What a stall reason means, and what to do about it.
STALL_MEANING = {
    "long_scoreboard": "memory latency: more bytes in flight (more warps, independent loads), prefetch",
    "short_scoreboard": "shared memory or special-function results: fewer of them, no bank conflicts",
    "barrier": "synchronization: fewer __syncthreads(), even work between them",
    "membar": "waiting at memory fences: fewer fences or atomics",
    "math_pipe_throttle": "a math pipe is saturated: fewer instructions on the busiest pipe",
    "mio_throttle": "the memory input/output queue is full (shared memory, special math): fewer, wider accesses",
    "lg_throttle": "the global/local memory queue is full: fewer, wider (vectorized) loads and stores",
    "tex_throttle": "the L1TEX queue is full: fewer texture and surface operations, or fewer decoupled math "
                    "operations (FP64 on GeForce parts)",
    "wait": "fixed-latency dependencies: more independent work per thread (ILP) or more warps",
    "dispatch_stall": "the dispatcher could not issue: pipeline conflicts",
    "drain": "waiting for stores to drain at exit",
    "branch_resolving": "waiting for branch targets: fewer, more uniform branches",
    "no_instruction": "instruction cache misses: smaller loops, less unrolling or inlining",
    "imc_miss": "constant cache misses: keep constants uniform across the warp",
    "sleeping": "warps sleeping (nanosleep, cooperative groups)",
    "misc": "miscellaneous hardware reasons",
    "not_selected": "eligible but another warp issued: enough warps, the issue slot is the limit",
}


# What a unit beyond the roofline does, and what relieves it.
UNIT_MEANING = {
    "l1": ("global, local and shared accesses through the L1/TEX cache",
           "fewer L1 wavefronts per result: register tiling, wider (vector) loads, coalesced accesses"),
    "l2": ("traffic between the SMs and L2", "reuse in shared memory or L1 (tiling), fewer atomics, coalesced "
           "accesses"),
    "shared": ("the shared-memory data pipe", "fewer shared accesses per result (register tiling, wider or ldmatrix "
               "loads), no bank conflicts"),
    "issue": ("the warp schedulers' issue slots (one instruction per cycle each)",
              "fewer instructions per result: wider loads, index arithmetic hoisted or strength-reduced, FMA "
              "instead of add and multiply, less branching"),
    "sm": ("the SM pipes and issue slots (ncu's compute throughput; capture the pipes to tell which)",
           "fewer instructions on its busiest pipe"),
    "memory": ("the memory units (ncu's memory throughput; capture the breakdown to tell which)",
               "fewer bytes or accesses per result"),
}


_PIPE_COLS = tuple(f"pipe_{p}_pct" for p in PIPES)
STALL_COLUMNS = tuple(f"stall_{r}" for r in STALL_REASONS)
STALL_ACTIVE_COLUMNS = tuple(f"stall_active_{r}" for r in STALL_REASONS)  # the nvprof-era % of warp cycles


def unit_meaning(unit: str) -> tuple[str, str]:
    """What a unit runs, and what relieves it."""
    if unit.startswith("pipe_"):
        return PIPE_MEANING.get(unit[5:], ("its instructions", "fewer instructions on it"))
    return UNIT_MEANING.get(unit, ("its work", "less work on it"))


_SPECIFIC = (fp64_signal, no_fma_signal, bank_conflict_signal, uncoalesced_signal, divergence_signal)


def _not_specific(rows: Any, signals: list[dict[str, Any]], ctx: Context) -> tuple[Any, list[dict[str, Any]]]:
    """The launches no more specific rule speaks for: none of :data:`_SPECIFIC` fires there with a
    fix that relieves the same unit (it speaks instead). On matrix math whose memory-side unit binds,
    the fix must remove at least :data:`EXPLAINS` of that unit's work: what is left there is
    re-reading, whose fix (tiling) binding-unit names beside it."""
    at = ctx.run.positions(rows).tolist()
    said = [ctx.run.answers(signal) for signal in _SPECIFIC]
    matrix = [matrix_shaped(r) for r in ctx.run.launches(rows)]
    keep = [i for i, p in enumerate(at)
            if not any(_relieves(answers[p], signals[i]["unit"], matrix[i]) for answers in said)]
    return rows.iloc[keep], [signals[i] for i in keep]


EXPLAINS = 0.5  # a specific fix removing this share of a matrix kernel's memory-side unit explains it


def _relieves(answer: dict[str, Any] | None, unit: str, matrix: bool) -> bool:
    relief = answer.get("relief") if answer is not None else None
    removed = relief.removes.get(unit, 0.0) if isinstance(relief, Relief) else 0.0
    return removed >= EXPLAINS if matrix and unit in _REUSE_UNITS else removed > 0




def _reread_text(first: Any, s: dict[str, Any]) -> str | None:
    """Why a memory-side unit is busy with DRAM idle: serialized accesses (many wavefronts per request)
    or re-reading, whose fix is tiling in shared memory, or in registers where it already tiles."""
    if s["serialized"] and s["warp_rows"] > 1:  # a block narrower than a warp: each warp spans several rows
        return (f"{s['wavefronts_per_request']:.1f} L1 wavefronts per request: a warp spans {s['warp_rows']} rows of "
                f"the {first.get('block_dim')} block, a segment each. Make blockDim.x 32 (or a multiple) along the "
                "contiguous index.")
    if s["serialized"]:  # many wavefronts per request: the addresses, not re-reading, keep L1 busy
        return (f"{s['wavefronts_per_request']:.1f} L1 wavefronts per request: accesses serialized, not "
                "re-read (strided or scattered addresses, bank conflicts). Make consecutive threads touch "
                "consecutive words (coalesce), or pad shared arrays.")
    dram = val(first, "unit_dram_s") / val(first, "time_s")
    tiled = tiles_in_shared(first)
    if s["unit"] in _REUSE_UNITS and not tiled and is_matrix_kernel(first):  # the first rung of a GEMM ladder
        return ("Matrix math loading each operand from global memory for every multiply-add: keep it on chip "
                "(tiles in shared memory: each block loads its A and B tiles once, then register tiles).")
    rung = register_rung(first) if tiled and _rung_unit(first, s["unit"]) and matrix_shaped(first) else None
    shared = shared_part(first) if s["unit"] in ("l1", "shared", "pipe_lsu") else math.nan
    if known(shared) and shared >= SHARED_PART:  # L1 busy with shared memory: not re-reading through caches
        conflicts = ratio(val(first, "shared_bank_conflicts"), val(first, "shared_wavefronts"))
        said = f" ({fmt_pct(conflicts * 100)} bank conflicts)" if known(conflicts) else ""
        return (f"L1's data stage is {fmt_pct(shared * 100)} shared memory{said}: fewer shared loads "
                f"({rung or _next_tiles(first, tiled)}).")
    if s["unit"] not in ("l1", "l2", "shared") or not known(dram) or dram >= 0.2:
        runs = "" if s["unit"] in _ISSUE_UNITS else f"It runs {unit_meaning(s['unit'])[0]}. "  # the unit said: short
        return f"{runs}Cut its work: {rung}." if rung else None
    return (f"DRAM is only {dram * 100:.2g}% busy: the data is re-read through the caches; keep it on chip "
            f"({rung or _next_tiles(first, tiled)}).")


_ISSUE_UNITS = frozenset({"issue", "pipe_fma", "pipe_fmaheavy"})  # a tiled kernel's instruction overhead binds
MEMORY_SIDE = ("dram", "l2", "l1", "memory")  # units whose time says whether memory binds


def _rung_unit(row: Any, unit: str) -> bool:
    """Whether the next tiling rung relieves ``unit``: the memory side's units, or the issue slots and the
    FMA pipe below its roof (the shared loads and address arithmetic beside the FFMAs fill them)."""
    busy = val(row, "binding_unit_share")
    return unit in _REUSE_UNITS or (unit in _ISSUE_UNITS and not (known(busy) and busy >= FMA_ROOF_SHARE))


SHARED_PART = 0.5  # shared-memory wavefronts of at least this share of L1's data stage: its work is shared memory


def _next_tiles(row: Any, tiled: bool) -> str:
    """The tiling a re-reading kernel needs where its rung is not known: shared and register tiles; for
    one that tiles in shared memory already, larger warp tiles on tensor cores, register tiling, or the
    ladder where no instruction counts say which rung it has reached (past register tiling where its
    registers a thread hold a 2-D tile)."""
    if not tiled:
        return "tiles in shared memory and registers, wider loads"
    if val(row, "flops_tensor") > 0:  # tensor-core tiles: the warp's fragments are its register tiles
        return ("larger warp tiles: more MMA fragments per warp, each A and B fragment loaded from shared memory "
                "once (ldmatrix) and used for several MMAs")
    if not known_sum(row, *RUNG_READS[1:]) > 0:
        regs = val(row, "registers_per_thread")
        if known(regs) and regs >= REGISTER_TILE_REGISTERS:  # a 2-D register tile's accumulators and operands
            return (f"the next rung: {regs:.0f} registers a thread hold a register tile already, so wider (16-byte) "
                    "shared loads, then warp tiles")
        return ("the next tiling rung: register tiling, then wider (16-byte) loads, then warp tiles; no instruction "
                "counts here to say which")
    return "register tiling: several outputs per thread, operands kept in registers, wider loads"


REGISTER_TILE_REGISTERS = 96  # a thread this many registers holds a 2-D register tile (8 x 8 accumulators and more)
RUNG_READS = ("inst_ffma", "inst_shared_load_32", "inst_shared_load_64", "inst_shared_load_128")
REGISTER_TILED = 2.0  # multiply-adds per shared load from which the kernel tiles in registers
NARROW_LOADS = 0.5  # this share of the shared loads narrower than 16 bytes: the vector-load rung is next


def register_rung(row: Any) -> str | None:
    """The next rung of a shared-memory-tiled FP32 matrix kernel, from its multiply-adds per shared load
    and its shared loads by width (the per-opcode counts: LDS, LDS.64, LDS.128): about one load a
    multiply-add, register tiling; register tiles loaded 4 or 8 bytes at a time, 16-byte (vector)
    loads; register tiles loaded 16 bytes at a time, larger tiles per warp. None without the counts."""
    widths = [val(row, f"inst_shared_load_{bits}") for bits in (32, 64, 128)]
    loads, fma = sum(widths), val(row, "inst_ffma") / 32  # FFMA warp instructions, from thread instructions
    if not (loads > 0 and fma > 0) or known_sum(row, "inst_dfma", "inst_hfma") / 32 > fma:
        return None
    per, narrow = fma / loads, (widths[0] + widths[1]) / loads
    counts = f"{per:.1f} FFMA per shared load ({fmt_count(loads)} loads, {fmt_pct(narrow * 100)} under 16 bytes)"
    if per < REGISTER_TILED:
        return f"register tiling: several outputs per thread, operands in registers, then wider loads; now {counts}"
    if narrow >= NARROW_LOADS:
        tile = "its input tile" if is_convolution(row) else "a transposed A tile"
        return (f"wider (16-byte) shared loads: float4 reads of {tile} (LDS.128) load 4 values per "
                f"instruction; it tiles in registers, {counts}")
    return f"larger register tiles (warp tiling: a sub-tile per warp, more outputs per thread); now {counts}"


_PROMOTION_UNITS = frozenset({"issue", "pipe_xu", "pipe_alu", "pipe_fma", "pipe_fmaheavy", "pipe_fp64"})
PROMOTION_READS = ("inst_dmul", "inst_dfma", "inst_dadd", "inst_fadd", "inst_fmul")


def _promotion_text(row: Any, unit: str) -> str | None:
    """Float code with FP64 multiplies and no FP64 adds or FMAs beside at least as many FP32 operations:
    double promotion (a double constant or function in float math), whose multiplies come with conversions
    to and from double (F2F, on the XU pipe) that fill the issue slots too."""
    fp64, fp32 = val(row, "inst_dmul"), known_sum(row, "inst_ffma", "inst_fadd", "inst_fmul")
    if unit not in _PROMOTION_UNITS or not (fp64 > 0 and fp32 >= fp64) or known_sum(row, "inst_dfma", "inst_dadd") > 0:
        return None
    return (f"{fmt_count(fp64)} FP64 multiplies, no FP64 adds, beside {fmt_count(fp32)} FP32 operations: double "
            "promotion (0.5 for 0.5f), each multiply with conversions (F2F). Use float constants and functions "
            "(-Wdouble-promotion lists them).")


_REUSE_UNITS = frozenset({"l1", "l2", "shared", "pipe_lsu"})  # units whose work reuse through tiling removes


def _binding_fix(f: Finding, th: Thresholds) -> str:
    """The change binding-unit's fix makes: on L1, L2, shared memory or the LSU, reuse through tiling
    (the same change as same-work-peer's and matrix-reuse's), or coalescing where the accesses are
    serialized (many wavefronts per request); elsewhere its own."""
    if f.evidence.get("unit") not in _REUSE_UNITS:
        return f.rule
    return "coalescing" if f.evidence.get("serialized") is True else "reuse"


def _binding_answer(row: Any, th: Thresholds) -> dict[str, Any] | None:
    """:func:`binding_unit_signal`; on matrix math whose fix is reuse (a memory-side unit binds, the
    accesses not serialized), priced as the rewrite it is: tiling also removes the load instructions
    and their address arithmetic from the issue slots and pipes, so the time after is what a tiled
    kernel needs at least (:func:`~ncu_roof.rules.reference.tiled_floor`), not the next unit's time
    today."""
    s = binding_unit_signal(row, th)
    if s is None or s["serialized"] or s["unit"] not in _REUSE_UNITS or not matrix_shaped(row):
        return s
    floor = tiled_floor(row)[2]
    if not known(floor):
        return s
    return {**s, "rewrite_floor_s": floor, "relief": Relief(rewrite_s=floor)}


@per_kernel("binding-unit", signal=_binding_answer, keep=_not_specific,
            about=About(answers=("HighPipeUtilization",), fix=_binding_fix, lines=PIPE_INSTRUCTIONS, cause=True),
            evidence=("time_s", "binding_unit", "binding_unit_share", "pct_of_roof", *_PIPE_COLS),
            signal_evidence=("unit", "next_unit", "next_unit_share", "coupled", "issue_relieved",
                             "wavefronts_per_request", "serialized", "warp_rows"),
            needs=("binding_unit",), reads=(*UNIT_READS, "l1_data_pipe_pct", "l1_requests_pct", "l1_xbar_req_pct",
                                             "shared_mem_per_block", *RUNG_READS, *PROMOTION_READS),
            enable="capture ncu's speed-of-light breakdown (ncu --section SpeedOfLight --section "
                   "ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis)")
def binding_unit(hit: Hit) -> str:
    """The binding unit when the roofline does not draw it (L1/TEX, L2, shared memory, issue slots, a
    pipe): what it runs, what relieves it, and the unit that binds next."""
    first, s, rows = hit.first, hit.signal, hit.rows
    runs, advice = unit_meaning(s["unit"])
    share = time_weighted(rows, "binding_unit_share")  # the table's number, over these launches
    share = share if share == share else s["unit_share"]
    nxt = (f"; then {unit_label(s['next_unit'])} ({fmt_pct(s['next_unit_share'] * 100)}) binds"
           if s["next_unit"] else "")
    if not any(known(val(first, unit_column(u))) for u in MEMORY_SIDE):  # the pipes alone: a memory unit may bind
        nxt += " of those measured (no memory counter)"
    alone = "relieving it"
    if s["coupled"]:
        alone += f" and the {' and the '.join(unit_label(u) for u in s['coupled'])} (the same accesses)"
    if s.get("issue_relieved"):  # a pipe's instructions take their issue slots with them
        alone += " and its issue slots"
    if alone == "relieving it":
        alone = "relieving it alone"
    if "rewrite_floor_s" in s:  # priced as the tiled rewrite: its FLOPs (or tiles' bytes) at their roof
        alone, nxt = "keeping its operands on chip", (f"; a tiled kernel needs at least "
                                                      f"{fmt_seconds(s['rewrite_floor_s'] * len(rows))}")
    return (f"{hit.name}: bound by {unit_label(s['unit'])}, {fmt_pct(share * 100)} busy; {alone} wins at most "
            f"{fmt_seconds(hit.stake or 0.0)} of {fmt_seconds(total(rows, 'time_s'))}{nxt} ({launches_text(rows)}). "
            + (tensor_path_advice(first)
               or fix_text(first, _request_path_text(first, s["unit"]) or _reread_text(first, s)
                           or _fma_roof_text(first, s["unit"], share) or _promotion_text(first, s["unit"])
                           or split_loads_text(first, s["unit"]) or f"It runs {runs}. Cut its work: {advice}.")))


def _request_path_text(row: Any, unit: str) -> str | None:
    """Where L1/TEX binds through its request path to L2 (:func:`l2_request_path_binds`), not its data
    stage: the requests going out are the work to cut, not re-reads (an idle DRAM says nothing of them:
    Abhishek7204's ray tracer sends stores and stack traffic, 52% of L2's input, and reads back 4%)."""
    if unit != "l1" or not l2_request_path_binds(row):
        return None
    return (f"Its busiest stage is the request path to L2 ({fmt_pct(val(row, 'l1_xbar_req_pct'))} in ncu's breakdown, "
            f"the data stage {fmt_pct(val(row, 'l1_data_pipe_pct'))}): misses, stores, atomics. Fewer of them: "
            "coalesced stores, atomics combined per block first, data kept in shared memory.")


FMA_ROOF_SHARE = 0.9  # the FMA pipe this busy with FFMAs (at least this share of its FP32 work): at its roof


def _fma_roof_text(row: Any, unit: str, share: float) -> str | None:
    """A matrix kernel whose FMA pipe is nearly saturated by FFMAs: nothing is left to fuse or hoist;
    only tensor cores or less math remain."""
    fma, fp32 = val(row, "inst_ffma"), known_sum(row, "inst_ffma", "inst_fadd", "inst_fmul")
    fused = fma / fp32 >= FMA_ROOF_SHARE if fp32 > 0 else is_matrix_kernel(row)  # counted, else a GEMM by name
    if unit != "pipe_fma" or not (share >= FMA_ROOF_SHARE and fused and matrix_shaped(row)):
        return None
    types = tensor_types(row)
    faster = f" or tensor cores ({types}) go faster." if types else " goes faster."
    if not fp32 > 0:  # no instruction mix: adds and multiplies in place of FFMAs fill the pipe as well (ZSL98)
        return ("Matrix math with its FMA pipe full; the instruction mix (not captured) would say whether it is at the "
                "FP32 roof: FADD and FMUL in place of FFMA fill it at half the FLOPs (fuse them); else only less math"
                + faster)
    return "Matrix math with its FMA pipe at the FP32 roof (FFMAs: nothing left to fuse): only less math" + faster


def tensor_path_advice(row: Any) -> str | None:
    """On Hopper and Blackwell, a busy legacy HMMA (mma.sync) path beside an idle native one."""
    if row.get("binding_unit") != "pipe_tensor":
        return None
    hmma, gmma, tc = (val(row, f"tensor_path_{p}_pct") for p in ("hmma", "gmma", "tc"))
    cc = str(row.get("cc") or "")
    native, kernel = (("tcgen05 (with TMEM and TMA)", "sm_100 (cuDNN, Blackwell FlashAttention/FlashInfer or "
                       "CUTLASS)") if cc.startswith("10.") or known(tc)
                      else ("wgmma (fed by TMA)", "sm_90a (cuDNN, FlashAttention-3, CUTLASS sm90)"))
    idle = tc if cc.startswith("10.") or known(tc) else gmma
    if not (cc[:2] in ("9.", "10", "11", "12") and known(hmma) and hmma >= 50.0 and known(idle) and idle < 5.0):
        return None
    return (f"The busy path is the legacy HMMA (mma.sync) one at {fmt_pct(hmma)} while {native} idles: use a kernel "
            f"built for {kernel}.")


# the launches async-copy does not speak for (where it fires, their long-scoreboard waits are its tiles'
# synchronous loads, and it names the fix)
_not_pipelined = unless("async-copy")


_SHARED_QUEUE_STALLS = frozenset({"mio_throttle", "short_scoreboard"})  # waits on shared-memory loads among them


def _stall_meaning(row: Any, reason: str) -> str:
    """What a stall reason means and its fix; on a tiled matrix kernel waiting on its shared loads, the
    next register rung (:func:`register_rung`) is the fix; in a reduction tree waiting at its barriers or
    on its adds, fewer tree steps an element; the L1TEX queue of a GPU whose FP64 pipe is decoupled
    (GeForce), FP64 instructions where the kernel runs them."""
    meaning = STALL_MEANING.get(reason, reason)
    if reason == "tex_throttle" and known_sum(row, "inst_dfma", "inst_dadd", "inst_dmul") > 0 and fp64_rate(row) < 0.25:
        return "the L1TEX queue is full of FP64 math, decoupled on this GPU: fewer FP64 operations (FP32 if it allows)"
    rung = (register_rung(row) if reason in _SHARED_QUEUE_STALLS and tiles_in_shared(row) and matrix_shaped(row)
            else None)
    busy = busy_pipe(row) if reason == "wait" else None
    if busy:  # the dependent instructions are that pipe's: fewer of them, not more of them in flight
        pipe, share = busy
        on = f"{unit_label(pipe)} ({fmt_pct(share * 100)} busy)"
        return f"fixed-latency dependencies on the {on}: {unit_meaning(pipe)[1]}"
    if tree_waits(row, reason):  # the tree's steps are the waits: fewer of them an element
        return f"{meaning.split(':')[0]}: {REDUCTION_TREE_FIX}"
    if reason == "wait" and is_debug_build(row):  # chains of a debug build's register copies, not the source's
        return f"{meaning.split(':')[0]}: a debug build's chains of register copies (nvcc -G): rebuild without -G"
    return f"{meaning.split(':')[0]}: {rung}" if rung else meaning


@per_kernel("warp-stalls", signal=stall_signal, keep=_not_pipelined,
            about=About(rank=5, answers=("IssueSlotUtilization", "CPIStall"), lines=STALL_SAMPLES, cause=True),
            evidence=("time_s", "issue_active", "warps_eligible_per_scheduler", "warps_active_per_scheduler",
                      "headroom_s"),
            needs=("|".join(("issue_active", *STALL_ACTIVE_COLUMNS)),),
            reads=(*UNIT_READS, *STALL_COLUMNS, "warps_eligible_per_scheduler", *RUNG_READS),
            enable="capture smsp__average_warps_issue_stalled_*_per_issue_active (ncu --section WarpStateStats "
                   "--section SchedulerStats) or PC sampling")
def warp_stalls(hit: Hit) -> tuple[str, dict[str, Any]]:
    """Why warps wait: the dominant stall reasons and the idle issue slots, for a launch below its roof."""
    first, s = hit.first, hit.signal
    mine = library_of(first) is None  # a library kernel: what the stall means, not how to change the source
    named = "; ".join(f"{r.replace('_', ' ')} {sh:.0%}" + (f" ({_stall_meaning(first, r)})" if mine and i == 0
                                                             else "")
                      for i, (r, sh) in enumerate(zip(s["reasons"], s["shares"], strict=True)))
    issue, eligible = val(first, "issue_active"), val(first, "warps_eligible_per_scheduler")
    slots = f" Issue slots used {issue:.0%}." if known(issue) else ""
    few, cause = "", {}
    pipe_waits = mine and s["reasons"][0] == "wait" and busy_pipe(first) is not None  # said: that pipe's work
    if known(eligible) and eligible < 1.0 and not pipe_waits:  # the grid, where it is what holds the warps back
        grid = underfill_signal(first, hit.ctx.thresholds) is not None
        why = "the grid holds too few warps (grid-underfill)" if grid else "too few warps or too little ILP"
        few, cause = f" Under one warp ready per cycle: {why}.", ({"caused_by": "grid-underfill"} if grid else {})
    lib = "" if cause else fix_text(first, "")  # a library's call: said by the grid-underfill finding it follows
    msg = (f"{hit.name}: warps stall, up to {fmt_seconds(hit.stake or 0.0)} of {fmt_seconds(total(hit.rows, 'time_s'))}"
           f" at stake ({launches_text(hit.rows)}).{slots} Stalls ({s['family']}): {named}.{few}"
           + (f" {lib}" if lib else ""))
    prefix = "stall_active_" if s["family"] in (STALLED_CYCLES, ACTIVE_CYCLES) else "stall_"
    stalls = evidence(hit.rows, tuple(f"{prefix}{r}" for r in s["reasons"]))
    return msg, {**stalls, "reasons": s["reasons"], "stall_shares": s["shares"], "stall_family": s["family"],
                 **cause}


DRAIN_GAP_PCT = 5.0  # achieved occupancy this far under the theoretical: warps go missing at run time too


@per_kernel("block-size", signal=block_size_signal, keep=one_block_size,
            about=About(rank=2,
                        answers=("IssueSlotUtilization", "AchievedOccupancy", "TheoreticalOccupancy", "Occupancy",
                                   "LaunchConfiguration"),
                        cause=True),
            evidence=("time_s", "block_size", "occupancy_limit_blocks", "max_warps_per_sm", "headroom_s",
                      "shape_peer_time_s", "shape_peer_block"),
            signal_evidence=("warps_per_block", "idle_lane_share", "slot_fill", "smaller"), needs=("block_size",),
            reads=("occupancy_limit_blocks", "max_warps_per_sm", "grid_size", "achieved_occupancy_pct",
                   "theoretical_occupancy_pct"),
            enable="capture launch__block_size and the occupancy limits (ncu --section LaunchStats --section "
                   "Occupancy)")
def block_size(hit: Hit) -> str:
    """A block size that wastes lanes (not a multiple of 32) or warp slots (too small for the SM's block limit)."""
    first, s = hit.first, hit.signal
    block = val(first, "block_size")
    parts = []
    if s["idle_lane_share"] > 0:
        idle = 32 * s["warps_per_block"] - block
        parts.append(f"{block:.0f} threads is not a multiple of 32: its last warp leaves {idle:.0f} lanes idle "
                     f"({s['idle_lane_share']:.0%} of the lanes)")
    if known(s["slot_fill"]) and under(s["slot_fill"], hit.ctx.thresholds.block_slots_fill):
        parts.append(f"{s['warps_per_block']} warps per block at {val(first, 'occupancy_limit_blocks'):.0f} blocks "
                     f"per SM fill only {s['slot_fill']:.0%} of the SM's {val(first, 'max_warps_per_sm'):.0f} "
                     "warp slots")
    if s["smaller"]:
        big, regs = s["smaller"], val(first, "registers_per_thread")
        achieved, theory = val(first, "achieved_occupancy_pct"), val(first, "theoretical_occupancy_pct")
        drains = (f" (achieved {fmt_pct(achieved)} of {fmt_pct(theory)}: a block frees its slots only when its last "
                  "warp exits)" if achieved < theory - DRAIN_GAP_PCT else "")
        parts.append(f"at {regs:.0f} registers a thread the SM fits {big['warps_now']:.0f} of its "
                     f"{val(first, 'max_warps_per_sm'):.0f} warps{drains}; {big['block_after']:.0f}-thread blocks "
                     f"would fit {big['warps_after']:.0f}")
    fix, what = "Use a multiple of 32 threads, 128-256 per block.", f"block size {block:.0f}"
    if "peer_s" in s:  # measured: say what the other shapes ran in, and use the fastest
        what, parts = "block shape", [shape_peer_text(hit.rows, s)]
        fix = f"Launch it with {s['peer_block']} blocks."
    said = "; ".join(parts)
    return (f"{hit.name}: {what}, up to {fmt_seconds(hit.stake or 0.0)} of "
            f"{fmt_seconds(total(hit.rows, 'time_s'))} at stake ({launches_text(hit.rows)}). "
            f"{said[:1].upper()}{said[1:]}. " + fix_text(first, fix))


@per_kernel("no-tensor-cores", about=About(answers=("HighPipeUtilization",)), signal=no_tensor_signal, note=True,
            evidence=("time_s", "flops_fp32", "flops_fp16", "flops_tensor", "compute_roof"),
            needs=("compute_precision",), reads=("flops_tensor",),
            enable="capture FLOP counters and tensor-pipe counters (ncu-roof capture)")
def no_tensor_cores(hit: Hit) -> str:
    """A GEMM or convolution (by its name) on the CUDA cores of a GPU that has tensor cores (a note)."""
    first = hit.first
    types = tensor_types(first) or "FP16"
    conv = is_convolution(first)
    way = (f"Ask {lib.name} for tensor-core math (its math mode, or {types} data)." if (lib := library_of(first))
           else "Through cuDNN, or CUTLASS's implicit GEMM." if conv else "Through cuBLAS, CUTLASS or mma/WMMA.")
    device = first.get("device") or "GPU"
    if conv:  # an implicit GEMM whose N is the output channels: a one-filter convolution fills 1 of 8 MMA columns
        return (f"{hit.name}: a convolution on the CUDA cores ({hit.signal['precision']}, no tensor-core work; "
                f"{launches_text(hit.rows)}). As an implicit GEMM on tensor cores ({types} on this {device}) its "
                "roof rises several-fold with 8 or more output channels, if the accuracy allows; one filter gains "
                f"little. {way}")
    return (f"{hit.name}: matrix math on the CUDA cores ({hit.signal['precision']}, no tensor-core work; "
            f"{launches_text(hit.rows)}) on a GPU with tensor cores. Its roof is the CUDA-core one; tensor cores "
            f"({types} on this {device}) raise it several-fold if the accuracy allows. {way}")
