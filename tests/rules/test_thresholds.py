"""Every number of ``roofline.Thresholds``, tested just below and just above its default.

Through the per-launch signals of ``ncu_roof.rules.traps`` (plain dict rows), the rule functions
of ``ncu_roof.rules.checklist`` and ``ncu_roof.rules.traps`` (a small placed table in a
``Context``), ``roofline.place`` for the overhead cut and ``rules.base.run_severity`` for the
severity shares. Rule ids are looked up by prefix (``fp64-*``: ``fp64-on-consumer-gpu`` is now
``fp64-pipe``); the messages are checked by the numbers they carry, not their full text.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from stake_oracle import priced

from ncu_roof.model.roofline import EPS, Thresholds, place, reaches, under
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.normalize import normalize
from ncu_roof.rules import RULES, checklist, evaluate, launch, partial, signals, stakes, traps
from ncu_roof.rules.base import Context, Finding, run_severity
from ncu_roof.rules.stakes import Relief

TH = Thresholds()
pytestmark = pytest.mark.filterwarnings("ignore:All-NaN")
FP64_SIGNAL = signals.fp64_signal


def test_the_defaults_are_the_documented_ones() -> None:
    assert (TH.overhead_time_s, TH.overhead_explained, TH.practical_dram_fraction) == (10e-6, 0.5, 0.88)
    assert (TH.at_roof_pct, TH.sol_busy_pct, TH.extra_bytes_factor, TH.ideal_bytes_factor) == (80.0, 60.0, 1.5, 1.2)
    assert (TH.min_stake_fraction, TH.overhead_fixed_share, TH.overhead_size_ratio) == (0.005, 0.5, 2.0)
    assert (TH.overhead_scaling_max_time_s, TH.underfill_min_idle, TH.wave_tail_min_loss) == (100e-6, 0.05, 0.2)
    assert (TH.above_peak_tolerance, TH.consumer_fp64_ratio) == (1.02, 0.125)
    assert (TH.fp64_time_share, TH.uncoalesced_excess, TH.uncoalesced_sectors_per_request) == (0.25, 1.1, 16.0)
    assert (TH.bank_conflict_share, TH.low_occupancy_ratio, TH.low_theoretical_occupancy_pct) == (0.25, 0.7, 50.0)
    assert (TH.divergence_threads, TH.severity_high_share, TH.severity_medium_share) == (28.0, 0.10, 0.02)
    assert TH.overhead_low_stake_s == 10e-6  # an overhead-regime finding under this in all: low
    # from the limiter merge: no_fma_max_fma_fraction (FMA share < 0.25) became no_fma_min_unfused
    # (add+mul share >= 0.3) with fp_time_share; the latency bound and the limiter rules brought the rest
    assert (TH.latency_pct_of_roof, TH.no_fma_min_unfused, TH.fp_time_share) == (50.0, 0.3, 0.25)
    assert (TH.fp64_pipe_busy_pct, TH.fp64_division_share, TH.busy_pipe_pct) == (50.0, 0.25, 50.0)
    assert (TH.stall_dominant_share, TH.low_issue_active, TH.block_slots_fill, TH.occupancy_gain) == (
        0.25, 0.6, 0.5, 1.25)
    assert TH.launch_floor_s == 1.5e-6  # the shortest real launches (Turing, 1.47-1.5 us)
    assert TH.serialized_wavefronts_per_request == 4.0  # a warp's 16-byte accesses need up to 4
    assert TH.split_warp_wavefronts_per_request == 2.0  # a warp over 2+ rows of a narrow block: one segment a row
    assert TH.l2_rewrites_per_sector == 2.0  # chart-only: L2 sectors written by L1 per distinct sector touched
    assert TH.negligible_stake_s == 250e-9
    assert TH.local_min_share == 0.02  # local bytes of L1's or L2's named as a cause
    assert TH.idle_warp_share == 0.75  # warps with no global load or store, of the grid's
    assert TH.divergence_uniform_branch_pct == 95.0  # without threads per instruction: branch uniformity
    fields = set(Thresholds.__dataclass_fields__)  # a new field must be added above (and pinned below)
    assert len(fields) == 43, sorted(fields)


def test_threshold_tolerance_is_1e_9_relative_floored_at_an_absolute_1e_9() -> None:
    # reaches(x, t): x >= t - EPS x max(1, |t|); under() is its negation; unknown x is neither
    assert EPS == 1e-9
    assert reaches(0.2 - 0.95e-9, 0.2) and not reaches(0.2 - 1.05e-9, 0.2)  # |t| < 1: 1e-9 absolute
    assert reaches(60.0 - 0.95 * 60e-9, 60.0) and not reaches(60.0 - 1.05 * 60e-9, 60.0)  # relative
    assert not under(0.2 - 0.95e-9, 0.2) and under(0.2 - 1.05e-9, 0.2)
    assert reaches(1 - 64 / 80, 0.2)  # 0.19999999999999996 counts as 0.2
    assert not reaches(float("nan"), 0.2) and not under(float("nan"), 0.2)


# --- helpers ----------------------------------------------------------------------------------
BELOW = {"bound": "memory", "pct_of_roof": 40.0}  # a launch below its roof


def placed(*rows: dict[str, Any]) -> pd.DataFrame:
    """A minimal placed table: one row per launch, kernel k<i> unless given."""
    out = []
    for i, r in enumerate(rows):
        row: dict[str, Any] = {"report": "r", "device": "gpu", "kernel": f"k{i}", "id": i, "time_s": 1e-3,
                               "bound": "memory", "pct_of_roof": 50.0, "headroom_s": 5e-4}
        row.update(r)
        out.append(row)
    return pd.DataFrame(out)


def units(**bounds: float) -> dict[str, Any]:
    """The bottleneck model's columns for a hand-made launch of 1 ms: each unit's lower bound (s),
    the binding unit and its share."""
    binding = max(bounds, key=lambda u: bounds[u])
    return {**{f"unit_{u}_s": b for u, b in bounds.items()}, "binding_unit": binding,
            "binding_unit_share": bounds[binding] / 1e-3}


def without_relief(s: dict[str, Any] | None) -> dict[str, Any] | None:
    """A signal's numbers without its relief (checked on its own)."""
    return None if s is None else {k: v for k, v in s.items() if k != "relief"}


def run(rule: Any, frame: pd.DataFrame, regions: pd.DataFrame | None = None, th: Thresholds = TH) -> list[Finding]:
    return list(rule(Context(frame, regions if regions is not None else pd.DataFrame(), th)))


# --- placement: the overhead regime ----------------------------------------------------------
def _short(time_s: float, dram: float) -> pd.Series:
    raw = pd.DataFrame([{**{c: pd.NA for c in IDENTITY_COLUMNS}, "report": "r", "id": 0, "kernel": "k",
                         "gpu__time_duration.sum": time_s, "dram__bytes.sum": dram,
                         "dram__bytes.sum.peak_sustained": 100.0, "dram__cycles_elapsed.avg.per_second": 1e10}])
    return place(normalize(raw)).iloc[0]  # DRAM roof 0.88 x 1 TB/s = 880 GB/s


def test_overhead_time_cut_at_10_us() -> None:
    # 1 MB at 880 GB/s: 1.136 us of work, well under half of either time
    assert _short(9.9e-6, 1e6)["bound"] == "overhead"
    # not launch-bound at 10.1 us; 1 MB / 10.1 us = 99 GB/s = 11.3% of the 880 GB/s roof, under
    # latency_pct_of_roof (50%) with no speed of light to call it busy: latency-bound (was "memory"
    # before the latency bound was merged)
    assert _short(10.1e-6, 1e6)["bound"] == "latency"
    assert _short(10.1e-6, 1e6)["pct_of_roof"] == pytest.approx(1e6 / 10.1e-6 / 880e9 * 100)


def test_latency_pct_of_roof_cut_at_50_on_the_bandwidth_basis() -> None:
    # 100 us launches (not launch-bound): 0.499 or 0.501 of 100 us at 880 GB/s
    assert _short(100e-6, 0.499 * 100e-6 * 880e9)["bound"] == "latency"
    assert _short(100e-6, 0.501 * 100e-6 * 880e9)["bound"] == "memory"
    assert _short(100e-6, 0.5 * 100e-6 * 880e9)["bound"] == "memory"  # exactly 50% is not "under"
    assert TH.latency_pct_of_roof == 50.0


