"""One evaluation of the rules over one placed table: :class:`RuleRun`.

:func:`ncu_roof.rules.evaluate` builds one per diagnosis (a :class:`~ncu_roof.rules.base.Context`
makes its own when a test builds a context by hand, so a rule asked outside ``evaluate`` takes the
same path). The run owns what several rules ask of the same launches and keeps each answer once:
the kernel groups, each signal's whole-column screen and its answer per launch (each distinct launch
shape asked once, :func:`ncu_roof.rules.shapes.ask_by_shape`), whole-table tests, the units' times
as arrays, and the launches as dicts, each made when a signal first reads it
(:class:`~ncu_roof.rules.common.HeldRows`). Rules ask it through four questions: :meth:`groups`,
:meth:`fires` (a signal's flagged launches of a group), :meth:`fires_any` and :meth:`where` (whole-table
tests), and :meth:`price` (the one pricing path, :func:`ncu_roof.rules.stakes.priced`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from operator import is_not
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.model.roofline import Thresholds
from ncu_roof.rules.common import HeldRows, plain_cells
from ncu_roof.rules.shapes import ask_by_shape, column_codes
from ncu_roof.rules.stakes import UNIT_COLUMNS, Relief, priced

Signal = Callable[[Any, Thresholds], Any]
Whole = Callable[["RuleRun"], np.ndarray]


class RuleRun:
    """The placed table one evaluation runs on, and every answer the rules share about it."""

    def __init__(self, placed: pd.DataFrame, th: Thresholds) -> None:
        if not placed.index.is_unique:  # launches are found by label: give each its own
            placed = placed.reset_index(drop=True)
        self.placed, self.th = placed, th
        self.rows = HeldRows(placed)
        self._positions = pd.Index(placed.index)
        self._memo: dict[Any, Any] = {}

    def once(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()``, made the first time ``key`` is asked for in this run and kept."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def positions(self, frame: pd.DataFrame | pd.Index) -> np.ndarray:
        """Each launch of ``frame`` (rows of the placed table, or their labels) by its position in the table."""
        return self._positions.get_indexer(frame if isinstance(frame, pd.Index) else frame.index)

    def values(self, column: str) -> np.ndarray:
        """``val(row, column)`` of every launch, as float64 (made once)."""
        from ncu_roof.rules.screens import values

        return self.once(("values", column), lambda: values(self.placed, column))  # type: ignore[no-any-return]

    def launches(self, frame: pd.DataFrame) -> list[dict[str, Any]]:
        """The launches of ``frame`` (rows of the placed table) as dicts of plain values."""
        return [self.rows[i] for i in self.positions(frame).tolist()]

    def groups(self, extra: Sequence[str] = (), frame: pd.DataFrame | None = None) -> list[pd.DataFrame]:
        """Launches of one kernel (per report and device; plus ``extra`` keys), in launch order; of
        ``frame`` (a subset of the placed table) where given, else of the whole table (found once)."""
        keys = ["report", "device", "kernel", *extra]
        if frame is not None:
            return _groups(frame, keys)
        return self.once(("groups", *keys), lambda: _groups(self.placed, keys))  # type: ignore[no-any-return]

    def screen(self, signal: Signal) -> np.ndarray:
        """The signal's whole-column screen (False where it cannot fire; all True without one)."""
        screen = getattr(signal, "screen", None)
        if screen is None:
            return np.ones(len(self.placed), dtype=bool)
        return self.once(("screen", signal), lambda: np.asarray(screen(self.placed, self.th), dtype=bool))  # type: ignore[no-any-return]

    def answers(self, signal: Signal) -> list[Any]:
        """The signal's answer for every launch (None where its screen stops it), each distinct
        launch shape asked once."""
        return self.once(("answers", signal), lambda: self._ask(signal))  # type: ignore[no-any-return]

    def _ask(self, signal: Signal) -> list[Any]:
        where = np.flatnonzero(self.screen(signal))
        said = ask_by_shape(signal, self.th, self.rows, where,
                            lambda column: column_codes(self.placed, column, plain_cells, self._memo))
        if len(where) == len(self.placed):  # every launch asked: the answers in launch order already
            return said
        answers: list[Any] = [None] * len(self.placed)
        for i, answer in zip(where.tolist(), said, strict=True):
            answers[i] = answer
        return answers

    def fired(self, signal: Signal) -> np.ndarray:
        """Per launch, whether ``signal`` fires there (its answer is not None)."""
        def make() -> np.ndarray:
            answers = self.answers(signal)
            return np.fromiter(map(is_not, answers, repeat(None)), dtype=bool, count=len(answers))
        return self.once(("fired", signal), make)  # type: ignore[no-any-return]

    def fires_any(self, signals: Sequence[Signal]) -> np.ndarray:
        """Per launch, whether any of ``signals`` fires there."""
        def make() -> np.ndarray:
            mask = np.zeros(len(self.placed), dtype=bool)
            for signal in signals:
                mask |= self.fired(signal)
            return mask
        return self.once(("any", *signals), make)  # type: ignore[no-any-return]

    def at_floor(self) -> np.ndarray:
        """Per launch, whether it is launch-bound (near the launch floor, its work explaining little of
        its time: the placement's "overhead" bound). Only the overhead note speaks of such a launch:
        no fix of the kernel's work wins a measurable share of it."""
        return self.once("at floor", lambda: (self.placed["bound"] == "overhead").to_numpy(dtype=bool)  # type: ignore[no-any-return]
                         if "bound" in self.placed else np.zeros(len(self.placed), dtype=bool))

    def fires(self, group: pd.DataFrame, signal: Signal) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
        """The launches of ``group`` where ``signal`` fires, and its answer for each; never a launch at
        the launch floor (:meth:`at_floor`)."""
        answers = self.answers(signal)
        at = self.positions(group)
        hit = self.once(("hits", signal), lambda: self.fired(signal) & ~self.at_floor())[at]
        return group.take(np.flatnonzero(hit)), [answers[i] for i in at[hit].tolist()]

    def where(self, group: pd.DataFrame, whole: Whole) -> np.ndarray:
        """``whole(run)``, a test of every launch of the table (computed once per run), for ``group``."""
        mask = self.once(("where", whole), lambda: np.asarray(whole(self), dtype=bool))
        return mask[self.positions(group)]  # type: ignore[no-any-return]

    def units(self) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The units' names and, per launch, their times at their limits, the launch's time, its
        launch floor and whether it is launch-bound (as arrays, made once)."""
        return self.once("units", lambda: unit_arrays(self.placed))  # type: ignore[no-any-return]

    def price(self, rows: pd.DataFrame, reliefs: Sequence[Relief]) -> float:
        """The time the fixes win on the launches ``rows``, one relief each, summed in launch order."""
        return float(self.stakes(rows, reliefs).sum()) if len(rows) >= SUM_ON_ARRAYS and _same(reliefs) else \
            float(sum(self.stakes(rows, reliefs).tolist()))

    def judged(self, rows: pd.DataFrame, reliefs: Sequence[Relief]) -> bool:
        """Whether the model can price the fixes on ``rows`` at all: some launch has a unit measured
        against its limit, or a relief carries its own bound (a share of the time, a rewrite's floor).
        Where it cannot, the stake is unknown, not 0."""
        if any(r.share is not None or r.rewrite_s is not None for r in reliefs):
            return True
        bounds = self.units()[1][self.positions(rows)]
        return bool((~np.isnan(bounds)).any())

    def stakes(self, rows: pd.DataFrame, reliefs: Sequence[Relief]) -> np.ndarray:
        """The time each launch's fix wins (:func:`ncu_roof.rules.stakes.priced`)."""
        if len(reliefs) != len(rows):
            raise ValueError(f"{len(reliefs)} reliefs for {len(rows)} launches")
        names, bounds, t, floor, overhead = self.units()
        at = self.positions(rows)
        out = np.zeros(len(rows))
        for relief, picked in _by_relief(reliefs):
            p = at[picked]
            out[picked] = priced(names, t[p], bounds[p], relief, floor[p], overhead[p])
        return out


SUM_ON_ARRAYS = 32  # launches sharing one relief, from which their stakes are summed pairwise (numpy)


def _same(reliefs: Sequence[Relief]) -> bool:
    return all(x == reliefs[0] for x in reliefs)


def _by_relief(reliefs: Sequence[Relief]) -> list[tuple[Relief, np.ndarray]]:
    """The distinct reliefs (equal as dataclasses), each with the positions that carry it, in order of
    first appearance; found by a key per relief, not by comparing each with every one before it (a
    peer's relief differs on every launch: 10,000 launches were 50 million comparisons)."""
    distinct: dict[tuple[Any, ...], tuple[Relief, list[int]]] = {}
    for i, relief in enumerate(reliefs):
        key = (tuple(sorted(relief.removes.items())), tuple(sorted(relief.adds.items())), relief.latency,
               relief.share, relief.rewrite_s, relief.waits)
        distinct.setdefault(key, (relief, []))[1].append(i)
    return [(relief, np.array(where)) for relief, where in distinct.values()]


def unit_arrays(placed: pd.DataFrame) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The units' names and times (launches x units, NaN where unmeasured), each launch's time,
    launch floor (0 where unknown) and whether it is launch-bound. A table without the model's unit
    columns (a hand-made one) has the roofline's bound as its one unit."""
    def floats(column: str) -> np.ndarray:
        from ncu_roof.rules.screens import values

        return values(placed, column)

    present = [(name, column) for name, column in UNIT_COLUMNS if column in placed]
    if present or any(column in placed for _, column in UNIT_COLUMNS):
        names = tuple(name for name, _ in UNIT_COLUMNS)
        bounds = np.column_stack([floats(c) for _, c in UNIT_COLUMNS]) if len(placed) else \
            np.empty((0, len(names)))
    else:
        lower, head = floats("time_lower_bound_s"), floats("time_s") - floats("headroom_s")
        names = ("roofline",)
        bounds = np.maximum(np.where(np.isnan(lower), head, lower), 0.0).reshape(-1, 1)
    floor = floats("launch_floor_s")
    floor = np.where(floor > 0, floor, 0.0)
    overhead = (placed["bound"].isin(["overhead"]).to_numpy(dtype=bool) if "bound" in placed
                else np.zeros(len(placed), dtype=bool))
    return names, bounds, floats("time_s"), floor, overhead


def _groups(frame: pd.DataFrame, keys: list[str]) -> list[pd.DataFrame]:
    """The launches of each value of ``keys`` (as text), in order of first appearance, each group
    sorted by ``id`` (as ``sort_values`` sorts it) and taken from ``frame`` in one copy."""
    keyed = pd.DataFrame({k: frame[k].astype(str) for k in keys}, index=frame.index)  # the keys alone: no copy
    codes = keyed.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    ordered = np.argsort(codes, kind="stable")
    ids = frame["id"]
    return [frame.take(at[ids.take(at).reset_index(drop=True).sort_values().index.to_numpy()])
            for at in np.split(ordered, np.flatnonzero(np.diff(codes[ordered])) + 1) if len(at)]
