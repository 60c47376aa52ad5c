"""Launches read many at a time give the frame launches decoded one by one give: the gathered rows'
identity (names, NVTX, device, CC, launch shape) and metrics, in the columns' order, and the rule
results; the parts are assembled from row dicts and gathered rows as the former dict-only assembly
(kept here as the oracle) did. And a read begun early (:func:`start_reading`) is the read proper."""

from __future__ import annotations

import math
from itertools import cycle
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ncu_roof.read import native, parallel
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.native import values
from ncu_roof.read.parallel import ReadOptions, read_raw_frames, start_reading, stop_reading

TEMPLATE = "NCAR__GPU_workshop/MW_Baseline.ncu-rep"


def _rows_part(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The columns of row dicts as the reader made them before launches were gathered (the oracle)."""
    identity = set(IDENTITY_COLUMNS)
    columns: dict[str, Any] = {c: [row.get(c) for row in rows] for c in IDENTITY_COLUMNS}
    first = rows[0].keys() if rows else {}.keys()
    if rows and all(row.keys() == first for row in rows):
        names = [c for c in first if c not in identity]
        if names:
            matrix = np.array(list(map(itemgetter(*names), rows)), dtype="float64").reshape(len(rows), len(names))
            columns.update(zip(names, matrix.T.copy(), strict=True))
        return columns
    for c in dict.fromkeys(k for row in rows for k in row):
        if c not in identity:
            columns[c] = np.array([row.get(c, math.nan) for row in rows], dtype="float64")
    return columns


def _alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every launch decoded alone: no layout gets a plan."""
    monkeypatch.setattr(values, "plan", lambda *args: None)


def _same(ours: pd.DataFrame, alone: pd.DataFrame) -> None:
    assert list(ours.columns) == list(alone.columns)
    pd.testing.assert_frame_equal(ours, alone, check_exact=True)
    for column in IDENTITY_COLUMNS:  # the same Python values, not only equal ones
        assert [type(v) for v in ours[column]] == [type(v) for v in alone[column]], column
    assert ours.attrs["notes"] == alone.attrs["notes"]
    assert repr(list(ours.attrs["ncu_rule_results"])) == repr(list(alone.attrs["ncu_rule_results"]))


@pytest.fixture(scope="module")
def mixed_report(reportgen_mod: Any, realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three kernels launched in turn (each its own size, so its own plan), their values and NVTX
    changing from launch to launch, one launch of another device and one of a damaged CC."""
    rg = reportgen_mod
    nvtx = cycle([["outer"], ["outer", "inner"], []])
    launches = []
    for i in range(60):
        kernel = ("alpha", "beta_kernel", "gamma_kernel_long_name")[i % 3]
        metrics: dict[str, Any] = {"gpu__time_duration.sum": 1000.0 + i, "dram__bytes_read.sum": 1e6 * (i % 7),
                                   "launch__grid_dim_x": rg.Uint32(1 + i % 4)}
        if i == 40:
            metrics["device__attribute_compute_capability_major"] = rg.Uint32(99)
        launches.append(rg.LaunchSpec(kernel, metrics=metrics, nvtx=next(nvtx),
                                      device="NVIDIA H100 PCIe" if i == 31 else None))
    dst = tmp_path_factory.mktemp("mixed") / "mixed.ncu-rep"
    rg.write_report(dst, launches, realdata / TEMPLATE, index=3)
    return dst


def test_gathered_launches_read_as_launches_decoded_alone(mixed_report: Path, monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    ours = native.load_native(mixed_report)
    with monkeypatch.context() as m:
        _alone(m)
        alone = native.load_native(mixed_report)
    _same(ours, alone)
    assert ours["nvtx"].tolist()[:2] == ["outer", "outer/inner"] and pd.isna(ours["nvtx"][2])
    assert ours["grid_dim"].nunique() == 4


def test_copies_of_a_full_set_launch_read_as_decoded_alone(reportgen_mod: Any, realdata: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's shape (one launch with its per-opcode counts and rule results, copied), in
    chunks that start and end anywhere."""
    dst = tmp_path / "copies.ncu-rep"
    reportgen_mod.replicate(realdata / TEMPLATE, dst, 150, index=3)
    ours = native.load_native(dst, chunk_bytes=3 << 20)
    with monkeypatch.context() as m:
        _alone(m)
        alone = native.load_native(dst)
    _same(ours, alone)
    assert any(c.startswith("sass__inst_executed_per_opcode_with_modifier_all[") for c in ours.columns)


def test_parts_of_mixed_rows_are_the_dict_rows_parts(mixed_report: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk's rows (row dicts and gathered rows) make the columns their dicts would make."""
    chunks, _, _ = native.plan(mixed_report, mixed_report, 1 << 62)
    rows: list[Any] = []
    monkeypatch.setattr(native, "part_of", lambda got, rules: rows.extend(got))
    native.read_chunk(chunks[0])
    monkeypatch.undo()
    assert {type(r) for r in rows} == {dict, values.Gathered}
    part = native.part_of(rows, native.RuleResults())
    with monkeypatch.context() as m:
        _alone(m)
        dicts: list[Any] = []
        m.setattr(native, "part_of", lambda got, rules: dicts.extend(got))
        native.read_chunk(native.plan(mixed_report, mixed_report, 1 << 62)[0][0])
    expected = _rows_part(dicts)
    assert list(part.columns) == list(expected)
    for column, got in part.columns.items():
        if column in IDENTITY_COLUMNS:
            assert got == expected[column], column
        else:
            np.testing.assert_array_equal(got, expected[column], err_msg=column)


def test_parts_of_rows_holding_other_metrics() -> None:
    """Row dicts naming other metrics than the gathered rows beside them: each column where the first
    row names it, NaN where a launch lacks it."""
    block = np.array([[1.0, 2.0], [3.0, 4.0]])
    ident = ("r", 0, "k", "k", None, None, None, None, None, None, None)
    keys = ("a", "b")
    gathered = [values.Gathered(keys, block, 2, j, {}, (*ident[:1], j + 1, *ident[2:])) for j in range(2)]
    rows: list[Any] = [{"c": 5, "a": 0.5, "kernel": "x", "id": 0}, *gathered, {"b": None, "d": 7.0, "id": 3}]
    part = native.part_of(rows, native.RuleResults())
    expected = _rows_part([{"c": 5, "a": 0.5, "kernel": "x", "id": 0}, {"a": 1.0, "b": 2.0, "report": "r", "id": 1,
                           "kernel": "k", "kernel_demangled": "k"}, {"a": 3.0, "b": 4.0, "report": "r", "id": 2,
                           "kernel": "k", "kernel_demangled": "k"}, {"b": None, "d": 7.0, "id": 3}])
    assert list(part.columns) == list(expected) == [*IDENTITY_COLUMNS, "c", "a", "b", "d"]
    for column in ("c", "a", "b", "d"):
        np.testing.assert_array_equal(part.columns[column], expected[column])
    assert part.columns["id"] == [0, 1, 2, 3] and part.n == 4


# --------------------------------------------------------------------------- a read begun early


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports of a few MB shared out in chunks, as a big one is."""
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_MIN_BYTES", 1 << 20)
    parallel.set_options(jobs=2, quiet=True)
    yield
    stop_reading()
    parallel.set_options(jobs=None, quiet=False)


@pytest.mark.usefixtures("small_chunks")
def test_a_read_begun_early_is_taken_over(mixed_report: Path) -> None:
    expected = read_raw_frames([mixed_report], ReadOptions(jobs=1, quiet=True))[0]
    start_reading([str(mixed_report), mixed_report])  # named twice: read once
    started = parallel._started
    assert started is not None and len(started.tasks) > 1 and started.paths == [str(mixed_report)]
    got = read_raw_frames([mixed_report])[0]
    assert parallel._started is None
    _same(got, expected)


@pytest.mark.usefixtures("small_chunks")
def test_a_read_begun_early_of_other_inputs_is_stopped(mixed_report: Path, realdata: Path) -> None:
    other = realdata / TEMPLATE
    start_reading(mixed_report)
    assert parallel._started is not None
    got = read_raw_frames([other])[0]  # not what was begun: that read is stopped, this one done
    assert parallel._started is None
    _same(got, read_raw_frames([other], ReadOptions(jobs=1, quiet=True))[0])
    start_reading(mixed_report)
    stop_reading()
    assert parallel._started is None


@pytest.mark.usefixtures("small_chunks")
def test_nothing_is_begun_but_a_report_named_as_a_file(mixed_report: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.ncu-rep"
    empty.touch()
    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n")
    for inputs in ("-", str(tmp_path), str(tmp_path / "*.ncu-rep"), [mixed_report, csv], empty, []):
        start_reading(inputs)  # type: ignore[arg-type]
        assert parallel._started is None, inputs
    parallel.set_options(reader="ncu_report")
    start_reading(mixed_report)
    assert parallel._started is None
    parallel.set_options(reader="native")


@pytest.mark.usefixtures("small_chunks")
def test_the_cli_begins_the_read_and_says_the_same(mixed_report: Path, tmp_path: Path) -> None:
    """``diagnose`` begins reading before it imports pandas; its output is the output of a read in one
    process."""
    from ncu_roof.cli import main

    outputs = []
    for jobs in ("2", "1"):
        out = tmp_path / f"d{jobs}.json"
        with pytest.raises(SystemExit) as done:
            main(["diagnose", "-q", "-j", jobs, "-f", "json", "-o", str(out), str(mixed_report)])
        assert done.value.code == 0
        outputs.append(out.read_text())
        assert parallel._started is None
    assert outputs[0] == outputs[1]
