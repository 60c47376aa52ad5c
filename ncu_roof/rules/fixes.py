"""The fix a launch's own counters and name point to, as the text a finding ends with: how to
coalesce (narrow loads, a vector element read field by field, a straddled sector, a stride, a
transpose), how to pad shared memory (one word, or 16 bytes where WMMA needs it), how a
reduction tree keeps its lanes busy, and why warps go missing at run time.
"""

from __future__ import annotations

import re

import numpy as np

from ncu_roof.rules.common import (
    Row,
    fmt_count,
    is_matrix_kernel,
    is_reduction,
    known,
    known_sum,
    ratio,
    tiles_in_shared,
    val,
)
from ncu_roof.rules.library import library_of
from ncu_roof.rules.occupancy import blocks_per_sm

OPS = {"load": "loads", "store": "stores"}


def coalescing_advice(row: Row, side: str | None = None) -> tuple[str, bool]:
    """Narrow accesses by consecutive threads (1-2 bytes each: load whole words and unpack), an
    element of 8 or 16 bytes accessed a field at a time (access it whole, aligned), accesses that
    straddle a sector (align), or a stride between threads (make consecutive threads touch
    consecutive words); and whether it is the element's (its text gives the side's sectors per request)."""
    if compiled_loop(row):  # the user writes the loop nest, not the kernel: its mapping sets the stride
        return "An OpenACC/OpenMP loop: run its vector loop over the contiguous index (loop order, collapse).", False
    per_thread = bytes_a_thread(row, val(row, "global_load_requests"))
    if known(per_thread) and per_thread <= NARROW_BYTES:
        amount = "1 byte" if round(per_thread, 1) == 1 else f"{per_thread:.2g} bytes"
        return (f"Each active thread loads {amount} a time: load whole words (uchar4, int4 or float4 vector "
                "loads) and unpack them in registers."), False
    each = bytes_a_thread(row, known_sum(row, "global_load_requests", "global_store_requests"))
    split = split_element(row, each, side)
    if split:
        op, stride, spr = split
        do = "write" if op == "stores" else "read"
        return (f"{op.capitalize()}: {spr:.1f} sectors a request, {stride:.0f}-byte elements split: {do} them whole "
                f"({_vector(stride)})."), True
    if three_field_element(row):
        return ("A third used: 4-byte fields 12 bytes apart, a float3 (or 3-field struct) read a field at a time. "
                "Pad it to float4 (one load) or keep one array a field (SoA)."), False
    if one_sector_over(row):
        return ("Accesses straddle sectors: align arrays and row pitches to 128 B." if tiles_in_shared(row) else
                "Accesses straddle sectors: align arrays to 128 B, or stage a stencil window in shared memory."), False
    if "transpose" in str(row.get("kernel") or "").lower() and not tiles_in_shared(row):  # one side strides
        return ("A transpose: stage 32 x 32 tiles through shared memory ([32][33], padded) so the reads and the "
                "writes both coalesce."), False
    return "Make consecutive threads touch consecutive words.", False


COMPILED_LOOP = re.compile(r"_\d+_gpu(?:__red)?$")  # NVHPC's OpenACC/OpenMP kernels: routine_line_gpu


def compiled_loop(row: Row) -> bool:
    """A kernel the NVHPC compilers made from an OpenACC or OpenMP loop (``set_halo_values_x_419_gpu``)."""
    return bool(COMPILED_LOOP.search(str(row.get("kernel") or "")))


THIRD_USED_PCT = (32.0, 34.7)  # ncu's bytes used per sector that read as a third (float3 fields: 33.3%)


def three_field_element(row: Row) -> bool:
    """Global loads using a third of each sector by ncu's own measure, with no request counts to tell a
    stride (:func:`split_element` reads those): 12-byte elements (float3) read a 4-byte field at a time."""
    used = val(row, "global_load_bytes_per_sector_pct")
    return bool(THIRD_USED_PCT[0] <= used <= THIRD_USED_PCT[1] and not known(val(row, "global_load_requests")))


