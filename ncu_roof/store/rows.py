"""One report's rows for every store table: read, diagnosed and shaped where the report is read
(a process of the pool or a Dask worker), so the ingesting process holds one report's rows at a
time."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.jsonable import clean
from ncu_roof.store.schema import TABLES, undeclared

_SET = re.compile(r"--set[= ]+\"?([\w-]+)")


@dataclass(frozen=True)
class Source:
    """A report to ingest: its path as given, its sha256 and size (from the ingesting process)."""

    path: str
    sha256: str
    size: int
    name: str = ""  # how the report is named in the store: the stream (``-``) a temporary copy stands for


def metric_set(command_line: str | None) -> str | None:
    """The ncu metric set of a capture from its command line: ``--set NAME``; ``custom`` for
    ``--section``/``--metrics`` alone; ``basic`` (ncu's default) for neither; None without a line."""
    if not command_line:
        return None
    found = _SET.search(command_line)
    if found:
        return found.group(1)
    return "custom" if re.search(r"--(section|metrics)\b", command_line) else "basic"


def _json(value: Any) -> str:
    return json.dumps(clean(value), sort_keys=True, allow_nan=False)


def _format_version(path: Path) -> int | None:
    from ncu_roof.read.frame import is_report
    from ncu_roof.read.native.blocks import format_version

    return format_version(path) if is_report(path) else None


def _dominant(values: pd.Series) -> Any:
    known = values.dropna()
    return None if known.empty else known.astype(str).value_counts().index[0]


def _run_row(src: Source, table: pd.DataFrame, kernels: pd.DataFrame, labels: dict[str, str],
             batch: str, notes: list[str]) -> dict[str, Any]:
    from ncu_roof import __version__

    run = dict((table.attrs.get("runs") or [{}])[0])
    path = Path(src.path)
    return {
        "run_key": src.sha256, "sha256": src.sha256, "path": src.name or src.path, "size_bytes": src.size,
        "device": _dominant(table["device"]), "gpu_uuid": labels.get("gpu_uuid"), "cc": _dominant(table["cc"]),
        "input_kind": "ncu-rep" if _format_version(path) is not None else "csv",
        "report_format_version": _format_version(path), "ncu_version": run.get("ncu_version"),
        "cuda_version": run.get("cuda_version"), "driver_version": run.get("driver_version"),
        "replay_mode": run.get("replay_mode"), "clock_control": run.get("clock_control"),
        "cache_control": run.get("cache_control"), "profile_from_start": run.get("profile_from_start"),
        "metric_set": metric_set(run.get("command_line")), "command_line": run.get("command_line"),
        "launches": len(table), "kernels": len(kernels),
        "total_time_s": float(table["time_s"].sum(min_count=1)),
        "ncu_roof_version": __version__, "ingested_at": datetime.now(timezone.utc).replace(tzinfo=None),
        "batch": batch, "labels": _json(labels),
        "notes": _json([n.replace(src.path, src.name) for n in notes] if src.name else notes),
    }


def _spread(times: pd.Series) -> float:
    """Launch-to-launch spread of one kernel's times in a run: the median absolute deviation over
    the median (NaN with fewer than 3 known launches)."""
    known = times.dropna().to_numpy(dtype="float64")
    if len(known) < 3:
        return math.nan
    mid = float(np.median(known))
    return float(np.median(np.abs(known - mid)) / mid) if mid > 0 else math.nan


def _kernel_rows(placed: pd.DataFrame, run_key: str) -> pd.DataFrame:
    from ncu_roof.model.kernels import kernel_summary

    kernels = kernel_summary(placed)
    groups = placed.groupby(["device", "kernel"], dropna=False, sort=False)
    sums = groups[["dram_bytes", "l2_bytes", "l1_bytes", "flops"]].sum(min_count=1)
    spread = groups["time_s"].agg(_spread).rename("launch_time_spread")
    kernels = kernels.merge(sums.join(spread).reset_index(), on=["device", "kernel"], how="left")
    kernels["time_per_launch_s"] = kernels["time_s"] / kernels["launches"]
    kernels.insert(0, "run_key", run_key)
    return kernels


def _finding_rows(d: Any, run_key: str, device: Any) -> pd.DataFrame:
    rows = []
    for i, f in enumerate(d.findings):
        item = f.as_dict()
        rows.append({"run_key": run_key, "device": device, "position": i, "rule": item["rule"],
                     "kernels": _json(item["kernels"]), "region": item["region"], "severity": item["severity"],
                     "message": item["message"], "time_at_stake_s": item["time_at_stake_s"],
                     "evidence": _json(item["evidence"]), "ids": _json(item["ids"]), "report": item["report"]})
    return pd.DataFrame(rows, columns=[c for c, _ in TABLES["findings"]])


def _ncu_rule_rows(d: Any, run_key: str, device: Any) -> pd.DataFrame:
    rows = []
    for i, r in enumerate(d.ncu_rules):
        rows.append({"run_key": run_key, "device": device, "position": i, "rule": r.get("rule"),
                     "kernels": _json(r.get("kernels", [])), "ids": _json(r.get("ids", [])), "type": r.get("type"),
                     "verdict": r.get("verdict"), "ncu_message": r.get("ncu_message"),
                     "ncu_estimated_speedup_pct": r.get("ncu_estimated_speedup_pct"), "time_s": r.get("time_s"),
                     "record": _json(r), "report": r.get("report")})
    return pd.DataFrame(rows, columns=[c for c, _ in TABLES["ncu_rules"]])


def run_rows(src: Source, labels: dict[str, str], batch: str, reader: str = "native",
             device: str | None = None) -> dict[str, pd.DataFrame]:
    """Every table's rows for one report (a module-level function: it runs in workers)."""
    from ncu_roof.diagnosis import diagnose_table
    from ncu_roof.read.parallel import set_options
    from ncu_roof.read.table import load_table

    path = Path(src.path)
    old = set_options(quiet=True, scheduler=None)  # this task reads its report here, whole
    try:
        table = load_table([path], device, reader=reader, jobs=1)
    finally:
        set_options(**asdict(old))
    d = diagnose_table(table, lines=False)  # the store keeps no source lines
    launches = table.copy(deep=False)
    launches.insert(0, "launch_index", np.arange(len(launches), dtype="int64"))
    launches.insert(0, "run_key", src.sha256)
    kernels = _kernel_rows(d.placed, src.sha256)
    run = _run_row(src, table, kernels, labels, batch, list(d.notes))
    out = {"runs": pd.DataFrame([run]), "launches": launches, "kernels": kernels,
           "findings": _finding_rows(d, src.sha256, run["device"]),
           "ncu_rules": _ncu_rule_rows(d, src.sha256, run["device"])}
    for name, frame in out.items():
        if src.name and "report" in frame:  # a stream's copy named as the stream
            frame["report"] = frame["report"].replace(src.path, src.name)
        extra = undeclared(name, list(frame.columns))
        if extra:  # the schema is declared: a new tidy column must be declared (and SCHEMA_VERSION bumped)
            raise RuntimeError(f"store table {name} does not declare the columns {extra}: add them to "
                               "ncu_roof/store/schema.py")
    return out

