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

from pathlib import Path

import pandas as pd

from ncu_roof.read import metrics as M
from ncu_roof.read.csv.file import check_one_export, complete_rows, device_hints, parse_header, read_export
from ncu_roof.read.csv.wide import load_wide
from ncu_roof.read.frame import name_csv_workloads

__all__ = ["load_csv"]

def load_csv(path: str | Path) -> pd.DataFrame:
    """Read an Nsight Compute CSV export (raw page, details page or ``--metrics`` stdout).

    Returns the raw launch frame: identity columns, then one float64 column per needed ncu
    metric in base units. ``attrs["notes"]`` lists remarks, ``attrs["ncu_rule_results"]`` the
    rule rows of a details export (the schema in :mod:`ncu_roof.read.frame`). Raises
    :class:`ReportLoadError` (one line) for unreadable input.
    """
    given, path = str(path), Path(path)
    notes: list[str] = []
    preamble, body = read_export(path, notes)
    body, cut = complete_rows(body)
    notes += cut
    header = parse_header(body)
    before = len(notes)
    try:
        if "Metric Name" in header or "Metric Value" in header:
            from ncu_roof.read.csv.long import load_long  # the details page's reader, imported for it alone

            frame = load_long(body, header, path, notes)
        else:
            notes += M.damaged_name_notes(header)
            frame = load_wide(body, header, path, notes)
    except Exception:
        check_one_export(preamble, body, path)  # a second export joined to the first, most likely
        raise
    if any(n.endswith("without a numeric launch ID") for n in notes[before:]):
        check_one_export(preamble, body, path)  # a second export's header is such a row
    frame["report"] = given
    notes += name_csv_workloads(frame)
    if frame.empty:
        notes.append("the CSV has a header but no kernel launches")
    frame.attrs.setdefault("ncu_rule_results", [])
    frame.attrs["notes"] = notes
    frame.attrs["device_hints"] = device_hints(preamble)
    return frame
