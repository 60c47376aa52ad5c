"""Per-step GPU windows never overlap: the steps' spans fit in the trace's span and their idle adds up to
at most the trace's idle (issue 46, item 4: V100 steps were 944 ms of a 745 ms trace, ~40% idle each
while the trace was 17% idle)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncu_roof.model.timeline import measure
from ncu_roof.read.trace import read_trace


def test_the_v100_steps_add_up_inside_the_trace(hta: Path) -> None:
    tl = measure(read_trace(hta / "trace_diff__test__test.json.gz"))
    steps = tl.steps
    assert list(steps["step"]) == [f"ProfilerStep#{n}" for n in range(1009, 1015)]
    assert round(float(steps["span_s"].sum()) * 1e6) == 744514  # the trace: 745,239 us
    assert round(float(steps["gpu_idle_s"].sum()) * 1e6) == 123267  # the trace: 123,793 us idle
    assert round(tl.gpu_idle_s * 1e6) == 123793
    assert [round(v * 1e3, 1) for v in steps["gpu_idle_s"]] == [16.4, 20.0, 23.7, 17.2, 21.8, 24.2]
    assert set(steps["launches"]) == {1555}


@pytest.mark.parametrize("name", [
    "negative_queue_length_values_check__rank0.json.gz",
    "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "trace_diff__control__control.json.gz", "trace_diff__test__test.json.gz", "trace_filter__sampled_rank-0.json.gz",
    "trace_filter__sampled_rank-1.json.gz", "triton_example__triton_example.json.gz"])
def test_steps_never_hold_more_idle_or_span_than_their_trace(hta: Path, name: str) -> None:
    tl = measure(read_trace(hta / name))
    steps = tl.steps
    assert len(steps)
    assert float(steps["gpu_idle_s"].sum()) <= tl.gpu_idle_s + 1e-12
    assert float(steps["span_s"].sum()) <= tl.span_s + 1e-12
    ends = (steps["start_s"] + steps["span_s"]).to_numpy()
    assert (steps["start_s"].to_numpy()[1:] >= ends[:-1] - 1e-12).all()  # one after another
    assert (steps["gpu_busy_s"] + steps["gpu_idle_s"] - steps["span_s"]).abs().max() < 1e-9
