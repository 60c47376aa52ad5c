"""The raw page of a CSV export (``--page raw``): its body and header in, the raw launch frame
out (before the file-wide ``attrs``).

One row per launch, one column per metric and, usually, a units row under the header. An identity
column named twice must agree (else the file is refused); a metric in two columns is unknown on the
launches where they disagree.
"""

from __future__ import annotations

import csv as _csv
from pathlib import Path

import numpy as np
import pandas as pd

from ncu_roof.errors import ReportLoadError
from ncu_roof.read import metrics as M
from ncu_roof.read.csv.columns import (
    IDENTITY_SOURCES,
    base_name,
    metric_for_header,
    nvtx_columns,
    read_columns,
    unique_names,
    valid_ids,
)
from ncu_roof.read.csv.file import EXPORT_HINT
from ncu_roof.read.csv.identity import assemble_frame, identity_columns
from ncu_roof.read.csv.numbers import column_numbers, decimal_mark, integer_valued, unit_factor


def load_wide(body: bytes, header: list[str], path: Path, notes: list[str]) -> pd.DataFrame:
    """The raw launch frame of a raw-page body; remarks appended to ``notes``."""
    nvtx = nvtx_columns(header)
    keep = [h for h in header if h in IDENTITY_SOURCES or metric_for_header(h) is not None] + nvtx
    units = _units_row(body, header)
    strings = {h for h in header if metric_for_header(h) in M.STRING_METRICS}
    text = {*IDENTITY_SOURCES, *nvtx, *strings}

    skipped: list[str] = []
    coded = _text_metrics(body, header, keep, text)

    def read(as_text: set[str] | None) -> tuple[pd.DataFrame, dict[str, str]]:
        grouped = coded if as_text is not None else set()
        table = read_columns(body, header, keep, path, skip_units=units is not None,
                             text=None if as_text is None else as_text | grouped, coded=grouped)
        if not _coded_agree(table, grouped):  # the first lines misled: read as the C parser types it
            table = read_columns(body, header, keep, path, skip_units=units is not None, text=as_text)
        table = valid_ids(_first_of_duplicates(table, [*IDENTITY_SOURCES, *nvtx], path), skipped)
        return table, {c: m for c in table.columns if (m := metric_for_header(base_name(c))) is not None}

    table, metric_cols = read(text)
    if units is None and metric_cols:
        notes.append("no units row under the header: values were taken as printed (base units)")
    decimal = decimal_mark(((table[c], integer_valued(m, (units or {}).get(c))) for c, m in metric_cols.items()),
                           path)
    if decimal == "," and any(pd.api.types.is_numeric_dtype(table[c].dtype) for c in metric_cols):
        skipped.clear()
        table, metric_cols = read(None)  # the C parser took "70.464" for a decimal: read the text again
    notes += skipped
    if decimal == "," and "CC" in table:
        table["CC"] = table["CC"].str.replace(",", ".", regex=False)
    device = table[M.DEVICE_NAME] if M.DEVICE_NAME in table else None
    values, problems = _wide_metrics(table, metric_cols, units or {}, decimal, notes)
    identity = identity_columns(table, path, device, values)
    frame = assemble_frame(identity, values)
    if problems.notna().any():
        frame["notes"] = problems.to_numpy()
    return frame


_SAMPLE_LINES = 64


def _text_metrics(body: bytes, header: list[str], keep: list[str], text: set[str]) -> set[str]:
    """The metric columns whose cells in the file's first lines hold a ``,`` or ``;`` (a thousands
    separator, a per-instance list): text for the C parser, read as categoricals so that each distinct
    string is made, read and parsed once (:func:`_coded_agree` checks the guess). A column named twice
    is left out."""
    end = -1
    for _ in range(_SAMPLE_LINES):
        end = body.find(b"\n", end + 1)
        if end < 0:
            return set()
    lines = body[: end + 1].decode("utf-8", "replace").splitlines()[1:]
    wanted = {i for i, h in enumerate(header) if h in keep and h not in text and header.count(h) == 1}
    found: set[int] = set()
    for fields in _csv.reader(lines):
        found.update(i for i in wanted - found if i < len(fields) and ("," in fields[i] or ";" in fields[i]))
    return {header[i] for i in found}


def _coded_agree(table: pd.DataFrame, coded: set[str]) -> bool:
    """Whether every column read as a categorical holds a string with ``,`` or ``;`` (so the C parser
    would have read it as text too)."""
    return all(isinstance(table[c].dtype, pd.CategoricalDtype)
               and any("," in v or ";" in v for v in table[c].cat.categories) for c in coded if c in table)


def _first_of_duplicates(table: pd.DataFrame, names: list[str], path: Path) -> pd.DataFrame:
    """An identity column named twice: the copies must agree (then one is kept), else refused."""
    for column in [c for c in table.columns if c != base_name(c) and base_name(c) in names]:
        first = table[base_name(column)]
        if not first.fillna("").equals(table[column].fillna("")):
            raise ReportLoadError(
                f"{path} has two {base_name(column)!r} columns with different values: re-export it "
                f"unmodified ({EXPORT_HINT})"
            )
        table = table.drop(columns=column)
    return table


def _units_row(body: bytes, header: list[str]) -> dict[str, str] | None:
    """The units row under a raw-page header (its ID field is empty), as column -> unit (a
    header named twice gets ``#2``, as in :func:`ncu_roof.read.csv.columns.read_columns`)."""
    first = body.find(b"\n")
    if first < 0:
        return None
    end = body.find(b"\n", first + 1)
    line = body[first + 1: None if end < 0 else end].decode("utf-8", "replace").rstrip("\r")
    fields = next(_csv.reader([line]), [])
    if "ID" not in header or len(fields) <= header.index("ID") or fields[header.index("ID")].strip():
        return None
    return dict(zip(unique_names(header), fields, strict=False))


def _wide_metrics(
    table: pd.DataFrame, metric_cols: dict[str, str], units: dict[str, str], decimal: str, notes: list[str],
) -> tuple[pd.DataFrame, pd.Series]:
    """One float column per metric; a metric in two columns that disagree on a launch is unknown
    there (neither copy is kept), with a note on that launch."""
    columns: dict[str, np.ndarray] = {}
    problems = pd.Series(np.nan, index=table.index, dtype=object)
    for column, metric in metric_cols.items():
        if metric in M.STRING_METRICS:
            continue
        raw = table[column]
        if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
            numbers = raw.to_numpy(dtype=np.float64)  # read by the C parser: as column_numbers gives it
        elif (parsed := column_numbers(raw, decimal, notes, metric)) is not None:
            numbers = parsed.to_numpy(dtype=np.float64)
        else:
            continue
        values = numbers * unit_factor(units.get(column), notes, metric)
        if metric not in columns:
            columns[metric] = values
            continue
        before, after = pd.Series(columns[metric], index=table.index), pd.Series(values, index=table.index)
        clash = before.notna() & after.notna() & ~np.isclose(before, after, rtol=1e-6, atol=0.0)
        if clash.any():
            text = f"conflicting values for {metric} in two columns: kept neither (unknown)"
            problems = problems.where(~clash, problems.map(lambda p, t=text: t if not isinstance(p, str)
                                                             else f"{p}; {t}"))
        columns[metric] = before.where(before.notna(), after).where(~clash).to_numpy()
    return pd.DataFrame(columns, index=table.index), problems
