"""Ops on the roofline from a trace alone, where the profiler recorded shapes (``record_shapes=True``).

Enters: a :class:`~ncu_roof.read.trace.Trace` (each kernel's launch call and thread; each op's
``input_dims`` and ``input_types``) and the device's roofs (:mod:`ncu_roof.devices`, by the
trace's ``deviceProperties`` name). Leaves: one row per (op, input shapes, input types) whose
calls launched kernels: ``calls``, ``kernels``, ``time_s`` (the summed time of the kernels launched
on the op's thread while it ran, its child ops' included: ``aten::mm``'s input copy is part of it),
``flops`` and ``bytes`` (algorithmic, summed over the calls), ``intensity``, ``achieved_flops_per_s``,
``peak_flops_per_s`` (``precision`` says which), ``dram_bytes_per_s``, ``roof_flops_per_s``
(min(peak, intensity x bandwidth)), ``pct_of_roof``, ``bound`` (memory or compute, by the ridge),
``time_lower_bound_s`` (max(flops / peak, bytes / bandwidth)) and ``headroom_s``.

The counts follow :mod:`ncu_roof.torch` (which cannot be imported without PyTorch, so the formulas
are written here from shapes): a matrix product (``mm``, ``addmm``, ``bmm``, ``baddbmm``) 2·M·N·K
FLOPs (PyTorch's ``flop_counter``: the bias add not counted); an arithmetic pointwise op (``add``,
``sub``, ``mul``, ``div`` and in-place forms) one FLOP per output element (inputs broadcast); ``sum``
and ``mean`` one per input element. Bytes are compulsory: each tensor operand read once, the output
written once (an in-place op writes its first input: not counted again; a tensor past the op's
operands, ``mul.out``'s ``out``, is the output: written, not read); a reduction's output size
is not in the trace, so its bytes are its inputs' (a lower bound). A tensor passed twice is counted
twice (the trace does not say it is the same). Other ops, and ops without shapes or types, are not
placed; an op of these inside another (rare) counts in both. Peaks: a matrix product in half or
bfloat16 at the tensor-core peak, in float at the FP32 peak unless its kernels are TF32
tensor-core ones (``cutlass_80_tensorop_s1688gemm``, ``..._tf32_...``: the TF32 peak), double at the
FP64 (tensor) peak; pointwise and reductions at the CUDA-core peak of their type.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ncu_roof import devices
from ncu_roof.model.timeline import per_name

if TYPE_CHECKING:
    from ncu_roof.read.trace import Trace

# element sizes of the types Kineto writes in "Input type"
ELEMENT_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
                 "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1, "c10::complex<float>": 8,
                 "c10::complex<double>": 16, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1}
NOT_TENSORS = frozenset({"", "Scalar", "ScalarList", "TensorList", "GenericList", "None", "int[]", "str"})
MATMUL = {"mm": (0, 1), "addmm": (1, 2), "bmm": (0, 1), "baddbmm": (1, 2)}  # positions of the two factors
POINTWISE = frozenset({"add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_"})
REDUCTIONS = frozenset({"sum", "mean"})
PLACED = sorted({*MATMUL, *POINTWISE, *REDUCTIONS})
# a float matrix product run on tensor cores (TF32): cuBLAS/CUTLASS kernel names say so
TENSOR_KERNEL = r"tf32|tensorop_s|_s1688|_s16816|tensorop_.*s\d{4}gemm"
COLUMNS = ["op", "input_dims", "input_types", "calls", "kernels", "time_s", "flops", "bytes", "intensity",
           "achieved_flops_per_s", "precision", "peak_flops_per_s", "dram_bytes_per_s", "roof_flops_per_s",
           "pct_of_roof", "bound", "time_lower_bound_s", "headroom_s"]


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def _broadcast(shapes: list[list[int]]) -> list[int] | None:
    width = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(width):
        sizes = {s[len(s) - width + i] for s in shapes if len(s) - width + i >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return out


@lru_cache(maxsize=4096)
def op_counts(op: str, dims_text: str, types_text: str) -> tuple[float, float, str] | None:
    """(FLOPs, bytes, type) of one call of ``op`` on these inputs, or None where no formula fits."""
    name = op.removeprefix("aten::")
    if name not in MATMUL and name not in POINTWISE and name not in REDUCTIONS:
        return None
    try:
        dims, types = json.loads(dims_text), json.loads(types_text)
    except (TypeError, ValueError):
        return None
    if not isinstance(dims, list) or not isinstance(types, list) or len(dims) != len(types):
        return None
    entries = [(d, t) for d, t in zip(dims, types, strict=True) if t not in NOT_TENSORS and isinstance(d, list)]
    if any(t not in ELEMENT_BYTES for _, t in entries):
        return None
    # the operands: the op's own tensor arguments; a tensor past them is an ``out=`` argument (written)
    n_args = 3 if name in ("addmm", "baddbmm") else 2 if name in MATMUL or name in POINTWISE else 1
    tensors = [(d, t) for d, t in zip(dims[:n_args], types[:n_args], strict=False)
               if t not in NOT_TENSORS and isinstance(d, list)]
    if not tensors:
        return None
    dtype = tensors[0][1] if name not in MATMUL else types[MATMUL[name][0]]
    size = ELEMENT_BYTES.get(dtype)
    read = float(sum(_numel(d) * ELEMENT_BYTES[t] for d, t in tensors))
    if name in MATMUL:
        a, b = (dims[i] for i in MATMUL[name])
        if not (len(a) == len(b) and len(a) in (2, 3) and a[-1] == b[-2]) or size is None:
            return None
        batch = a[0] if len(a) == 3 else 1
        m, k, n = a[-2], a[-1], b[-1]
        return 2.0 * batch * m * k * n, read + batch * m * n * size, dtype
    if name in REDUCTIONS:
        return float(_numel(tensors[0][0])), read, dtype
    out = _broadcast([d for d, _ in tensors])
    if out is None or size is None:
        return None
    return float(_numel(out)), read + (0.0 if name.endswith("_") else _numel(out) * size), dtype


def _peak(spec: devices.DeviceSpec, op: str, dtype: str, tensor_cores: bool) -> tuple[float | None, str]:
    """The FLOP/s peak an op of ``dtype`` runs against (``tensor_cores``: its kernels are tensor-core
    ones), and its name."""
    matmul = op.removeprefix("aten::") in MATMUL
    if matmul and dtype == "float" and tensor_cores and spec.tensor_tf32_flops_per_s:
        return spec.tensor_tf32_flops_per_s, "tf32 tensor"
    if dtype in ("c10::Half", "c10::BFloat16"):
        if matmul:
            bf16 = dtype == "c10::BFloat16" and spec.tensor_bf16_flops_per_s
            return (spec.tensor_bf16_flops_per_s, "bf16 tensor") if bf16 else (spec.tensor_fp16_flops_per_s,
                                                                              "fp16 tensor")
        return spec.fp16_flops_per_s or spec.fp32_flops_per_s, "fp16"
    if dtype == "double":
        best = max(spec.fp64_flops_per_s or 0.0, (spec.tensor_fp64_flops_per_s or 0.0) if matmul else 0.0)
        return best or None, "fp64"
    return spec.fp32_flops_per_s, "fp32"


def _placed(names: pd.Series) -> pd.Series:
    return names.str.removeprefix("aten::").isin(PLACED)


def _tensor_kernel(names: pd.Series) -> pd.Series:
    return names.str.contains(TENSOR_KERNEL, regex=True)


def op_roofline(trace: Trace, device: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The trace's ops placed under the roofs of its GPU (of ``device`` where the trace names none
    the device table knows); and notes on the roofs."""
    gpu, cpu = trace.gpu, trace.cpu
    kernels = gpu[(gpu["kind"] == "kernel") & gpu["call_start_s"].notna()]
    known = (cpu["kind"] == "op") & cpu["input_dims"].notna() & cpu["input_types"].notna() & \
        per_name(cpu["name"], _placed)
    if kernels.empty or not known.any():
        return pd.DataFrame(columns=COLUMNS), []
    calls = _inclusive(cpu[known], kernels)
    calls = calls[calls["kernels"] > 0]
    counts = [op_counts(o, d, t) for o, d, t in zip(calls["op"], calls["input_dims"], calls["input_types"],
                                                   strict=True)]
    keep = np.array([c is not None for c in counts], dtype=bool)
    calls = calls[keep].assign(flops=[c[0] for c in counts if c], bytes=[c[1] for c in counts if c],
                               dtype=[c[2] for c in counts if c])
    if calls.empty:
        return pd.DataFrame(columns=COLUMNS), []
    groups = calls.groupby(["op", "input_dims", "input_types", "dtype"], sort=False).agg(
        calls=("time_s", "size"), kernels=("kernels", "sum"), time_s=("time_s", "sum"), flops=("flops", "sum"),
        bytes=("bytes", "sum"), tensor_cores=("tensor_cores", "any")).reset_index()
    name = next(iter(trace.devices.values()), None)
    spec = devices.lookup(name) if name else None
    notes = []
    if spec is None and device:
        spec = devices.lookup(device)
        if spec is not None:
            notes.append(f"{trace.path.name}: the ops are placed under the roofs of {spec.name} (--device)")
    if spec is None:
        why = "the GPU is not named" if not name else f"{name} is not in the device table"
        notes.append(f"{trace.path.name}: {why}: the ops' FLOPs and bytes are counted, their roofs unknown (pass "
                     "--device NAME for a GPU of the same roofs)")
    return _place(groups, spec), notes


