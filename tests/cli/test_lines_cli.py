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


def test_a_flipped_load_address_is_a_counted_note_not_a_nan_row(realdata: Path, tmp_path: Path) -> None:
    """One bit flipped at byte 220,815 of MW_Baseline (a function's load address): 136 of the kernel's
    instructions lie in no named function; they were 'nan+0x...' rows, then a generic AttributeError."""
    data = bytearray(MW.read_bytes())
    data[220815] ^= 0x20
    flipped = tmp_path / "MW_flipped.ncu-rep"
    flipped.write_bytes(bytes(data))
    done = run("lines", str(flipped), "--kernel", "compute_tendencies_x_279", "--top", "2000")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("ncu-roof: note: MW_flipped.ncu-rep: compute_tendencies_x_279_gpu: 136 instructions (10.3% "
                           "of those executed) lie in no function the report names (a damaged load address?): shown "
                           "as ?+offset\n")
    rows = done.stdout.splitlines()[2:]
    assert "nan" not in done.stdout and "0x-" not in done.stdout
    assert rows[0].split() == ["miniWeather_mpi_openacc.F90:288", "440M", "-", "37.4k", "144k"]
    assert sum(r.startswith("?+0x") for r in rows) == 136


def test_instructions_with_no_line_and_no_offset_are_left_out_and_counted(realdata: Path) -> None:
    import pandas as pd

    from ncu_roof.cli.lines import _placed
    from ncu_roof.read.source import sum_instructions

    table = sum_instructions(MW, columns=["inst_executed"])
    rows = table[table["kernel"] == "compute_tendencies_x_279_gpu"].reset_index(drop=True)
    rows.loc[:2, ["offset", "line"]] = -1  # three addresses no function or line table holds
    rows.loc[3, "offset"] = 1 << 40
    rows.loc[3, "line"] = -1
    notes: list[str] = []
    kept, lined = _placed(rows, "MW", notes)
    assert len(kept) == len(rows) - 4 and not kept["offset"].isin([-1, 1 << 40]).any()
    assert notes[0].startswith(f"MW: 4 of {len(rows)} instructions (")
    assert notes[0].endswith("of those executed) left out: their address is unreadable (no source line and no offset "
                             "into a function; a damaged report?)")
    assert isinstance(lined, pd.Series) and bool(lined.any())
