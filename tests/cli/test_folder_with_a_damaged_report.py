"""A folder run reads what it can: a damaged report found in a folder is skipped with a note naming
it and why (issue 46, item 8); the same report named on its own is still refused with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.cli.test_cli import one_line_error, run


def _folder(realdata: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep", folder)
    whole = (realdata / "NCAR__GPU_workshop" / "MW_DivToMult.ncu-rep").read_bytes()
    (folder / "cut.ncu-rep").write_bytes(whole[:5000])  # a copy cut short
    return folder


def test_a_folder_run_skips_the_damaged_report_and_says_so(realdata: Path, tmp_path: Path) -> None:
    folder = _folder(realdata, tmp_path)
    result = run("diagnose", str(folder), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [Path(p).name for p in doc["inputs"]] == ["MW_Baseline.ncu-rep"]
    [note] = [n for n in doc["notes"] if n.startswith("skipped ")]
    assert note.startswith(f"skipped {folder / 'cut.ncu-rep'}: {folder / 'cut.ncu-rep'} is truncated or damaged")
    assert len(doc["findings"]) >= 2  # the good report's diagnosis is whole


def test_the_damaged_report_named_on_its_own_is_refused(realdata: Path, tmp_path: Path) -> None:
    folder = _folder(realdata, tmp_path)
    result = run("diagnose", str(folder / "cut.ncu-rep"), str(folder / "MW_Baseline.ncu-rep"))
    assert result.returncode == 2
    assert "cut.ncu-rep is truncated or damaged" in one_line_error(result)
