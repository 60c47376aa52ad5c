"""The whole-column screens (ncu_roof/rules/screens.py) never stop a launch its signal fires on:
on every real report and fixture, and on launches whose screened values are drawn at random
(unknown, infinite, zero, on and beside the thresholds)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.diagnosis import diagnose_paths
from ncu_roof.model.roofline import Thresholds, reaches
from ncu_roof.rules.common import below_roof, known, row_dicts, val
from ncu_roof.rules.engine import cause_signals
from ncu_roof.rules.run import RuleRun
from ncu_roof.rules.signals import above_dram_signal

SIGNALS = cause_signals()
SCREENED = {name: s for name, s in {**SIGNALS, "above-dram-roof": above_dram_signal}.items()
            if getattr(s, "screen", None) is not None}
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures").rglob("*.csv"))
THRESHOLDS = [Thresholds(), replace(Thresholds(), divergence_threads=32.0, block_slots_fill=1.0, at_roof_pct=100.0)]


def test_eleven_signals_have_screens() -> None:
    assert sorted(SCREENED) == ["above-dram-roof", "bank-conflicts", "block-size", "divergence", "fp64-pipe",
                                "grid-underfill", "idle-warps", "low-occupancy", "no-fma-roof", "uncoalesced-access",
                                "wave-tail"]


def _check(placed: pd.DataFrame, where: str) -> int:
    """Every screened signal against its screen on every launch; the launches the screens stop."""
    rows, stopped = row_dicts(placed), 0
    for th in THRESHOLDS:
        for name, signal in SCREENED.items():
            mask = np.asarray(signal.screen(placed, th), dtype=bool)
            assert mask.shape == (len(placed),)
            for i, row in enumerate(rows):
                if not mask[i]:
                    stopped += 1
                    assert signal(row, th) is None, f"{where}: {name} fires on launch {i}, screened out"
    return stopped


def _inputs(realdata: Path | None) -> list[Path]:
    reports = sorted(realdata.rglob("*.ncu-rep")) + sorted(realdata.rglob("*.csv")) if realdata else []
    return reports + FIXTURES


@pytest.fixture(scope="module")
def placed_tables(request: pytest.FixtureRequest) -> list[tuple[str, pd.DataFrame]]:
    try:
        realdata: Path | None = request.getfixturevalue("realdata")
    except pytest.skip.Exception:
        realdata = None
    out = []
    for path in _inputs(realdata):
        try:
            out.append((path.name, diagnose_paths(path).placed))
        except Exception:  # noqa: BLE001 - inputs the tool refuses have no placed table
            continue
    assert len(out) >= 10
    return out


def test_screens_never_stop_a_firing_launch_of_a_real_input(placed_tables: list[tuple[str, pd.DataFrame]]) -> None:
    stopped = sum(_check(placed, name) for name, placed in placed_tables)
    assert stopped > 1000  # the screens do stop launches: most signals fire on few of them


NUMBERS = st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 0.0, 1e-7, 0.5, 0.9999999999, 1.0, 1.0000000001,
                           1.5, 2.0, 4.0, 16.0, 31.0, 32.0, 33.0, 64.0, 100.0, 1e9])
SCREENED_COLUMNS = ("waves", "grid_size", "sm_count", "theoretical_occupancy_pct", "achieved_occupancy_pct",
                    "global_sectors_theoretical", "global_sectors_ideal", "global_load_bytes_per_sector_pct",
                    "global_load_requests", "global_load_sectors", "global_store_requests", "global_store_sectors",
                    "shared_wavefronts", "shared_bank_conflicts", "threads_per_inst", "flops_fp64",
                    "pipe_fp64_pct", "time_s", "dram_peak_bytes_per_s", "dram_roof_bytes_per_s", "block_size",
                    "occupancy_limit_blocks", "max_warps_per_sm")


@pytest.fixture(scope="module")
def template(placed_tables: list[tuple[str, pd.DataFrame]]) -> dict[str, Any]:
    """A real launch: the placed table's other columns for the random ones."""
    return placed_tables[0][1].iloc[[0]].to_dict("records")[0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({c: NUMBERS for c in SCREENED_COLUMNS} | {
    "compute_precision": st.sampled_from(["fp64", "fp32", "fp16", "tensor", None]),
    "bound": st.sampled_from(["memory", "compute", "latency", "unknown"]),
    "binding_unit_share": NUMBERS, "pct_of_roof": NUMBERS}), min_size=1, max_size=8))
