"""The identity columns of the raw launch frame from a CSV export: the kept CSV columns (one row
per launch) and the metric values in; out, the frame's identity columns (``report``, ``id``, short
and demangled kernel names, device, compute capability, process, stream, grid and block, NVTX path)
and the frame that joins them to the values.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ncu_roof.read import metrics as M
from ncu_roof.read.csv.columns import column_or_missing, map_unique, nvtx_columns
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.kernel_names import short_kernel_name

_DEFAULT_DOMAINS = ("", "<default domain>", "default")


def identity_columns(
    table: pd.DataFrame, path: Path, device: pd.Series | None, values: pd.DataFrame
) -> pd.DataFrame:
    """The identity columns of the raw launch frame, in its order, from the kept CSV columns."""
    out = pd.DataFrame(index=table.index)
    out["report"] = str(path)
    out["id"] = table["ID"].astype("int64")
    names = table["Kernel Name"] if "Kernel Name" in table else pd.Series(np.nan, index=table.index)
    out["kernel"] = map_unique(names, short_kernel_name)
    out["kernel_demangled"] = names
    out["device"] = device.to_numpy() if device is not None else np.nan
    out["cc"] = _cc(table, values)
    out["process"] = column_or_missing(table, "Process Name")
    out["stream"] = pd.to_numeric(column_or_missing(table, "Stream"), errors="coerce").astype("float64")
    out["grid_dim"] = column_or_missing(table, "Grid Size")
    out["block_dim"] = column_or_missing(table, "Block Size")
    out["nvtx"] = _nvtx(table)
    return out[list(IDENTITY_COLUMNS)]


def _cc(table: pd.DataFrame, values: pd.DataFrame) -> pd.Series:
    if "CC" in table and table["CC"].notna().any():
        return table["CC"]
    if M.CC_MAJOR in values and M.CC_MINOR in values:
        major, minor = values[M.CC_MAJOR], values[M.CC_MINOR]
        text = major.astype("Int64").astype(str) + "." + minor.astype("Int64").astype(str)
        return text.where(major.notna() & minor.notna(), np.nan)
    return pd.Series(np.nan, index=table.index, dtype=object)


def assemble_frame(identity: pd.DataFrame, values: pd.DataFrame) -> pd.DataFrame:
    """Identity columns, then the metric values: the raw launch frame (``attrs`` empty)."""
    values = values.reset_index(drop=True)
    frame = pd.concat([identity.reset_index(drop=True), values], axis=1)
    frame.attrs = {}
    return frame


def _nvtx(table: pd.DataFrame) -> pd.Series:
    """The ``nvtx`` column: each NVTX column's text, joined with ``" | "`` (NaN where none)."""
    cols = nvtx_columns(list(table.columns))
    if not cols:
        return pd.Series(np.nan, index=table.index, dtype=object)
    parts = [map_unique(table[c], _nvtx_text) for c in cols]
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
