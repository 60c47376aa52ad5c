"""A raw page is tokenized a block of rows at a time (pandas' ``low_memory``): the frame is the one a
read of the whole file gives, and the whole file is read again where the blocks guessed a column's type
apart (text in a number column past the first block, integers too long for a float, booleans)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ncu_roof.read.csv import columns, load_csv

ROWS = 5000
FILLER = 300  # columns the reader does not keep: pandas' blocks are then 2,048 rows
METRICS = {"dram__bytes_read.sum": "byte", "gpu__time_duration.sum": "nsecond", "launch__grid_size": "",
           "sm__cycles_elapsed.avg.per_second": "cycle/second", "launch__block_size": ""}


def _export(path: Path, edits: dict[tuple[int, str], str], separated: bool = False) -> Path:
    names = ["ID", "Process ID", "Process Name", "Kernel Name", "Stream", "Block Size", "Grid Size", "Device",
             "CC", *METRICS, *(f"filler__x{i}.sum" for i in range(FILLER))]
    units = ["" for _ in names[:9]] + list(METRICS.values()) + ["" for _ in range(FILLER)]
    lines = [names, units]
    for row in range(ROWS):
        size = f"{1000 + row % 7:,}.5" if separated else str(1000 + row % 7)
        cells = {"ID": str(row), "Process ID": "7", "Process Name": "app", "Kernel Name": f"k{row % 3}(float *)",
                 "Stream": "7", "Block Size": "(256, 1, 1)", "Grid Size": "(80, 1, 1)", "Device": "NVIDIA A10G",
                 "CC": "8.6", "dram__bytes_read.sum": str(4096 * (row % 5)), "gpu__time_duration.sum": str(1500 + row),
                 "launch__grid_size": "80", "sm__cycles_elapsed.avg.per_second": "1410000000.5",
                 "launch__block_size": size}
        for (at, name), value in edits.items():
            if at == row:
                cells[name] = value
        lines.append([cells.get(n, "0") for n in names])
    path.write_text("".join(",".join(f'"{c}"' for c in line) + "\n" for line in lines), encoding="utf-8")
    return path


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, whole: bool) -> tuple[pd.DataFrame, list[bool]]:
    """load_csv of ``path`` (every read whole where ``whole``), and whether each parse was whole."""
    parses: list[bool] = []
    parse: Any = columns._parse

    def spy(*args: Any, low_memory: bool) -> pd.DataFrame:
        parses.append(not low_memory or whole)
        return parse(*args, low_memory=low_memory and not whole)

    with monkeypatch.context() as m:
        m.setattr(columns, "_parse", spy)
        return load_csv(path), parses


@pytest.mark.parametrize(("edits", "read_again"), [
    ({}, False),
    ({(4000, "launch__grid_size"): "1.5"}, False),  # a block of integers, one of decimals: all exact
    ({(4000, "dram__bytes_read.sum"): "abc"}, True),  # text past the first block
    ({(4000, "launch__grid_size"): "True"}, True),
    ({(10, "launch__grid_size"): "123456789012345678", (4000, "launch__grid_size"): "0.5"}, True),
    ({(4000, "launch__grid_size"): "18446744073709551615"}, True),  # unsigned 64-bit past the first block
])
def test_blocks_give_the_whole_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    edits: dict[tuple[int, str], str], read_again: bool) -> None:
    path = _export(tmp_path / "raw.csv", edits)
    frame, parses = _read(path, monkeypatch, whole=False)
    whole, _ = _read(path, monkeypatch, whole=True)
    assert parses == ([False, True] if read_again else [False])
    pd.testing.assert_frame_equal(frame, whole, check_exact=True)
    assert repr(frame.attrs) == repr(whole.attrs)


def test_separated_numbers_are_categoricals_of_the_strings_sorted(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A raw page's columns of separated numbers are parsed as strings and made categoricals (each distinct
    string parsed once), their categories sorted as pandas sorts those it parses."""
    edits = {(row, "launch__block_size"): "9,999.5" for row in range(0, 40)}  # first in the file, last in order
    path = _export(tmp_path / "sep.csv", edits, separated=True)
    body = path.read_bytes()
    header = body[: body.index(b"\n")].decode().replace('"', "").split(",")
    table = columns.read_columns(body, header, ["ID", "launch__block_size", "gpu__time_duration.sum"], path,
                                 skip_units=True, text={"ID", "launch__block_size"}, coded={"launch__block_size"})
    sizes = table["launch__block_size"]
    assert list(sizes.cat.categories) == [f"1,00{i}.5" for i in range(7)] + ["9,999.5"]
    assert sizes.iloc[38:42].tolist() == ["9,999.5", "9,999.5", "1,005.5", "1,006.5"]
    frame, parses = _read(path, monkeypatch, whole=False)
    assert parses == [False]
    assert frame["launch__block_size"].iloc[:41].tolist() == [9999.5] * 40 + [1005.5]
    whole, _ = _read(path, monkeypatch, whole=True)
    pd.testing.assert_frame_equal(frame, whole, check_exact=True)
