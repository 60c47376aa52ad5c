"""compare says which source lines moved on paired kernels with findings (comparison/lines.py).

The real pair is NCAR's miniWeather on a V100, MW_Baseline vs MW_DivToMult: the workshop turned the
divisions of line 288 (``-stencil(1)/12 + ...``) into one multiplication, so that line's
instructions fall, and so do those of the FP64 division's slow path (a device function without
lines). Expected values come from the per-instruction table read independently of the comparison.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import cached_diagnose_paths as diagnose_paths

from ncu_roof.comparison import lines as compare_lines
from ncu_roof.comparison.compare import compare
from ncu_roof.comparison.gate import check
from ncu_roof.comparison.gate_file import read_rules
from ncu_roof.comparison.lines import LineMove
from ncu_roof.read.source import load_instructions
from ncu_roof.render.compare import render_json, render_markdown, render_text

pytestmark = pytest.mark.usefixtures("cache_diagnoses")
KERNEL = "compute_tendencies_x_279_gpu"
SLOW_PATH = "__cuda_sm20_div_f64_slowpath_v2"


@pytest.fixture(scope="module")
def mw(realdata: Path) -> tuple[Path, Path]:
    folder = realdata / "NCAR__GPU_workshop"
    return folder / "MW_Baseline.ncu-rep", folder / "MW_DivToMult.ncu-rep"


FP64 = ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "MUFU.RCP64H")  # what fp64-pipe's lines count


def _counts(path: Path) -> tuple[float, float]:
    """Line 288's and the division slow path's FP64 instructions in the kernel, from the table itself."""
    table = load_instructions(path)
    table = table[(table["kernel"] == KERNEL) & table["operation"].isin(FP64)]
    return (float(table.loc[table["line"] == 288, "inst_executed"].sum()),
            float(table.loc[table["function"] == SLOW_PATH, "inst_executed"].sum()))


def test_the_division_line_falls(mw: tuple[Path, Path]) -> None:
    c = compare(diagnose_paths(mw[0]), diagnose_paths(mw[1]))
    moves = [m for m in c.lines if m.kernel == KERNEL]
    (line_before, slow_before), (line_after, slow_after) = _counts(mw[0]), _counts(mw[1])
    # FP64 instructions: line 288 155,324,928 -> 16,473,856, the slow path 181,360,980 -> 26,041,524
    assert (line_before, line_after, slow_before, slow_after) == (155_324_928, 16_473_856, 181_360_980, 26_041_524)
    slow, line = moves[0], moves[1]  # the slow path lost more of them
    assert (line.file or "").endswith("miniWeather_mpi_openacc.F90") and line.line == 288
    assert (line.before, line.after) == (line_before, line_after)
    assert line.what == "FP64 instructions" and line.rules == ("fp64-pipe",) and line.counter == "inst_executed_fp64"
    assert (slow.function, slow.file, slow.line, slow.before, slow.after) == (SLOW_PATH, None, None, slow_before,
                                                                             slow_after)
    # every shown move is larger than the next; lines that did not move are not shown
    changes = [abs(m.after - m.before) for m in moves]
    assert changes == sorted(changes, reverse=True) and all(m.after != m.before for m in c.lines)
    assert not any("lines of" in n for n in c.notes)

    text = " ".join(render_text(c).split())  # wrapped at 100 columns
    assert (f"lines (fp64-pipe): function {SLOW_PATH}: 181M -> 26M FP64 instructions, "
            "miniWeather_mpi_openacc.F90:288: 155M -> 16.5M FP64 instructions") in text
    md = render_markdown(c)
    assert "## Lines that moved" in md
    assert f"| `{KERNEL}` | miniWeather_mpi_openacc.F90:288 | FP64 instructions | 155M | 16.5M | fp64-pipe |" in md
    data = json.loads(render_json(c))
    kernel = next(k for k in data["kernels"] if k["kernel"] == KERNEL)
    assert kernel["lines"][1] == {"file": line.file, "line": 288, "function": None, "rules": ["fp64-pipe"],
                                  "counted": "FP64 instructions", "counter": "inst_executed_fp64",
                                  "before": line_before, "after": line_after}
    assert all(k["lines"] == [] for k in data["kernels"] if k["kernel"] == "compute_tendencies_x_309_gpu")


def test_a_report_against_itself_moves_no_line(mw: tuple[Path, Path]) -> None:
    c = compare(diagnose_paths(mw[0]), diagnose_paths(mw[0]))
    assert c.lines == [] and "Lines that moved" not in render_markdown(c)
    assert "lines (" not in render_text(c)


def test_ranks_on_each_side_add_up(mw: tuple[Path, Path], tmp_path: Path) -> None:
    for side, src in (("base", mw[0]), ("new", mw[1])):
        (tmp_path / side).mkdir()
        for rank in (0, 1):
            shutil.copy(src, tmp_path / side / f"rank{rank}.ncu-rep")
    c = compare(diagnose_paths(tmp_path / "base"), diagnose_paths(tmp_path / "new"))
    line = next(m for m in c.lines if m.kernel == KERNEL and m.line == 288)
    (line_before, _), (line_after, _) = _counts(mw[0]), _counts(mw[1])
    assert (line.before, line.after) == (2 * line_before, 2 * line_after)


def test_a_side_whose_counters_cannot_be_read_is_a_note(mw: tuple[Path, Path], tmp_path: Path) -> None:
    from ncu_roof.diagnosis import diagnose_paths as fresh

    new = tmp_path / "new.ncu-rep"
    shutil.copy(mw[1], new)
    after = fresh(new)
    new.write_bytes(b"gone")  # the report changed after its diagnosis
    c = compare(diagnose_paths(mw[0]), after)
    assert c.lines == []
    assert f"lines of {KERNEL} not compared: NEW has no Source Counters for it" in c.notes
    assert any(n.startswith("source counters of new.ncu-rep not read") for n in c.notes)


def test_the_gate_reads_no_source_counters(mw: tuple[Path, Path], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("check read Source Counters")

    monkeypatch.setattr(compare_lines, "line_sums", refuse)
    rules = tmp_path / "gate.toml"
    rules.write_text("[defaults]\nmax_slowdown = 1.10\nmin_time_s = 100e-6\n")
    result = check(diagnose_paths(mw[1]), read_rules(rules), baseline=diagnose_paths(mw[0]))
    assert result.passed
    with pytest.raises(AssertionError, match="read Source Counters"):
        compare(diagnose_paths(mw[0]), diagnose_paths(mw[1]))


def test_moves_pair_build_folders_and_leave_out_small_ones() -> None:
    before = {("/a/conv.cu", 44): 900.0, ("/a/conv.cu", 50): 100.0, ("", "slow_path"): 0.0, ("/a/x.cu", 1): 5.0}
    after = {("/b/conv.cu", 44): 0.0, ("/b/conv.cu", 50): 150.0, ("", "slow_path"): 300.0, ("/b/x.cu", 1): 5.0}
    moves = compare_lines._moves("k", "k", ("uncoalesced-access",), "excess global sectors",
                                 "l2_sectors_global_excessive", before, after)
    assert [(m.where, m.before, m.after) for m in moves] == [
        ("conv.cu:44", 900.0, 0.0), ("function slow_path", 0.0, 300.0), ("conv.cu:50", 100.0, 150.0)]
    assert moves[0].file == "/a/conv.cu" and moves[1].function == "slow_path" and moves[1].file is None
    # 4 of 1,005 is under 1%: not a move
    small = {**after, ("/b/conv.cu", 50): 96.0}
    small_moves = compare_lines._moves("k", "k", ("r",), "w", "c", before, small)
    assert [m.where for m in small_moves] == ["conv.cu:44", "function slow_path"]
    assert isinstance(small_moves[0], LineMove) and small_moves[0].as_dict()["before"] == 900.0
