"""The same capture read from .ncu-rep and from ncu's own CSV export gives the same numbers and placement."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ncu_env

from ncu_roof.diagnosis import diagnose_paths
from ncu_roof.read.table import load_table

# Reports that Debian's ncu 2024.1.1 can import (written by ncu 2024.1 or older).
IMPORTABLE = [
    "NCAR__GPU_workshop/MW_Baseline.ncu-rep",
    "tanvisharma__nsight-compute-files/3136_64_64_rtx2080ti_sgemm.ncu-rep",
    "AveryClapp__ESMM-Research/profile_output.a62323b2dd.ncu-rep",
    "bwd29__self-join-MiSTIC/profileTINYK1.out.ncu-rep",
    "eschnett__IndexSpaces.jl/profile.74de19f3d8.ncu-rep",
    "jonahshader__alife_cuda/profile_output.ncu-rep",
    "tkhenry-uofa__mixes-reconstruction/full_profile.ncu-rep",
    "NVIDIA__nsight-training/manual_nvtx.ncu-rep",
]
NUMBERS = ["time_s", "dram_bytes", "l2_bytes", "l1_bytes", "flops_fp64", "flops_fp32", "flops_tensor", "grid_size",
           "block_size", "waves", "peak_fp32_flops_per_s", "peak_dram_bytes_per_s"]
PLACED = ["intensity_dram", "attainable_flops_per_s", "pct_of_roof", "time_lower_bound_s"]
# ncu prints about 6 significant digits in CSV (base units), and rates times durations compound it
RTOL = 2e-3


def _export(ncu: Path, report: Path, out: Path, tmp: Path) -> Path:
    result = subprocess.run([str(ncu), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
                            capture_output=True, text=True, env=ncu_env(tmp), timeout=300)
    assert result.returncode == 0, result.stderr
    out.write_text(result.stdout)
    return out


def _close(a: pd.Series, b: pd.Series, atol: float = 0.0) -> bool:
    both_nan = a.isna() & b.isna()
    ok = np.isclose(a.astype(float), b.astype(float), rtol=RTOL, atol=atol)
    return bool((both_nan | ok).all())


@pytest.mark.parametrize("name", IMPORTABLE)
def test_csv_export_and_report_agree(name: str, realdata: Path, ncu_exe: Path, tmp_path: Path) -> None:
    report = realdata / name
    csv = _export(ncu_exe, report, tmp_path / "export.csv", tmp_path)
    from_rep, from_csv = load_table(report), load_table(csv)
    assert len(from_rep) == len(from_csv)
    assert list(from_rep["kernel"]) == list(from_csv["kernel"])
    assert list(from_rep["device"]) == list(from_csv["device"])
    assert list(from_rep["nvtx"].fillna("")) == list(from_csv["nvtx"].fillna(""))
    for column in NUMBERS:
        atol = 0.005 if column == "waves" else 0.0  # ncu prints waves with two decimals
        assert _close(from_rep[column], from_csv[column], atol), (
            column, from_rep[column].tolist(), from_csv[column].tolist())
    for column in ("dram_bytes_src", "l2_bytes_src", "flops_fp32_src"):
        assert list(from_rep[column].fillna("")) == list(from_csv[column].fillna("")), column
    rep_placed, csv_placed = diagnose_paths(report).placed, diagnose_paths(csv).placed
    assert list(rep_placed["bound"]) == list(csv_placed["bound"])
    for column in PLACED:
        assert _close(rep_placed[column], csv_placed[column]), column
