"""Two traces compared (``ncu-roof compare A.json B.json``): totals, step means and the ops and
kernels that moved, on a synthetic pair with numbers by hand and on a real trace against itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncu_roof.comparison.traces import compare_traces
from ncu_roof.traces import analyse_traces
from tests import synthetic_pair as sp
from tests.cli.test_cli import one_line_error, run
from tests.read.test_trace import HTA

FASTER_ADD_US = 60  # the new trace's add kernel: 100 us -> 60 us in each step


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    base = sp.write_trace(tmp_path / "synthetic_base.json")
    doc = sp.trace_events()
    for ev in doc["traceEvents"]:
        if ev["cat"] == "kernel" and ev["name"] == sp.ADD_MANGLED:
            ev["dur"] = FASTER_ADD_US
    new = tmp_path / "synthetic_new.json"
    new.write_text(json.dumps(doc), encoding="utf-8")
    return base, new


def test_totals_and_what_moved_by_hand(two: tuple[Path, Path]) -> None:
    (a,), _ = analyse_traces(two[0])
    (b,), _ = analyse_traces(two[1])
    c = compare_traces(a, b)
    saved = 2 * (100 - FASTER_ADD_US) * 1e-6  # two add launches, each 40 us shorter
    busy = c.total("gpu_busy_s")
    assert (busy["base"], busy["new"], busy["delta"]) == pytest.approx((sp.BUSY_US * 1e-6, sp.BUSY_US * 1e-6 - saved,
                                                                         -saved))
    assert c.total("gpu_idle_s")["delta"] == pytest.approx(saved)  # the scale kernel starts when it did
    assert c.total("span_s")["delta"] == pytest.approx(0.0)
    # per step (two ProfilerSteps): busy 520 us -> 480 us
    assert c.total("step_busy_s")[["base", "new"]].tolist() == pytest.approx([520e-6, 480e-6])
    assert c.total("idle_launch_s")["new"] == pytest.approx((sp.IDLE_US * 1e-6) + saved)
    top = c.ops.iloc[0]
    assert (top["op"], top["delta_s"]) == ("aten::add", pytest.approx(-saved))
    assert (c.ops["delta_s"].iloc[1:] == 0).all()
    assert c.kernels.iloc[0]["kernel"] == sp.ADD_MANGLED and c.kernels.iloc[0]["launches_new"] == 2


def test_compare_command_takes_two_traces(two: tuple[Path, Path]) -> None:
    result = run("compare", str(two[0]), str(two[1]), "-f", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "ncu-roof/compare-traces/1"
    assert doc["totals"]["gpu_busy_s"]["delta"] == pytest.approx(-80e-6)
    assert doc["totals"]["launch_floor_s"]["ratio"] == pytest.approx(1.0)
    text = run("compare", str(two[0]), str(two[1])).stdout
    assert "ops that moved (kernel time):" in text and "aten::add" in text and "-80 us" in text
    assert "nan" not in text.lower()
    assert "--chart draws reports" in one_line_error(run("compare", str(two[0]), str(two[1]), "--chart", "x.png"))


def test_real_trace_against_itself(realdata: Path) -> None:
    path = realdata / HTA / "trace_diff__control__control.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    (a,), _ = analyse_traces(path)
    c = compare_traces(a, a)
    assert (c.totals["delta"].dropna() == 0).all()
    assert c.total("launches")["base"] == a.timeline.launches == 8568
    assert c.total("gpu_busy_s")["base"] == a.timeline.gpu_busy_s
    steps = a.timeline.steps
    assert c.total("step_s")["base"] == pytest.approx(steps["span_s"].sum() / steps["count"].sum())
    assert c.ops["time_s_base"].sum() == pytest.approx(a.timeline.ops["kernel_time_s"].sum())
