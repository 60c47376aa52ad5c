"""The timeline's HTML page, chart and notebook frame: every kernel and gap drawn (or merged blocks
that cover every kernel), names escaped, nothing fetched from the network."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from browser import CHROMIUM, SKIP_REASON, measure

import ncu_roof
from ncu_roof.render.charts.save import chart_spec
from tests import synthetic_pair as sp
from tests.cli.test_cli import run
from tests.read.test_trace import HTA

A100 = "negative_queue_length_values_check__rank0.json.gz"
EVIL_OP = "aten::<script>alert(1)</script>&"


@pytest.fixture
def pair_trace(tmp_path: Path) -> Path:
    doc = sp.trace_events()
    for ev in doc["traceEvents"]:
        if ev.get("name") == "aten::mul":
            ev["name"] = EVIL_OP
    path = tmp_path / "synthetic_evil.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _layers(spec: dict) -> tuple[list[dict], list[dict]]:
    bars, gaps = (layer["data"]["values"] for layer in spec["layer"])
    return bars, gaps


def test_chart_draws_every_kernel_and_gap(pair_trace: Path) -> None:
    t = ncu_roof.timeline(pair_trace)
    bars, gaps = _layers(chart_spec(t.chart()))
    events = [ev for ev in sp.trace_events()["traceEvents"] if ev["cat"] == "kernel"]
    first = min(ev["ts"] for ev in events)
    # in milliseconds from the first kernel (the span is 1.59 ms)
    drawn = sorted(x for b in bars for x in (b["start"], b["end"]))
    assert drawn == pytest.approx(sorted(x for ev in events for x in ((ev["ts"] - first) / 1e3,
                                                                       (ev["ts"] + ev["dur"] - first) / 1e3)))
    assert {b["lane"] for b in bars} == {"stream 7"}
    assert {b["op"] for b in bars} == {"aten::mm", "aten::add", EVIL_OP}
    assert sorted(x for g in gaps for x in (g["start"], g["end"])) == pytest.approx([0.5, 0.57, 0.59, 1.0, 1.5, 1.57])
    assert {g["cause"] for g in gaps} == {"launch"}


def test_merged_chart_covers_every_kernel(realdata: Path) -> None:
    path = realdata / HTA / A100
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    t = ncu_roof.timeline(path)
    bars, gaps = _layers(chart_spec(t.chart()))
    k = t.kernels
    assert len(k) == 6080 and len(bars) < len(k) / 3  # drawn as blocks
    start0 = t.results[0].timeline.start_s  # the chart's zero: the first GPU activity (copies too)
    unit = chart_spec(t.chart())["layer"][0]["encoding"]["x"]["title"]
    assert unit.endswith("(s)")  # a 1.23 s span is drawn in seconds
    for lane, part in k.groupby("stream"):
        blocks = sorted((b["start"], b["end"]) for b in bars if b["lane"] == f"stream {int(lane)}")
        bs, be = np.array(blocks).T
        i = np.searchsorted(bs, part["start_s"].to_numpy() - start0 + 1e-12, side="right") - 1
        assert (i >= 0).all()
        assert (part["end_s"].to_numpy() - start0 <= be[i] + 1e-9).all()  # each kernel inside a block
    pixel = t.results[0].timeline.span_s / 1500
    assert all(g["end"] - g["start"] >= pixel - 1e-12 for g in gaps)


def test_html_page_is_offline_and_escaped(pair_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.html"
    result = run("timeline", str(pair_trace), "-o", str(out))
    assert result.returncode == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "data-chart=\"chart0\"" in page
    assert "<script>alert(1)" not in page and "aten::&lt;script&gt;alert(1)&lt;/script&gt;&amp;" in page
    assert not re.search(r"(src|href)=\"https?://", page)
    assert "Findings" in page and "launch-overhead" in page
    assert "nan" not in re.sub(r"<script.*?</script>", "", page, flags=re.S).lower()


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=SKIP_REASON)
@pytest.mark.parametrize("width", [900, 1024])
def test_html_page_fits_the_window(realdata: Path, tmp_path: Path, width: int) -> None:
    """``timeline -o x.html`` of the trace with the longest op names (trace_diff test: 9,876 kernels
    on 3 streams, 8 ops in the legend) in chromium: the chart and both legends inside a window
    ``width`` px wide (at 1,024 px it was 1,195 px wide, the legend cut off); at 1,024 px at its
    own size, not shrunk."""
    out = tmp_path / "t.html"
    result = run("timeline", str(realdata / HTA / "trace_diff__test__test.json.gz"), "-o", str(out), "-q")
    assert result.returncode == 0, result.stderr
    got = measure(out, tmp_path / "profile", width)
    (chart,) = got["charts"]
    assert len(chart["legends"]) == 2
    assert all(0 <= b["left"] and b["right"] <= width for b in [chart["svg"], *chart["legends"]]), chart
    if width == 1024:
        assert 900 < chart["svg"]["width"] < 1000, chart["svg"]


def test_notebook_frame(pair_trace: Path, tmp_path: Path) -> None:
    t = ncu_roof.timeline(pair_trace)
    assert len(t.kernels) == 6 and set(t.kernels["trace"]) == {str(pair_trace)}
    assert t.kernels["duration_s"].sum() == pytest.approx(sp.BUSY_US * 1e-6)  # one stream, no overlap
    assert t.gaps["idle_s"].sum() == pytest.approx(sp.IDLE_US * 1e-6)
    assert list(t.steps["step"]) == ["ProfilerStep#1", "ProfilerStep#2"]
    assert list(t.findings["rule"]) == ["launch-overhead"]
    assert t.matched.empty
    view = t._repr_html_()
    assert "<svg" in view and "<script>alert" not in view and not re.search(r"(src|href)=\"https?://", view)
    assert json.loads(t.to_json())["traces"][0]["timeline"]["launches"] == 6
    assert t.report(tmp_path / "nb.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
