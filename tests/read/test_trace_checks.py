"""Every value a PyTorch profiler trace gives is checked: one field of one real kernel event changed
(a duration that is text, negative, NaN, null, a list, missing, true, infinite or 31 years; a time
that is unreadable, missing or infinite; no category or phase; the event twice) leaves that kernel
out with a note saying why, or keeps it with the bad field unknown, never a silently wrong number."""

from __future__ import annotations

import gzip
import json
import math
import os
import threading
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncu_roof.model.timeline import measure
from ncu_roof.read.trace import read_trace

SIMPLE_ADD = "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz"  # 79 kernels
SMALL = [SIMPLE_ADD, "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
         "trace_filter__sampled_rank-0.json.gz", "triton_example__triton_example.json.gz"]
DELETE = object()
NAME = "synthetic_mutant.json"
# (field, value, the note): the kernel is left out
LEFT_OUT = [
    ("dur", "abc", "1 kernel event left out: 'dur' not a number"),
    ("dur", -5, "1 kernel event left out: 'dur' negative"),
    ("dur", math.nan, "1 kernel event left out: 'dur' not a number"),
    ("dur", None, "1 kernel event left out: 'dur' missing"),
    ("dur", [73], "1 kernel event left out: 'dur' not a number"),
    ("dur", DELETE, "1 kernel event left out: 'dur' missing"),
    ("dur", True, "1 kernel event left out: 'dur' not a number"),
    ("dur", math.inf, "1 kernel event left out: 'dur' infinite"),
    ("dur", "@1e400", "1 kernel event left out: 'dur' infinite"),
    ("ts", "abc", "1 kernel event left out: 'ts' not a number"),
    ("ts", DELETE, "1 kernel event left out: 'ts' missing"),
    ("ts", -1, "1 kernel event left out: 'ts' negative"),
    ("ts", math.inf, "1 kernel event left out: 'ts' infinite"),
    ("ph", DELETE, "1 kernel event left out: 'ph' missing"),
    ("cat", DELETE, "1 complete ('X') event left out: 'cat' missing"),
    ("cat", [1], "1 complete ('X') event left out: 'cat' not text"),
    ("dur", 1e15, "1 GPU activity left out: outside the trace (its events start within 41.58 s; a 'ts' or 'dur' "
                  "out of range)"),
    ("ts", 1e18, "1 GPU activity left out: outside the trace (its events start within 41.58 s; a 'ts' or 'dur' "
                 "out of range)"),
]


