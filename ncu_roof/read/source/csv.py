"""Nsight Compute's source page as CSV (``ncu --import R --page source --csv --print-source
sass``, ``cuda,sass`` or ``cuda``): the export in; out, the per-instruction table of
:mod:`ncu_roof.read.source`, one frame per launch, with the SASS of each instruction.

The export is a run of blocks, one per function of each launch: ``"Kernel Name",NAME`` (``sass``)
or ``"File Path",FILE`` and ``"Function Name",NAME`` (``cuda,sass``), a header, then one row per
instruction (its address as loaded, its SASS, its counters; ``-`` where it has none). With
``cuda,sass`` each source line's row (``Line No``, its text) comes before the instructions it
compiled to; ``cuda`` alone prints each file's text (``"File Name",FILE``), read as source text.
The export does not say which launch a block belongs to: ``cuda,sass`` prints one block a launch
(its kernel's instructions that have a line), ``sass`` a launch's kernel (its first instruction
sets the stack pointer) and the device functions it ran, before or after it: each goes with the
kernel beside it nearer in address (a heuristic); a launch is named by its kernel. A launch that
repeats the one before it exactly is taken for a copy (ncu 2024.1 prints some reports' launches
twice). Launch ids are the order of the launches in the export, which prints launches
without Source Counters too: they match the report's only where every launch has them.
"""

from __future__ import annotations

import bisect
import csv
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ncu_roof.errors import ReportLoadError
from ncu_roof.read import metrics
from ncu_roof.read.csv.file import is_utf8
from ncu_roof.read.source.csv_columns import Block, read_blocks, same_blocks
from ncu_roof.read.source.frame import frame_columns

# the export's stall columns -> the table's (ncu spells them short here)
_STALLS = {"barrier": "barrier", "dispatch": "dispatch_stall", "drain": "drain", "imc": "imc_miss",
           "lg": "lg_throttle", "long_sb": "long_scoreboard", "math": "math_pipe_throttle", "membar": "membar",
           "mio": "mio_throttle", "misc": "misc", "no_inst": "no_instruction", "not_selected": "not_selected",
           "selected": "selected", "short_sb": "short_scoreboard", "sleep": "sleeping", "tex": "tex_throttle",
           "wait": "wait", "branch_resolving": "branch_resolving"}
COLUMNS = {**metrics.SOURCE_PAGE_COLUMNS, **{f"stall_{k}": f"samples_{v}" for k, v in _STALLS.items()}}


@dataclass
class _Block:
    """One function's instructions in one launch."""

    function: str
    file: str | None = None
    pcs: list[int] = field(default_factory=list)
    sass: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)

    def frozen(self) -> Block:
        """The block as the column-wise reader gives it."""
        values = {k: np.array(v, dtype=np.float64) for k, v in self.values.items()}
        return Block(self.function, self.file, np.array(self.pcs, dtype=np.int64), self.sass,
                     np.array(self.lines, dtype=np.int64), values)


_GROUPED = re.compile(r"^\d{1,3}(,\d{3})+(\.\d+)?$")  # 1,234,567: thousands separators
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")


def _number(cell: str) -> float:
    """A count as ncu prints it; unknown (NaN) where it is not a count: not a number, infinite,
    negative, or a decimal comma ("1,5", which dropping the comma would read 10x too large)."""
    text = cell.strip()
    if "," in text:
        if not _GROUPED.match(text):
            return float("nan")
        text = text.replace(",", "")
    if text in ("", "-", "n/a"):
        return float("nan")
    try:
        value = float(text)
    except ValueError:
        return float("nan")
    return value if math.isfinite(value) and value >= 0 else float("nan")


def _blocks(rows: Iterable[list[str]], texts: dict[str, str]) -> Iterator[Block]:
    """The export's function blocks, in order; each file's text (``cuda``) into ``texts``."""
    block: _Block | None = None
    header: list[str] = []
    file: str | None = None
    source_file: str | None = None  # a ``cuda`` block's file, whose text follows
    line = -1
    for row in rows:
        if not row:
            continue
        head = row[0]
        if head in ("Kernel Name", "Function Name") and len(row) > 1:
            if block is not None and block.pcs:
                yield block.frozen()
            block, header, line, source_file = _Block(row[1], file if head == "Function Name" else None), [], -1, None
        elif head == "File Path" and len(row) > 1:
            file = row[1]
        elif head == "File Name" and len(row) > 1:
            source_file, header = row[1], []
            texts.setdefault(source_file, "")
        elif head in ("Address", "Line No") or ("Address" in row and "Source" in row):  # columns in any order
            header = row
        elif source_file is not None and header[:2] == ["Line No", "Source"] and len(header) == 2:
            texts[source_file] += (row[1] if len(row) > 1 else "") + "\n"
        elif block is not None and header:
            line = _row(block, header, row, line)
    if block is not None and block.pcs:
        yield block.frozen()