def test_sol_busy_pct_keeps_a_launch_under_its_roof_memory_or_compute_bound() -> None:
    # 10% of the roof, but ncu's memory (or SM) throughput at 60%: busy, so not latency-bound
    def bound(memory: float, sm: float) -> str:
        raw = pd.DataFrame([{**{c: pd.NA for c in IDENTITY_COLUMNS}, "report": "r", "id": 0, "kernel": "k",
                             "gpu__time_duration.sum": 100e-6, "dram__bytes.sum": 0.1 * 100e-6 * 880e9,
                             "dram__bytes.sum.peak_sustained": 100.0,
                             "dram__cycles_elapsed.avg.per_second": 1e10,
                             "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": memory,
                             "sm__throughput.avg.pct_of_peak_sustained_elapsed": sm}])
        return str(place(normalize(raw)).iloc[0]["bound"])

    assert (bound(60.0, 10.0), bound(59.9, 10.0)) == ("memory", "latency")
    # the SM side 60% busy binds (the bottleneck model's ``sm`` unit, 60 us against the DRAM's 11 us)
    assert (bound(10.0, 60.0), bound(10.0, 59.9)) == ("compute", "latency")


def test_overhead_explained_share_cut_at_half_the_time() -> None:
    # 5 us launches; the roofline explains 0.49 or 0.51 of it
    assert _short(5e-6, 0.49 * 5e-6 * 880e9)["bound"] == "overhead"
    assert _short(5e-6, 0.51 * 5e-6 * 880e9)["bound"] == "memory"
    assert _short(5e-6, 0.51 * 5e-6 * 880e9)["time_lower_bound_s"] == pytest.approx(0.51 * 5e-6)


# --- checklist: at-roof, below-roof, fuse-extra-bytes, at-roof-stop -----------------------------
def test_at_roof_pct_cut_at_80() -> None:
    frame = placed({"pct_of_roof": 79.9, "headroom_s": 2e-4}, {"pct_of_roof": 80.1, "headroom_s": 1e-4})
    assert [f.kernels for f in run(checklist.below_roof_rule, frame)] == [("k0",)]
    assert [f.kernels for f in run(checklist.at_roof, frame)] == [("k1",)]
    assert not signals.occupancy_signal({"bound": "memory", "pct_of_roof": 80.1, "achieved_occupancy_pct": 5.0,
                                       "theoretical_occupancy_pct": 10.0}, TH)


def test_below_roof_stake_is_the_headroom_and_the_time_weighted_pct() -> None:
    frame = placed({"kernel": "k", "pct_of_roof": 30.0, "headroom_s": 2e-4, "time_s": 1e-3},
                   {"kernel": "k", "pct_of_roof": 70.0, "headroom_s": 1e-4, "time_s": 3e-3})
    [f] = run(checklist.below_roof_rule, frame)
    assert f.time_at_stake_s == pytest.approx(3e-4)
    assert "at 60% of its roof" in f.message  # (30 x 1 + 70 x 3) / 4
    assert f.ids == (0, 1)


def test_min_stake_fraction_cut_at_half_a_percent_of_the_run() -> None:
    def stake_of(headroom: float) -> list[Finding]:
        frame = placed({"kernel": "big", "pct_of_roof": 95.0, "time_s": 1.0, "headroom_s": 0.0},
                       {"kernel": "small", "pct_of_roof": 10.0, "time_s": 0.01, "headroom_s": headroom})
        return run(checklist.below_roof_rule, frame)  # run time 1.01 s: the cut is 5.05 ms

    assert not stake_of(0.00504)
    assert [f.kernels for f in stake_of(0.00506)] == [("small",)]


def region(**values: Any) -> dict[str, Any]:
    r = {"name": "reg", "origin": "alg.toml", "launches": 2, "occurrences": 1, "kernels": ["a", "b"], "ids": [0, 1],
         "reports": ["r"], "time_s": 1e-3, "flops": 1e6, "dram_bytes": 1.5e9, "l2_bytes": np.nan,
         "l1_bytes": np.nan, "alg_flops": 1e6, "alg_bytes": 1e9, "alg_intensity": 1e-3,
         "achieved_intensity": 1e6 / 1.5e9, "extra_bytes_factor": 1.5, "peak_flops_per_s": 1e13,
         "dram_roof_bytes_per_s": 1.25e12, "ideal_time_s": 0.8e-3, "time_at_stake_s": 0.2e-3}
    r.update(values)
    return r


def test_extra_bytes_factor_cut_at_1_5() -> None:
    below = pd.DataFrame([region(extra_bytes_factor=1.49, dram_bytes=1.49e9)])
    above = pd.DataFrame([region(extra_bytes_factor=1.51, dram_bytes=1.51e9, ideal_time_s=0.3e-3)])
    assert not run(checklist.fuse_extra_bytes, placed({}), below)
    [f] = run(checklist.fuse_extra_bytes, placed({}), above)
    assert f.time_at_stake_s == pytest.approx(1e-3 - 0.3e-3)  # time - ideal
    assert "1.5x extra bytes" in f.message and "saves 510 MB" in f.message  # 1.51 GB - 1 GB
    assert f.region == "reg" and f.kernels == ("a", "b") and f.report == "r"
    assert "Fuse its 2 kernels" in f.message
    one = pd.DataFrame([region(extra_bytes_factor=2.0, kernels=["only"], ideal_time_s=np.nan)])
    [g] = run(checklist.fuse_extra_bytes, placed({}), one)
    assert g.time_at_stake_s is None and "Add reuse in only" in g.message


def test_at_roof_stop_cuts_at_1_2_extra_and_80_percent_of_the_roof() -> None:
    def stop(factor: float, ideal: float) -> list[Finding]:
        r = pd.DataFrame([region(extra_bytes_factor=factor, dram_bytes=factor * 1e9, ideal_time_s=ideal)])
        return run(checklist.at_roof_stop, placed({}), r)

    [f] = stop(1.19, 0.81e-3)
    assert f.time_at_stake_s == pytest.approx(1e-3 - 0.81e-3)  # time - ideal, never time + ideal
    assert f.severity == "info" and "81%" in f.message and "1.19x" in f.message
    assert not stop(1.21, 0.81e-3)
    assert not stop(1.19, 0.79e-3)


def test_regions_without_algorithmic_bytes_or_time_are_not_judged() -> None:
    for bad in (dict(alg_bytes=0.0), dict(launches=0), dict(dram_bytes=np.nan), dict(time_s=0.0)):
        r = pd.DataFrame([region(extra_bytes_factor=3.0, **bad)])
        assert not run(checklist.fuse_extra_bytes, placed({}), r), bad


# --- speed-of-light only ---------------------------------------------------------------------
def test_sol_busy_pct_cut_at_60() -> None:
    def reading(memory: float, compute: float) -> Finding:
        # no roofline: pct_of_roof unknown (speed-of-light-only speaks only for those since the merge)
        frame = placed({"bound": "unknown", "pct_of_roof": np.nan, "time_s": 2e-3, "sm_throughput_pct": compute,
                        "memory_throughput_pct": memory, "dram_throughput_pct": np.nan})
        [f] = run(partial.speed_of_light_only, frame)
        return f

    busy = reading(60.5, 20.0)
    assert "likely memory-bound" in busy.message
    # a busy unit: hiding latency wins at most its idle 39.5%, less work on it more; no promise either way
    assert busy.time_at_stake_s is None and "time at stake not known" in busy.message
    latency = reading(59.5, 20.0)
    assert "latency-bound" in latency.message and latency.time_at_stake_s == pytest.approx(2e-3 * (1 - 0.595))
    compute = reading(30.0, 70.0)
    assert "busy inside the SMs (a pipe, the issue slots or shared memory)" in compute.message
    assert compute.time_at_stake_s is None