def test_screens_never_stop_a_firing_launch_drawn_at_random(template: dict[str, Any],
                                                             launches: list[dict[str, Any]]) -> None:
    placed = pd.DataFrame([{**template, **launch} for launch in launches])
    _check(placed, "random launches")


def test_a_screened_out_launch_is_answered_none_without_running_the_signal(
        placed_tables: list[tuple[str, pd.DataFrame]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The screen decides: a launch the signal fires on, stopped by a screen, is answered None."""
    th = Thresholds()
    placed, name, i = next((placed, name, i) for _, placed in placed_tables for name, signal in SCREENED.items()
                           for i, row in enumerate(row_dicts(placed)) if signal(row, th) is not None)
    signal = SCREENED[name]
    stop = np.ones(len(placed), dtype=bool)
    stop[i] = False
    monkeypatch.setattr(signal, "screen", lambda frame, th: stop)
    run = RuleRun(placed, th)
    assert run.screen(signal) is stop
    assert run.answers(signal)[i] is None


def _fires(row: dict[str, Any], th: Thresholds, *also: Any) -> bool:
    return any(signal(row, th) is not None for signal in (*also, *SIGNALS.values()))


def _below_roof_unexplained(row: dict[str, Any], th: Thresholds) -> bool:
    """below-roof's test written for one launch: below its roof, with a roof percentage, no cause."""
    return below_roof(row, th.at_roof_pct) and known(val(row, "pct_of_roof")) and not _fires(row, th)


def _on_roof_unexplained(row: dict[str, Any], th: Thresholds) -> bool:
    """at-roof's test written for one launch: memory or compute bound, at its roof, no cause (not even
    reading past the DRAM roof)."""
    return (row.get("bound") in ("memory", "compute") and reaches(val(row, "pct_of_roof"), th.at_roof_pct)
            and not _fires(row, th, above_dram_signal))


def _check_whole_table_tests(placed: pd.DataFrame, where: str) -> int:
    """below-roof's and at-roof's tests over the whole table, as the rule run asks them, against the
    same tests written for one launch (the oracle above); launches passing."""
    from ncu_roof.rules import checklist

    passing = 0
    pairs = [(checklist._below_roof_unexplained, _below_roof_unexplained),
             (checklist._on_roof_unexplained, _on_roof_unexplained)]
    for th in THRESHOLDS:
        run = RuleRun(placed, th)
        for whole, one in pairs:
            got = np.asarray(whole(run), dtype=bool).tolist()
            expected = [one(row, th) for row in row_dicts(placed)]
            assert got == expected, f"{where}: {one.__name__}"
            passing += sum(expected)
    return passing


def test_whole_table_rule_tests_match_each_launchs(placed_tables: list[tuple[str, pd.DataFrame]]) -> None:
    assert sum(_check_whole_table_tests(placed, name) for name, placed in placed_tables) > 50


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({c: NUMBERS for c in SCREENED_COLUMNS} | {
    "compute_precision": st.sampled_from(["fp64", "fp32", "fp16", "tensor", None]),
    "bound": st.sampled_from(["memory", "compute", "latency", "unknown", None]),
    "binding_unit_share": NUMBERS, "pct_of_roof": NUMBERS}), min_size=1, max_size=8))
def test_whole_table_rule_tests_match_on_launches_drawn_at_random(template: dict[str, Any],
                                                                  launches: list[dict[str, Any]]) -> None:
    _check_whole_table_tests(pd.DataFrame([{**template, **launch} for launch in launches]), "random launches")


def test_held_launches_become_the_dicts_row_dicts_makes_when_first_asked_for(
        placed_tables: list[tuple[str, pd.DataFrame]]) -> None:
    from ncu_roof.rules.common import HeldRows

    placed = max((placed for _, placed in placed_tables), key=len)
    rows, expected = HeldRows(placed), row_dicts(placed)
    assert len(rows) == len(placed) and rows.made() == 0
    last = rows[-1]
    assert last is rows[len(placed) - 1] and rows.made() == 1
    def plain(row: dict[str, Any]) -> dict[str, Any]:
        return {k: "NaN" if v != v else v for k, v in row.items()}

    assert plain(last) == plain(expected[-1])
    assert [list(r) for r in rows[:2]] == [list(expected[0]), list(expected[1])] and rows.made() == 3
    with pytest.raises(IndexError):
        rows[len(placed)]
