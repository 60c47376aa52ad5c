"""A synthetic pair of a PyTorch profiler trace and an Nsight Compute report of the same program,
written by hand with numbers a reader can check (the trace and the report ``tests/reportgen.py``
writes on a real report's launch).

The program, two profiler steps on one thread and stream 7 of an RTX 3070 (the template report's GPU) (times in us from
the first kernel; ``ts`` in the file is 1000 earlier than each line's first number below):

==========  =====================================  ===========  ===========  =====================
 kernel      trace name                             grid, block  trace        report (ncu replay)
==========  =====================================  ===========  ===========  =====================
 gemm        ``void gemm_kernel<float>(...)``       128, 256     2 x 400 us   2 x 500 us
 add         ``_Z10add_kernelPfPKfi`` (mangled)     1024, 128    2 x 100 us   1 x 120 us
 scale       ``void scale_kernel(float*, float,     64, 128      2 x 20 us    not profiled
             int)``
==========  =====================================  ===========  ===========  =====================

Step 1: gemm 50-450, add 450-550 (queued), scale 620-640 (launched at 605: a 70 us launch gap);
step 2 the same 1000 us later (a 410 us gap before its gemm, launched at 1020). Span 50-1640:
1590 us; busy 2 x 520 = 1040 us; idle 550 us (gaps of 70, 410 and 70 us, all ``launch``).
Kernel time in the trace: gemm 800 us, add 200 us; in the report gemm 1000 us, add 120 us: a gemm
finding's stake is scaled by 800/1000, an add finding's by 200/120.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GPU = "NVIDIA GeForce RTX 3070"  # the template report's GPU
GEMM = "void gemm_kernel<float>(float const*, float*, int)"
ADD_MANGLED = "_Z10add_kernelPfPKfi"
ADD = "add_kernel(float*, float const*, int)"
SCALE = "void scale_kernel(float*, float, int)"
# (name, op, grid, block, op start, launch call start, kernel start, kernel duration), us, step 1
KERNELS = [
    (GEMM, "aten::mm", (128, 1, 1), (256, 1, 1), 1010, 1020, 1050, 400),
    (ADD_MANGLED, "aten::add", (1024, 1, 1), (128, 1, 1), 1045, 1050, 1450, 100),
    (SCALE, "aten::mul", (64, 1, 1), (128, 1, 1), 1600, 1605, 1620, 20),
]
STEP_US = 1000
TRACE_US = {"gemm_kernel": 800, "add_kernel": 200, "scale_kernel": 40}
NCU_US = {"gemm_kernel": (500, 500), "add_kernel": (120,)}
SPAN_US, BUSY_US, IDLE_US = 1590, 1040, 550
TEMPLATE_GPC_HZ = 1_417_594_884.4884489  # CuVectorAddDrv's gpc clock (durations agree with cycles)


def trace_events() -> dict[str, Any]:
    """The trace as ``export_chrome_trace`` writes it (two steps, one thread, one stream)."""
    events: list[dict[str, Any]] = []
    corr = 0
    for step in (1, 2):
        shift = (step - 1) * STEP_US
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": 1000 + shift, "dur": 999})
        for name, op, grid, block, op_ts, call_ts, k_ts, k_dur in KERNELS:
            corr += 1
            events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": op_ts + shift,
                           "dur": 25, "args": {"Input Dims": [[64, 64], [64, 64]]}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": call_ts + shift, "dur": 8, "args": {"correlation": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": k_ts + shift,
                           "dur": k_dur, "args": {"device": 0, "stream": 7, "correlation": corr,
                                                  "grid": list(grid), "block": list(block),
                                                  "registers per thread": 32, "shared memory": 0}})
    return {"deviceProperties": [{"id": 0, "name": GPU}], "traceEvents": events}


def write_trace(path: Path) -> Path:
    path.write_text(json.dumps(trace_events()), encoding="utf-8")
    return path


def _launch(reportgen: Any, short: str, demangled: str, grid: tuple[int, ...], block: tuple[int, ...],
            us: float, flops_ffma: float, fadd: float, read: float, write: float) -> Any:
    metrics: dict[str, Any] = {
        "gpu__time_duration.sum": us * 1e3, "gpc__cycles_elapsed.max": us * 1e-6 * TEMPLATE_GPC_HZ,
        "dram__bytes_read.sum": read, "dram__bytes_write.sum": write,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": flops_ffma,
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": fadd,
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0.0,
        "launch__grid_size": grid[0] * grid[1] * grid[2], "launch__block_size": block[0] * block[1] * block[2],
    }
    for axis, g, b in zip("xyz", grid, block, strict=True):
        metrics[f"launch__grid_dim_{axis}"] = g
        metrics[f"launch__block_dim_{axis}"] = b
    return reportgen.LaunchSpec(kernel=short, demangled=demangled, metrics=metrics)


def write_report(path: Path, template: Path, reportgen: Any, pb: Any) -> Path:
    """The report: gemm twice at 500 us (2.4375e9 FFMA each), add once
    at 120 us (20 MB read, 10 MB written)."""
    gemm = [_launch(reportgen, "gemm_kernel", GEMM, (128, 1, 1), (256, 1, 1), us, 2.4375e9, 0.0, 40e6, 10e6)
            for us in NCU_US["gemm_kernel"]]
    add = _launch(reportgen, "add_kernel", ADD, (1024, 1, 1), (128, 1, 1), 120, 0.0, 16e6, 20e6, 10e6)
    reportgen.write_report(path, [gemm[0], add, gemm[1]], template, pb=pb)
    return path


def make_pair(folder: Path, realdata: Path, reportgen: Any) -> tuple[Path, Path]:
    """The trace and the report written under ``folder`` (``reportgen``: conftest's ``reportgen_mod``)."""
    template = realdata / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep"
    report = write_report(folder / "synthetic_pair.ncu-rep", template, reportgen, reportgen.proto_modules())
    return write_trace(folder / "synthetic_pair.json"), report