# --- the traps' signals ------------------------------------------------------------------------
def test_wave_tail_min_loss_cut_at_20_percent() -> None:
    # lost = (1 - partial) / (whole + 1): 1.59 waves -> 0.205, 1.61 -> 0.195
    s = signals.wave_signal({"waves": 1.59, "grid_size": 159.0}, TH)
    assert s is not None and s["lost_fraction"] == pytest.approx(0.41 / 2)
    assert s["slots"] == pytest.approx(100.0) and s["tail_blocks"] == pytest.approx(59.0)
    assert signals.wave_signal({"waves": 1.61, "grid_size": 161.0}, TH) is None
    assert signals.wave_signal({"waves": 3.0, "grid_size": 300.0}, TH) is None  # whole waves
    assert signals.wave_signal({"waves": 0.5, "grid_size": 50.0}, TH) is None  # less than one wave


def test_underfill_min_idle_cut_at_5_percent() -> None:
    """B200: 128 blocks on 148 SMs leave 13.5% idle, priced (the 20% cut once hid it); 1 of 48 is 2%."""
    s = signals.underfill_signal({"grid_size": 128.0, "sm_count": 148.0}, TH)
    assert without_relief(s) == {"idle_fraction": pytest.approx(20 / 148), "idle_sms": 20.0}
    assert s is not None and s["relief"] == Relief(latency=1.0, share=pytest.approx(20 / 148))
    assert signals.underfill_signal({"grid_size": 45.0, "sm_count": 48.0}, TH)  # 3 of 48: 0.0625
    assert signals.underfill_signal({"grid_size": 47.0, "sm_count": 48.0}, TH) is None  # 0.0208
    assert signals.underfill_signal({"grid_size": 48.0, "sm_count": 48.0}, Thresholds(underfill_min_idle=0.0)) is None


def test_above_peak_tolerance_cut_at_2_percent() -> None:
    row = {"dram_peak_bytes_per_s": 1e12, "dram_roof_bytes_per_s": 0.88e12, "time_s": 1e-3}
    assert signals.above_dram_signal({**row, "achieved_dram_bytes_per_s": 1.019e12}, TH) is None
    s = signals.above_dram_signal({**row, "achieved_dram_bytes_per_s": 1.021e12}, TH)
    assert s == {"bytes_per_s": pytest.approx(1.021e12), "over_peak": pytest.approx(1.021), "basis": 0.0}
    counted = signals.above_dram_signal({**row, "achieved_dram_bytes_per_s": 5e11, "alg_bytes": 2e9}, TH)
    assert counted == {"bytes_per_s": pytest.approx(2e12), "over_peak": pytest.approx(2.0), "basis": 1.0}


def _fp(prec: str, fma: float, unfused: float, **extra: Any) -> dict[str, Any]:
    """A launch of ``fma`` FMAs and ``unfused`` adds and multiplies, half each (they pair into FMAs)."""
    ops = signals._FMA_OPS[prec]
    return {"compute_precision": prec, "binding": "compute", f"inst_{ops[0]}": fma, f"inst_{ops[1]}": unfused / 2,
            f"inst_{ops[2]}": unfused / 2, **extra}


def test_no_fma_unfused_share_cut_at_30_percent_and_fp_time_share_at_25() -> None:
    # The merged rule (no_fma_min_unfused replaced no_fma_max_fma_fraction): adds+multiplies at or
    # above 30% of the FP instructions, on a launch whose FP instructions at the FMA rate take at
    # least 25% of its time. 2e9 instructions x 2 FLOP / 10 TFLOP/s = 400 us of a 1 ms launch.
    base = {"time_s": 1e-3, "time_lower_bound_s": 4e-4, "peak_fp32_flops_per_s": 1e13,
            "dram_bytes": 1e6, "dram_roof_bytes_per_s": 1e12}

    def mix(fma: float, unfused: float, **extra: Any) -> dict[str, Any]:
        return {**_fp("fp32", fma, unfused, **base), "flops": 2 * fma + unfused, **extra}

    s = signals.no_fma_signal(mix(1.38e9, 0.62e9), TH)  # 31% unfused
    assert s is not None and s["unfused_fraction"] == pytest.approx(0.31) and s["fma_fraction"] == pytest.approx(0.69)
    assert s["fma_peak_flops_per_s"] == 1e13
    # compute-bound: the FLOP roof (3.38e9 FLOPs in the 400 us bound) rises to the FMA peak, 338 us; the
    # binding FLOP roof keeps its efficiency, so the 1 ms scales by 338 / 400: 845 us, saving 155 us
    roofed = {**mix(1.38e9, 0.62e9), "peak_flops_per_s": 3.38e9 / 4e-4, **units(flops=4e-4, dram=1e-6)}
    s = signals.no_fma_signal(roofed, TH)
    assert s is not None and s["relief"].removes["flops"] == pytest.approx(1 - 3.38e9 / 4e-4 / 1e13)
    assert s["relief"].removes["pipe_fma"] == pytest.approx(0.31 / 2)  # each pair fuses into one FMA
    assert priced(roofed, s["relief"]) == pytest.approx(1e-3 - 1e-3 * (3.38e9 / 1e13) / 4e-4)
    assert priced(roofed, s["relief"]) == pytest.approx(155e-6)
    assert signals.no_fma_signal(mix(1.42e9, 0.58e9), TH) is None  # 29% unfused
    assert signals.no_fma_signal(mix(1.4e9, 0.6e9), TH) is not None  # exactly 30%
    # FP time share: 1.3e9 instructions = 260 us (26%) fires, 1.2e9 = 240 us (24%) does not
    assert signals.no_fma_signal(mix(0.0, 1.3e9), TH) is not None
    assert signals.no_fma_signal(mix(0.0, 1.2e9), TH) is None
    assert signals.no_fma_signal(mix(0.0, 0.0), TH) is None
    # not compute-binding: on its memory roof never; below it the signal fires, but while DRAM binds
    # the fix wins nothing: its pipe and the FLOP roof are not the limiter
    on_roof = mix(1.38e9, 0.62e9, binding="dram", bound="memory", pct_of_roof=90.0, headroom_s=1e-4)
    assert signals.no_fma_signal(on_roof, TH) is None
    below_row = {**on_roof, "pct_of_roof": 50.0, **units(dram=5e-4, pipe_fma=3e-4)}
    below = signals.no_fma_signal(below_row, TH)
    assert below is not None and priced(below_row, below["relief"]) == 0.0
    # ...and where the FMA pipe binds, the 15.5% of its instructions that fuse away shorten it
    pipe_row = {**below_row, **units(dram=2e-4, pipe_fma=6e-4)}
    assert priced(pipe_row, below["relief"]) == pytest.approx(0.155 * 1e-3)


def test_fp64_ratio_and_time_share_cuts() -> None:
    def row(fp64_peak: float, flops_fp64: float, **extra: Any) -> dict[str, Any]:
        return {"flops_fp64": flops_fp64, "flops": flops_fp64, "time_s": 1e-3, "time_lower_bound_s": 5e-4,
                "peak_fp64_flops_per_s": fp64_peak, "peak_fp32_flops_per_s": 1e13, "device": "made-up", **extra}

    # ratio 0.124 (consumer rate) with FP64 at its roof taking 0.26 of the time
    s = FP64_SIGNAL(row(1.24e12, 0.26e-3 * 1.24e12), TH)
    assert s is not None and s["fp64_over_fp32_peak"] == pytest.approx(0.124)
    assert s["fp64_time_at_roof_s"] == pytest.approx(0.26e-3)
    # the fix is FP32: the FP64 pipe's work (500 us, binding) moves to the FMA pipe at the FP32 rate
    # (0.124 x 500 = 62 us), the FLOP roof's 260 us shrink to 0.124 x 260 = 32.24 us; DRAM's 100 us binds
    consumer = {**row(1.24e12, 0.26e-3 * 1.24e12), "compute_precision": "fp64",
                **units(pipe_fp64=5e-4, flops=0.26e-3, dram=1e-4)}
    s = FP64_SIGNAL(consumer, TH)
    assert s is not None and s["fix"] == "fp32"
    assert s["relief"].adds["pipe_fma"] == pytest.approx(5e-4 * 0.124)
    assert s["relief"].removes == {"pipe_fp64": 1.0, "flops": pytest.approx(1 - 0.124)}
    assert priced(consumer, s["relief"]) == pytest.approx(1e-3 - 1e-4)
    # ratio 0.126: not consumer rate, so the datacenter path: only below the roof; with no division to
    # remove, fewer FP64 operations win at most the time until the next unit (DRAM, 100 us) binds
    assert FP64_SIGNAL(row(1.26e12, 0.26e-3 * 1.26e12), TH) is None  # no bound: not a limiter row
    below = row(1.26e12, 0.26e-3 * 1.26e12, bound="memory", pct_of_roof=50.0, headroom_s=5e-4,
                **units(pipe_fp64=5e-4, dram=1e-4))
    d = FP64_SIGNAL(below, TH)
    assert d is not None and d["fix"] == "fewer" and priced(below, d["relief"]) == pytest.approx(9e-4)
    assert FP64_SIGNAL({**below, **units(pipe_fp64=9e-4, dram=1e-4)}, TH) is None  # at its limit
    assert FP64_SIGNAL({**below, "peak_fp64_flops_per_s": 1e13}, TH) is None  # FP64 at the FP32 rate
    assert FP64_SIGNAL(row(1.24e12, 0.24e-3 * 1.24e12), TH) is None  # 0.24 of the time


