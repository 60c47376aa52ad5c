"""The rule run's kernel groups and flagged launches, cut from the placed table with one copy and whole
arrays, are what the former forms (kept here as oracles) gave: the same launches in the same order,
ids sorted as ``sort_values`` sorts them (ties, NaN and odd labels included)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.model.roofline import Thresholds
from ncu_roof.rules import run as rule_run
from ncu_roof.rules.run import RuleRun

KEYS = ["report", "device", "kernel"]


def _groups_oracle(frame: pd.DataFrame, keys: list[str]) -> list[pd.DataFrame]:
    keyed = frame.assign(**{k: frame[k].astype(str) for k in keys if k in frame})
    return [frame.loc[group.index].sort_values("id") for _, group in keyed.groupby(keys, sort=False, dropna=False)]


def _fires_oracle(run: RuleRun, group: pd.DataFrame, signal: Any) -> tuple[pd.DataFrame, list[Any]]:
    answers, floor = run.answers(signal), run.at_floor()
    hits = [(label, s) for label, at in zip(group.index, run.positions(group).tolist(), strict=True)
            if not floor[at] and (s := answers[at]) is not None]
    return group.loc[[label for label, _ in hits]], [s for _, s in hits]


@st.composite
def launch_tables(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 30))
    ids = draw(st.lists(st.one_of(st.integers(0, 5), st.just(float("nan"))), min_size=n, max_size=n))
    frame = pd.DataFrame({
        "report": draw(st.lists(st.sampled_from(["a.ncu-rep", "b.csv"]), min_size=n, max_size=n)),
        "device": draw(st.lists(st.sampled_from(["A100", None]), min_size=n, max_size=n)),
        "kernel": draw(st.lists(st.sampled_from(["k1", "k2", "k3"]), min_size=n, max_size=n)),
        "id": pd.Series(ids, dtype="float64" if any(i != i for i in ids) else "int64"),
        "time_s": draw(st.lists(st.floats(1e-6, 1.0), min_size=n, max_size=n)),
        "bound": draw(st.lists(st.sampled_from(["memory", "overhead"]), min_size=n, max_size=n)),
    })
    if draw(st.booleans()):
        frame.index = pd.Index(draw(st.permutations(range(n)))) * 3
    return frame


@settings(max_examples=60, deadline=None)
@given(launch_tables())
def test_groups_are_the_former_groups(frame: pd.DataFrame) -> None:
    got, expected = rule_run._groups(frame, KEYS), _groups_oracle(frame, KEYS)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


@settings(max_examples=60, deadline=None)
@given(launch_tables(), st.integers(1, 4))
def test_flagged_launches_are_the_former_ones(frame: pd.DataFrame, every: int) -> None:
    """Launches flagged here and there, some at the launch floor (never flagged)."""
    def signal(row: Any, th: Thresholds) -> dict[str, Any] | None:
        return {"t": row["time_s"]} if int(row["time_s"] * 1e6) % every == 0 else None

    frame = frame.assign(id=range(len(frame)))
    run = RuleRun(frame, Thresholds())
    for group in run.groups():
        rows, said = run.fires(group, signal)
        rows_then, said_then = _fires_oracle(run, group, signal)
        pd.testing.assert_frame_equal(rows, rows_then, check_exact=True)
        assert said == said_then
