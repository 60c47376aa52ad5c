"""PyTorch profiler traces (Chrome-trace JSON from ``torch.profiler``/Kineto) as tidy frames.

Enters: a ``.json`` or ``.json.gz`` trace (events streamed by :mod:`ncu_roof.read.trace_json`).
Leaves: a :class:`Trace` of three frames, all times in seconds from the trace's first timestamp
(``base_us``, microseconds since the profiler's epoch, keeps the absolute time):

``gpu``   one row per GPU activity (``kind``: kernel, memcpy, memset): ``name``, ``start_s``,
          ``duration_s``, ``end_s``, ``device`` (id), ``gpu`` (its name from ``deviceProperties``),
          ``stream``, ``correlation``, ``grid_dim``/``block_dim`` ``"(x, y, z)"`` and their products
          ``grid_size``/``block_size``, ``registers_per_thread``, ``shared_mem_bytes``, ``bytes``
          (copies and sets); then, from its launch (:mod:`ncu_roof.read.trace_links`): ``call`` (the
          runtime or driver call), ``call_start_s``, ``call_duration_s``, ``thread``, ``op`` (the
          innermost CPU op around the call), ``top_op`` (the outermost), ``annotation`` (the innermost
          user annotation; ``annotation_id`` its row in ``cpu``), ``python`` (the innermost Python
          frame of the user's code, ``file.py(line): function``, where the trace has stacks),
          ``input_dims`` (of ``op``, where shapes were recorded) and ``step`` (the ``ProfilerStep#N``
          the call ran in);
``calls`` one row per runtime/driver call: ``name``, ``start_s``, ``duration_s``, ``end_s``,
          ``thread``, ``correlation``;
``cpu``   one row per CPU op, user annotation and Python frame (``kind``: op, annotation, python):
          ``name``, ``start_s``, ``duration_s``, ``end_s``, ``thread``, ``input_dims``.

Unknown values are NaN or ``pd.NA``, never 0. Events of other kinds (flows, metadata, instants)
are counted in ``notes``, not kept.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.read.trace_json import as_float, micros, read_trace_json

GPU_KINDS = {"kernel": 0, "gpu_memcpy": 1, "memcpy": 1, "gpu_memset": 2, "memset": 2}
GPU_KIND_NAMES = ("kernel", "memcpy", "memset")
CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime", "driver"})
CPU_KINDS = {"cpu_op": 0, "operator": 0, "user_annotation": 1, "python_function": 2}
CPU_KIND_NAMES = ("op", "annotation", "python")
FLOW_CATS = frozenset({"ac2g", "async_cpu_to_gpu"})


@dataclass
class Trace:
    """One trace file: its GPU activities, runtime calls and CPU events, and what it said about itself."""

    path: Path
    gpu: pd.DataFrame
    calls: pd.DataFrame
    cpu: pd.DataFrame
    base_us: int
    devices: dict[int, str] = field(default_factory=dict)
    rank: int | None = None
    notes: list[str] = field(default_factory=list)


class _Strings:
    """Strings as small integer codes (kernel and op names repeat thousands of times)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def __call__(self, text: Any) -> int:
        if text is None:
            return -1
        key = str(text)
        code = self.codes.get(key)
        if code is None:
            code = self.codes[key] = len(self.codes)
        return code

    def column(self, codes: array[int]) -> pd.Categorical:
        categories = pd.Index(list(self.codes), dtype=object)
        return pd.Categorical.from_codes(np.frombuffer(codes, dtype=np.int32), categories=categories)


def _dims(value: Any) -> tuple[float, float, float] | None:
    if isinstance(value, (list, tuple)) and 1 <= len(value) <= 3:
        dims = [as_float(v) for v in value] + [1.0] * (3 - len(value))
        return dims[0], dims[1], dims[2]
    return None


def _int_or_nan(value: Any) -> float:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else as_float(value)


