"""Nsight Compute CSV exports -> the raw launch frame (see :mod:`ncu_roof.read.frame`).

Three shapes are read:

- the raw page (``ncu --import R.ncu-rep --csv --page raw``): one row per launch, one column
  per metric, a units row under the header;
- the details page (``--page details --csv``): one row per (launch, metric) with ``Section Name,
  Metric Name, Metric Unit, Metric Value`` (metric *labels* such as ``Duration``), and in newer
  versions rule columns that metric rows leave out;
- the stdout of ``ncu --csv --metrics ...``: the details shape under the section "Command line
  profiler metrics", after the profiled program's own output and ``==PROF==`` lines.

Only identity columns and the metrics :func:`ncu_roof.read.metrics.is_needed` accepts (or whose
details label maps through :data:`ncu_roof.read.metrics.DETAILS_LABELS`) are kept: a raw page holds
hundreds of columns the roofline never uses, and skipping them keeps the frame small and the
parse fast. Values are converted to base units (seconds, bytes, hertz, counts); empty and
``n/a`` values become NaN.
"""

from __future__ import annotations

import csv as _csv
import io
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.errors import InputError, ReportLoadError
from ncu_roof.read import metrics as M
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.ncu_rules import RuleResults, rule_record
from ncu_roof.read.units import UnknownUnit, factor

__all__ = ["load_csv", "short_kernel_name"]

# CSV header -> identity column of the raw launch frame.
_IDENTITY_SOURCES = {
    "ID": "id",
    "Process Name": "process",
    "Kernel Name": "kernel_demangled",
    "Stream": "stream",
    "Block Size": "block_dim",
    "Grid Size": "grid_dim",
    "CC": "cc",
}
_LONG = ("Metric Name", "Metric Unit", "Metric Value")
_RULES = ("Section Name", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
          "Estimated Speedup")
_NA_VALUES = ["", "n/a", "N/A"]
_EXPORT_HINT = "make one with: ncu --import R.ncu-rep --csv --page raw > R.csv"

_LOOSE_HEADER_RE = re.compile(rb'^[^\r\n]*"?Kernel Name"?(?:,|\r?$)[^\r\n]*', re.MULTILINE)
_ERROR_RE = re.compile(rb"^==ERROR==[^\r\n]*", re.MULTILINE)
_LOG_LINE_RE = re.compile(rb"^==[A-Z]+==")
_NVTX_STACK_RE = re.compile(r"push/?_?pop", re.IGNORECASE)
_NVTX_RANGE_RE = re.compile(r"start/?_?(?:stop|end)", re.IGNORECASE)
_DEFAULT_DOMAINS = ("", "<default domain>", "default")


# --- public API ----------------------------------------------------------------------------
def load_csv(path: str | Path) -> pd.DataFrame:
    """Read an Nsight Compute CSV export (raw page, details page or ``--metrics`` stdout).

    Returns the raw launch frame: identity columns, then one float64 column per needed ncu
    metric in base units. ``attrs["notes"]`` lists remarks, ``attrs["ncu_rule_results"]`` the
    rule rows of a details export (the schema in :mod:`ncu_roof.read.frame`). Raises
    :class:`ReportLoadError` (one line) for unreadable input.
    """
    given, path = str(path), Path(path)
    notes: list[str] = []
    data = _decode(_read_bytes(path), path, notes)
    start = _header_offset(data, path)
    body, cut = _complete_rows(data[start:])
    notes += cut
    header = _parse_header(body)
    if "Metric Name" in header or "Metric Value" in header:
        frame = _load_long(body, header, path, notes)
    else:
        frame = _load_wide(body, header, path, notes)
    frame["report"] = given
    if frame.empty:
        notes.append("the CSV has a header but no kernel launches")
    frame.attrs.setdefault("ncu_rule_results", [])
    frame.attrs["notes"] = notes
    frame.attrs["device_hints"] = device_hints(data[:start])
    return frame


_DEVICE_LINE = re.compile(r"(?i)\b(?:gpu|device)\b[^:\n]{0,20}:\s*\"?([A-Za-z][^\n\"(,]{2,80})")


