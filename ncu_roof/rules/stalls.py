"""A launch's stall reasons as shares of its stall cycles, and the share memory latency explains."""

from __future__ import annotations

from ncu_roof.read.metrics import STALL_REASONS
from ncu_roof.rules.common import Row, is_reduction, known, val

_NOT_STALLS = ("selected",)  # a warp that issues is not stalled


def stall_shares(row: Row) -> tuple[dict[str, float], str]:
    """Each stall reason's share of the stall cycles (from the per-issue ratios, else the PC
    samples), largest first, and which family was used ('' when neither is known)."""
    for prefix, family in (("stall_", "cycles per issued instruction"), ("stall_samples_", "PC samples")):
        values = {r: val(row, f"{prefix}{r}") for r in STALL_REASONS if r not in _NOT_STALLS}
        values = {r: v for r, v in values.items() if known(v)}
        whole = sum(values.values())
        if values and whole > 0:
            return dict(sorted(((r, v / whole) for r, v in values.items()), key=lambda x: -x[1])), family
    return {}, ""


# stalls memory latency explains: waits on loads (global, local, shared, texture), full memory queues,
# stores draining and fences; and barriers in part (where one warp's loads hold the block, its waiting
# warps sample "barrier": the waits on memory would be counted once otherwise)
MEMORY_WAITS = ("long_scoreboard", "short_scoreboard", "lg_throttle", "mio_throttle", "tex_throttle", "drain",
                "membar")


def memory_waits(row: Row) -> float:
    """The share of a launch's stalls that memory latency explains (:data:`MEMORY_WAITS`), with the
    barrier's share in the proportion memory holds of the other stalls (a barrier waits for the block's
    slowest warp, which waits on what the other warps wait on: in a reduction tree mostly arithmetic);
    1 where the stalls are not known (nothing rules memory out)."""
    shares, _ = stall_shares(row)
    if not shares:
        return 1.0
    memory, barrier = sum(shares.get(r, 0.0) for r in MEMORY_WAITS), shares.get("barrier", 0.0)
    return memory + (barrier * memory / (1.0 - barrier) if barrier < 1.0 else 0.0)


BUSY_PIPE_SHARE = 0.6  # a math pipe this busy: a kernel's fixed-latency waits are on its instructions
_MATH_PIPES = frozenset({"pipe_alu", "pipe_fma", "pipe_fmaheavy", "pipe_fp64", "pipe_xu", "pipe_fp16"})
TREE_STALLS = frozenset({"barrier", "wait"})  # a reduction tree's waits: at its barriers, on its dependent adds


def busy_pipe(row: Row) -> tuple[str, float] | None:
    """The launch's binding unit where it is a math pipe at least ``BUSY_PIPE_SHARE`` busy."""
    unit, share = row.get("binding_unit"), val(row, "binding_unit_share")
    return (str(unit), share) if unit in _MATH_PIPES and share >= BUSY_PIPE_SHARE else None


def tree_waits(row: Row, reason: str) -> bool:
    """Whether a reduction kernel's ``reason`` stalls are its tree's steps: at its barriers, or on its
    dependent adds where no math pipe is busy (a busy pipe's own instructions are then the work to cut)."""
    return reason in TREE_STALLS and is_reduction(row) and (reason == "barrier" or busy_pipe(row) is None)
