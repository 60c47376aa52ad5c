"""A big trace read on two cores (:mod:`ncu_roof.read.trace.halves`): a forked child reads the part
after a point, this process the part before, and the joined columns give the same frames, notes and
errors as one process reading it all; where the child's start is no event's start (a ``}, {`` inside a
string), where the characters before it are not ASCII, or where its part is damaged, this process
reads on alone. Small traces are split here by lowering ``MIN_CHARS``."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_trace_fast import assert_same

from ncu_roof.errors import InputError
from ncu_roof.read.trace import fast, halves, kineto, read_trace

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here: traces are read by one process")

REAL = ["critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
        "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
        "negative_queue_length_values_check__rank0.json.gz",
        "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        "trace_diff__control__control.json.gz", "trace_diff__test__test.json.gz",
        "trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz",
        "triton_example__triton_example.json.gz"]


def read(path: Path, monkeypatch: pytest.MonkeyPatch, share: float | None) -> tuple[Any, bool]:
    """The trace (or its one-line error) read split at ``share`` (None: by one process), and
    whether the child's part was used."""
    used: list[bool] = []
    accept = halves.Halves.accept

    def spy(self: halves.Halves) -> Any:
        got = accept(self)
        used.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(kineto, "CHUNK", 1 << 14)  # small traces read in many chunks, as big ones are
        m.setattr(halves, "MIN_CHARS", 0 if share is not None else 1 << 62)
        m.setattr(halves, "SHARE", share or 0.5)
        m.setattr(halves, "cores", lambda: 2)  # split on a one-CPU machine too
        m.setattr(halves, "load", lambda: 0.5)  # and on a busy one
        m.setattr(halves.Halves, "accept", spy)
        try:
            out: Any = read_trace(path)
        except InputError as exc:
            out = str(exc)
    return out, any(used)


def kernels(n: int, name: Any = None) -> list[dict[str, Any]]:
    """``n`` launches (a CPU op, its call, the flow's two ends and the kernel), fractional times."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        t = 1712195495500000 + 20 * i
        out += [
            {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 7}", "pid": 1, "tid": 1, "ts": t, "dur": 10,
             "args": {"Input Dims": [[i % 5, 4]], "Input type": ["float"]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1 + i % 3, "ts": t + 2,
             "dur": 4, "args": {"correlation": i + 1}},
            {"ph": "s", "id": i + 1, "pid": 1, "tid": 1, "ts": t + 2, "cat": "ac2g", "name": "ac2g"},
            {"ph": "X", "cat": "kernel", "name": name if name is not None and i == n // 2 else f"k{i % 11}",
             "pid": 0, "tid": 7, "ts": t + 8, "dur": 3 + i % 4,
             "args": {"stream": 7, "grid": [i % 9 + 1, 1, 1], "block": [128, 1, 1], "device": 0}
             | ({"correlation": i + 1} if i % 4 else {})},
            {"ph": "f", "id": i + 1, "pid": 0, "tid": 7, "ts": t + 8, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        ]
    return out


def write(path: Path, evs: list[Any], after: bool = False, bare: bool = False) -> Path:
    props = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}
    doc: Any = evs if bare else {"traceEvents": evs, **props} if after else {**props, "traceEvents": evs}
    text = json.dumps(doc, ensure_ascii=False)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", REAL)
def test_real_traces_read_the_same_split(hta: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    alone, _ = read(hta / name, monkeypatch, None)
    for share in (0.3, 0.6):
        split, used = read(hta / name, monkeypatch, share)
        assert_same(split, alone)
        assert used or name.startswith("triton")  # 16 KB: read whole before the split is reached


@pytest.mark.parametrize("shape", ["plain", "gz", "after", "bare"])
@pytest.mark.parametrize("share", [0.2, 0.5, 0.97])
def test_synthetic_traces_read_the_same_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str,
                                              share: float) -> None:
    path = write(tmp_path / ("synthetic.json.gz" if shape == "gz" else "synthetic.json"), kernels(400),
                 after=shape == "after", bare=shape == "bare")
    alone, _ = read(path, monkeypatch, None)
    split, used = read(path, monkeypatch, share)
    assert_same(split, alone)
    assert used and len(alone.gpu) == 400
    assert alone.devices == ({} if shape == "bare" else {0: "NVIDIA H100 80GB HBM3"})


def test_a_split_without_msgspec_reads_the_same(hta: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast, "_DECODER", None)
    name = "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    split, used = read(hta / name, monkeypatch, 0.5)
    assert_same(split, read(hta / name, monkeypatch, None)[0])
    assert used


def test_an_event_start_inside_a_string_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the child's first '}, {' is inside this name: it reads junk from there; this process reads on alone
    name = "a" * 3000 + '}, {"ph": "X", "cat": "kernel", "name": "x", "ts": 5, "dur": 1, "z": "' + "b" * 3000
    path = write(tmp_path / "synthetic.json", kernels(40, name))
    at = path.read_text().index("a" * 3000) + 2000
    alone, _ = read(path, monkeypatch, None)
    split, used = read(path, monkeypatch, at / path.stat().st_size)
    assert_same(split, alone)
    assert not used and name in set(alone.gpu["name"])


def test_non_ascii_before_the_split_is_read_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "synthetic.json", kernels(200, "k\u00e9rnel \u2603"))
    alone, _ = read(path, monkeypatch, None)
    split, used = read(path, monkeypatch, 0.9)
    assert_same(split, alone)
    assert not used


@pytest.mark.parametrize("cut", [0.8, 0.99])
@pytest.mark.parametrize("gz", [False, True])
def test_a_damaged_second_part_gives_the_same_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: float,
                                                    gz: bool) -> None:
    whole = write(tmp_path / ("synthetic.json.gz" if gz else "synthetic.json"), kernels(400)).read_bytes()
    path = tmp_path / ("synthetic_cut.json.gz" if gz else "synthetic_cut.json")
    path.write_bytes(whole[: int(len(whole) * cut)])
    alone, _ = read(path, monkeypatch, None)
    split, used = read(path, monkeypatch, 0.5)
    assert isinstance(alone, str) and split == alone
    assert not used


def test_one_cpu_reads_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "synthetic.json", kernels(30))
    monkeypatch.setattr(halves, "MIN_CHARS", 0)
    monkeypatch.setattr(halves, "cores", lambda: 1)
    assert halves.Halves(lambda batches, base: None).start(path, False, True) is None
    assert halves.cores() >= 1 and halves.load() >= 0


def test_busy_cpus_read_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "synthetic.json", kernels(30))
    monkeypatch.setattr(halves, "MIN_CHARS", 0)
    monkeypatch.setattr(halves, "cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (4.2, 1.0, 1.0))
    assert halves.load() == pytest.approx(2.1)
    assert halves.Halves(lambda batches, base: None).start(path, False, True) is None


def test_the_size_is_read_from_the_file(tmp_path: Path) -> None:
    plain = write(tmp_path / "synthetic.json", kernels(30))
    packed = write(tmp_path / "synthetic.json.gz", kernels(30))
    assert halves.size_of(plain) == plain.stat().st_size == halves.size_of(packed)
    assert halves.size_of(tmp_path) is None and halves.size_of(tmp_path / "absent.json") is None
