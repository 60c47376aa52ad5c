"""History in a store: trend (series, median, noise band, moves) and check --baseline-store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REALDATA, ROOT
from store_helpers import store_deps, write_reports  # noqa: F401 - fixtures

pytestmark = pytest.mark.usefixtures("store_deps")
MW = REALDATA / "NCAR__GPU_workshop"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def mw_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ncu_roof.store.ingest import ingest

    if not (MW / "MW_Baseline.ncu-rep").is_file():
        pytest.skip(f"real reports not available: {MW} is absent")
    store = tmp_path_factory.mktemp("mw") / "store"
    ingest([MW / "MW_Baseline.ncu-rep"], store, {"commit": "baseline"}, jobs=1)
    ingest([MW / "MW_DivToMult.ncu-rep"], store, {"commit": "divtomult"}, jobs=1)
    return store


def test_the_mw_pair_as_two_commits_moves_compute_tendencies_x_279_by_1_78x(mw_store: Path) -> None:
    from ncu_roof.store.trend import trend

    t = trend(mw_store, "time", "label:commit")
    assert [s.kernel for s in t.series] == ["compute_tendencies_x_279_gpu", "compute_tendencies_x_309_gpu",
                                            "semi_discrete_step_232_gpu", "set_halo_values_x_396_gpu",
                                            "set_halo_values_x_419_gpu"]
    moved = [(s.kernel, m.before, m.after, m.ratio) for s, m in t.moved]
    assert moved == [("compute_tendencies_x_279_gpu", "baseline", "divtomult", 0.00348224 / 0.006190944)]
    assert round(1 / moved[0][3], 2) == 1.78
    first = t.series[0]
    assert [(p.group, p.value, p.runs) for p in first.points] == [("baseline", 0.006190944, 1),
                                                                   ("divtomult", 0.00348224, 1)]
    assert (first.band, first.band_basis) == (0.15, "none measured")  # one run, one launch each
    # set_halo_values_x_396_gpu: 11.4 us -> 12.8 us, 1.12x slower, inside the assumed 15%
    halo = t.series[3]
    assert halo.moves[0].beyond_noise is False and round(halo.moves[0].ratio, 3) == 1.124

    r = _cli("trend", "--store", str(mw_store), "--by", "label:commit", "--kernel", "compute_tendencies")
    assert r.returncode == 0, r.stderr
    assert "  divtomult  3.48 ms (1 run)  1.78x faster, beyond the noise\n" in r.stdout
    assert r.stdout.endswith("1 move beyond the noise: compute_tendencies_x_279_gpu baseline -> divtomult 1.78x "
                             "faster\n")
    data = json.loads(_cli("trend", "--store", str(mw_store), "--by", "label:commit", "-f", "json").stdout)
    assert data["schema"] == "ncu-roof/trend/1" and data["series"][0]["moves"][0]["beyond_noise"] is True
    md = _cli("trend", "--store", str(mw_store), "--by", "label:commit", "-f", "markdown").stdout
    assert "| Tesla V100-SXM2-32GB | `compute_tendencies_x_279_gpu` | 2 | 4.84 ms | +/-15% (none measured) | " \
           "3.48 ms | baseline -> divtomult: 1.78x faster |" in md


def test_the_chart_draws_each_kernels_points(mw_store: Path, tmp_path: Path) -> None:
    r = _cli("trend", "--store", str(mw_store), "--by", "label:commit", "--chart", str(tmp_path / "t.json"))
    assert r.returncode == 0, r.stderr
    spec = json.loads((tmp_path / "t.json").read_text())
    values = [row for data in spec["datasets"].values() for row in data if "value" in row]
    assert len(values) == 10
    assert {(v["point"], v["value"]) for v in values if v["kernel"].startswith("compute_tendencies_x_279")} == {
        ("baseline", 0.006190944), ("divtomult", 0.00348224)}
    # drawn in the unit the middle of the range reads in (11.4 us to 6.19 ms: 266 us, so microseconds)
    drawn = {v["point"]: (v["y"], v["shown"]) for v in values if v["kernel"].startswith("compute_tendencies_x_279")}
    assert drawn == {"baseline": (pytest.approx(6190.944), "6.19 ms"), "divtomult": (pytest.approx(3482.24), "3.48 ms")}
    assert [layer["encoding"]["y"]["title"] for layer in spec["layer"]] == ["time per launch (us)"] * 2


def test_the_chart_reads_times_in_the_unit_of_their_range() -> None:
    """The y-axis is in s, ms, us or ns, as the text is, labelled with its unit; other metrics keep theirs."""
    from ncu_roof.store.render import time_unit, trend_chart
    from ncu_roof.store.trend import Point, Series, Trend

    assert time_unit([12e-6, 15e-6]) == ("us", 1e-6) and time_unit([2e-3, 9e-3]) == ("ms", 1e-3)
    assert time_unit([1.5, 3.0]) == ("s", 1.0) and time_unit([400e-9]) == ("ns", 1e-9)
    assert time_unit([float("nan"), 0.0]) == ("s", 1.0)

    def chart(metric: str, values: list[float]) -> Any:
        points = [Point(f"r{i}", 1, v, "") for i, v in enumerate(values)]
        series = Series("GPU", "k", points, sorted(values)[len(values) // 2], 0.15, "none measured")
        return trend_chart(Trend("store", metric, "run", [series])).to_dict()

    spec = chart("time", [12e-6, 15e-6, 13e-6])
    assert [lay["encoding"]["y"]["title"] for lay in spec["layer"]] == ["time per launch (us)"] * 2
    rows = [r for data in spec["datasets"].values() for r in data if "y" in r]
    assert [(r["y"], r["shown"]) for r in rows] == [(pytest.approx(12.0), "12 us"), (pytest.approx(15.0), "15 us"),
                                                    (pytest.approx(13.0), "13 us")]
    bands = [r for data in spec["datasets"].values() for r in data if "low" in r]
    assert bands[0]["high"] == pytest.approx(13.0 * 1.15)
    pct = chart("pct_of_roof", [40.0, 60.0])
    assert pct["layer"][0]["encoding"]["y"]["title"] == "% of roof (%)"


def test_the_noise_band_comes_from_repeated_runs(tmp_path: Path, write_reports) -> None:  # noqa: F811
    from ncu_roof.store.ingest import ingest
    from ncu_roof.store.trend import trend

    store = tmp_path / "s"
    for commit, times in (("a", (100, 102, 98)), ("b", (99, 101, 97)), ("c", (130, 131, 129))):
        ingest(write_reports(f"rep_{commit}", [{"k": t} for t in times]), store, {"commit": commit}, jobs=1)
    (s,) = trend(store, "time", "label:commit").series
    assert [(p.group, p.runs, round(p.value * 1e6, 3)) for p in s.points] == [("a", 3, 100.0), ("b", 3, 99.0),
                                                                              ("c", 3, 130.0)]
    # deviations from each commit's median: 0, .02, .02 | 0, 2/99, 2/99 | 0, 1/130, 1/130 -> median 1/130
    assert s.band_basis == "from runs within a point"
    assert s.band == pytest.approx(3 * 1.4826 / 130)
    assert [(m.after, m.beyond_noise) for m in s.moves] == [("b", False), ("c", True)]


def test_the_noise_band_comes_from_repeated_launches_in_a_run(tmp_path: Path, write_reports) -> None:  # noqa: F811
    from ncu_roof.store.ingest import ingest
    from ncu_roof.store.query import run_query
    from ncu_roof.store.trend import trend

    store = tmp_path / "s"
    ingest(write_reports("launches", [{"k": [100.0, 104.0, 96.0, 100.0, 108.0]}, {"k": [115.0] * 5}]), store, jobs=1)
    spread = run_query(store, "SELECT launch_time_spread FROM kernels ORDER BY launch_time_spread")
    assert spread["launch_time_spread"].tolist() == pytest.approx([0.0, 0.04])  # median |t - 100 us| = 4 us
    (s,) = trend(store, "time", "run").series
    assert s.band_basis == "from repeated launches" and s.band == pytest.approx(3 * 1.4826 * 0.02)  # median of .04, 0
    assert [m.beyond_noise for m in s.moves] == [True]  # 101.6 us -> 115 us: 13% against a 8.9% band


def test_check_gates_on_the_median_of_the_last_runs_on_the_device(tmp_path: Path, write_reports) -> None:  # noqa: F811
    from ncu_roof.store.ingest import ingest

    store = tmp_path / "s"
    ingest(write_reports("history", [{"k": t} for t in (100, 101, 99, 200, 201)]), store, jobs=1)
    (current,) = write_reports("current", [{"k": 230}])
    rules = tmp_path / "rules.toml"
    rules.write_text("[defaults]\nmax_slowdown = 1.2\n")
    args = ("check", str(current), "--rules", str(rules), "--baseline-store", str(store))
    near = _cli(*args, "--window", "2")
    assert near.returncode == 0, near.stdout + near.stderr
    far = _cli(*args, "--window", "5")
    assert far.returncode == 1
    assert "- kernel k: 230 us vs 101 us (the median of its last 5 runs in the store) = 2.28x slower, beyond " \
           "max_slowdown = 1.2\n" in far.stdout
    both = _cli(*args, "--baseline", str(current))
    assert (both.returncode, both.stderr) == (2, "ncu-roof: error: give --baseline REPORT or --baseline-store DIR, "
                                                 "not both (--map goes with --baseline)\n")


def test_trend_errors_are_one_line(mw_store: Path) -> None:
    cases = {("--by", "commit"): "--by 'commit': give run, date or label:KEY (e.g. label:commit)",
             ("--metric", "speed"): "--metric 'speed': choose time, total_time, pct_of_roof, bytes, l2_bytes, flops, "
                                    "intensity, sol, launches"}
    for args, line in cases.items():
        r = _cli("trend", "--store", str(mw_store), *args)
        assert (r.returncode, r.stderr) == (2, f"ncu-roof: error: {line}\n")
    by_date = _cli("trend", "--store", str(mw_store), "--by", "date", "--kernel", "x_279", "-f", "json")
    (series,) = json.loads(by_date.stdout)["series"]
    assert [p["runs"] for p in series["points"]] == [2]  # both ingested today: one point, their median
    assert series["points"][0]["value"] == pytest.approx((0.006190944 + 0.00348224) / 2)


GIS = REALDATA / "eschnett__GPUIndexSpaces"
GIS_COMMITS = ("db02bc1e7d", "616e8b4c09", "7246f95872", "87e1f3700d", "b702590fe7")  # ingest order


def test_trend_follows_julia_renames_as_compare_does(tmp_path: Path) -> None:
    """GPUIndexSpaces: five reports, one Julia kernel named julia_runsteps_6563, _6724, _6770, _6728
    and _6669 as CUDA.jl rebuilt it: five one-point series and 'no kernel moved' before; now one
    series of five points, 16.7 ms first, its 1.29x move (15.3 -> 11.9 ms) beyond the band, and
    the chart's x axis in order of ingest (it was the order of each series' own points)."""
    from ncu_roof.store.ingest import ingest
    from ncu_roof.store.render import trend_chart
    from ncu_roof.store.trend import trend

    if not (GIS / f"profile.{GIS_COMMITS[0]}.ncu-rep").is_file():
        pytest.skip(f"real reports not available: {GIS} is absent")
    store = tmp_path / "store"
    for commit in GIS_COMMITS:
        ingest([GIS / f"profile.{commit}.ncu-rep"], store, {"commit": commit}, jobs=1)
    t = trend(store, by="label:commit")
    [series] = t.series
    assert series.kernel == "julia_runsteps" and [p.group for p in series.points] == list(GIS_COMMITS)
    assert [round(p.value * 1e3, 1) for p in series.points] == [16.7, 14.7, 15.3, 11.9, 12.2]
    assert [(m.before, m.after, round(m.ratio, 3)) for _, m in t.moved] == [("7246f95872", "87e1f3700d", 0.778)]
    assert any(n.startswith("julia_runsteps: 5 names one kernel takes as Julia rebuilds it") for n in t.notes)
    spec = trend_chart(t).to_dict()
    assert [layer["encoding"]["x"]["sort"] for layer in spec["layer"]] == [list(GIS_COMMITS)] * 2


def test_a_new_label_on_re_ingest_is_not_dropped_silently(mw_store: Path) -> None:
    r = _cli("ingest", str(MW / "MW_Baseline.ncu-rep"), "--store", str(mw_store), "--label", "commit=again", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ("ncu-roof: note: 1 input(s) already in the store keep the labels of their first ingest: "
                        "--label commit=again applies to the runs added here only\n")