def _row(block: _Block, header: list[str], row: list[str], line: int) -> int:
    """Add an instruction row to ``block``; return the source line the next instructions are under."""
    at = header.index("Address")
    if header[0] == "Line No" and row[0].strip():
        return int(row[0]) if row[0].strip().isdigit() else -1
    address = row[at].strip() if at < len(row) else ""
    if not _HEX.match(address):  # not an instruction row (with or without the 0x ncu prints)
        return line
    source = next((i for i in range(at + 1, len(header)) if header[i] == "Source"), at + 1)  # the SASS column
    block.pcs.append(int(address, 16))
    block.sass.append(row[source].strip() if source < len(row) else "")
    block.lines.append(line)
    seen = set()
    for i, (name, cell) in enumerate(zip(header, row, strict=False)):  # by name: columns in any order
        column = COLUMNS.get(name) if i not in (at, source) else None
        if column is not None and column not in seen:  # two headers can name one column (samples)
            seen.add(column)
            block.values.setdefault(column, []).append(_number(cell))
    return line


_INTERNAL = ("__cuda_", "__internal_", "__nv_")  # CUDA's own device routines (division, pow, ...)
# a kernel's first instruction sets its stack pointer from the constant bank; a device function's does not
_ENTRY = re.compile(r"^(?:IMAD\.MOV\.U32|MOV|LDC)\s+R1,\s*(?:RZ,\s*RZ,\s*)?c\[0x0\]\[0x2[0-9a-f]\]")


def _is_kernel(block: Block) -> bool:
    if block.sass and _ENTRY.match(block.sass[0]):
        return True
    return not block.function.startswith(_INTERNAL) and not (block.sass and block.sass[0])


def _grouped(blocks: list[Block]) -> Iterator[list[Block]]:
    """Blocks grouped into launches. ``cuda,sass`` prints one function a launch (its kernel: a second
    block of it under another file is the same launch). ``sass`` prints a launch's kernel (whose first
    instruction sets the stack pointer) and the device functions it ran, those before or after it as
    the export's first block says."""
    if any(b.file is not None for b in blocks):
        current: list[Block] = []
        for block in blocks:
            if current and block.function == current[-1].function and block.file != current[-1].file:
                current.append(block)
                continue
            if current:
                yield current
            current = [block]
        if current:
            yield current
        return
    if not blocks:
        return
    kernels = [i for i, b in enumerate(blocks) if _is_kernel(b)] or [len(blocks) - 1]
    owned: dict[int, list[Block]] = {k: [] for k in kernels}
    for i, block in enumerate(blocks):  # a device function goes with the kernel beside it nearer in address
        at = bisect.bisect_left(kernels, i)
        if at < len(kernels) and kernels[at] == i:
            owned[i].append(block)
            continue
        near = [k for k in (kernels[at - 1] if at else None, kernels[at] if at < len(kernels) else None)
                if k is not None]
        owned[min(near, key=lambda k: abs(int(blocks[k].pcs[0]) - int(block.pcs[0])))].append(block)
    yield from owned.values()


def _launches(blocks: Iterable[Block]) -> Iterator[list[Block]]:
    """The launches; one that repeats the launch before it exactly is a copy (ncu 2024.1 prints the
    launches of some reports twice) and is dropped."""
    last: list[Block] | None = None
    for launch in _grouped(list(blocks)):
        if last is None or not same_blocks(launch, last):
            yield launch
        last = launch


def _once(launches: list[list[Block]]) -> list[list[Block]]:
    """The launches of an export written twice into one file (the whole sequence repeated) once: their
    sums would double."""
    half = len(launches) // 2
    if half and len(launches) % 2 == 0 and all(same_blocks(a, b) for a, b in zip(launches[:half], launches[half:],
                                                                             strict=True)):
        return launches[:half]
    return launches


def _frame(blocks: list[Block], launch: int, report: str) -> Any:
    import pandas as pd

    kernel = next((b.function for b in blocks if _is_kernel(b)), blocks[-1].function)
    parts = []
    for b in blocks:
        pcs = np.array(b.pcs, dtype=np.int64)
        start = min(int(p.pcs.min()) for p in blocks if p.function == b.function)
        lines = np.array(b.lines, dtype=np.int64)
        data: dict[str, Any] = {"report": report, "id": launch, "kernel": kernel, "function": b.function, "pc": pcs,
                                "offset": pcs - start, "file": [b.file if n > 0 else None for n in b.lines],
                                "line": np.where(lines > 0, lines, -1), "sass": [s or None for s in b.sass]}
        for column, values in b.values.items():
            data[column] = np.array(values, dtype=np.float64)
        parts.append(pd.DataFrame(data))
    out = pd.concat(parts, ignore_index=True)
    # an address twice in a launch is a device function's block of another launch put with this one
    out = out.drop_duplicates("pc").sort_values("pc", ignore_index=True)
    return frame_columns(out)


def _read_launches(path: Path) -> tuple[list[list[Block]], dict[str, str]]:
    """The export's launches (each its blocks) and source texts by file."""
    texts: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8-sig", errors="replace") as fh:
        rows = csv.reader(fh)
        first = next(rows, None)
        if first is None or first[0] not in ("Kernel Name", "File Path", "File Name"):
            raise ReportLoadError(f"{path.name} is not an ncu source-page export (ncu --import R --page source "
                                  "--csv --print-source sass)")
        data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
        blocks = read_blocks(data, COLUMNS, _number) if is_utf8(data) else None
        del data
        launches = _once(list(_launches(blocks if blocks is not None else _blocks([first, *rows], texts))))
    if not launches and texts:
        raise ReportLoadError(f"{path.name} holds source text only (--print-source cuda): export with "
                              "--print-source sass or cuda,sass for the counters")
    return launches, texts


