"""``ncu-roof timeline``: real traces measured in text, Markdown and JSON; a folder of ranks; damaged
traces one line and exit 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.cli.test_cli import one_line_error, run
from tests.read.test_trace import TRACES

A100 = "negative_queue_length_values_check__rank0.json.gz"


def test_text_names_busy_idle_and_the_findings(hta: Path) -> None:
    result = run("timeline", str(hta / A100))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "(rank 0, NVIDIA A100-SXM4-80GB)" in out
    assert "span 1.23 s: GPU busy 396 ms (32%), idle 835 ms (68%)" in out
    assert "6,080 kernels" in out and "on 5 streams" in out
    assert "ProfilerStep#550" in out and "findings:" in out
    assert "nan" not in out.lower().replace("nanoseconds", "")


def test_a_trace_too_small_to_measure_the_floor_says_so(hta: Path) -> None:
    """triton_example holds one kernel: no two launches in a row on a thread, nothing queued. Its floor
    line said 'launch floor - ...; ? kernels (?) shorter; ... queued kernels -'; now what is not measured
    is said so, and no real trace's text prints '?' for a number."""
    out = run("timeline", str(hta / "triton_example__triton_example.json.gz")).stdout
    assert ("launch floor not measured: no launches in a row on one thread (the call itself 47.8 us, 47.8 us in "
            "all); GPU's own gap between queued kernels not measured (none queued)") in out
    for trace in sorted(hta.glob("*.json.gz")):
        text = run("timeline", str(trace)).stdout
        assert "(?)" not in text and " ? " not in text, trace.name


def test_json_timeline_section_per_trace(hta: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    result = run("timeline", str(hta), "-o", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    in_folder = sorted(f.name for f in hta.rglob("*") if f.name.endswith((".json", ".json.gz")))
    assert [Path(t["trace"]).name for t in doc["traces"]] == in_folder  # a folder: one trace per file, sorted
    assert set(TRACES) <= set(in_folder)
    a100 = next(t for t in doc["traces"] if t["trace"].endswith(A100))
    tl = a100["timeline"]
    assert (tl["launches"], round(tl["gpu_busy_s"] * 1e6), round(tl["span_s"] * 1e6)) == (6080, 396315, 1231461)
    assert tl["gpu_idle_s"] == pytest.approx(tl["span_s"] - tl["gpu_busy_s"])
    assert {s["stream"]: s["launches"] for s in tl["streams"]} == {7: 5705, 27: 295, 84: 36, 285: 22, 363: 22}
    for trace in doc["traces"]:
        idle = trace["timeline"]["gpu_idle_s"]
        assert all(f["time_at_stake_s"] <= idle for f in trace["findings"])
    nameless = next(t for t in doc["traces"] if t["trace"].endswith("trace_filter__sampled_rank-0.json.gz"))
    assert nameless["gpu"] is None
    triton = next(t for t in doc["traces"] if t["trace"].endswith("triton_example__triton_example.json.gz"))
    assert triton["timeline"]["launch_floor_s"] is None  # one launch: no floor to measure, not 0
    assert triton["timeline"]["sub_floor_kernels"] is None


def test_markdown_by_suffix(hta: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.md"
    result = run("timeline", str(hta / "trace_diff__control__control.json.gz"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("## trace ") and "| idle cause | time | meaning |" in text
    assert "**launch-overhead**" in text


def test_truncated_trace_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "synthetic_cut.json.gz"
    text = json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}] * 50})
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(text[: len(text) // 2])
    line = one_line_error(run("timeline", str(path)))
    assert "cut short" in line and str(path) in line


def test_bad_json_and_missing_and_wrong_suffix(tmp_path: Path) -> None:
    bad = tmp_path / "synthetic_bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X",, "cat": "kernel"}]}', encoding="utf-8")
    assert "not valid JSON at character" in one_line_error(run("timeline", str(bad)))
    assert "no such file" in one_line_error(run("timeline", str(tmp_path / "nope.json")))
    assert "cannot write" in one_line_error(run("timeline", str(bad), "-o", str(tmp_path / "x.csv")))
    empty = tmp_path / "folder"
    empty.mkdir()
    assert "no .json, .json.gz or .sqlite trace" in one_line_error(run("timeline", str(empty)))


def test_trace_beside_its_report(tmp_path: Path, realdata: Path, reportgen_mod: object) -> None:
    from tests import synthetic_pair as sp

    trace, report = sp.make_pair(tmp_path, realdata, reportgen_mod)
    out = tmp_path / "pair.json"
    result = run("timeline", str(trace), "--report", str(report), "-o", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))["traces"][0]
    kernels = {k["kernel"]: k for k in doc["report"]["kernels"]}
    assert kernels["gemm_kernel"]["trace_time_s"] == pytest.approx(800e-6)
    assert kernels["add_kernel"]["scale"] == pytest.approx(200 / 120)
    assert [u["name"] for u in doc["report"]["unprofiled"]] == [sp.SCALE]
    ranking = doc["report"]["ranking"]
    assert ranking[0]["rule"] == "launch-overhead"
    assert ranking[0]["time_at_stake_s"] == pytest.approx(sp.IDLE_US * 1e-6)  # three launch gaps, priced whole
    text = run("timeline", str(trace), "-r", str(report)).stdout
    assert "kernels beside the report (96% of the trace's kernel time matched)" in text
    assert "grid-underfill (gemm_kernel)" in text and "scaled by 0.8" in text
    assert "nan" not in text.lower()
    assert "no such file" in one_line_error(run("timeline", str(trace), "-r", str(tmp_path / "none.ncu-rep")))
