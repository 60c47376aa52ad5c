"""The trace reader's fast decoder (msgspec, the ``fast`` extra) against the standard library's: every
real trace and every odd event shape gives the same frames, notes and errors with it and without it;
what msgspec refuses (NaN, a control character, an ``args`` that is no object) the standard library
reads; fractions stay text, as ``parse_float=str`` keeps them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ncu_roof.errors import InputError
from ncu_roof.read.trace import fast, fields, kineto, read_trace

pytest.importorskip("msgspec")

HTA = "facebookresearch__HolisticTraceAnalysis"


def read_both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The trace read with msgspec and without it (or the one-line error each gave)."""
    out: list[Any] = []
    for decoder in (fast._DECODER, None):
        with monkeypatch.context() as m:
            m.setattr(fast, "_DECODER", decoder)
            try:
                out.append(read_trace(path))
            except InputError as exc:
                out.append(str(exc))
    return out[0], out[1]


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    for frame in ("gpu", "calls", "cpu"):
        pd.testing.assert_frame_equal(getattr(a, frame), getattr(b, frame), check_exact=True)
    assert (a.base_us, a.devices, a.rank, a.notes) == (b.base_us, b.devices, b.rank, b.notes)


def test_decoded_as_structs_where_msgspec_reads_the_list() -> None:
    text = ('[{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1712195495500100.125, '
            '"dur": 2, "queued": 0, "args": {"grid": [2, 1, 1], "correlation": 5, "ts": 1.5, "z": [1.25]}}, '
            '{"ph": "f", "id": 5, "ts": 3, "ts": 4}]')
    decoded = fast.decode_events(text)
    assert decoded is not None
    k, f = decoded
    assert fields.fields_of([k, f]) is fields.STRUCTS
    assert (bytes(k.ts), k.dur, k.args.correlation, bytes(k.args.grid), k.args.device) == (
        b"1712195495500100.125", 2.0, 5.0, b"[2, 1, 1]", pytest.approx(math.nan, nan_ok=True))
    assert bytes(f.ts) == b"4" and f.ph == "f" and f.name is None  # the last of a repeated key, as json.loads
    assert fields.STRUCTS.as_dict(k) == {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                         "ts": "1712195495500100.125", "dur": 2.0,
                                         "args": {"correlation": 5.0, "grid": [2, 1, 1]}}


@pytest.mark.parametrize("text", [
    '[{"ph": "X", "dur": NaN}]',  # the standard library reads NaN
    '[{"ph": "X", "name": "a\x01b"}]',  # a raw control character: refused by both
    '[{"ph": "X", "name": "\\ud800"}]',  # a lone surrogate: the standard library keeps it
    '[{"ph": "X", "args": [1, 2]}]', '[{"ph": "X", "args": null}]', '[5, {"ph": "X"}]',
    '[{"ph": "X", "dur": "12"}]', '[{"ph": "X", "args": {"device": "0"}}]', '[{"ph": "X", "dur": null}]',
    '[{"a": ' + "[" * 5000 + "]" * 5000 + "}]",
])
def test_what_msgspec_refuses_goes_to_the_standard_library(text: str) -> None:
    assert fast.decode_events(text) is None


def events() -> list[dict[str, Any]]:
    pid = tid = 11
    return [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": pid, "tid": tid, "ts": "@1000.0",
         "dur": 1000},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": pid, "tid": tid, "ts": 1020, "dur": 30,
         "args": {"Input Dims": [[4, 4], [4, 4]], "Input type": ["float", "float"], "External id": 3}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": "@1025.25",
         "dur": 5, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "A", "pid": 0, "tid": 7, "ts": "@1100.125", "dur": "@2.5",
         "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [2, 1, 1], "block": [64, 2, 1],
                  "registers per thread": 32, "shared memory": 1024, "blocks per SM": "@1.5"}},
        {"ph": "s", "id": 1, "pid": pid, "tid": tid, "ts": "@1025.25", "cat": "ac2g", "name": "ac2g"},
        {"ph": "X", "cat": "kernel", "name": "B", "pid": 0, "tid": 7, "ts": 1110, "dur": 3,
         "args": {"grid": [4], "block": "x"}},  # no device, stream or correlation: pid, tid and the flow
        {"ph": "f", "id": 2, "pid": 0, "tid": 7, "ts": 1110, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": pid, "tid": tid, "ts": 1060, "dur": 30,
         "args": {"Input Dims": [[4.5, 4], []], "Input type": ["float", 1.5]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": 1070,
         "dur": 5, "args": {"correlation": 2}},
        {"ph": "i", "name": "instant", "ts": 5},
    ]


