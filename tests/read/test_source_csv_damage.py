"""A source-page export changed as users and tools change files (issue 46, item 3): every count is
read as the real export gives it or kept out as unknown, never 10x too large or doubled."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest
from test_source_csv import MW, _export

from ncu_roof.read.source import load_instructions
from ncu_roof.read.source.csv import _number


@pytest.fixture(scope="module")
def export(ncu_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not MW.is_file():
        pytest.skip(f"{MW} is not in the real data")
    return _export(ncu_exe, MW, tmp_path_factory.mktemp("source"), "sass")


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def _write(path: Path, rows: list[list[str]]) -> Path:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_counts_that_are_not_counts_are_unknown_not_misread() -> None:
    assert _number("1,234,567") == 1234567.0  # thousands separators
    assert _number("12") == 12.0
    for bad in ("1,5", "12,34", "inf", "1e400", "-3", "nan", "abc", "1,23,4"):
        assert _number(bad) != _number(bad), bad  # NaN: "1,5" would have read as 15


def test_an_export_written_twice_into_one_file_is_counted_once(export: Path, tmp_path: Path) -> None:
    once = load_instructions(export)
    rows = _rows(export)
    twice = load_instructions(_write(tmp_path / "twice.csv", rows + rows))
    assert twice["id"].nunique() == once["id"].nunique()
    assert twice["inst_executed"].sum() == once["inst_executed"].sum()


def test_addresses_without_0x_and_shuffled_columns_read_the_same(export: Path, tmp_path: Path) -> None:
    once = load_instructions(export)
    rows = _rows(export)
    at = next(r for r in rows if r and r[0] == "Address").index("Address")
    bare = [[c[2:] if i == at and c.startswith("0x") else c for i, c in enumerate(r)] for r in rows]
    assert load_instructions(_write(tmp_path / "bare.csv", bare))["inst_executed"].sum() == once["inst_executed"].sum()
    shuffled = [[*r[at + 2:], *r[:at + 2]] if len(r) > at + 2 and (r[0] == "Address" or r[0].startswith("0x"))
                else r for r in rows]
    moved = load_instructions(_write(tmp_path / "shuffled.csv", shuffled))
    pd.testing.assert_series_equal(moved["inst_executed"], once["inst_executed"])
    assert moved["sass"].equals(once["sass"])