class _Collector:
    """One pass over the events into typed columns (``array``: 8 bytes a number, not a Python object)."""

    def __init__(self) -> None:
        self.names, self.threads, self.dims = _Strings(), _Strings(), _Strings()
        self.base: int | None = None
        self.g: dict[str, array[Any]] = {k: array("d") for k in (
            "start", "dur", "device", "stream", "corr", "gx", "gy", "gz", "bx", "by", "bz", "regs", "smem",
            "bytes")}
        self.g_kind, self.g_name = array("b"), array("i")
        self.g_flow: dict[int, tuple[Any, Any, float]] = {}  # rows without a correlation: their flow key
        self.c: dict[str, array[Any]] = {k: array("d") for k in ("start", "dur", "corr")}
        self.c_name, self.c_thread = array("i"), array("i")
        self.p: dict[str, array[Any]] = {k: array("d") for k in ("start", "dur")}
        self.p_kind, self.p_name, self.p_thread, self.p_dims = array("b"), array("i"), array("i"), array("i")
        self.flows: dict[tuple[Any, Any, float], float] = {}  # ac2g flow ends: (pid, tid, ts) -> id
        self.other: Counter[str] = Counter()

    def add(self, ev: dict[str, Any]) -> None:
        ph = ev.get("ph")
        if ph != "X":
            if ph == "f" and ev.get("cat") in FLOW_CATS:
                self.flows[(ev.get("pid"), ev.get("tid"), as_float(ev.get("ts")))] = as_float(ev.get("id"))
            else:
                self.other[f"{ph!s} events"] += 1
            return
        cat = ev.get("cat")
        cat = cat.lower() if isinstance(cat, str) else ""
        ts = ev.get("ts")
        if ts is None:
            self.other[f"{cat or 'uncategorised'} events without a time"] += 1
            return
        if self.base is None:
            self.base = int(as_float(ts)) if as_float(ts) == as_float(ts) else 0
        start = micros(ts, self.base) * 1e-6
        dur = as_float(ev.get("dur", "nan")) * 1e-6
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        if cat in GPU_KINDS:
            self._gpu(ev, GPU_KINDS[cat], start, dur, args)
        elif cat in CALL_CATS:
            self.c["start"].append(start)
            self.c["dur"].append(dur)
            self.c["corr"].append(_int_or_nan(args.get("correlation")))
            self.c_name.append(self.names(ev.get("name")))
            self.c_thread.append(self.threads((ev.get("pid"), ev.get("tid"))))
        elif cat in CPU_KINDS:
            self.p["start"].append(start)
            self.p["dur"].append(dur)
            self.p_kind.append(CPU_KINDS[cat])
            self.p_name.append(self.names(ev.get("name")))
            self.p_thread.append(self.threads((ev.get("pid"), ev.get("tid"))))
            shapes = args.get("Input Dims")
            self.p_dims.append(self.dims(json.dumps(shapes, separators=(",", ":"))) if shapes else -1)
        else:
            self.other[f"{cat or 'uncategorised'} events"] += 1

    def _gpu(self, ev: dict[str, Any], kind: int, start: float, dur: float, args: dict[str, Any]) -> None:
        g = self.g
        g["start"].append(start)
        g["dur"].append(dur)
        device = args.get("device", ev.get("pid"))
        g["device"].append(_int_or_nan(device))
        g["stream"].append(_int_or_nan(args.get("stream", ev.get("tid"))))
        g["corr"].append(_int_or_nan(args.get("correlation")))
        grid, block = _dims(args.get("grid")), _dims(args.get("block"))
        nan3 = (float("nan"),) * 3
        for key, v in zip(("gx", "gy", "gz", "bx", "by", "bz"), (grid or nan3) + (block or nan3), strict=True):
            g[key].append(v)
        g["regs"].append(as_float(args.get("registers per thread", "nan")))
        g["smem"].append(as_float(args.get("shared memory", "nan")))
        g["bytes"].append(as_float(args.get("bytes", "nan")))
        self.g_kind.append(kind)
        self.g_name.append(self.names(ev.get("name")))
        if "correlation" not in args:
            self.g_flow[len(self.g_kind) - 1] = (ev.get("pid"), ev.get("tid"), as_float(ev.get("ts")))


