"""The per-instruction table (Source Counters): ncu-roof's own reader against NVIDIA's ``ncu_report``
on every real report, pinned numbers of named reports, and damaged source data as a note."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REALDATA

from ncu_roof.read.metrics import SOURCE_COLUMNS
from ncu_roof.read.source import has_line_table, load_instructions
from ncu_roof.read.source.frame import IDENTITY

REPORTS = sorted(REALDATA.glob("*/*.ncu-rep"))
MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"


@pytest.mark.parametrize("path", REPORTS, ids=[p.parent.name + "/" + p.name for p in REPORTS])
def test_native_reader_gives_what_ncu_report_gives_for_every_pc(path: Path, realdata: Path) -> None:
    pytest.importorskip("ncu_report")
    native = load_instructions(path, reader="native")
    theirs = load_instructions(path, reader="ncu_report")
    assert native.attrs["notes"] == [] and theirs.attrs["notes"] == []
    assert len(native) == len(theirs)
    if native.empty:
        return
    both = native.merge(theirs, on=["id", "pc"], suffixes=("", "_ncu"), validate="one_to_one")
    assert len(both) == len(native)
    assert (both["kernel"] == both["kernel_ncu"]).all()
    assert (both["offset"] == both["offset_ncu"]).all()
    assert (both["line"] == both["line_ncu"]).all()
    assert (both["file"].fillna("") == both["file_ncu"].fillna("")).all()
    counters = [c for c in SOURCE_COLUMNS if c in native]
    assert counters == [c for c in SOURCE_COLUMNS if c in theirs]
    for column in counters:
        assert np.array_equal(both[column].to_numpy(), both[f"{column}_ncu"].to_numpy(), equal_nan=True), column


def test_mw_baseline_division_line_carries_439m_instructions(realdata: Path) -> None:
    table = load_instructions(MW, ids=[2])
    assert set(table["kernel"]) == {"compute_tendencies_x_279_gpu"}
    by_line = table[table["line"] > 0].groupby(["file", "line"])["inst_executed"].sum().sort_values()
    (file, line), top = by_line.index[-1], by_line.iloc[-1]
    assert file.endswith("miniWeather_mpi_openacc.F90") and line == 288
    assert top == 439_531_424
    # the FP64 division's slow path is a device function without lines, named with its offsets
    slow = table[table["function"] == "__cuda_sm20_div_f64_slowpath_v2"]
    assert len(slow) and (slow["line"] == -1).all() and (slow["offset"] >= 0).all()
    assert "miniWeather_mpi_openacc.F90" in next(iter(table.attrs["sources"]))


def test_columns_and_launch_ids_match_the_launch_table(realdata: Path) -> None:
    table = load_instructions(MW)
    assert list(table.columns[: len(IDENTITY)]) == list(IDENTITY)
    assert sorted(table["id"].unique()) == [0, 1, 2, 3, 4]
    assert table["inst_executed"].dtype == np.float64
    # per launch the instruction counts add up to the launch's inst_executed aggregate
    from ncu_roof.read.native import load_native

    raw = load_native(MW)
    if "smsp__inst_executed.sum" in raw:
        per_launch = table.groupby("id")["inst_executed"].sum()
        assert np.allclose(per_launch.to_numpy(), raw.set_index("id").loc[per_launch.index, "smsp__inst_executed.sum"])


def test_report_without_source_counters_gives_no_rows(realdata: Path) -> None:
    table = load_instructions(REALDATA / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep")
    assert table.empty and table.attrs["notes"] == []


def test_report_without_line_table_names_function_and_offset(realdata: Path) -> None:
    table = load_instructions(REALDATA / "AshunFeiyu__Cuda_Gemm_Practice" / "gemm_v9.ncu-rep")
    assert len(table) == 1717 and (table["line"] == -1).all() and table["file"].isna().all()
    assert table["function"].notna().all() and (table["offset"] >= 0).all()


def test_cut_report_is_a_note_not_a_crash(realdata: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.ncu-rep"
    data = MW.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    table = load_instructions(cut)
    assert isinstance(table, pd.DataFrame)
    assert len(table.attrs["notes"]) == 1 and "cut.ncu-rep" in table.attrs["notes"][0]


def test_compressed_report_reads_the_same(realdata: Path, tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "mw.ncu-repz"
    with MW.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    a, b = load_instructions(MW, ids=[2]), load_instructions(packed, ids=[2])
    assert np.array_equal(a["inst_executed"].to_numpy(), b["inst_executed"].to_numpy(), equal_nan=True)


def test_line_table_check_tells_reports_built_with_line_information(realdata: Path, tmp_path: Path) -> None:
    import gzip

    gemm = REALDATA / "AshunFeiyu__Cuda_Gemm_Practice" / "gemm_v9.ncu-rep"
    scan = REALDATA / "thedavidchu__speedy_scan" / "profile.ncu-rep"
    for path, lined in ((MW, True), (gemm, False), (scan, False)):
        assert has_line_table(path) is lined, path
        assert (load_instructions(path)["line"] > 0).any() == lined  # what the lines post-pass will find
    packed = tmp_path / "scan.ncu-repz"
    with scan.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert has_line_table(packed) is False
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(b"not a report")
    assert has_line_table(junk) is None and has_line_table(tmp_path / "missing.ncu-rep") is None
