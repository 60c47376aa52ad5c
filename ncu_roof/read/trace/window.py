"""The window a trace's events lie in, robust to a few events whose time is damaged.

Enters: the start times of a trace's CPU events (runtime calls, ops, annotations). Leaves: the
first and last start of its *core*: the starts left once a few stray ones, far from the rest, are
set aside. A ``ts`` of 1e15 or a shifted one would otherwise stretch the window over years, keep a
GPU activity just as damaged inside it and show the trace as all idle.
"""

from __future__ import annotations

import numpy as np

STRAY_SHARE = 0.01  # at most this share of the starts (and at least 2) at each end can be strays
STRAY_GAP = 10.0  # a stray lies farther from its neighbour than this many times the bulk's span


def core_window(starts: np.ndarray, slack_s: float) -> tuple[float, float]:
    """The first and last of ``starts`` once strays are set aside. The bulk is the starts without
    the ``STRAY_SHARE`` most extreme at each end; from it the core grows outwards one start at a
    time while the next lies within ``slack_s`` or ``STRAY_GAP`` times the bulk's span of the last
    one taken; what lies beyond a wider gap is stray. A trace with two real phases far apart keeps
    both (each holds more than the share)."""
    s = starts[np.isfinite(starts)]
    if not len(s):
        return float("nan"), float("nan")
    limit = max(2, int(len(s) * STRAY_SHARE))
    if len(s) <= 2 * limit + 1:
        s = np.sort(s)
        return _grown(s, s, len(s) // 2, len(s) // 2, max(slack_s, 0.0))
    lo, hi = limit, len(s) - 1 - limit
    ends = np.partition(s, (lo, hi))  # the bulk's ends in place, each tail beyond them: only the tails sorted
    reach = max(slack_s, STRAY_GAP * float(ends[hi] - ends[lo]))
    return _grown(np.sort(ends[: lo + 1]), np.sort(ends[hi:]), lo, 0, reach)


def _grown(low: np.ndarray, high: np.ndarray, lo: int, hi: int, reach: float) -> tuple[float, float]:
    """The core grown from ``low[lo]`` down and ``high[hi]`` up (each array sorted) while the next start
    lies within ``reach`` of the last one taken."""
    while lo > 0 and low[lo] - low[lo - 1] <= reach:
        lo -= 1
    while hi < len(high) - 1 and high[hi + 1] - high[hi] <= reach:
        hi += 1
    return float(low[lo]), float(high[hi])