def test_fp64_division_share_cut_at_25_percent() -> None:
    # 8 FP64 instructions per MUFU.RCP64H against the FP64 warp instructions (thread count / 32):
    # 3200 thread instructions = 100 warp instructions; 3.2 divisions -> 25.6%, 3.1 -> 24.8%
    row = {"inst_dfma": 3200.0, "inst_dadd": 0.0, "inst_dmul": 0.0}
    assert signals.division_share({**row, "inst_fp64_rcp": 3.2}) == pytest.approx(0.256)
    s = {"fp64_divisions": 3.2, "fp64_over_fp32_peak": 1 / 64}
    assert "Division is about 26% of it" in traps._fp64_advice({**row, "inst_fp64_rcp": 3.2}, s, TH)
    assert "Division" not in traps._fp64_advice({**row, "inst_fp64_rcp": 3.1}, s, TH)
    assert "Division is about 25%" in traps._fp64_advice({**row, "inst_fp64_rcp": 3.125}, s, TH)  # exactly


def test_uncoalesced_excess_cut_at_1_1_with_ideal_sectors() -> None:
    """MiSTIC's 1.485x (L2-bound at 85%) once fell under a 1.5 cut; now priced from 1.1x."""
    s = signals.uncoalesced_signal({"global_sectors_theoretical": 1.485e6, "global_sectors_ideal": 1e6}, TH)
    assert without_relief(s) == {"excess": pytest.approx(1.485), "bytes_used_per_sector": pytest.approx(32 / 1.485)}
    waste = pytest.approx(1 - 1 / 1.485)  # the extra sectors leave L1/TEX and L2, not DRAM
    assert s is not None and s["relief"] == Relief(removes={"l1": waste, "l2": waste})
    assert signals.uncoalesced_signal({"global_sectors_theoretical": 1.09e6, "global_sectors_ideal": 1e6}, TH) is None


def test_uncoalesced_sectors_per_request_fallback_cut_at_16() -> None:
    # no ideal-sector counts: the worse of loads and stores, over 16 sectors per request, over what the other
    # side's sectors a request say an element needs (2: 2-byte elements), at most 16 (16-byte accesses)
    row = {"global_load_sectors": 16.1e5, "global_load_requests": 1e5, "global_store_sectors": 2e5,
           "global_store_requests": 1e5}
    s = signals.uncoalesced_signal(row, TH)
    assert without_relief(s) == {"excess": pytest.approx(16.1 / 2),
                                 "bytes_used_per_sector": pytest.approx(32 / (16.1 / 2))}
    stores = {"global_load_sectors": 4e5, "global_load_requests": 1e5, "global_store_sectors": 24e5,
              "global_store_requests": 1e5}
    assert signals.uncoalesced_signal(stores, TH)["excess"] == pytest.approx(6.0)  # type: ignore[index]
    alone = {"global_store_sectors": 24e5, "global_store_requests": 1e5}  # no loads: 16-byte accesses assumed
    assert signals.uncoalesced_signal(alone, TH)["excess"] == pytest.approx(1.5)  # type: ignore[index]
    assert signals.uncoalesced_signal({**row, "global_load_sectors": 15.9e5}, TH) is None


def test_uncoalesced_rule_on_the_sectors_per_request_path() -> None:
    frame = placed({"global_load_sectors": 4e5, "global_load_requests": 1e5, "global_store_sectors": 32e5,
                    "global_store_requests": 1e5, "headroom_s": 8e-4, **units(l1=9e-4, dram=2e-4)})
    [f] = run(traps.uncoalesced_access, frame)
    assert f.evidence["excess"] == pytest.approx(8.0)  # the loads' 4 sectors a request: 4-byte elements
    assert f.evidence["sectors_per_store_request"] == pytest.approx(32.0)
    assert f.evidence["sectors_per_load_request"] == pytest.approx(4.0)
    assert f.evidence["excess_side"] == "stores"
    # 7/8 of L1's work goes; L1 binds and keeps its efficiency: 1 ms -> 125 us, then DRAM's 200 us binds
    assert f.time_at_stake_s == pytest.approx(1e-3 - 2e-4)
    assert "32.0 sectors per request" in f.message and "8.0x" in f.message


def test_bank_conflict_share_cut_at_25_percent() -> None:
    s = signals.bank_conflict_signal({"shared_bank_conflicts": 26.0, "shared_wavefronts": 100.0}, TH)
    assert without_relief(s) == {"conflict_share": pytest.approx(0.26),
                                 "wavefronts_per_needed": pytest.approx(100 / 74)}
    assert signals.bank_conflict_signal({"shared_bank_conflicts": 24.0, "shared_wavefronts": 100.0}, TH) is None
    frame = placed({"shared_bank_conflicts": 40.0, "shared_wavefronts": 100.0, "headroom_s": 3e-4,
                    **units(l1=8e-4, shared=7e-4, dram=1e-4)})
    [f] = run(traps.bank_conflicts, frame)
    # 40% of the wavefronts go from shared memory and L1 (no shared-pipe share known: all of L1's are
    # shared); L1 binds at 80% and keeps its efficiency: 1 ms -> 0.6 ms
    assert f.time_at_stake_s == pytest.approx(0.4 * 1e-3)


def test_low_occupancy_cuts_at_ratio_0_7_and_theoretical_50() -> None:
    def occ(achieved: float, theoretical: float) -> Any:
        return signals.occupancy_signal({**BELOW, "achieved_occupancy_pct": achieved,
                                       "theoretical_occupancy_pct": theoretical,
                                       "occupancy_limit_registers": 2.0, "occupancy_limit_warps": 4.0}, TH)

    # the merged signal also says which cut fired and the share of the time more warps could win
    s = without_relief(occ(69.0, 100.0))
    assert s == {"achieved_over_theoretical": pytest.approx(0.69), "limiter": "registers", "runtime_short": True,
                 "theory_limited": False, "share": pytest.approx(0.31)}  # 1 - 0.69
    assert occ(71.0, 100.0) is None
    low_theory = occ(49.0, 49.5)  # theoretical under 50%; achieved/theoretical 0.99: share 1 - 0.99
    assert low_theory is not None and (low_theory["runtime_short"], low_theory["theory_limited"]) == (False, True)
    assert low_theory["share"] == pytest.approx(1 - 49.0 / 49.5)
    assert occ(50.5, 51.0) is None
    assert without_relief(occ(0.2, 0.5)) == {"achieved_over_theoretical": pytest.approx(0.4), "limiter": "registers",
                             "runtime_short": True, "theory_limited": True, "share": pytest.approx(0.6)}
    assert occ(np.nan, 30.0) is None and occ(20.0, 0.0) is None and occ(20.0, np.nan) is None


