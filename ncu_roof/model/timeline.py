"""A trace's timeline measured: where the GPU was busy, where it sat idle, and why.

Enters: a :class:`~ncu_roof.read.trace.Trace`. Leaves: a :class:`Timeline`. Definitions (seconds):

- ``span_s``: first to last GPU activity (kernels, copies and sets);
- ``gpu_busy_s``: the union of the kernels' intervals (streams overlapping count once); copies and
  sets apart, in ``copy_busy_s``; ``gpu_idle_s`` = span - busy, the time no kernel ran;
- ``gaps``: the idle time cut into the stretches between busy blocks, each with its cause:
  ``launch`` (the next kernel was launched only after the GPU ran dry: the GPU waited for the CPU),
  ``sync`` (the same, but the GPU ran dry while a blocking sync call, e.g. ``cudaStreamSynchronize``,
  held the CPU: the queue drained and refills at launch speed), ``queued`` (the next kernel was already launched: it
  waited on something else, a copy, an event, another stream), ``end`` (after the last kernel) or
  ``unknown`` (the next kernel's launch is not in the trace); with ``copy_s`` (copies running in
  it) and ``under_op_s`` (the launching thread inside a CPU op: CPU-bound);
- ``launch_floor_s``: the median time between one kernel launch and the next on the same thread,
  the CPU's cost of a launch measured here (Python, dispatch, the runtime call); kernels shorter
  than it cannot keep the GPU busy when launched one by one;
- ``kernel_switch_s``: the median gap between two kernels of a stream where the second was already
  queued, the GPU's own gap that remains under CUDA graphs (NaN where no kernel was queued).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ncu_roof.model.intervals import covered, inside, union

if TYPE_CHECKING:
    from pandas.api.extensions import ExtensionArray

    from ncu_roof.read.trace import Trace

COPY_SYNC_CALLS = frozenset({"cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol",
                             "cudaMemcpyFromSymbol", "cudaMemset", "cuMemcpyDtoH", "cuMemcpyDtoH_v2"})
GAP_CAUSES = ("launch", "sync", "queued", "unknown", "end")
_TEXT = pd.Series(["text"]).dtype  # what a frame makes of a column of texts (pandas 3: ``str``; before: object)
KERNEL_COLUMNS = ["name", "start_s", "end_s", "duration_s", "stream", "thread", "call_start_s", "call_duration_s",
                  "op", "top_op", "python", "step"]


def per_name(names: pd.Series, test: Callable[[pd.Series], pd.Series]) -> np.ndarray:
    """``test`` (a check of names as text, NA read as False) of each name; of a categorical (a trace's
    names), each distinct name is checked once, not each of a million events."""
    if isinstance(names.dtype, pd.CategoricalDtype):
        hit = per_name(pd.Series(names.cat.categories, dtype=object), test)
        return np.r_[hit, False][names.cat.codes.to_numpy()]  # code -1 (no name): False
    return np.asarray(test(names.astype("string")).fillna(False), dtype=bool)


def _sync_text(text: pd.Series) -> pd.Series:
    return text.str.endswith("Synchronize") | text.isin(COPY_SYNC_CALLS)


def is_sync(names: pd.Series) -> np.ndarray:
    """Whether each runtime/driver call blocks the CPU until the GPU is done (syncs, synchronous copies)."""
    return per_name(names, _sync_text)


@dataclass(frozen=True)
class Timeline:
    """The measured timeline of one trace (see the module docstring for each number)."""

    trace: str
    gpu_name: str | None
    rank: int | None
    start_s: float
    end_s: float
    span_s: float
    gpu_busy_s: float
    gpu_idle_s: float
    copy_busy_s: float
    launches: int
    copies: int
    streams: pd.DataFrame
    stream_overlap_s: float
    launch_call_s: float
    launch_call_total_s: float
    launch_floor_s: float
    sub_floor_kernels: int | None  # None where the floor is unknown
    sub_floor_time_s: float
    kernel_switch_s: float
    syncs: int
    gaps: pd.DataFrame
    steps: pd.DataFrame
    annotations: pd.DataFrame
    ops: pd.DataFrame
    unlinked: int
    notes: list[str] = field(default_factory=list)

    @property
    def idle_share(self) -> float:
        return self.gpu_idle_s / self.span_s if self.span_s > 0 else float("nan")

    @property
    def launch_rate_hz(self) -> float:
        return self.launches / self.span_s if self.span_s > 0 else float("nan")

    def idle_by_cause(self) -> dict[str, float]:
        """Idle seconds per gap cause (every cause listed; they add up to ``gpu_idle_s``)."""
        sums = self.gaps.groupby("cause", observed=False)["idle_s"].sum() if len(self.gaps) else pd.Series()
        return {c: float(sums.get(c, 0.0)) for c in GAP_CAUSES}

    @property
    def cpu_bound_s(self) -> float:
        """Idle seconds with the launching thread inside a CPU op (in launch and sync gaps)."""
        g = self.gaps
        return float(g.loc[g["cause"].isin(["launch", "sync"]), "under_op_s"].sum()) if len(g) else 0.0


def busy_idle(start: np.ndarray, end: np.ndarray, span_start: float, span_end: float) -> tuple[float, float]:
    """Kernel busy seconds (their union) and idle seconds within ``[span_start, span_end]``."""
    return _busy_idle(union(start, end), span_start, span_end)


def _busy_idle(blocks: tuple[np.ndarray, np.ndarray], span_start: float, span_end: float) -> tuple[float, float]:
    """:func:`busy_idle` of the kernels' union (``blocks``), made once."""
    s, e = blocks
    busy = float((np.minimum(e, span_end) - np.maximum(s, span_start)).clip(0).sum())
    return busy, max(span_end - span_start - busy, 0.0)


