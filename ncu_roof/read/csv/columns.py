"""The columns of a CSV export: the body and its header in, a DataFrame of the columns worth
keeping out (identity columns, NVTX columns, the metrics the catalogue needs), as strings or
C-parsed floats, one row per data line with an integer launch ID.

Also what a header or a ``Metric Name`` names: an ncu metric id, a details-page label
(:data:`ncu_roof.read.metrics.DETAILS_LABELS`) or ``Label (metric)``.
"""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.errors import ReportLoadError
from ncu_roof.read import metrics as M

# CSV header -> identity column of the raw launch frame.
IDENTITY_SOURCES = {
    "ID": "id",
    "Process Name": "process",
    "Kernel Name": "kernel_demangled",
    "Stream": "stream",
    "Block Size": "block_dim",
    "Grid Size": "grid_dim",
    "CC": "cc",
}
_NA_VALUES = ["", "n/a", "N/A"]
_NVTX_STACK_RE = re.compile(r"push/?_?pop", re.IGNORECASE)
_NVTX_RANGE_RE = re.compile(r"start/?_?(?:stop|end)", re.IGNORECASE)
_TEXT_RE = re.compile(rb"[^\r\n]")
_LABEL_NAME_RE = re.compile(r"^.*\(([a-z0-9_]+__[A-Za-z0-9_.]+)\)$")


def metric_of_name(name: str) -> str:
    """The ncu metric a header or ``Metric Name`` names: a metric id as is, a display label
    through DETAILS_LABELS, ``Label (metric)`` (``--print-metric-name label-name``) by its id."""
    if name in M.DETAILS_LABELS:
        return M.DETAILS_LABELS[name]
    match = _LABEL_NAME_RE.match(name)
    return match.group(1) if match else name


def metric_for_header(name: str) -> str | None:
    """The ncu metric a wide column holds, or None when it is not needed."""
    if name in IDENTITY_SOURCES:
        return None
    metric = metric_of_name(name)
    return metric if M.is_needed(metric) else None


def nvtx_columns(header: list[str]) -> list[str]:
    """The headers that hold NVTX state (push/pop stacks, start/end ranges)."""
    return [h for h in header if _NVTX_STACK_RE.search(h) or _NVTX_RANGE_RE.search(h)]


