"""Streams and special files as POSIX tools treat them (issue 46, item 5): a compressed report on
standard input, closed standard input, ``-o /dev/null`` and ``-o /dev/stdout``, ``lines -``. Each in a
real process, as a user runs it."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERNORM = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"


def ncu_roof(*args: str, stdin: object = subprocess.DEVNULL) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], stdin=stdin, capture_output=True,  # type: ignore[call-overload]
                          timeout=300, check=False, cwd=ROOT)


def test_a_gzip_compressed_report_on_standard_input_reads_as_the_file_does(realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    packed = tmp_path / "mw.ncu-repz"
    packed.write_bytes(gzip.compress(report.read_bytes()))
    with packed.open("rb") as fh:
        piped = ncu_roof("table", "-q", "-", stdin=fh)
    named = ncu_roof("table", "-q", str(packed))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.count(b"\n") == named.stdout.count(b"\n") == 6  # the header and 5 launches
    assert piped.stdout.split(b"\n")[1].split(b",")[1:] == named.stdout.split(b"\n")[1].split(b",")[1:]


def test_closed_standard_input_is_one_line() -> None:
    result = subprocess.run([sys.executable, "-c", "import os, sys; os.close(0); sys.stdin = None; "
                             "from ncu_roof.cli import main; sys.argv = ['ncu-roof', 'table', '-']; main()"],
                            capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.strip() == ("ncu-roof: error: standard input is closed: pipe in a .ncu-rep report or an "
                                     "ncu CSV export, or name a file")


def test_output_to_dev_null_and_dev_stdout() -> None:
    null = ncu_roof("diagnose", str(LAYERNORM), "-f", "json", "-o", "/dev/null")
    assert (null.returncode, null.stdout, null.stderr) == (0, b"", b"")
    out = ncu_roof("diagnose", str(LAYERNORM), "-f", "json", "-o", "/dev/stdout")
    assert out.returncode == 0 and out.stdout.startswith(b'{\n  "schema": "ncu-roof/diagnose/1"')


def test_lines_reads_a_report_from_standard_input(realdata: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    with report.open("rb") as fh:
        piped = ncu_roof("lines", "-", "--kernel", "compute_tendencies_x_279", stdin=fh)
    named = ncu_roof("lines", str(report), "--kernel", "compute_tendencies_x_279")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout and b"miniWeather_mpi_openacc.F90:288" in piped.stdout
