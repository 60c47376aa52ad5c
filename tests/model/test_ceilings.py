"""ncu-roof ceilings: benchmark arithmetic, timing statistics, the TOML file; the GPU run is marked gpu."""

from __future__ import annotations

import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ncu_roof.cli import ceilings as ceilings_cmd
from ncu_roof.errors import CaptureError, InputError
from ncu_roof.model import ceilings as ceil

H200 = {
    "dram_bytes_per_s": 4.1e12, "l2_bytes_per_s": 1.05e13, "fp32_flops_per_s": 5.9e13,
    "fp16_tensor_flops_per_s": 7.2e14, "bf16_tensor_flops_per_s": 7.1e14,
    "launch_overhead_s": 2.1e-6, "launch_sync_s": 6.5e-6, "launch_graph_s": 9e-7,
}


# --- arithmetic -----------------------------------------------------------------------------
def test_benchmark_arithmetic() -> None:
    n = 1 << 28  # 1 GiB of float32
    assert ceil.copy_bytes(n, 4) == 2 * 2**30
    assert ceil.read_bytes(1000, 16, 200) == 3_200_000
    assert ceil.fma_flops(threads=256 * 132 * 16, iterations=4096, chains=8) == 2 * 540672 * 4096 * 8
    assert ceil.gemm_flops(8192, 8192, 8192) == 2 * 8192**3
    assert ceil.gemm_flops(2, 3, 4) == 48
    assert ceil.rate(2 * 2**30, 0.5e-3) == pytest.approx(4.294967296e12)
    with pytest.raises(ValueError):
        ceil.rate(1.0, 0.0)


def test_summarize() -> None:
    t = ceil.summarize([3.0, 1.0, 2.0])
    assert (t.median, t.minimum, t.maximum, t.runs) == (2.0, 1.0, 3.0, 3)
    assert t.spread == pytest.approx(1.0)
    assert ceil.summarize([1.0, 2.0, 3.0, 10.0]).median == 2.5
    with pytest.raises(ValueError):
        ceil.summarize([])


# --- TOML -----------------------------------------------------------------------------------
WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_format_exact() -> None:
    text = ceil.format_ceilings(
        {"name": 'NVIDIA H200 "SXM"', "cc": "9.0", "driver": "CUDA 12.4"},
        {"launch_sync_s": 6.5e-06, "dram_bytes_per_s": 4.1e12},
        {"dram_bytes_per_s": "copy", "bf16_tensor_flops_per_s": "skipped: no bf16"},
        when=WHEN,
    )
    assert text == (
        "# Measured roofline ceilings, written by `ncu-roof ceilings` at 2025-01-02T03:04:05Z.\n"
        "# Units: bytes/s, FLOP/s, seconds. Feed to `ncu-roof diagnose --ceilings`.\n"
        "\n"
        "[device]\n"
        'name = "NVIDIA H200 \\"SXM\\""\n'
        'cc = "9.0"\n'
        'driver = "CUDA 12.4"\n'
        "\n"
        "[ceilings]\n"
        "dram_bytes_per_s = 4100000000000.0\n"
        "launch_sync_s = 6.5e-06\n"
        "\n"
        "[method]\n"
        'dram_bytes_per_s = "copy"\n'
        'bf16_tensor_flops_per_s = "skipped: no bf16"\n'
    )


