"""The details page of a CSV export (``--page details``) and the stdout of ``ncu --csv --metrics``:
body and header in, the raw launch frame out (before the file-wide ``attrs``), with the rule rows of
a details export as ``attrs["ncu_rule_results"]``.

One row per (launch, metric): the needed rows are pivoted to one column per metric; a row repeated
with the same value is read once, one repeated with another value is unknown on that launch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.read import metrics as M
from ncu_roof.read.csv.columns import (
    IDENTITY_SOURCES,
    category_strings,
    column_or_missing,
    line_ends,
    metric_of_name,
    nvtx_columns,
    read_columns,
    rows_are_lines,
    some_rows,
    valid_ids,
)
from ncu_roof.read.csv.file import missing_columns_error
from ncu_roof.read.csv.identity import assemble_frame, identity_columns
from ncu_roof.read.csv.numbers import decimal_mark, integer_valued, note_text_values, parse_numbers, unit_factor
from ncu_roof.read.ncu_rules import RuleResults, rule_record

_LONG = ("Metric Name", "Metric Unit", "Metric Value")
_RULES = ("Section Name", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
          "Estimated Speedup")
# columns of short, mostly distinct or number-like text, read as strings (the others as categories)
_PER_ROW = {"ID", "Stream", "CC", "Metric Value", "Estimated Speedup"}
# the metric columns of every row, kept as categoricals where each row is one line (codes, not strings)
_CODED = frozenset({"ID", "Section Name", *_LONG})
_RULES_CODED = frozenset(set(_RULES) - _PER_ROW)  # and the rule columns of the rule rows
_ROW = "\x00row"  # a row's number in the body, while rows are dropped


def load_long(body: bytes, header: list[str], path: Path, notes: list[str]) -> pd.DataFrame:
    """The raw launch frame of a details-page (or ``--metrics`` stdout) body, its rule rows in
    ``attrs["ncu_rule_results"]``; remarks appended to ``notes``."""
    missing = [c for c in ("ID", "Kernel Name", *_LONG) if c not in header]
    if missing:
        raise missing_columns_error(path, missing, header)
    table, launches, rule_rows = _read(body, header, path, notes)
    is_metric = table["Metric Name"].notna()
    notes += M.damaged_name_notes([n for n in table.loc[is_metric, "Metric Name"].unique() if "__" in str(n)],
                                  what="metric")
    rules = _rules(rule_rows)
    rows, whole = _needed_rows(table[is_metric])
    decimal = decimal_mark([(rows.loc[whole, "Metric Value"], True), (rows.loc[~whole, "Metric Value"], False)], path)
    if decimal == "," and "CC" in launches:
        launches["CC"] = launches["CC"].str.replace(",", ".", regex=False)
    device = _long_device(rows, launches)
    values, problems = _pivot(rows[rows["metric"] != M.DEVICE_NAME], launches["ID"], decimal, notes)
    frame = assemble_frame(identity_columns(launches, path, device, values), values)
    if problems:
        frame["notes"] = launches["ID"].map(problems).to_numpy()
    frame.attrs["ncu_rule_results"] = rules
    return frame


def _read(body: bytes, header: list[str], path: Path, notes: list[str]
          ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The rows with an integer ID (their launch and metric columns), each launch's first row (its
    launch columns) and the rows without a metric name (the rule columns). The columns a launch's rows
    repeat and those only rule rows fill are read from those rows alone, cut from the body by their
    lines, where each row is one line."""
    keep = [*IDENTITY_SOURCES, *_LONG, *_RULES, *nvtx_columns(header)]
    categories = set(keep) - _PER_ROW
    each = [c for c in keep if c in ("ID", "Section Name", *_LONG)]
    table = read_columns(body, header, each, path, categories=categories, coded=_CODED)
    ends = line_ends(body) if len(each) < len(set(keep) & set(header)) else None
    if ends is None or not rows_are_lines(body, ends, len(table)):
        table = valid_ids(read_columns(body, header, keep, path, categories=categories), notes)
        return table, table.drop_duplicates("ID").reset_index(drop=True), table[table["Metric Name"].isna()]
    table = valid_ids(table.assign(**{_ROW: np.arange(len(table))}), notes)
    position = table.pop(_ROW).to_numpy()
    first, ruled = ~table["ID"].duplicated().to_numpy(), table["Metric Name"].isna().to_numpy()
    ids = table["ID"].to_numpy()
    launches = some_rows(body, ends, header, [*IDENTITY_SOURCES, *nvtx_columns(header)], path, position[first],
                         categories).assign(ID=ids[first])
    rule_rows = some_rows(body, ends, header, ["ID", *_RULES], path, position[ruled], categories,
                          coded=_RULES_CODED)
    return table, launches, rule_rows.assign(ID=ids[ruled]).set_axis(table.index[ruled])


