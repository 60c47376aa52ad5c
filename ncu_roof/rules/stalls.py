"""A launch's stall reasons as shares of its stall cycles, and the share memory latency explains."""

from __future__ import annotations

from ncu_roof.read.metrics import STALL_REASONS
from ncu_roof.rules.common import Row, is_reduction, known, val

_NOT_STALLS = ("selected",)  # a warp that issues is not stalled
# the families of the nvprof-era % of active warp cycles: over the cycles the warps did not issue where
# "selected" is captured, else over all active cycles (each share then at most what it is of the stalls)
STALLED_CYCLES, ACTIVE_CYCLES = "share of stalled warp cycles", "share of active warp cycles"


def stall_shares(row: Row) -> tuple[dict[str, float], str]:
    """Each stall reason's share of the stall cycles (from the per-issue ratios, else the PC
    samples, else the nvprof-era % of active warp cycles), largest first, and which family was used
    ('' when none is known). The % family is not rescaled over the reasons captured (often two or three):
    each is its share of the cycles the warps did not issue (100% less "selected"), or of all active cycles where
    "selected" is not captured."""
    for prefix, family in (("stall_", "cycles per issued instruction"), ("stall_samples_", "PC samples")):
        values = {r: val(row, f"{prefix}{r}") for r in STALL_REASONS if r not in _NOT_STALLS}
        values = {r: v for r, v in values.items() if known(v)}
        whole = sum(values.values())
        if values and whole > 0:
            return dict(sorted(((r, v / whole) for r, v in values.items()), key=lambda x: -x[1])), family
    values = {r: val(row, f"stall_active_{r}") for r in STALL_REASONS if r not in _NOT_STALLS}
    values = {r: v for r, v in values.items() if known(v)}
    selected = val(row, "stall_active_selected")
    stalled = 100.0 - (selected if known(selected) else 0.0)
    if values and sum(values.values()) > 0 and stalled > 0:
        shares = ((r, min(v / stalled, 1.0)) for r, v in values.items())
        return dict(sorted(shares, key=lambda x: -x[1])), STALLED_CYCLES if known(selected) else ACTIVE_CYCLES
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
    1 where the stalls, or the long-scoreboard waits among them, are not known (nothing rules memory out)."""
    shares, _ = stall_shares(row)
    if not shares or "long_scoreboard" not in shares:  # the main wait on memory not captured: nothing rules it out
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
