"""The tidy table as CSV text: what ``DataFrame.to_csv(index=False)`` writes (floats as ``%.17g``,
NaN and missing values as empty fields), byte for byte, built column by column.

Launches repeat their values (a few kernels, a few devices, the same sources), so each column's
distinct values are formatted and quoted once (by :mod:`csv` itself, with pandas' settings), and
adjacent columns whose values come in few combinations (a device's attributes, a kernel's launch
shape) are joined once per combination: the rows are joined from what is left. ``to_csv`` formats
and quotes every cell through several calls; on 10,000 launches of 175 columns this is about eight
times faster. Columns of a kind it does not format (categories, dates, nullable integers, numbers
in text columns) make :func:`csv_text` fall back to ``to_csv`` for the whole table.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

import numpy as np
import pandas as pd

# A column's fields: for each row a code into its texts (each text once; the last is the empty field)
Coded = tuple[np.ndarray, list[str]]


def csv_text(table: pd.DataFrame) -> str:
    """``table.to_csv(index=False)`` with float columns written as ``%.17g`` (``-0`` kept)."""
    plain = pd.DataFrame(table, copy=False)  # without attrs: a column taken from it copies none
    plain.attrs = {}
    columns = [_column_codes(plain.iloc[:, i]) for i in range(plain.shape[1])] if table.shape[1] > 1 else [None]
    if any(fields is None for fields in columns):
        return _floats_as_text(table).to_csv(index=False)
    header = ",".join(_quoted(str(name) for name in table.columns))
    rows = _rows([c for c in columns if c is not None], len(table)) if len(table) else []
    return "\n".join([header, *rows, ""])


def _rows(columns: list[Coded], rows: int) -> list[str]:
    """Each row's fields joined by commas: runs of adjacent columns with few combinations of values
    (at most a quarter as many as rows) joined per combination first."""
    few = max(rows // 4, 1)
    runs: list[Coded] = []
    codes, texts = columns[0]
    for more, more_texts in columns[1:]:
        joined = _join(codes, texts, more, more_texts, few)
        if joined is None:
            runs.append((codes, texts))
            codes, texts = more, more_texts
        else:
            codes, texts = joined
    runs.append((codes, texts))
    cells = [np.array(texts, dtype=object)[codes].tolist() for codes, texts in runs]
    return cells[0] if len(cells) == 1 else list(map(",".join, zip(*cells, strict=True)))


def _join(codes: np.ndarray, texts: list[str], more: np.ndarray, more_texts: list[str],
          few: int) -> Coded | None:
    """Two adjacent columns as one (each combination's fields joined once), or None where they may
    hold more than ``few`` combinations (or so many that a table of them all is not cheap)."""
    size = len(texts) * len(more_texts)
    if size > 4 * len(codes):
        return None
    pairs = codes * len(more_texts) + more
    seen = np.bincount(pairs, minlength=size) > 0
    found = np.flatnonzero(seen)
    if len(found) > few:
        return None
    first, second = np.divmod(found, len(more_texts))
    return (np.cumsum(seen) - 1)[pairs], [f"{texts[a]},{more_texts[b]}" for a, b in zip(first.tolist(),
                                                                                     second.tolist(), strict=True)]


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


def _float_codes(values: np.ndarray) -> Coded:
    """Float cells as ``%.17g`` (NaN empty, ``-0`` apart from ``0``), each distinct value once."""
    codes, distinct = pd.factorize(values)  # NaN: code -1
    texts = [f"{v:.17g}" for v in distinct.tolist()]
    codes = np.where(codes < 0, len(texts), codes)
    zero = values == 0  # factorize holds 0.0 and -0.0 as one value
    if zero.any():
        texts[int(codes[np.flatnonzero(zero)[0]])] = "0"
        negative = zero & np.signbit(values)
        if negative.any():
            codes[negative] = len(texts) + 1
            return codes, [*texts, "", "-0"]
    return codes, [*texts, ""]


def _float_texts(values: np.ndarray) -> list[str]:
    """Float cells as ``%.17g`` (NaN empty, ``-0`` apart from ``0``)."""
    codes, texts = _float_codes(values)
    return np.array(texts, dtype=object)[codes].tolist()  # type: ignore[no-any-return]


def _column_codes(column: pd.Series) -> Coded | None:
    """A column's CSV fields as codes into their texts, or None for a column this module does not
    format."""
    kind = column.dtype.kind
    if kind == "f" and isinstance(column.dtype, np.dtype):
        return _float_codes(column.to_numpy(dtype="float64"))
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
    return np.where(codes < 0, len(texts), codes), [*texts, ""]  # code -1 (missing): the empty field


def _floats_as_text(table: pd.DataFrame) -> pd.DataFrame:
    """Float columns as ``%.17g`` text, for ``to_csv``."""
    out = table.copy(deep=False)
    for name in out.columns[(out.dtypes.map(lambda d: d.kind) == "f").to_numpy()]:
        values = out[name].to_numpy(dtype="float64", na_value=np.nan)
        out[name] = np.array(_float_texts(values), dtype=object) if len(values) else values
    return out
