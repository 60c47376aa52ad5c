"""ncu-roof's own ``.ncu-rep`` reader: the file read with ``os.pread``, one launch decoded at a time.

Enters: a report path (``.ncu-rep``, or ``.ncu-repz`` through an uncompressed copy). Leaves: the raw
launch frame (:func:`load_native`), or for :mod:`ncu_roof.read.parallel` the plan of chunks
(:func:`plan`), each chunk's columns and rule results (:func:`read_chunk`, a :class:`Part`) and
the frame they make (:func:`frame`).

The report is a container of length-prefixed protobuf messages (``NCU-REP-FORMAT.md``): the magic
``NVR\\0``, a ``FileHeader``, then blocks, each a ``BlockHeader`` followed by ``PayloadSize`` bytes
of ``SourceData``, ``ProfileResult`` (one per launch), ``RangeResult``, ``CmdlistResult`` and
``GraphResult`` messages. Metric names live in the string table a block header carries for its
process; a launch's ``MetricResults`` refer to them by ``NameId``.

The reader is four modules: :mod:`ncu_roof.read.native.wire` writes down the few messages and
fields it reads (facts of the format, no NVIDIA file) and decodes protobuf values by hand where
that is faster; :mod:`ncu_roof.read.native.blocks` walks the block headers to where each launch
lies; :mod:`ncu_roof.read.native.launch` turns one launch into a row; this module reads launches
in file order, a chunk at a time, each launch read on its own (the file is not mapped: a mapped
walk keeps the pages around every page it touches resident), so memory stays at about one launch
plus the chunk's rows, and the chunks of a big file can go to several processes, each returning
its chunk as columns.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncu_roof.errors import ReportLoadError
from ncu_roof.read.metrics import damaged_name_notes
from ncu_roof.read.native.blocks import (
    FALLBACK,
    TESTED_VERSIONS,
    FileBytes,
    Launch,
    index,
    run_conditions,
    source_kernels,
    undecodable,
)
from ncu_roof.read.native.launch import RuleColumns, Wanted, wanted
from ncu_roof.read.native.values import LaunchError, Reader
from ncu_roof.read.ncu_rules import RuleResults


@dataclass
class Chunk:
    """Consecutive launches of one report, for one worker: where to read, how to name things."""

    plain: str  # the uncompressed file to map
    report: str  # the ``report`` column: the path as given
    first_id: int
    launches: list[Launch]
    wants: dict[int, Wanted]
    modules: dict[int, list[str]] = field(default_factory=dict)  # SourceData reference -> its kernels

    @property
    def nbytes(self) -> int:
        return sum(launch.size + 4 for launch in self.launches)


_UNDECODABLE = (ValueError, IndexError, struct.error, UnicodeDecodeError)


@dataclass
class Part:
    """A chunk's launches as columns, built in the worker that read them (arrays pass between
    processes far cheaper than one dict per launch): identity columns as lists, metrics as
    float64 arrays (NaN where a launch lacks one) in the order the launches first name them;
    rule results as columns too (each distinct record once)."""

    n: int
    columns: dict[str, Any]
    rules: RuleResults
    workloads: list[tuple[str, Any, Any, Any]]  # (kind, name, id, kernels in) of non-kernel results


def read_chunk(chunk: Chunk, progress: Callable[[int], None] | None = None) -> Part:
    """The columns and rule results of a chunk's launches, read in file order one launch at a
    time (``os.pread``: the file is not mapped, so what the process holds of it is the launch being
    decoded, whatever the report's size)."""
    from google.protobuf.message import DecodeError

    rules = RuleColumns()
    with Path(chunk.plain).open("rb") as fh:
        reader = Reader(fh.fileno(), chunk.report, chunk.modules, rules)
        done = 0
        try:
            for i, launch in enumerate(chunk.launches):
                reader.read(chunk.launches, i, chunk.wants[launch.table], chunk.first_id + i)
                done += launch.size + 4
                if progress is not None and (i & 15 == 15 or i == len(chunk.launches) - 1):
                    progress(done)
                    done = 0
            reader.flush()
        except LaunchError as exc:
            if not isinstance(exc.cause, (DecodeError, *_UNDECODABLE)):
                raise exc.cause from None
            raise undecodable(Path(chunk.report), f"launch {exc.launch_id}: {exc}") from None
        finally:
            reader.close()
    return part_of(reader.rows, rules.results())


def part_of(rows: list[Any], rules: RuleResults) -> Part:
    """Rows of the raw launch frame (a dict per launch as :func:`decode_launch` gives them, or a
    :class:`~ncu_roof.read.native.values.Gathered`) as a :class:`Part`: the metrics in the order the
    launches first name them, as float64 (NaN where a launch lacks one)."""
    import numpy as np

    from ncu_roof.read.frame import IDENTITY_COLUMNS
    from ncu_roof.read.native.values import Gathered

    workloads = [(row.pop("_kind"), row["kernel"], row["id"], row.pop("_kernels_in"))
                 for row in rows if isinstance(row, dict) and "_kind" in row]
    idents = [row.ident if isinstance(row, Gathered) else tuple(map(row.get, IDENTITY_COLUMNS)) for row in rows]
    by_column = zip(*idents, strict=True) if rows else ([] for _ in IDENTITY_COLUMNS)
    columns: dict[str, Any] = {c: list(column) for c, column in zip(IDENTITY_COLUMNS, by_column, strict=True)}
    index = _metric_index(rows)
    matrix = np.full((len(rows), len(index)), math.nan)
    _fill_gathered(matrix, index, [(i, row) for i, row in enumerate(rows) if isinstance(row, Gathered)])
    for i, row in enumerate(rows):
        if not isinstance(row, Gathered):
            names = [c for c in row if c in index]
            matrix[i, [index[c] for c in names]] = np.array([row[c] for c in names], dtype="float64")
    columns.update(zip(index, matrix.T.copy(), strict=True))  # each column contiguous
    return Part(len(rows), columns, rules, workloads)


def _metric_index(rows: list[Any]) -> dict[str, int]:
    """Each metric's column, in the order the launches first name them."""
    from ncu_roof.read.frame import IDENTITY_COLUMNS
    from ncu_roof.read.native.values import Gathered

    identity = set(IDENTITY_COLUMNS)
    names: dict[str, None] = {}
    seen: set[int] = set()
    for row in rows:
        if not isinstance(row, Gathered):
            names.update(dict.fromkeys(c for c in row if c not in identity))
        elif id(row.keys) not in seen:  # launches read together share their names' tuple
            seen.add(id(row.keys))
            names.update(dict.fromkeys(row.keys))
    return {name: i for i, name in enumerate(names)}


def _fill_gathered(matrix: Any, index: dict[str, int], gathered: list[tuple[int, Any]]) -> None:
    """The gathered launches' values into ``matrix`` (a launch a row), a block of launches read
    together at once, and their opcode counts, each distinct set of counts at once."""
    import numpy as np

    blocks: dict[int, tuple[Any, list[int], list[int]]] = {}
    counted: dict[int, tuple[dict[str, float], list[int]]] = {}
    for i, row in gathered:
        block = blocks.setdefault(id(row.values), (row, [], []))
        block[1].append(i)
        block[2].append(row.j)
        if row.counts:
            counted.setdefault(id(row.counts), (row.counts, []))[1].append(i)
    for first, at, js in blocks.values():
        cols = [index[c] for c in first.keys[: first.present]]
        matrix[np.ix_(at, cols)] = first.values[js]
    for counts, at in counted.values():
        matrix[np.ix_(at, [index[c] for c in counts])] = np.array(list(counts.values()), dtype="float64")


def plan(plain: Path, report: Path, chunk_bytes: int) -> tuple[list[Chunk], list[str], dict[str, Any]]:
    """The chunks (at least ``chunk_bytes`` of launches each, in file order) a report is read in,
    the notes about it (a format version newer than those tested) and how it was captured
    (:func:`~ncu_roof.read.native.blocks.run_conditions`)."""
    size = plain.stat().st_size
    if size == 0:
        raise ReportLoadError(f"{report} is empty: re-export the report (ncu --export {report.stem} ...)")
    with plain.open("rb") as fh:
        buf = FileBytes(fh.fileno(), size)
        found = index(buf, size, report)
        workloads = any(launch.kind != "kernel" for launch in found.launches)
        modules = source_kernels(buf, found) if workloads else {}
    notes = []
    if found.version not in TESTED_VERSIONS:
        if found.version > max(TESTED_VERSIONS):
            notes.append(f"report format version {found.version} is newer than the versions ncu-roof's reader "
                         f"was tested with ({', '.join(map(str, TESTED_VERSIONS))}); if numbers look wrong, "
                         f"read it with {FALLBACK}")
    if found.left_out:
        counts = " and ".join(f"{n} {kind} result{'s' * (n > 1)}" for kind, n in found.left_out.items())
        notes.append(f"{counts} stored in blocks beside results of another kind were left out, as Nsight Compute "
                     "leaves them out")
    if not found.launches:
        raise ReportLoadError(f"{report} holds no kernel launches: check the ncu filters used for the capture")
    used_tables = {launch.table for launch in found.launches}
    names = dict.fromkeys(n for t in sorted(used_tables) for n in found.tables[t] if "__" in n)
    notes += damaged_name_notes(list(names), what="metric")
    wants = {t: wanted(found.tables[t]) for t in used_tables}
    chunks: list[Chunk] = []
    start = nbytes = 0
    for i, launch in enumerate(found.launches):
        nbytes += launch.size + 4
        if nbytes >= chunk_bytes or i == len(found.launches) - 1:
            part = found.launches[start : i + 1]
            used = {launch.table for launch in part}
            chunks.append(Chunk(str(plain), str(report), start, part, {t: wants[t] for t in used}, modules))
            start, nbytes = i + 1, 0
    return chunks, notes, run_conditions(found.session)


def frame(parts: list[Part], notes: list[str], run: dict[str, Any] | None = None) -> Any:
    """The raw launch frame (see :mod:`ncu_roof.read.frame`) of a report's parts, in order:
    identity columns, then the metrics in the order the launches first name them, as float64
    (NaN where a launch lacks one); ``attrs["run"]`` says how it was captured."""
    import numpy as np
    import pandas as pd

    from ncu_roof.read.frame import IDENTITY_COLUMNS, workload_notes

    identity = set(IDENTITY_COLUMNS)
    names = dict.fromkeys(c for part in parts for c in part.columns)
    data: dict[str, Any] = {}
    for c in names:
        if c in identity:
            data[c] = [v for part in parts for v in part.columns[c]]
            continue
        pieces = [part.columns[c] if c in part.columns else np.full(part.n, np.nan) for part in parts]
        data[c] = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    out = pd.DataFrame(data)
    out.attrs["notes"] = [*notes, *workload_notes([w for part in parts for w in part.workloads])]
    out.attrs["kind"] = "ncu-rep"
    out.attrs["ncu_rule_results"] = RuleResults.concat([part.rules for part in parts])
    if run is not None:
        out.attrs["run"] = dict(run)
    return out


def load_native(path: str | Path, chunk_bytes: int = 1 << 62) -> Any:
    """The raw launch frame of one report, read in this process (``.ncu-repz``: through a
    temporary uncompressed copy)."""
    from ncu_roof.read.compressed import uncompressed

    path = Path(path)
    with uncompressed(path) as plain:
        chunks, notes, run = plan(plain, path, chunk_bytes)
        parts = [read_chunk(chunk) for chunk in chunks]
    return frame(parts, notes, run)