def _inclusive(ops: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """Per op call: the kernels launched on its thread while it ran (its children's too), their time,
    and whether any is a tensor-core kernel."""
    tensor = per_name(kernels["name"], _tensor_kernel)
    n = np.zeros(len(ops), dtype=np.int64)
    time = np.zeros(len(ops))
    tc = np.zeros(len(ops), dtype=bool)
    for thread, mine in kernels.groupby("thread", sort=False):
        order = np.argsort(mine["call_start_s"].to_numpy(), kind="stable")
        t = mine["call_start_s"].to_numpy()[order]
        cum = np.r_[0.0, np.cumsum(mine["duration_s"].to_numpy()[order])]
        cum_tc = np.r_[0, np.cumsum(tensor[kernels.index.get_indexer(mine.index)][order])]
        at = (ops["thread"] == thread).to_numpy()
        lo = np.searchsorted(t, ops["start_s"].to_numpy()[at], side="left")
        hi = np.searchsorted(t, ops["end_s"].to_numpy()[at], side="right")
        n[at], time[at], tc[at] = hi - lo, cum[hi] - cum[lo], cum_tc[hi] > cum_tc[lo]
    return pd.DataFrame({"op": ops["name"].astype(str).to_numpy(),
                         "input_dims": ops["input_dims"].astype("string").to_numpy(),
                         "input_types": ops["input_types"].astype("string").to_numpy(),
                         "kernels": n, "time_s": time, "tensor_cores": tc})


def _place(groups: pd.DataFrame, spec: devices.DeviceSpec | None) -> pd.DataFrame:
    out = groups.copy()
    out["intensity"] = out["flops"] / out["bytes"].where(out["bytes"] > 0)
    out["achieved_flops_per_s"] = out["flops"] / out["time_s"].where(out["time_s"] > 0)
    peaks: list[Any] = [_peak(spec, o, t, tc) if spec else (None, None)
                        for o, t, tc in zip(out["op"], out["dtype"], out["tensor_cores"], strict=True)]
    out["precision"] = [p[1] for p in peaks]
    out["peak_flops_per_s"] = pd.to_numeric(pd.Series([p[0] for p in peaks], index=out.index), errors="coerce")
    out["dram_bytes_per_s"] = float(spec.dram_bytes_per_s) if spec and spec.dram_bytes_per_s else np.nan
    peak, bw = out["peak_flops_per_s"], out["dram_bytes_per_s"]
    out["roof_flops_per_s"] = np.minimum(peak, out["intensity"] * bw)
    out["pct_of_roof"] = 100 * out["achieved_flops_per_s"] / out["roof_flops_per_s"]
    ridge = peak / bw
    bound = pd.Series(np.where(out["intensity"] < ridge, "memory", "compute"), index=out.index, dtype=object)
    out["bound"] = bound.where(ridge.notna() & out["intensity"].notna(), None)
    out["time_lower_bound_s"] = np.maximum(out["flops"] / peak, out["bytes"] / bw)
    out["headroom_s"] = (out["time_s"] - out["time_lower_bound_s"]).clip(lower=0.0)
    return out[COLUMNS].sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)
