"""Debug builds (nvcc -G) told from their executed SASS: MOV share and generic loads and stores."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ncu_roof.diagnosis import diagnose_paths
from ncu_roof.model.build import DEBUG_MOV_SHARE, debug_build, mark_debug_builds
from ncu_roof.render.digest import render_digest
from ncu_roof.render.text import render_text


def test_a_debug_build_needs_both_marks() -> None:
    rows = pd.DataFrame({"inst_mov": [30.0, 29.9, 45.0, 45.0, float("nan")],
                         "inst_generic_memory": [1.0, 1.0, 0.0, float("nan"), 1.0],
                         "warp_inst_executed": [100.0] * 5, "report": "r", "kernel": list("abcde")})
    assert DEBUG_MOV_SHARE == 0.30
    assert list(debug_build(rows)) == [True, False, False, False, False]
    assert list(debug_build(rows.drop(columns="inst_mov"))) == [False] * 5  # no per-opcode counts: not judged
    runs = mark_debug_builds([{"report": "r"}, {"report": "other"}], rows)
    assert runs == [{"report": "r", "debug_build_kernels": ["a"], "debug_mov_pct": [30.0, 30.0]}, {"report": "other"}]


def test_the_real_debug_builds_are_told_and_no_optimized_report_is(realdata: Path, ncu_examples: Path) -> None:
    """aplainjane's reduction ladder (built with -G: MOV 41.0-44.9% of the instructions, every load a generic
    LD.E, no LDG or LDS even where the kernel uses shared memory) is said to be a debug build, first among the
    capture lines; Nsight Compute's own examples and the optimized reports read are not (MOV at most 14%)."""
    d = diagnose_paths(realdata / "aplainjane__CUDA_Learning" / "report.ncu-rep")
    [run] = d.runs
    assert run["debug_build_kernels"] == ["reduceNeighbored", "reduceNeighboredLess", "reduceInterleaved",
                                          "reduceUnrolled", "reduceShared"]
    assert run["debug_mov_pct"] == [pytest.approx(41.0), pytest.approx(44.9)]
    text = render_text(d, width=1000)
    assert ("Debug build (nvcc -G) in " + str(realdata / "aplainjane__CUDA_Learning" / "report.ncu-rep")
            + ": reduceNeighbored, reduceNeighboredLess, reduceInterleaved, reduceUnrolled and 1 more (register "
            "copies 41-45% of the instructions executed, memory reached by generic loads and stores). Rebuild "
            "without -G (-lineinfo keeps the source lines) and profile again: the times and the advice below are "
            "for unoptimized code.") in text
    assert text.index("Debug build") < text.index("Advice")
    assert ("Debug build (nvcc -G): 5 kernels (MOV 41-45% of instructions, generic LD/ST): rebuild without -G and "
            "profile again") in render_digest(d)
    optimized = [*sorted(ncu_examples.glob("*/*.ncu-rep")),
                 *sorted(realdata.glob("princ0301__cuda_gpu_kernel/*.ncu-rep")),
                 *sorted(realdata.glob("jestes15__EE384_FinalProject/*.ncu-rep"))]
    assert len(optimized) >= 6
    for path in optimized:
        assert not any(r.get("debug_build_kernels") for r in diagnose_paths(path).runs), path
