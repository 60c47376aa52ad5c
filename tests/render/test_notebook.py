"""The library's notebook face: ncu_roof.diagnose and ncu_roof.compare, their DataFrames, outputs
and the offline HTML view Jupyter shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import ncu_roof
from ncu_roof.errors import InputError


@pytest.fixture
def mw(realdata: Path) -> tuple[Path, Path]:
    w = realdata / "NCAR__GPU_workshop"
    return w / "MW_Baseline.ncu-rep", w / "MW_DivToMult.ncu-rep"


def test_diagnose_gives_dataframes_charts_and_every_output(mw: tuple[Path, Path], tmp_path: Path) -> None:
    r = ncu_roof.diagnose(mw[0])
    assert isinstance(r.launches, pd.DataFrame) and len(r.launches) == 5
    assert list(r.kernels["kernel"])[0] == "compute_tendencies_x_279_gpu"  # the largest time first
    # ranked by stake in every output: the 309 -> 232 pipeline (4.53 ms), then the FP64 division (3.03 ms)
    assert list(r.findings["rule"][:2]) == ["fusion-chain", "fp64-pipe"]
    second = r.findings.iloc[1]
    assert second["kernels"] == ["compute_tendencies_x_279_gpu"]
    assert second["time_at_stake_s"] == pytest.approx(6.1909e-3 - 3.1607e-3, rel=1e-3)  # DRAM at 784 GB/s
    assert len(r.ncu_rules) == len(r.diagnosis.ncu_rules) > 0
    assert [f["rule"] for f in json.loads(r.to_json())["findings"][:2]] == ["fusion-chain", "fp64-pipe"]
    assert r.to_markdown().startswith("# ncu-roof diagnosis")
    assert r.to_text().startswith("ncu-roof: 5 launches, 5 kernels on Tesla V100-SXM2-32GB")
    assert r.chart("roofline").to_dict()["title"]["text"] == "Roofline: Tesla V100-SXM2-32GB"
    with pytest.raises(InputError, match=r"^no chart 'pie': choose one of roofline, time-share"):
        r.chart("pie")
    page = r.report(tmp_path / "mw.html")
    assert page.read_text().startswith("<!DOCTYPE html>")
    with pytest.raises(InputError, match="exists"):
        r.report(tmp_path / "mw.html")


def test_the_notebook_view_is_offline_html_with_the_chart_and_the_top_findings(mw: tuple[Path, Path]) -> None:
    view = ncu_roof.diagnose(mw[0])._repr_html_()
    assert view.startswith('<div class="ncu-roof"><p><b>ncu-roof</b>: 5 launches, 5 kernels on Tesla V100-SXM2-32GB')
    assert "<svg" in view and "<script" not in view  # drawn here: no script to run, nothing to fetch
    assert not re.search(r"(src|href)=\"https?://", view)
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\w+)</td><td><code>([\w-]+)</code>", view)
    assert rows[:2] == [("1", "medium", "fusion-chain"), ("2", "high", "fp64-pipe")] and len(rows) <= 5


def test_compare_takes_paths_or_results_and_shows_the_arrows(mw: tuple[Path, Path]) -> None:
    before = ncu_roof.diagnose(mw[0])
    c = ncu_roof.compare(before, mw[1])
    row = c.kernels.set_index("kernel").loc["compute_tendencies_x_279_gpu"]
    assert row["time_s_before"] / row["time_s_after"] == pytest.approx(1.78, abs=0.01)
    assert row["predicted_rule"] == "fp64-pipe"
    assert json.loads(c.to_json())["schema"].startswith("ncu-roof/compare/")
    view = c._repr_html_()
    assert "<svg" in view and "compute_tendencies_x_279" in view and "<script" not in view
    assert list(c.before.findings["rule"][:2]) == ["fusion-chain", "fp64-pipe"]


def test_a_notebook_that_calls_diagnose_renders_the_chart_and_the_findings(mw: tuple[Path, Path]) -> None:
    nbformat = pytest.importorskip("nbformat", reason="the notebook extra is not installed")
    nbclient = pytest.importorskip("nbclient", reason="the notebook extra is not installed")
    pytest.importorskip("ipykernel", reason="the notebook extra is not installed")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import ncu_roof\nncu_roof.diagnose({str(mw[0])!r})")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    (output,) = nb.cells[0].outputs
    shown = output["data"]["text/html"]
    assert "<svg" in shown and "<code>fp64-pipe</code>" in shown
    assert output["data"]["text/plain"].startswith("ncu-roof: 5 launches, 5 kernels on Tesla V100-SXM2-32GB")
