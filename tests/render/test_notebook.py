"""The library's notebook face: ncu_roof.diagnose and ncu_roof.compare, their DataFrames, outputs
and the offline HTML view Jupyter shows."""

from __future__ import annotations

import base64
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
    second = r.findings.loc[2]
    assert second["kernels"] == "compute_tendencies_x_279_gpu"
    assert second["at_stake_s"] == pytest.approx(6.1909e-3 - 3.1607e-3, rel=1e-3)  # DRAM at 784 GB/s
    assert r.findings_raw.iloc[1]["kernels"] == ["compute_tendencies_x_279_gpu"]
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


def test_findings_are_a_stake_sorted_view_with_readable_columns(mw: tuple[Path, Path]) -> None:
    """``r.findings`` reads as the text does: ranked from 1 by time at stake (none last), the stake
    as text and seconds, kernels as one string, the hottest line as ``file:line``; the records
    (lists, evidence, launch IDs) stay in ``r.findings_raw``."""
    import dataclasses

    r = ncu_roof.diagnose(mw[0])
    f = r.findings
    assert list(f.columns) == ["rule", "severity", "at_stake", "at_stake_s", "kernels", "region", "launches", "line",
                               "message"]
    assert f.index.name == "rank" and list(f.index) == list(range(1, len(f) + 1)) and len(f) == 10
    assert f.loc[1, ["rule", "severity", "at_stake", "kernels", "launches", "line"]].tolist() == [
        "fusion-chain", "medium", "4.48 ms", "compute_tendencies_x_309_gpu, semi_discrete_step_232_gpu", 2, ""]
    assert f.loc[2, ["rule", "severity", "at_stake", "kernels", "launches", "line"]].tolist() == [
        "fp64-pipe", "high", "3.03 ms", "compute_tendencies_x_279_gpu", 1, "miniWeather_mpi_openacc.F90:288"]
    assert f["at_stake_s"].is_monotonic_decreasing and f["message"].str.len().min() > 40
    raw = r.findings_raw
    assert list(raw["rule"]) == list(f["rule"]) and isinstance(raw.loc[0, "evidence"], dict)
    assert list(raw.columns) == ["rule", "kernels", "region", "severity", "message", "time_at_stake_s", "evidence",
                                 "ids", "report", "lines"]
    # the view sorts by stake whatever order it is given, a finding without one last
    d = r.diagnosis
    shuffled = [dataclasses.replace(d.findings[2], time_at_stake_s=None), d.findings[1], d.findings[0]]
    view = ncu_roof.api.DiagnosisResult(dataclasses.replace(d, findings=shuffled)).findings
    assert view["rule"].tolist() == ["fusion-chain", "fp64-pipe", "grid-underfill"]
    assert view.loc[3, "at_stake"] == "" and list(view.index) == [1, 2, 3]
    empty = ncu_roof.api.DiagnosisResult(dataclasses.replace(d, findings=[]))
    assert empty.findings.empty and list(empty.findings.columns) == list(f.columns)
    assert list(empty.findings_raw.columns) == list(raw.columns)


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


def test_every_chart_a_notebook_shows_renders_offline_and_survives_nbconvert(mw: tuple[Path, Path]) -> None:
    """The README's ``r.chart("roofline")``, a chart derived from one, and compare's chart: each shows
    as SVG drawn by the kernel (no Vega from a CDN), and the notebook exported to HTML by nbconvert
    still holds every chart, with no script in any output."""
    nbformat = pytest.importorskip("nbformat", reason="the notebook extra is not installed")
    nbclient = pytest.importorskip("nbclient", reason="the notebook extra is not installed")
    pytest.importorskip("ipykernel", reason="the notebook extra is not installed")
    nbconvert = pytest.importorskip("nbconvert", reason="nbconvert (the test extra) is not installed")
    cells = [f"import ncu_roof\nr = ncu_roof.diagnose({str(mw[0])!r})\nr.chart('roofline')",
             "r.chart('time-share').properties(title='mine')",
             f"ncu_roof.compare(r, {str(mw[1])!r}).chart()"]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    for cell in nb.cells:
        (output,) = cell.outputs
        assert output["output_type"] == "execute_result", output
        assert set(output["data"]) == {"image/svg+xml", "text/plain"}, list(output["data"])
        assert output["data"]["image/svg+xml"].lstrip().startswith("<svg")
    shown = [cell.outputs[0]["data"]["image/svg+xml"] for cell in nb.cells]
    assert "compute_tendencies_x_279_gpu" in shown[0] and ">mine<" in shown[1] and "→" not in shown[0]
    page, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    body = page[page.index("<body"):]
    outputs = re.split(r'<div class="[^"]*jp-OutputArea-output[^"]*" data-mime-type="image/svg\+xml"', body)[1:]
    pictures = [re.search(r'<img [^>]*src="data:image/svg\+xml;base64,([^"]+)"', o) for o in outputs]
    assert len(pictures) == 3 and all(pictures), outputs
    drawn = [base64.b64decode(p.group(1)).decode("utf-8") for p in pictures if p]
    assert drawn == shown  # each chart whole, as the kernel drew it
    assert "<script" not in body  # Altair's own display puts one here, loading Vega from a CDN
    assert "cdn.jsdelivr" not in page and "vegaEmbed" not in page


