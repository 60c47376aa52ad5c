"""One engine for stakes: what a fix removes, and the time left after it.

A rule's signal says what its fix relieves (:class:`Relief`): a share of some units' work (the
extra sectors of uncoalesced loads from L1 and L2, the extra wavefronts of bank conflicts from
the shared-memory pipe, the division chains from the FP64 pipe), work moved to another unit (FP64
to FP32 moves the FP64 pipe's work to the FMA pipe at the FP32 rate), and a share of the time
above the binding unit's bound (latency: more warps in flight, fuller waves).

The time after the fix (:func:`time_after`), from the bottleneck model (:mod:`ncu_roof.model.units`):
the binding unit keeps its efficiency, so its time shrinks with its work (the time above its
bound with it, except on a launch-bound launch, whose overhead less work does not remove); every
other unit needs at least its remaining work at its peak; the launch takes the longest of these,
and never less than the launch floor. The stake is the
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
import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.model.units import UNITS, unit_column
from ncu_roof.model.units import label as unit_label
from ncu_roof.rules.common import Row, column_block, known, rows_of, total, val


@dataclass(frozen=True)
class Relief:
    """What a fix takes off a launch: shares of units' work, seconds moved onto units, latency."""

    removes: Mapping[str, float] = field(default_factory=dict)  # unit -> share of its work removed
    adds: Mapping[str, float] = field(default_factory=dict)  # unit -> seconds of work added at its peak
    latency: float = 0.0  # share of the time above the binding unit's bound that the fix removes
    share: float | None = None  # the most of the launch's time the signal itself allows (None: no bound)
    # a fix that rewrites the kernel (tiling a GEMM): the time after is what the rewritten kernel needs at
    # least (its unavoidable bytes and FLOPs at their roofs), whatever the units do today
    rewrite_s: float | None = None

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
    kept = gap * (1.0 - min(max(relief.latency, 0.0), 1.0)) * gap_scale if gap > 0 else 0.0  # 0 x inf: none
    return max(now * scale + kept, *after.values())


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


def total_stake(rows: pd.DataFrame, reliefs: Iterable[Relief]) -> float:
    """The stakes of the launches ``rows`` summed, one relief each. Launches sharing one relief are
    priced together on arrays (:func:`stakes_of`, from the held placed table's columns while the
    rules run: no launch becomes a dict), the same numbers as :func:`stake`."""
    fixes = list(reliefs)
    if len(fixes) != len(rows):
        raise ValueError(f"{len(fixes)} reliefs for {len(rows)} launches")
    if len(fixes) < VECTOR_MIN or any(x != fixes[0] for x in fixes):
        return float(sum(stake(r, x) for (_, r), x in zip(rows_of(rows), fixes, strict=True)))
    relief = fixes[0]
    block = column_block(list(rows.index), ("time_s", "launch_floor_s", *(c for _, c in _COLUMNS)))
    if block is not None and relief.rewrite_s is None:  # the placed table's own columns, while the rules run
        overhead = (rows["bound"].isin(["overhead"]).to_numpy(dtype=bool) if "bound" in rows
                    else np.zeros(len(rows), dtype=bool))
        return float(_priced(block[:, 0], block[:, 2:], relief, block[:, 1], overhead).sum())
    return float(stakes_of([r for _, r in rows_of(rows)], relief).sum())


VECTOR_MIN = 32  # launches sharing a relief, from which pricing them on arrays pays


def stakes_of(rows: list[Row], relief: Relief) -> np.ndarray:
    """:func:`stake` of each launch for one relief, on arrays (rows without the model's unit
    columns, hand-made ones, are priced one by one)."""
    out = np.zeros(len(rows))
    modelled = ([i for i, r in enumerate(rows) if any(c in r for _, c in _COLUMNS)]
                if relief.rewrite_s is None else [])
    for i in sorted(set(range(len(rows))) - set(modelled)):
        out[i] = stake(rows[i], relief)
    if not modelled:
        return out
    picked = [rows[i] for i in modelled]
    t = np.array([val(r, "time_s") for r in picked])
    bounds = np.array([[val(r, c) for _, c in _COLUMNS] for r in picked]).reshape(len(picked), len(_COLUMNS))
    out[modelled] = _priced(t, bounds, relief, np.array([launch_floor(r) for r in picked]),
                            np.array([r.get("bound") == "overhead" for r in picked], dtype=bool))
    return out


