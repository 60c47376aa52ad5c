"""The stake model written launch by launch: the tests' oracle for the one pricing path the rules
use (:func:`ncu_roof.rules.stakes.priced` over arrays, asked through :meth:`RuleRun.price`)."""

from __future__ import annotations

import numpy as np

from ncu_roof.rules.common import Row, known, val
from ncu_roof.rules.stakes import UNIT_COLUMNS as _COLUMNS
from ncu_roof.rules.stakes import Relief


def unit_times(row: Row) -> dict[str, float]:
    """Each measured unit's time at its limit for one launch (unit name -> seconds); a row without
    the model's columns (a hand-made one) has the roofline's bound as its one unit."""
    out = {}
    for name, column in _COLUMNS:
        t = row.get(column)
        if t is not None and t == t and isinstance(t, (int, float)):
            out[name] = float(t)
    if not out and not any(column in row for _, column in _COLUMNS):
        lower, head = val(row, "time_lower_bound_s"), val(row, "headroom_s")
        lower = lower if known(lower) else val(row, "time_s") - head
        if known(lower):
            out["roofline"] = max(lower, 0.0)
    return out


def time_after(row: Row, relief: Relief, bounds: dict[str, float] | None = None) -> float:
    """The launch's time once the fix is made (NaN without a duration or a measured unit)."""
    t = val(row, "time_s")
    if relief.rewrite_s is not None and t > 0:
        return max(relief.rewrite_s, launch_floor(row))
    bounds = unit_times(row) if bounds is None else bounds
    if not (t > 0) or not bounds:
        return np.nan
    binding = max(bounds, key=lambda u: bounds[u])
    now = bounds[binding]
    after = {u: b * (1.0 - min(max(relief.removes.get(u, 0.0), 0.0), 1.0)) for u, b in bounds.items()}
    for u, extra in relief.adds.items():
        after[u] = after.get(u, 0.0) + max(extra, 0.0)
    gap = max(t - now, 0.0)
    scale = after[binding] / now if now > 0 else 1.0
    gap_scale = 1.0 if row.get("bound") == "overhead" else scale  # launch overhead stays with less work
    kept = gap * (1.0 - latency_removed(t, now, bounds, relief)) * gap_scale if gap > 0 else 0.0  # 0 x inf: none
    return max(now * scale + kept, *after.values())


MEMORY = ("dram", "l2", "l1", "shared")


def latency_removed(t: float, now: float, bounds: dict[str, float], relief: Relief) -> float:
    """The relief's latency share; on a launch whose busiest unit is under 80% of its peak, at least
    the largest share of a measured memory unit's work it removes, times the memory waits' share."""
    base = min(max(relief.latency, 0.0), 1.0)
    if now >= 0.8 * t:
        return base
    removed = max((min(max(relief.removes.get(u, 0.0), 0.0), 1.0) for u in MEMORY if u in bounds), default=0.0)
    return max(base, removed * min(max(relief.waits, 0.0), 1.0))


def launch_floor(row: Row) -> float:
    """What an empty kernel takes (0 where the placed table does not say): no fix wins it."""
    floor = val(row, "launch_floor_s")
    return floor if known(floor) and floor > 0 else 0.0


def stake(row: Row, relief: Relief) -> float:
    """The time the fix wins on one launch: now minus after, within [0, the launch's time less the
    launch floor].

    Where none of the units the fix relieves was measured, the model cannot tell whether they bind:
    the stake is then the largest share of work the fix removes, within the time above the binding
    unit's bound (an upper bound, as before the model knew the unit)."""
    t = val(row, "time_s")
    if not known(t) or t <= 0:
        return 0.0
    return min(_stake(row, relief, t), max(t - launch_floor(row), 0.0))


def _stake(row: Row, relief: Relief, t: float) -> float:
    if relief.rewrite_s is not None:
        return max(t - time_after(row, relief), 0.0)
    bound = t * relief.share if relief.share is not None else np.inf
    bounds = unit_times(row)
    changed = relief.units()
    if bounds and changed and not any(u in bounds for u in changed):
        gap = max(t - max(bounds.values()), 0.0)
        return float(min(gap, t * max(relief.removes.values(), default=0.0), bound))
    after = time_after(row, relief, bounds)
    if not known(after):
        return float(min(bound, t)) if relief.share is not None else 0.0
    return float(min(max(t - after, 0.0), bound, t))


def priced(row: Row, relief: Relief) -> float:
    """What the rules' one pricing path (:meth:`ncu_roof.rules.run.RuleRun.price`) wins on one launch."""
    import pandas as pd

    from ncu_roof.model.roofline import Thresholds
    from ncu_roof.rules.run import RuleRun

    run = RuleRun(pd.DataFrame([dict(row)]), Thresholds())
    return run.price(run.placed, [relief])
