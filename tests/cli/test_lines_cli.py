"""``ncu-roof lines``: one kernel's annotated lines from a real report; bad input exits 2 in one line."""

from __future__ import annotations

from pathlib import Path

from conftest import REALDATA
from test_cli import run

MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"


def test_lines_prints_the_division_line_first(realdata: Path) -> None:
    done = run("lines", str(MW), "--kernel", "compute_tendencies_x_279", "--top", "3")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "compute_tendencies_x_279_gpu (1 launch), by stall samples:"
    assert out[2].split() == ["miniWeather_mpi_openacc.F90:288", "440M", "-", "37.4k", "144k"]


def test_lines_needs_one_kernel_and_a_report(realdata: Path, tmp_path: Path) -> None:
    done = run("lines", str(MW))
    assert done.returncode == 2 and "name one kernel with --kernel" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = run("lines", str(tmp_path / "missing.ncu-rep"), "--kernel", "x")
    assert done.returncode == 2 and "does not exist" in done.stderr
    done = run("lines", str(REALDATA / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep"))
    assert done.returncode == 2 and "no Source Counters" in done.stderr


def test_lines_names_a_numba_kernel_by_its_function_within_80_columns(realdata: Path) -> None:
    """SimonLuder's Numba v1 report has no line table: each row was the 322-character mangled name
    plus its offset, and the kernel was named by its ABI tag (cw51cXTLSUwv1k...); now the function's
    own name, which --kernel matches too."""
    done = run("lines", str(realdata / "SimonLuder__hs22-mc2/v1.ncu-rep"), "--kernel", "reconstruct", "--top", "2")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "reconstruct_svd_cuda_1_241 (1 launch), by instructions:"
    assert out[2].split() == ["reconstruct_svd_cuda_1_241+0xf00", "212M", "-", "-"]
    assert max(len(line) for line in out[:4]) <= 80


def test_readable_cuts_any_name_to_80_characters() -> None:
    from ncu_roof.cli.lines import readable

    assert readable("_Z5SobelIfEvP6uchar4S1_ii") == "Sobel"
    assert readable("x" * 100) == "x" * 79 + "…"
