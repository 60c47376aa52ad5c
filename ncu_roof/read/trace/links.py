"""Each GPU activity of a trace tied to what launched it.

Enters: a trace's frames as read (:mod:`ncu_roof.read.trace`). Leaves: the same frames, its ``calls``
given the CPU context they ran in (``op`` and ``op_id``, its row in ``cpu``; ``top_op``,
``annotation`` and ``annotation_id``, its row in ``cpu``; ``python``, ``input_dims``, ``step``)
and its ``gpu`` rows given their launching call
(by correlation id, the id the ``ac2g`` flow carries) and that call's context. An activity with no
call recorded keeps them unknown.

The CPU context is found from the CPU events and calls sorted per thread by start: a stack of the
events still open (:mod:`ncu_roof.read.trace.stack`: found for all calls at once); each call takes
the innermost op, user annotation and user Python frame on it, and the outermost op. Steps
(``ProfilerStep#N``) are found by time, on any thread: the backward pass runs on autograd's own
threads, outside the step's annotation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ncu_roof.read.trace.stack import FIELDS, contexts

STEP_PREFIX = "ProfilerStep#"
# Python frames of libraries, not of the user's script: the script's line is the innermost other frame
LIBRARY_FRAMES = ("site-packages", "dist-packages", "torch/", "<built-in", "<frozen", "threading.py")
_CONTEXT = ("op", "top_op", "annotation", "python", "input_dims")


def _user_frame(name: str) -> bool:
    return ".py(" in name and not any(part in name for part in LIBRARY_FRAMES)


def _sweep(cpu: pd.DataFrame, calls: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per call, the codes (-1: none) of its innermost op, outermost op, innermost annotation,
    innermost user Python frame and the innermost op's input shapes (:mod:`ncu_roof.read.trace.stack`)."""
    n_cpu, n_calls = len(cpu), len(calls)
    if not n_calls or not n_cpu:
        return {k: np.full(n_calls, -1, dtype=np.int64) for k in (*_CONTEXT, "annotation_id", "op_id")}
    code = cpu["name"].cat.codes.to_numpy()
    rows, sorted_rows = _stack_rows(cpu, calls)
    found = np.empty((n_calls, len(FIELDS)), dtype=np.int32)  # in the calls' order (int32 holds codes and rows)
    found[rows[~sorted_rows["push"]]] = contexts(**sorted_rows, row=rows)
    out = {k: found[:, j] for j, k in enumerate(FIELDS)}
    out["annotation_id"] = out["annotation"]
    out["annotation"] = np.where(out["annotation_id"] >= 0, code[np.clip(out["annotation_id"], 0, None)], -1)
    return out


