"""One engine for stakes: what a fix removes, and the time left after it.

A rule's signal says what its fix relieves (:class:`Relief`): a share of some units' work (the
extra sectors of uncoalesced loads from L1 and L2, the extra wavefronts of bank conflicts from
the shared-memory pipe, the division chains from the FP64 pipe), work moved to another unit (FP64
to FP32 moves the FP64 pipe's work to the FMA pipe at the FP32 rate), and a share of the time
above the binding unit's bound (latency: more warps in flight, fuller waves).

The time after the fix (:func:`priced`, over launches as arrays: the one pricing path, which
:meth:`ncu_roof.rules.run.RuleRun.price` asks), from the bottleneck model (:mod:`ncu_roof.model.units`):
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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.model.units import UNITS, unit_column
from ncu_roof.model.units import label as unit_label
from ncu_roof.rules.common import Row, total, val


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
    # the share of a launch's stalls that waits on memory (and at barriers, for the warps waiting on it)
    # explain: on a launch no unit saturates, the most of its time above the bound a memory fix shortens
    waits: float = 1.0

    def units(self) -> tuple[str, ...]:
        """The units whose work the fix changes."""
        return tuple(u for u, f in {**self.removes, **self.adds}.items() if f > 0)


UNIT_COLUMNS = tuple((u.name, unit_column(u.name)) for u in UNITS)  # each unit and its time column


def priced(names: tuple[str, ...], t: np.ndarray, bounds: np.ndarray, relief: Relief, floor: np.ndarray,
           overhead: np.ndarray) -> np.ndarray:
    """The time one fix wins on each launch (rows): ``t`` its time, ``bounds`` its units' times at
    their limits (columns named ``names``, NaN where unmeasured), ``floor`` its launch floor and
    ``overhead`` whether it is launch-bound; within [0, the time less the launch floor]."""
    with np.errstate(invalid="ignore", divide="ignore"):  # launches without a bound are masked at the end
        if relief.rewrite_s is not None:  # the rewritten kernel's time, whatever the units do today
            won = np.where(t > 0, np.maximum(t - np.maximum(relief.rewrite_s, floor), 0.0), 0.0)
        else:
            won = _priced_masked(names, t, bounds, relief, overhead)
    cap = np.maximum(t - floor, 0.0)
    return np.where(t > 0, np.minimum(won, cap), 0.0)


def _priced_masked(names: tuple[str, ...], t: np.ndarray, bounds: np.ndarray, relief: Relief,
                   overhead: np.ndarray) -> np.ndarray:
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
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # both branches are computed: 0 or tiny now
        scale = np.where(now > 0, after[np.arange(len(t)), binding] / now, 1.0)
    gap_scale = np.where(overhead, 1.0, scale)  # launch overhead stays with less work
    kept = gap * (1.0 - _latency_removed(names, t, now, measured, removes, relief))
    kept = np.where(kept > 0, kept * gap_scale, 0.0)  # none kept stays none, whatever the scale (0 x inf)
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


SATURATED_SHARE = 0.8  # a binding unit under this share of its peak sets no bound the time sits on
MEMORY_UNITS = frozenset(u.name for u in UNITS if u.family == "memory" and not u.coarse)


def _latency_removed(names: tuple[str, ...], t: np.ndarray, now: np.ndarray, measured: np.ndarray,
                     removes: np.ndarray, relief: Relief) -> np.ndarray:
    """The share of the time above the binding unit's bound a fix removes, per launch: the relief's
    own latency share; where no unit is saturated (the binding one under :data:`SATURATED_SHARE`), the
    waits on memory in that time (``relief.waits`` of it) shrink with the memory work the fix
    removes: at most the largest share it removes from a measured memory unit, of those waits."""
    base = np.full(len(t), min(max(relief.latency, 0.0), 1.0))
    memory = np.array([n in MEMORY_UNITS for n in names])
    if not (memory & (removes > 0)).any():
        return base
    share = np.where(measured[:, memory], removes[memory], 0.0).max(axis=1) * min(max(relief.waits, 0.0), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        unsaturated = now < SATURATED_SHARE * t
    return np.where(unsaturated, np.maximum(base, share), base)


IDLE_UNIT_SHARE = 0.05  # a binding unit under this share of its peak is not said to bind


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
    if isinstance(unit, str) and relief.removes.get(unit, 0.0) <= 0:  # a share of the waits at most
        if share < IDLE_UNIT_SHARE:  # the busiest unit is all but idle: latency, not a unit, sets the time
            return f"no unit is busy; the fix relieves {relieved}"
        verb = "binds" if share >= SATURATED_SHARE else "is busiest"  # a unit well under its peak binds nothing
        return f"{unit_label(unit)} at {fmt_pct(share * 100)} {verb}; the fix relieves {relieved}"
    return f"the fix relieves {relieved}, and the launch stays near its bound"
