"""The tidy table as CSV text: what ``DataFrame.to_csv(index=False)`` writes (floats as ``%.17g``,
NaN and missing values as empty fields), byte for byte, built column by column.

Launches repeat their values (a few kernels, a few devices, the same sources), so each column's
distinct values are formatted and quoted once (by :mod:`csv` itself, with pandas' settings) and
the rows are joined from whole columns. ``to_csv`` formats and quotes every cell through several
calls; on 10,000 launches of 163 columns this is about five times faster. Columns of a kind it
does not format (categories, dates, nullable integers, numbers in text columns) make
:func:`csv_text` fall back to ``to_csv`` for the whole table.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

import numpy as np
import pandas as pd


def csv_text(table: pd.DataFrame) -> str:
    """``table.to_csv(index=False)`` with float columns written as ``%.17g`` (``-0`` kept)."""
    columns = [_column_fields(table[name]) for name in table.columns] if table.shape[1] > 1 else [None]
    if any(fields is None for fields in columns):
        return _floats_as_text(table).to_csv(index=False)
    header = ",".join(_quoted(str(name) for name in table.columns))
    rows = map(",".join, zip(*columns, strict=True)) if len(table) else iter(())
    return "\n".join([header, *rows, ""])


def _quoted(values: Iterable[str]) -> list[str]:
    """Each value as a CSV field the way pandas writes it (``csv.QUOTE_MINIMAL``, ``"`` doubled)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    out = []
    for value in values:
        writer.writerow([value, ""])  # a second field: a lone empty field is written as ""
        out.append(buffer.getvalue()[:-2])
        buffer.seek(0)
        buffer.truncate()
    return out


def _float_texts(values: np.ndarray) -> list[str]:
    """Float cells as ``%.17g`` (NaN empty, ``-0`` apart from ``0``), each distinct value once."""
    codes, distinct = pd.factorize(values)  # NaN: code -1
    texts = np.array([*(f"{v:.17g}" for v in distinct.tolist()), ""], dtype=object)
    cells = texts[codes]
    zero = values == 0  # factorize holds 0.0 and -0.0 as one value
    if zero.any():
        cells[zero] = np.where(np.signbit(values[zero]), "-0", "0")
    return cells.tolist()  # type: ignore[no-any-return]


def _column_fields(column: pd.Series) -> list[str] | None:
    """A column's CSV fields, or None for a column this module does not format."""
    kind = column.dtype.kind
    if kind == "f" and isinstance(column.dtype, np.dtype):
        return _float_texts(column.to_numpy(dtype="float64"))
    if kind in "iub" and isinstance(column.dtype, np.dtype):
        codes, uniques = pd.factorize(column)
        texts = [str(v) for v in uniques.tolist()]
    elif kind in "OU" or isinstance(column.dtype, pd.StringDtype):
        codes, uniques = pd.factorize(column, use_na_sentinel=True)  # None, NaN and NA: empty fields
        values = list(uniques)
        if not all(type(v) is str for v in values):
            return None
        texts = _quoted(values)
    else:
        return None
    table = np.array([*texts, ""], dtype=object)  # code -1 (missing) picks the last, empty field
    return table[codes].tolist()  # type: ignore[no-any-return]


def _floats_as_text(table: pd.DataFrame) -> pd.DataFrame:
    """Float columns as ``%.17g`` text, for ``to_csv``."""
    out = table.copy(deep=False)
    for name in out.columns[(out.dtypes.map(lambda d: d.kind) == "f").to_numpy()]:
        values = out[name].to_numpy(dtype="float64", na_value=np.nan)
        out[name] = np.array(_float_texts(values), dtype=object) if len(values) else values
    return out