def _needed_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """Metric rows whose name is needed or maps through DETAILS_LABELS (several per (ID, metric)
    where sections repeat a label: :func:`_pivot` keeps the first), with their ``metric``, and
    whether each holds a whole-number counter (:func:`integer_valued`). Decided once per distinct
    (name, unit) pair."""
    def metric_of(name: object, unit: object) -> str:
        # "Memory Throughput" in byte/s (Memory Workload Analysis) is the DRAM rate, not the SOL %
        dram_rate = name == "Memory Throughput" and isinstance(unit, str) and "byte/" in unit
        return "dram__bytes.sum.per_second" if dram_rate else metric_of_name(str(name))

    def wanted(name: object, unit: object) -> bool:
        metric = metric_of(name, unit)
        dram_rate = name == "Memory Throughput" and isinstance(unit, str) and "byte/" in unit
        labelled = name in M.DETAILS_LABELS and not dram_rate
        # a label is reused with other units (Memory Throughput: % in SOL, byte/s elsewhere)
        percent_mismatch = labelled and "pct" in metric and unit != "%"
        return (M.is_needed(metric) or labelled) and not percent_mismatch

    names = rows["Metric Name"]
    pairs, inverse = _pairs(names, rows["Metric Unit"])
    keep = np.array([wanted(a, b) for a, b in pairs], dtype=bool)[inverse]
    metrics = [metric_of(a, b) for a, b in pairs]
    whole = np.array([integer_valued(m, b) for m, (_, b) in zip(metrics, pairs, strict=True)], dtype=bool)
    chosen = inverse[keep]
    dtype = pd.api.types.pandas_dtype("str") if isinstance(names.dtype, pd.CategoricalDtype) else names.dtype
    metric = _as_dtype(metrics, chosen, dtype)
    return rows[keep].assign(metric=pd.Series(metric, index=rows.index[keep])), whole[chosen]


