"""Pinned region rules of the checklist (``ncu_roof.rules.checklist``): the messages with their
numbers, the regions judged and skipped, the cache-resident cut of ``at_roof_stop``.

Regions and launches come from the helpers of ``test_thresholds`` (a region of 2 launches,
1 ms, 1 GB of algorithmic bytes, a 1.25 TB/s practical DRAM roof).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import cached_diagnosis

from ncu_roof.rules import checklist
from ncu_roof.rules.base import Finding
from tests.rules.test_thresholds import TH, placed, region, run

pytestmark = pytest.mark.filterwarnings("ignore:All-NaN")


def _fuse(**values: object) -> list[Finding]:
    return run(checklist.fuse_extra_bytes, placed({}), pd.DataFrame([region(**values)]))


def _stop(**values: object) -> list[Finding]:
    return run(checklist.at_roof_stop, placed({}), pd.DataFrame([region(**values)]))


def test_fuse_extra_bytes_message_with_and_without_the_roof() -> None:
    [f] = _fuse(extra_bytes_factor=2.0, dram_bytes=2e9, ideal_time_s=0.8e-3)
    assert f.ids == (0, 1) and f.report == "r" and f.time_at_stake_s == pytest.approx(0.2e-3)
    assert f.message == ("region reg: 1 ms where 800 us would do at the practical roof (1.25 TB/s). Its 2 launches "
                         "move 2 GB from DRAM for 1 GB of work (2.0x extra bytes). Fuse its 2 kernels so "
                         "intermediates stay on chip: saves 1 GB.")
    # one kernel (its name cut at 60 characters), no DRAM roof known
    [g] = _fuse(extra_bytes_factor=2.0, dram_bytes=2e9, ideal_time_s=0.8e-3, dram_roof_bytes_per_s=np.nan,
                kernels=["k" * 70])
    assert "would do at the practical roof. Its 2 launches" in g.message
    assert f"Add reuse in {'k' * 59}… (tiling, data kept in shared memory or registers): saves 1 GB." in g.message


def test_small_regions_are_judged() -> None:
    # one launch, and a region of 1 algorithmic byte moving 2: both judged (any positive count)
    [f] = _fuse(extra_bytes_factor=2.0, dram_bytes=2e9, launches=1)
    assert "Its 1 launch moves 2 GB" in f.message
    [g] = _fuse(extra_bytes_factor=2.0, dram_bytes=2.0, alg_bytes=1.0)
    assert "move 2 B from DRAM for 1 B of work" in g.message


def test_at_roof_stop_needs_80_percent_of_the_roof() -> None:
    # ideal 795 us of 1 ms: 79.5% of the roof, under the 80% of at_roof_pct
    assert not _stop(extra_bytes_factor=1.1, dram_bytes=1.1e9, ideal_time_s=0.795e-3)
    [f] = _stop(extra_bytes_factor=1.1, dram_bytes=1.1e9, ideal_time_s=0.805e-3)
    assert f.rule == "at-roof-stop" and f.time_at_stake_s == pytest.approx(0.195e-3)


def test_a_region_faster_than_the_dram_peak_is_cache_resident_not_at_its_roof() -> None:
    # the cut: 100 / 0.88 x 1.02 = 115.9% of the practical roof (1.02 x the theoretical peak)
    assert TH.practical_dram_fraction == 0.88 and TH.above_peak_tolerance == 1.02
    [f] = _stop(extra_bytes_factor=1.1, dram_bytes=1.1e9, ideal_time_s=1.158e-3)  # 115.8%: at its roof
    assert f.rule == "at-roof-stop" and f.time_at_stake_s == 0.0
    assert "It takes 1 ms against an ideal 1.16 ms (116% of the roof) and moves 1.1 GB for the 1 GB" in f.message
    [g] = _stop(extra_bytes_factor=1.1, dram_bytes=1.1e9, ideal_time_s=1.2e-3)  # 120%: from cache
    assert (g.rule, g.severity, g.time_at_stake_s) == ("above-dram-roof", "info", 0.0)
    assert g.message == ("region reg: at 120% of its DRAM roof, faster than DRAM can feed it even at the theoretical "
                         "peak, so its data came from cache and the DRAM roofline does not describe it: this is not "
                         "the 'stop, on the roof' case. Capture L2 bytes (ncu-roof capture) to place it against L2.")
    [h] = _stop(extra_bytes_factor=1.1, dram_bytes=1.1e9, ideal_time_s=1.2e-3, l2_bytes=3e9)
    assert h.message.endswith("the 'stop, on the roof' case. Against L2 it moved 3 GB in 1 ms: judge it against the "
                              "L2 roof (ncu-roof table has the L2 columns).")
    assert checklist.cache_resident(pd.Series(region(ideal_time_s=1.16e-3)), TH)
    assert not checklist.cache_resident(pd.Series(region(ideal_time_s=1.159e-3)), TH)


def test_exactly_at_the_cache_resident_cut_is_not_cache_resident() -> None:
    cut = 100.0 / TH.practical_dram_fraction * TH.above_peak_tolerance
    ideal = cut / 100 * 1e-3  # of a 1 ms region: exactly the cut, "faster than" it is not
    assert ideal / 1e-3 * 100 == cut
    assert not checklist.cache_resident(pd.Series(region(ideal_time_s=ideal)), TH)


def test_below_roof_with_stall_counters_points_at_the_source_page() -> None:
    stalls = placed({"issue_active": 0.5, "achieved_occupancy_pct": 40.0})
    assert checklist._checked_text(stalls) == ("No fault in occupancy or stalls: look at the hottest instructions "
                                               "(ncu's Source page).")


def test_below_roof_and_at_roof_messages() -> None:
    bandwidth = {"pct_basis": "dram bandwidth", "achieved_dram_bytes_per_s": 5e11, "dram_roof_bytes_per_s": 5.9e11,
                 "pct_of_roof": 40.0, "headroom_s": 6e-4}
    [f] = run(checklist.below_roof_rule, placed(bandwidth))
    assert f.time_at_stake_s == pytest.approx(6e-4)
    assert f.message == ("k0: 600 us of 1 ms above its roofline bound, at 40% of its roof (1 launch). 500 GB/s of a "
                         "590 GB/s practical DRAM roof. No occupancy, access or instruction counters to tell why: "
                         "capture with ncu-roof capture.")
    [g] = run(checklist.at_roof, placed({**bandwidth, "pct_of_roof": 90.0, "headroom_s": 1e-4}))
    assert (g.severity, g.time_at_stake_s) == ("info", 0.0)
    assert g.message == ("k0: on its roof at 90% (1 launch), excellent for memory-bound work. 500 GB/s of a 590 GB/s "
                         "practical DRAM roof. Only fewer bytes make it faster: fusion, reuse or a narrower type (% of "
                         "peak FLOP/s is the wrong question here).")
    flops = {"pct_basis": "flops", "achieved_flops_per_s": 27e12, "attainable_flops_per_s": 30e12,
             "bound": "compute", "intensity_dram": 100.0, "compute_roof": "fp32 FMA", "pct_of_roof": 90.0,
             "headroom_s": 1e-4}
    [h] = run(checklist.at_roof, placed(flops))
    assert h.message == ("k0: on its roof at 90% (1 launch). 27 TFLOP/s of an attainable 30 TFLOP/s (compute-bound "
                         "at 100 FLOP/B, fp32 FMA roof). Only fewer FLOPs (a new algorithm), tensor cores or a "
                         "narrower type make it faster.")
    # a GEMM at its tensor roof (wangzy's CUTLASS s884gemm at 85%) is on the tensor cores already
    tensor = {**flops, "compute_roof": "tensor (input type unknown: fp16 assumed)"}
    [t] = run(checklist.at_roof, placed({**tensor, "cc": "7.0"}))  # a V100: no narrower tensor input
    assert t.message.endswith("Only fewer FLOPs (a new algorithm) makes it faster.")
    [a] = run(checklist.at_roof, placed({**tensor, "cc": "8.0"}))
    assert a.message.endswith("Only fewer FLOPs (a new algorithm) or a narrower type (INT8 where accuracy allows) "
                              "make it faster.")
    [h] = run(checklist.at_roof, placed({**tensor, "cc": "9.0"}))
    assert "a narrower type (FP8 where accuracy allows)" in h.message


def test_below_roof_names_its_busiest_pipe(realdata: Path) -> None:
    """tkhenry delayAndSum (expert read 4, rows 44-45): placed by its FLOPs at 6% of its roof, its busiest unit
    the ALU pipe at 55% (FMA 10%, DRAM 1.5%), under binding-unit's 50%-busy cut by its active share: below-roof
    said 'No fault in waves or pipes'. It names the pipe and what relieves it; the stake, capped by that pipe
    (13.2 s x (1 - 0.546)), is unchanged."""
    d = cached_diagnosis(realdata / "tkhenry-uofa__mixes-reconstruction" / "profile_output.ncu-rep")
    below = {f.kernels[0]: f for f in d.findings if f.rule == "below-roof"}
    slow = below["delayAndSum"]
    assert slow.time_at_stake_s == pytest.approx(5.972, rel=1e-3)
    assert slow.message.endswith("Its busiest unit is the ALU pipe (55%): less integer work per element: "
                                 "strength-reduce index arithmetic, hoist invariant comparisons, fewer conversions.")
    assert "No fault in" not in slow.message and "ALU pipe (53%)" in below["delayAndSumFast"].message
