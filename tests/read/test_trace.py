"""PyTorch profiler traces read: every real trace's activities counted and linked as a plain loop over
the raw JSON finds them; damaged files are one-line errors; the stream parser is exact across chunk cuts."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ncu_roof.errors import InputError
from ncu_roof.read.trace import kineto as trace_json
from ncu_roof.read.trace import read_trace
from ncu_roof.read.trace.kineto import read_trace_json

HTA = "facebookresearch__HolisticTraceAnalysis"
TRACES = sorted([
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
    "negative_queue_length_values_check__rank0.json.gz",
    "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "trace_diff__control__control.json.gz",
    "trace_filter__sampled_rank-0.json.gz",
    "triton_example__triton_example.json.gz",
])
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def raw(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)  # type: ignore[no-any-return]


def dumps(doc: Any) -> str:
    """JSON text where ``"@123.456"`` strings become the number as written: more digits than a float64
    holds, as a profiler writes them (``1712195495500100.125``)."""
    return re.sub(r'"@(-?[0-9.]+)"', r"\1", json.dumps(doc))


def write(path: Path, doc: Any, *, compress: bool = False) -> Path:
    text = doc if isinstance(doc, str) else dumps(doc)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", TRACES)
def test_every_event_streamed_as_the_whole_file_decodes(hta: Path, name: str) -> None:
    doc = raw(hta / name)
    fields, events = read_trace_json(hta / name)
    streamed = list(events)
    assert len(streamed) == len(doc["traceEvents"])
    assert set(fields) == set(doc) - {"traceEvents"}
    # the same events, fractions kept as text (parse_float=str): equal as numbers
    for mine, theirs in zip(streamed[::997], doc["traceEvents"][::997], strict=True):
        assert mine.keys() == theirs.keys()
        assert float(mine.get("ts", 0)) == pytest.approx(float(theirs.get("ts", 0)), abs=1e-3)


@pytest.mark.parametrize("name", TRACES)
def test_activities_and_launch_links_match_a_plain_loop(hta: Path, name: str) -> None:
    doc = raw(hta / name)
    counts = {"kernel": 0, "memcpy": 0, "memset": 0}
    call_ids = set()
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            call_ids.add(e["args"].get("correlation"))
    linked = 0
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            counts[GPU_CATS[e["cat"]]] += 1
            linked += e["args"].get("correlation") in call_ids
    trace = read_trace(hta / name)
    assert trace.gpu["kind"].value_counts().to_dict() == counts
    assert int(trace.gpu["call"].notna().sum()) == linked
    assert len(trace.calls) == sum(1 for e in doc["traceEvents"]
                                   if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"))


def test_the_a100_trace_read_whole(hta: Path) -> None:
    trace = read_trace(hta / "negative_queue_length_values_check__rank0.json.gz")
    kernels = trace.gpu[trace.gpu["kind"] == "kernel"]
    assert len(kernels) == 6080
    assert set(kernels["gpu"]) == {"NVIDIA A100-SXM4-80GB"}
    assert trace.rank == 0
    assert kernels["stream"].value_counts().to_dict() == {7: 5705, 27: 295, 84: 36, 285: 22, 363: 22}
    # 872 activities were launched before the profiler began: no call in the trace, said in a note later
    assert int(trace.gpu["call"].isna().sum()) == 872
    # steps by launch time: the five ProfilerStep#550..554, 1,075 kernels launched in each
    steps = kernels["step"].value_counts().sort_index()
    assert list(steps.index) == [f"ProfilerStep#{n}" for n in range(550, 555)]
    assert set(steps) == {1075}
    # shapes were recorded (record_shapes=1): the launching op's input dims
    assert kernels["input_dims"].notna().sum() > 0


def test_kernels_tied_to_the_innermost_cpu_op_as_a_brute_force_search_finds(hta: Path) -> None:
    """For each launch call, the innermost op on its thread that is open when the call starts: the op
    with the latest start among those that started before the call and end after it started."""
    path = hta / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    doc = raw(path)
    ops: dict[tuple[Any, Any], list[tuple[float, float, str]]] = {}
    calls = {}
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "cpu_op":
            start = float(e["ts"])
            ops.setdefault((e["pid"], e["tid"]), []).append((start, start + float(e["dur"]), e["name"]))
        elif e.get("cat") == "cuda_runtime":
            calls[e["args"]["correlation"]] = (e["pid"], e["tid"], float(e["ts"]))
    arrays = {k: (np.array([o[0] for o in v]), np.array([o[1] for o in v]), [o[2] for o in v]) for k, v in ops.items()}
    expected = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            pid, tid, t = calls[e["args"]["correlation"]]
            s, end, names = arrays[(pid, tid)]
            open_ = np.flatnonzero((s <= t) & (t < end))  # every op open at t, checked one by one
            best = max(open_, key=lambda i: (s[i], -(end[i] - s[i])), default=None)
            expected.append(None if best is None else names[best])
    trace = read_trace(path)
    got = trace.gpu.loc[trace.gpu["kind"] == "kernel", "op"].astype(object).where(lambda s: s.notna(), None)
    assert list(got) == expected
    assert sum(x is not None for x in expected) == 4350  # every kernel has its op


def test_no_device_properties_leaves_the_gpu_unnamed_with_a_note(hta: Path) -> None:
    trace = read_trace(hta / "trace_filter__sampled_rank-0.json.gz")
    assert trace.gpu["gpu"].isna().all()
    assert any("no deviceProperties" in n for n in trace.notes)


def test_a_triton_launch_through_the_driver(hta: Path) -> None:
    trace = read_trace(hta / "triton_example__triton_example.json.gz")
    (row,) = trace.gpu.to_dict("records")
    assert row["name"] == "triton_poi_fused_add_cos_sin_0"
    assert row["call"] == "cuLaunchKernel"
    assert row["grid_dim"] == "(1, 1, 1)" and row["block_dim"] == "(128, 1, 1)" and row["block_size"] == 128
    assert row["registers_per_thread"] == 16 and row["shared_mem_bytes"] == 0
    assert row["duration_s"] == pytest.approx(1.76e-6, abs=1e-12)
    assert row["input_dims"] == "[[10,10],[10,10],[10,10],[]]"
    assert row["step"] == "ProfilerStep#1"  # the step annotation sits on another pid: found by time


# --- synthetic traces, numbers by hand -----------------------------------------------------------

def synthetic_events() -> list[dict[str, Any]]:
    """One thread: a step holding an annotation holding aten::add (launching kernel A) and aten::mul
    (launching kernel B, with a Python frame around it); fractional microsecond timestamps."""
    pid = tid = 11
    return [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": pid, "tid": tid,
         "ts": 1712195495500000.0, "dur": 1000},
        {"ph": "X", "cat": "user_annotation", "name": "block", "pid": pid, "tid": tid, "ts": "@1712195495500010.5",
         "dur": 500},
        {"ph": "X", "cat": "python_function", "name": "train.py(42): step", "pid": pid, "tid": tid,
         "ts": 1712195495500011, "dur": 400},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": pid, "tid": tid, "ts": 1712195495500020,
         "dur": 30, "args": {"Input Dims": [[4, 4], [4, 4]]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
         "ts": "@1712195495500025.25", "dur": 5, "args": {"correlation": 1}},
        {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1501): _call_impl", "pid": pid,
         "tid": tid, "ts": 1712195495500055, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": pid, "tid": tid, "ts": 1712195495500060,
         "dur": 30},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
         "ts": 1712195495500070, "dur": 5, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "A", "pid": 0, "tid": 7, "ts": "@1712195495500100.125", "dur": 2.5,
         "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [2, 1, 1], "block": [64, 2, 1],
                  "registers per thread": 32, "shared memory": 1024}},
        {"ph": "s", "id": 1, "pid": pid, "tid": tid, "ts": "@1712195495500025.25", "cat": "ac2g", "name": "ac2g"},
        # B has no correlation arg: linked through its ac2g flow (id 2)
        {"ph": "X", "cat": "kernel", "name": "B", "pid": 0, "tid": 7, "ts": 1712195495500110, "dur": 3,
         "args": {"device": 0, "stream": 7}},
        {"ph": "f", "id": 2, "pid": 0, "tid": 7, "ts": 1712195495500110, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    ]


def test_synthetic_trace_linked_by_hand(tmp_path: Path) -> None:
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
           "distributedInfo": {"rank": 5}, "traceEvents": synthetic_events(), "traceName": "x"}
    trace = read_trace(write(tmp_path / "synthetic_linked.json.gz", doc, compress=True))
    assert trace.rank == 5 and trace.base_us == 1712195495500000
    a, b = trace.gpu.to_dict("records")
    # exact: 100.125 us after the base, not the 0.25 us float64 grid of epoch microseconds
    assert a["start_s"] == pytest.approx(100.125e-6, abs=1e-12)
    assert a["call_start_s"] == pytest.approx(25.25e-6, abs=1e-12)
    assert (a["op"], a["top_op"], a["annotation"], a["python"], a["step"]) == (
        "aten::add", "aten::add", "block", "train.py(42): step", "ProfilerStep#3")
    assert a["input_dims"] == "[[4,4],[4,4]]"
    assert (a["grid_size"], a["block_size"], a["registers_per_thread"], a["shared_mem_bytes"]) == (2, 128, 32, 1024)
    assert a["gpu"] == "NVIDIA H100 80GB HBM3"
    # the library frame (torch/nn/...) is skipped: the script line stays train.py(42)
    assert (b["correlation"], b["op"], b["python"]) == (2, "aten::mul", "train.py(42): step")
    assert np.isnan(b["grid_size"]) and b["grid_dim"] is None or b["grid_dim"] != b["grid_dim"]


def test_bare_event_list_and_trailing_comma(tmp_path: Path) -> None:
    text = dumps(synthetic_events())[:-1] + ",]"
    trace = read_trace(write(tmp_path / "synthetic_bare.json", text))
    assert list(trace.gpu["name"]) == ["A", "B"]
    assert trace.devices == {} and trace.rank is None


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_chunk_cuts_anywhere_decode_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    written = synthetic_events()
    doc = {"a": [1, 2.5, "x\\y\"z"], "traceEvents": written, "tail": 123456789012, "z": None}
    path = write(tmp_path / "synthetic_chunks.json", doc)
    monkeypatch.setattr(trace_json, "CHUNK", chunk)
    fields, events = read_trace_json(path)
    got = list(events)
    assert [e["name"] for e in got] == [e["name"] for e in written]
    assert [float(e["ts"]) for e in got] == [float(str(e["ts"]).lstrip("@")) for e in written]
    assert fields == {"a": [1, "2.5", "x\\y\"z"], "tail": 123456789012, "z": None}


def test_micros_is_exact() -> None:
    assert trace_json.micros("1712195495505543.2", 1712195495505000) == pytest.approx(543.2, abs=1e-9)
    assert trace_json.micros(1712195495505543, 1712195495505000) == 543.0
    assert trace_json.micros("-1.5", 0) == -1.5
    assert trace_json.micros("1e3", 0) == 1000.0


GOOD = dumps({"schemaVersion": 1, "traceEvents": synthetic_events()})


@pytest.mark.parametrize(("text", "said"), [
    (GOOD[: GOOD.index('"cat": "kernel"') + 5], "cut short"),  # cut inside an event
    (GOOD[: GOOD.index('"dur": 2.5') + 9], "cut short"),  # cut inside a number
    (GOOD[:-2], "cut short"),  # the list never closed
    (GOOD[: GOOD.index("traceEvents") + 15], "cut short"),
    ("", "empty"),
    ("   \n", "empty"),
    ("hello", "starts with '{' or '['"),
    ('{"schemaVersion": 1}', "no traceEvents"),
    ('{"traceEvents": [{"ph": "X",, }]}', "not valid JSON"),
    ('{"traceEvents": [{"ph": "X"} {"ph": "X"}]}', "expected ',' or ']'"),
    ('{"traceEvents": [{"ph": "M", "name": "process_name"}]}', "not a PyTorch profiler trace"),
    ('{"traceEvents": []}', "not a PyTorch profiler trace"),
])
def test_damaged_json_is_one_line_error(tmp_path: Path, text: str, said: str) -> None:
    path = write(tmp_path / "synthetic_bad.json", text)
    with pytest.raises(InputError) as err:
        read_trace(path)
    message = str(err.value)
    assert said in message and "\n" not in message and str(path) in message


def test_truncated_gzip_is_one_line_error(tmp_path: Path) -> None:
    path = write(tmp_path / "synthetic_cut.json.gz", GOOD, compress=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cut short|truncated"):
        read_trace(path)


def test_binary_garbage_is_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "synthetic_binary.json"
    path.write_bytes(b"{\"traceEvents\": [\xff\xfe\x00]}")
    with pytest.raises(InputError, match="not UTF-8"):
        read_trace(path)


def test_report_commands_point_a_trace_to_the_timeline(tmp_path: Path) -> None:
    from ncu_roof.read.inputs import expand_inputs

    trace = write(tmp_path / "synthetic_rank0.json.gz", {"traceEvents": synthetic_events()}, compress=True)
    with pytest.raises(InputError, match=r"is a JSON file, not an Nsight Compute report.*ncu-roof timeline"):
        expand_inputs(trace)
    with pytest.raises(InputError, match=r"it holds 1 JSON file: PyTorch profiler traces are read by ncu-roof"):
        expand_inputs(tmp_path)
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic" / "synthetic_raw_units.csv"
    (tmp_path / "r.csv").write_bytes(fixture.read_bytes())
    found, [note] = expand_inputs(tmp_path)
    assert found == [tmp_path / "r.csv"]
    assert note.endswith("skipped 1 JSON file (PyTorch profiler traces: ncu-roof timeline reads them)")


def test_older_and_odd_traces_read_without_a_crash(tmp_path: Path) -> None:
    """PyTorch 1.8-era categories (Kernel, Runtime, Operator, Memcpy), missing args, names, durations and
    times, text numbers, two devices: read, the unknowns unknown (NaN), nothing invented."""
    from ncu_roof.model.timeline import measure

    events = [
        {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": "host", "tid": "main", "ts": 100, "dur": 50},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": "host", "tid": "main", "ts": 110,
         "dur": 5, "args": {"correlation": 7}},
        {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": "120.5", "dur": "10",
         "args": {"correlation": 7, "device": 0, "stream": 7, "grid": "bad", "block": [256]}},
        {"ph": "X", "cat": "Kernel", "pid": 1, "tid": 9, "ts": 125, "args": None},  # no name, dur or args
        {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 1, "tid": 9, "ts": 140, "dur": 3,
         "args": {"device": 1, "stream": 9, "bytes": "4096"}},
        {"ph": "X", "name": "no category", "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "timeless", "dur": 1},
        {"ph": "i", "name": "instant", "ts": 5}, 7, "text", None,
    ]
    trace = read_trace(write(tmp_path / "synthetic_old.json", {"traceEvents": events}))
    g = trace.gpu
    assert list(g["kind"]) == ["kernel", "memcpy"]  # the kernel without a duration is left out, with a note
    first = g.iloc[0]
    assert (first["start_s"], first["duration_s"]) == (pytest.approx(20.5e-6), pytest.approx(10e-6))
    assert (first["call"], first["op"], first["block_size"]) == ("cudaLaunchKernel", "aten::mm", 256)
    assert np.isnan(first["grid_size"])  # "bad" is no grid: unknown, not 0
    assert g.iloc[1]["bytes"] == 4096 and g.iloc[1]["device"] == 1
    assert trace.notes == [
        "synthetic_old.json: 1 complete ('X') event left out: 'cat' missing",
        "synthetic_old.json: 1 kernel event left out: 'dur' missing",
        "synthetic_old.json: 1 kernel event left out: 'ts' missing",
        "synthetic_old.json: 1 GPU activity with an unreadable 'grid' (not a whole number, or out of range): kept, "
        "its grid unknown",
        "synthetic_old.json: no deviceProperties: the GPU is not named (profile with a newer PyTorch)"]
    tl = measure(trace)
    assert tl.launches == 1 and tl.gpu_busy_s == pytest.approx(10e-6)
