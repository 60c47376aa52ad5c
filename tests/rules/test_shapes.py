"""Signals asked once per launch shape (``ncu_roof/rules/shapes.py``) answer exactly as asked launch by
launch: on real inputs with their launches repeated and varied, on random launches, and where a signal
reads a column only on some paths, iterates the row or fails."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.model.roofline import Thresholds
from ncu_roof.rules import shapes
from ncu_roof.rules.common import plain_cells, row_dicts
from ncu_roof.rules.engine import cause_signals
from ncu_roof.rules.run import RuleRun
from ncu_roof.rules.shapes import ask_by_shape, column_codes
from ncu_roof.rules.signals import above_dram_signal, no_tensor_signal
from tests.rules.test_screens import THRESHOLDS, placed_tables  # noqa: F401 - the fixture

SIGNALS = cause_signals()

ALL = {**SIGNALS, "above-dram-roof": above_dram_signal, "no-tensor-cores": no_tensor_signal}


def _by_shape(placed: pd.DataFrame, signal: Any, th: Thresholds | None) -> list[Any]:
    cache: dict[Any, Any] = {}
    return ask_by_shape(signal, th, row_dicts(placed), np.arange(len(placed)),
                        lambda c: column_codes(placed, c, plain_cells, cache))


def _one_by_one(placed: pd.DataFrame, signal: Any, th: Thresholds | None) -> list[Any]:
    return [signal(row, th) for row in row_dicts(placed)]


def _repeated(placed: pd.DataFrame, times: int) -> pd.DataFrame:
    """The launches repeated, every third copy's time changed (shapes that repeat and shapes that do not)."""
    frame = pd.concat([placed] * times, ignore_index=True)
    if "time_s" in frame:
        frame.loc[frame.index % 3 == 0, "time_s"] *= 1.0 + np.arange(len(frame))[frame.index % 3 == 0] * 1e-9
    return frame


def test_every_signal_by_shape_is_every_launch_asked(placed_tables: list[tuple[str, pd.DataFrame]]) -> None:  # noqa: F811
    shared = 0
    for where, placed in placed_tables:
        frame = _repeated(placed, max(2, 64 // max(len(placed), 1)))
        for th in THRESHOLDS:
            for name, signal in ALL.items():
                raw = signal
                assert _by_shape(frame, raw, th) == _one_by_one(frame, raw, th), f"{where}: {name}"
        run = RuleRun(frame, THRESHOLDS[0])  # the run's answers, as the rules read them
        for name, signal in ALL.items():
            answers = run.answers(signal)
            assert answers == _one_by_one(frame, signal, THRESHOLDS[0]), name
            shared += len(frame) - len({id(a) for a in answers if a is not None})
    assert shared > 0  # some answers were found once for several launches


NUMBERS = st.sampled_from([math.nan, math.inf, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 32.0, 33.0, 100.0, 1e9])
COLUMNS = ("waves", "grid_size", "sm_count", "block_size", "time_s", "issue_active", "stall_long_scoreboard",
           "stall_barrier", "achieved_occupancy_pct", "theoretical_occupancy_pct", "binding_unit_share",
           "pct_of_roof", "threads_per_inst", "shared_wavefronts", "shared_bank_conflicts")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({c: NUMBERS for c in COLUMNS} | {
    "bound": st.sampled_from(["memory", "compute", "latency", "unknown", None]),
    "binding_unit": st.sampled_from(["dram", "l1", "pipe_fma", None])}), min_size=1, max_size=6),
    st.integers(min_value=shapes.SMALL, max_value=3 * shapes.SMALL))
def test_random_launches_repeated(template_rows: list[dict[str, Any]], n: int) -> None:
    """Unscreened signals may fail on such launches: then asked by shape, they fail the same way."""
    placed = pd.DataFrame([template_rows[i % len(template_rows)] for i in range(n)])
    for name, signal in ALL.items():
        raw = signal
        assert _outcome(_by_shape, placed, raw) == _outcome(_one_by_one, placed, raw), name


def _outcome(ask: Any, placed: pd.DataFrame, signal: Any) -> Any:
    try:
        return ask(placed, signal, Thresholds())
    except Exception as exc:  # noqa: BLE001 - the failure is the outcome compared
        return type(exc)


def test_a_column_read_on_one_path_only_joins_the_key() -> None:
    """The first launch reads ``a`` only; the others read ``b`` too, which tells them apart."""
    n = 4 * shapes.SMALL
    placed = pd.DataFrame({"a": [0.0] + [1.0] * (n - 1), "b": [float(i % 5) for i in range(n)]})
    calls = []

    def signal(row: Any, th: Any) -> Any:
        calls.append(1)
        return None if row.get("a") == 0 else {"b": row.get("b")}

    expected = _one_by_one(placed, signal, None)
    calls.clear()
    assert _by_shape(placed, signal, None) == expected
    assert len(calls) < 10  # asked about one launch of each shape (and the first twice)


def test_object_cells_are_told_apart_by_type() -> None:
    """1 and 1.0 and True are equal as keys, but a signal may print them differently."""
    n = 3 * shapes.SMALL
    placed = pd.DataFrame({"x": pd.Series([1, 1.0, True, "1", None] * n, dtype=object)})

    def signal(row: Any, th: Any) -> Any:
        return repr(row.get("x"))

    assert _by_shape(placed, signal, None) == _one_by_one(placed, signal, None)


def test_floats_are_told_apart_by_their_bits() -> None:
    n = 3 * shapes.SMALL
    placed = pd.DataFrame({"x": [0.0, -0.0] * n})

    def signal(row: Any, th: Any) -> Any:
        return math.copysign(1.0, row["x"])

    assert _by_shape(placed, signal, None) == _one_by_one(placed, signal, None)


@pytest.mark.parametrize("kind", ["iterates", "fails"])
def test_a_signal_that_reads_the_whole_row_or_fails_is_asked_launch_by_launch(kind: str) -> None:
    n = 3 * shapes.SMALL
    placed = pd.DataFrame({"x": [1.0] * n, "y": range(n)})
    seen = []

    def iterates(row: Any, th: Any) -> Any:
        seen.append(1)
        return sorted(k for k in row if k == "y" or row.get("x"))

    def fails(row: Any, th: Any) -> Any:
        seen.append(1)
        if isinstance(row, shapes.Recorder):
            raise ValueError("a recorder")
        return row["y"]

    signal = iterates if kind == "iterates" else fails
    expected = [signal(row, None) for row in row_dicts(placed)]
    seen.clear()
    assert _by_shape(placed, signal, None) == expected
    assert len(seen) == n + 1  # the first launch through the recorder, then each launch