def test_a_library_kernel_at_its_own_theoretical_occupancy_is_not_told_of_occupancy() -> None:
    """cuBLAS sizes its tiles for its occupancy (ampere_sgemm_128x64_nn: 122 registers, 33% theoretical):
    30% achieved of it is its design; 15% of it (warps missing at run time) is still a finding."""
    def occ(achieved: float, kernel: str) -> Any:
        return signals.occupancy_signal({**BELOW, "kernel": kernel, "achieved_occupancy_pct": achieved,
                                       "theoretical_occupancy_pct": 33.3, "occupancy_limit_registers": 1.0,
                                       "occupancy_limit_warps": 16.0}, TH)

    assert occ(29.7, "ampere_sgemm_128x64_nn") is None
    assert occ(29.7, "my_sgemm") is not None  # a hand-written kernel's occupancy is the author's to change
    short = occ(15.0, "ampere_sgemm_128x64_nn")
    assert short is not None and short["runtime_short"] and short["share"] == pytest.approx(1 - 15.0 / 33.3)


def test_divergence_cut_at_28_threads() -> None:
    s = signals.divergence_signal({**BELOW, "threads_per_inst": 27.9}, TH)
    assert without_relief(s) == {"active_lane_fraction": pytest.approx(27.9 / 32)}
    assert signals.divergence_signal({**BELOW, "threads_per_inst": 28.1}, TH) is None
    # threads per instruction rule where both are measured (SimonLuder v3: 87.3% uniform branches, 31.8 threads)
    assert signals.divergence_signal({**BELOW, "threads_per_inst": 31.8, "branch_uniform_pct": 87.3}, TH) is None
    # on its roof too (priced: 0 where the pipes do not bind); never on a launch-bound launch
    assert signals.divergence_signal({"bound": "memory", "pct_of_roof": 90.0, "threads_per_inst": 8.0}, TH)
    assert signals.divergence_signal({"bound": "overhead", "threads_per_inst": 8.0}, TH) is None
    frame = placed({"threads_per_inst": 8.0, "headroom_s": 9e-4, **units(issue=6e-4, dram=1e-4)})
    [f] = run(traps.divergence, frame)
    # full warps need a quarter of the warp instructions: the binding issue slots' 1 ms -> 250 us
    assert f.time_at_stake_s == pytest.approx(1e-3 * (1 - 8 / 32))  # 750 us
    assert "8.0 of 32 threads" in f.message and "(25%)" in f.message


# --- overhead scaling fit --------------------------------------------------------------------
def _fit(grids: tuple[float, ...], fixed: float, per_block: float, th: Thresholds = TH) -> Any:
    group = pd.DataFrame({"grid_size": list(grids), "time_s": [fixed + per_block * g for g in grids]})
    return launch._scaling_fit(group, th)


def test_overhead_size_ratio_cut_at_2() -> None:
    fit = _fit((10.0, 15.0, 20.2), 16e-6, 1e-7)
    assert fit is not None and fit["size_ratio"] == pytest.approx(2.02)
    assert fit["fixed_s"] == pytest.approx(16e-6) and fit["per_block_s"] == pytest.approx(1e-7)
    assert fit["launches_fit"] == 3
    assert fit["time_ratio"] == pytest.approx((16e-6 + 20.2e-7) / (16e-6 + 10e-7))
    assert _fit((10.0, 15.0, 19.8), 16e-6, 1e-7) is None


def test_overhead_fit_needs_three_sizes_and_time_that_grows_with_the_grid() -> None:
    assert _fit((10.0, 20.2), 16e-6, 1e-7) is None  # two points always fit a line
    # one matrix transposed with four block shapes: time falls as the grid grows (grid size is not work)
    assert _fit((10.0, 20.0, 40.0, 80.0), 30e-6, -1e-7) is None


def test_overhead_fixed_share_cut_at_half() -> None:
    # grids 10, 15 and 20: time = F + p x grid; fixed share = 3F / (3F + 45p)
    fit = _fit((10.0, 15.0, 20.0), 16e-7, 1e-7)  # 48 / 93 = 0.516
    assert fit is not None and fit["fixed_share"] == pytest.approx(48 / 93)
    assert _fit((10.0, 15.0, 20.0), 14e-7, 1e-7) is None  # 42 / 87 = 0.483


def test_overhead_scaling_max_time_cut_at_100_us() -> None:
    # median time F + 15p with F = 16p: 31p
    assert _fit((10.0, 15.0, 20.0), 16 * 99e-6 / 31, 99e-6 / 31) is not None
    assert _fit((10.0, 15.0, 20.0), 16 * 101e-6 / 31, 101e-6 / 31) is None


def test_overhead_rule_stake_is_the_fixed_time_of_all_but_one_launch() -> None:
    frame = placed(*({"kernel": "k", "grid_size": g, "time_s": 3e-6 + 1e-7 * g, "time_lower_bound_s": 1e-7,
                      "bound": "overhead"} for g in (10.0, 20.0, 40.0)))
    [f] = run(launch.overhead_regime, frame)  # 4, 5 and 7 us: fixed share 9 / 16
    short_stake = sum(3e-6 + 1e-7 * g - 1e-7 for g in (10.0, 20.0, 40.0))
    assert f.time_at_stake_s == pytest.approx(max(short_stake, 3e-6 * 2)) == pytest.approx(15.7e-6)
    assert f.evidence["fixed_s"] == pytest.approx(3e-6) and f.evidence["fixed_share"] == pytest.approx(9 / 16)
    long = placed(*({"kernel": "k", "grid_size": g, "time_s": 3e-6 + 1e-7 * g, "time_lower_bound_s": 1e-7,
                     "bound": "memory"} for g in (10.0, 20.0, 40.0)))
    [g] = run(launch.overhead_regime, long)  # not short, but not scaling: the fit's stake, 2 x 3 us
    assert g.time_at_stake_s == pytest.approx(6e-6)
    single = placed({"time_s": 4e-6, "time_lower_bound_s": 1e-6, "bound": "overhead", "grid_size": 8.0})
    [h] = run(launch.overhead_regime, single)  # one short launch, nothing to fit: time - bound
    assert h.time_at_stake_s == pytest.approx(3e-6)
    assert "1 launch of 4 us" in h.message and "explains only 1 us" in h.message


# --- severity ----------------------------------------------------------------------------------
def test_severity_cuts_at_10_and_2_percent_of_the_run() -> None:
    def sev(stake: float) -> str:
        return run_severity(Finding("r", ("k",), None, "low", "m", stake), 1.0, TH)

    assert (sev(0.101), sev(0.099), sev(0.021), sev(0.019)) == ("high", "medium", "medium", "low")
    assert run_severity(Finding("r", ("k",), None, "info", "m", 0.5), 1.0, TH) == "info"
    assert run_severity(Finding("r", ("k",), None, "low", "m", None), 1.0, TH) == "low"


def test_overhead_findings_under_10_us_in_all_are_low_whatever_their_share() -> None:
    # two launches of 4 us, each 2.5 us above the floor: 5 us in all, all of a 10 us run; 12 us in all: high
    short = {"time_s": 4e-6, "bound": "overhead", "time_lower_bound_s": 1e-6, "launch_floor_s": 1.5e-6,
             "pct_of_roof": 25.0, "kernel": "k"}
    rows = [short | {"id": i} for i in range(2)]
    [f] = [x for x in evaluate(Context(placed(*rows), pd.DataFrame(), TH))[0] if x.rule == "overhead-regime"]
    assert f.time_at_stake_s == pytest.approx(5e-6) and f.severity == "low"
    rows = [short | {"id": i} for i in range(5)]  # 12.5 us in all
    [g] = [x for x in evaluate(Context(placed(*rows), pd.DataFrame(), TH))[0] if x.rule == "overhead-regime"]
    assert g.time_at_stake_s == pytest.approx(12.5e-6) and g.severity == "high"


