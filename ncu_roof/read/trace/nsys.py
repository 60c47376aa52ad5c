"""Nsight Systems SQLite exports (``nsys export --type sqlite``) as the frames of a trace.

Enters: a ``.sqlite`` file. Leaves: a :class:`~ncu_roof.read.trace.Trace` with the same three frames
a PyTorch profiler trace gives, so the timeline, its findings, the report matching and the chart
work on it unchanged. The tables and columns read (NVIDIA's "SQLite Export Schema Reference",
https://docs.nvidia.com/nsight-systems/2021.5/nsys-exporter/exported_data.html; times in ns, names
in ``StringIds``; tables are made lazily, so any may be absent):

``CUPTI_ACTIVITY_KIND_KERNEL``  ``start``, ``end``, ``deviceId``, ``streamId``, ``correlationId``,
                                ``demangledName`` (else ``shortName``), ``gridX/Y/Z``, ``blockX/Y/Z``,
                                ``registersPerThread``, ``staticSharedMemory``, ``dynamicSharedMemory``
``CUPTI_ACTIVITY_KIND_MEMCPY``, ``..._MEMSET``  ``start``, ``end``, ``deviceId``, ``streamId``,
                                ``correlationId``, ``bytes``
``CUPTI_ACTIVITY_KIND_RUNTIME`` ``start``, ``end``, ``globalTid``, ``correlationId``, ``nameId``
                                (``cudaLaunchKernel_v7000``: the ``_vNNNN`` suffix is dropped)
``NVTX_EVENTS``                 ranges (``eventType`` 59 push/pop, 60 start/end): ``start``, ``end``,
                                ``globalTid``, ``text`` or ``textId``; a range named like an op
                                (``aten::mm, seq = 3``: ``torch.autograd.profiler.emit_nvtx``) is a CPU
                                op, the others annotations (``ProfilerStep#N`` marks steps)
``TARGET_INFO_GPU``             ``id``, ``name``: the GPU's name
``StringIds``                   ``id``, ``value``
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from ncu_roof.errors import InputError
from ncu_roof.read.inputs import copy_stream, open_input
from ncu_roof.read.trace import CPU_KIND_NAMES, GPU_KIND_NAMES, Trace, dim_text, screen
from ncu_roof.read.trace.links import link

SQLITE_MAGIC = b"SQLite format 3\x00"
PUSH_POP, START_END = 59, 60
_VERSION = re.compile(r"_v\d+$")
_LAUNCH = r"^cu(?:da)?(?:Launch\w*Kernel|GraphLaunch)"
_OP = re.compile(r"^(\w+::\w+)(?:,|$)")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _select(db: sqlite3.Connection, table: str, wanted: list[str]) -> pd.DataFrame:
    """The ``wanted`` columns of ``table`` (absent ones NaN; an absent table: no rows)."""
    have = _columns(db, table)
    if not have:
        return pd.DataFrame(columns=wanted)
    cols = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in wanted)
    return pd.read_sql_query(f"SELECT {cols} FROM {table}", db)


_VALID = ("typeof(start) = 'integer' AND typeof(\"end\") = 'integer' AND start >= 0 AND \"end\" >= start")
_WHY = {"NULL or not a whole number": "typeof(start) != 'integer' OR typeof(\"end\") != 'integer'",
        "a negative start": "typeof(start) = 'integer' AND start < 0",
        "an end before its start": "typeof(start) = 'integer' AND typeof(\"end\") = 'integer' AND start >= 0 "
                                   "AND \"end\" < start"}


def _timed(db: sqlite3.Connection, table: str, wanted: list[str], notes: list[str], name: str,
           where: str = "1") -> pd.DataFrame:
    """The ``wanted`` columns of the rows of ``table`` (matching ``where``) whose ``start`` and ``end``
    are whole nanoseconds, not negative, the end not before the start; the others left out, a note
    for each reason with its count."""
    have = _columns(db, table)
    if not have:
        return pd.DataFrame(columns=wanted)
    if not {"start", "end"} <= have:
        raise InputError(f"{name}: the {table} table has no start and end columns: not an nsys SQLite export "
                         "(export one with `nsys export --type sqlite`)")
    counts = db.execute(f"SELECT {', '.join(f'SUM({w})' for w in _WHY.values())} FROM {table} WHERE {where}"
                        ).fetchone()
    for why, n in zip(_WHY, counts, strict=True):
        if n:
            notes.append(f"{name}: {n:,} row{'s' if n != 1 else ''} of {table} left out: {why} in start/end")
    cols = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in wanted)
    return pd.read_sql_query(f"SELECT {cols} FROM {table} WHERE ({where}) AND {_VALID}", db)


def _lookup(ids: pd.Series, names: dict[int, str]) -> pd.Series:
    """``StringIds`` values of ``ids`` (None where an id is missing or unknown)."""
    return ids.map(lambda i: names.get(int(i)) if i is not None and i == i else None)


def _strings(db: sqlite3.Connection) -> dict[int, str]:
    return dict(db.execute("SELECT id, value FROM StringIds")) if _columns(db, "StringIds") else {}


def _gpu(db: sqlite3.Connection, names: dict[int, str], notes: list[str], name: str) -> pd.DataFrame:
    k = _timed(db, "CUPTI_ACTIVITY_KIND_KERNEL", [
        "start", "end", "deviceId", "streamId", "correlationId", "demangledName", "shortName", "gridX", "gridY",
        "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory"],
        notes, name)
    name_id = k["demangledName"].where(k["demangledName"].notna(), k["shortName"])
    k = k.assign(kind="kernel", name=_lookup(name_id, names), bytes=np.nan,
                 shared=k["staticSharedMemory"].astype(float) + k["dynamicSharedMemory"].astype(float))
    parts = [k]
    for kind, table in (("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"), ("memset", "CUPTI_ACTIVITY_KIND_MEMSET")):
        c = _timed(db, table, ["start", "end", "deviceId", "streamId", "correlationId", "bytes"], notes, name)
        parts.append(c.assign(kind=kind, name=f"Memory {kind}"))
    return pd.concat([p for p in parts if len(p)] or [k], ignore_index=True)


def _nvtx(db: sqlite3.Connection, names: dict[int, str], notes: list[str], name: str) -> pd.DataFrame:
    n = _timed(db, "NVTX_EVENTS", ["start", "end", "eventType", "globalTid", "text", "textId"], notes, name,
               f"eventType IN ({PUSH_POP}, {START_END})")
    text = n["text"].where(n["text"].notna(), _lookup(n["textId"], names))
    op = text.astype("string").str.extract(_OP, expand=False)
    return pd.DataFrame({"kind": np.where(op.notna(), "op", "annotation"), "name": op.fillna(text).to_numpy(),
                         "start": n["start"].to_numpy(), "end": n["end"].to_numpy(),
                         "thread": n["globalTid"].to_numpy()})


def read_nsys(path: str | Path) -> Trace:
    """An Nsight Systems SQLite export as a :class:`~ncu_roof.read.trace.Trace`."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a pipe: SQLite reads at random, so from a copy, read once
        with open_input(path) as fh:
            path = copy_stream(fh.read(), str(path), path.name)
    with path.open("rb") as fh:
        if fh.read(16) != SQLITE_MAGIC:
            raise InputError(f"{path}: not an SQLite file (export one with `nsys export --type sqlite`)")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = _strings(db)
            notes: list[str] = []
            gpu, nvtx = _gpu(db, names, notes, path.name), _nvtx(db, names, notes, path.name)
            calls = _timed(db, "CUPTI_ACTIVITY_KIND_RUNTIME", ["start", "end", "globalTid", "correlationId",
                                                               "nameId"], notes, path.name)
            gpus = _select(db, "TARGET_INFO_GPU", ["id", "name"]).dropna()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path}: cannot read the SQLite export ({exc})") from exc
    if gpu.empty and calls.empty:
        raise InputError(f"{path}: an SQLite file without CUDA kernels, copies or runtime calls (was it "
                         "profiled with --trace=cuda?)")
    launches = int(_lookup(calls["nameId"], names).astype("string").str.contains(_LAUNCH).fillna(False).sum())
    if launches and not (gpu["kind"] == "kernel").any():
        raise InputError(f"{path}: {launches:,} kernel launch calls but no kernels (the CUPTI_ACTIVITY_KIND_KERNEL "
                         "table is missing or empty): the export is incomplete; export it again with "
                         "`nsys export --type sqlite`")
    return _trace(path, gpu, calls, nvtx, names, gpus, notes)


