"""The Source Counters of a ``.ncu-rep`` read with NVIDIA's ``ncu_report`` module: a report path and
launch ids in; out, one per-instruction frame per launch (the columns of :mod:`ncu_roof.read.source`).

Each source counter's instances are (PC, value); ``source_info(pc)`` gives the file and line,
``sass_by_pc(pc)`` the instruction (where the module can disassemble it: ``???`` otherwise). The
module does not name the function a PC lies in: the offset is from the nearest function start of
``launch__function_pcs`` below the PC, and the function is left unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ncu_roof.read import metrics


def _instances(action: Any, name: str) -> tuple[np.ndarray, np.ndarray] | None:
    m = action.metric_by_name(name)
    if m is None:
        return None
    n = m.num_instances() if m.has_correlation_ids() else 0
    if not n:  # collected, but no instruction has it
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64)
    ids = m.correlation_ids()
    return (np.array([ids.as_uint64(i) for i in range(n)], dtype=np.uint64),
            np.array([m.as_double(i) for i in range(n)], dtype=np.float64))


def _frame(action: Any, identity: dict[str, Any]) -> Any:
    import pandas as pd

    from ncu_roof.read.source.frame import frame_columns

    counters: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, column in (*metrics.SOURCE_COUNTERS.items(), *metrics.SOURCE_COUNTERS_OLD.items()):
        if column in counters:
            continue
        found = _instances(action, name)
        if found is not None:
            counters[column] = found
    if not counters:
        return None
    pcs = np.unique(np.concatenate([p for p, _ in counters.values()]))
    starts = _instances(action, metrics.FUNCTION_PCS)
    offsets = np.full(len(pcs), -1, dtype=np.int64)
    if starts is not None:
        fpcs = np.sort(starts[1].astype(np.uint64))
        at = np.searchsorted(fpcs, pcs, side="right") - 1
        ok = at >= 0
        offsets[ok] = (pcs[ok] - fpcs[at[ok]]).astype(np.int64)
    files: list[str | None] = []
    lines: list[int] = []
    sass: list[str | None] = []
    for pc in pcs.tolist():
        info = action.source_info(pc)
        files.append(info.file_name() if info is not None else None)
        lines.append(int(info.line()) if info is not None else -1)
        text = action.sass_by_pc(pc)
        sass.append(text.strip() if text and text.strip() != "???" else None)
    data: dict[str, Any] = {**{k: [v] * len(pcs) for k, v in identity.items()}, "function": [None] * len(pcs),
                            "pc": pcs.astype(np.int64), "offset": offsets, "file": files, "line": lines, "sass": sass}
    for column, (p, v) in counters.items():
        full = np.full(len(pcs), np.nan)
        full[np.searchsorted(pcs, p)] = v
        data[column] = full
    return frame_columns(pd.DataFrame(data))


def iter_instructions(path: str | Path, ids: Iterable[int] | None = None,
                      report: str | None = None) -> Iterator[tuple[int, Any, dict[str, str]]]:
    """For each wanted launch with Source Counters: its id (the launch table's), its
    per-instruction frame and the source texts the report carries for it."""
    from ncu_roof.read.ncu_rep import _import_ncu_report, _quiet_stderr, check_container

    path = Path(path)
    check_container(path)
    ncu_report = _import_ncu_report()
    wanted = None if ids is None else set(ids)
    with _quiet_stderr():
        ctx = ncu_report.load_report(str(path))
    launch_id = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            this, launch_id = launch_id, launch_id + 1
            if wanted is not None and this not in wanted:
                continue
            action = rng.action_by_idx(a)
            frame = _frame(action, {"report": report or str(path), "id": this, "kernel": action.name()})
            if frame is None:
                continue
            texts = {str(k): str(v) for k, v in action.source_files().items() if v}
            yield this, frame, texts