def test_above_dram_roof_rule_judges_against_l2() -> None:
    base = {"dram_peak_bytes_per_s": 1e12, "dram_roof_bytes_per_s": 0.88e12, "time_s": 1e-3,
            "achieved_dram_bytes_per_s": 2e12, "dram_bytes": 2e9}
    [f] = run(traps.above_dram_roof, placed({**base, "l2_bytes": 4e9, "l2_roof_bytes_per_s": 5e12}))
    assert f.time_at_stake_s == pytest.approx(1e-3 - 4e9 / 5e12)  # 200 us
    assert "4 TB/s, 80% of the 5 TB/s L2 roof" in f.message and "2.00x the 1 TB/s DRAM peak" in f.message
    assert f.evidence["over_peak"] == pytest.approx(2.0)
    [g] = run(traps.above_dram_roof, placed({**base, "l2_bytes": 4e9, "l2_roof_bytes_per_s": np.nan}))
    assert g.time_at_stake_s is None and "no L2 roof" in g.message and "4 GB at 4 TB/s" in g.message
    [h] = run(traps.above_dram_roof, placed({**base, "l2_bytes": np.nan, "l2_roof_bytes_per_s": np.nan}))
    assert h.time_at_stake_s is None and "no L2 byte count" in h.message
    [k] = run(traps.above_dram_roof, placed({**base, "l2_bytes": 4e9, "l2_roof_bytes_per_s": 2e12}))
    assert k.time_at_stake_s == 0.0  # slower than the L2 roof allows: nothing to win against it


# --- the traps' wording and stakes where the zoo golden does not reach ----------------------------
def test_excess_side_names_the_side_that_must_carry_the_extra_sectors() -> None:
    # 100 extra sectors; stores can carry at most 160 - 100 = 60 of them, loads at most 110 - 100 = 10
    row = {"global_load_sectors": 110.0, "global_load_requests": 100.0, "global_store_sectors": 160.0,
           "global_store_requests": 100.0}
    assert traps._excess_side(row, 100.0) == ("stores", 90.0)
    even = {**row, "global_load_sectors": 160.0}  # either side could carry 60: neither is named
    assert traps._excess_side(even, 100.0) is None
    no_requests = {"global_store_sectors": 30.0}  # stores carry at most their 30 sectors: loads at least 70
    assert traps._excess_side(no_requests, 100.0) == ("loads", 70.0)
    assert traps._excess_side({}, 100.0) is None


def test_uncoalesced_text_all_or_at_least_part_of_the_extra() -> None:
    row = {"global_sectors_theoretical": 400.0, "global_sectors_ideal": 100.0, "global_load_sectors": 390.0,
           "global_load_requests": 100.0, "global_store_sectors": 10.0, "global_store_requests": 10.0}
    text, side = traps._uncoalesced_text(row, {"load": 3.9, "store": 1.0}, 16.0)
    assert side == "loads"
    assert text == ("400 sectors requested per launch where 100 would do (4.0x, 8 of every 32 bytes used), all "
                    "300 extra from loads. Sectors per request: loads 3.9, stores 1.0.")
    part = {**row, "global_store_sectors": 110.0}  # stores could carry 100 of the 300: loads at least 200
    text, side = traps._uncoalesced_text(part, {"load": 3.9, "store": 11.0}, 16.0)
    assert side == "loads" and "at least 200 of the 300 extra from loads" in text
    text, side = traps._uncoalesced_text({}, {"load": 20.0, "store": 40.0}, 16.0)
    assert side == "loads and stores"
    assert text == ("Loads use 20.0 sectors per request and stores use 40.0 sectors per request, more than the 16 "
                    "that even 16-byte accesses need (at least 2.5x).")


def test_stake_text_says_when_the_fix_does_not_relieve_the_binding_unit() -> None:
    rows = placed({"time_s": 1e-3, **units(pipe_fp64=9e-4, l1=1e-4)})
    signal = [{"relief": Relief(removes={"l1": 0.5, "l2": 0.5})}]
    assert stakes.stake_text(rows, 0.051e-3, signal) == ", up to 51 us of 1 ms at stake"
    assert stakes.stake_text(rows, 0.049e-3, signal) == (
        "; little time at stake (FP64 pipe at 90% binds; the fix relieves L1/TEX, L2)")
    # the busiest unit under 80% of its peak (where the stakes model calls it saturated) binds nothing:
    # it is named as the busiest (79.9% vs 80%)
    busy = placed({"time_s": 1e-3, **units(pipe_alu=7.99e-4, l1=1e-4)})
    assert stakes.stake_text(busy, 0.049e-3, signal) == (
        "; little time at stake (ALU pipe at 80% is busiest; the fix relieves L1/TEX, L2)")
    at = placed({"time_s": 1e-3, **units(pipe_alu=8e-4, l1=1e-4)})
    assert "(ALU pipe at 80% binds;" in stakes.stake_text(at, 0.049e-3, signal)


def test_memory_fixes_on_a_launch_no_unit_saturates_win_their_share_of_the_memory_waits() -> None:
    """The time above an unsaturated binding unit is latency: a fix removing 40% of L1's work wins at
    most 40% of the waits on memory in it (here half of them); at 80% busy the unit binds and only the
    relief's own latency share (10%) of the time above it is won. The engine and the oracle agree."""
    names = ("pipe_alu", "l1", "l2")
    relief = Relief(removes={"l1": 0.4, "l2": 0.2}, latency=0.1, waits=0.5)
    t, floor, overhead = np.array([1e-3, 1e-3]), np.zeros(2), np.zeros(2, dtype=bool)
    bounds = np.array([[5e-4, 2e-4, 1e-4], [8e-4, 2e-4, 1e-4]])
    won = stakes.priced(names, t, bounds, relief, floor, overhead)
    assert won.tolist() == pytest.approx([5e-4 * 0.4 * 0.5, 2e-4 * 0.1])
    for row, expected in zip(placed(*({"time_s": 1e-3, **units(**dict(zip(names, b, strict=True)))} for b in bounds))
                             .to_dict("records"), won, strict=True):
        assert priced(row, relief) == pytest.approx(expected)
    # waits on memory at most the relief's own latency share: that share stays
    assert stakes.priced(names, t[:1], bounds[:1], Relief(removes={"l1": 0.4}, latency=0.3, waits=0.5), floor[:1],
                         overhead[:1]).tolist() == pytest.approx([5e-4 * 0.3])


def test_stakes_without_a_measured_unit_and_grid_underfill_without_headroom() -> None:
    rows = placed({"time_s": 1e-3, "headroom_s": 2e-4}, {"time_s": 1e-3, "headroom_s": np.nan})
    first, second = rows.to_dict("records")
    latency = Relief(latency=1.0, share=0.5)
    # the roofline's bound stands in for the model: the time above it, within the signal's own share
    assert priced(first, latency) == pytest.approx(2e-4)
    # no bound at all: the signal's own share of the time (an upper bound), and nothing for a removal
    assert priced(second, latency) == pytest.approx(5e-4)
    assert priced(second, Relief(removes={"l1": 0.5})) == 0.0
    frame = placed({"grid_size": 12.0, "sm_count": 48.0, "headroom_s": np.nan, "time_s": 2e-3})
    [f] = run(launch.grid_underfill, frame)
    assert f.time_at_stake_s == pytest.approx(2e-3 * 36 / 48)
    assert "12 blocks for 48 SMs: 36 SMs (75%) do nothing" in f.message


def test_low_occupancy_wording_by_theoretical_occupancy() -> None:
    low_theo = placed({**BELOW, "achieved_occupancy_pct": 20.0, "theoretical_occupancy_pct": 25.0,
                       "occupancy_limit_shared_mem": 1.0, "occupancy_limit_registers": 3.0,
                       "registers_per_thread": 64.0, "shared_mem_per_block": 49152.0, "headroom_s": 6e-4})
    [f] = run(traps.low_occupancy, low_theo)
    # the merged stake is the missing-warps share capped by the headroom (not the whole headroom):
    # 1 - 20/25 = 0.2 of 1 ms = 200 us, under the 600 us headroom
    assert f.time_at_stake_s == pytest.approx(2e-4)
    # the limit names only the resource that limits (registers/thread left out for shared mem)
    assert "The shared mem limit (49.2 kB shared/block) binds" in f.message and "64 registers" not in f.message
    missing = placed({**BELOW, "achieved_occupancy_pct": 50.0, "theoretical_occupancy_pct": 100.0,
                      "grid_size": 480.0, "sm_count": 48.0})
    [g] = run(traps.low_occupancy, missing)
    assert "Warps missing at run time" in g.message and g.evidence["achieved_over_theoretical"] == 0.5
    assert g.time_at_stake_s == pytest.approx(5e-4)  # 1 - 0.5 of 1 ms, under the 5e-4 headroom
    assert traps._limit_text({}, "unknown") == "its resources limit"
    underfilled = {**BELOW, "achieved_occupancy_pct": 10.0, "theoretical_occupancy_pct": 100.0,
                   "grid_size": 12.0, "sm_count": 48.0}
    assert signals.occupancy_signal(underfilled, TH) is None  # grid-underfill names the cause