def iter_instructions(path: str | Path, ids: Iterable[int] | None = None,
                      report: str | None = None) -> Iterator[tuple[int, Any, dict[str, str]]]:
    """Each wanted launch's (id: its order in the export, per-instruction frame, source texts)."""
    path = Path(path)
    wanted = None if ids is None else set(ids)
    launches, texts = _read_launches(path)
    for launch, blocks in enumerate(launches):
        if wanted is None or launch in wanted:
            yield launch, _frame(blocks, launch, report or str(path)), texts


@dataclass
class LaunchTable:
    """The wanted launches' per-instruction frames as one (what concatenating
    :func:`iter_instructions`' frames gives), with each launch's id, kernel and counters."""

    frame: Any
    launches: list[tuple[int, str, list[str]]]
    texts: dict[str, str]


def launch_table(path: str | Path, ids: Iterable[int] | None = None, report: str | None = None
                 ) -> LaunchTable | None:
    """:func:`iter_instructions`' frames built at once; None where a text column would be of another
    kind in one launch than in another (its instructions all without a file, SASS or operation, and
    another's with one), which concatenating keeps as it is."""
    import pandas as pd

    path = Path(path)
    wanted = None if ids is None else set(ids)
    launches, texts = _read_launches(path)
    chosen = [(n, blocks) for n, blocks in enumerate(launches) if wanted is None or n in wanted]
    parts: dict[str, list[Any]] = {k: [] for k in ("id", "kernel", "function", "pc", "offset", "line", "file", "sass")}
    values: dict[str, list[np.ndarray]] = {c: [] for c in dict.fromkeys(c for _, bs in chosen for b in bs
                                                                        for c in b.values)}
    listed = []
    for launch, blocks in chosen:
        kernel = next((b.function for b in blocks if _is_kernel(b)), blocks[-1].function)
        listed.append((launch, kernel, list(dict.fromkeys(c for b in blocks for c in b.values))))
        for b in blocks:
            n = len(b.pcs)
            start = min(int(p.pcs.min()) for p in blocks if p.function == b.function)
            for key, part in (("id", np.full(n, launch)), ("kernel", [kernel] * n), ("function", [b.function] * n),
                              ("pc", b.pcs), ("offset", b.pcs - start), ("line", np.where(b.lines > 0, b.lines, -1)),
                              ("file", [b.file if k > 0 else None for k in b.lines.tolist()]),
                              ("sass", [s or None for s in b.sass])):
                parts[key].append(part)
            for column, got in values.items():
                got.append(b.values[column] if column in b.values else np.full(n, np.nan))
    if not chosen:
        return LaunchTable(None, [], texts)
    data: dict[str, Any] = {k: np.concatenate(v) for k, v in parts.items() if k in ("id", "pc", "offset", "line")}
    data.update({k: [x for part in parts[k] for x in part] for k in ("kernel", "function", "file", "sass")})
    operations = _operations(data["sass"])
    if operations is not None:
        data["operation"] = operations
    if not all(_one_kind(data[k], [len(b.pcs) for _, bs in chosen for b in bs]) for k in ("file", "sass", "operation")
               if k in data):
        return None
    frame = pd.DataFrame({"report": report or str(path), **data, **{c: np.concatenate(v) for c, v in values.items()}})
    # an address twice in a launch is a device function's block of another launch put with this one
    frame = frame[~frame.duplicated(["id", "pc"])]
    frame = frame.iloc[np.lexsort((frame["pc"].to_numpy(), frame["id"].to_numpy()))].reset_index(drop=True)
    return LaunchTable(frame_columns(frame), listed, texts)


def _operations(sass: list[str | None]) -> list[str | None] | None:
    """Each instruction's operation as :func:`~ncu_roof.read.source.frame.frame_columns` reads it from
    the SASS (None without one), asked once per distinct SASS; None where it reads none."""
    import pandas as pd

    distinct = list(dict.fromkeys(s for s in sass if s is not None))
    read = frame_columns(pd.DataFrame({"sass": pd.Series(distinct, dtype=object)}))
    if "operation" not in read:
        return None
    known = dict(zip(distinct, read["operation"].tolist(), strict=True))
    return [None if s is None else known[s] for s in sass]


def _one_kind(cells: list[Any], block_rows: list[int]) -> bool:
    """Whether every block's cells are all None, or every block's are not: a frame's column is of one
    kind (objects) where all its cells are None, of another (text) where one is not."""
    present = np.array([c is not None for c in cells], dtype=bool)
    if present.all() or not present.any():
        return True
    per_block = np.add.reduceat(present, np.cumsum([0, *block_rows[:-1]]))
    return bool((per_block > 0).all() or (per_block == 0).all())
