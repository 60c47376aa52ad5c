"""The benchmark figures: the README's table is what the last ``benchmarks/results.json`` gives,
that file is a whole run (every figure, each judged against its bound as stated), and the quick
smoke run of ``benchmarks/run.py`` works end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from table import END, START, readme_table, update_readme  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results.json"
from bench_shapes import SHAPES  # noqa: E402

SHAPE_FIGURES = {"source-lines"} | {f"{shape}-{part}" for shape in SHAPES if shape != "source"
                                    for part in ("table", "text", "json", "markdown", "html")}
FIGURES = {"csv-table", "csv-diagnose", "csv-scaling", *SHAPE_FIGURES, "full-scaling", "trace-time", "trace-memory",
           "rep-memory", "rep-ncu-import", "rep-big-memory", "rep-big-text", "rep-big-json", "rep-big-markdown",
           "rep-big-html", "small-report"}


def _results() -> dict:
    return json.loads(RESULTS.read_text())


def test_the_readme_table_is_the_last_results() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.count(START) == 1 and readme.count(END) == 1
    assert update_readme(readme, _results()) == readme, "run: python benchmarks/run.py --readme"


def test_the_results_are_a_whole_run_with_every_figure() -> None:
    results = _results()
    assert not results["quick"]
    ids = {f["id"] for f in results["figures"]}
    left_out = {line.split(":")[0] for line in results["skipped"]}
    assert ids | left_out == FIGURES and not ids & left_out
    assert results["machine"]["cores"] >= 1 and results["commit"] != "unknown"


def test_each_figure_is_judged_against_its_bound() -> None:
    for fig in _results()["figures"]:
        got = fig[fig["value"]] if fig["value"] in fig else fig["a"][fig["value"]]
        assert fig["met"] == (got <= fig["bound"] if fig["better"] == "lower" else got >= fig["bound"]), fig["id"]
        if fig["b"] is not None and fig["value"] == "ratio":  # a median of pair ratios: near the medians' ratio
            assert got == pytest.approx(fig["a"]["wall_s"] / fig["b"]["wall_s"], rel=0.5), fig["id"]


def test_the_table_shows_each_figure_and_a_missed_bound() -> None:
    results = _results()
    fig = dict(results["figures"][0], met=False)
    table = readme_table({**results, "figures": [fig]})
    assert fig["what"] in table and "(missed)" in table and results["commit"] in table


@pytest.mark.slow
def test_the_quick_run_writes_every_figure_it_measures(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: a bound missed on small inputs
    results = json.loads(out.read_text())
    assert results["quick"] and {"csv-table", "csv-diagnose", "trace-time", "trace-memory"} <= {
        f["id"] for f in results["figures"]}
    assert all(f["a"]["wall_s"] > 0 and f["a"]["peak_mb"] > 10 for f in results["figures"])


def test_each_figure_is_one_row_that_says_whether_it_missed() -> None:
    results = _results()
    shown = [dict(f, met=n != 1) for n, f in enumerate(results["figures"][:3])]
    rows = readme_table({**results, "figures": shown}).splitlines()[2:5]
    assert [shown[n]["what"] in row for n, row in enumerate(rows)] == [True] * 3
    assert [row.endswith("(missed) |") for row in rows] == [False, True, False]