def bytes_a_thread(row: Row, requests: float) -> float:
    """The bytes each active thread's access needs, over ``requests`` warp requests: the ideal
    sectors' bytes shared out (NaN where unknown); sparse active threads (divergence) are not narrow."""
    ideal, active = val(row, "global_sectors_ideal"), val(row, "threads_per_inst")
    active = active if known(active) and 0 < active <= 32 else 32.0
    return ideal * 32.0 / (requests * active) if ideal > 0 and requests > 0 else np.nan


def split_element(row: Row, per_thread: float, side: str | None) -> tuple[str, float, float] | None:
    """(loads or stores, the stride, their sectors per request) where consecutive threads touch
    ``per_thread`` bytes each a whole 8 or 16 bytes apart: a warp's request spans exactly 8 or 16
    sectors (32 threads x the stride), more than twice what the thread's own bytes need; or, where the
    other side's requests span exactly that, at least :data:`SPLIT_SPAN` of it; not where the other side's
    requests span more (its threads lie further apart: a stride, as a DP matrix walked along its
    anti-diagonal). A vector element read field by field, or a field of an array of structures. Only the
    side that carries the extra sectors (``side``; either if unknown)."""
    if not known(per_thread):
        return None
    spr = {op: ratio(val(row, f"global_{op}_sectors"), val(row, f"global_{op}_requests")) for op in OPS}
    for op in [o for o in ("store", "load") if side is None or OPS[o] in side]:
        other = spr["load" if op == "store" else "store"]
        for stride in SPLIT_STRIDES:
            near = SPLIT_SPAN[0] * stride <= spr[op] <= SPLIT_SPAN[1] * stride
            wider = known(other) and other > SPLIT_SPAN[1] * stride  # the other side's threads lie further apart
            if per_thread <= stride / 2 and not wider and (_at(spr[op], stride) or (near and _at(other, stride))):
                return OPS[op], stride, spr[op]
    return None


def _vector(stride: float) -> str:
    """The vector types that load a ``stride``-byte element whole (the counters do not say whether its
    fields are floats, integers or doubles)."""
    if stride == 12:  # float3: no 12-byte load; padded to 16 bytes, or split by field
        return "padded to float4, or one array a field (SoA)"
    return "float4/int4/double2" if stride == 16 else "float2/int2"


def _at(spr: float, stride: float) -> bool:
    return bool(known(spr) and abs(spr - stride) <= 0.05 * stride)


SPLIT_UNITS = frozenset({"issue", "pipe_alu", "pipe_fma", "pipe_fmaheavy", "pipe_lsu"})  # load and address work


def split_loads_text(row: Row, unit: str) -> str | None:
    """Where an instruction-side unit binds and the global loads read wide elements a few bytes at a time
    (:func:`split_element`): whole, aligned vector loads issue one instruction where several are issued
    now, and the address arithmetic beside each goes with it."""
    per_thread = bytes_a_thread(row, known_sum(row, "global_load_requests", "global_store_requests"))
    split = split_element(row, per_thread, "loads") if unit in SPLIT_UNITS else None
    if split is None:
        return None
    _, stride, spr = split
    return (f"Global loads: {spr:.1f} sectors a request, {per_thread:.2g} bytes a thread: {stride:.0f}-byte elements "
            f"read piecewise. Load them whole ({_vector(stride)}{_aligned(stride)}): one wider load, and its "
            "address arithmetic, for several.")


def _aligned(stride: float) -> str:
    """', 16-B aligned': a vector load needs its own width's alignment (a float3 has no load of its own)."""
    return "" if stride == 12 else f", {stride:.0f}-B aligned"


REDUCTION_TREE_FIX = ("a reduction tree: sum several elements per thread (independent work per thread), fewer "
                      "__syncthreads() (shuffles for the last warp)")


def one_sector_over(row: Row) -> bool:
    """Each request asks for about one 32-byte sector more than its data needs: an access that
    straddles a sector boundary (misalignment), not a stride between threads."""
    theo, ideal = val(row, "global_sectors_theoretical"), val(row, "global_sectors_ideal")
    requests = known_sum(row, "global_load_requests", "global_store_requests")
    extra = (theo - ideal) / requests if requests > 0 and theo > ideal > 0 else np.nan
    return bool(known(extra) and ONE_SECTOR[0] <= extra <= ONE_SECTOR[1])