def test_fp64_peaks_from_the_device_table_when_the_report_has_none() -> None:
    row = {"flops_fp64": 4.82e11 * 0.5e-3, "flops": 4.82e11 * 0.5e-3, "time_s": 1e-3, "time_lower_bound_s": 5e-4,
           "device": "NVIDIA GeForce RTX 5070"}
    s = FP64_SIGNAL(row, TH)
    assert s is not None and s["fp64_over_fp32_peak"] == pytest.approx(4.82e11 / 3.09e13)
    assert s["fp64_time_at_roof_s"] == pytest.approx(0.5e-3)
    assert signals._peak({"device": "no such GPU"}, "fp64") != signals._peak({"device": "no such GPU"}, "fp64")  # NaN
    frame = placed({**row, "inst_dfma": 1.0, "inst_dadd": 0.0, "inst_dmul": 0.0, "peak_fp64_flops_per_s": np.nan,
                    "peak_fp32_flops_per_s": np.nan, **units(pipe_fp64=5e-4, dram=1e-4)})
    [f] = run(next(r.func for r in RULES if r.id.startswith("fp64")), frame)
    # FP32 moves the binding FP64 pipe's 500 us to the FMA pipe at 1/64 of it (7.8 us): DRAM binds
    assert "1/64" in f.message and f.time_at_stake_s == pytest.approx(1e-3 - 1e-4)


def test_wave_tail_rule_stake_is_the_lost_share_of_each_launch() -> None:
    frame = placed({"kernel": "w", "waves": 1.5, "grid_size": 150.0, "time_s": 1e-3, "headroom_s": 5e-4},
                   {"kernel": "w", "waves": 1.5, "grid_size": 150.0, "time_s": 3e-3, "headroom_s": 1.5e-3})
    [f] = run(launch.wave_tail, frame)
    assert f.time_at_stake_s == pytest.approx(4e-3 * 0.25)  # (1 - 0.5) / 2 of each
    tight = placed({"kernel": "w", "waves": 1.5, "grid_size": 150.0, "time_s": 1e-3, "headroom_s": 1e-4})
    [g] = run(launch.wave_tail, tight)
    assert g.time_at_stake_s == pytest.approx(1e-4)  # never more than the time above the binding bound
    assert "150 blocks on 100 slots (1.50 waves): the last wave leaves 50 slots idle" in f.message


def test_below_roof_names_the_counters_it_checked() -> None:
    one = placed({"achieved_occupancy_pct": 90.0})
    assert checklist._checked_text(one) == ("No fault in occupancy: look at latency (stall reasons, work per thread, "
                                            "synchronization).")
    two = placed({"threads_per_inst": 32.0, "waves": 4.0})
    assert checklist._checked_text(two).startswith("No fault in active lanes or waves: ")
    three = placed({"global_load_sectors": 1.0, "shared_bank_conflicts": 0.0, "waves": 4.0})
    assert checklist._checked_text(three).startswith("No fault in coalescing, bank conflicts or waves: ")
    assert checklist._checked_text(placed({})).startswith("No occupancy, access or instruction counters")


def test_a_launch_on_its_roof_with_a_trap_is_not_praised() -> None:
    frame = placed({"pct_of_roof": 90.0, "headroom_s": 1e-4, "shared_bank_conflicts": 40.0,
                    "shared_wavefronts": 100.0},
                   {"pct_of_roof": 90.0, "headroom_s": 1e-4})
    assert [f.kernels for f in run(checklist.at_roof, frame)] == [("k1",)]
    hot = placed({"pct_of_roof": 90.0, "dram_peak_bytes_per_s": 1e12, "achieved_dram_bytes_per_s": 1.5e12})
    assert not run(checklist.at_roof, hot)  # above the DRAM peak: the cache finding speaks instead
    unknown = placed({"pct_of_roof": 95.0, "bound": "overhead"})
    assert not run(checklist.at_roof, unknown)


def test_roof_text_on_each_basis() -> None:
    flops = {"pct_basis": "flops", "achieved_flops_per_s": 7.7e12, "attainable_flops_per_s": 30.9e12,
             "bound": "compute", "intensity_dram": 100.0, "compute_roof": "fp32 FMA"}
    assert checklist._roof_text(flops) == ("7.7 TFLOP/s of an attainable 30.9 TFLOP/s (compute-bound at 100 FLOP/B, "
                                           "fp32 FMA roof)")
    assert checklist._roof_text({**flops, "intensity_dram": np.nan, "compute_roof": None}) == (
        "7.7 TFLOP/s of an attainable 30.9 TFLOP/s (compute-bound)")
    assert checklist._roof_text({**flops, "attainable_flops_per_s": np.nan}) == ""
    bandwidth = {"pct_basis": "dram bandwidth", "achieved_dram_bytes_per_s": 5e11, "dram_roof_bytes_per_s": 5.9e11}
    assert checklist._roof_text(bandwidth) == "500 GB/s of a 590 GB/s practical DRAM roof"
    assert checklist._roof_text({**bandwidth, "dram_roof_bytes_per_s": np.nan}) == ""


# --- exactly at the cut (numbers exactly representable): which side the documented word puts it ----
def test_signals_exactly_at_their_cut() -> None:
    # "above 16 sectors per request": 16 is not above
    assert signals.uncoalesced_signal({"global_load_sectors": 16e5, "global_load_requests": 1e5}, TH) is None
    # "at or above 1.1x the ideal sectors", "at or above 25% conflicts"
    assert signals.uncoalesced_signal({"global_sectors_theoretical": 2.2e6, "global_sectors_ideal": 2e6}, TH)
    assert signals.bank_conflict_signal({"shared_bank_conflicts": 25.0, "shared_wavefronts": 100.0}, TH)
    # "adds and multiplies at or above 30%": 30 of 100 is (FP time 2 x 1e12 / 1e13 = 0.2 s of 0.8 s: 25%)
    assert signals.no_fma_signal(_fp("fp32", 0.7e12, 0.3e12, flops=1.7e12, time_s=0.8, time_lower_bound_s=0.5,
                                   peak_fp32_flops_per_s=1e13), TH)
    # "FP64/FP32 at or below 1/8", "FP64 taking at least 25% of the time"
    at = {"flops_fp64": 0.25e12, "flops": 0.25e12, "time_s": 1.0, "time_lower_bound_s": 0.5,
          "peak_fp64_flops_per_s": 1e12, "peak_fp32_flops_per_s": 8e12}
    assert FP64_SIGNAL(at, TH)
    # "below 28 active threads", "achieved/theoretical below 0.7", "theoretical below 50%"
    assert signals.divergence_signal({**BELOW, "threads_per_inst": 28.0}, TH) is None
    occ = {**BELOW, "achieved_occupancy_pct": 70.0, "theoretical_occupancy_pct": 100.0}
    assert signals.occupancy_signal(occ, TH) is None
    half = {**occ, "achieved_occupancy_pct": 45.0, "theoretical_occupancy_pct": 50.0}
    assert signals.occupancy_signal(half, TH) is None
    # "above 1.02 x the peak": exactly 1.02 x is not above
    peak = 1e12
    row = {"dram_peak_bytes_per_s": peak, "time_s": 1e-3, "achieved_dram_bytes_per_s": TH.above_peak_tolerance * peak}
    assert signals.above_dram_signal(row, TH) is None
    # a launch of exactly 10 us is not launch-bound
    assert _short(10e-6, 1e6)["bound"] == "latency"  # 1 MB / 10 us: 11.4% of the roof, under 50%


