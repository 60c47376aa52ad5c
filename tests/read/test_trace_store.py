"""Where the trace reader keeps what it read (read.trace.store) and how it reads a batch's times
(read.trace.times): columns filled one value and one batch at a time keep their order; flow ends
packed come back as the same values; times from their JSON text are the seconds ``micros`` gives
and the values the standard library decodes, however they are written; and the reader without
msgspec installed reads a trace as it does with it."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ncu_roof.read.trace import store, times
from ncu_roof.read.trace.kineto import micros

ROOT = Path(__file__).resolve().parents[2]
BASE = 1712195495500000


def test_columns_keep_the_order_of_single_values_and_batches() -> None:
    cols = store.Columns({"x": "d", "k": "b"})
    cols["x"].append(1.5)
    cols["k"].append(1)
    for start in range(0, 5000, 1000):  # grown past its room several times
        cols.extend({"x": np.arange(start, start + 1000, dtype=np.float64), "k": np.zeros(1000)})
    cols["x"].append(-2.0)
    cols["k"].append(3)
    assert len(cols) == 5002
    x, k = cols.take("x"), cols.take("k")
    assert x.dtype == np.float64 and k.dtype == np.int8 and len(x) == len(k) == 5002
    assert x[0] == 1.5 and x[-1] == -2.0 and np.array_equal(x[1:-1], np.arange(5000.0))
    assert (k[0], k[-1], int(k[1:-1].sum())) == (1, 3, 0)


def test_columns_with_nothing_in_them() -> None:
    cols = store.Columns({"x": "d", "n": "i"})
    x, n = cols.take("x"), cols.take("n")
    assert len(cols) == len(x) == len(n) == 0 and (x.dtype, n.dtype) == (np.float64, np.int32)


def flow_ids(batches: list[Any], pack: int) -> tuple[dict[Any, Any], int]:
    ends = store.FlowEnds()
    ends.PACK = pack
    refused = sum(ends.extend(*(list(c) for c in b)) for b in batches)
    return ends.ids(), refused


ODD_KEYS: list[Any] = [([1, 2**70], [7, 7], ["a\x00b", "1.5"], [1, 2]),  # an int past int64; a NUL in a text
            ([True, None, 1], [7, 7, 7], ["1.50", "", 3], [3, 4, 5]),  # a bool, a null, text and an int
            ([1, [0], 1], [7, 7, {"a": 1}], ["9.25", "9.25", 4], ["x", "y", None])]  # no key: two refused


@pytest.mark.parametrize("pack", [1, 2, 1 << 16])
def test_flow_ends_packed_come_back_as_the_same_keys(pack: int) -> None:
    plain: list[Any] = [([1] * 3, [7] * 3, ["10.5", "11.5", "10.5"], [5, 6, 7]), ([2], [8], [12], [9])]
    want = {(1, 7, "10.5"): 7, (1, 7, "11.5"): 6, (2, 8, 12): 9}  # the last end of a key wins
    assert flow_ids(plain, pack) == (want, 0)
    got, refused = flow_ids(ODD_KEYS, pack)
    assert refused == 2
    assert got == {(1, 7, "a\x00b"): 1, (2**70, 7, "1.5"): 2, (True, 7, "1.50"): 3, (None, 7, ""): 4, (1, 7, 3): 5,
                   (1, 7, "9.25"): "x"}
    assert [type(k[0]) for k in got] == [int, int, bool, type(None), int, int]  # True stays True, not 1


TIMES = [b"1712195495500100.125", b"1712195495500101.250", b"1712195495500102", b"-5", b"1.5e3", b'"17.5"',
         b"[1]", b"null", b"", b"17121954955001000000", b"0.1234567890123456", b"1712195495500100"]


def decoded(texts: list[bytes]) -> list[Any]:
    return [json.loads(t, parse_float=str) if t else None for t in texts]


@pytest.mark.parametrize("texts", [
    TIMES[:2], [TIMES[2], TIMES[11]], [TIMES[0], TIMES[2]], [TIMES[3]], [TIMES[4]], [TIMES[5]], [TIMES[6], TIMES[7]],
    [TIMES[8]], [TIMES[9]], [TIMES[10]], [b"1234.5", b"123.45"], [b"12", b"123"], [b"99.5"] * 7, TIMES])
def test_times_from_their_json_text_read_as_from_the_values(texts: list[bytes]) -> None:
    values = decoded(texts)
    assert times.raw_values(texts) == values
    assert [type(v) for v in times.raw_values(texts)] == [type(v) for v in values]
    fast, slow = times.raw_starts(texts, BASE), times.starts(values, BASE)
    assert (fast is None) == (slow is None)
    if fast is not None and slow is not None:
        assert fast.tobytes() == slow.tobytes()  # the same bits
        assert fast.tolist() == [micros(v, BASE) * 1e-6 for v in values]


def test_a_batch_of_plain_fractions_is_exact() -> None:
    texts = [f"{BASE + k * 12}.{k % 1000:03d}".encode() for k in range(5000)]
    got = times.raw_starts(texts, BASE)
    assert got is not None and got.tolist() == [micros(t.decode(), BASE) * 1e-6 for t in texts]
    assert times.base_of(texts[0].decode()) == BASE and times.base_of(-1) is None and times.base_of("1e3") is None


def test_the_reader_without_msgspec_reads_as_with_it(tmp_path: Path) -> None:
    """msgspec blocked at import (as where it is not installed): the standard library decodes, the
    frames and notes are the same."""
    trace = tmp_path / "synthetic_plain.json"
    evs: list[dict[str, Any]] = []
    for k in range(300):
        ts = BASE + 20 * k
        evs += [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": 9,
                 "args": {"Input Dims": [[4, 4], [4, 4]], "Input type": ["float", "float"]}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 2,
                 "dur": 4, "args": {"correlation": k}},
                {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": f"@{ts + 11}.500", "dur": 5,
                 "args": {"correlation": k, "grid": [8, 1, 1], "block": [128, 1, 1], "device": 0, "stream": 7}}]
    doc = json.dumps({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": evs})
    trace.write_text(re.sub(r'"@([0-9.]+)"', r"\1", doc), encoding="utf-8")  # "@1.5": the number 1.5
    script = ("import sys, pickle; {block}from ncu_roof.read.trace import read_trace, fast; "
              "t = read_trace(sys.argv[1]); "
              "sys.stdout.buffer.write(pickle.dumps((fast._DECODER is None, t.gpu, t.calls, t.cpu, t.notes)))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = [subprocess.run([sys.executable, "-c", script.format(block=block), str(trace)], capture_output=True,
                          env=env, check=True, timeout=120).stdout
           for block in ("sys.modules['msgspec'] = None; ", "")]
    without, with_it = (pickle.loads(o) for o in out)
    assert without[0] is True and with_it[0] is (importlib.util.find_spec("msgspec") is None)
    for a, b in zip(without[1:4], with_it[1:4], strict=True):
        assert a.equals(b) and list(a.dtypes) == list(b.dtypes)
    assert without[4] == with_it[4] and len(without[1]) == 300
    assert without[1]["start_s"].head(2).tolist() == pytest.approx([11.5e-6, 31.5e-6])


def test_large_blocks_mapped_after_reading_leave_arrays_whole() -> None:
    from ncu_roof.read.trace.store import map_large_blocks

    map_large_blocks()  # glibc: blocks of 256 KiB and more get their own mapping; elsewhere nothing
    big = np.arange(1 << 20, dtype=np.float64)
    assert float(big[-1]) == (1 << 20) - 1 and big.sum() == (1 << 20) * ((1 << 20) - 1) / 2