def repeated(n: int) -> list[dict[str, Any]]:
    """:func:`events` ``n`` times, each copy 10 ms after the one before (no event twice)."""
    def later(ts: Any, k: int) -> Any:
        return f"@{float(ts[1:]) + 10_000 * k}" if isinstance(ts, str) else ts + 10_000 * k
    return [{**e, "ts": later(e["ts"], k)} for k in range(n) for e in events()]


def write(path: Path, evs: list[Any]) -> Path:
    doc = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": evs}
    path.write_text(re.sub(r'"@(-?[0-9.eE+]+)"', r"\1", json.dumps(doc)), encoding="utf-8")
    return path


# one event changed as a damaged or an older trace has it: (event, field, value); "@..." is that number
ODD: list[tuple[int, str, Any]] = [
    (3, "dur", "@-2.5"), (3, "dur", None), (3, "dur", "abc"), (3, "ts", "@1e400"), (3, "ts", [1]), (3, "args", None),
    (3, "args", [1]), (3, "name", "@1.50"), (3, "name", {"a": 1}), (1, "pid", "@11.0"), (2, "tid", "@11.0"),
    (5, "ts", "@1110.0"), (6, "ts", "@1110.0"), (3, "cat", "KERNEL"), (3, "ph", None), (3, "cat", [1]),
    (6, "pid", [0]), (1, "args", {"Input Dims": "[[4, 4]]"}), (1, "args", {"Input Dims": []}),
    (3, "args", {"grid": [2**70, 1, 1], "device": "@0.0", "correlation": "1"}), (9, "ts", "@1e5")]


@pytest.mark.parametrize(("index", "key", "value"), ODD, ids=[f"{i}-{k}-{v!r}" for i, k, v in ODD])
def test_an_odd_event_reads_the_same_with_msgspec_and_without(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               index: int, key: str, value: Any) -> None:
    evs = events()
    evs[index] = {**evs[index], key: value}
    with_it, without = read_both(write(tmp_path / "synthetic_odd.json", evs), monkeypatch)
    assert_same(with_it, without)


def test_an_unchanged_synthetic_trace_takes_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = fields.fields_of

    def spy(evs: list[Any]) -> Any:
        seen.append(real(evs))
        return seen[-1]

    monkeypatch.setattr("ncu_roof.read.trace.columns.fields_of", spy)
    path = write(tmp_path / "synthetic_fast.json", repeated(3))
    read_trace(path)
    assert fields.STRUCTS in seen
    with_it, without = read_both(path, monkeypatch)
    assert_same(with_it, without)
    b = with_it.gpu.iloc[1]  # no device, stream or correlation: its pid and tid, its flow's id
    assert (b["name"], b["device"], b["stream"], b["correlation"], b["grid_dim"]) == ("B", 0, 7, 2, "(4, 1, 1)")
    assert math.isnan(b["block_size"]) and b["call"] == "cudaLaunchKernel"


@pytest.mark.parametrize("chunk", [7, 200, 4096])
def test_chunk_cuts_anywhere_read_the_same_with_msgspec_and_without(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(kineto, "CHUNK", chunk)
    path = write(tmp_path / "synthetic_chunks.json", repeated(20))
    with_it, without = read_both(path, monkeypatch)
    assert_same(with_it, without)
    assert len(with_it.gpu) == 40


@pytest.mark.parametrize("name", ["critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
                                  "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                                  "trace_filter__sampled_rank-0.json.gz", "triton_example__triton_example.json.gz"])
def test_real_traces_read_the_same_with_msgspec_and_without(hta: Path, monkeypatch: pytest.MonkeyPatch,
                                                            name: str) -> None:
    with_it, without = read_both(hta / name, monkeypatch)
    assert_same(with_it, without)
    assert len(with_it.gpu)