@cache
def events(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    return doc, doc.pop("traceEvents")


def mutant(tmp: Path, source: Path, index: int, key: str, value: Any) -> Path:
    """``source`` with one field of its ``index``-th event changed (``"@1e400"``: that number as written)."""
    doc, evs = events(source)
    changed = [dict(e) if i == index else e for i, e in enumerate(evs)]
    if key == "twice":
        changed.insert(index, changed[index])
    elif value is DELETE:
        del changed[index][key]
    else:
        changed[index][key] = value
    text = json.dumps({**doc, "traceEvents": changed}).replace('"@1e400"', "1e400")
    path = tmp / NAME
    path.write_text(text, encoding="utf-8")
    return path


def first_kernel(source: Path) -> int:
    return next(i for i, e in enumerate(events(source)[1]) if e.get("cat") == "kernel")


@pytest.mark.parametrize(("key", "value", "note"), LEFT_OUT,
                         ids=[f"{k}={'deleted' if v is DELETE else v!r}" for k, v, _ in LEFT_OUT])
def test_a_kernel_with_a_bad_time_or_kind_is_left_out_with_a_note(hta: Path, tmp_path: Path, key: str, value: Any,
                                                                  note: str) -> None:
    source = hta / SIMPLE_ADD
    trace = read_trace(mutant(tmp_path, source, first_kernel(source), key, value))
    tl = measure(trace)
    assert (tl.launches, round(tl.span_s, 6), round(tl.gpu_busy_s, 6)) == (78, 16.025575, 0.010597)
    assert f"{NAME}: {note}" in tl.notes


def test_the_same_kernel_event_twice_counts_once(hta: Path, tmp_path: Path) -> None:
    source = hta / SIMPLE_ADD
    tl = measure(read_trace(mutant(tmp_path, source, first_kernel(source), "twice", None)))
    assert (tl.launches, round(tl.gpu_busy_s, 6)) == (79, 0.01067)
    assert f"{NAME}: 1 GPU activity left out: the same event twice" in tl.notes


@pytest.mark.parametrize(("args", "field"), [
    ({"grid": [-1, 1, 1]}, "grid"), ({"block": [0.5, 1, 1]}, "block"), ({"device": "inf"}, "device"),
    ({"grid": "x"}, "grid"), ({"registers per thread": -3}, "registers per thread")])
def test_a_bad_launch_argument_is_unknown_not_a_number(hta: Path, tmp_path: Path, args: dict[str, Any],
                                                       field: str) -> None:
    source = hta / SIMPLE_ADD
    i = first_kernel(source)
    trace = read_trace(mutant(tmp_path, source, i, "args", {**events(source)[1][i]["args"], **args}))
    assert len(trace.gpu[trace.gpu["kind"] == "kernel"]) == 79
    assert (f"{NAME}: 1 GPU activity with an unreadable '{field}' (not a whole number, or out of range): kept, its "
            f"{field} unknown" in trace.notes)


def test_a_trailing_comma_before_the_end_of_the_events_then_more_fields(tmp_path: Path) -> None:
    ev = {"ph": "X", "cat": "kernel", "name": "A", "ts": 1, "dur": 2, "pid": 0, "tid": 7, "args": {"correlation": 1}}
    path = tmp_path / "synthetic_comma.json"
    path.write_text('{"traceEvents": [' + json.dumps(ev) + ',\n], "deviceProperties": []}', encoding="utf-8")
    assert list(read_trace(path).gpu["name"]) == ["A"]


def test_a_fifo_is_read_once_as_a_stream(hta: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "synthetic_fifo.json"
    os.mkfifo(fifo)
    data = (hta / "triton_example__triton_example.json.gz").read_bytes()

    def feed() -> None:
        with fifo.open("wb") as fh:
            fh.write(data)

    names: list[str] = []
    writer = threading.Thread(target=feed, daemon=True)
    reader = threading.Thread(target=lambda: names.extend(read_trace(fifo).gpu["name"]), daemon=True)
    writer.start()
    reader.start()
    reader.join(60)  # a reader that opens the FIFO twice waits for a second writer for ever
    assert not reader.is_alive() and names == ["triton_poi_fused_add_cos_sin_0"]


KERNEL_MUTATIONS = [(k, v) for k, v, _ in LEFT_OUT] + [("twice", None), ("args", {"grid": "x"}), ("name", [1])]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mutation_of_any_small_real_trace_is_counted_or_noted(hta: Path, tmp_path: Path, data: st.DataObject
                                                                  ) -> None:
    """Property: one field of one GPU event changed, the trace reads with one kernel fewer and a note
    saying so, or the same kernels; never a time that is not finite or an idle above the span."""
    source = hta / data.draw(st.sampled_from(SMALL))
    base = measure(read_trace(source))
    gpu = [i for i, e in enumerate(events(source)[1]) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    index = data.draw(st.sampled_from(gpu))
    key, value = data.draw(st.sampled_from(KERNEL_MUTATIONS))
    try:
        tl = measure(read_trace(mutant(tmp_path, source, index, key, value)))
    except Exception as exc:  # only the one kernel of the triton trace: nothing left is a one-line refusal
        assert "\n" not in str(exc) and "none of its" in str(exc) and len(gpu) == 1
        return
    was_kernel = events(source)[1][index].get("cat") == "kernel"
    dropped = key in ("dur", "ts", "ph", "cat")
    assert tl.launches == base.launches - (dropped and was_kernel)
    assert any(" left out: " in n or "unknown" in n for n in tl.notes) or key == "name"
    assert math.isfinite(tl.span_s) or tl.launches + tl.copies == 0
    assert tl.gpu_idle_s <= tl.span_s + 1e-12 if tl.span_s == tl.span_s else True


V100 = "trace_diff__test__test.json.gz"  # 9,876 kernels, 745.239 ms from first to last GPU activity, 123.793 ms idle


def _shifted(tmp: Path, source: Path, shifts: dict[int, float]) -> Path:
    doc, evs = events(source)
    changed = [{**e, "ts": e["ts"] + shifts[i]} if i in shifts else e for i, e in enumerate(evs)]
    path = tmp / NAME
    path.write_text(json.dumps({**doc, "traceEvents": changed}), encoding="utf-8")
    return path


def test_a_stray_cpu_time_does_not_widen_the_window_a_stray_kernel_is_judged_by(hta: Path, tmp_path: Path) -> None:
    """One CPU op 1,000 s late stretched the window the GPU events are checked against: a kernel 500 s
    late was kept, and the trace read 500 s long and 99.9% idle."""
    evs = events(hta / V100)[1]
    op = next(i for i, e in enumerate(evs) if e.get("cat") == "cpu_op")
    kernel = next(i for i, e in enumerate(evs) if e.get("cat") == "kernel")
    tl = measure(read_trace(_shifted(tmp_path, hta / V100, {op: 1e9, kernel: 5e8})))
    assert round(tl.span_s * 1e6) == 745239 and round(tl.gpu_idle_s * 1e6) == 123798  # one kernel fewer
    assert tl.launches == 9875
    assert f"{NAME}: 1 CPU event left out: outside the trace (its events start within 0.7448 s; a 'ts' or 'dur' " \
           "out of range)" in tl.notes
    assert f"{NAME}: 1 GPU activity left out: outside the trace (its events start within 0.7448 s; a 'ts' or 'dur' " \
           "out of range)" in tl.notes
    assert float(tl.steps["gpu_idle_s"].sum()) <= tl.gpu_idle_s


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_stray_cpu_times_leave_the_window_and_the_idle_as_they_were(hta: Path, tmp_path: Path,
                                                                    data: st.DataObject) -> None:
    """Property: up to three CPU events (ops, runtime calls, annotations) moved 20 s to 30 years away,
    early or late, leave the GPU window, busy and idle as they were, each left out with a note; the
    steps' idle adds up to at most the trace's."""
    source = hta / data.draw(st.sampled_from([V100, "trace_filter__sampled_rank-0.json.gz"]))
    base = measure(read_trace(source))
    cpu = [i for i, e in enumerate(events(source)[1]) if e.get("cat") in ("cpu_op", "cuda_runtime", "user_annotation")]
    picks = data.draw(st.lists(st.sampled_from(cpu), min_size=1, max_size=3, unique=True))
    shifts = {i: data.draw(st.sampled_from([-1, 1])) * data.draw(st.floats(2e7, 1e15)) for i in picks}
    tl = measure(read_trace(_shifted(tmp_path, source, shifts)))
    # a stray first event sets the times' origin: 30 years away, times keep 0.1 us (a V100 sum moves 7.6 us)
    assert (tl.span_s, tl.gpu_busy_s, tl.gpu_idle_s) == pytest.approx((base.span_s, base.gpu_busy_s, base.gpu_idle_s),
                                                                      abs=1e-5)
    said = [n for n in tl.notes if " left out: outside the trace" in n]
    assert sum(int(n.split(": ")[1].split()[0]) for n in said) == len(picks)
    assert float(tl.steps["gpu_idle_s"].sum()) <= tl.gpu_idle_s + 1e-12


@pytest.mark.parametrize(("cat", "key", "value"), [("gpu_memcpy", "name", -5), ("cpu_op", "name", 2**70),
                                                   ("async_cpu_to_gpu", "cat", {}), ("async_cpu_to_gpu", "cat", [1])])
def test_a_name_or_category_that_is_not_text_reads(hta: Path, tmp_path: Path, cat: str, key: str, value: Any) -> None:
    """A number as a name made the names' codes skip one ('codes need to be between -1 and
    len(categories)-1'), an object as a flow's category was 'unhashable type: dict': both the generic
    'could not process the input'."""
    source = hta / V100
    index = next(i for i, e in enumerate(events(source)[1]) if e.get("cat") == cat)
    trace = read_trace(mutant(tmp_path, source, index, key, value))
    assert len(trace.gpu[trace.gpu["kind"] == "kernel"]) == 9876
    if key == "name":
        names = trace.gpu["name"] if cat == "gpu_memcpy" else trace.cpu["name"]
        assert (names.astype(str) == str(value)).sum() == 1
        assert names.astype(str).str.startswith("Memcpy DtoD" if cat == "gpu_memcpy" else "aten::").sum() > 100
