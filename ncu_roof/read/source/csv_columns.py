"""Nsight Compute's source-page CSV export read column by column: the file's bytes in; out, its
function blocks (:class:`Block`), the blocks the row-by-row reader of :mod:`ncu_roof.read.source.csv`
finds, or None for an export of a shape read only row by row.

The export is cut at its header rows; the pieces under one header (blocks with the same columns)
are one pass of pandas' C parser, read without joining them: the counters as float64 (each
column's own name read as missing, so the header row leaves the column numeric), text only in the
first two columns, the address, the SASS and the last column (empty where a row is cut short). The
block rows and source lines are then found with numpy: 474,000 rows read in about 2 s of CPU, not
20. Read row by row instead (None here): source text (``--print-source cuda``), carriage returns,
a last line without its line break, a header whose first column is not ``Address`` or ``Line No``
or that is not quoted as ncu quotes it, a row cut short, block rows without a name, a row naming
``Address`` and ``Source`` (a header in another order), a block whose columns change inside it,
addresses past 2^63.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

STARTS = ("Kernel Name", "Function Name")  # a block's first row: its function
HEADS = ("Address", "Line No")  # a header row's first column
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")
_MISSING = ["", "-", "n/a"]
_HEADER_LINE = re.compile(rb'\n"(?:Address|Line No)",')


@dataclass
class Block:
    """One function's instructions in one launch."""

    function: str
    file: str | None
    pcs: np.ndarray  # int64
    sass: list[str]
    lines: np.ndarray  # int64, -1 where no source line is known
    values: dict[str, np.ndarray]  # counter -> float64, one per instruction


def same_blocks(a: list[Block], b: list[Block]) -> bool:
    """Whether two launches' blocks hold the same functions, addresses, counts and lines (an unknown
    count is never the same as another)."""
    return len(a) == len(b) and all(
        x.function == y.function and np.array_equal(x.pcs, y.pcs) and x.values.keys() == y.values.keys()
        and all(np.array_equal(x.values[k], y.values[k]) for k in x.values) and np.array_equal(x.lines, y.lines)
        for x, y in zip(a, b, strict=True))


@dataclass
class _Columns:
    """One header's columns: the address, the SASS, those read as text, counter -> its column."""

    header: list[str]
    at: int
    source: int
    texts: list[int]
    counters: dict[str, int]


def _columns(line: bytes, names: Mapping[str, str]) -> _Columns | None:
    header = next(csv.reader([line.decode("utf-8")]))
    if header[0] not in HEADS or "Address" not in header or len(header) < 2:
        return None
    at = header.index("Address")
    source = next((i for i in range(at + 1, len(header)) if header[i] == "Source"), at + 1)
    texts = sorted({0, 1, at} | ({source} if source < len(header) else set()))
    counters: dict[str, int] = {}  # two headers can name one counter: the first is read
    for i, name in enumerate(header):
        column = names.get(name) if i not in (at, source) else None
        if column is not None and column not in counters:
            counters[column] = i
    if any(i in texts for i in counters.values()):
        return None
    return _Columns(header, at, source, texts, counters)


def _header_starts(data: bytes) -> list[int]:
    """Where each header line starts (ncu quotes every field)."""
    return [m.start() + 1 for m in _HEADER_LINE.finditer(data)]


def read_blocks(data: bytes, names: Mapping[str, str], number: Callable[[str], float]) -> list[Block] | None:
    """The export's blocks with instructions, in order; ``data`` is the file as UTF-8 without a
    byte-order mark, ``names`` maps a header to its counter, ``number`` reads one count. None where the
    export is not of the shape read here."""
    if not data.endswith(b"\n") or b"\r" in data or b'"File Name"' in data:
        return None
    starts = _header_starts(data)
    if not starts:
        return None
    bounds = [*starts, len(data)]
    groups: dict[bytes, list[int]] = {}  # a header line -> its pieces, in file order
    for k, at in enumerate(starts):
        groups.setdefault(data[at: data.find(b"\n", at)], []).append(k)
    parsed = []
    rows = np.zeros(len(starts), dtype=np.int64)  # each piece's rows
    for line, pieces in groups.items():
        columns = _columns(line, names)
        table = None if columns is None else _parse(_Pieces(data, [(bounds[k], bounds[k + 1]) for k in pieces]),
                                                     columns)
        if columns is None or table is None:
            return None
        heads = np.flatnonzero(np.isin(table[0].to_numpy(dtype=object), HEADS))
        if len(heads) != len(pieces) or heads[0] != 0:
            return None  # a header row the bytes did not show: read row by row
        rows[pieces] = np.diff([*heads, len(table)])
        parsed.append((columns, table, pieces))
    before = [r for r in csv.reader(io.StringIO(data[: starts[0]].decode("utf-8"))) if r]
    first_row = np.concatenate([[0], np.cumsum(rows)]) + len(before)
    out = _Rows.empty(int(first_row[-1]), before)
    for columns, table, pieces in parsed:
        if not out.fill(table, np.concatenate([np.arange(first_row[k], first_row[k + 1]) for k in pieces]),
                        columns, number):
            return None
    return out.blocks(len(starts))


