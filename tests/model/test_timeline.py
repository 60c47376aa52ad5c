"""The measured timeline: busy, idle, span, launches and streams equal a plain loop over each real
trace's raw JSON (exact decimals); gaps add up to the idle time; every finding's stake stays within
it; a synthetic trace's gaps, causes, floor and prices as computed by hand."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ncu_roof.model.timeline import measure
from ncu_roof.read.trace import read_trace
from ncu_roof.rules.timeline import timeline_findings
from tests.read.test_trace import TRACES

GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def union_by_loop(intervals: list[tuple[Decimal, Decimal]]) -> Decimal:
    total, cur_start, cur_end = Decimal(0), None, None
    for s, e in sorted(intervals):
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start  # type: ignore[operator]
            cur_start, cur_end = s, e
        elif e > cur_end:
            cur_end = e
    if cur_end is not None:
        total += cur_end - cur_start  # type: ignore[operator]
    return total


def by_hand(path: Path) -> dict[str, Any]:
    """Span, busy, idle, launches and per-stream busy (microseconds, exact) from the raw events."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        events = json.load(fh, parse_float=Decimal)["traceEvents"]
    kernels: list[tuple[Decimal, Decimal]] = []
    everything: list[tuple[Decimal, Decimal]] = []
    streams: dict[Any, list[tuple[Decimal, Decimal]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU:
            iv = (Decimal(e["ts"]), Decimal(e["ts"]) + Decimal(e["dur"]))
            everything.append(iv)
            if e["cat"] == "kernel":
                kernels.append(iv)
                streams.setdefault(e["args"]["stream"], []).append(iv)
    span = max(e for _, e in everything) - min(s for s, _ in everything)
    busy = union_by_loop(kernels)
    return {"span": span, "busy": busy, "idle": span - busy, "launches": len(kernels),
            "streams": {k: union_by_loop(v) for k, v in streams.items()}}


@pytest.mark.parametrize("name", TRACES)
def test_busy_idle_span_and_launches_equal_a_plain_loop(hta: Path, name: str) -> None:
    hand = by_hand(hta / name)
    tl = measure(read_trace(hta / name))
    assert tl.launches == hand["launches"]
    assert tl.span_s == pytest.approx(float(hand["span"]) * 1e-6, abs=1e-9)
    assert tl.gpu_busy_s == pytest.approx(float(hand["busy"]) * 1e-6, abs=1e-9)
    assert tl.gpu_idle_s == pytest.approx(float(hand["idle"]) * 1e-6, abs=1e-9)
    streams = dict(zip(tl.streams["stream"], tl.streams["busy_s"], strict=True))
    assert streams == pytest.approx({k: float(v) * 1e-6 for k, v in hand["streams"].items()}, abs=1e-9)
    # the gaps partition the idle time, and nothing is priced above the gap it is in
    if len(tl.gaps):
        assert tl.gaps["idle_s"].sum() == pytest.approx(tl.gpu_idle_s, abs=1e-9)
        priced = tl.gaps[["launch_s", "host_s", "sync_s"]].sum(axis=1)
        assert (priced <= tl.gaps["idle_s"] + 1e-12).all()
    findings = timeline_findings(tl)
    assert all(0 <= (f.time_at_stake_s or 0) <= tl.gpu_idle_s for f in findings)
    assert sum(f.time_at_stake_s or 0 for f in findings) <= tl.gpu_idle_s + 1e-12


def test_the_a100_trace_pinned(hta: Path) -> None:
    """The issue's numbers: 6,080 kernels busy 396 ms of a 1,231 ms span, idle 68%."""
    tl = measure(read_trace(hta / "negative_queue_length_values_check__rank0.json.gz"))
    assert (tl.launches, round(tl.gpu_busy_s * 1e6), round(tl.span_s * 1e6)) == (6080, 396315, 1231461)
    assert round(tl.idle_share, 3) == 0.678
    assert tl.gpu_name == "NVIDIA A100-SXM4-80GB"
    assert len(tl.steps) == 5 and set(tl.steps["launches"]) == {1075}
    # most of its idle waits on work already queued (a CUDA graph's nodes the trace does not show);
    # 98 ms after kernels launched before the trace began
    causes = tl.idle_by_cause()
    assert round(causes["unknown"] * 1e6) == 98130
    assert causes["queued"] > 0.5 * tl.gpu_idle_s


def test_the_v100_step_pinned(hta: Path) -> None:
    tl = measure(read_trace(hta / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"))
    assert tl.launches == 4350 and len(tl.streams) == 1
    # exact decimals: float64 epoch microseconds (a 0.25 us grid) would make it 468,172.9 us
    assert round(tl.gpu_busy_s * 1e6, 3) == pytest.approx(468153.602, abs=0.002)
    assert tl.gpu_idle_s / tl.span_s < 0.03  # a busy GPU: nothing worth a finding
    assert timeline_findings(tl) == []


def test_warm_up_named_as_cpu_bound(hta: Path) -> None:
    """AlexNet's trace holds its warm-up: 10.9 s of cuDNN autotuning inside aten::conv2d; that is the
    CPU's own work, not launch overhead: the launch stake stays a few launches' worth."""
    tl = measure(read_trace(hta / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"))
    found = {f.rule: f for f in timeline_findings(tl)}
    assert found["cpu-bound"].time_at_stake_s == pytest.approx(tl.gaps["host_s"].sum())
    assert list(found["cpu-bound"].evidence["ops"])[0] == "aten::conv2d"  # type: ignore[call-overload]
    assert tl.gaps["launch_s"].sum() < 0.01
    assert found["cpu-bound"].severity == "high"


# --- a synthetic trace, every number by hand (microseconds from 1,000,000) -------------------------

def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1 if cat not in GPU else 0,
            "tid": tid if cat not in GPU else args.get("stream", 7), "ts": 1_000_000 + ts, "dur": dur, "args": args}


def synthetic_timeline_events() -> list[dict[str, Any]]:
    return [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("cpu_op", "aten::a", 0, 10), _x("cuda_runtime", "cudaLaunchKernel", 2, 3, correlation=1),
        _x("cpu_op", "aten::b", 10, 10), _x("cuda_runtime", "cudaLaunchKernel", 15, 3, correlation=2),
        _x("cpu_op", "aten::item", 20, 21), _x("cuda_runtime", "cudaStreamSynchronize", 20, 20, correlation=9),
        _x("cpu_op", "aten::c", 45, 10), _x("cuda_runtime", "cudaLaunchKernel", 50, 1, correlation=3),
        _x("cuda_runtime", "cudaLaunchKernel", 52, 1, correlation=4),
        _x("cuda_runtime", "cudaMemcpyAsync", 56, 1, correlation=5),
        _x("kernel", "k1", 10, 4, stream=7, correlation=1), _x("kernel", "k2", 18, 12, stream=7, correlation=2),
        _x("kernel", "k3", 53, 3, stream=7, correlation=3), _x("kernel", "k4", 58, 2, stream=7, correlation=4),
        _x("gpu_memcpy", "Memcpy DtoH", 60, 5, stream=7, correlation=5, bytes=4),
    ]


def test_synthetic_timeline_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "synthetic_timeline.json"
    path.write_text(json.dumps({"traceEvents": synthetic_timeline_events()}), encoding="utf-8")
    tl = measure(read_trace(path))
    us = 1e-6
    # span 10..65, kernels busy 4 + 12 + 3 + 2 = 21, idle 34 = gaps 4 + 23 + 2 + 5
    assert (tl.span_s, tl.gpu_busy_s, tl.gpu_idle_s) == pytest.approx((55 * us, 21 * us, 34 * us), abs=1e-12)
    assert (tl.launches, tl.copies, tl.copy_busy_s) == (4, 1, pytest.approx(5 * us, abs=1e-12))
    g = tl.gaps
    assert list(g["cause"]) == ["launch", "sync", "queued", "end"]
    assert list(g["idle_s"] / us) == pytest.approx([4, 23, 2, 5])
    assert list(g["next_op"].astype(object)[:3]) == ["aten::b", "aten::c", "aten::c"]
    assert g["sync_call"][1] == "cudaStreamSynchronize" and g["sync_op"][1] == "aten::item"
    # under a CPU op on the launching thread: [14,18] in aten::b; [30,53] in aten::item to 41, aten::c from 45
    assert list(g["under_op_s"] / us)[:2] == pytest.approx([4, 11 + 8])
    assert tl.cpu_bound_s == pytest.approx(23 * us, abs=1e-12)
    # launch floor: launches at 2, 15, 50, 52 -> steps 13, 35, 2 -> median 13; every kernel is shorter
    assert tl.launch_floor_s == pytest.approx(13 * us, abs=1e-12)
    assert (tl.sub_floor_kernels, tl.sub_floor_time_s) == (4, pytest.approx(21 * us, abs=1e-12))
    # the GPU's own gap: k4 was queued (launched at 52) before k3 ended (56) and started at 58
    assert tl.kernel_switch_s == pytest.approx(2 * us, abs=1e-12)
    assert tl.launch_call_s == pytest.approx(2 * us, abs=1e-12)  # median of 3, 3, 1, 1
    # prices: the launch gap 4 - 2 (switch) = 2, within 1 launch x 13; the sync gap 23 - 2 = 21
    assert list(g["launch_s"] / us) == pytest.approx([2, 0, 0, 0])
    assert list(g["host_s"] / us) == pytest.approx([0, 0, 0, 0])
    assert list(g["sync_s"] / us) == pytest.approx([0, 21, 0, 0])
    found = {f.rule: f for f in timeline_findings(tl)}
    assert set(found) == {"launch-overhead", "sync-stall"}
    assert found["sync-stall"].time_at_stake_s == pytest.approx(21 * us)
    assert found["sync-stall"].severity == "high"  # 38% of the span
    assert found["launch-overhead"].time_at_stake_s == pytest.approx(2 * us)
    assert found["launch-overhead"].severity == "medium"  # 3.6%
    assert "cudaStreamSynchronize (1)" in found["sync-stall"].message
    (step,) = tl.steps.to_dict("records")
    assert step["step"] == "ProfilerStep#1" and step["launches"] == 4
    assert (step["span_s"], step["gpu_busy_s"]) == pytest.approx((55 * us, 21 * us), abs=1e-12)


def test_overlapping_streams_count_once(tmp_path: Path) -> None:
    events = [_x("kernel", "a", 0, 10, stream=7), _x("kernel", "b", 5, 10, stream=8),
              _x("kernel", "c", 30, 5, stream=8)]
    path = tmp_path / "synthetic_streams.json"
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    tl = measure(read_trace(path))
    us = 1e-6
    assert (tl.span_s, tl.gpu_busy_s, tl.stream_overlap_s) == pytest.approx((35 * us, 20 * us, 5 * us), abs=1e-12)
    assert list(tl.streams["busy_s"] / us) == pytest.approx([10, 15])
    assert list(tl.gaps["cause"]) == ["unknown"]  # no runtime calls in this trace: the cause is unknown
    assert tl.unlinked == 3 and any("no launch in the trace" in n for n in tl.notes)