def _priced(t: np.ndarray, bounds: np.ndarray, relief: Relief, floor: np.ndarray, overhead: np.ndarray
            ) -> np.ndarray:
    """The stake rule of :func:`stake` and :func:`time_after` over launches (rows) and units (columns),
    within each launch's time less its launch floor."""
    with np.errstate(invalid="ignore", divide="ignore"):  # launches without a bound are masked at the end
        won = _priced_masked(t, bounds, relief, overhead)
    cap = np.maximum(t - np.nan_to_num(floor, nan=0.0), 0.0)
    return np.where(t > 0, np.minimum(won, cap), 0.0)


def _priced_masked(t: np.ndarray, bounds: np.ndarray, relief: Relief, overhead: np.ndarray) -> np.ndarray:
    names = [n for n, _ in _COLUMNS]
    limit = t * relief.share if relief.share is not None else np.full(len(t), np.inf)
    measured = ~np.isnan(bounds)
    any_bound = measured.any(axis=1)
    filled = np.where(measured, bounds, -np.inf)
    binding = filled.argmax(axis=1)  # the first largest, as max() over the units in order
    now = filled[np.arange(len(t)), binding]
    changed = relief.units()
    removes = np.array([min(max(relief.removes.get(n, 0.0), 0.0), 1.0) for n in names])
    adds = np.array([max(relief.adds.get(n, 0.0), 0.0) if n in relief.adds else np.nan for n in names])
    after = np.where(measured, bounds * (1.0 - removes), np.nan)
    has_add = ~np.isnan(adds)
    after[:, has_add] = np.nan_to_num(after[:, has_add], nan=0.0) + adds[has_add]
    extra_adds = [max(x, 0.0) for u, x in relief.adds.items() if u not in names]  # units outside the model
    gap = np.maximum(t - now, 0.0)
    scale = np.where(now > 0, after[np.arange(len(t)), binding] / now, 1.0)
    gap_scale = np.where(overhead, 1.0, scale)
    kept = np.where(gap > 0, gap * (1.0 - min(max(relief.latency, 0.0), 1.0)) * gap_scale, 0.0)  # 0 x inf: none
    binding_time = now * scale + kept
    others = np.nanmax(np.where(np.isnan(after), -np.inf, after), axis=1)
    later = np.maximum(np.maximum(binding_time, others), max(extra_adds, default=-np.inf))
    won = np.minimum(np.minimum(np.maximum(t - later, 0.0), limit), t)
    # none of the relieved units measured: the largest share removed, within the gap
    col = {n: j for j, n in enumerate(names)}
    unmeasured = np.ones(len(t), dtype=bool) if changed else np.zeros(len(t), dtype=bool)
    for u in changed:
        if u in col:
            unmeasured &= ~measured[:, col[u]]
    share_won = np.minimum(np.minimum(gap, t * max(relief.removes.values(), default=0.0)), limit)
    won = np.where(any_bound & unmeasured, share_won, won)
    no_model = np.minimum(limit, t) if relief.share is not None else np.zeros(len(t))
    won = np.where(any_bound, won, no_model)
    return np.where(t > 0, won, 0.0)


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
    units = relief.units()
    pipes = [u for u in units if u.startswith("pipe_")]
    named = [unit_label(u) for u in units if not u.startswith("pipe_")] + (
        [unit_label(pipes[0])] if len(pipes) == 1 else ["the pipes"] if pipes else [])
    relieved = ", ".join(named) or "its units"
    if isinstance(unit, str) and not binds(row, relief):
        return f"{unit_label(unit)} at {fmt_pct(share * 100)} binds; the fix relieves {relieved}"
    return f"the fix relieves {relieved}, and the launch stays near its bound"