SPLIT_STRIDES = (16.0, 12.0, 8.0)  # bytes between threads a vector access of one thread covers whole (12: float3)
SPLIT_SPAN = (0.8, 1.05)  # sectors a request, of the stride, where the other side's requests span the stride's
# sectors exactly: the same elements, some requests whole or partial (bringing the mean under the stride)
ONE_SECTOR = (0.5, 1.5)  # extra sectors per request read as one boundary straddled
NARROW_BYTES = 2.0  # bytes a thread accesses per load at or under which the loads are narrow


def padding_advice(row: Row) -> str:
    """Padding that keeps the layout the kernel needs: WMMA/mma tiles take a leading dimension that is a
    multiple of 16 bytes, so they pad by 8 halves, not by one word."""
    name = str(row.get("kernel_demangled") or row.get("kernel") or "").lower()
    if val(row, "flops_tensor") > 0 or "wmma" in name or "mma" in name.split("::")[-1]:
        return ("Pad the tile's leading dimension by 8 halves (16 B, which WMMA's ldm requires; one word breaks "
                "it) or swizzle the index (as CUTLASS does).")
    return "Pad the array (e.g. [32][33]) or swizzle the index."


# --- occupancy and divergence ---------------------------------------------------------------
def missing_warps_text(row: Row) -> str:
    """Why warps are missing at run time, from the number of waves."""
    waves = val(row, "waves")
    if known(waves) and waves >= MANY_WAVES:
        if is_reduction(row) and library_of(row) is None:
            return (f"Warps missing at run time although the grid runs {waves:.0f} waves: a reduction tree's last "
                    "steps run on one warp while the block's other warps have exited. Sum several elements per "
                    "thread before the tree, and end it with warp shuffles")
        block, per_sm = val(row, "block_size"), blocks_per_sm(row)
        if block >= LARGE_BLOCK and per_sm <= 2:  # GPU-DEMO's 1,024-thread transposes: one block an SM
            return (f"Warps missing at run time although the grid runs {waves:.0f} waves: {block:.0f}-thread blocks, "
                    f"{per_sm:.0f} an SM, free their slots only when their last warp exits; smaller blocks drain finer")
        return (f"Warps missing at run time although the grid runs {waves:.0f} waves: uneven block times "
                "(load imbalance) or short blocks whose start and exit leave warp slots empty")
    return "Warps missing at run time (few or uneven blocks, a tail)"


MANY_WAVES = 4.0  # a grid of this many waves has no tail worth naming
LARGE_BLOCK = 512  # threads a block from which, at one or two blocks an SM, its exit drains the SM


def divergence_advice(row: Row) -> str:
    """Keep neighbouring threads on one branch; in a reduction tree, by its indexing and its last steps."""
    if is_reduction(row):
        return ("A reduction tree: keep active threads contiguous (index by tid, halve the stride), end with warp "
                "shuffles (__shfl_down_sync) for the last 32 values, and sum several elements per thread first.")
    return "Make neighbouring threads take the same branch (sort or bucket the work, uniform loop trip counts)."


ONE_OUTPUT = (0.9, 1.1)  # 4-byte outputs stored a thread that read as one


def one_output_text(row: Row) -> str | None:
    """A matrix kernel whose threads store one 4-byte output each (the stored bytes over the threads, the
    stores coalesced): no register tile, so each multiply-add loads both its operands (Olajide gemm_tiled:
    4.19M outputs by 4.19M threads). None where the counts do not say so."""
    threads = val(row, "grid_size") * val(row, "block_size")
    sectors, requests = val(row, "global_store_sectors"), val(row, "global_store_requests")
    if not (is_matrix_kernel(row) and threads > 0 and sectors > 0 and ratio(sectors, requests) <= 4.0 * 1.05):
        return None
    outputs = sectors * 32.0 / 4.0
    if not ONE_OUTPUT[0] <= outputs / threads <= ONE_OUTPUT[1]:
        return None
    return (f"A matrix kernel storing one 4-byte output a thread ({fmt_count(outputs)}, as many as threads): each "
            "multiply-add loads both operands. Register tiling (4x4 or 8x8 outputs a thread) loads each once for 4-8.")
