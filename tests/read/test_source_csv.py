"""Nsight Compute's source page as CSV: exports made here by the real ncu (into tmp_path) of every
real report with Source Counters give, launch by launch, the counters ncu-roof's own reader gives
for the same PCs, with each instruction's SASS; ``cuda,sass`` exports give the same lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import REALDATA, ncu_env

from ncu_roof.read.source import load_instructions, sum_instructions
from ncu_roof.read.source.frame import IDENTITY

REPORTS = sorted(REALDATA.glob("*/*.ncu-rep"))
MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"


def _export(ncu: Path, report: Path, tmp_path: Path, view: str) -> Path:
    out = tmp_path / f"{report.stem}.{view.replace(',', '_')}.csv"
    done = subprocess.run([str(ncu), "--import", str(report), "--page", "source", "--csv", "--print-source", view],
                          capture_output=True, env=ncu_env(tmp_path), timeout=300, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        pytest.skip(f"ncu could not export {report.name}'s source page: {done.stderr.decode(errors='replace')[:200]}")
    out.write_bytes(done.stdout)
    return out


@pytest.mark.parametrize("path", REPORTS, ids=[p.parent.name + "/" + p.name for p in REPORTS])
def test_sass_export_counts_what_the_native_reader_counts(path: Path, ncu_exe: Path, tmp_path: Path) -> None:
    native = load_instructions(path)
    if native.empty:
        return
    exported = load_instructions(_export(ncu_exe, path, tmp_path, "sass"))
    assert exported.attrs["notes"] == []
    counters = [c for c in native.columns if c not in IDENTITY and c in exported]
    assert "inst_executed" in counters
    assert exported["sass"].notna().all() and (exported["offset"] >= 0).all()
    # which of the export's blocks make a launch is a heuristic: each of the report's instructions,
    # launch by launch, is a row of the export with the same address, offset and every counter
    rows = set(exported[["pc", *counters]].fillna(0).itertuples(index=False, name=None))
    # the export prints 0 where there is no instance, and only instructions of functions the report
    # names (tkhenry-uofa's full_profile samples 674 PCs outside them)
    mine = native.loc[native["offset"] >= 0, ["pc", *counters]].fillna(0)
    missing = [r for r in mine.itertuples(index=False, name=None) if r not in rows]
    assert not missing, f"{len(missing)} of {len(mine)} instructions of {path.name} differ, e.g. {missing[0]}"
    offsets = exported.groupby("pc")["offset"].agg(set)
    known = native[native["offset"] >= 0]  # where the report names the function (the export always does)
    assert all(off in offsets[pc] for pc, off in zip(known["pc"], known["offset"], strict=True))


@pytest.mark.parametrize("view", ["cuda,sass"])
def test_cuda_sass_export_gives_the_native_lines(view: str, realdata: Path, ncu_exe: Path, tmp_path: Path) -> None:
    path = _export(ncu_exe, MW, tmp_path, view)
    exported = load_instructions(path)
    native = load_instructions(MW)
    both = exported.merge(native, on=["id", "pc"], how="left", suffixes=("_csv", ""), validate="one_to_one")
    counted = both["inst_executed"].notna()  # the export lists instructions the report has no instance for
    assert counted.sum() >= 0.99 * (native["line"] > 0).sum()  # every lined instruction, but a few, once
    assert (both.loc[counted, "line_csv"] == both.loc[counted, "line"]).all()
    assert (both.loc[counted, "file_csv"] == both.loc[counted, "file"]).all()
    assert (both.loc[~counted, "inst_executed_csv"].fillna(0) == 0).all()
    # the division line, summed from the export alone: 439,531,424 instructions, its SASS known
    table = sum_instructions(path)
    k279 = table[table["kernel"] == "compute_tendencies_x_279"]
    by_line = k279[k279["line"] > 0].groupby("line")["inst_executed"].sum().sort_values()
    assert (by_line.index[-1], by_line.iloc[-1]) == (288, 439_531_424)
    assert k279["sass"].str.startswith(("DFMA", "DMUL", "MUFU.RCP64H", "DADD")).any()


def test_source_text_only_export_is_a_note(realdata: Path, ncu_exe: Path, tmp_path: Path) -> None:
    table = load_instructions(_export(ncu_exe, MW, tmp_path, "cuda"))
    assert table.empty and len(table.attrs["notes"]) == 1 and "--print-source sass" in table.attrs["notes"][0]


def test_a_csv_that_is_not_a_source_page_is_a_note(tmp_path: Path) -> None:
    other = tmp_path / "raw.csv"
    other.write_text('"ID","Kernel Name"\n"0","k"\n')
    table = load_instructions(other)
    assert table.empty and "not an ncu source-page export" in table.attrs["notes"][0]