def _rows(frame: pd.DataFrame, keep: pd.Series | np.ndarray, columns: list[str]) -> pd.DataFrame:
    """``frame.loc[keep, columns]``; where every row is kept, the columns alone (under pandas'
    copy-on-write not a copy: a million-event trace's kernels are most often all its activities)."""
    keep = np.asarray(keep, dtype=bool)
    return frame[columns] if keep.all() else frame.loc[keep, columns]


def _groups(gpu: pd.DataFrame, key: str, instance: str) -> pd.DataFrame:
    """Span, busy, idle and launches of the GPU work launched in each instance of ``key`` (a step, an
    annotation), summed per name over its instances (``count``)."""
    rows = []
    used = _rows(gpu, gpu[instance].notna(), list(dict.fromkeys([instance, key, "kind", "start_s", "end_s"])))
    for _, part in used.groupby(instance, observed=True, sort=False):
        k = part[part["kind"] == "kernel"]
        lo, hi = float(part["start_s"].min()), float(part["end_s"].max())
        busy, idle = busy_idle(k["start_s"].to_numpy(), k["end_s"].to_numpy(), lo, hi)
        rows.append({key: str(part[key].iloc[0]), "start_s": lo, "span_s": hi - lo, "gpu_busy_s": busy,
                     "gpu_idle_s": idle, "launches": len(k)})
    cols = [key, "start_s", "span_s", "gpu_busy_s", "gpu_idle_s", "launches"]
    each = pd.DataFrame(rows, columns=cols)
    named = each.groupby(key, sort=False).agg(count=(key, "size"), start_s=("start_s", "min"), span_s=("span_s", "sum"),
                                              gpu_busy_s=("gpu_busy_s", "sum"), gpu_idle_s=("gpu_idle_s", "sum"),
                                              launches=("launches", "sum"))
    return named.sort_values("start_s", kind="stable").reset_index()


