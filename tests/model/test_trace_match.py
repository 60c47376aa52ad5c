"""A trace beside an Nsight Compute report of the same program (``tests/synthetic_pair.py``): kernels
matched by name (demangled and mangled), grid, block and order; the report's stakes weighed by each
kernel's time in the trace; one ranking with the gaps."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ncu_roof.read.kernel_names import mangled_function_name
from ncu_roof.rules.base import Finding
from ncu_roof.rules.timeline import rank, weigh_findings
from ncu_roof.traces import analyse_traces
from tests import synthetic_pair as sp


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, realdata: Path, reportgen_mod: Any) -> tuple[Path, Path]:
    return sp.make_pair(tmp_path_factory.mktemp("pair"), realdata, reportgen_mod)


def _trace_us_by_function() -> dict[str, float]:
    """Kernel microseconds per function name, summed from the trace's events by hand."""
    out: dict[str, float] = defaultdict(float)
    for ev in sp.trace_events()["traceEvents"]:
        if ev["cat"] == "kernel":
            name = ev["name"]
            short = mangled_function_name(name) or name.split("(")[0].split()[-1].split("<")[0]
            out[short] += ev["dur"]
    return dict(out)


def test_kernels_matched_by_name_grid_block_and_order(pair: tuple[Path, Path]) -> None:
    (res,), _ = analyse_traces(pair[0], [pair[1]])
    w = res.report
    assert w is not None
    k = w.match.kernels.set_index("kernel")
    by_hand = _trace_us_by_function()
    assert by_hand == sp.TRACE_US
    for name in ("gemm_kernel", "add_kernel"):
        assert k.loc[name, "trace_time_s"] == pytest.approx(by_hand[name] * 1e-6)
        assert k.loc[name, "ncu_time_s"] == pytest.approx(sum(sp.NCU_US[name]) * 1e-6)
        assert k.loc[name, "scale"] == pytest.approx(by_hand[name] / sum(sp.NCU_US[name]))
    assert k.loc["gemm_kernel", "match"] == "name, grid, block"  # the demangled signature, as in the report
    assert k.loc["add_kernel", "match"] == "function name, grid, block"  # the trace's name is mangled
    assert (k.loc["gemm_kernel", "paired"], k.loc["add_kernel", "paired"]) == (2, 1)
    # in order: the report's launches are gemm (id 0), add (1), gemm (2)
    launches = w.match.launches
    assert launches["ncu_id"].tolist()[:4] == [0.0, 1.0, pytest.approx(float("nan"), nan_ok=True), 2.0]
    assert k.loc["gemm_kernel", "replay_ratio"] == pytest.approx(500 / 400)
    un = w.match.unprofiled
    assert un["name"].tolist() == [sp.SCALE] and un["launches"].tolist() == [2]
    assert un["time_s"].iloc[0] == pytest.approx(by_hand["scale_kernel"] * 1e-6)
    assert w.match.matched_share == pytest.approx(1000 / 1040)


def test_report_stakes_weighed_by_trace_time_in_one_ranking(pair: tuple[Path, Path]) -> None:
    from ncu_roof.diagnosis import diagnose_paths

    d = diagnose_paths(pair[1])
    (res,), _ = analyse_traces(pair[0], [pair[1]])
    w = res.report
    assert w is not None
    tl = res.timeline
    assert (tl.span_s, tl.gpu_busy_s, tl.gpu_idle_s) == pytest.approx(
        (sp.SPAN_US * 1e-6, sp.BUSY_US * 1e-6, sp.IDLE_US * 1e-6))
    by_hand = _trace_us_by_function()
    staked = [f for f in d.findings if f.time_at_stake_s is not None]
    assert staked, "the synthetic report should give findings with stakes"
    ranked = {(f.rule, f.kernels): f for f in w.ranking}
    for f in staked:
        (kernel,) = f.kernels
        got = ranked[(f.rule, f.kernels)]
        scale = by_hand[kernel] / sum(sp.NCU_US[kernel])
        assert got.time_at_stake_s == pytest.approx(f.time_at_stake_s * scale)
        assert got.time_at_stake_s <= by_hand[kernel] * 1e-6  # never more than the kernel's time in the trace
        assert f"scaled by {scale:.3g}" in got.message
    gaps = {f.rule: f for f in res.findings}
    assert sum(f.time_at_stake_s or 0 for f in gaps.values()) <= tl.gpu_idle_s + 1e-12
    assert all(f in w.ranking for f in gaps.values())  # the gaps' findings rank beside the report's
    stakes = [f.time_at_stake_s for f in w.ranking if f.time_at_stake_s is not None]
    assert stakes == sorted(stakes, reverse=True)


def _finding(rule: str, kernels: tuple[str, ...], stake: float | None) -> Finding:
    return Finding(rule, kernels, None, "medium", f"{rule}.", stake)


def test_weighing_leaves_out_kernels_that_did_not_run() -> None:
    kernels = pd.DataFrame({"kernel": ["a", "b", "c"], "trace_time_s": [3e-3, 1e-3, 0.0],
                            "ncu_time_s": [1e-3, 4e-3, 2e-3]})
    out, notes = weigh_findings([_finding("x", ("a",), 5e-4), _finding("y", ("a", "b"), 1e-3),
                                 _finding("z", ("c",), 1e-3), _finding("w", (), 2e-3),
                                 _finding("v", ("b",), None)], kernels, span_s=1e-2)
    got = {f.rule: f.time_at_stake_s for f in out}
    assert got["x"] == pytest.approx(5e-4 * 3)
    assert got["y"] == pytest.approx(1e-3 * 4e-3 / 5e-3)
    assert got["w"] == pytest.approx(2e-3 * 4e-3 / 7e-3)  # no kernels: all matched kernels' ratio
    assert got["v"] is None and "z" not in got
    assert notes and "z (c)" in notes[0] and "did not run in the trace" in notes[0]
    assert {f.rule: f.severity for f in out}["x"] == "high"  # 15% of the span
    assert [f.rule for f in rank(out)] == ["x", "w", "y", "v"]