def _pairs(first: pd.Series, second: pd.Series) -> tuple[list[tuple[Any, Any]], np.ndarray]:
    """The distinct (first, second) pairs of cells (NaN as NaN), in order of first appearance, and
    which pair each row holds."""
    a_codes, a_values = pd.factorize(first)
    b_codes, b_values = pd.factorize(second)
    a_cells = np.append(np.asarray(a_values, dtype=object), np.nan)  # code -1 (NaN) is the last entry
    b_cells = np.append(np.asarray(b_values, dtype=object), np.nan)
    inverse, keys = pd.factorize((a_codes.astype(np.int64) + 1) * (len(b_values) + 1) + b_codes + 1)
    width = len(b_values) + 1
    return [(a_cells[k // width - 1], b_cells[k % width - 1]) for k in keys.tolist()], inverse


def _as_dtype(values: list[Any], codes: np.ndarray, dtype: Any) -> Any:
    """``values[codes]`` as an array of ``dtype`` (a string dtype: taken from the distinct strings)."""
    if isinstance(dtype, pd.StringDtype) and all(isinstance(v, str) for v in values):
        return pd.array(values, dtype=dtype).take(codes) if values else pd.array([], dtype=dtype)
    return pd.Series(np.asarray(values, dtype=object)[codes] if values else np.array([], dtype=object)).astype(
        dtype).to_numpy()


def _long_device(rows: pd.DataFrame, launches: pd.DataFrame) -> pd.Series | None:
    named = rows[rows["metric"] == M.DEVICE_NAME].drop_duplicates("ID")
    if named.empty:
        return None
    if isinstance(named["Metric Value"].dtype, pd.CategoricalDtype):
        named = named.assign(**{"Metric Value": category_strings(named["Metric Value"])})
    return launches["ID"].map(named.set_index("ID")["Metric Value"])


def _pivot(
    rows: pd.DataFrame, ids: pd.Series, decimal: str, notes: list[str],
) -> tuple[pd.DataFrame, dict[int, str]]:
    """Long (ID, metric, unit, value) rows -> one float column per metric, rows in ``ids`` order,
    and per launch ID what was wrong. A row repeated with the same value is read once (noted); a
    (launch, section, metric) given twice with different values is unknown (neither is kept)."""
    if rows.empty:
        return pd.DataFrame(index=ids.index), {}
    pairs, inverse = _pairs(rows["metric"], _filled(rows["Metric Unit"]))
    units = [_unit(metric, unit) for metric, unit in pairs]  # (unit, whether ncu's base unit was taken)
    unitless = sorted({metric for (metric, _), (_, base) in zip(pairs, units, strict=True) if base})
    if unitless:
        notes.append(f"no unit for {', '.join(unitless)}: read as ncu's base unit, nsecond")
    factors = {u: unit_factor(u, notes, "metric values") for u, _ in units}
    parsed = parse_numbers(rows["Metric Value"], decimal, notes)
    values = parsed.to_numpy() * np.array([factors[u] for u, _ in units], dtype=np.float64)[inverse]
    key = _section_metric(column_or_missing(rows, "Section Name"), rows["Metric Name"])
    code, names = pd.factorize(rows["metric"].to_numpy(dtype=object))  # each metric as a number from here
    long = pd.DataFrame({"ID": rows["ID"].to_numpy(), "metric": code, "key": key,
                         "value": values, "text": rows["Metric Value"].notna().to_numpy()})
    numeric_metrics = np.unique(code[parsed.notna().to_numpy()])
    text_rows = long["text"] & parsed.isna().to_numpy() & long["metric"].isin(numeric_metrics)
    if text_rows.any():
        text_rows &= ~rows["Metric Value"].astype(str).str.contains(";", regex=False).to_numpy()
    for metric, group in rows[text_rows.to_numpy()].groupby("metric")["Metric Value"]:
        note_text_values(group, str(metric), notes)
    long, problems = _conflicts(long, notes, names)
    long = long.drop_duplicates(["ID", "metric"])
    per_metric = long.groupby("metric", sort=False)
    numeric = per_metric["value"].count().gt(0) | ~per_metric["text"].any()
    order = [m for m in long["metric"].unique().tolist() if numeric[m]]  # drop string metrics
    wide = long.pivot(index="ID", columns="metric", values="value")
    wide = wide.reindex(index=ids.to_numpy(), columns=order)
    wide.columns = pd.Index([names[m] for m in order])
    return wide.reset_index(drop=True).astype("float64"), problems


def _filled(column: pd.Series) -> pd.Series:
    """The column with ``""`` where it is missing (a categorical given ``""`` as a category)."""
    if isinstance(column.dtype, pd.CategoricalDtype) and "" not in column.cat.categories:
        column = column.cat.add_categories([""])
    return column.fillna("")


def _section_metric(section: pd.Series, name: pd.Series) -> np.ndarray:
    """A number per distinct (section, metric name) of the rows, a missing section as ``""``: from the
    categoricals' codes, or from the joined strings."""
    coded = all(isinstance(c.dtype, pd.CategoricalDtype) and not any("\x1f" in str(v) for v in c.cat.categories)
                for c in (section, name))
    if coded:  # "" is read as missing, so a missing section is no category's twin
        sections, names = section.cat.codes.to_numpy(np.int64) + 1, name.cat.codes.to_numpy(np.int64) + 1
        return pd.factorize(sections * (len(name.cat.categories) + 1) + names)[0]
    text = section.astype(object).fillna("").astype(str).to_numpy(dtype=object)
    return pd.factorize(text + "\x1f" + name.astype(str).to_numpy(dtype=object))[0]


def _unit(metric: str, unit: str) -> tuple[str, bool]:
    """A row's unit, and whether it is ncu's base unit taken for an empty one (a duration)."""
    base = M.ncu_base_unit(metric)
    if base is not None and not unit.strip():
        return base, True
    return unit, False


def _conflicts(long: pd.DataFrame, notes: list[str], names: Any) -> tuple[pd.DataFrame, dict[int, str]]:
    """Rows repeated for one (launch, section, metric): read once where they agree, else unknown;
    ``long["metric"]`` numbers ``names``."""
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
        listed = ", ".join(dict.fromkeys(str(names[m]) for m in metrics))
        problems[int(str(launch))] = f"conflicting values for {listed} (the row appears twice): kept neither (unknown)"
    return long.assign(value=long["value"].where(~clash)), problems


def _rules(rows: pd.DataFrame) -> RuleResults:
    """Rule rows (empty metric columns, a Rule Name) as rule results; each distinct result (a kernel's
    launches repeat theirs) made once."""
    if "Rule Name" not in rows or rows.empty:
        return RuleResults()
    rows = rows[rows["Rule Name"].notna()]
    text = column_or_missing(rows, "Estimated Speedup").astype(object).str.replace(",", "", regex=False)
    speedup = pd.to_numeric(text, errors="coerce")
    columns = [column_or_missing(rows, name) for name in
               ("Rule Name", "Section Name", "Rule Type", "Rule Description", "Estimated Speedup Type")]
    columns.insert(4, speedup)
    codes = np.stack([pd.factorize(c if isinstance(c.dtype, pd.CategoricalDtype) else c.to_numpy(dtype=object),
                                   use_na_sentinel=False)[0] for c in columns], axis=1) \
        if len(rows) else np.zeros((0, len(columns)), dtype=np.int64)
    distinct, first, which = _unique_rows(codes)
    cells = [c.iloc[first].to_numpy(dtype=object) for c in columns]
    made = [rule_record(0, str(rule), _text(section), _text(kind) or "", None, _text(description) or "",
                        None if pd.isna(gain) else float(gain), _text(speedup_type))
            for rule, section, kind, description, gain, speedup_type in zip(*cells, strict=True)]
    kept = np.array([m is not None for m in made] + [False], dtype=bool)
    which = which.reshape(-1)
    chosen = kept[which] if distinct else np.zeros(0, dtype=bool)
    renumber = np.cumsum(kept) - 1
    records = [{k: v for k, v in m.items() if k != "id"} for m in made if m is not None]
    ids = rows["ID"].to_numpy(dtype=np.int64)[chosen]
    return RuleResults.of_columns(records, ids, renumber[which[chosen]])


def _unique_rows(codes: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """``np.unique(codes, axis=0, return_index=True, return_inverse=True)`` of non-negative codes (the
    number of distinct rows first), through one number per row where they fit: in the same order."""
    sizes = codes.max(axis=0) + 1 if len(codes) else np.zeros(0, dtype=np.int64)
    if not len(codes) or float(np.prod(sizes.astype(np.float64))) >= 2.0 ** 62:
        distinct, first, which = np.unique(codes, axis=0, return_index=True, return_inverse=True)
        return len(distinct), first, which
    key = np.zeros(len(codes), dtype=np.int64)
    for column, size in zip(codes.T, sizes.tolist(), strict=True):
        key = key * size + column
    keys, first, which = np.unique(key, return_index=True, return_inverse=True)
    return len(keys), first, which


def _text(value: object) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