def read_columns(
    body: bytes, header: list[str], keep: list[str], path: Path, skip_units: bool = False,
    text: set[str] | None = None, categories: set[str] | frozenset[str] = frozenset(),
    coded: set[str] | frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """``pd.read_csv`` of the kept columns (NaN where empty or n/a): those in ``text`` (all, when
    None) as strings, the others left to the C parser (float64 for plain C-locale numbers, strings
    otherwise; :func:`ncu_roof.read.csv.numbers.decimal_mark` then says how to read them). A header
    named twice gets ``#2``. Text columns in ``categories`` (few distinct values over many rows) are
    parsed as categories, each distinct string made once, and given as the same strings; those in
    ``coded`` too, and given as categoricals of those strings. In a read that is not all text (a raw
    page's: one row a launch, not millions of rows) they are parsed as strings, and those in ``coded``
    made categoricals here: pandas' categories, a block of rows at a time, take twice its strings' time."""
    wanted = set(keep)
    index = [i for i, name in enumerate(header) if name in wanted]
    texts = set(index) if text is None else {i for i in index if header[i] in text}
    grouped = {i for i in texts if header[i] in categories or header[i] in coded}
    late = set() if texts == set(index) else grouped
    as_text: Any = {i: "category" if i in grouped - late else str for i in texts}
    if _lines_at_most(body, 2 if skip_units else 1):
        as_text, grouped, late = str, set(), set()  # no data rows: pandas cannot map positional dtypes
    frame = _read_csv(body, index, as_text, skip_units, path, all_text=texts == set(index))
    frame.columns = unique_names([header[i] for i in index])
    for i, name in zip(index, frame.columns, strict=True):
        if i in late and header[i] in coded:
            frame[name] = frame[name].astype("category")
    grouped -= late  # the columns parsed as categories
    again = [i for i, name in zip(index, frame.columns, strict=True) if i in grouped
             and not _text_categories(frame[name])]
    if again:  # categories read as numbers ("007" -> 7): those columns as strings
        redo = _read_csv(body, again, str, skip_units, path)
        for i, column in zip(again, redo.columns, strict=True):
            frame[frame.columns[index.index(i)]] = redo[column].to_numpy()
    for i, name in zip(index, frame.columns, strict=True):
        if i in grouped and i not in again and header[i] not in coded:
            frame[name] = category_strings(frame[name])
    for column in [c for c in frame.columns if pd.api.types.is_object_dtype(frame[c].dtype)]:  # 30-digit ints
        values = frame[column]
        frame[column] = values.where(values.isna() | values.map(lambda v: isinstance(v, str)), values.astype(str))
    return frame


def _read_csv(body: bytes, index: list[int], dtype: Any, skip_units: bool, path: Path,
              all_text: bool = False) -> pd.DataFrame:
    """``pd.read_csv`` of the columns ``index``, the rows tokenized a block at a time (``low_memory``),
    not all of the file's fields held at once (a tenth of the read's time on 10,000 launches of 779
    columns). Where every column is read as text, a thousands mark that no export holds is given: pandas
    then keeps a categorical's categories as the strings read, not as numbers where all look like numbers
    (GH#56044), and no column is read as a number, so no block can guess another's type. Else a read whose
    blocks may have guessed a column's type apart is read again whole (:func:`_blocks_agree`)."""
    try:
        if all_text:
            return _parse(body, index, dtype, skip_units, "\x01", low_memory=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.DtypeWarning)  # blocks of text and of numbers
            try:
                frame = _parse(body, index, dtype, skip_units, None, low_memory=True)
            except Exception:  # noqa: BLE001 - read again whole, which says what is wrong if anything is
                frame = None
        if frame is not None and _blocks_agree(frame):
            return frame
        return _parse(body, index, dtype, skip_units, None, low_memory=False)
    except (pd.errors.ParserError, ValueError, OverflowError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReportLoadError(
            f"{path} is not a well-formed CSV ({first}); re-export it with ncu --csv"
        ) from exc


def _parse(body: bytes, index: list[int], dtype: Any, skip_units: bool, thousands: str | None,
           low_memory: bool) -> pd.DataFrame:
    return pd.read_csv(
        io.BytesIO(body), usecols=index, dtype=dtype, thousands=thousands, keep_default_na=False,
        na_values=_NA_VALUES, skiprows=[1] if skip_units else None, encoding="utf-8", encoding_errors="replace",
        low_memory=low_memory,
    )


def _blocks_agree(frame: pd.DataFrame) -> bool:
    """Whether a read a block of rows at a time is the read of the whole (pandas' ``low_memory``, whose
    blocks of text and of numbers are refused by its DtypeWarning; no categories are parsed in such a read,
    :func:`read_columns`): no column of Python objects (ints too long for 64 bits, read whole), no float of
    2**53 or more (a block of integers joined to one of decimals: each integer made a float, not read as
    one), no unsigned integers."""
    if any(isinstance(dtype, np.dtype) and dtype.kind in "Ou" for dtype in frame.dtypes):
        return False
    floats = frame.select_dtypes("float64").to_numpy()
    return not (np.abs(floats) >= 2.0**53).any()


def _text_categories(column: pd.Series) -> bool:
    """Whether a categorical column's categories are the strings as printed (pandas reads categories
    that all look like numbers as numbers)."""
    categories = column.cat.categories
    return len(categories) == 0 or pd.api.types.is_string_dtype(categories.dtype) and all(
        isinstance(v, str) for v in categories)


def category_strings(column: pd.Series) -> pd.Series:
    """A categorical column of strings as the string column ``dtype=str`` reads (NaN where missing)."""
    strings = pd.array(list(column.cat.categories), dtype="str")
    return pd.Series(strings.take(column.cat.codes.to_numpy(), allow_fill=True), index=column.index)


def line_ends(body: bytes) -> np.ndarray:
    """Where each line of ``body`` ends (its line break; the last line's last byte where it has none)."""
    data = np.frombuffer(body, dtype=np.uint8)
    step = 1 << 22  # a block at a time (no byte-sized mask of the whole body), in cache
    ends = [np.flatnonzero(data[at: at + step] == ord("\n")) + at for at in range(0, len(data), step)]
    if not body.endswith(b"\n"):
        ends.append(np.array([len(body) - 1]))
    return np.concatenate(ends) if ends else np.zeros(0, dtype=np.int64)


def rows_are_lines(body: bytes, ends: np.ndarray, rows: int) -> bool:
    """Whether each of ``rows`` data rows read from ``body`` (its header first; ``ends``: its
    :func:`line_ends`) is one line: no blank line, no quoted field across lines."""
    if len(ends) - 1 != rows:
        return False
    width = np.diff(ends, prepend=-1)
    data = np.frombuffer(body, dtype=np.uint8)
    blank = (width == 1) | ((width == 2) & (data[np.maximum(ends - 1, 0)] == ord("\r")))
    return not blank.any()


def some_rows(body: bytes, ends: np.ndarray, header: list[str], keep: list[str], path: Path, rows: np.ndarray,
              categories: set[str] | frozenset[str] = frozenset(),
              coded: set[str] | frozenset[str] = frozenset()) -> pd.DataFrame:
    """:func:`read_columns` (all as text) of the data rows numbered ``rows`` (ascending) alone, cut from
    the body by its lines (``ends``: :func:`line_ends`; :func:`rows_are_lines` must hold), a run of
    consecutive lines at a time."""
    starts = np.concatenate([[0], ends[:-1] + 1])
    lines = rows.astype(np.int64) + 1  # line 0 is the header
    run = np.flatnonzero(np.diff(lines, prepend=-2) != 1)  # where each run of consecutive lines begins
    first, last = lines[run], np.append(lines[run[1:] - 1], lines[-1:])
    view = memoryview(body)
    text = b"".join([view[: ends[0] + 1], *(view[a: b + 1] for a, b in zip(starts[first].tolist(),
                                                                            ends[last].tolist(), strict=True))])
    if not text.endswith(b"\n"):
        text += b"\n"
    return read_columns(text, header, keep, path, categories=categories, coded=coded)


def _lines_at_most(body: bytes, n: int) -> bool:
    """Whether ``body`` holds at most ``n`` lines (trailing line breaks not counted), looking only at
    its first ``n`` line breaks and what follows them."""
    end = -1
    for _ in range(n):
        end = body.find(b"\n", end + 1)
        if end < 0:
            return True
    return _TEXT_RE.search(body, end) is None


def unique_names(names: list[str]) -> list[str]:
    """Header names with a second ``X`` renamed ``X#2`` (a third ``X#3``, ...)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def base_name(column: str) -> str:
    """The header a column was read from (``X#2`` -> ``X``)."""
    return re.sub(r"#\d+$", "", column)


def valid_ids(table: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Keep rows with an integer ID (drops stray lines after the CSV); each distinct ID read once
    where a launch has many rows (a details page) or the IDs are a categorical."""
    ids = _launch_ids(table["ID"])
    bad = ids.isna()
    if bad.any():
        notes.append(f"skipped {int(bad.sum())} row(s) without a numeric launch ID")
        table = table[~bad].reset_index(drop=True)
        ids = ids[~bad].reset_index(drop=True)
    return table.assign(ID=ids.astype("int64"))


def _launch_ids(column: pd.Series) -> pd.Series:
    """The ID column as numbers (NaN where it is not one), as ``pd.to_numeric`` reads each cell."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, distinct = column.cat.codes.to_numpy(), np.asarray(column.cat.categories, dtype=object)
        if not (codes >= 0).all():  # a missing ID: numbers with NaN, as pd.to_numeric gives them
            numbers = pd.to_numeric(pd.Series(distinct), errors="coerce").to_numpy(dtype=np.float64)
            return pd.Series(np.where(codes >= 0, numbers[np.maximum(codes, 0)], np.nan), index=column.index)
    else:
        codes, uniques = pd.factorize(column)
        distinct = np.asarray(uniques, dtype=object)
        if not (4 * len(distinct) < len(codes) and (codes >= 0).all()):
            return pd.to_numeric(column, errors="coerce")
    return pd.Series(pd.to_numeric(pd.Series(distinct), errors="coerce").to_numpy()[codes], index=column.index)


def column_or_missing(table: pd.DataFrame, name: str) -> pd.Series:
    """``table[name]``, or a column of NaN where the export has no such column."""
    return table[name] if name in table else pd.Series(np.nan, index=table.index, dtype=object)


def map_unique(values: pd.Series, func) -> pd.Series:  # type: ignore[no-untyped-def]
    """Apply ``func`` once per distinct non-missing value (100k launches, a few kernels)."""
    uniques = values.dropna().unique()
    return values.map({u: func(u) for u in uniques})