def _arr(values: array[Any]) -> np.ndarray:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.empty(0)


def _frames(col: _Collector) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    g = {k: _arr(v) for k, v in col.g.items()}
    corr = g["corr"].copy()
    for i, key in col.g_flow.items():  # no correlation arg: the id of the ac2g flow ending at the activity
        corr[i] = col.flows.get(key, np.nan)
    names = col.names.column
    gpu = pd.DataFrame({
        "kind": pd.Categorical.from_codes(np.frombuffer(col.g_kind, dtype=np.int8),
                                          categories=pd.Index(GPU_KIND_NAMES)),
        "name": names(col.g_name),
        "start_s": g["start"], "duration_s": g["dur"], "end_s": g["start"] + g["dur"],
        "device": g["device"], "stream": g["stream"], "correlation": corr,
        "grid_dim": _dim_text(g["gx"], g["gy"], g["gz"]), "block_dim": _dim_text(g["bx"], g["by"], g["bz"]),
        "grid_size": g["gx"] * g["gy"] * g["gz"], "block_size": g["bx"] * g["by"] * g["bz"],
        "registers_per_thread": g["regs"], "shared_mem_bytes": g["smem"], "bytes": g["bytes"],
    })
    c = {k: _arr(v) for k, v in col.c.items()}
    calls = pd.DataFrame({
        "name": names(col.c_name), "start_s": c["start"], "duration_s": c["dur"], "end_s": c["start"] + c["dur"],
        "thread": np.frombuffer(col.c_thread, dtype=np.int32), "correlation": c["corr"],
    })
    p = {k: _arr(v) for k, v in col.p.items()}
    cpu = pd.DataFrame({
        "kind": pd.Categorical.from_codes(np.frombuffer(col.p_kind, dtype=np.int8),
                                          categories=pd.Index(CPU_KIND_NAMES)),
        "name": names(col.p_name), "start_s": p["start"], "duration_s": p["dur"], "end_s": p["start"] + p["dur"],
        "thread": np.frombuffer(col.p_thread, dtype=np.int32), "input_dims": col.dims.column(col.p_dims),
    })
    return gpu, calls, cpu


def _dim_text(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> pd.Series:
    known = ~(np.isnan(x) | np.isnan(y) | np.isnan(z))
    text = pd.Series(pd.NA, index=range(len(x)), dtype="string")
    if known.any():
        parts = [pd.Series(a[known].astype(np.int64)).astype(str).to_numpy() for a in (x, y, z)]
        text[known] = ["(" + ", ".join(t) + ")" for t in zip(*parts, strict=True)]
    return text


def read_trace(path: str | Path) -> Trace:
    """A trace file as a :class:`Trace`: its activities linked to their launches, CPU ops and steps."""
    from ncu_roof.errors import InputError
    from ncu_roof.read.trace_links import link

    path = Path(path)
    fields, events = read_trace_json(path)
    col = _Collector()
    for ev in events:
        if isinstance(ev, dict):
            col.add(ev)
    gpu, calls, cpu = _frames(col)
    if gpu.empty and calls.empty and cpu.empty:
        raise InputError(f"{path}: not a PyTorch profiler trace: none of its {sum(col.other.values()):,} events is "
                         "a kernel, copy, runtime call or CPU op")
    devices = {int(d["id"]): str(d["name"]) for d in fields.get("deviceProperties") or []
               if isinstance(d, dict) and isinstance(d.get("id"), int) and d.get("name")}
    gpu["gpu"] = gpu["device"].map(lambda d: devices.get(int(d)) if d == d else None).astype("string")
    info = fields.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) and isinstance(info.get("rank"), int) else None
    notes = []
    if not devices and not gpu.empty:
        notes.append(f"{path.name}: no deviceProperties: the GPU is not named (profile with a newer PyTorch)")
    if gpu.empty:
        notes.append(f"{path.name}: no GPU activity recorded (was the profiler's CUDA activity on?)")
    trace = Trace(path, gpu, calls, cpu, col.base or 0, devices, rank, notes)
    link(trace)
    return trace
