"""The CPU context of each runtime call (``read.trace.links`` over ``read.trace.stack``): the stack of
open CPU events per thread, found for all calls at once (one row at a time on a thread with a time
that is no number), gives each call what a plain walk over the stack gives, whether the events nest
or not: the innermost op, its shapes and row, the outermost op with a name, the innermost user
annotation and user Python frame."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from ncu_roof.read.trace import links, stack

NAMES = ["aten::linear", "aten::mm", "fwd", "ProfilerStep#1", "net.py(3): forward",
         "site-packages/torch/nn/modules/module.py(1501): _call_impl", "aten::add"]
KINDS = ["op", "annotation", "python"]
DIMS = ["[[4,4]]", "[[8,8]]"]


def frames(cpu_rows: list[tuple[Any, ...]], call_rows: list[tuple[Any, ...]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``cpu_rows``: (kind, name or None, start, end, thread, dims or None); ``call_rows``: (start, end, thread)."""
    kind, name, start, end, thread, dims = zip(*cpu_rows, strict=True) if cpu_rows else ((),) * 6
    cpu = pd.DataFrame({
        "kind": pd.Categorical(list(kind), categories=KINDS), "name": pd.Categorical(list(name), categories=NAMES),
        "start_s": np.array(start, dtype=float), "end_s": np.array(end, dtype=float),
        "thread": np.array(thread, dtype=np.int32), "input_dims": pd.Categorical(list(dims), categories=DIMS)})
    cs, ce, ct = zip(*call_rows, strict=True) if call_rows else ((), (), ())
    calls = pd.DataFrame({"start_s": np.array(cs, dtype=float), "end_s": np.array(ce, dtype=float),
                          "thread": np.array(ct, dtype=np.int32)})
    return cpu, calls


def named(cpu: pd.DataFrame, found: dict[str, np.ndarray]) -> list[tuple[Any, ...]]:
    """Each call's (op, top_op, annotation, python, input_dims, op_id) by name (None: none)."""
    names, dims = cpu["name"].cat.categories, cpu["input_dims"].cat.categories

    def name(c: int) -> str | None:
        return str(names[c]) if c >= 0 else None

    return [(name(o), name(t), name(a), name(p), str(dims[d]) if d >= 0 else None, int(r) if r >= 0 else None)
            for o, t, a, p, d, r in zip(*(found[k].tolist() for k in ("op", "top_op", "annotation", "python",
                                                                       "input_dims", "op_id")), strict=True)]


def walk(cpu: pd.DataFrame, calls: pd.DataFrame) -> dict[str, np.ndarray]:
    """The reference: per thread, every CPU event and call by start (a longer event first, calls after
    the events that start with them); an event pops the ended events on top, then goes on the stack
    where it opens a context; a call reads the stack as it stands."""
    names = [str(n) for n in cpu["name"].cat.categories]
    rows = [(t, s, s - (s if e != e else e), 0, i) for i, (t, s, e) in
            enumerate(zip(cpu["thread"], cpu["start_s"], cpu["end_s"], strict=True))]
    rows += [(t, s, s - (s if e != e else e), 1, i) for i, (t, s, e) in
             enumerate(zip(calls["thread"], calls["start_s"], calls["end_s"], strict=True))]
    out = {k: np.full(len(calls), -1) for k in ("op", "top_op", "annotation_id", "python", "input_dims", "op_id")}
    kind, code, dims = (cpu[k].cat.codes.tolist() for k in ("kind", "name", "input_dims"))
    on: list[tuple[float, int, int]] = []  # (end, kind, row) of the open events
    current = None
    for t, s, _, is_call, i in sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3], r[4])):
        if t != current:
            current, on = t, []
        while on and on[-1][0] <= s:
            on.pop()
        if is_call:
            ops = [r for _, k, r in on if k == 0]
            if ops:
                out["op"][i], out["input_dims"][i], out["op_id"][i] = code[ops[-1]], dims[ops[-1]], ops[-1]
                out["top_op"][i] = next((code[r] for r in ops if code[r] >= 0), -1)
            out["annotation_id"][i] = next((r for _, k, r in reversed(on) if k == 1), -1)
            out["python"][i] = next((code[r] for _, k, r in reversed(on) if k == 2), -1)
            continue
        n = names[code[i]] if code[i] >= 0 else None
        opens = kind[i] == 0 or (kind[i] == 1 and n is not None and not n.startswith("ProfilerStep#")) or (
            kind[i] == 2 and n is not None and ".py(" in n and "site-packages" not in n)
        if opens:
            on.append((cpu["end_s"].iloc[i] if cpu["end_s"].iloc[i] == cpu["end_s"].iloc[i] else s, kind[i], i))
    out["annotation"] = np.where(out["annotation_id"] >= 0, np.array(code + [-1])[out["annotation_id"]], -1)
    return out


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(np.array_equal(a[k], b[k]) for k in ("op", "top_op", "annotation", "annotation_id", "python",
                                                      "input_dims", "op_id"))


