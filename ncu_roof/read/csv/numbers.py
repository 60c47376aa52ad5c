"""Numbers as ncu prints them in a CSV export: printed strings (and their unit strings) in,
float64 in base units out.

One export is printed in one locale (``1,234.5``, ``1.234,5``, ``1 234,5``); :func:`decimal_mark`
reads which from the file's own numbers and refuses a file that mixes both or cannot tell.
Per-instance lists (``--print-metric-instances``) and text in a number column become NaN with a
note; an unknown unit drops its values with a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ncu_roof.errors import ReportLoadError
from ncu_roof.read import metrics as M
from ncu_roof.read.units import UnknownUnit, factor

_SPACES = str.maketrans("", "", " \u00a0\u202f'")
_NUMBER_CHARS = re.compile(r"^[-+]?[\d.,]*\d[\d.,]*$")


def _mark_evidence(value: str) -> str | None:
    """What one printed number says about the file's decimal mark: ``"."`` or ``","`` (sure),
    ``"?"`` (one mark followed by exactly three digits: a decimal or a thousands group), None
    (nothing: an integer, or not a number)."""
    text = value.strip().translate(_SPACES)
    if not _NUMBER_CHARS.match(text):
        return None
    text = text.lstrip("+-")
    dots, commas = text.count("."), text.count(",")
    if dots and commas:
        return "." if text.rfind(".") > text.rfind(",") else ","
    if dots + commas == 0:
        return None
    mark = "." if dots else ","
    if dots + commas > 1:  # 1,234,567 or 1.234.567: the repeated mark groups thousands
        return "," if mark == "." else "."
    whole, frac = text.split(mark)
    if len(frac) != 3 or whole in ("", "0") or len(whole) > 3:
        return mark
    return "?"


_INTEGER_UNITS = frozenset({"byte", "inst", "sector", "cycle", "request", "wavefront", "warp", "thread",
                            "block", "register", "transaction", "nsecond", "ns"})


def integer_valued(metric: str, unit: object) -> bool:
    """Whether ncu prints this metric as a whole number: a ``.sum`` counter (or a duration) in an
    unscaled count unit. Under any locale such a value has no decimals, so ``70.464`` of one
    can only be 70,464 with a thousands separator."""
    return (isinstance(unit, str) and unit.strip() in _INTEGER_UNITS
            and (metric.endswith(".sum") or metric.startswith("launch__")))


_DOT_DECIMAL = re.compile(r"^[-+]?\d*\.\d+$")
_DOT_OR_GROUP = r"^[-+]?[1-9]\d{0,2}\.\d{3}$"


def _column_evidence(values: pd.Series, integer: bool) -> dict[str, str]:
    """:func:`_mark_evidence` of a column's distinct strings (vectorized where the file is plain)."""
    if len(values) <= _FEW:
        return _few_evidence(values.tolist(), integer)
    found: dict[str, str] = {}
    marked = values[values.str.contains(r"[.,]", regex=True)]
    if marked.empty:
        return found
    odd = marked.str.contains(",", regex=False) | (marked.str.count(r"\.") > 1) | ~marked.str.match(_DOT_DECIMAL)
    for value in marked[odd]:
        kind = _mark_evidence(value)
        if kind == "?" and integer:
            kind = "," if "." in value else "."
        if kind is not None:
            found.setdefault(kind, value)
    plain = marked[~odd]
    if len(plain):
        group = plain.str.match(_DOT_OR_GROUP)
        if (~group).any():
            found.setdefault(".", plain[~group].iloc[0])
        if group.any():
            found.setdefault("," if integer else "?", plain[group].iloc[0])
    return found


_FEW = 64  # distinct strings below which a Python loop beats pandas' string methods


def _few_evidence(values: list[str], integer: bool) -> dict[str, str]:
    """:func:`_column_evidence` of a few strings, one at a time (the same answer, examples included)."""
    found: dict[str, str] = {}
    marked = [v for v in values if "." in v or "," in v]
    odd = ["," in v or v.count(".") > 1 or not _DOT_DECIMAL.match(v) for v in marked]
    for value in (v for v, o in zip(marked, odd, strict=True) if o):
        kind = _mark_evidence(value)
        if kind == "?" and integer:
            kind = "," if "." in value else "."
        if kind is not None:
            found.setdefault(kind, value)
    plain = [v for v, o in zip(marked, odd, strict=True) if not o]
    group = [re.match(_DOT_OR_GROUP, v) is not None for v in plain]
    if not all(group):
        found.setdefault(".", plain[group.index(False)])
    if any(group):
        found.setdefault("," if integer else "?", plain[group.index(True)])
    return found


