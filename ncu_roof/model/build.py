"""How a kernel's code was built, from its executed SASS: debug builds (``nvcc -G``) by their marks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

# A debug build keeps every variable in its own register or stack slot and copies between them: MOVs
# are 41-60% of the instructions executed in the real debug builds read (aplainjane, victor-lvsy,
# tkhenry), at most 14% in every optimized one; with memory reached by generic loads and stores
DEBUG_MOV_SHARE = 0.30
_COUNTS = ("inst_mov", "inst_generic_memory", "warp_inst_executed")


# what a debug build's local-memory traffic is, and its fix (the local-memory rule's cause where it applies)
DEBUG_LOCAL_CAUSE = ("A debug build (nvcc -G) keeps variables, and the registers of calls it does not inline, on "
                     "the stack: rebuild without -G (-lineinfo keeps the source lines)")


def _marked(mov: Any, generic: Any, inst: Any) -> Any:
    """The two marks, for numbers or columns alike: MOVs at least :data:`DEBUG_MOV_SHARE` of the warp
    instructions executed, and generic loads or stores run (False where a count is missing)."""
    mov, generic, inst = (np.asarray(x, dtype=float) for x in (mov, generic, inst))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (inst > 0) & (mov / inst >= DEBUG_MOV_SHARE) & (generic > 0)


def is_debug_build(row: Any) -> bool:
    """Whether one launch's code is a debug build (a row of the placed table, or a dict)."""
    return bool(_marked(*(row.get(c) for c in _COUNTS)))


def debug_build(placed: pd.DataFrame) -> pd.Series:
    """:func:`is_debug_build` for every launch (False where the per-opcode counts are missing)."""
    if not all(c in placed for c in _COUNTS):
        return pd.Series(False, index=placed.index)
    return pd.Series(_marked(*(placed[c] for c in _COUNTS)), index=placed.index)


def mark_debug_builds(runs: list[dict[str, Any]], placed: pd.DataFrame) -> list[dict[str, Any]]:
    """``runs`` with each report's debug-built kernels (``debug_build_kernels``, in launch order) and the
    range of their MOV shares in % (``debug_mov_pct``: least, most), where it has any."""
    debug = debug_build(placed)
    if not debug.any() or "report" not in placed:
        return runs
    rows = placed[debug]
    share = rows["inst_mov"] / rows["warp_inst_executed"] * 100.0
    out = []
    for run in runs:
        mine = rows["report"].astype(str) == str(run.get("report"))
        if mine.any():
            run = {**run, "debug_build_kernels": list(dict.fromkeys(rows.loc[mine, "kernel"].astype(str))),
                   "debug_mov_pct": [round(float(share[mine].min()), 1), round(float(share[mine].max()), 1)]}
        out.append(run)
    return out