def test_an_offline_chart_is_still_the_altair_chart(monkeypatch: pytest.MonkeyPatch) -> None:
    """``offline`` changes only the display: same object, same spec, Altair's class; charts derived
    from it display offline too; a chart that cannot be drawn says so instead of raising."""
    import altair as alt

    from ncu_roof.render.charts.notebook import offline

    chart = alt.Chart(pd.DataFrame({"x": [1.0, 2.0]})).mark_point().encode(x="x:Q")
    spec = chart.to_dict()
    assert offline(chart) is chart and isinstance(chart, alt.Chart) and chart.to_dict() == spec
    assert offline(None) is None
    derived = chart.properties(title="derived")
    bundle = derived._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg") and ">derived<" in bundle["image/svg+xml"]
    from ncu_roof.render.charts import notebook

    def no_vl_convert(chart: object) -> str:
        raise InputError("a chart in a notebook needs vl-convert-python\nmore")

    monkeypatch.setattr(notebook, "svg", no_vl_convert)
    said = "<Chart: not drawn: a chart in a notebook needs vl-convert-python>"
    assert derived._repr_mimebundle_() == {"text/plain": said}


_COLUMNS_JS = """
function (done) {
  var pre = document.querySelector('.ncu-roof pre');
  if (!pre) { done(null); return; }
  var text = pre.firstChild, lines = text.data.split('\\n');
  function left(line, column) {  // where the character at (line, column) is drawn
    var offset = lines.slice(0, line).join('\\n').length + (line ? 1 : 0) + column;
    var range = document.createRange(); range.setStart(text, offset); range.setEnd(text, offset + 1);
    return range.getBoundingClientRect().left;
  }
  var style = getComputedStyle(pre), header = lines.findIndex(function (l) { return l.startsWith('kernel '); });
  var column = lines[header].indexOf('speedup');
  var rows = lines.map(function (l, i) { return i; })
    .filter(function (i) { return i !== header && /^\\d+\\.\\d\\dx /.test(lines[i].slice(column)); });
  done({whiteSpace: style.whiteSpace, font: style.fontFamily, column: column,
        header: left(header, column), rows: rows.map(function (i) { return left(i, column); }),
        rendered: Math.round(pre.scrollHeight / parseFloat(style.lineHeight)),
        lines: text.data.replace(/\\n$/, '').split('\\n').length});
}
"""


def test_compares_columns_stay_aligned_in_an_exported_notebook(mw: tuple[Path, Path], tmp_path: Path) -> None:
    """compare's text block in its notebook view, exported by nbconvert and opened 900 px wide in
    chromium: no line wraps, and each row's speedup starts where the header's ``speedup`` does."""
    from browser import CHROMIUM, SKIP_REASON, probe

    if not CHROMIUM.is_file():
        pytest.skip(SKIP_REASON)
    nbformat = pytest.importorskip("nbformat", reason="the notebook extra is not installed")
    nbclient = pytest.importorskip("nbclient", reason="the notebook extra is not installed")
    pytest.importorskip("ipykernel", reason="the notebook extra is not installed")
    nbconvert = pytest.importorskip("nbconvert", reason="nbconvert (the test extra) is not installed")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import ncu_roof\nncu_roof.compare({str(mw[0])!r}, {str(mw[1])!r})")]
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    page = tmp_path / "compare.html"
    page.write_text(nbconvert.HTMLExporter().from_notebook_node(nb)[0], encoding="utf-8")
    got = probe(page, tmp_path / "profile", 900, _COLUMNS_JS)
    assert got and got["whiteSpace"] == "pre" and "monospace" in got["font"], got
    assert got["rendered"] == got["lines"], got  # not one line wrapped
    assert len(got["rows"]) == 5 and got["column"] > 0, got  # the five MW kernels
    assert all(abs(x - got["header"]) < 0.5 for x in got["rows"]), got
