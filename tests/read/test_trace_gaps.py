"""What each idle gap of a trace's timeline is tied to (``model.timeline``), picked from the frames'
arrays rather than from copies of them: the kernel that ends a gap (of kernels that start together,
the first in the trace), and the launching thread's time inside CPU ops and its launches in the gap,
as the frame-by-frame formulation they replace found them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ncu_roof.model import timeline
from ncu_roof.model.intervals import covered, union

NEXT = ("name", "op", "top_op", "python", "step", "call_start_s", "thread")


def kernels_frame(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """``rows``: (name, start_s, op or None, call_start_s, thread)."""
    name, start, op, call, thread = zip(*rows, strict=True)
    cat = pd.Categorical(list(op), categories=sorted({o for o in op if o}))
    return pd.DataFrame({"start_s": np.array(start, dtype=float), "name": pd.Categorical(list(name)), "op": cat,
                         "top_op": cat, "python": pd.Categorical([None] * len(rows), categories=["a.py(1): f"]),
                         "step": pd.Categorical(["ProfilerStep#1"] * len(rows)),
                         "call_start_s": np.array(call, dtype=float), "thread": np.array(thread, dtype=float)})


def next_by_frames(kernels: pd.DataFrame, ends: np.ndarray, blocks: int) -> dict[str, np.ndarray]:
    """The former formulation: the kernels sorted and deduplicated as a frame, the rows picked as one."""
    first = kernels[["start_s", *NEXT]].sort_values("start_s", kind="stable").drop_duplicates("start_s")
    nxt = np.searchsorted(first["start_s"].to_numpy(), ends, side="left")
    has_next = np.r_[np.ones(blocks, dtype=bool), False] & (nxt < len(first))
    pick = first.iloc[np.clip(nxt, 0, max(len(first) - 1, 0))] if len(first) else first
    out = {}
    for col in NEXT:
        values = pick[col].to_numpy() if len(first) else np.full(len(ends), np.nan)
        out["next_" + ("kernel" if col == "name" else col)] = pd.Series(values).where(has_next).to_numpy()
    return out


def same_values(a: Any, b: Any) -> bool:
    """The same column of the gaps frame: values and dtype as a frame makes them (a text column given as
    pandas' text array or as an object array of texts is the same column)."""
    x, y = pd.DataFrame({"v": a}, copy=False)["v"], pd.DataFrame({"v": b}, copy=False)["v"]
    return x.dtype == y.dtype and x.equals(y)


def test_the_kernel_ending_a_gap_is_the_first_of_those_starting_with_it() -> None:
    kernels = kernels_frame([("b", 5.0, "aten::mm", 4.0, 1), ("a", 5.0, None, 4.5, 2), ("c", 1.0, "aten::add", 0.5, 1),
                             ("d", 9.0, "aten::mm", np.nan, 1)])
    ends = np.array([0.5, 4.0, 6.0, 9.5])
    cols: dict[str, Any] = {}
    has_next = timeline._next_kernels(kernels, ends, 3, cols)
    assert has_next.tolist() == [True, True, True, False]
    assert cols["next_kernel"][:3].tolist() == ["c", "b", "d"] and np.isnan(cols["next_kernel"][3])
    assert cols["next_op"][:3].tolist() == ["aten::add", "aten::mm", "aten::mm"]
    assert cols["next_call_start_s"][:2].tolist() == [0.5, 4.0] and np.isnan(cols["next_call_start_s"][2])
    assert cols["next_thread"].tolist()[:3] == [1.0, 1.0, 1.0]
    want = next_by_frames(kernels, ends, 3)
    assert list(cols) == list(want) and all(same_values(cols[k], want[k]) for k in want)


@pytest.mark.parametrize("seed", range(4))
def test_random_kernels_give_the_gaps_the_frames_gave(seed: int) -> None:
    """Ties, a start that is no number and no kernels at all, against the former formulation."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40)) if seed else 0
    starts = np.round(rng.uniform(0, 20, n))
    starts[rng.random(n) < 0.1] = np.nan
    kernels = kernels_frame([(f"k{i % 5}", s, "aten::mm" if i % 3 else None, s - 1, i % 2) for i, s in
                             enumerate(starts)]) if n else kernels_frame([("k", 0.0, None, 0.0, 0)]).iloc[:0]
    ends = np.sort(rng.uniform(-1, 22, 12))
    cols: dict[str, Any] = {}
    has_next = timeline._next_kernels(kernels, ends, 11, cols)
    want = next_by_frames(kernels, ends, 11)
    assert list(cols) == list(want) and all(same_values(cols[k], want[k]) for k in want)
    assert has_next.tolist() == [not isinstance(v, float) for v in want["next_kernel"]]


def on_threads_by_frames(trace: Any, thread: np.ndarray, starts: np.ndarray,
                         ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The former formulation: each thread's ops and launches as frames."""
    under, launches = np.zeros(len(starts)), np.zeros(len(starts), dtype=np.int64)
    ops = trace.cpu[trace.cpu["kind"] == "op"]
    for th in np.unique(thread[~np.isnan(thread)]):
        mine = ops[ops["thread"] == th]
        at = thread == th
        under[at] = covered(*union(mine["start_s"].to_numpy(), mine["end_s"].to_numpy()), starts[at], ends[at])
        launched = trace.gpu[trace.gpu["call_start_s"].notna()]
        t = np.sort(launched.loc[launched["thread"] == th, "call_start_s"].to_numpy())
        launches[at] = np.searchsorted(t, ends[at], "right") - np.searchsorted(t, starts[at], "left")
    return under, launches


def test_the_launching_thread_in_each_gap() -> None:
    cpu = pd.DataFrame({"kind": pd.Categorical(["op", "op", "annotation", "op"], categories=["op", "annotation"]),
                        "start_s": [0.0, 4.0, 0.0, 1.0], "end_s": [3.0, 8.0, 10.0, 9.0],
                        "thread": np.array([1, 1, 1, 2], dtype=np.int32)})
    gpu = pd.DataFrame({"call_start_s": [2.5, 5.0, 6.0, np.nan, 7.0], "thread": [1.0, 1.0, 2.0, np.nan, 1.0]})
    trace = SimpleNamespace(cpu=cpu, gpu=gpu)
    thread = np.array([1.0, 2.0, np.nan, 1.0])
    starts, ends = np.array([2.0, 2.0, 0.0, 6.5]), np.array([5.0, 7.0, 1.0, 9.5])
    under, launches = timeline._on_threads(trace, thread, starts, ends)  # type: ignore[arg-type]
    assert under.tolist() == [2.0, 5.0, 0.0, 1.5]  # thread 1 in ops 2-3 and 4-5; thread 2 in 2-7; 6.5-8
    assert launches.tolist() == [2, 1, 0, 1]  # 2.5 and 5.0; 6.0 (thread 2); none (no thread); 7.0
    want = on_threads_by_frames(trace, thread, starts, ends)
    assert under.tolist() == want[0].tolist() and launches.tolist() == want[1].tolist()