def test_roundtrip(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    method = {k: f"how {k}\\ \"q\"" for k in H200}
    ceil.write_ceilings(path, ceil.format_ceilings({"name": "H200", "cc": "9.0"}, H200, method))
    got = ceil.read_ceilings(path)
    assert got["ceilings"] == H200
    assert got["device"] == {"name": "H200", "cc": "9.0"}
    assert got["method"] == method


def test_format_rejects_bad_values() -> None:
    with pytest.raises(ValueError):
        ceil.format_ceilings({}, {"dram_bytes_per_s": math.nan}, {})
    with pytest.raises(ValueError):
        ceil.format_ceilings({}, {"hbm_bytes": 1.0}, {})


def test_write_refuses_existing(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("old")
    with pytest.raises(InputError) as err:
        ceil.write_ceilings(path, "new")
    assert str(err.value) == f"{path} exists: choose another -o path or pass --force to overwrite it"
    ceil.write_ceilings(path, "new", force=True)
    assert path.read_text() == "new"


@pytest.mark.parametrize(("text", "message"), [
    ("[ceilings\n", "not a valid TOML ceilings file"),
    ("[device]\nname = 'x'\n", "no [ceilings] table (write one with `ncu-roof ceilings -o c.toml`)"),
    ("[ceilings]\nhbm_bytes_per_s = 1e12\n", "unknown ceiling 'hbm_bytes_per_s' (known: dram_bytes_per_s, "),
    ("[ceilings]\ndram_bytes_per_s = '4 TB/s'\n", "dram_bytes_per_s must be a number in byte/s, not '4 TB/s'"),
    ("[ceilings]\ndram_bytes_per_s = true\n", "dram_bytes_per_s must be a number in byte/s, not True"),
    ("[ceilings]\nfp32_flops_per_s = -1.0\n", "fp32_flops_per_s = -1.0 must be a positive number in FLOP/s"),
    ("[ceilings]\ndram_bytes_per_s = 4.1\n", "dram_bytes_per_s = 4.1 is not plausible in byte/s (expected 1e+08 "
     "to 1e+15): write plain units, e.g. 3.3e12 for 3.3 TB/s"),
    ("[ceilings]\nlaunch_overhead_s = 2.1\n", "launch_overhead_s = 2.1 is not plausible in s"),
    ("device = 3\n[ceilings]\nlaunch_sync_s = 1e-5\n", "[device] must be a table"),
])
def test_read_rejects_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        ceil.read_ceilings(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_read_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^ceilings file not found: "):
        ceil.read_ceilings(tmp_path / "nope.toml")


def test_read_accepts_integers_and_partial(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[ceilings]\ndram_bytes_per_s = 3350000000000\n")
    assert ceil.read_ceilings(path) == {"device": {}, "ceilings": {"dram_bytes_per_s": 3.35e12}, "method": {}}


# --- without CuPy / GPU ---------------------------------------------------------------------
def test_without_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    with pytest.raises(CaptureError) as err:
        ceil.measure_ceilings()
    assert str(err.value) == "CuPy is not installed: pip install 'ncu-roof[capture]'"


def test_cli_refuses_existing_file_before_measuring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = typer.Typer()
    app.command("ceilings")(ceilings_cmd.command)
    app.callback()(lambda: None)
    out = tmp_path / "c.toml"
    out.write_text("old")
    monkeypatch.setattr(ceil, "measure_ceilings", lambda **_: pytest.fail("measured"))
    res = CliRunner().invoke(app, ["ceilings", "-o", str(out)])
    assert isinstance(res.exception, InputError)


def test_cli_writes_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = typer.Typer()
    app.command("ceilings")(ceilings_cmd.command)
    app.callback()(lambda: None)
    measured = ceil.Measured({"name": "H200", "cc": "9.0"}, {"dram_bytes_per_s": 4.1e12},
                             {"dram_bytes_per_s": "copy", "launch_graph_s": "unsupported: no capture"})
    monkeypatch.setattr(ceil, "measure_ceilings", lambda **_: measured)
    out = tmp_path / "c.toml"
    res = CliRunner().invoke(app, ["ceilings", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert ceil.read_ceilings(out)["ceilings"] == {"dram_bytes_per_s": 4.1e12}
    assert "  dram_bytes_per_s                4100.00 GB/s" in res.output.splitlines()
    assert "  launch_graph_s                        -  (unsupported: no capture)" in res.output.splitlines()


@pytest.mark.gpu
def test_measure_on_gpu(tmp_path: Path) -> None:
    """On a GPU: every ceiling measured, plausible, and the file reads back."""
    pytest.importorskip("cupy")
    m = ceil.measure_ceilings()
    path = ceil.write_ceilings(tmp_path / "c.toml", ceil.format_ceilings(m.device, m.ceilings, m.method))
    got = ceil.read_ceilings(path)["ceilings"]
    assert {"dram_bytes_per_s", "l2_bytes_per_s", "fp32_flops_per_s", "fp16_tensor_flops_per_s",
            "launch_overhead_s", "launch_sync_s"} <= set(got)
    assert got["l2_bytes_per_s"] > got["dram_bytes_per_s"]
    assert got["fp16_tensor_flops_per_s"] > got["fp32_flops_per_s"]
