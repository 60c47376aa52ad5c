"""Pinned edges of the placement (``roofline.place``) that the roof pins leave open.

The smallest counts (one FLOP, one byte), a positive roof below 1, the exact cuts of the overhead
and latency tests with their ``EPS`` tolerance, the per-kernel verdict (its weights and its keys),
the ``above_practical_roof`` mark and the ``roof`` entry of ``missing``. Each expected value is
worked out in the test, from synthetic launches (``tests.test_roofs.raw``) or small frames
given to the private helpers directly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncu_roof.model import roofline
from ncu_roof.model.roofline import EPS, Thresholds, place
from ncu_roof.read.normalize import normalize
from tests.model.test_roofs import DRAM_PEAK, FP32_PEAK, INST, L2_PEAK, OPS, peaks, raw

TH = Thresholds()


def _placed(*rows: dict[str, float], ceilings: dict | None = None) -> pd.DataFrame:
    return place(normalize(raw(*rows)), ceilings)


# --- the smallest counts ------------------------------------------------------------------------
def test_one_fadd_is_fp32_work_on_the_no_fma_roof() -> None:
    # 1 FADD: 1 FLOP, 1 instruction that could give 2 as an FMA: share 0.5, the no-FMA roof
    row = _placed({"gpu__time_duration.sum": 1e-3, **peaks(), INST.format("fadd"): 1.0}).iloc[0]
    assert row["flops"] == 1.0 and row["compute_precision"] == "fp32"
    assert row["compute_roof"] == "fp32 no-FMA"
    assert row["peak_flops_per_s"] == pytest.approx(FP32_PEAK / 2, rel=1e-12)


def test_one_byte_gives_an_intensity_of_the_flops_over_one() -> None:
    # 1 FFMA (2 FLOPs) over 1 DRAM byte: 2 FLOP/B; attainable min(3.072 TFLOP/s, 2 x 880 GB/s)
    row = _placed({"gpu__time_duration.sum": 1e-3, **peaks(), INST.format("ffma"): 1.0,
                   "dram__bytes.sum": 1.0}).iloc[0]
    assert row["intensity_dram"] == 2.0
    assert row["attainable_dram_flops_per_s"] == pytest.approx(2.0 * 0.88 * DRAM_PEAK, rel=1e-12)


def test_any_positive_roof_is_taken_even_below_one() -> None:
    # _pick takes the first candidate that is known and > 0, however small
    index = pd.RangeIndex(3)
    first = pd.Series([0.5, 0.0, np.nan])
    second = pd.Series([2.0, 3.0, 0.25])
    value, label = roofline._pick([(first, "a"), (second, "b")], index)
    assert list(value) == [0.5, 3.0, 0.25] and list(label) == ["a", "b", "b"]


# --- known work, unknown verdict ----------------------------------------------------------------
def test_flops_and_l2_bytes_without_dram_bytes_or_a_compute_peak_stay_unknown() -> None:
    # no compute peak (no per-cycle peaks, no device), no DRAM bytes: the L2 term alone gives a
    # bound of 2e9 B / 10.24 TB/s and a percent of roof on the FLOP basis, but the verdict needs the
    # DRAM bytes or FLOPs against a compute peak
    metrics = {"gpu__time_duration.sum": 1e-3, INST.format("ffma"): 1e9, "lts__t_bytes.sum": 2e9,
               "lts__t_bytes.sum.peak_sustained": 5120.0, "lts__cycles_elapsed.avg.per_second": 2.0e9}
    row = _placed(metrics).iloc[0]
    assert np.isnan(row["peak_flops_per_s"]) and np.isnan(row["dram_bytes"])
    assert row["time_lower_bound_s"] == pytest.approx(2e9 / L2_PEAK, rel=1e-12) and row["binding"] == "l2"
    # 2 TFLOP/s achieved of an attainable 1 FLOP/B x 10.24 TB/s: 19.5%, under the latency cut
    assert row["pct_of_roof"] == pytest.approx(100 * 2e12 / L2_PEAK, rel=1e-12)
    assert row["bound"] == "unknown"


# --- the overhead cut, exactly ------------------------------------------------------------------
def test_work_explaining_exactly_half_the_time_is_not_launch_bound() -> None:
    # measured DRAM roof 1 TB/s: 2 MB take 2 us, exactly half of a 4 us launch ("less than half")
    ceilings = {"source": "c.toml", "ceilings": {"dram_bytes_per_s": 1e12}}
    rows = _placed({"gpu__time_duration.sum": 4e-6, "dram__bytes.sum": 2e6},
                   {"gpu__time_duration.sum": 4e-6, "dram__bytes.sum": 1.9e6}, ceilings=ceilings)
    assert rows.loc[0, "time_lower_bound_s"] == 0.5 * 4e-6
    assert list(rows["bound"]) == ["memory", "overhead"]


def test_a_time_within_the_tolerance_of_10_us_is_not_launch_bound() -> None:
    at_cut = TH.overhead_time_s * (1 - EPS)  # 9.99999999 us: reaches 10 us within the tolerance
    dram = {"dram__bytes.sum": 1e6, "dram__bytes.sum.peak_sustained": 400.0,
            "dram__cycles_elapsed.avg.per_second": 2.5e9}
    rows = _placed({"gpu__time_duration.sum": at_cut, **dram}, {"gpu__time_duration.sum": 9.9999e-6, **dram})
    # 1 MB at 880 GB/s is 1.14 us, under half of either time; at 10 us it is 11.4% of the roof, under
    # the 50% of the latency cut
    assert list(rows["bound"]) == ["latency", "overhead"]


# --- the latency test, exactly -------------------------------------------------------------------
def test_latency_cuts_and_their_tolerance() -> None:
    cut = TH.latency_pct_of_roof / 100 * (1 - EPS)  # 0.4999999995: reaches 50% within the tolerance
    busy = TH.sol_busy_pct / 100 * (1 - EPS)  # 0.5999999994: reaches 60% within the tolerance
    # the roofline's work alone against 50%; every unit (busy shares included) against 60%
    roof = [0.5, cut, 0.499999999, 0.4, 0.4, 0.4, np.nan, np.nan]
    unit = [0.5, cut, 0.499999999, busy, 0.5999999, 0.6 - 3e-10, busy, np.nan]
    units = pd.DataFrame({"roofline_share": roof, "binding_unit_share": unit})
    assert list(roofline._latency(units, TH)) == [False, False, True, False, True, False, False, True]


# --- one verdict per kernel and grid --------------------------------------------------------------
def test_per_kernel_verdict_is_the_bound_holding_most_of_the_time() -> None:
    # kernel k: two 9 us launches launch-bound (18 us), one 30 us memory-bound: memory for all three
    # (counted by launches, overhead would win); kernel m: an untimed launch weighs 0 against 5 us
    t = pd.DataFrame({"kernel": ["k", "k", "k", "m", "m", "j"],
                      "time_s": [9e-6, 9e-6, 30e-6, np.nan, 5e-6, 1e-6]})
    bound = pd.Series(["overhead", "overhead", "memory", "unknown", "overhead", "compute"], dtype="object")
    assert list(roofline._per_kernel(t, bound)) == ["memory"] * 3 + ["overhead"] * 2 + ["compute"]
    # two keys: kernel and grid size; k's launches on another grid are judged apart
    t2 = t.assign(grid_size=[8.0, 8.0, 16.0, 1.0, 1.0, 1.0])
    assert list(roofline._per_kernel(t2, bound)) == ["overhead"] * 2 + ["memory"] + ["overhead"] * 2 + ["compute"]
    # no time anywhere: each launch counts once
    untimed = pd.DataFrame({"kernel": ["k", "k", "k"], "time_s": [np.nan] * 3})
    three = pd.Series(["compute", "memory", "memory"], dtype="object")
    assert list(roofline._per_kernel(untimed, three)) == ["memory"] * 3
    # no key column at all: every launch keeps its own bound
    assert list(roofline._per_kernel(t[["time_s"]], bound)) == list(bound)


# --- above the practical roof ----------------------------------------------------------------------
def test_above_practical_roof_only_over_100_percent_of_a_practical_dram_roof_that_binds() -> None:
    # 0.5 s launches against the practical 880 GB/s roof: 4.4e11 B is exactly 100%
    def launch(dram: float) -> dict[str, float]:
        return {"gpu__time_duration.sum": 0.5, **peaks(), "dram__bytes.sum": dram}

    rows = _placed(launch(4.4e11), launch(1.005 * 4.4e11), launch(0.5 * 4.4e11),
                   {**launch(1.005 * 4.4e11), "lts__t_bytes.sum": 1e13})
    assert rows.loc[0, "pct_of_roof"] == 100.0 and rows.loc[1, "pct_of_roof"] == pytest.approx(100.5)
    assert list(rows["binding"]) == ["dram", "dram", "dram", "l2"]  # 1e13 B at 10.24 TB/s: 0.98 s
    assert list(rows["above_practical_roof"]) == [False, True, False, False]
    measured = _placed(launch(1.005 * 4.4e11), ceilings={"ceilings": {"dram_bytes_per_s": 8.8e11}})
    assert measured.loc[0, "pct_of_roof"] == pytest.approx(100.5) and not measured.loc[0, "above_practical_roof"]


# --- "roof" in missing ------------------------------------------------------------------------------
def test_missing_roof_needs_work_and_neither_roof() -> None:
    no_ops = {INST.format(op): 0.0 for op in OPS}
    rows = _placed({"gpu__time_duration.sum": 1e-3, INST.format("fadd"): 1.0},  # 1 FLOP, no roof at all
                   {"gpu__time_duration.sum": 1e-3, **no_ops},  # no work: nothing to place
                   # FLOPs and DRAM bytes with a DRAM roof but no compute peak: a roof is there
                   {"gpu__time_duration.sum": 1e-3, INST.format("ffma"): 1e6, "dram__bytes.sum": 1e6,
                    "dram__bytes.sum.peak_sustained": 400.0, "dram__cycles_elapsed.avg.per_second": 2.5e9})
    assert list(rows["missing"]) == ["dram_bytes,l2_bytes,l1_bytes,roof", "dram_bytes,l2_bytes,l1_bytes",
                                     "l2_bytes,l1_bytes"]
