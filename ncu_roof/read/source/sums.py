"""Per-instruction tables summed over launches: a report and groups of its launches in; out, for
each group, one row per kernel and PC with every counter summed over the group's launches of
that kernel (see :func:`ncu_roof.read.source.sum_groups`).

Each launch is read once whatever the groups that want it, and memory is one launch and the sums.
ncu-roof's own reader splits a big read (:data:`POOL_MIN_BYTES` of launches or more) into chunks
of consecutive launches read by a pool of processes (``jobs``, the read options' by default), each
chunk's sums then summed again here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from ncu_roof.read.source.frame import IDENTITY, frame_columns

Groups = dict[Any, "set[int] | None"]
POOL_MIN_BYTES = 64 << 20


def _every(wanted: Groups) -> set[int] | None:
    """The launches any group wants (None: all)."""
    every: set[int] | None = set()
    for ids in wanted.values():
        every = None if ids is None or every is None else every | ids
    return every


def summed_frames(frames: list[Any]) -> Any:
    """Per-instruction frames summed by kernel and PC (a counter NaN only where no frame has it),
    each row's other columns the first frame's."""
    import pandas as pd

    both = pd.concat(frames, ignore_index=True)
    counters = [c for c in both.columns if c not in IDENTITY]
    keys = ["kernel", "pc"]
    first = both.groupby(keys, sort=True, dropna=False)[[c for c in IDENTITY if c not in keys]].first()
    sums = both.groupby(keys, sort=True, dropna=False)[counters].sum(min_count=1)
    return frame_columns(first.join(sums).reset_index())


def _labelled(frame: Any, texts: dict[str, str], launches: dict[str, list[int]]) -> Any:
    frame.attrs.update(sources=texts, launches={k: sorted(set(v)) for k, v in launches.items()})
    return frame


def by_frames(path: Path, report: str, wanted: Groups, csv: bool = False) -> dict[Any, Any]:
    """The groups' sums read by NVIDIA's ``ncu_report``, or from a source-page CSV export (one frame
    per launch, summed at the end)."""
    if csv:
        from ncu_roof.read.source.csv import iter_instructions, launch_table

        table = launch_table(path, _every(wanted), report=report)
        if table is not None:
            return _csv_sums(table, wanted)
    else:
        from ncu_roof.read.source.ncu_rep import iter_instructions

    parts: dict[Any, list[Any]] = {key: [] for key in wanted}
    texts: dict[Any, dict[str, str]] = {key: {} for key in wanted}
    launches: dict[Any, dict[str, list[int]]] = {key: {} for key in wanted}
    for launch, frame, found in iter_instructions(path, _every(wanted), report=report):
        for key, ids in wanted.items():
            if ids is None or launch in ids:
                parts[key].append(frame)
                texts[key].update(found)
                launches[key].setdefault(str(frame["kernel"].iloc[0]), []).append(launch)
    return {key: _labelled(summed_frames(p), texts[key], launches[key]) for key, p in parts.items() if p}


def _csv_sums(table: Any, wanted: Groups) -> dict[Any, Any]:
    """:func:`by_frames` of a source-page export's launches read at once (a :class:`~ncu_roof.read.source.csv.
    LaunchTable`): each group's rows and the counters its launches have."""
    import numpy as np

    out = {}
    for key, ids in wanted.items():
        chosen = [(n, kernel, counters) for n, kernel, counters in table.launches if ids is None or n in ids]
        if not chosen:
            continue
        launches: dict[str, list[int]] = {}
        for n, kernel, _ in chosen:
            launches.setdefault(kernel, []).append(n)
        rows = table.frame if ids is None else table.frame[np.isin(table.frame["id"].to_numpy(), list(ids))]
        counters = {c for _, _, names in chosen for c in names}
        rows = rows[[c for c in rows.columns if c in IDENTITY or c in counters]]
        out[key] = _labelled(summed_frames([rows]), dict(table.texts), launches)
    return out


def native(path: Path, report: str, wanted: Groups, jobs: int = 1,
           columns: Collection[str] | None = None) -> dict[Any, Any]:
    """The groups' sums (of the counters ``columns`` names; None: all) read by ncu-roof's own reader,
    in ``jobs`` processes where the read is big."""
    chunks = _chunks(path, _every(wanted), jobs) if jobs > 1 else None
    if not chunks:
        return _native_here(path, report, wanted, columns)
    import pandas  # noqa: F401 - imported once here, not in each forked worker

    from ncu_roof.read.cluster import map_ordered
    from ncu_roof.read.native.wire import schema
    from ncu_roof.read.source import native as source_native  # noqa: F401

    schema()
    tasks = [(str(path), (path, report, {k: chunk if ids is None else ids & chunk for k, ids in wanted.items()},
                           columns)) for chunk in chunks]
    results = list(map_ordered(_native_here, tasks, jobs=jobs))
    out: dict[Any, Any] = {}
    for key in wanted:
        frames = [r[key] for r in results if key in r]
        if not frames:
            continue
        texts: dict[str, str] = {}
        launches: dict[str, list[int]] = {}
        for f in frames:
            texts.update(f.attrs["sources"])
            for kernel, ids in f.attrs["launches"].items():
                launches.setdefault(kernel, []).extend(ids)
        out[key] = _labelled(summed_frames(frames) if len(frames) > 1 else frames[0], texts, launches)
    return out


def _chunks(path: Path, every: set[int] | None, jobs: int) -> list[set[int]] | None:
    """The wanted kernel launches in about ``2 * jobs`` runs of consecutive launches of like size
    (None where they are too few bytes to share out)."""
    from ncu_roof.read.native.blocks import FileBytes, index

    size = path.stat().st_size
    with path.open("rb") as fh:
        found = index(FileBytes(fh.fileno(), size), size, path)
    sizes = [(i, launch.size) for i, launch in enumerate(found.launches)
             if launch.kind == "kernel" and (every is None or i in every)]
    total = sum(n for _, n in sizes)
    if total < POOL_MIN_BYTES or len(sizes) < 2:
        return None
    share = total / (2 * jobs)
    chunks: list[set[int]] = [set()]
    filled = 0
    for i, n in sizes:
        if filled >= share:
            chunks.append(set())
            filled = 0
        chunks[-1].add(i)
        filled += n
    return chunks


def _native_here(path: Path, report: str, wanted: Groups, columns: Collection[str] | None = None) -> dict[Any, Any]:
    """The groups' sums, read in this process."""
    import pandas as pd

    from ncu_roof.read.source.native import frame, iter_counters, summed

    sums: dict[Any, list[Any]] = {key: [] for key in wanted}
    texts: dict[Any, dict[str, str]] = {key: {} for key in wanted}
    for c in iter_counters(path, _every(wanted), columns):
        for key, ids in wanted.items():
            if ids is None or c.id in ids:
                sums[key] = summed([*sums[key], c])
                texts[key].update(c.module.texts if c.module else {})
    out = {}
    for key, parts in sums.items():
        if not parts:
            continue
        launches: dict[str, list[int]] = {}
        for c in parts:
            launches.setdefault(c.kernel, []).extend(c.launches)
        frames = [frame(c, report) for c in parts]
        out[key] = _labelled(frame_columns(pd.concat(frames, ignore_index=True)) if len(frames) > 1 else frames[0],
                             texts[key], launches)
    return out


def wanted_groups(groups: dict[Any, Iterable[int] | None]) -> Groups:
    """Groups as sets of launch ids (None: every launch)."""
    return {key: None if ids is None else set(ids) for key, ids in groups.items()}