def _steps(gpu: pd.DataFrame, blocks: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
    """Each ``ProfilerStep#N``'s GPU window: from the first activity it launched to the next step's
    first (the last step: to its own last end). The GPU runs behind the CPU, so a step's work spills
    into the next step's; the windows never overlap, so their idle adds up to at most the trace's.
    Busy is every kernel's time in the window (``blocks``: the kernels' union); ``launches`` the kernels
    the step launched."""
    cols = ["step", "count", "start_s", "span_s", "gpu_busy_s", "gpu_idle_s", "launches"]
    part = _rows(gpu, gpu["step"].notna(), ["step", "kind", "start_s", "end_s"])
    if part.empty:
        return pd.DataFrame(columns=cols)
    step = part["step"]  # grouped as it is (a categorical: by its codes, not by 200,000 texts hashed)
    by = part.groupby(step, observed=True, sort=False)
    lo = by["start_s"].min().sort_values(kind="stable")
    starts = lo.to_numpy()
    ends = np.r_[starts[1:], float(by["end_s"].max()[lo.index[-1]])]
    busy = covered(*blocks, starts, ends)
    launched = (part["kind"] == "kernel").groupby(step, observed=True, sort=False).sum()
    return pd.DataFrame({"step": lo.index.astype(str), "count": 1, "start_s": starts, "span_s": ends - starts,
                         "gpu_busy_s": busy, "gpu_idle_s": (ends - starts - busy).clip(0.0),
                         "launches": launched.reindex(lo.index).to_numpy()}, columns=cols)


def _streams(kernels: pd.DataFrame) -> pd.DataFrame:
    rows = []
    used = kernels[["stream", "start_s", "end_s", "duration_s"]]
    for stream, part in used.groupby("stream", dropna=False, sort=True):
        s, e = union(part["start_s"].to_numpy(), part["end_s"].to_numpy())
        rows.append({"stream": stream, "launches": len(part), "busy_s": float((e - s).sum()),
                     "kernel_time_s": float(part["duration_s"].sum())})
    return pd.DataFrame(rows, columns=["stream", "launches", "busy_s", "kernel_time_s"])


def _ops(kernels: pd.DataFrame) -> pd.DataFrame:
    """Kernels and their summed time per launching CPU op (the innermost), most time first."""
    part = _rows(kernels, kernels["op"].notna(), ["op", "duration_s"])
    ops = part.groupby(part["op"].astype(str)).agg(launches=("duration_s", "size"),
                                                  kernel_time_s=("duration_s", "sum"))
    return ops.sort_values("kernel_time_s", ascending=False, kind="stable").rename_axis("op").reset_index()


def _launch_floor(kernels: pd.DataFrame) -> float:
    """Median seconds between consecutive kernel launch calls on one thread."""
    k = _rows(kernels, kernels["call_start_s"].notna(), ["thread", "call_start_s"]).sort_values(
        ["thread", "call_start_s"])
    if len(k) < 2:
        return float("nan")
    t, th = k["call_start_s"].to_numpy(), k["thread"].to_numpy()
    same = th[1:] == th[:-1]
    steps = np.diff(t)[same]
    return float(np.median(steps)) if len(steps) else float("nan")


def _kernel_switch(kernels: pd.DataFrame) -> float:
    """Median gap between consecutive kernels of a stream where the second was queued before the first ended."""
    k = kernels[["stream", "start_s", "end_s", "call_start_s"]].sort_values(["stream", "start_s"])
    if len(k) < 2:
        return float("nan")
    st, s, e, c = (k[col].to_numpy() for col in ("stream", "start_s", "end_s", "call_start_s"))
    pair = (st[1:] == st[:-1]) & (c[1:] < e[:-1])
    gaps = np.maximum(s[1:] - e[:-1], 0.0)[pair]
    return float(np.median(gaps)) if len(gaps) else float("nan")


def _gaps(trace: Trace, kernels: pd.DataFrame, blocks: tuple[np.ndarray, np.ndarray],
          span: tuple[float, float]) -> pd.DataFrame:
    """The idle stretches between busy blocks (the kernels' union), each with its cause and what covered
    it (each column made whole as an array, the frame made once from them: no column copied as the
    next is added)."""
    gpu, calls = trace.gpu, trace.calls
    bs, be = blocks
    lo, hi = span
    starts = np.r_[lo, be]
    ends = np.r_[bs, hi]
    keep = ends - starts > 0
    cols: dict[str, Any] = {"start_s": starts, "end_s": ends, "idle_s": ends - starts}
    has_next = _next_kernels(kernels, ends, len(bs), cols)
    sync = calls.loc[is_sync(calls["name"]), ["start_s", "end_s", "name", "op"]]
    ss, se = union(sync["start_s"].to_numpy(), sync["end_s"].to_numpy())
    in_sync = inside(ss, se, starts)
    launched_after = cols["next_call_start_s"] > starts
    cause = np.select([~has_next, np.isnan(cols["next_call_start_s"]), launched_after & in_sync,
                       launched_after], [GAP_CAUSES.index(c) for c in ("end", "unknown", "sync", "launch")],
                      GAP_CAUSES.index("queued"))
    cols["cause"] = pd.Categorical.from_codes(cause.astype(np.int8), categories=pd.Index(GAP_CAUSES))
    del cause, launched_after, has_next
    copies = gpu.loc[gpu["kind"] != "kernel", ["start_s", "end_s"]]
    cs, ce = union(copies["start_s"].to_numpy(), copies["end_s"].to_numpy())
    cols["copy_s"] = covered(cs, ce, starts, ends)
    cols["under_op_s"], cols["launch_calls"] = _on_threads(trace, cols["next_thread"], starts, ends)
    cols["sync_call"], cols["sync_op"] = _sync_calls(sync, in_sync, starts)
    return _kept_rows(pd.DataFrame(cols, copy=False), keep)


def _next_kernels(kernels: pd.DataFrame, ends: np.ndarray, blocks: int, cols: dict[str, Any]) -> np.ndarray:
    """The kernel that ends each gap (the first to start in the next block; of kernels that start
    together, the first in the trace): its name, ops, Python frame, step, launch time and thread into
    ``cols`` (NaN after the last block); whether it has one. Rows picked by position, each column
    gathered once (no sorted copy of the kernels, nor of the rows picked)."""
    start = kernels["start_s"].to_numpy()
    order = np.argsort(start, kind="stable")  # NaN last, as sort_values puts it
    s = start[order]
    same = (s[1:] == s[:-1]) | (np.isnan(s[1:]) & np.isnan(s[:-1]))  # as drop_duplicates finds them
    first = order[np.r_[True, ~same]] if len(s) else order
    nxt = np.searchsorted(start[first], ends, side="left")
    has_next = np.r_[np.ones(blocks, dtype=bool), False] & (nxt < len(first))
    pick = first[np.clip(nxt, 0, max(len(first) - 1, 0))] if len(first) else None
    for col in ("name", "op", "top_op", "python", "step", "call_start_s", "thread"):
        cols["next_" + ("kernel" if col == "name" else col)] = _gather(kernels[col], pick, has_next)
    return has_next


def _gather(column: pd.Series, pick: np.ndarray | None, has: np.ndarray) -> np.ndarray | ExtensionArray:
    """``column``'s values at rows ``pick`` where ``has``, NaN elsewhere; a categorical's picked by its
    codes, so each row's value is looked up once (not a column of values, a pick of it, then a copy).
    A categorical of text gives the text column a frame makes of those values (pandas' ``str``),
    taken from its categories: not an object array whose every value the frame then checks."""
    if pick is None:
        return np.full(len(has), np.nan)
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = np.where(has, column.cat.codes.to_numpy()[pick], -1)  # code -1 (none): NaN
        texts = column.cat.categories.array
        if texts.dtype == _TEXT and texts.dtype != object and (codes >= 0).any():
            return texts.take(codes, allow_fill=True)
        return np.r_[column.cat.categories.to_numpy(dtype=object), np.nan][codes]
    return np.where(has, column.to_numpy()[pick], np.nan)


def _on_threads(trace: Trace, thread: np.ndarray, starts: np.ndarray,
                ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per gap, the seconds the next kernel's launching ``thread`` spent inside CPU ops, and the
    launches it made in the gap (each thread's rows picked from the frames' arrays: no frame copied)."""
    under, launches = np.zeros(len(starts)), np.zeros(len(starts), dtype=np.int64)
    threads = np.unique(thread[~np.isnan(thread)])
    cpu, gpu = trace.cpu, trace.gpu
    op = (cpu["kind"] == "op").to_numpy()
    cpu_thread, op_start, op_end = (cpu[k].to_numpy() for k in ("thread", "start_s", "end_s"))
    launched = gpu["call_start_s"].notna().to_numpy()
    gpu_thread, call_start = gpu["thread"].to_numpy(), gpu["call_start_s"].to_numpy()
    for th in threads:
        mine = op & (cpu_thread == th)
        os_, oe = union(op_start[mine], op_end[mine])
        del mine
        at = thread == th
        a, b = (starts, ends) if at.all() else (starts[at], ends[at])
        under[at] = covered(os_, oe, a, b)
        del os_, oe
        t = np.sort(call_start[launched & (gpu_thread == th)])
        launches[at] = np.searchsorted(t, b, "right") - np.searchsorted(t, a, "left")
    return under, launches


def _sync_calls(sync: pd.DataFrame, in_sync: np.ndarray, starts: np.ndarray) -> tuple[pd.Series, pd.Series]:
    """Per gap, the sync call waiting when a sync gap began (the latest to start) and its op; NA elsewhere."""
    call = pd.Series(pd.NA, index=range(len(starts)), dtype="string")
    op = pd.Series(pd.NA, index=range(len(starts)), dtype="string")
    if len(sync) and in_sync.any():
        by_start = sync.sort_values("start_s")
        i = np.searchsorted(by_start["start_s"].to_numpy(), starts[in_sync], side="right") - 1
        rows = np.full(len(starts), -1)
        rows[in_sync] = np.clip(i, 0, None)
        call = _texts_at(by_start["name"], rows, str, call)
        op = _texts_at(by_start["op"], rows, "string", op)
    return call, op


def _texts_at(column: pd.Series, rows: np.ndarray, as_text: Any, empty: pd.Series) -> pd.Series:
    """``column``'s values at ``rows`` (-1: NA) as text (``astype(as_text)``), in ``empty``'s place; a
    categorical's from its categories made text once, not each of thousands of values."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        texts = pd.array(column.cat.categories.astype(as_text).to_numpy(dtype=object), dtype="string")
        return pd.Series(texts.take(np.where(rows >= 0, column.cat.codes.to_numpy()[np.clip(rows, 0, None)], -1),
                                    allow_fill=True))
    picked = rows >= 0
    empty.loc[picked] = column.iloc[rows[picked]].astype(as_text).to_numpy()
    return empty


def _kept_rows(frame: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """The rows of ``frame`` kept, numbered from 0; where they are one run (the gaps of no length are
    the first and the last), a slice of it, not a copy."""
    rows = np.flatnonzero(keep)
    if len(rows) == len(frame):
        return frame
    if len(rows) and rows[-1] - rows[0] + 1 == len(rows):
        return frame.iloc[rows[0] : rows[-1] + 1].reset_index(drop=True)
    return frame[keep].reset_index(drop=True)


def price_gaps(gaps: pd.DataFrame, floor: float, switch: float) -> pd.DataFrame:
    """Each gap's idle seconds split by what would remove them (none above the gap's idle, less its copies):

    ``launch_s``: in a launch gap, what the launches made in it cost at the launch floor (the GPU's
    own switch time kept): fewer launches remove it; ``host_s``: the rest of a launch gap (less the
    switch time), the CPU busy with other work than launching (CPU-bound); ``sync_s``: a sync gap
    less the switch time."""
    out = gaps.copy(deep=False)  # columns added, none changed: the gaps' own columns are not copied
    free = (out["idle_s"] - out["copy_s"]).clip(lower=0.0)
    keep = 0.0 if switch != switch else switch
    launch = out["cause"] == "launch"
    cost = out["launch_calls"].clip(lower=1) * floor if floor == floor else free
    out["launch_s"] = np.where(launch, np.minimum(free - keep, cost).clip(0.0), 0.0)
    out["host_s"] = np.where(launch, (free - keep - out["launch_s"]).clip(0.0), 0.0)
    out["sync_s"] = np.where(out["cause"] == "sync", (free - keep).clip(0.0), 0.0)
    return out


def measure(trace: Trace) -> Timeline:
    """The timeline of ``trace``: busy, idle, streams, launches, gaps and their causes, steps."""
    gpu = trace.gpu
    kernels = _rows(gpu, gpu["kind"] == "kernel", KERNEL_COLUMNS)  # the columns measured
    copies = gpu.loc[gpu["kind"] != "kernel", ["start_s", "end_s"]]
    notes = list(trace.notes)
    if len(gpu):
        lo, hi = float(gpu["start_s"].min()), float(gpu["end_s"].max())
    else:
        lo = hi = float("nan")
    span = hi - lo
    blocks = union(kernels["start_s"].to_numpy(), kernels["end_s"].to_numpy())  # once: busy, gaps and steps
    busy, idle = _busy_idle(blocks, lo, hi) if len(gpu) else (float("nan"), float("nan"))
    cs, ce = union(copies["start_s"].to_numpy(), copies["end_s"].to_numpy())
    streams = _streams(kernels)
    launch_calls = kernels["call_duration_s"].dropna()
    floor = _launch_floor(kernels)
    switch = _kernel_switch(kernels)
    sub = kernels["duration_s"] < floor
    unlinked = int(gpu["call"].isna().sum())
    if unlinked:
        notes.append(f"{trace.path.name}: {unlinked:,} of {len(gpu):,} GPU activities have no launch in the trace "
                     "(launched before it began, or a trace without runtime calls): their CPU ops are unknown")
    sync_calls = trace.calls[is_sync(trace.calls["name"])]
    named = np.flatnonzero(gpu["gpu"].notna().to_numpy())  # the first GPU named (not each name hashed)
    return Timeline(
        trace=str(trace.path), gpu_name=str(gpu["gpu"].iat[named[0]]) if len(named) else None, rank=trace.rank,
        start_s=lo, end_s=hi, span_s=span, gpu_busy_s=busy, gpu_idle_s=idle,
        copy_busy_s=float((ce - cs).sum()), launches=len(kernels), copies=len(copies), streams=streams,
        stream_overlap_s=float(streams["busy_s"].sum() - busy) if len(streams) else 0.0,
        launch_call_s=float(launch_calls.median()) if len(launch_calls) else float("nan"),
        launch_call_total_s=float(launch_calls.sum()) if len(launch_calls) else float("nan"),
        launch_floor_s=floor, sub_floor_kernels=int(sub.sum()) if floor == floor else None,
        sub_floor_time_s=float(kernels.loc[sub, "duration_s"].sum()) if floor == floor else float("nan"),
        kernel_switch_s=switch, syncs=len(sync_calls),
        gaps=price_gaps(_gaps(trace, kernels, blocks, (lo, hi)), floor, switch) if len(gpu) else pd.DataFrame(),
        steps=_steps(gpu, blocks), annotations=_groups(gpu, "annotation", "annotation_id"),
        ops=_ops(kernels), unlinked=unlinked, notes=notes,
    )
