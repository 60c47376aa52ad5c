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


def _blocks(rows: Iterable[list[str]], texts: dict[str, str]) -> Iterator[_Block]:
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
                yield block
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
        yield block


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


def _is_kernel(block: _Block) -> bool:
    if block.sass and _ENTRY.match(block.sass[0]):
        return True
    return not block.function.startswith(_INTERNAL) and not (block.sass and block.sass[0])


def _same(a: list[_Block], b: list[_Block]) -> bool:
    return len(a) == len(b) and all(x.function == y.function and x.pcs == y.pcs and x.values == y.values
                                    and x.lines == y.lines for x, y in zip(a, b, strict=True))


def _grouped(blocks: list[_Block]) -> Iterator[list[_Block]]:
    """Blocks grouped into launches. ``cuda,sass`` prints one function a launch (its kernel: a second
    block of it under another file is the same launch). ``sass`` prints a launch's kernel (whose first
    instruction sets the stack pointer) and the device functions it ran, those before or after it as
    the export's first block says."""
    if any(b.file is not None for b in blocks):
        current: list[_Block] = []
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
    owner = {k: k for k in kernels}
    for i in range(len(blocks)):  # a device function goes with the kernel beside it nearer in address
        if i in owner:
            continue
        before = max((k for k in kernels if k < i), default=None)
        after = min((k for k in kernels if k > i), default=None)
        near = [k for k in (before, after) if k is not None]
        owner[i] = min(near, key=lambda k: abs(blocks[k].pcs[0] - blocks[i].pcs[0]))
    for k in kernels:
        yield [blocks[i] for i in sorted(i for i, o in owner.items() if o == k)]


def _launches(blocks: Iterable[_Block]) -> Iterator[list[_Block]]:
    """The launches; one that repeats the launch before it exactly is a copy (ncu 2024.1 prints the
    launches of some reports twice) and is dropped."""
    last: list[_Block] | None = None
    for launch in _grouped(list(blocks)):
        if last is None or not _same(launch, last):
            yield launch
        last = launch


def _once(launches: list[list[_Block]]) -> list[list[_Block]]:
    """The launches of an export written twice into one file (the whole sequence repeated) once: their
    sums would double."""
    half = len(launches) // 2
    if half and len(launches) % 2 == 0 and all(_same(a, b) for a, b in zip(launches[:half], launches[half:],
                                                                             strict=True)):
        return launches[:half]
    return launches


def _frame(blocks: list[_Block], launch: int, report: str) -> Any:
    import pandas as pd

    kernel = next((b.function for b in blocks if _is_kernel(b)), blocks[-1].function)
    parts = []
    for b in blocks:
        pcs = np.array(b.pcs, dtype=np.int64)
        start = min(min(p.pcs) for p in blocks if p.function == b.function)
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


def iter_instructions(path: str | Path, ids: Iterable[int] | None = None,
                      report: str | None = None) -> Iterator[tuple[int, Any, dict[str, str]]]:
    """Each wanted launch's (id: its order in the export, per-instruction frame, source texts)."""
    path = Path(path)
    wanted = None if ids is None else set(ids)
    texts: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8-sig", errors="replace") as fh:
        rows = csv.reader(fh)
        first = next(rows, None)
        if first is None or first[0] not in ("Kernel Name", "File Path", "File Name"):
            raise ReportLoadError(f"{path.name} is not an ncu source-page export (ncu --import R --page source "
                                  "--csv --print-source sass)")
        launches = _once(list(_launches(_blocks([first, *rows], texts))))
    for launch, blocks in enumerate(launches):
        if wanted is None or launch in wanted:
            yield launch, _frame(blocks, launch, report or str(path)), texts
    if not launches and texts:
        raise ReportLoadError(f"{path.name} holds source text only (--print-source cuda): export with "
                              "--print-source sass or cuda,sass for the counters")