def _grouped_counter(column: pd.Series) -> str | None:
    """A whole-number counter the C parser read as numbers: its first value with decimals (``70.464``,
    which can only be 70,464 with a thousands separator), as ``%g``; None where it has none."""
    if column.dtype == np.float64:
        numbers = column.to_numpy()
        fractional = numbers[np.isfinite(numbers) & (numbers != np.round(numbers))]
        return f"{fractional[0]:g}" if len(fractional) else None
    if column.dtype.kind in "iu" and isinstance(column.dtype, np.dtype):
        return None  # integers: no decimals
    values = column.dropna()
    found = values[np.isfinite(values) & (values != np.round(values))]
    return f"{found.iloc[0]:g}" if len(found) else None


def decimal_mark(columns: Iterable[tuple[pd.Series, bool]], path: Path) -> str:
    """The decimal mark of one export, from its own numbers: ``columns`` are (values, whether
    they are integer-valued counters). ncu prints every number of an export in one locale
    (``1,234.5`` under C and en_US, ``1.234,5`` under de_DE, ``1 234,5`` under fr_FR). Refused
    when the file mixes both, or holds only numbers that read either way."""
    evidence: dict[str, str] = {}
    for column, integer in columns:
        if pd.api.types.is_numeric_dtype(column.dtype):  # read by the C parser: plain C-locale numbers
            if integer and (example := _grouped_counter(column)) is not None:
                evidence.setdefault(",", example)
            continue  # not a whole-number counter: says nothing
        values = column.dropna()
        if not len(values):
            continue
        for kind, example in _column_evidence(pd.Series(values.unique()).astype(str), integer).items():
            evidence.setdefault(kind, example)
    if "." in evidence and "," in evidence:
        raise ReportLoadError(
            f"{path} mixes decimal marks ({evidence['.']!r} reads with a decimal point, "
            f"{evidence[',']!r} with a decimal comma), so its numbers cannot be read safely; "
            f"re-export it whole under one locale (LC_ALL=C ncu --import R.ncu-rep --csv --page raw > R.csv)"
        )
    if "," in evidence:
        return ","
    if "?" in evidence and "." not in evidence:
        raise ReportLoadError(
            f"{path} holds numbers such as {evidence['?']!r} that read either as a decimal or with a "
            f"thousands separator, and no number that tells which: re-export it with LC_ALL=C "
            f"(LC_ALL=C ncu --import R.ncu-rep --csv --page raw > R.csv)"
        )
    return "."