def _trace(path: Path, gpu: pd.DataFrame, calls: pd.DataFrame, nvtx: pd.DataFrame, names: dict[int, str],
           gpus: pd.DataFrame, notes: list[str]) -> Trace:
    base_ns = int(min(int(f["start"].min()) for f in (gpu, calls, nvtx) if len(f)))

    def seconds(ns: pd.Series) -> np.ndarray:  # whole ns less the base before the float: epoch times stay exact
        return (ns.to_numpy(dtype=np.int64) - base_ns).astype(np.float64) * 1e-9

    threads = {t: i for i, t in enumerate(pd.unique(pd.concat([calls["globalTid"], nvtx["thread"]]).dropna()))}
    kinds = pd.Categorical(gpu["kind"], categories=list(GPU_KIND_NAMES))
    g = {axis: gpu.get(f"{part}{axis[-1].upper()}", pd.Series(np.nan, index=gpu.index)).astype(float).to_numpy()
         for part in ("grid", "block") for axis in (f"{part}_x", f"{part}_y", f"{part}_z")}
    for part in ("grid", "block"):  # a dimension below 1: the three unknown (their product is no size)
        wrong = np.zeros(len(gpu), dtype=bool)
        for axis in "xyz":
            wrong |= g[f"{part}_{axis}"] < 1
        for axis in "xyz":
            g[f"{part}_{axis}"] = np.where(wrong, np.nan, g[f"{part}_{axis}"])
        if wrong.any():
            notes.append(f"{path.name}: {int(wrong.sum()):,} kernel row(s) with a {part} dimension below 1: kept, "
                         f"the {part} unknown")
    start, end = seconds(gpu["start"]), seconds(gpu["end"])
    frame = pd.DataFrame({
        "kind": kinds, "name": _text(gpu["name"]), "start_s": start, "duration_s": end - start,
        "end_s": end, "device": gpu["deviceId"].astype(float), "stream": gpu["streamId"].astype(float),
        "correlation": gpu["correlationId"].astype(float),
        "grid_dim": dim_text(g["grid_x"], g["grid_y"], g["grid_z"]),
        "block_dim": dim_text(g["block_x"], g["block_y"], g["block_z"]),
        "grid_size": g["grid_x"] * g["grid_y"] * g["grid_z"], "block_size": g["block_x"] * g["block_y"] * g["block_z"],
        "registers_per_thread": gpu.get("registersPerThread", pd.Series(np.nan, index=gpu.index)).astype(float),
        "shared_mem_bytes": gpu.get("shared", pd.Series(np.nan, index=gpu.index)).astype(float),
        "bytes": gpu["bytes"].astype(float)})
    call_names = _lookup(calls["nameId"], names).map(lambda n: _VERSION.sub("", n) if isinstance(n, str) else None)
    _unnamed(path.name, gpu["name"], "kernel", notes)
    _unnamed(path.name, call_names, "runtime call", notes)
    cs, ce = seconds(calls["start"]), seconds(calls["end"])
    call_frame = pd.DataFrame({"name": _text(call_names), "start_s": cs, "duration_s": ce - cs,
                               "end_s": ce, "thread": calls["globalTid"].map(threads).fillna(-1).astype(np.int32),
                               "correlation": calls["correlationId"].astype(float)})
    ns, ne = seconds(nvtx["start"]), seconds(nvtx["end"])
    cpu = pd.DataFrame({"kind": pd.Categorical(nvtx["kind"], categories=list(CPU_KIND_NAMES)),
                        "name": _text(nvtx["name"]), "start_s": ns, "duration_s": ne - ns,
                        "end_s": ne, "thread": nvtx["thread"].map(threads).fillna(-1).astype(np.int32),
                        "input_dims": pd.Categorical([None] * len(nvtx)),
                        "input_types": pd.Categorical([None] * len(nvtx))})
    _share_names(frame, call_frame, cpu)
    devices = {int(i): str(n) for i, n in zip(gpus["id"], gpus["name"], strict=True)}
    if len(set(devices.values())) == 1:  # one GPU model: every device id is it
        devices = {int(d): next(iter(devices.values())) for d in frame["device"].dropna().unique()} or devices
    _check_args(path.name, frame, notes)
    frame["gpu"] = frame["device"].map(lambda d: devices.get(int(d)) if d == d else None).astype("string")
    if not devices:
        notes.append(f"{path.name}: no TARGET_INFO_GPU table: the GPU is not named")
    frame, call_frame, cpu, screened = screen(path.name, frame, call_frame, cpu)
    link(frame, call_frame, cpu)
    return Trace(path, frame, call_frame, cpu, base_ns // 1000, devices, None, notes + screened)


def _check_args(name: str, frame: pd.DataFrame, notes: list[str]) -> None:
    """Launch arguments out of range (a dimension below 1, a negative count or id) made unknown, a note each."""
    for cols, lowest in ((("registers_per_thread",), 0), (("shared_mem_bytes",), 0), (("bytes",), 0),
                         (("device",), 0), (("stream",), 0)):
        wrong = (frame[cols[0]] < lowest).to_numpy()
        if wrong.any():
            for col in cols:
                frame.loc[wrong, col] = pd.NA if col.endswith("_dim") else np.nan
            n = int(wrong.sum())
            notes.append(f"{name}: {n:,} GPU activit{'ies' if n != 1 else 'y'} with '{cols[0]}' below {lowest}: "
                         f"kept, {'their' if n != 1 else 'its'} {cols[0]} unknown")


def _share_names(gpu: pd.DataFrame, calls: pd.DataFrame, cpu: pd.DataFrame) -> None:
    """One set of name categories for the three frames (the links compare codes across them)."""
    every = pd.Index(pd.unique(pd.concat([f["name"].dropna().astype(str) for f in (gpu, calls, cpu)],
                                         ignore_index=True)))
    for f in (gpu, calls, cpu):
        f["name"] = pd.Categorical(_text(f["name"]), categories=every)


def _text(values: pd.Series) -> pd.Categorical:
    """Names as categories, the unknown ones (None, NaN) missing, not the text 'None'."""
    return pd.Categorical(values.astype(object).where(values.notna(), None).map(
        lambda v: v if v is None else str(v)))


def _unnamed(name: str, names: pd.Series, what: str, notes: list[str]) -> None:
    """A note on the rows whose name id is not in ``StringIds``."""
    n = int(names.isna().sum())
    if n:
        notes.append(f"{name}: {n:,} {what}{'s' if n != 1 else ''} with a name id not in StringIds: "
                     f"{'their' if n != 1 else 'its'} name unknown (syncs and launches among them are not counted)")