def _stack_rows(cpu: pd.DataFrame, calls: pd.DataFrame) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The CPU events that open a context and the calls, sorted per thread by start (parents before
    children, calls last): each one's row in its frame, and their columns as ``contexts`` takes them.
    A CPU event that opens none (a step, a library's Python frame) is left out: it would only pop
    events that have ended, which the next row pops as well."""
    names = cpu["name"].cat.categories
    step = np.r_[np.asarray(names.str.startswith(STEP_PREFIX), dtype=bool), True]  # code -1: opens none
    user = np.r_[np.fromiter((_user_frame(str(n)) for n in names), dtype=bool, count=len(names)), False]
    kind, code, dims = (cpu[k].cat.codes.to_numpy() for k in ("kind", "name", "input_dims"))
    opens = (kind == 0) | ((kind == 1) & ~step[code]) | ((kind == 2) & user[code])
    n_open, n_calls = int(opens.sum()), len(calls)
    start = np.concatenate([cpu["start_s"].to_numpy()[opens], calls["start_s"].to_numpy()])
    end = np.concatenate([cpu["end_s"].to_numpy()[opens], calls["end_s"].to_numpy()])
    end = np.where(np.isnan(end), start, end)
    thread = np.concatenate([cpu["thread"].to_numpy()[opens], calls["thread"].to_numpy()])
    is_call = np.r_[np.zeros(n_open, dtype=np.int8), np.ones(n_calls, dtype=np.int8)]
    order = np.lexsort((is_call, start - end, start, thread))  # parents before children, calls last
    del is_call
    cols = {"thread": thread[order], "start": start[order], "end": end[order], "push": order < n_open}
    del thread, start, end
    rows = np.r_[np.flatnonzero(opens).astype(np.int32), np.arange(n_calls, dtype=np.int32)][order]
    for key, a in (("kind", kind), ("code", code), ("dims", dims)):
        cols[key] = np.r_[a[opens].astype(np.int32), np.full(n_calls, -1, dtype=np.int32)][order]
    return rows, cols


def _steps(cpu: pd.DataFrame, calls: pd.DataFrame) -> tuple[np.ndarray, pd.Index]:
    """Per call, the index of the ``ProfilerStep#N`` it started in (-1: none), and the steps' names."""
    names = cpu["name"]  # each distinct name checked once, not each of the CPU events (a name missing: no step)
    step = np.r_[np.asarray(names.cat.categories.str.startswith(STEP_PREFIX), dtype=bool), False]
    marks = cpu[(cpu["kind"] == "annotation").to_numpy() & step[names.cat.codes.to_numpy()]]
    marks = marks.sort_values("start_s")
    starts, ends = marks["start_s"].to_numpy(), marks["end_s"].to_numpy()
    t = calls["start_s"].to_numpy()
    idx = np.searchsorted(starts, t, side="right") - 1
    inside = (idx >= 0) & (t < ends[np.clip(idx, 0, None)] if len(ends) else np.zeros(len(t), dtype=bool))
    return np.where(inside, idx, -1), pd.Index(marks["name"].astype(str))


def _categorical(codes: np.ndarray, categories: pd.Index) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, categories=categories)


def link(gpu: pd.DataFrame, calls: pd.DataFrame, cpu: pd.DataFrame) -> None:
    """Add the calls' CPU context and the GPU activities' launches to the frames (in place)."""
    context = _sweep(cpu, calls)
    names = cpu["name"].cat.categories if len(cpu) else calls["name"].cat.categories
    shapes = cpu["input_dims"].cat.categories if len(cpu) else pd.Index([], dtype=object)
    step_of, step_names = _steps(cpu, calls)
    for key in _CONTEXT:
        calls[key] = _categorical(context[key], shapes if key == "input_dims" else names)
    for key in ("annotation_id", "op_id"):
        calls[key] = context[key].astype(np.float64)
        calls.loc[calls[key] < 0, key] = np.nan
    steps = pd.Index(list(dict.fromkeys(step_names)))
    calls["step"] = _categorical(np.where(step_of >= 0, steps.get_indexer(step_names[np.clip(step_of, 0, None)])
                                          if len(step_names) else -1, -1), steps)
    # each activity's launch: the first call with its correlation id
    known = calls["correlation"].notna()
    by_corr = pd.Index(calls.loc[known, "correlation"])
    keep = ~by_corr.duplicated()
    by_corr, rows = by_corr[keep], np.flatnonzero(known.to_numpy())[keep]
    hit = by_corr.get_indexer(gpu["correlation"]) if len(by_corr) else np.full(len(gpu), -1)
    row = np.where(hit >= 0, rows[np.clip(hit, 0, None)] if len(rows) else -1, -1)
    has = row >= 0
    take = np.clip(row, 0, None)
    for key, src in (("call", "name"), ("call_start_s", "start_s"), ("call_duration_s", "duration_s"),
                     ("thread", "thread"), *((k, k) for k in (*_CONTEXT, "annotation_id", "op_id", "step"))):
        col = calls[src]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()[take] if len(col) else np.zeros(len(gpu), dtype=np.int64)
            gpu[key] = _categorical(np.where(has, codes, -1), col.cat.categories)
        else:
            values = col.to_numpy(dtype=np.float64)[take] if len(col) else np.zeros(len(gpu))
            gpu[key] = np.where(has, values, np.nan)
