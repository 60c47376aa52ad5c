"""The per-instruction table's columns (see :mod:`ncu_roof.read.source`): what every source reader's
frame is put into."""

from __future__ import annotations

from typing import Any

from ncu_roof.read import metrics

IDENTITY = ("report", "id", "kernel", "function", "pc", "offset", "file", "line", "sass", "operation")


def frame_columns(frame: Any) -> Any:
    """``frame`` with every identity column (None where absent; the operation read from the SASS
    where a reader gives only that) first, then the counters it has in catalogue order as float64."""
    if "operation" not in frame and "sass" in frame:
        from ncu_roof.read.sass import operation_of_text

        frame["operation"] = [operation_of_text(x) if isinstance(x, str) else None for x in frame["sass"]]
    for column in IDENTITY:
        if column not in frame:
            frame[column] = None
    counters = [c for c in metrics.SOURCE_COLUMNS if c in frame]
    out = frame[[*IDENTITY, *counters]]
    cast = {c: "float64" for c in counters if out[c].dtype != "float64"}
    return out.astype(cast) if cast else out


def empty() -> Any:
    """A per-instruction table without rows."""
    import pandas as pd

    return frame_columns(pd.DataFrame({c: [] for c in IDENTITY}))