def parse_numbers(values: pd.Series, decimal: str = ".", notes: list[str] | None = None) -> pd.Series:
    """Strings -> float64 in the file's convention (``decimal`` is its decimal mark; the other
    mark and spaces group thousands); per-instance lists (``--print-metric-instances``) left
    out with a note. Text that is not a number becomes NaN. A long column of few distinct
    strings (launches repeated, counters of one value) parses each distinct string once."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.astype("float64")
    if isinstance(values.dtype, pd.CategoricalDtype):  # each category that stands in the column parsed once
        codes = values.cat.codes.to_numpy()
        found = codes >= 0
        counts = np.bincount(codes[found], minlength=len(values.cat.categories))
        used = counts > 0
        distinct = pd.Series(np.asarray(values.cat.categories, dtype=object)[used], dtype=object)
        parsed = np.full(len(used), np.nan)
        parsed[used] = _parse_text(distinct, distinct.notna(), decimal, notes, counts[used])
        numbers = np.full(len(codes), np.nan)
        numbers[found] = parsed[codes[found]]
        return pd.Series(numbers, index=values.index)
    text = values.astype(object)
    if len(text) < 1000:
        is_text = text.map(lambda v: isinstance(v, str))
        return pd.Series(_parse_text(text, is_text, decimal, notes, None), index=values.index)
    codes, uniques = pd.factorize(text)
    if 4 * len(uniques) >= len(text):
        return pd.Series(_parse_text(text, text.notna(), decimal, notes, None), index=values.index)
    distinct = pd.Series(uniques, dtype=object)
    found = codes >= 0
    counts = np.bincount(codes[found], minlength=len(uniques))
    parsed = _parse_text(distinct, distinct.notna(), decimal, notes, counts)
    numbers = np.full(len(text), np.nan)
    numbers[found] = parsed[codes[found]]
    return pd.Series(numbers, index=values.index)


def _parse_text(text: pd.Series, is_text: pd.Series, decimal: str, notes: list[str] | None,
                counts: np.ndarray | None) -> np.ndarray:
    """:func:`parse_numbers` of object cells, ``is_text`` where a cell is read as text; ``counts``
    the times each cell stands in the column (None: once)."""
    if not is_text.any():
        return np.asarray(pd.to_numeric(text, errors="coerce"), dtype="float64")
    if len(text) <= _FEW:
        return _parse_few(text.tolist(), is_text.tolist(), decimal, notes, counts)
    listed = text.str.contains(";", regex=False, na=False)
    if listed.any():
        if notes is not None:
            times = int(listed.sum()) if counts is None else int(counts[listed.to_numpy(dtype=bool)].sum())
            notes.append(f"{times} values are per-instance lists (--print-metric-instances): "
                         "left out; export without that option for totals")
        text = text.where(~listed, None)
    grouping = "," if decimal == "." else "."
    cleaned = text.str.translate(_SPACES).str.replace(grouping, "", regex=False)
    if decimal == ",":
        cleaned = cleaned.str.replace(",", ".", regex=False)
    cleaned = cleaned.where(is_text, text)
    return np.asarray(pd.to_numeric(cleaned, errors="coerce"), dtype="float64")


def _parse_few(cells: list[object], is_text: list[bool], decimal: str, notes: list[str] | None,
               counts: np.ndarray | None) -> np.ndarray:
    """:func:`_parse_text` of a few cells, one at a time (the same numbers and notes)."""
    listed = [isinstance(v, str) and ";" in v for v in cells]
    if any(listed) and notes is not None:
        times = sum(listed) if counts is None else int(counts[np.asarray(listed, dtype=bool)].sum())
        notes.append(f"{times} values are per-instance lists (--print-metric-instances): "
                     "left out; export without that option for totals")
    grouping = "," if decimal == "." else "."

    def clean(value: object, text: bool, cut: bool) -> object:
        if not text:
            return value
        if cut or not isinstance(value, str):
            return None
        value = value.translate(_SPACES).replace(grouping, "")
        return value.replace(",", ".") if decimal == "," else value

    cleaned = [clean(v, t, c) for v, t, c in zip(cells, is_text, listed, strict=True)]
    return np.asarray(pd.to_numeric(pd.Series(cleaned, dtype=object), errors="coerce"), dtype="float64")


def unit_factor(unit: object, notes: list[str], what: str) -> float:
    """units.factor, NaN (with a note) for a unit string it does not know; an empty unit on a
    duration means ncu's base unit, nanoseconds."""
    if not (isinstance(unit, str) and unit.strip()) and (base := M.ncu_base_unit(what)) is not None:
        notes.append(f"no unit for {what}: read as ncu's base unit, {base}")
        unit = base
    try:
        return factor(unit if isinstance(unit, str) else None)
    except UnknownUnit:
        notes.append(f"unknown unit {unit!r} for {what}: its values were dropped (unknown)")
        return float("nan")



def column_numbers(raw: pd.Series, decimal: str, notes: list[str] | None = None,
                    metric: str = "a metric") -> pd.Series | None:
    """A column as float64; None for a string column (a string-valued metric). Text in a number
    column becomes NaN with a note."""
    values = parse_numbers(raw, decimal, notes)
    if pd.api.types.is_numeric_dtype(raw.dtype):
        return values
    unread = raw.notna() & values.isna()  # text, or a per-instance list
    if not unread.any():
        return values
    listed_cells = raw[unread].astype(object).str.contains(";", regex=False, na=False)
    if values.isna().all() and not listed_cells.any():
        return None  # a string-valued metric: not a number
    note_text_values(raw[unread][~listed_cells], metric, notes)
    return values


def note_text_values(bad: pd.Series, metric: str, notes: list[str] | None) -> None:
    """A note on the values of a number column that are text (read as unknown)."""
    if len(bad) and notes is not None:
        notes.append(f"{len(bad)} value(s) of {metric} are not numbers (e.g. {str(bad.iloc[0])[:40]!r}): unknown")