def device_hints(preamble: bytes) -> list[str]:
    """Candidate GPU names the profiled program printed before the CSV (``Detected GPU: X``,
    ``device: X (sm_120)``); the caller keeps only names the device table knows."""
    text = preamble.decode("utf-8", "replace")
    return [m.group(1).strip() for m in _DEVICE_LINE.finditer(text) if not m.group(0).startswith("==")]


def short_kernel_name(name: str) -> str:
    """The function name of a demangled signature, like ncu's ``--print-kernel-base function``.

    >>> short_kernel_name("void ns::Kernel<float, (bool)1>(T1 *, int)")
    'Kernel'
    """
    text = _strip_trailing_group(name.strip(), "(", ")")
    text = _strip_templates(text)
    text = text.rsplit("::", 1)[-1].strip()
    return text.rsplit(" ", 1)[-1] or name


# --- reading and locating the CSV ----------------------------------------------------------
def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def _decode(data: bytes, path: Path, notes: list[str]) -> bytes:
    """UTF-8 bytes of the file: NUL bytes refused (a damaged or binary file), a file that is not
    UTF-8 read as Windows-1252 (else Latin-1) with a note, never with U+FFFD in its names."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ReportLoadError(
            f"{path} holds a NUL byte (line {line}): it is damaged or not a text CSV export; copy it "
            f"again or re-export it ({_EXPORT_HINT})"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        try:
            text, codec = data.decode("cp1252"), "Windows-1252"
        except UnicodeDecodeError:
            text, codec = data.decode("latin-1"), "Latin-1"
        notes.append(f"the file is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}): "
                     f"read as {codec}")
        return text.encode("utf-8")
    return data


def _lines_with(data: bytes, needle: bytes) -> list[tuple[int, bytes]]:
    """(offset, line) of every line holding ``needle`` (bytes.find: C speed on large files)."""
    found = []
    pos = data.find(needle)
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        found.append((start, data[start:end]))
        pos = data.find(needle, end)
    return found


def _is_header(line: bytes) -> bool:
    fields = next(_csv.reader([line.decode("utf-8", "replace").rstrip("\r")]), [])
    return "ID" in fields and "Kernel Name" in fields


def _header_offset(data: bytes, path: Path) -> int:
    """Byte offset of the CSV header line (everything before it is preamble): the first line with
    both an ``ID`` and a ``Kernel Name`` field, in any order. A second such line means two exports
    were joined into one file: refused."""
    starts = [start for start, line in _lines_with(data, b"Kernel Name") if _is_header(line)]
    if not starts:
        raise _no_header_error(data, path)
    if len(starts) > 1:
        lines = [data.count(b"\n", 0, s) + 1 for s in starts[:3]]
        raise ReportLoadError(
            f"{path} holds {len(starts)} CSV exports one after another (headers at lines "
            f"{', '.join(map(str, lines))}): split it into one file per export"
        )
    return starts[0]


def _no_header_error(data: bytes, path: Path) -> ReportLoadError:
    if not data.strip():
        return ReportLoadError(f"{path} is empty; export a report into it ({_EXPORT_HINT})")
    error = _ERROR_RE.search(data)
    if error is not None:
        line = error.group(0).decode("utf-8", "replace").strip()
        return ReportLoadError(
            f"{path} holds no CSV, only ncu log output ending in '{line}': the profiled run "
            "failed; fix it and re-run ncu"
        )
    lines = [ln for ln in data[: 1 << 20].splitlines() if ln.strip()]
    if all(_LOG_LINE_RE.match(ln) for ln in lines):
        return ReportLoadError(
            f"{path} holds only ncu log lines and no CSV: no kernel was profiled; re-run ncu "
            "on a program that launches kernels"
        )
    if re.search(rb'(?m)^\W{0,4}"?ID"?\s*[;\t]\s*"?Process ID', data[: 1 << 20]):
        return ReportLoadError(
            f"{path} uses ';' or tabs between fields, not the commas ncu writes: re-export it with "
            f"ncu --csv (and LC_ALL=C), or convert it back to commas; {_EXPORT_HINT}"
        )
    loose = _LOOSE_HEADER_RE.search(data)
    if loose is not None:
        fields = next(_csv.reader([loose.group(0).decode("utf-8", "replace")]))
        return _missing_columns_error(path, ["ID"], fields)
    return ReportLoadError(
        f"{path} is not an Nsight Compute CSV export (no header with ID and Kernel Name); "
        f"{_EXPORT_HINT}"
    )


def _missing_columns_error(
    path: Path, missing: Iterable[str], header: list[str]
) -> ReportLoadError:
    names = ", ".join(missing)
    return ReportLoadError(
        f"{path} lacks required column(s) {names} (has {len(header)} columns); re-export it "
        f"unmodified with ncu --csv ({_EXPORT_HINT})"
    )


def _complete_rows(body: bytes) -> tuple[bytes, list[str]]:
    """Drop a last line that was cut short (truncated file); say so in the notes."""
    if body.endswith(b"\n"):
        return body, []
    cut = body.rfind(b"\n")
    if cut < 0:
        return body, []
    last = body[cut + 1:].rstrip(b"\r")
    if not last.strip() or _looks_complete(body, last):
        return body, []
    note = "the file ends in the middle of a row (truncated?); the incomplete last row was skipped"
    return body[: cut + 1], [note]


def _looks_complete(body: bytes, last: bytes) -> bool:
    if last.count(b'"') % 2 or not last.endswith((b'"', b",")):
        return False
    header = _parse_header(body)
    fields = next(_csv.reader([last.decode("utf-8", "replace")]), [])
    if "Metric Value" in header:
        return len(fields) > header.index("Metric Value")
    return len(fields) >= len(header)


def _parse_header(body: bytes) -> list[str]:
    end = body.find(b"\n")
    line = (body if end < 0 else body[:end]).decode("utf-8", "replace").rstrip("\r")
    return next(_csv.reader([line]))


def _read_columns(
    body: bytes, header: list[str], keep: list[str], path: Path, skip_units: bool = False,
    text: set[str] | None = None,
) -> pd.DataFrame:
    """``pd.read_csv`` of the kept columns (NaN where empty or n/a): those in ``text`` (all, when
    None) as strings, the others left to the C parser (float64 for plain C-locale numbers, strings
    otherwise; :func:`decimal_mark` then says how to read them). A header named twice gets ``#2``."""
    wanted = set(keep)
    index = [i for i, name in enumerate(header) if name in wanted]
    as_text: Any = str if text is None else dict.fromkeys((i for i in index if header[i] in text), str)
    if body.rstrip(b"\r\n").count(b"\n") + 1 <= (2 if skip_units else 1):
        as_text = str  # no data rows: pandas cannot map positional dtypes
    try:
        frame = pd.read_csv(
            io.BytesIO(body), usecols=index, dtype=as_text,
            keep_default_na=False, na_values=_NA_VALUES, skiprows=[1] if skip_units else None,
            encoding="utf-8", encoding_errors="replace", low_memory=False,
        )
    except (pd.errors.ParserError, ValueError, OverflowError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReportLoadError(
            f"{path} is not a well-formed CSV ({first}); re-export it with ncu --csv"
        ) from exc
    frame.columns = _unique_names([header[i] for i in index])
    for column in [c for c in frame.columns if pd.api.types.is_object_dtype(frame[c].dtype)]:  # 30-digit ints
        values = frame[column]
        frame[column] = values.where(values.isna() | values.map(lambda v: isinstance(v, str)), values.astype(str))
    return frame


def _unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _base_name(column: str) -> str:
    return re.sub(r"#\d+$", "", column)


# --- numbers and units ---------------------------------------------------------------------
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


def decimal_mark(columns: Iterable[tuple[pd.Series, bool]], path: Path) -> str:
    """The decimal mark of one export, from its own numbers: ``columns`` are (values, whether
    they are integer-valued counters). ncu prints every number of an export in one locale
    (``1,234.5`` under C and en_US, ``1.234,5`` under de_DE, ``1 234,5`` under fr_FR). Refused
    when the file mixes both, or holds only numbers that read either way."""
    evidence: dict[str, str] = {}
    for column, integer in columns:
        values = column.dropna()
        if not len(values):
            continue
        if pd.api.types.is_numeric_dtype(values.dtype):  # read by the C parser: plain C-locale numbers
            fractional = values[np.isfinite(values) & (values != np.round(values))]
            if integer and len(fractional):  # a whole-number counter printed "70.464": a group
                evidence.setdefault(",", f"{fractional.iloc[0]:g}")
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


def _parse_numbers(values: pd.Series, decimal: str = ".", notes: list[str] | None = None) -> pd.Series:
    """Strings -> float64 in the file's convention (``decimal`` is its decimal mark; the other
    mark and spaces group thousands); per-instance lists (``--print-metric-instances``) left
    out with a note. Text that is not a number becomes NaN."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.astype("float64")
    text = values.astype(object)
    is_text = text.map(lambda v: isinstance(v, str)) if len(text) < 1000 else text.notna()
    if not is_text.any():
        return pd.to_numeric(text, errors="coerce").astype("float64")
    listed = text.str.contains(";", regex=False, na=False)
    if listed.any():
        if notes is not None:
            notes.append(f"{int(listed.sum())} values are per-instance lists (--print-metric-instances): "
                         "left out; export without that option for totals")
        text = text.where(~listed, None)
    grouping = "," if decimal == "." else "."
    cleaned = text.str.translate(_SPACES).str.replace(grouping, "", regex=False)
    if decimal == ",":
        cleaned = cleaned.str.replace(",", ".", regex=False)
    cleaned = cleaned.where(is_text, text)
    numbers = pd.to_numeric(cleaned, errors="coerce")
    return pd.Series(np.asarray(numbers, dtype="float64"), index=values.index)


def _unit_factor(unit: object, notes: list[str], what: str) -> float:
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


# --- the raw page (wide) -------------------------------------------------------------------
_LABEL_NAME_RE = re.compile(r"^.*\(([a-z0-9_]+__[A-Za-z0-9_.]+)\)$")


def _metric_of_name(name: str) -> str:
    """The ncu metric a header or ``Metric Name`` names: a metric id as is, a display label
    through DETAILS_LABELS, ``Label (metric)`` (``--print-metric-name label-name``) by its id."""
    if name in M.DETAILS_LABELS:
        return M.DETAILS_LABELS[name]
    match = _LABEL_NAME_RE.match(name)
    return match.group(1) if match else name


def _metric_for_header(name: str) -> str | None:
    """The ncu metric a wide column holds, or None when it is not needed."""
    if name in _IDENTITY_SOURCES:
        return None
    metric = _metric_of_name(name)
    return metric if M.is_needed(metric) else None


def _nvtx_columns(header: list[str]) -> list[str]:
    return [h for h in header if _NVTX_STACK_RE.search(h) or _NVTX_RANGE_RE.search(h)]


def _load_wide(body: bytes, header: list[str], path: Path, notes: list[str]) -> pd.DataFrame:
    nvtx = _nvtx_columns(header)
    keep = [h for h in header if h in _IDENTITY_SOURCES or _metric_for_header(h) is not None] + nvtx
    units = _units_row(body, header)
    strings = {h for h in header if _metric_for_header(h) in M.STRING_METRICS}
    text = {*_IDENTITY_SOURCES, *nvtx, *strings}

    skipped: list[str] = []

    def read(as_text: set[str] | None) -> tuple[pd.DataFrame, dict[str, str]]:
        table = _read_columns(body, header, keep, path, skip_units=units is not None, text=as_text)
        table = _valid_ids(_first_of_duplicates(table, [*_IDENTITY_SOURCES, *nvtx], path), skipped)
        return table, {c: m for c in table.columns if (m := _metric_for_header(_base_name(c))) is not None}

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
    identity = _identity(table, path, device, values)
    frame = _assemble(identity, values)
    if problems.notna().any():
        frame["notes"] = problems.to_numpy()
    return frame


def _first_of_duplicates(table: pd.DataFrame, names: list[str], path: Path) -> pd.DataFrame:
    """An identity column named twice: the copies must agree (then one is kept), else refused."""
    for column in [c for c in table.columns if c != _base_name(c) and _base_name(c) in names]:
        first = table[_base_name(column)]
        if not first.fillna("").equals(table[column].fillna("")):
            raise ReportLoadError(
                f"{path} has two {_base_name(column)!r} columns with different values: re-export it "
                f"unmodified ({_EXPORT_HINT})"
            )
        table = table.drop(columns=column)
    return table


def _units_row(body: bytes, header: list[str]) -> dict[str, str] | None:
    """The units row under a raw-page header (its ID field is empty), as column -> unit (a
    header named twice gets ``#2``, as in :func:`_read_columns`)."""
    first = body.find(b"\n")
    if first < 0:
        return None
    end = body.find(b"\n", first + 1)
    line = body[first + 1: None if end < 0 else end].decode("utf-8", "replace").rstrip("\r")
    fields = next(_csv.reader([line]), [])
    if "ID" not in header or len(fields) <= header.index("ID") or fields[header.index("ID")].strip():
        return None
    return dict(zip(_unique_names(header), fields, strict=False))


def _wide_metrics(
    table: pd.DataFrame, metric_cols: dict[str, str], units: dict[str, str], decimal: str, notes: list[str],
) -> tuple[pd.DataFrame, pd.Series]:
    """One float column per metric; a metric in two columns that disagree on a launch is unknown
    there (neither copy is kept), with a note on that launch."""
    columns: dict[str, pd.Series] = {}
    problems = pd.Series(np.nan, index=table.index, dtype=object)
    for column, metric in metric_cols.items():
        if metric in M.STRING_METRICS:
            continue
        values = _column_numbers(table[column], decimal, notes, metric)
        if values is None:
            continue
        values = values * _unit_factor(units.get(column), notes, metric)
        if metric not in columns:
            columns[metric] = values
            continue
        before = columns[metric]
        clash = before.notna() & values.notna() & ~np.isclose(before, values, rtol=1e-6, atol=0.0)
        if clash.any():
            text = f"conflicting values for {metric} in two columns: kept neither (unknown)"
            problems = problems.where(~clash, problems.map(lambda p, t=text: t if not isinstance(p, str)
                                                             else f"{p}; {t}"))
        columns[metric] = before.where(before.notna(), values).where(~clash)
    return pd.DataFrame(columns, index=table.index), problems


def _column_numbers(raw: pd.Series, decimal: str, notes: list[str] | None = None,
                    metric: str = "a metric") -> pd.Series | None:
    """A column as float64; None for a string column (a string-valued metric). Text in a number
    column becomes NaN with a note."""
    values = _parse_numbers(raw, decimal, notes)
    if pd.api.types.is_numeric_dtype(raw.dtype):
        return values
    listed_cells = raw.astype(object).str.contains(";", regex=False, na=False)
    if values.isna().all() and raw.notna().any() and not listed_cells.any():
        return None  # a string-valued metric: not a number
    _note_text_values(raw[raw.notna() & values.isna() & ~listed_cells], metric, notes)
    return values


def _note_text_values(bad: pd.Series, metric: str, notes: list[str] | None) -> None:
    if len(bad) and notes is not None:
        notes.append(f"{len(bad)} value(s) of {metric} are not numbers (e.g. {str(bad.iloc[0])[:40]!r}): unknown")


# --- the details page and --metrics stdout (long) ------------------------------------------
def _load_long(body: bytes, header: list[str], path: Path, notes: list[str]) -> pd.DataFrame:
    missing = [c for c in ("ID", "Kernel Name", *_LONG) if c not in header]
    if missing:
        raise _missing_columns_error(path, missing, header)
    keep = [*_IDENTITY_SOURCES, *_LONG, *_RULES, *_nvtx_columns(header)]
    table = _valid_ids(_read_columns(body, header, keep, path), notes)
    is_metric = table["Metric Name"].notna()
    rules = _rules(table[~is_metric])
    rows = _needed_rows(table[is_metric])
    launches = table.drop_duplicates("ID").reset_index(drop=True)
    whole = pd.Series([integer_valued(m, u) for m, u in zip(rows["metric"], rows["Metric Unit"], strict=True)],
                      index=rows.index, dtype=bool)
    decimal = decimal_mark([(rows.loc[whole, "Metric Value"], True), (rows.loc[~whole, "Metric Value"], False)], path)
    if decimal == "," and "CC" in launches:
        launches["CC"] = launches["CC"].str.replace(",", ".", regex=False)
    device = _long_device(rows, launches)
    values, problems = _pivot(rows[rows["metric"] != M.DEVICE_NAME], launches["ID"], decimal, notes)
    frame = _assemble(_identity(launches, path, device, values), values)
    if problems:
        frame["notes"] = launches["ID"].map(problems).to_numpy()
    frame.attrs["ncu_rule_results"] = RuleResults(rules)
    return frame


def _needed_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Metric rows whose name is needed or maps through DETAILS_LABELS (several per (ID, metric)
    where sections repeat a label: :func:`_pivot` keeps the first)."""
    names = rows["Metric Name"]
    unique = names.unique()
    metric = names.map({n: _metric_of_name(n) for n in unique})
    # "Memory Throughput" in byte/s (Memory Workload Analysis) is the DRAM rate, not the SOL %
    dram_rate = names.eq("Memory Throughput") & rows["Metric Unit"].fillna("").str.contains("byte/")
    metric = metric.where(~dram_rate, "dram__bytes.sum.per_second")
    labelled = names.isin(list(M.DETAILS_LABELS)) & ~dram_rate
    needed = metric.map({m: M.is_needed(m) for m in metric.unique()}).astype(bool) | labelled
    # a label is reused with other units (Memory Throughput: % in SOL, byte/s elsewhere)
    percent_mismatch = labelled & metric.str.contains("pct") & rows["Metric Unit"].ne("%")
    return rows.assign(metric=metric)[needed & ~percent_mismatch]


def _long_device(rows: pd.DataFrame, launches: pd.DataFrame) -> pd.Series | None:
    named = rows[rows["metric"] == M.DEVICE_NAME].drop_duplicates("ID")
    if named.empty:
        return None
    return launches["ID"].map(named.set_index("ID")["Metric Value"])


def _pivot(
    rows: pd.DataFrame, ids: pd.Series, decimal: str, notes: list[str],
) -> tuple[pd.DataFrame, dict[int, str]]:
    """Long (ID, metric, unit, value) rows -> one float column per metric, rows in ``ids`` order,
    and per launch ID what was wrong. A row repeated with the same value is read once (noted); a
    (launch, section, metric) given twice with different values is unknown (neither is kept)."""
    if rows.empty:
        return pd.DataFrame(index=ids.index), {}
    units = rows["Metric Unit"].fillna("")
    base = rows["metric"].map(M.ncu_base_unit)
    unitless = units.str.strip().eq("") & base.notna()
    if unitless.any():
        notes.append(f"no unit for {', '.join(sorted(rows.loc[unitless, 'metric'].unique()))}: read as ncu's "
                     "base unit, nsecond")
        units = units.where(~unitless, base)
    factors = {u: _unit_factor(u, notes, "metric values") for u in units.unique()}
    parsed = _parse_numbers(rows["Metric Value"], decimal, notes)
    values = parsed * units.map(factors).astype("float64")
    section = _column(rows, "Section Name").fillna("").astype(str)
    long = pd.DataFrame({"ID": rows["ID"].to_numpy(), "metric": rows["metric"].to_numpy(),
                         "key": (section + "\x1f" + rows["Metric Name"].astype(str)).to_numpy(),
                         "value": values.to_numpy(),
                         "text": rows["Metric Value"].notna().to_numpy()})
    numeric_metrics = set(long.loc[parsed.notna().to_numpy(), "metric"])
    text_rows = long["text"] & parsed.isna().to_numpy() & long["metric"].isin(numeric_metrics)
    text_rows &= ~rows["Metric Value"].astype(str).str.contains(";", regex=False).to_numpy()
    for metric, group in rows[text_rows.to_numpy()].groupby("metric")["Metric Value"]:
        _note_text_values(group, str(metric), notes)
    long, problems = _conflicts(long, notes)
    long = long.drop_duplicates(["ID", "metric"])
    per_metric = long.groupby("metric", sort=False)
    numeric = per_metric["value"].count().gt(0) | ~per_metric["text"].any()
    order = [m for m in dict.fromkeys(long["metric"]) if numeric[m]]  # drop string metrics
    wide = long.pivot(index="ID", columns="metric", values="value")
    wide = wide.reindex(index=ids.to_numpy(), columns=order)
    wide.columns.name = None
    return wide.reset_index(drop=True).astype("float64"), problems


def _conflicts(long: pd.DataFrame, notes: list[str]) -> tuple[pd.DataFrame, dict[int, str]]:
    repeated = long.duplicated(["ID", "key"], keep=False)
    if not repeated.any():
        return long, {}
    group = long[repeated].groupby(["ID", "key"])["value"]
    low, high = group.transform("min"), group.transform("max")
    clash = pd.Series(False, index=long.index)
    clash[repeated] = ~np.isclose(low, high, rtol=1e-6, atol=0.0) & low.notna()
    same = long.duplicated(["ID", "key", "value"]) & ~clash
    if same.any():
        notes.append(f"{int(same.sum())} metric row(s) appear twice with the same value: read once")
    problems: dict[int, str] = {}
    for launch, metrics in long[clash].groupby("ID")["metric"]:
        names = ", ".join(dict.fromkeys(metrics))
        problems[int(str(launch))] = f"conflicting values for {names} (the row appears twice): kept neither (unknown)"
    return long.assign(value=long["value"].where(~clash)), problems


def _rules(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Rule rows (empty metric columns, a Rule Name) as rule-result records."""
    if "Rule Name" not in rows or rows.empty:
        return []
    rows = rows[rows["Rule Name"].notna()]
    text = _column(rows, "Estimated Speedup").astype(object).str.replace(",", "", regex=False)
    speedup = pd.to_numeric(text, errors="coerce")
    records = (
        rule_record(int(row["ID"]), str(row["Rule Name"]), _text(row.get("Section Name")),
                    _text(row.get("Rule Type")) or "", None, _text(row.get("Rule Description")) or "",
                    None if pd.isna(gain) else float(gain), _text(row.get("Estimated Speedup Type")))
        for (_, row), gain in zip(rows.iterrows(), speedup, strict=True)
    )
    return [r for r in records if r is not None]


def _text(value: object) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


# --- identity columns and assembly ---------------------------------------------------------
def _valid_ids(table: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Keep rows with an integer ID (drops stray lines after the CSV)."""
    ids = pd.to_numeric(table["ID"], errors="coerce")
    bad = ids.isna()
    if bad.any():
        notes.append(f"skipped {int(bad.sum())} row(s) without a numeric launch ID")
        table = table[~bad].reset_index(drop=True)
        ids = ids[~bad].reset_index(drop=True)
    return table.assign(ID=ids.astype("int64"))


def _identity(
    table: pd.DataFrame, path: Path, device: pd.Series | None, values: pd.DataFrame
) -> pd.DataFrame:
    out = pd.DataFrame(index=table.index)
    out["report"] = str(path)
    out["id"] = table["ID"].astype("int64")
    names = table["Kernel Name"] if "Kernel Name" in table else pd.Series(np.nan, index=table.index)
    out["kernel"] = _map_unique(names, short_kernel_name)
    out["kernel_demangled"] = names
    out["device"] = device.to_numpy() if device is not None else np.nan
    out["cc"] = _cc(table, values)
    out["process"] = _column(table, "Process Name")
    out["stream"] = pd.to_numeric(_column(table, "Stream"), errors="coerce").astype("float64")
    out["grid_dim"] = _column(table, "Grid Size")
    out["block_dim"] = _column(table, "Block Size")
    out["nvtx"] = _nvtx(table)
    return out[list(IDENTITY_COLUMNS)]


def _column(table: pd.DataFrame, name: str) -> pd.Series:
    return table[name] if name in table else pd.Series(np.nan, index=table.index, dtype=object)


def _cc(table: pd.DataFrame, values: pd.DataFrame) -> pd.Series:
    if "CC" in table and table["CC"].notna().any():
        return table["CC"]
    if M.CC_MAJOR in values and M.CC_MINOR in values:
        major, minor = values[M.CC_MAJOR], values[M.CC_MINOR]
        text = major.astype("Int64").astype(str) + "." + minor.astype("Int64").astype(str)
        return text.where(major.notna() & minor.notna(), np.nan)
    return pd.Series(np.nan, index=table.index, dtype=object)


def _map_unique(values: pd.Series, func) -> pd.Series:  # type: ignore[no-untyped-def]
    """Apply ``func`` once per distinct non-missing value (100k launches, a few kernels)."""
    uniques = values.dropna().unique()
    return values.map({u: func(u) for u in uniques})


def _assemble(identity: pd.DataFrame, values: pd.DataFrame) -> pd.DataFrame:
    values = values.reset_index(drop=True)
    frame = pd.concat([identity.reset_index(drop=True), values], axis=1)
    frame.attrs = {}
    return frame


# --- NVTX ----------------------------------------------------------------------------------
def _nvtx(table: pd.DataFrame) -> pd.Series:
    cols = _nvtx_columns(list(table.columns))
    if not cols:
        return pd.Series(np.nan, index=table.index, dtype=object)
    parts = [_map_unique(table[c], _nvtx_text) for c in cols]
    joined = parts[0].astype(object)
    for part in parts[1:]:
        joined = pd.Series(
            [" | ".join(p for p in (a, b) if isinstance(p, str) and p) or np.nan
             for a, b in zip(joined, part, strict=True)], index=table.index, dtype=object)
    return joined.where(joined.map(lambda v: isinstance(v, str) and bool(v)), np.nan)


def _nvtx_text(value: str) -> str | float:
    """``'129325  "<default domain>:outer:..."  "<default domain>:inner:..."'`` -> ``outer/inner``.

    Named domains read ``domain@outer/inner``; several domains are joined with ``" | "``.
    """
    entries = re.findall(r'"([^"]*)"', value)
    if not entries:
        return value.strip() or np.nan
    stacks: dict[str, list[str]] = {}
    for entry in entries:
        domain, name = _nvtx_entry(entry)
        stacks.setdefault(domain, []).append(name)
    texts = [("" if d in _DEFAULT_DOMAINS else f"{d}@") + "/".join(n) for d, n in stacks.items()]
    return " | ".join(texts)


def _nvtx_entry(entry: str) -> tuple[str, str]:
    """``domain:range:pl_type:pl_value:clr_type:color:msg_type:msg`` -> (domain, message)."""
    parts = entry.split(":")
    if len(parts) >= 8:
        return parts[0], ":".join(parts[7:]) or parts[1]
    if len(parts) >= 2:
        return parts[0], parts[1]
    return "", entry


# --- kernel names --------------------------------------------------------------------------
def _strip_trailing_group(text: str, opening: str, closing: str) -> str:
    """Remove a balanced ``(...)`` group at the end of ``text`` (the argument list)."""
    if not text.endswith(closing):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {closing: 1, opening: -1}.get(text[i], 0)
        if depth == 0:
            return text[:i].rstrip() or text
    return text


def _strip_templates(text: str) -> str:
    """Remove balanced ``<...>`` groups; a stray ``>`` (ncu drops ``<`` of ``<unnamed>``) stays."""
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)