def test_rules_exactly_at_their_cut() -> None:
    # "extra bytes at or above 1.5x": fuse; "at or below 1.2x and at or above 80% of the roof": stop
    fuse = pd.DataFrame([region(extra_bytes_factor=1.5, dram_bytes=1.5e9)])
    assert run(checklist.fuse_extra_bytes, placed({}), fuse)
    stop = pd.DataFrame([region(extra_bytes_factor=1.2, dram_bytes=1.2e9, time_s=5.0, ideal_time_s=4.0)])
    assert run(checklist.at_roof_stop, placed({}), stop)
    # below-roof advice worth exactly 0.5% of the run is dropped (it must be worth more)
    frame = placed({"kernel": "big", "pct_of_roof": 95.0, "time_s": 0.75, "headroom_s": 0.0},
                   {"kernel": "small", "pct_of_roof": 10.0, "time_s": 0.25, "headroom_s": 0.005})
    assert not run(checklist.below_roof_rule, frame)
    # severity: exactly 10% of the run is high, exactly 2% medium
    assert run_severity(Finding("r", ("k",), None, "low", "m", 0.125), 1.25, TH) == "high"
    assert run_severity(Finding("r", ("k",), None, "low", "m", 0.025), 1.25, TH) == "medium"


def test_zero_conflicts_never_flag_even_with_a_zero_threshold() -> None:
    zero = Thresholds(bank_conflict_share=0.0)
    assert signals.bank_conflict_signal({"shared_bank_conflicts": 0.0, "shared_wavefronts": 100.0}, zero) is None
    assert signals.bank_conflict_signal({"shared_bank_conflicts": 1.0, "shared_wavefronts": 100.0}, zero)


def test_uncoalesced_text_needs_both_sector_counts_for_the_ideal_wording() -> None:
    for theo, ideal in ((0.0, 1e5), (4e5, 0.0)):
        row = {"global_sectors_theoretical": theo, "global_sectors_ideal": ideal}
        text, side = traps._uncoalesced_text(row, {"load": 24.0, "store": 2.0}, 16.0)
        assert side == "loads" and text.startswith("Loads use 24.0 sectors per request"), (theo, ideal)


def test_a_zero_report_peak_is_replaced_by_the_device_table_peak() -> None:
    row = {"device": "NVIDIA GeForce RTX 5070", "peak_fp64_flops_per_s": 0.0, "peak_fp32_flops_per_s": 0.0}
    assert signals._peak(row, "fp64") == 4.82e11 and signals._peak(row, "fp32") == 3.09e13
    assert signals._peak({**row, "peak_fp32_flops_per_s": 2e13}, "fp32") == 2e13


def test_trap_edge_wording_and_ratios() -> None:
    # almost every wavefront a conflict: at least one wavefront is needed
    s = signals.bank_conflict_signal({"shared_bank_conflicts": 99.5, "shared_wavefronts": 100.0}, TH)
    assert s is not None and s["wavefronts_per_needed"] == pytest.approx(100.0)
    [f] = run(launch.grid_underfill, placed({"grid_size": 1.0, "sm_count": 48.0}))
    assert "1 block for 48 SMs" in f.message
    text, side = traps._uncoalesced_text({}, {"load": 20.0, "store": 16.0}, 16.0)
    assert side == "loads" and "stores" not in text  # exactly 16 per request is not "more than 16"


# --- after the seed-2718 measurement (merged code) ---------------------------------------------
def test_occupancy_share_is_the_larger_of_missing_warps_and_the_relaxing_gain() -> None:
    # latency-bound, registers limit 4 blocks of 4 warps, the next limit 5: 16 -> 20 warps, gain 1.25
    base = {"bound": "latency", "pct_of_roof": 30.0, "time_s": 1e-3, "headroom_s": 0.7e-3,
            "theoretical_occupancy_pct": 60.0, "block_size": 128.0, "max_warps_per_sm": 64.0,
            "max_registers_per_sm": 65536.0, "occupancy_limit_registers": 4.0, "occupancy_limit_warps": 5.0,
            "occupancy_limit_blocks": 32.0, "occupancy_limit_shared_mem": 32.0}
    short = signals.occupancy_signal({**base, "achieved_occupancy_pct": 30.0}, TH)  # 0.5 missing at run time
    assert short is not None and short["share"] == pytest.approx(max(1 - 0.5, 1 - 1 / 1.25)) == pytest.approx(0.5)
    full = signals.occupancy_signal({**base, "achieved_occupancy_pct": 45.0}, TH)  # 0.75: not short, the gain's 0.2
    assert full is not None and not full["runtime_short"] and full["share"] == pytest.approx(1 - 1 / 1.25)


def _sol_point(pct: float, sm: float, memory: float) -> str:
    raw = pd.DataFrame([{**{c: pd.NA for c in IDENTITY_COLUMNS}, "report": "r", "id": 0, "kernel": "k",
                         "gpu__time_duration.sum": 100e-6, "dram__bytes.sum": pct / 100 * 100e-6 * 880e9,
                         "dram__bytes.sum.peak_sustained": 100.0, "dram__cycles_elapsed.avg.per_second": 1e10,
                         "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": memory,
                         "sm__throughput.avg.pct_of_peak_sustained_elapsed": sm}])
    return str(place(normalize(raw)).iloc[0]["bound"])


def test_a_placed_launch_at_half_its_roof_is_not_latency_bound_whatever_its_speed_of_light() -> None:
    # the speed-of-light-only latency test is for launches with no roofline: at 55% of the roof with
    # ncu's SM 30% and memory 55% (neither busy) the launch stays memory-bound
    assert _sol_point(55.0, 30.0, 55.0) == "memory"
    assert _sol_point(45.0, 30.0, 55.0) == "latency"


def test_one_flop_puts_the_launch_on_the_flops_basis() -> None:
    raw = pd.DataFrame([{**{c: pd.NA for c in IDENTITY_COLUMNS}, "report": "r", "id": 0, "kernel": "k",
                         "device": "NVIDIA GeForce RTX 5070", "gpu__time_duration.sum": 100e-6,
                         "dram__bytes.sum": 1e6, **{f"smsp__sass_thread_inst_executed_op_f{op}_pred_on.sum": 0.0
                                                     for op in ("fma", "mul")},
                         "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 1.0}])
    row = place(normalize(raw)).iloc[0]
    assert row["flops"] == 1.0 and row["pct_basis"] == "flops"


def test_scaling_fit_leaves_out_launches_without_a_grid_or_a_time() -> None:
    # a grid of 0 blocks or a time of 0 (unknown/damaged) is not a point of the fit: 3 launches fit
    good = {"grid_size": [10.0, 15.0, 20.0], "time_s": [16e-7 + 1e-6, 16e-7 + 1.5e-6, 16e-7 + 2e-6]}
    for grid, time_s in ((0.0, 5e-6), (40.0, 0.0)):
        group = pd.DataFrame({"grid_size": [grid, *good["grid_size"]], "time_s": [time_s, *good["time_s"]]})
        fit = launch._scaling_fit(group, TH)
        assert fit is not None and fit["launches_fit"] == 3 and fit["size_ratio"] == pytest.approx(2.0)
        assert fit["fixed_s"] == pytest.approx(16e-7)


def test_occupancy_share_without_a_theory_limit_ignores_the_relaxing_gain() -> None:
    # memory-bound below its roof, theoretical 60% (not low): registers limit 4 blocks of 4 warps, the
    # next limit 8: relaxing would give 16 -> 32 warps (gain 2), but only the run-time shortfall counts:
    # achieved 40 of 60 = 2/3 (under 0.7), so the share is 1 - 2/3, not 1 - 1/2
    row = {"bound": "memory", "pct_of_roof": 30.0, "time_s": 1e-3, "headroom_s": 0.7e-3,
           "achieved_occupancy_pct": 40.0, "theoretical_occupancy_pct": 60.0, "block_size": 128.0,
           "max_warps_per_sm": 64.0, "max_registers_per_sm": 65536.0, "occupancy_limit_registers": 4.0,
           "occupancy_limit_warps": 8.0, "occupancy_limit_blocks": 32.0, "occupancy_limit_shared_mem": 32.0}
    s = signals.occupancy_signal(row, TH)
    assert s is not None and s["runtime_short"] and not s["theory_limited"]
    assert s["warps_now"] == 16.0 and s["warps_after"] == 32.0
    assert s["share"] == pytest.approx(1 - 40 / 60)
