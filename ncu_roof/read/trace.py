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
          ``input_dims`` (of ``op``, where shapes were recorded), ``op_id`` (the ``op``'s row in
          ``cpu``) and ``step`` (the ``ProfilerStep#N``
          the call ran in);
``calls`` one row per runtime/driver call: ``name``, ``start_s``, ``duration_s``, ``end_s``,
          ``thread``, ``correlation``;
``cpu``   one row per CPU op, user annotation and Python frame (``kind``: op, annotation, python):
          ``name``, ``start_s``, ``duration_s``, ``end_s``, ``thread``, ``input_dims`` and
          ``input_types`` (a JSON list: ``["float", "c10::Half", "Scalar"]``, where recorded).

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
from ncu_roof.read.trace_links import link

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
        self.codes: dict[Any, int] = {}

    def __call__(self, text: Any) -> int:
        code = self.codes.get(text)
        if code is None:
            if text is None:
                return -1
            key = str(text)  # a name that is not a string is kept as its text
            code = self.codes.get(key)
            if code is None:
                code = self.codes[key] = len(self.codes)
            if key is not text:
                self.codes[text] = code
        return code

    def column(self, codes: array[int]) -> pd.Categorical:
        names = [k for k in self.codes if isinstance(k, str)]  # the text of each code, once, in code order
        categories = pd.Index(sorted(names, key=self.codes.__getitem__), dtype=object)
        return pd.Categorical.from_codes(np.frombuffer(codes, dtype=np.int32), categories=categories)


def _num(value: Any) -> float:
    """A number (or its text) as float; NaN for anything else (None, lists, bools' text)."""
    return float(value) if type(value) is int or type(value) is float else as_float(value)


NAN = float("nan")
# category -> (group, code): group 0 GPU activity (code: GPU_KIND_NAMES), 1 runtime/driver call, 2 CPU event
_KIND: dict[str, tuple[int, int]] = {
    **{cat: (0, code) for cat, code in GPU_KINDS.items()}, **{cat: (1, 0) for cat in CALL_CATS},
    **{cat: (2, code) for cat, code in CPU_KINDS.items()}}


