"""The CPU context each runtime call ran in: the stack of CPU events open on its thread, for all
calls at once.

Enters: the CPU events that open a context (ops, annotations other than steps, the user's Python
frames) and the calls, as rows sorted per thread by start, a longer event before a shorter one
that starts with it, a call after the events that start with it: their ``thread``, ``start``,
``end``, whether a row is a CPU event (``push``), its ``kind`` (0 op, 1 annotation, 2 Python
frame), name ``code``, shapes code (``dims``) and ``row`` in its frame. Leaves: per call, the
context of the stack's top when it starts (-1: none): the innermost op's name code, the outermost
op's (the outermost whose name is known), the innermost annotation's row, the innermost Python
frame's name code, the innermost op's shapes code and row (:data:`FIELDS`).

The model is a stack per thread: a row first pops the events on top that ended by its start, then
(a CPU event) goes on top with the context of the event under it, its own kind's field replaced.
The top a row finds is the last event before it that ends after it starts, whether or not the
events nest: the events after that one have all ended, so they are popped, and it is never popped
before (it has not ended), nor is an event under it. It is found for every row at once by pointer
jumping (a row's candidate, the last event before it, replaced by the candidate's own while it has
ended: each jump passes only events that have ended), and each field as the nearest event of its
kind down the stack, by pointer jumping too (log of the depth passes over the rows). A thread with
a time that is not a number (no order, no pop) is swept one row at a time.
"""

from __future__ import annotations

import numpy as np

FIELDS = ("op", "top_op", "annotation", "python", "input_dims", "op_id")
SLICE = 1 << 14  # rows swept one at a time per slice of Python values


def contexts(thread: np.ndarray, start: np.ndarray, end: np.ndarray, push: np.ndarray, kind: np.ndarray,
             code: np.ndarray, dims: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The context (:data:`FIELDS`) under each call (the rows not ``push``), in their order: an int32
    array of shape (calls, 6)."""
    out = _fields(_tops(thread, start, end, push), push, kind, code, dims, row)
    odd = ~np.isfinite(start) | ~np.isfinite(end)
    if odd.any():  # those threads swept row by row
        _sweep(np.flatnonzero(np.isin(thread, np.unique(thread[odd]))), thread, start, end, push, kind, code, dims,
               row, out)
    return out


def _tops(thread: np.ndarray, start: np.ndarray, end: np.ndarray, push: np.ndarray) -> np.ndarray:
    """Per row, the last CPU event before it on its thread that ends after it starts (-1: none)."""
    n = len(thread)
    at = np.arange(n, dtype=np.int32)
    new = np.r_[True, thread[1:] != thread[:-1]]
    cand = np.r_[np.int32(-1), np.maximum.accumulate(np.where(push, at, np.int32(-1)))[:-1]]
    cand[cand < np.maximum.accumulate(np.where(new, at, np.int32(0)))] = -1  # before the thread's first row
    del at
    reach = np.where(push, end, -np.inf)  # the latest end of the events before each row: none open past it
    bounds = np.flatnonzero(new).tolist() + [n]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        reach[a:b] = np.maximum.accumulate(reach[a:b])
    cand[1:][reach[:-1] <= start[1:]] = -1  # (a thread's first row has no candidate already)
    del reach
    todo = np.flatnonzero(cand >= 0)
    while len(todo):
        todo = todo[~(end[cand[todo]] > start[todo])]  # the candidate still open: found
        cand[todo] = cand[cand[todo]]  # else its own candidate (every event between has ended)
        todo = todo[cand[todo] >= 0]
    return cand


def _nearest(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """Per row (and the sentinel ``len(mark)``, none), the nearest row at or under it on the stack
    that is marked (the sentinel where none is). ``parent``: the row under each, the sentinel for none."""
    p = parent.copy()
    p[np.flatnonzero(mark)] = np.flatnonzero(mark)
    while True:
        q = p[p]
        if np.array_equal(q, p):
            return p
        p = q


def _fields(top: np.ndarray, push: np.ndarray, kind: np.ndarray, code: np.ndarray, dims: np.ndarray,
            row: np.ndarray) -> np.ndarray:
    """Each call's context as the stack gives it (``top``: the event under each row)."""
    n = len(top)
    parent = np.r_[np.where(top >= 0, top, np.int32(n)).astype(np.int32), np.int32(n)]  # n: none, its own
    calls = np.flatnonzero(~push)
    op = np.r_[push & (kind == 0), True]
    inner = _nearest(parent, op)[calls]
    out = np.empty((len(calls), len(FIELDS)), dtype=np.int32)
    for j, values in ((0, code), (4, dims), (5, row)):
        out[:, j] = np.r_[values, np.int32(-1)][inner]
    del inner
    known = op & np.r_[code >= 0, True]  # the outermost op: the first whose name is known, from the bottom
    near = _nearest(parent, known)
    up = near[parent]  # a known op's nearest known op under it
    p = np.where(known & (up != n), up, np.arange(n + 1, dtype=np.int32))
    del up
    while not np.array_equal(q := p[p], p):
        p = q
    out[:, 1] = np.r_[code, np.int32(-1)][p[near[calls]]]
    del near, p, q
    out[:, 2] = np.r_[row, np.int32(-1)][_nearest(parent, np.r_[push & (kind == 1), True])[calls]]
    out[:, 3] = np.r_[code, np.int32(-1)][_nearest(parent, np.r_[push & (kind == 2), True])[calls]]
    return out


def _sweep(rows: np.ndarray, thread: np.ndarray, start: np.ndarray, end: np.ndarray, push: np.ndarray,
           kind: np.ndarray, code: np.ndarray, dims: np.ndarray, row: np.ndarray, out: np.ndarray) -> None:
    """The context of each call among ``rows`` (whole threads, in order) into ``out``, by the stack itself."""
    none = (np.inf, -1, -1, -1, -1, -1, -1)
    stack: list[tuple[float, int, int, int, int, int, int]] = []
    current = None
    found: list[tuple[int, int, int, int, int, int]] = []
    for at in range(0, len(rows), SLICE):  # Python values a slice at a time: memory bounded
        part = rows[at : at + SLICE]
        for t, s, e, p, k, c, d, r in zip(thread[part].tolist(), start[part].tolist(), end[part].tolist(),
                                          push[part].tolist(), kind[part].tolist(), code[part].tolist(),
                                          dims[part].tolist(), row[part].tolist(), strict=True):
            if t != current:
                current = t
                stack.clear()
            while stack and stack[-1][0] <= s:
                stack.pop()
            top = stack[-1] if stack else none
            if not p:  # a call
                found.append(top[1:])  # type: ignore[arg-type]
            elif k == 0:  # an op: innermost op, outermost kept (or this one), its shapes
                stack.append((e, c, top[2] if top[2] >= 0 else c, top[3], top[4], d, r))
            elif k == 1:  # an annotation: this instance (its row), named by the caller
                stack.append((e, top[1], top[2], r, top[4], top[5], top[6]))
            else:
                stack.append((e, top[1], top[2], top[3], c, top[5], top[6]))
    calls = rows[~push[rows]]
    out[(np.cumsum(~push) - 1)[calls]] = np.array(found, dtype=np.int32).reshape(len(found), len(FIELDS))
