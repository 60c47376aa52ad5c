"""Nsight Systems SQLite exports read into the trace frames: a file written by hand with the tables
and columns of NVIDIA's "SQLite Export Schema Reference" (``ncu_roof/read/trace/nsys.py`` names them),
holding the same program as ``tests/synthetic_pair.py``: the same timeline, to the nanosecond."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ncu_roof.errors import InputError
from ncu_roof.model.timeline import measure
from ncu_roof.read.trace import read_trace
from ncu_roof.read.trace.nsys import read_nsys
from ncu_roof.rules.timeline import timeline_findings
from tests import synthetic_pair as sp
from tests.cli.test_cli import one_line_error, run

SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (id INT NOT NULL, name TEXT NOT NULL, busLocation TEXT, totalMemory INT,
  smCount INT, memoryBandwidth INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
  contextId INT NOT NULL, streamId INT NOT NULL, correlationId INT, globalPid INT, demangledName INT NOT NULL,
  shortName INT NOT NULL, mangledName INT, launchType INT, cacheConfig INT, registersPerThread INT NOT NULL,
  gridX INT NOT NULL, gridY INT NOT NULL, gridZ INT NOT NULL, blockX INT NOT NULL, blockY INT NOT NULL,
  blockZ INT NOT NULL, staticSharedMemory INT NOT NULL, dynamicSharedMemory INT NOT NULL,
  localMemoryPerThread INT NOT NULL, localMemoryTotal INT NOT NULL, gridId INT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT NOT NULL, end INT NOT NULL, eventClass INT NOT NULL,
  globalTid INT, correlationId INT, nameId INT NOT NULL, returnValue INT NOT NULL, callchainId INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
  contextId INT NOT NULL, streamId INT NOT NULL, correlationId INT, globalPid INT, bytes INT NOT NULL,
  copyKind INT NOT NULL, srcKind INT, dstKind INT);
CREATE TABLE NVTX_EVENTS (start INT NOT NULL, end INT, eventType INT NOT NULL, rangeId INT, category INT,
  color INT, text TEXT, globalTid INT, endGlobalTid INT, textId INT, domainId INT);
"""
TID = 281474976710657  # a serialized globalTid, as nsys writes them


def write_export(path: Path, extra: bool = False) -> Path:
    """The synthetic pair's trace as an nsys export (ns, ids into StringIds); ``extra`` adds a
    device-to-host copy and a cudaStreamSynchronize after the last kernel."""
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings) + 1)

    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, '0000:07:00.0', 8589934592, 46, 448000000000)", (sp.GPU,))
    for ev in sp.trace_events()["traceEvents"]:
        start, end = ev["ts"] * 1000, (ev["ts"] + ev["dur"]) * 1000
        a = ev.get("args", {})
        if ev["cat"] == "kernel":
            g, b = a["grid"], a["block"]
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,0,1,7,?,1,?,?,NULL,0,0,32,?,?,?,?,?,?,0,0,"
                       "0,0,1)", (start, end, a["correlation"], sid(ev["name"]), sid(ev["name"][:20]), *g, *b))
        elif ev["cat"] == "cuda_runtime":
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,?,?,0,NULL)",
                       (start, end, TID, a["correlation"], sid("cudaLaunchKernel_v7000")))
        else:  # the ops as torch.autograd.profiler.emit_nvtx names them; the steps as annotations
            text = f"{ev['name']}, seq = 1, sizes = [[64, 64]]" if ev["cat"] == "cpu_op" else ev["name"]
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?,?,59,NULL,0,0,?,?,NULL,NULL,0)", (start, end, text, TID))
    if extra:
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2700000, 2750000, 0, 1, 7, 99, 1, 4096, 2, 0, 0)")
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (2650000, 2760000, 1, ?, 100, ?, 0, NULL)",
                   (TID, sid("cudaStreamSynchronize_v3020")))
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
    db.commit()
    db.close()
    return path


def test_export_gives_the_same_timeline_as_the_json_trace(tmp_path: Path) -> None:
    nsys = read_nsys(write_export(tmp_path / "synthetic.sqlite"))
    kineto = read_trace(sp.write_trace(tmp_path / "synthetic.json"))
    a, b = measure(nsys), measure(kineto)
    assert (a.span_s, a.gpu_busy_s, a.gpu_idle_s) == pytest.approx((sp.SPAN_US * 1e-6, sp.BUSY_US * 1e-6,
                                                                     sp.IDLE_US * 1e-6), abs=1e-12)
    for field in ("span_s", "gpu_busy_s", "launches", "launch_floor_s", "kernel_switch_s", "syncs"):
        assert getattr(a, field) == pytest.approx(getattr(b, field), abs=1e-12), field
    assert a.gpu_name == sp.GPU
    assert list(a.steps["step"]) == ["ProfilerStep#1", "ProfilerStep#2"]
    assert a.ops.set_index("op")["kernel_time_s"].to_dict() == pytest.approx(
        b.ops.set_index("op")["kernel_time_s"].to_dict())  # ops from emit_nvtx ranges: "aten::mm, seq = 1"
    k = nsys.gpu[nsys.gpu["kind"] == "kernel"]
    assert list(k["grid_dim"].iloc[:3]) == ["(128, 1, 1)", "(1024, 1, 1)", "(64, 1, 1)"]
    assert set(k["call"].astype(str)) == {"cudaLaunchKernel"}  # the _v7000 suffix dropped
    assert [f.rule for f in timeline_findings(a)] == [f.rule for f in timeline_findings(b)]


def test_copies_and_syncs(tmp_path: Path) -> None:
    tl = measure(read_nsys(write_export(tmp_path / "synthetic_sync.sqlite", extra=True)))
    assert tl.copies == 1 and tl.copy_busy_s == pytest.approx(50e-6)
    assert tl.syncs == 1  # cudaStreamSynchronize_v3020
    assert tl.span_s == pytest.approx((2750 - 1050) * 1e-6)  # to the copy's end


def test_timeline_command_and_bad_files(tmp_path: Path) -> None:
    path = write_export(tmp_path / "synthetic_cli.sqlite")
    result = run("timeline", str(path))
    assert result.returncode == 0, result.stderr
    assert f"({sp.GPU})" in result.stdout and "span 1.59 ms: GPU busy 1.04 ms" in result.stdout
    fake = tmp_path / "synthetic_fake.sqlite"
    fake.write_text("not a database", encoding="utf-8")
    assert "not an SQLite file" in one_line_error(run("timeline", str(fake)))
    empty = tmp_path / "synthetic_empty.sqlite"
    sqlite3.connect(empty).executescript("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);")
    assert "without CUDA kernels" in one_line_error(run("timeline", str(empty)))
    with pytest.raises(InputError):
        read_nsys(fake)
