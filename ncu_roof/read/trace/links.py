"""Each GPU activity of a trace tied to what launched it.

Enters: a trace's frames as read (:mod:`ncu_roof.read.trace`). Leaves: the same frames, its ``calls``
given the CPU context they ran in (``op`` and ``op_id``, its row in ``cpu``; ``top_op``,
``annotation`` and ``annotation_id``, its row in ``cpu``; ``python``, ``input_dims``, ``step``)
and its ``gpu`` rows given their launching call
(by correlation id, the id the ``ac2g`` flow carries) and that call's context. An activity with no
call recorded keeps them unknown.

The CPU context is found by one sweep per thread over the CPU events and calls sorted by start:
a stack of the events still open; each call takes the innermost op, user annotation and user
Python frame on it, and the outermost op. Steps (``ProfilerStep#N``) are found by time, on any
thread: the backward pass runs on autograd's own threads, outside the step's annotation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STEP_PREFIX = "ProfilerStep#"
# Python frames of libraries, not of the user's script: the script's line is the innermost other frame
LIBRARY_FRAMES = ("site-packages", "dist-packages", "torch/", "<built-in", "<frozen", "threading.py")
_CONTEXT = ("op", "top_op", "annotation", "python", "input_dims")
SLICE = 1 << 16  # events swept per slice of Python values


def _user_frame(name: str) -> bool:
    return ".py(" in name and not any(part in name for part in LIBRARY_FRAMES)


def _sweep(cpu: pd.DataFrame, calls: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per call, the codes (-1: none) of its innermost op, outermost op, innermost annotation,
    innermost user Python frame and the innermost op's input shapes."""
    n_cpu, n_calls = len(cpu), len(calls)
    out = {k: np.full(n_calls, -1, dtype=np.int64) for k in (*_CONTEXT, "annotation_id", "op_id")}
    if not n_calls or not n_cpu:
        return out
    names = cpu["name"].cat.categories
    step = np.asarray(names.str.startswith(STEP_PREFIX), dtype=bool)
    user = np.fromiter((_user_frame(str(n)) for n in names), dtype=bool, count=len(names))
    start = np.concatenate([cpu["start_s"].to_numpy(), calls["start_s"].to_numpy()])
    end = np.concatenate([cpu["end_s"].to_numpy(), calls["end_s"].to_numpy()])
    end = np.where(np.isnan(end), start, end)
    thread = np.concatenate([cpu["thread"].to_numpy(), calls["thread"].to_numpy()])
    is_call = np.r_[np.zeros(n_cpu, dtype=np.int8), np.ones(n_calls, dtype=np.int8)]
    order = np.lexsort((is_call, start - end, start, thread))  # parents before children, calls last
    kind = cpu["kind"].cat.codes.to_numpy()
    code = cpu["name"].cat.codes.to_numpy()
    dims = cpu["input_dims"].cat.codes.to_numpy()
    found = np.full((n_calls, 6), -1, dtype=np.int64)
    none = (np.inf, -1, -1, -1, -1, -1, -1)
    stack: list[tuple[float, int, int, int, int, int, int]] = []
    current = None
    calls_at = np.full(n_calls, -1)  # a call's kind, code and shapes: none
    kinds, codes, dimss = np.r_[kind, calls_at], np.r_[code, calls_at], np.r_[dims, calls_at]
    for at in range(0, len(order), SLICE):  # Python values a slice at a time: memory bounded, not 400 B an event
        rows = order[at : at + SLICE]
        for i, t, s, e, k, c, d in zip(rows.tolist(), thread[rows].tolist(), start[rows].tolist(),
                                       end[rows].tolist(), kinds[rows].tolist(), codes[rows].tolist(),
                                       dimss[rows].tolist(), strict=True):
            if t != current:
                current = t
                stack.clear()
            while stack and stack[-1][0] <= s:
                stack.pop()
            top = stack[-1] if stack else none
            if i >= n_cpu:
                found[i - n_cpu] = top[1:]
            elif k == 0:  # an op: innermost op, outermost kept (or this one), its shapes
                stack.append((e, c, top[2] if top[2] >= 0 else c, top[3], top[4], d, i))
            elif k == 1 and c >= 0 and not step[c]:  # an annotation: this instance (its row), named below
                stack.append((e, top[1], top[2], i, top[4], top[5], top[6]))
            elif k == 2 and c >= 0 and user[c]:
                stack.append((e, top[1], top[2], top[3], c, top[5], top[6]))
    out = {k: found[:, j] for j, k in enumerate((*_CONTEXT, "op_id"))}
    out["annotation_id"] = out["annotation"]
    out["annotation"] = np.where(out["annotation_id"] >= 0, code[np.clip(out["annotation_id"], 0, None)], -1)
    return out


def _steps(cpu: pd.DataFrame, calls: pd.DataFrame) -> tuple[np.ndarray, pd.Index]:
    """Per call, the index of the ``ProfilerStep#N`` it started in (-1: none), and the steps' names."""
    marks = cpu[(cpu["kind"] == "annotation") & cpu["name"].astype("string").str.startswith(STEP_PREFIX).fillna(False)]
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