def test_nested_events_give_each_call_its_context(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu, calls = frames([
        ("annotation", "fwd", 0, 100, 1, None),  # row 0
        ("op", "aten::linear", 10, 50, 1, "[[4,4]]"),  # row 1
        ("op", None, 12, 40, 1, "[[8,8]]"),  # row 2: an op without a name
        ("python", "net.py(3): forward", 13, 30, 1, None),  # row 3: the user's frame
        ("python", "site-packages/torch/nn/modules/module.py(1501): _call_impl", 14, 20, 1, None),  # opens none
        ("op", "aten::mm", 15, 18, 1, "[[8,8]]"),  # row 5
        ("annotation", "ProfilerStep#1", 0, 200, 1, None),  # a step opens none
        ("op", "aten::add", 15, 18, 2, None),  # row 7, another thread
    ], [(16, 17, 1), (35, 36, 1), (60, 61, 1), (150, 151, 1), (16, 16.5, 2), (19, 20, 2), (18, 19, 1)])
    monkeypatch.setattr(stack, "_sweep", lambda *a: pytest.fail("nested events walked row by row"))
    found = links._sweep(cpu, calls)
    assert named(cpu, found) == [
        ("aten::mm", "aten::linear", "fwd", "net.py(3): forward", "[[8,8]]", 5),
        (None, "aten::linear", "fwd", None, "[[8,8]]", 2),  # the unnamed op is the innermost
        (None, None, "fwd", None, None, None),
        (None, None, None, None, None, None),  # in the step only
        ("aten::add", "aten::add", None, None, None, 7),
        (None, None, None, None, None, None),  # after its thread's op ended
        (None, "aten::linear", "fwd", "net.py(3): forward", "[[8,8]]", 2)]  # mm ended at 18: popped
    assert found["annotation_id"].tolist() == [0, 0, 0, -1, -1, -1, 0]
    assert same(found, walk(cpu, calls))


def test_events_that_do_not_nest_give_what_the_walk_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """B outlives A, which it started in: a call after A's end still finds A under B (the stack pops
    from its top only), as the walk one row at a time does, found at once."""
    cpu, calls = frames([("op", "aten::linear", 0, 10, 1, None), ("op", "aten::mm", 5, 15, 1, None),
                         ("op", "aten::add", 12, 13, 1, None), ("op", "aten::add", 0, 10, 2, None)],
                        [(12.5, 12.6, 1), (11, 12, 1), (7, 8, 1), (3, 4, 2), (16, 17, 1)])
    monkeypatch.setattr(stack, "_sweep", lambda *a: pytest.fail("walked row by row"))
    found = links._sweep(cpu, calls)
    assert named(cpu, found) == [("aten::add", "aten::linear", None, None, None, 2),
                                 ("aten::mm", "aten::linear", None, None, None, 1),
                                 ("aten::mm", "aten::linear", None, None, None, 1),
                                 ("aten::add", "aten::add", None, None, None, 3),
                                 (None, None, None, None, None, None)]
    assert same(found, walk(cpu, calls))


def test_a_time_that_is_no_number_is_walked_one_row_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call without a start comes last on its thread and pops nothing: it finds the event on top,
    as the walk finds it (thread 1's rows walked, thread 2's found at once)."""
    cpu, calls = frames([("op", "aten::linear", 0, 10, 1, "[[4,4]]"), ("annotation", "fwd", 1, 9, 1, None),
                         ("op", "aten::mm", 2, 3, 1, None), ("op", "aten::add", 0, 10, 2, None)],
                        [(float("nan"), 1, 1), (5, 6, 1), (3, 4, 2)])
    walked: list[list[int]] = []
    sweep = stack._sweep
    monkeypatch.setattr(stack, "_sweep", lambda rows, *a: (walked.append(rows.tolist()), sweep(rows, *a)))
    found = links._sweep(cpu, calls)
    assert named(cpu, found) == [("aten::linear", "aten::linear", "fwd", None, "[[4,4]]", 0),
                                 ("aten::linear", "aten::linear", "fwd", None, "[[4,4]]", 0),
                                 ("aten::add", "aten::add", None, None, None, 3)]
    assert walked == [[0, 1, 2, 3, 4]]  # thread 1: its three events and two calls


def random_frames(rng: np.random.Generator, nest: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random CPU events (nested by construction, or at random) and calls on two threads, with ties,
    events of no length and the same event twice."""
    rows: list[tuple[Any, ...]] = []

    def grow(a: float, b: float, depth: int, thread: int) -> None:  # children: disjoint parts of [a, b]
        k = int(rng.integers(0, 4)) if depth < 6 else 0
        cuts = np.clip(np.round(np.sort(rng.uniform(a, b, 2 * k)), int(rng.integers(0, 2))), a, b)  # ties
        for s, e in zip(cuts[::2], cuts[1::2], strict=True):
            if not nest:
                e = min(e + rng.exponential(b - a), 100.0)
            for _ in range(2 if rng.random() < 0.1 else 1):  # the same event twice
                rows.append((KINDS[int(rng.integers(0, 3))], NAMES[int(rng.integers(0, len(NAMES)))]
                             if rng.random() < 0.9 else None, s, e, thread, DIMS[0] if rng.random() < 0.5 else None))
            grow(s, e, depth + 1, thread)

    for thread in (1, 2):
        grow(0.0, 100.0, 0, thread)
    n = int(rng.integers(1, 30))
    starts = np.round(rng.uniform(0, 100, n), 1)
    return frames(rows, list(zip(starts, starts + rng.exponential(1, n), rng.integers(1, 3, n), strict=True)))


@pytest.mark.parametrize("nest", [True, False])
def test_random_stacks_give_what_the_walk_gives(nest: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    walked = []
    sweep = stack._sweep
    monkeypatch.setattr(stack, "_sweep", lambda rows, *a: (walked.append(len(rows)), sweep(rows, *a)))
    for _ in range(150):
        cpu, calls = random_frames(rng, nest)
        assert same(links._sweep(cpu, calls), walk(cpu, calls))
    assert walked == []  # all found at once
