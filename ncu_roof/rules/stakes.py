"""One engine for stakes: what a fix removes, and the time left after it.

A rule's signal says what its fix relieves (:class:`Relief`): a share of some units' work (the
extra sectors of uncoalesced loads from L1 and L2, the extra wavefronts of bank conflicts from
the shared-memory pipe, the division chains from the FP64 pipe), work moved to another unit (FP64
to FP32 moves the FP64 pipe's work to the FMA pipe at the FP32 rate), and a share of the time
above the binding unit's bound (latency: more warps in flight, fuller waves).

The time after the fix (:func:`time_after`), from the bottleneck model (:mod:`ncu_roof.model.units`):
the binding unit keeps its efficiency, so its time shrinks with its work; every other unit needs
at least its remaining work at its peak; the launch takes the longest of these. The stake is the
time now minus that, between 0 and the launch's time: a fix whose units do not bind wins nothing
while the binding unit stays as it is. A launch with no unit measured has no model: a relief with
a ``share`` (a bound the signal itself gives, such as idle SMs) stakes that share of its time,
any other nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.model.units import UNITS, unit_column
from ncu_roof.model.units import label as unit_label
from ncu_roof.rules.common import Row, known, total, val


@dataclass(frozen=True)
class Relief:
    """What a fix takes off a launch: shares of units' work, seconds moved onto units, latency."""

    removes: Mapping[str, float] = field(default_factory=dict)  # unit -> share of its work removed
    adds: Mapping[str, float] = field(default_factory=dict)  # unit -> seconds of work added at its peak
    latency: float = 0.0  # share of the time above the binding unit's bound that the fix removes
    share: float | None = None  # the most of the launch's time the signal itself allows (None: no bound)

    def units(self) -> tuple[str, ...]:
        """The units whose work the fix changes."""
        return tuple(u for u, f in {**self.removes, **self.adds}.items() if f > 0)


_COLUMNS = tuple((u.name, unit_column(u.name)) for u in UNITS)


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
    binding_time = (now + gap * (1.0 - min(max(relief.latency, 0.0), 1.0))) * scale
    return max(binding_time, *after.values())


def stake(row: Row, relief: Relief) -> float:
    """The time the fix wins on one launch: now minus after, within [0, the launch's time].

    Where none of the units the fix relieves was measured, the model cannot tell whether they bind:
    the stake is then the largest share of work the fix removes, within the time above the binding
    unit's bound (an upper bound, as before the model knew the unit)."""
    t = val(row, "time_s")
    if not known(t) or t <= 0:
        return 0.0
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


def total_stake(rows: Iterable[tuple[Any, Row]], reliefs: Iterable[Relief]) -> float:
    """The stakes of several launches summed (rows as ``rows_of`` yields them)."""
    return float(sum(stake(r, x) for (_, r), x in zip(rows, reliefs, strict=True)))


def binds(row: Row, relief: Relief) -> bool:
    """Whether the fix relieves the launch's binding unit (or its latency)."""
    unit = row.get("binding_unit")
    return relief.latency > 0 or (isinstance(unit, str) and relief.removes.get(unit, 0.0) > 0)


def stake_text(rows: Any, stake: float, signals: list[dict[str, Any]]) -> str:
    """The lead sentence's time: what is at stake, or why little is (its units do not bind)."""
    if stake > 0.05 * total(rows, "time_s"):
        return f", up to {fmt_seconds(stake)} of {fmt_seconds(total(rows, 'time_s'))} at stake"
    return f"; little time at stake ({not_binding_text(rows.iloc[0], signals[0]['relief'])})"


def not_binding_text(row: Row, relief: Any) -> str:
    """Why a fix wins little: the unit that binds and that the fix leaves as it is."""
    unit, share = row.get("binding_unit"), val(row, "binding_unit_share")
    relieved = ", ".join(unit_label(u) for u in relief.units()) or "its units"
    if isinstance(unit, str) and not binds(row, relief):
        return f"not the limiter: {unit_label(unit)} binds at {fmt_pct(share * 100)}; the fix relieves {relieved}"
    return f"the fix relieves {relieved}, and the launch stays near its bound"
