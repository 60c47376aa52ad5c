"""Ops on the roofline from a trace's recorded shapes: the formulas on hand-made shapes, and an A100
trace's matrix product recomputed from the raw events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ncu_roof import devices
from ncu_roof.model.trace_ops import op_counts, op_roofline
from ncu_roof.read.trace import read_trace
from tests.read.test_trace import HTA

A100 = "negative_queue_length_values_check__rank0.json.gz"
MM_DIMS = [[64, 4096], [4096, 2798]]


def _c(op: str, dims: list, types: list) -> tuple[float, float, str] | None:
    return op_counts(op, json.dumps(dims), json.dumps(types))


def test_formulas_on_shapes_by_hand() -> None:
    assert _c("aten::mm", [[8, 16], [16, 4]], ["float", "float"]) == (2 * 8 * 16 * 4, 4 * (8 * 16 + 16 * 4 + 8 * 4),
                                                                      "float")
    # addmm: bias read too; the scalars (beta, alpha) are not tensors; the bias add is not counted
    assert _c("aten::addmm", [[4], [8, 16], [16, 4], [], []], ["c10::Half"] * 3 + ["Scalar"] * 2) == (
        2 * 8 * 16 * 4, 2 * (4 + 8 * 16 + 16 * 4 + 8 * 4), "c10::Half")
    assert _c("aten::bmm", [[3, 8, 16], [3, 16, 4]], ["float", "float"]) == (2 * 3 * 8 * 16 * 4,
                                                                             4 * 3 * (8 * 16 + 16 * 4 + 8 * 4), "float")
    # pointwise: broadcast output, one FLOP per output element; a scalar is no tensor
    assert _c("aten::add", [[5, 1], [1, 7], []], ["float", "float", "Scalar"]) == (35, 4 * (5 + 7 + 35), "float")
    assert _c("aten::mul", [[6], []], ["float", "Scalar"]) == (6, 4 * 12, "float")
    assert _c("aten::mul_", [[6], [6]], ["float", "float"]) == (6, 4 * 12, "float")  # in place: no new output
    # mul.out: the third tensor is the output, written once, not read
    assert _c("aten::mul", [[6], [], [6]], ["float", "double", "float"]) == (6, 4 * 6 + 8 + 4 * 6, "float")
    assert _c("aten::sum", [[4, 8], [], [], []], ["float", "", "", ""]) == (32, 4 * 32, "float")  # inputs only
    assert _c("aten::conv2d", [[1, 3, 8, 8]], ["float"]) is None  # no formula here: not placed
    assert _c("aten::mm", [[8, 16], [15, 4]], ["float", "float"]) is None  # shapes that do not multiply
    assert _c("aten::add", [[4], [4]], ["float", "c10::Weird"]) is None  # an unknown element type


def test_a100_matrix_product_from_raw_events(realdata: Path) -> None:
    path = realdata / HTA / A100
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    ops, notes = op_roofline(read_trace(path))
    assert notes == []
    row = ops[(ops["op"] == "aten::mm") & (ops["input_dims"] == json.dumps(MM_DIMS).replace(" ", ""))].iloc[0]
    # by hand from the events: each aten::mm of these shapes, the launches on its thread inside it, their kernels
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    mms = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::mm"
           and e.get("args", {}).get("Input Dims") == MM_DIMS]
    runtime = [e for e in events if e.get("cat") == "cuda_runtime"]
    kernels = {e["args"]["correlation"]: e for e in events if e.get("cat") == "kernel"}
    time_us, names = 0.0, set()
    for mm in mms:  # the kernels launched while it ran: the input copy (aten::clone) and the GEMM
        inside = [r for r in runtime if r["tid"] == mm["tid"] and mm["ts"] <= r["ts"] <= mm["ts"] + mm["dur"]]
        launched = [kernels[c] for r in inside if (c := r["args"].get("correlation")) in kernels]
        time_us += sum(k["dur"] for k in launched)
        names |= {k["name"] for k in launched}
    assert row["calls"] == len(mms) == 5
    assert row["time_s"] == pytest.approx(time_us * 1e-6)
    assert row["flops"] == 5 * 2 * 64 * 4096 * 2798
    assert row["bytes"] == 5 * 4 * (64 * 4096 + 4096 * 2798 + 64 * 2798)
    spec = devices.lookup("NVIDIA A100-SXM4-80GB")
    assert spec is not None and spec.tensor_tf32_flops_per_s and spec.dram_bytes_per_s
    assert any("tensorop_s1688gemm" in n for n in names)  # a TF32 tensor-core GEMM: the TF32 roof
    assert row["precision"] == "tf32 tensor"
    peak = spec.tensor_tf32_flops_per_s
    intensity = row["flops"] / row["bytes"]
    roof = min(peak, intensity * spec.dram_bytes_per_s)
    assert row["bound"] == ("compute" if intensity > peak / spec.dram_bytes_per_s else "memory")
    assert row["pct_of_roof"] == pytest.approx(100 * row["flops"] / (time_us * 1e-6) / roof)
    assert (ops["pct_of_roof"].dropna() <= 100.5).all()  # no op above its roof: the counts are not too high
