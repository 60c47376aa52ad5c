"""PyTorch profiler traces (Chrome-trace JSON from ``torch.profiler``/Kineto) as tidy frames.

Enters: a ``.json`` or ``.json.gz`` trace (events streamed by :mod:`ncu_roof.read.trace.kineto`).
Leaves: a :class:`Trace` of three frames, all times in seconds from the trace's first timestamp
(``base_us``, microseconds since the profiler's epoch, keeps the absolute time):

``gpu``   one row per GPU activity (``kind``: kernel, memcpy, memset): ``name``, ``start_s``,
          ``duration_s``, ``end_s``, ``device`` (id), ``gpu`` (its name from ``deviceProperties``),
          ``stream``, ``correlation``, ``grid_dim``/``block_dim`` ``"(x, y, z)"`` and their products
          ``grid_size``/``block_size``, ``registers_per_thread``, ``shared_mem_bytes``, ``bytes``
          (copies and sets); then, from its launch (:mod:`ncu_roof.read.trace.links`): ``call`` (the
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
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.gc_pause import paused_gc
from ncu_roof.read.trace.columns import Kinds, add_batch
from ncu_roof.read.trace.halves import Halves
from ncu_roof.read.trace.kineto import as_float, micros, read_trace_batches
from ncu_roof.read.trace.links import link
from ncu_roof.read.trace.store import Columns, FlowEnds, map_large_blocks
from ncu_roof.read.trace.window import core_window

GPU_KINDS = {"kernel": 0, "gpu_memcpy": 1, "memcpy": 1, "gpu_memset": 2, "memset": 2}
GPU_KIND_NAMES = ("kernel", "memcpy", "memset")
CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime", "driver"})
CPU_KINDS = {"cpu_op": 0, "operator": 0, "user_annotation": 1, "python_function": 2}
CPU_KIND_NAMES = ("op", "annotation", "python")
CPU_LABELS = ("CPU op", "user annotation", "Python frame")
GPU_NUMBERS = ("start", "dur", "device", "stream", "corr", "gx", "gy", "gz", "bx", "by", "bz", "regs", "smem", "bytes")
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
        self.count = 0  # codes given: a name that is not text (-5) is a second key to its text's code

    def __call__(self, text: Any) -> int:
        try:
            code = self.codes.get(text)
        except TypeError:  # a list or an object where a name belongs: kept as its JSON text
            text = json.dumps(text)
            code = self.codes.get(text)
        if code is None:
            if text is None:
                return -1
            key = str(text)  # a name that is not a string is kept as its text
            code = self.codes.get(key)
            if code is None:
                code = self.codes[key] = self.count
                self.count += 1
            if key is not text:
                self.codes[text] = code
        return code

    def column(self, codes: np.ndarray) -> pd.Categorical:
        names = [k for k in self.codes if isinstance(k, str)]  # the text of each code, once, in code order
        categories = pd.Index(sorted(names, key=self.codes.__getitem__), dtype=object)
        return pd.Categorical.from_codes(codes, categories=categories)


def _num(value: Any) -> float:
    """A number (or its text) as float; NaN for anything else (None, lists, bools' text)."""
    return float(value) if type(value) is int or type(value) is float else as_float(value)


NAN = float("nan")
INF = float("inf")
# category -> (group, code): group 0 GPU activity (code: GPU_KIND_NAMES), 1 runtime/driver call, 2 CPU event
_KIND: dict[str, tuple[int, int]] = {
    **{cat: (0, code) for cat, code in GPU_KINDS.items()}, **{cat: (1, 0) for cat in CALL_CATS},
    **{cat: (2, code) for cat, code in CPU_KINDS.items()}}


def _kind_of(cat: Any) -> tuple[int, int] | None:
    """The (group, code) of an event's category (any case); None for another or one that is no text."""
    if type(cat) is not str:
        return None
    return _KIND.get(cat) or _KIND.get(cat.lower())


def _label(kind: tuple[int, int]) -> str:
    group, code = kind
    return GPU_KIND_NAMES[code] if group == 0 else "runtime call" if group == 1 else CPU_LABELS[code]


def _why(raw: Any, value: float) -> str:
    """Why a time field is unusable: missing, not a number, negative or infinite."""
    if raw is None:
        return "missing"
    return "not a number" if value != value else "negative" if value < 0 else "infinite"


class _Collector:
    """One pass over the events into typed columns (``array``: 8 bytes a number, not a Python object)."""

    def __init__(self) -> None:
        self.names, self.threads, self.dims = _Strings(), _Strings(), _Strings()
        self.base: int | None = None
        self.g = Columns({**dict.fromkeys(GPU_NUMBERS, "d"), "kind": "b", "name": "i"})
        self.g_flow: dict[int, tuple[Any, Any, Any]] = {}  # rows without a correlation: their flow key
        self.c = Columns({"start": "d", "dur": "d", "corr": "d", "name": "i", "thread": "i"})
        self.p = Columns({"start": "d", "dur": "d", "kind": "b", "name": "i", "thread": "i", "dims": "i", "types": "i"})
        self.types = _Strings()
        self.memo: dict[str, Any] = {}  # grids, blocks and shapes read per distinct JSON text (read.trace.fields)
        self.flows = FlowEnds()  # ac2g flow ends: (pid, tid, ts) and id
        self.kinds = Kinds(_Collector.classify, FLOW_CATS)  # (ph, cat) -> what such an event is (no cycle
        # through a bound method: the collector is freed by ``del``, not by the next collection)
        self.other: Counter[str] = Counter()
        self.dropped: Counter[tuple[str, str, str]] = Counter()  # (what, field, why) of events left out
        self.bad_args: Counter[str] = Counter()  # launch arguments made unknown, per field

    def add(self, ev: dict[str, Any]) -> None:
        """One event into the columns of its kind (the hot loop: a million calls for a big trace)."""
        ph = ev.get("ph")
        cat = ev.get("cat")
        try:
            kind = _KIND.get(cat)  # type: ignore[arg-type]
        except TypeError:  # a list or an object as the category
            kind = None
        if ph != "X" or kind is None:
            kind = kind or _kind_of(cat)
            if ph != "X" or kind is None:
                self._other(ev, ph, cat, kind)
                return
        ts = ev.get("ts")
        base = self.base
        if type(ts) is int and ts >= 0 and base is not None:  # the common case inline (a million events)
            start = (ts - base) * 1e-6
        else:
            start = self._start(ts, kind)
            if start != start:
                return
        d = ev.get("dur")
        if type(d) is int and d >= 0:
            dur = d * 1e-6
        else:
            dur = as_float(d)
            if not 0 <= dur < INF:
                self.dropped[(_label(kind), "dur", _why(d, dur))] += 1
                return
            dur *= 1e-6
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
            c["name"].append(self.names(ev.get("name")))
            c["thread"].append(self.threads((ev.get("pid"), ev.get("tid"))))
        else:
            p = self.p
            p["start"].append(start)
            p["dur"].append(dur)
            p["kind"].append(code)
            p["name"].append(self.names(ev.get("name")))
            p["thread"].append(self.threads((ev.get("pid"), ev.get("tid"))))
            shapes = args.get("Input Dims")
            p["dims"].append(self.dims(str(shapes).replace(" ", "")) if shapes else -1)
            types = args.get("Input type") if shapes else None
            p["types"].append(self.types(json.dumps(types)) if type(types) is list else -1)

    def _start(self, ts: Any, kind: tuple[int, int]) -> float:
        """Seconds from the first event's time (which becomes the base); NaN, counted, for a time that is
        missing, not a number, negative or infinite."""
        t = as_float(ts)
        if not 0 <= t < INF:
            self.dropped[(_label(kind), "ts", _why(ts, t))] += 1
            return NAN
        if self.base is None:
            self.base = ts if type(ts) is int else int(t)
        return micros(ts, self.base) * 1e-6

    def _other(self, ev: dict[str, Any], ph: Any, cat: Any, kind: tuple[int, int] | None) -> None:
        """An event that is no complete event of a kind kept: a flow's end remembered, the rest counted
        (in ``dropped`` where it would have been kept but for a missing or unreadable ``ph`` or ``cat``)."""
        if ph == "f" and type(cat) is str and cat in FLOW_CATS:
            # a pid, tid or ts that is a list or object: no flow to match, counted
            key = [[ev.get("pid")], [ev.get("tid")], [ev.get("ts")], [ev.get("id")]]
            self.other["f events"] += self.flows.extend(*key)
        else:
            self._count(ph, cat, kind, 1)

    def _count(self, ph: Any, cat: Any, kind: tuple[int, int] | None, n: int) -> None:
        if ph is None and kind is not None:
            self.dropped[(_label(kind), "ph", "missing")] += n
        elif ph == "X" and (cat is None or cat == ""):
            self.dropped[("complete ('X')", "cat", "missing")] += n
        elif ph == "X" and type(cat) is not str:
            self.dropped[("complete ('X')", "cat", "not text")] += n
        else:
            self.other[f"{ph if ph != 'X' else cat} events"] += n

    @staticmethod
    def classify(ph: Any, cat: Any) -> tuple[int, int] | None:
        """The (group, code) an event of this ``ph`` and (hashable) ``cat`` is kept as, as :meth:`add`
        finds it; None for one it does not keep."""
        kind = _KIND.get(cat) or _kind_of(cat)
        return kind if ph == "X" else None

    def count_other(self, ph: Any, cat: Any, n: int) -> None:
        """``n`` events of this ``ph`` and (hashable) ``cat`` that are not kept and no flow's end, counted
        as :meth:`add` counts each."""
        self._count(ph, cat, _KIND.get(cat) or _kind_of(cat), n)

    def _gpu(self, ev: dict[str, Any], kind: int, start: float, dur: float, args: dict[str, Any]) -> None:
        g = self.g
        g["start"].append(start)
        g["dur"].append(dur)
        g["device"].append(_num(args.get("device", ev.get("pid"))))
        g["stream"].append(_num(args.get("stream", ev.get("tid"))))
        g["corr"].append(_num(args.get("correlation")))
        for keys, dims in ((("gx", "gy", "gz"), args.get("grid")), (("bx", "by", "bz"), args.get("block"))):
            three = (*dims, 1, 1)[:3] if type(dims) is list and 1 <= len(dims) <= 3 else (NAN, NAN, NAN)
            if dims is not None and three[0] is NAN:  # a grid or block that is no list of 1 to 3 numbers
                self.bad_args[keys[0] == "gx" and "grid" or "block"] += 1
            for key, v in zip(keys, three, strict=True):
                g[key].append(_num(v))
        g["regs"].append(_num(args.get("registers per thread")))
        g["smem"].append(_num(args.get("shared memory")))
        g["bytes"].append(_num(args.get("bytes")))
        g["kind"].append(kind)
        g["name"].append(self.names(ev.get("name")))
        if "correlation" not in args:
            flow = (ev.get("pid"), ev.get("tid"), ev.get("ts"))
            if all(type(k) in (int, str) for k in flow):
                self.g_flow[len(g) - 1] = flow


# launch arguments as read -> (their columns, the least valid value, whether only whole numbers are)
_ARG_FIELDS: dict[str, tuple[tuple[str, ...], float, bool]] = {
    "grid": (("gx", "gy", "gz"), 1.0, True), "block": (("bx", "by", "bz"), 1.0, True),
    "registers per thread": (("regs",), 0.0, True), "shared memory": (("smem",), 0.0, True),
    "bytes": (("bytes",), 0.0, True), "device": (("device",), 0.0, True), "stream": (("stream",), 0.0, True),
    "correlation": (("corr",), -INF, True)}


def _clean_args(g: dict[str, np.ndarray], bad: Counter[str]) -> None:
    """Launch arguments that are infinite, below their least value or fractional made unknown (NaN; a
    dimension's three parts together), counted per field in ``bad``."""
    for name, (keys, lowest, whole) in _ARG_FIELDS.items():
        wrong = np.zeros(len(g[keys[0]]), dtype=bool)
        with np.errstate(invalid="ignore"):
            for key in keys:
                v = g[key]
                fine = np.isfinite(v) & (v >= lowest) & ((v == np.floor(v)) if whole else True)
                wrong |= ~np.isnan(v) & ~fine
        if wrong.any():
            for key in keys:
                g[key] = np.where(wrong, np.nan, g[key])
            bad[name] += int(wrong.sum())


def _frames(col: _Collector) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The collected columns as the three frames (each array joined once, then used as it is: no copy)."""
    g = {k: col.g.take(k) for k in GPU_NUMBERS}
    _clean_args(g, col.bad_args)
    corr = g["corr"]
    if col.g_flow:
        corr = corr.copy()
        flows = col.flows.ids()
        for i, key in col.g_flow.items():  # no correlation arg: the id of the ac2g flow ending at the activity
            corr[i] = as_float(flows.get(key))
    names = col.names.column
    gpu = pd.DataFrame({
        "kind": pd.Categorical.from_codes(col.g.take("kind"), categories=pd.Index(GPU_KIND_NAMES)),
        "name": names(col.g.take("name")),
        "start_s": g["start"], "duration_s": g["dur"], "end_s": g["start"] + g["dur"],
        "device": g["device"], "stream": g["stream"], "correlation": corr,
        "grid_dim": dim_text(g["gx"], g["gy"], g["gz"]), "block_dim": dim_text(g["bx"], g["by"], g["bz"]),
        "grid_size": g["gx"] * g["gy"] * g["gz"], "block_size": g["bx"] * g["by"] * g["bz"],
        "registers_per_thread": g["regs"], "shared_mem_bytes": g["smem"], "bytes": g["bytes"],
    }, copy=False)
    del g
    c = {k: col.c.take(k) for k in ("start", "dur", "corr")}
    calls = pd.DataFrame({
        "name": names(col.c.take("name")), "start_s": c["start"], "duration_s": c["dur"],
        "end_s": c["start"] + c["dur"], "thread": col.c.take("thread"), "correlation": c["corr"],
    }, copy=False)
    p = {k: col.p.take(k) for k in ("start", "dur")}
    cpu = pd.DataFrame({
        "kind": pd.Categorical.from_codes(col.p.take("kind"), categories=pd.Index(CPU_KIND_NAMES)),
        "name": names(col.p.take("name")), "start_s": p["start"], "duration_s": p["dur"],
        "end_s": p["start"] + p["dur"], "thread": col.p.take("thread"),
        "input_dims": col.dims.column(col.p.take("dims")), "input_types": col.types.column(col.p.take("types")),
    }, copy=False)
    return gpu, calls, cpu


def dim_text(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> pd.Series:
    """``"(x, y, z)"`` per row (NA where a part is unknown); each distinct shape formatted once, the
    column made once from the rows' texts (not a column of NA, then a copy with the texts set)."""
    known = ~(np.isnan(x) | np.isnan(y) | np.isnan(z))
    text = np.full(len(x), pd.NA, dtype=object)
    if known.any():
        with np.errstate(invalid="ignore"):  # a part past int64 (1e300): cast as before, without numpy's warning
            (cx, ux), (cy, uy), (cz, uz) = (pd.factorize(a[known].astype(np.int64)) for a in (x, y, z))
        which, keys = pd.factorize((cx.astype(np.int64) * len(uy) + cy) * len(uz) + cz)  # below n**3: no overflow
        parts = zip(ux[keys // (len(uy) * len(uz))].tolist(), uy[keys // len(uz) % len(uy)].tolist(),
                    uz[keys % len(uz)].tolist(), strict=True)
        text[known] = np.array([f"({a}, {b}, {c})" for a, b, c in parts], dtype=object)[which]
    return pd.Series(pd.array(text, dtype="string"))


def _read_notes(name: str, col: _Collector) -> list[str]:
    """One note per kind of event left out or launch argument made unknown, with its count."""
    notes = [f"{name}: {n:,} {what} event{'s' if n != 1 else ''} left out: '{key}' {why}"
             for (what, key, why), n in sorted(col.dropped.items())]
    notes += [f"{name}: {n:,} GPU activit{'ies' if n != 1 else 'y'} with an unreadable '{key}' (not a whole "
              f"number, or out of range): kept, its {key} unknown" for key, n in sorted(col.bad_args.items())]
    return notes


SLACK_S = 10.0  # an event may end this long after the last one starts (or the events' span, if longer)
GPU_KEYS = ["kind", "name", "start_s", "duration_s", "device", "stream", "correlation"]
CALL_KEYS = ["name", "start_s", "duration_s", "thread", "correlation"]


def _events_noun(n: int, what: str) -> str:
    if what == "GPU activity":
        return f"{n:,} GPU activit{'ies' if n != 1 else 'y'}"
    return f"{n:,} {what}{'s' if n != 1 else ''}"


def _twice(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Rows the same as an earlier one on ``keys`` (pandas' ``duplicated``), looked for only where two
    rows start at the same time (``start_s``, one of the keys): a million rows sorted, not hashed."""
    starts = frame["start_s"].to_numpy()
    rising = bool((np.diff(starts) > 0).all())  # in file order, most often: no two alike, nothing sorted
    if rising or len(np.unique(starts)) == len(starts):  # NaNs count as one value, as duplicated counts them
        return np.zeros(len(frame), dtype=bool)
    return frame.duplicated(subset=keys).to_numpy()


def screen(name: str, gpu: pd.DataFrame, calls: pd.DataFrame, cpu: pd.DataFrame
            ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """The frames without duplicate GPU activities and calls (the same event twice) and without events
    outside the trace's window (its CPU events' starts, else its GPU activities', a few stray ones far
    from the rest not counted (:func:`~ncu_roof.read.trace.window.core_window`), widened on each side
    by their span or ``SLACK_S``: a kernel cannot outlast the trace that launched it), a note for each
    kind left out. A CPU event that starts outside it is left out too; one that ends past it is kept:
    a step's annotation may run on past the profiler's stop."""
    notes: list[str] = []
    out = [_twice(gpu, GPU_KEYS), _twice(calls, CALL_KEYS),
           np.zeros(len(cpu), dtype=bool)]
    whats = ("GPU activity", "runtime call")
    for dup, what in zip(out, whats, strict=False):
        if dup.any():
            notes.append(f"{name}: {_events_noun(int(dup.sum()), what)} left out: the same event twice")
    starts = np.r_[calls["start_s"].to_numpy(), cpu["start_s"].to_numpy()]
    if not len(starts):
        starts = gpu["start_s"].to_numpy()
    if len(starts):
        a, b = core_window(starts, SLACK_S)
        lo, hi = a - max(b - a, SLACK_S), b + max(b - a, SLACK_S)
        past = [((gpu["start_s"] < lo) | (gpu["end_s"] > hi)).to_numpy(),
                ((calls["start_s"] < lo) | (calls["end_s"] > hi)).to_numpy(),
                ((cpu["start_s"] < lo) | (cpu["start_s"] > hi)).to_numpy()]
        for i, what in enumerate((*whats, "CPU event")):
            n = int((past[i] & ~out[i]).sum())
            if n:
                notes.append(f"{name}: {_events_noun(n, what)} left out: outside the trace (its events start within "
                             f"{b - a:.4g} s; a 'ts' or 'dur' out of range)")
            out[i] = out[i] | past[i]
    kept = [f[~o].reset_index(drop=True) if o.any() else f for f, o in zip((gpu, calls, cpu), out, strict=True)]
    return kept[0], kept[1], kept[2], notes


def _part(batches: Iterator[list[Any]], base: int) -> _Collector:
    """A part of a trace's events read into a collector of its own, its times from ``base``."""
    col = _Collector()
    col.base = base
    for batch in batches:
        add_batch(col, batch)
    return col


def read_trace(path: str | Path) -> Trace:
    """A trace file as a :class:`Trace`: its activities linked to their launches, CPU ops and steps."""
    from ncu_roof.errors import InputError

    path = Path(path)
    halves = Halves(_part)  # a big trace's second part read by a child process, where one starts
    try:
        fields, events = read_trace_batches(path, split=halves.start)
        col = _Collector()
        with paused_gc():  # a batch's events are thousands of small containers, none in a cycle
            for batch in events:
                add_batch(col, batch)
                halves.base(col.base)
            halves.join(col)
    finally:
        halves.close()
    map_large_blocks()
    gpu, calls, cpu = _frames(col)
    left, others, base = _read_notes(path.name, col), sum(col.other.values()), col.base or 0
    del col  # its columns are copied into the frames, its flows matched: freed before the frames grow
    gpu, calls, cpu, screened = screen(path.name, gpu, calls, cpu)
    if gpu.empty and calls.empty and cpu.empty:
        said = f" ({'; '.join(n.split(': ', 1)[1] for n in left)})" if left else ""
        raise InputError(f"{path}: not a PyTorch profiler trace: none of its {others:,} events is "
                         f"a kernel, copy, runtime call or CPU op with a valid time{said}")
    props = fields.get("deviceProperties")
    devices = {int(d["id"]): str(d["name"]) for d in (props if isinstance(props, list) else [])
               if isinstance(d, dict) and type(d.get("id")) is int and d.get("name")}
    ids = pd.unique(gpu["device"].to_numpy())  # each device once, not each activity
    named = pd.Series([devices.get(int(d)) if d == d else None for d in ids], index=ids, dtype="string")
    gpu["gpu"] = named.reindex(gpu["device"].to_numpy()).reset_index(drop=True)
    info = fields.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) and isinstance(info.get("rank"), int) else None
    notes = left + screened
    if not devices and not gpu.empty:
        notes.append(f"{path.name}: no deviceProperties: the GPU is not named (profile with a newer PyTorch)")
    if gpu.empty:
        notes.append(f"{path.name}: no GPU activity recorded (was the profiler's CUDA activity on?)")
    link(gpu, calls, cpu)
    return Trace(path, gpu, calls, cpu, base, devices, rank, notes)