class _Pieces:
    """Pieces of a buffer read as one binary file, without joining them."""

    mode = "rb"

    def __init__(self, data: bytes, ranges: list[tuple[int, int]]) -> None:
        self._view, self._ranges, self._at = memoryview(data), ranges, 0

    def read(self, size: int = -1) -> bytes:
        while self._ranges and self._ranges[0][0] + self._at >= self._ranges[0][1]:
            self._ranges, self._at = self._ranges[1:], 0
        if not self._ranges:
            return b""
        start, end = self._ranges[0]
        start += self._at
        end = end if size < 0 else min(end, start + size)
        self._at += end - start
        return bytes(self._view[start:end])


class _Rows:
    """The export's rows in file order, column by column: the first two cells, the address, the SASS,
    each counter (NaN where its header lacks it), and which header each row is under."""

    def __init__(self, first: np.ndarray, second: np.ndarray, address: np.ndarray, sass: np.ndarray,
                 group: np.ndarray, line_mode: np.ndarray, counters: dict[str, np.ndarray],
                 layouts: list[_Columns]) -> None:
        self.first, self.second, self.address, self.sass = first, second, address, sass
        self.group, self.line_mode, self.counters, self.layouts = group, line_mode, counters, layouts
        self.short = np.zeros(len(first), dtype=bool)  # a row without its header's last field
        self.named = np.zeros(len(first), dtype=bool)  # a row holding "Address" and "Source"

    @classmethod
    def empty(cls, n: int, before: list[list[str]]) -> _Rows:
        """Room for ``n`` rows, the rows before the first header (a block's name, its file) first."""
        def text() -> np.ndarray:
            return np.full(n, "", dtype=object)

        out = cls(text(), text(), text(), text(), np.full(n, -1), np.zeros(n, dtype=bool), {}, [])
        for i, row in enumerate(before):
            out.first[i], out.second[i] = row[0], row[1] if len(row) > 1 else ""
            out.named[i] = "Address" in row and "Source" in row
        return out

    def fill(self, table: Any, where: np.ndarray, columns: _Columns, number: Callable[[str], float]) -> bool:
        """The rows of the pieces under one header (parsed into ``table``) at ``where``; False where they
        are not of the shape read here (then the export is read row by row)."""
        cells = {i: table[i].to_numpy(dtype=object) for i in columns.texts}
        self.first[where], self.second[where], self.address[where] = cells[0], cells[1], cells[columns.at]
        if columns.source in cells:
            self.sass[where] = cells[columns.source]
        self.group[where] = len(self.layouts)
        self.short[where] = table[len(columns.header) - 1].to_numpy(dtype=object) == ""
        self.line_mode[where] = columns.header[0] == "Line No"
        self.layouts.append(columns)
        found = np.zeros(len(where), dtype=bool)
        for i in cells:
            found |= np.isin(cells[i], ("Address", "Source"))
        self.named[where] |= found
        for column, i in columns.counters.items():
            counted = _counts(table[i], number)
            if counted is None:
                return False
            self.counters.setdefault(column, np.full(len(self.first), np.nan))[where] = counted
        return True

    def blocks(self, headers: int) -> list[Block] | None:
        """The blocks, as the row-by-row reader finds them (None: a shape it alone reads); ``headers``:
        the header rows found by their bytes."""
        first, second = self.first, self.second
        starts = np.isin(first, STARTS)
        files = first == "File Path"
        heads = np.isin(first, HEADS)
        if ((starts | files) & (second == "")).any() or (first == "File Name").any():
            return None  # "Kernel Name" alone on its row, or source text
        if (~(starts | files | heads) & self.named).any() or heads.sum() != headers:
            return None  # a header in another order, or not quoted as ncu quotes it
        if (~(starts | files) & self.short).any():
            return None  # a row shorter than its header: the parser fills cells the row-by-row reader finds none in
        index = np.arange(len(first))
        last_start = np.maximum.accumulate(np.where(starts, index, -1))
        last_head = np.maximum.accumulate(np.where(heads, index, -1))
        rows = ~(starts | files | heads) & (last_start >= 0) & (last_head > last_start)
        lines, line_rows = self._lines(rows, last_start)
        rows &= ~line_rows
        addresses = _by_value(self.address, lambda v: int(v.strip(), 16) if _HEX.match(v.strip()) else -1)
        rows &= addresses >= 0
        where = np.flatnonzero(rows)
        if len(where) and addresses[where].max() >= 2**63:
            return None
        pcs = addresses[where].astype(np.int64)
        sass = _by_value(self.sass[where], str.strip)
        counted = {c: v[where] for c, v in self.counters.items()}
        last_file = np.maximum.accumulate(np.where(files, index, -1))
        owner = last_start[where]
        cuts = [0, *(np.flatnonzero(np.diff(owner)) + 1).tolist(), len(where)]
        blocks = []
        for a, b in zip(cuts, cuts[1:], strict=False):
            start, groups = int(owner[a]), self.group[where[a:b]]
            if (groups != groups[0]).any():
                return None  # the columns change inside a block
            file = second[last_file[start]] if first[start] == "Function Name" and last_file[start] >= 0 else None
            values = {c: counted[c][a:b] for c in self.layouts[groups[0]].counters}
            blocks.append(Block(second[start], file, pcs[a:b], sass[a:b].tolist(), lines[where[a:b]], values))
        return blocks

    def _lines(self, rows: np.ndarray, last_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's source line (-1 unknown), and the rows that give one (under a ``Line No`` header, a
        row with a first cell: the line of the instructions after it in its block)."""
        index = np.arange(len(rows))
        line_rows = rows & self.line_mode
        line_rows[line_rows] = _by_value(self.first[line_rows], lambda v: bool(v.strip()), bool)
        numbers = np.full(len(rows), -1, dtype=np.int64)
        numbers[line_rows] = _by_value(self.first[line_rows], lambda v: int(v) if v.strip().isdigit() else -1, np.int64)
        last_line = np.maximum.accumulate(np.where(line_rows, index, -1))
        return np.where(last_line > last_start, numbers[np.maximum(last_line, 0)], -1), line_rows


def _parse(text: Any, columns: _Columns) -> Any:
    import pandas as pd

    header, last = columns.header, len(columns.header) - 1
    numbers = sorted(set(columns.counters.values()) - {last})
    missing: Any = {i: [*_MISSING, header[i]] for i in numbers}  # a column's own name: its header row
    texts = sorted({*columns.texts, last})  # the last as text: "" where a row is cut short
    try:
        return pd.read_csv(
            text, header=None, names=range(len(header)), usecols=texts + numbers,
            dtype=dict.fromkeys(texts, object), keep_default_na=False, na_values=missing,
            encoding="utf-8", low_memory=False,
        )
    except (pd.errors.ParserError, ValueError, OverflowError):
        return None


def _by_value(values: np.ndarray, func: Callable[[Any], Any], dtype: Any = object) -> np.ndarray:
    """``func`` of each cell, asked once per distinct cell."""
    import pandas as pd

    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    answers = np.empty(len(uniques), dtype=dtype)
    answers[:] = [func(u) for u in uniques.tolist()]
    return answers[codes]


def _counts(column: Any, number: Callable[[str], float]) -> np.ndarray | None:
    """A counter column as ``number`` reads it (NaN where it is not a count); None where a cell names
    ``Address`` or ``Source`` (a header in another order)."""
    values = column.to_numpy()
    if values.dtype.kind in "fiu":
        out = values.astype(np.float64)
        return np.where(np.isfinite(out) & (out >= 0), out, np.nan)
    if any(v in ("Address", "Source") for v in set(values.tolist())):
        return None
    return _by_value(values, lambda v: number(str(v)) if isinstance(v, (str, bool)) else np.nan, np.float64)