class _Collector:
    """One pass over the events into typed columns (``array``: 8 bytes a number, not a Python object)."""

    def __init__(self) -> None:
        self.names, self.threads, self.dims = _Strings(), _Strings(), _Strings()
        self.base: int | None = None
        self.g: dict[str, array[Any]] = {k: array("d") for k in (
            "start", "dur", "device", "stream", "corr", "gx", "gy", "gz", "bx", "by", "bz", "regs", "smem",
            "bytes")}
        self.g_kind, self.g_name = array("b"), array("i")
        self.g_flow: dict[int, tuple[Any, Any, Any]] = {}  # rows without a correlation: their flow key
        self.c: dict[str, array[Any]] = {k: array("d") for k in ("start", "dur", "corr")}
        self.c_name, self.c_thread = array("i"), array("i")
        self.p: dict[str, array[Any]] = {k: array("d") for k in ("start", "dur")}
        self.p_kind, self.p_name, self.p_thread, self.p_dims = array("b"), array("i"), array("i"), array("i")
        self.types, self.p_types = _Strings(), array("i")
        self.flows: dict[tuple[Any, Any, Any], Any] = {}  # ac2g flow ends: (pid, tid, ts) -> id
        self.other: Counter[str] = Counter()

    def add(self, ev: dict[str, Any]) -> None:
        """One event into the columns of its kind (the hot loop: a million calls for a big trace)."""
        ph = ev.get("ph")
        if ph != "X":
            if ph == "f" and ev.get("cat") in FLOW_CATS:
                self.flows[(ev.get("pid"), ev.get("tid"), ev.get("ts"))] = ev.get("id")
            else:
                self.other[f"{ph} events"] += 1
            return
        cat = ev.get("cat")
        kind = _KIND.get(cat)  # type: ignore[arg-type]
        if kind is None:
            kind = _KIND.get(cat.lower()) if isinstance(cat, str) else None
            if kind is None:
                self.other[f"{cat or 'uncategorised'} events"] += 1
                return
        ts = ev.get("ts")
        base = self.base
        if type(ts) is int:
            if base is None:
                base = self.base = ts
            start = (ts - base) * 1e-6
        else:
            if ts is None or as_float(ts) != as_float(ts):
                self.other[f"{cat} events without a time"] += 1
                return
            if base is None:
                base = self.base = int(as_float(ts))
            start = micros(ts, base) * 1e-6
        d = ev.get("dur")
        dur = d * 1e-6 if type(d) is int else as_float(d) * 1e-6
        args = ev.get("args")
        if type(args) is not dict:
            args = {}
        group, code = kind
        if group == 0:
            self._gpu(ev, code, start, dur, args)
        elif group == 1:
            c = self.c
            c["start"].append(start)
            c["dur"].append(dur)
            c["corr"].append(_num(args.get("correlation")))
            self.c_name.append(self.names(ev.get("name")))
            self.c_thread.append(self.threads((ev.get("pid"), ev.get("tid"))))
        else:
            p = self.p
            p["start"].append(start)
            p["dur"].append(dur)
            self.p_kind.append(code)
            self.p_name.append(self.names(ev.get("name")))
            self.p_thread.append(self.threads((ev.get("pid"), ev.get("tid"))))
            shapes = args.get("Input Dims")
            self.p_dims.append(self.dims(str(shapes).replace(" ", "")) if shapes else -1)
            types = args.get("Input type") if shapes else None
            self.p_types.append(self.types(json.dumps(types)) if type(types) is list else -1)

    def _gpu(self, ev: dict[str, Any], kind: int, start: float, dur: float, args: dict[str, Any]) -> None:
        g = self.g
        g["start"].append(start)
        g["dur"].append(dur)
        g["device"].append(_num(args.get("device", ev.get("pid"))))
        g["stream"].append(_num(args.get("stream", ev.get("tid"))))
        g["corr"].append(_num(args.get("correlation")))
        for keys, dims in ((("gx", "gy", "gz"), args.get("grid")), (("bx", "by", "bz"), args.get("block"))):
            three = (*dims, 1, 1)[:3] if type(dims) is list and 1 <= len(dims) <= 3 else (NAN, NAN, NAN)
            for key, v in zip(keys, three, strict=True):
                g[key].append(_num(v))
        g["regs"].append(_num(args.get("registers per thread")))
        g["smem"].append(_num(args.get("shared memory")))
        g["bytes"].append(_num(args.get("bytes")))
        self.g_kind.append(kind)
        self.g_name.append(self.names(ev.get("name")))
        if "correlation" not in args:
            self.g_flow[len(self.g_kind) - 1] = (ev.get("pid"), ev.get("tid"), ev.get("ts"))


def _arr(values: array[Any]) -> np.ndarray:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.empty(0)


def _frames(col: _Collector) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    g = {k: _arr(v) for k, v in col.g.items()}
    corr = g["corr"].copy()
    for i, key in col.g_flow.items():  # no correlation arg: the id of the ac2g flow ending at the activity
        corr[i] = as_float(col.flows.get(key))
    names = col.names.column
    gpu = pd.DataFrame({
        "kind": pd.Categorical.from_codes(np.frombuffer(col.g_kind, dtype=np.int8),
                                          categories=pd.Index(GPU_KIND_NAMES)),
        "name": names(col.g_name),
        "start_s": g["start"], "duration_s": g["dur"], "end_s": g["start"] + g["dur"],
        "device": g["device"], "stream": g["stream"], "correlation": corr,
        "grid_dim": dim_text(g["gx"], g["gy"], g["gz"]), "block_dim": dim_text(g["bx"], g["by"], g["bz"]),
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
        "input_types": col.types.column(col.p_types),
    })
    return gpu, calls, cpu


def dim_text(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> pd.Series:
    known = ~(np.isnan(x) | np.isnan(y) | np.isnan(z))
    text = pd.Series(pd.NA, index=range(len(x)), dtype="string")
    if known.any():
        parts = [pd.Series(a[known].astype(np.int64)).astype(str).to_numpy() for a in (x, y, z)]
        text[known] = ["(" + ", ".join(t) + ")" for t in zip(*parts, strict=True)]
    return text


def read_trace(path: str | Path) -> Trace:
    """A trace file as a :class:`Trace`: its activities linked to their launches, CPU ops and steps."""
    from ncu_roof.errors import InputError

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
    link(gpu, calls, cpu)
    return Trace(path, gpu, calls, cpu, col.base or 0, devices, rank, notes)
