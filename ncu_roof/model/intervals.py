"""Sets of time intervals, vectorised: unions, their length, and how much of each query interval
they cover. Intervals are ``(start, end)`` arrays in seconds; NaN ends count as zero-length."""

from __future__ import annotations

import numpy as np


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals as sorted, disjoint ``(start, end)`` blocks (touching ones merged)."""
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    keep = ~np.isnan(start)
    start, end = start[keep], end[keep]
    end = np.where(np.isnan(end), start, np.maximum(end, start))
    if not len(start):
        return np.empty(0), np.empty(0)
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]  # a block starts where nothing before reaches it
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(s) - 1]
    return s[first], reach[last]


def covered(block_start: np.ndarray, block_end: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each query ``[a, b]``, the seconds of it inside the disjoint sorted blocks."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if not len(block_start):
        return np.zeros(len(a))
    cum = np.r_[0.0, np.cumsum(block_end - block_start)]

    def upto(t: np.ndarray) -> np.ndarray:  # covered seconds before time t
        i = np.searchsorted(block_start, t, side="right") - 1
        inside = np.clip(t - block_start[np.clip(i, 0, None)], 0.0,
                         (block_end - block_start)[np.clip(i, 0, None)])
        return np.where(i >= 0, cum[np.clip(i, 0, None)] + inside, 0.0)

    return np.maximum(upto(b) - upto(a), 0.0)


def inside(block_start: np.ndarray, block_end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Whether each time ``t`` lies in one of the disjoint sorted blocks (ends included)."""
    t = np.asarray(t, dtype=np.float64)
    if not len(block_start):
        return np.zeros(len(t), dtype=bool)
    i = np.searchsorted(block_start, t, side="right") - 1
    return (i >= 0) & (t <= block_end[np.clip(i, 0, None)])
