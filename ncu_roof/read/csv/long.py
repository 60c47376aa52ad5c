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
    column_or_missing,
    metric_of_name,
    nvtx_columns,
    read_columns,
    valid_ids,
)
from ncu_roof.read.csv.file import missing_columns_error
from ncu_roof.read.csv.identity import assemble_frame, identity_columns
from ncu_roof.read.csv.numbers import decimal_mark, integer_valued, note_text_values, parse_numbers, unit_factor
from ncu_roof.read.ncu_rules import RuleResults, rule_record

_LONG = ("Metric Name", "Metric Unit", "Metric Value")
_RULES = ("Section Name", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
          "Estimated Speedup")


def load_long(body: bytes, header: list[str], path: Path, notes: list[str]) -> pd.DataFrame:
    """The raw launch frame of a details-page (or ``--metrics`` stdout) body, its rule rows in
    ``attrs["ncu_rule_results"]``; remarks appended to ``notes``."""
    missing = [c for c in ("ID", "Kernel Name", *_LONG) if c not in header]
    if missing:
        raise missing_columns_error(path, missing, header)
    keep = [*IDENTITY_SOURCES, *_LONG, *_RULES, *nvtx_columns(header)]
    table = valid_ids(read_columns(body, header, keep, path), notes)
    is_metric = table["Metric Name"].notna()
    notes += M.damaged_name_notes([n for n in table.loc[is_metric, "Metric Name"].unique() if "__" in str(n)],
                                  what="metric")
    rules = _rules(table[~is_metric])
    rows = _needed_rows(table[is_metric])
    launches = table.drop_duplicates("ID").reset_index(drop=True)
    whole = _per_pair(rows["metric"], rows["Metric Unit"], integer_valued, bool)
    decimal = decimal_mark([(rows.loc[whole, "Metric Value"], True), (rows.loc[~whole, "Metric Value"], False)], path)
    if decimal == "," and "CC" in launches:
        launches["CC"] = launches["CC"].str.replace(",", ".", regex=False)
    device = _long_device(rows, launches)
    values, problems = _pivot(rows[rows["metric"] != M.DEVICE_NAME], launches["ID"], decimal, notes)
    frame = assemble_frame(identity_columns(launches, path, device, values), values)
    if problems:
        frame["notes"] = launches["ID"].map(problems).to_numpy()
    frame.attrs["ncu_rule_results"] = RuleResults(rules)
    return frame


def _needed_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Metric rows whose name is needed or maps through DETAILS_LABELS (several per (ID, metric)
    where sections repeat a label: :func:`_pivot` keeps the first). Decided once per distinct
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

    names, units = rows["Metric Name"], rows["Metric Unit"]
    metric = _per_pair(names, units, metric_of, names.dtype)
    return rows.assign(metric=metric)[_per_pair(names, units, wanted, bool)]


def _per_pair(first: pd.Series, second: pd.Series, func: Any, dtype: Any) -> pd.Series:
    """``func(a, b)`` of each row's pair of cells, asked once per distinct pair (NaN as NaN)."""
    a_codes, a_values = pd.factorize(first)
    b_codes, b_values = pd.factorize(second)
    a_cells = np.append(np.asarray(a_values, dtype=object), np.nan)
    b_cells = np.append(np.asarray(b_values, dtype=object), np.nan)
    width = len(b_values) + 1  # code -1 (NaN) is the cells' last entry
    pairs, inverse = np.unique((a_codes.astype(np.int64) + 1) * width + b_codes + 1, return_inverse=True)
    answers = [func(a_cells[p // width - 1], b_cells[p % width - 1]) for p in pairs.tolist()]
    return pd.Series(np.asarray(answers, dtype=object)[inverse.reshape(-1)], index=first.index).astype(dtype)


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
    base = rows["metric"].map({m: M.ncu_base_unit(m) for m in rows["metric"].unique()})
    unitless = units.str.strip().eq("") & base.notna()
    if unitless.any():
        notes.append(f"no unit for {', '.join(sorted(rows.loc[unitless, 'metric'].unique()))}: read as ncu's "
                     "base unit, nsecond")
        units = units.where(~unitless, base)
    factors = {u: unit_factor(u, notes, "metric values") for u in units.unique()}
    parsed = parse_numbers(rows["Metric Value"], decimal, notes)
    values = parsed * units.map(factors).astype("float64")
    section = column_or_missing(rows, "Section Name").fillna("").astype(str)
    long = pd.DataFrame({"ID": rows["ID"].to_numpy(), "metric": rows["metric"].to_numpy(),
                         "key": (section + "\x1f" + rows["Metric Name"].astype(str)).to_numpy(),
                         "value": values.to_numpy(),
                         "text": rows["Metric Value"].notna().to_numpy()})
    numeric_metrics = set(long.loc[parsed.notna().to_numpy(), "metric"])
    text_rows = long["text"] & parsed.isna().to_numpy() & long["metric"].isin(numeric_metrics)
    text_rows &= ~rows["Metric Value"].astype(str).str.contains(";", regex=False).to_numpy()
    for metric, group in rows[text_rows.to_numpy()].groupby("metric")["Metric Value"]:
        note_text_values(group, str(metric), notes)
    long, problems = _conflicts(long, notes)
    long = long.drop_duplicates(["ID", "metric"])
    per_metric = long.groupby("metric", sort=False)
    numeric = per_metric["value"].count().gt(0) | ~per_metric["text"].any()
    order = [m for m in long["metric"].unique().tolist() if numeric[m]]  # drop string metrics
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
    text = column_or_missing(rows, "Estimated Speedup").astype(object).str.replace(",", "", regex=False)
    speedup = pd.to_numeric(text, errors="coerce")

    def cells(name: str) -> list[Any]:
        return rows[name].tolist() if name in rows else [None] * len(rows)

    records = (
        rule_record(int(launch), str(rule), _text(section), _text(kind) or "", None, _text(description) or "",
                    None if pd.isna(gain) else float(gain), _text(speedup_type))
        for launch, rule, section, kind, description, gain, speedup_type in zip(
            cells("ID"), cells("Rule Name"), cells("Section Name"), cells("Rule Type"), cells("Rule Description"),
            speedup.tolist(), cells("Estimated Speedup Type"), strict=True)
    )
    return [r for r in records if r is not None]


def _text(value: object) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
