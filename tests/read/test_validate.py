"""Pins of validation (``ncu_roof.read.validate``): every threshold just inside and just outside,
with the exact note a user reads. Raw frames are built here by hand (a few metrics each); the
tidy checks run on the table ``normalize`` makes of them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ncu_roof.read import metrics as M
from ncu_roof.read import validate as V
from ncu_roof.read.normalize import normalize

GPC_CYCLES, GPC_CLOCK = M.TIME_CHECKS[0]  # gpc__cycles_elapsed.max, gpc__cycles_elapsed.avg.per_second
SM_CYCLES, SM_CLOCK = M.TIME_CHECKS[1]


def raw_frame(rows: list[dict[str, object]], report: str = "r.csv") -> pd.DataFrame:
    """A raw launch frame: identity columns filled, metric columns float64."""
    frame = pd.DataFrame([{"report": report, "id": i, "kernel": "k", **row} for i, row in enumerate(rows)])
    for col in frame.columns:
        if col not in V.IDENTITY_COLUMNS:
            frame[col] = frame[col].astype("float64")
    return frame


def notes_of(checked: pd.DataFrame) -> list[object]:
    return [n if isinstance(n, str) else None for n in checked[V.NOTES]]


def one(metric: str, value: float) -> tuple[float, object]:
    """(the value after the check, the note) of one launch holding one metric (and a second,
    clean launch, so that the frame has two rows)."""
    checked = V.check_raw(raw_frame([{metric: value}, {metric: 1.0}]))
    return checked[metric].iloc[0], notes_of(checked)[0]


def kept(metric: str, value: float) -> bool:
    after, note = one(metric, value)
    return after == value and note is None


# --------------------------------------------------------------------------- values


def test_constants() -> None:
    assert V.PEAK_MARGIN == 1.5
    assert V.TIME_TOLERANCE == 0.25
    assert (V.MAX_TIME_S, V.MIN_TIME_S, V.MAX_COUNT) == (86400.0, 1e-9, 1e21)
    assert V.CLOCK_RANGE_HZ == (1e6, 5e10)
    assert V.SM_RANGE == (1, 1024) and V.CC_MAJORS == range(1, 16)
    assert V.MAX_BLOCK == (1024, 1024, 64) and V.MAX_GRID == (2**31 - 1, 65535, 65535)
    assert V.MAX_THREADS_PER_BLOCK == 1024 and V.MAX_SHOWN == 10


def test_duration_bounds() -> None:
    assert kept(M.TIME, 86400.0) and kept(M.TIME, 1e-9)
    after, note = one(M.TIME, 86401.0)
    assert math.isnan(after)
    assert note == "gpu__time_duration.sum = 8.64e+04 is not possible as a duration: unknown"
    after, note = one(M.TIME, 0.99e-9)
    assert math.isnan(after)
    assert note == "gpu__time_duration.sum = 9.9e-10 is not possible as a duration: unknown"
    after, note = one(M.TIME, 0.0)
    assert math.isnan(after) and note == "gpu__time_duration.sum = 0 is not possible as a duration: unknown"


def test_count_bounds() -> None:
    metric = "dram__bytes_read.sum"
    assert kept(metric, 1e21) and kept(metric, 0.0) and kept(metric, 1e-12)
    for value, shown in ((1.01e21, "1.01e+21"), (-1.0, "-1"), (0.9e-12, "9e-13"), (math.inf, "inf")):
        after, note = one(metric, value)
        assert math.isnan(after), value
        assert note == f"dram__bytes_read.sum = {shown} is not possible as a value: unknown"


def test_cycle_counts_must_be_positive() -> None:
    assert kept(GPC_CYCLES, 1.0)
    after, note = one(GPC_CYCLES, 0.0)
    assert math.isnan(after)
    assert note == "gpc__cycles_elapsed.max = 0 is not possible as an elapsed-cycle count: unknown"


def test_clock_bounds() -> None:
    assert kept(GPC_CLOCK, 1e6) and kept(GPC_CLOCK, 5e10)
    for value, shown in ((0.99e6, "9.9e+05"), (5.1e10, "5.1e+10")):
        after, note = one(GPC_CLOCK, value)
        assert math.isnan(after)
        assert note == f"gpc__cycles_elapsed.avg.per_second = {shown} is not possible as a clock: unknown"


# --------------------------------------------------------------------------- duration vs cycles / clock


def timed(time_s: float, *estimates: float) -> pd.DataFrame:
    """One launch of ``time_s`` with (cycles, clock) pairs whose ratio is each estimate, clock 1 GHz."""
    row: dict[str, object] = {M.TIME: time_s}
    for (cycles, clock), est in zip(M.TIME_CHECKS, estimates, strict=False):
        row[cycles], row[clock] = est * 1e9, 1e9
    return V.check_raw(raw_frame([row]))


def test_duration_within_the_tolerance_is_kept() -> None:
    for est in (1.24e-3, 0.76e-3):  # 24% off a 1 ms duration
        checked = timed(1e-3, est)
        assert checked[M.TIME].iloc[0] == 1e-3 and checked[GPC_CYCLES].iloc[0] == est * 1e9
        assert notes_of(checked) == [None]


def test_one_estimate_beyond_the_tolerance_leaves_both_unknown() -> None:
    for est, shown in ((1.26e-3, "0.00126"), (0.74e-3, "0.00074")):
        checked = timed(1e-3, est)
        assert math.isnan(checked[M.TIME].iloc[0]) and math.isnan(checked[GPC_CYCLES].iloc[0])
        assert checked[GPC_CLOCK].iloc[0] == 1e9  # the clock is not judged, only the cycle count
        assert notes_of(checked) == [
            f"duration 0.001 s disagrees with {GPC_CYCLES} / {GPC_CLOCK} = {shown} s and nothing tells which "
            "is damaged: both unknown"]


def test_two_estimates_that_agree_outvote_the_duration() -> None:
    checked = timed(1e-3, 2e-3, 2.4e-3)  # 2.0 and 2.4 ms: median 2.2, both within 25% of it
    assert math.isnan(checked[M.TIME].iloc[0])
    assert checked[GPC_CYCLES].iloc[0] == 2e6 and checked[SM_CYCLES].iloc[0] == 2.4e6
    assert notes_of(checked) == ["duration 0.001 s disagrees with elapsed cycles / clock = 0.0022 s: the cycles "
                                 "and clock are trusted, the duration is taken from them"]


def test_two_estimates_that_disagree_leave_everything_unknown() -> None:
    checked = timed(1e-3, 2e-3, 4e-3)  # median 3 ms: 2 ms is 33% off it
    assert math.isnan(checked[M.TIME].iloc[0])
    assert math.isnan(checked[GPC_CYCLES].iloc[0]) and math.isnan(checked[SM_CYCLES].iloc[0])
    assert notes_of(checked)[0].endswith("= 0.003 s and nothing tells which is damaged: both unknown")


def test_the_estimate_that_disagrees_with_a_trusted_duration_is_damaged() -> None:
    checked = timed(1e-3, 1.1e-3, 1.3e-3)  # the first agrees (10%), the second does not (30%)
    assert checked[M.TIME].iloc[0] == 1e-3 and checked[GPC_CYCLES].iloc[0] == 1.1e6
    assert math.isnan(checked[SM_CYCLES].iloc[0])
    assert notes_of(checked) == [f"{SM_CYCLES} / {SM_CLOCK} disagrees with the duration: {SM_CYCLES} is judged "
                                 "damaged (unknown)"]


# --------------------------------------------------------------------------- identity


def identity(**columns: object) -> tuple[pd.DataFrame, object]:
    checked = V.check_raw(raw_frame([columns, {}]))
    return checked, notes_of(checked)[0]


@pytest.mark.parametrize(("sms", "ok"), [(1.0, True), (1024.0, True), (0.0, False), (1025.0, False), (1.5, False)])
def test_sm_count(sms: float, ok: bool) -> None:
    checked, note = identity(**{M.SM_COUNT: sms})
    if ok:
        assert checked[M.SM_COUNT].iloc[0] == sms and note is None
    else:
        assert math.isnan(checked[M.SM_COUNT].iloc[0])
        assert note == f"SM count {sms:.4g} is not possible: unknown"


@pytest.mark.parametrize(("cc", "ok"), [("1.0", True), ("15.9", True), ("0.9", False), ("16.0", False),
                                        ("8.10", False), ("eight", False)])
def test_cc_text(cc: str, ok: bool) -> None:
    checked, note = identity(cc=cc)
    assert bool(checked["cc"].iloc[0] == cc) is ok
    assert note == (None if ok else f"compute capability {cc} is not possible for this launch: unknown")


@pytest.mark.parametrize(("major", "minor", "ok"), [(15, 9, True), (1, 0, True), (16, 0, False), (0, 0, False),
                                                    (8, 10, False)])
def test_cc_metrics(major: int, minor: int, ok: bool) -> None:
    checked, note = identity(cc="8.0", **{M.CC_MAJOR: float(major), M.CC_MINOR: float(minor)})
    assert bool(checked[M.CC_MAJOR].iloc[0] == major and checked[M.CC_MINOR].iloc[0] == minor) is ok
    assert bool(checked["cc"].iloc[0] == "8.0") is ok
    assert bool(note is None) is ok


def test_negative_cc_minor_is_caught_as_a_value() -> None:
    checked, note = identity(cc="8.0", **{M.CC_MAJOR: 8.0, M.CC_MINOR: -1.0})
    assert checked["cc"].iloc[0] == "8.0" and math.isnan(checked[M.CC_MINOR].iloc[0])
    assert note == f"{M.CC_MINOR} = -1 is not possible as a value: unknown"


def test_cc_the_named_device_does_not_have() -> None:
    checked, note = identity(cc="8.0", device="NVIDIA A10G")  # an A10G is 8.6
    assert pd.isna(checked["cc"].iloc[0])
    assert note == "compute capability 8.0 is not possible for this launch: unknown"
    checked, note = identity(cc="8.6", device="NVIDIA A10G")
    assert checked["cc"].iloc[0] == "8.6" and note is None


@pytest.mark.parametrize(("block", "ok"), [
    ("(1024, 1, 1)", True), ("(1, 1024, 1)", True), ("(1, 1, 64)", True), ("(32, 32, 1)", True),
    ("(1025, 1, 1)", False), ("(1, 1025, 1)", False), ("(1, 1, 65)", False), ("(32, 32, 2)", False),
    ("(0, 1, 1)", False), ("(-1, 1, 1)", False),
])
def test_block_shape(block: str, ok: bool) -> None:
    checked, note = identity(block_dim=block)
    assert bool(checked["block_dim"].iloc[0] == block) is ok
    x, y, z = (int(v) for v in block.strip("()").split(","))
    assert note == (None if ok else f"block size {(x, y, z)} is not possible: unknown")


@pytest.mark.parametrize(("grid", "ok"), [
    ("(2147483647, 1, 1)", True), ("(1, 65535, 1)", True), ("(1, 1, 65535)", True),
    ("(2147483648, 1, 1)", False), ("(1, 65536, 1)", False), ("(1, 1, 65536)", False), ("(1, 0, 1)", False),
])
def test_grid_shape(grid: str, ok: bool) -> None:
    checked, note = identity(grid_dim=grid)
    assert bool(checked["grid_dim"].iloc[0] == grid) is ok
    assert bool(note is None) is ok


def test_shape_from_the_dimension_metrics() -> None:
    dims = dict(zip(M.BLOCK_DIMS, (2048.0, 1.0, 1.0), strict=True))
    checked, note = identity(**dims)
    assert all(math.isnan(checked[p].iloc[0]) for p in M.BLOCK_DIMS)
    assert note == "block size (2048, 1, 1) is not possible: unknown"
    checked, note = identity(**dict(zip(M.BLOCK_DIMS, (256.0, 2.0, 2.0), strict=True)), **{M.BLOCK_SIZE: 1024.0})
    assert checked[M.BLOCK_SIZE].iloc[0] == 1024.0 and note is None



def test_launch_shapes_judged_once_per_combination_as_one_by_one() -> None:
    """Many launches repeating a few shapes (text, metrics, both, neither): each launch's shape,
    note and size check are those of the launch checked alone."""
    dims = dict(zip(M.BLOCK_DIMS, (2048.0, 1.0, 1.0), strict=True))
    kinds: list[dict[str, object]] = [
        {"block_dim": "(128, 2, 1)", M.BLOCK_SIZE: 256.0},  # fine
        {"block_dim": "(128, 2, 1)", M.BLOCK_SIZE: 255.0},  # size disagrees
        {"block_dim": "(2048, 1, 1)"},  # too big
        {"block_dim": "not a shape", **dims},  # the metrics say it: too big
        {**dict(zip(M.BLOCK_DIMS, (256.0, 2.0, 2.0), strict=True)), M.BLOCK_SIZE: 1024.0},  # fine, metrics alone
        {M.BLOCK_DIMS[0]: 32.0, M.BLOCK_SIZE: 1025.0},  # a dimension missing: the limit alone
        {},
    ]
    rows = [kinds[(i * 5) % len(kinds)] for i in range(60)]
    together = V.check_raw(raw_frame(rows))

    def shape_notes(note: object) -> list[str]:  # not the launches with fewer metrics than others
        return [n for n in note.split("; ") if not n.startswith("has ")] if isinstance(note, str) else []

    for i, row in enumerate(rows):
        alone = V.check_raw(raw_frame([row, {}]))
        assert shape_notes(notes_of(together)[i]) == shape_notes(notes_of(alone)[0])
        for column in ("block_dim", M.BLOCK_SIZE, *M.BLOCK_DIMS):
            if column in alone:
                a, b = together[column].iloc[i], alone[column].iloc[0]
                assert a == b or (pd.isna(a) and pd.isna(b)), (i, column, a, b)
    assert shape_notes(notes_of(together)[2]) == ["block size (2048, 1, 1) is not possible: unknown"]  # kinds[3]
    assert shape_notes(notes_of(together)[6]) == ["block size (2048, 1, 1) is not possible: unknown"]  # kinds[2]
    assert shape_notes(notes_of(together)[3]) == ["launch__block_size = 255 is not possible or disagrees with the "
                                                  "block dimensions: unknown"]  # kinds[1]
    assert together[M.BLOCK_SIZE].iloc[5] == 1024.0 and not shape_notes(notes_of(together)[5])  # kinds[4]

def test_a_block_of_one_thread_is_possible() -> None:
    checked, note = identity(block_dim="(1, 1, 1)", **{M.BLOCK_SIZE: 1.0})
    assert checked[M.BLOCK_SIZE].iloc[0] == 1.0 and note is None


@pytest.mark.parametrize(("size", "ok"), [(256.0, True), (255.0, False), (0.0, False)])
def test_block_size_against_its_dimensions(size: float, ok: bool) -> None:
    checked, note = identity(block_dim="(128, 2, 1)", **{M.BLOCK_SIZE: size})
    assert bool(checked[M.BLOCK_SIZE].iloc[0] == size) is ok
    assert note == (None if ok else f"launch__block_size = {size:.4g} is not possible or disagrees with the block "
                    "dimensions: unknown")


@pytest.mark.parametrize(("size", "ok"), [(1024.0, True), (1025.0, False)])
def test_block_size_limit_without_dimensions(size: float, ok: bool) -> None:
    checked, _ = identity(**{M.BLOCK_SIZE: size})
    assert bool(checked[M.BLOCK_SIZE].iloc[0] == size) is ok


def test_grid_size_limit_without_dimensions() -> None:
    limit = float((2**31 - 1) * 65535 * 65535)
    checked, note = identity(**{M.GRID_SIZE: limit})
    assert checked[M.GRID_SIZE].iloc[0] == limit and note is None
    checked, note = identity(**{M.GRID_SIZE: limit * 1.01})
    assert math.isnan(checked[M.GRID_SIZE].iloc[0]) and note is not None


# --------------------------------------------------------------------------- cut files and duplicates


def test_last_launch_of_an_export_held_to_three_quarters_of_the_others() -> None:
    full = {f"m{i}": 1.0 for i in range(4)}
    three = {f"m{i}": 1.0 for i in range(3)}
    two = {f"m{i}": 1.0 for i in range(2)}
    a, b = dict(full), dict(full)
    # the last launch is another kernel (so its own kernel's launches do not judge it)
    frame = raw_frame([a, b, three])
    frame.loc[2, "kernel"] = "other"
    assert notes_of(V.check_raw(frame)) == [None, None, None]  # 3 of 4 is exactly 0.75
    frame = raw_frame([a, b, two])
    frame.loc[2, "kernel"] = "other"
    assert notes_of(V.check_raw(frame)) == [
        None, None, "has 2 of the 4 metrics other launches have (a cut or damaged file?): the rest is unknown"]
    frame["report"] = "r.ncu-rep"  # a report's container is checked by the reader instead
    assert notes_of(V.check_raw(frame)) == [None, None, None]


def test_launch_with_fewer_metrics_than_its_kernel() -> None:
    frame = raw_frame([{"m0": 1.0, "m1": 1.0}, {"m0": 1.0}, {"m0": 1.0, "m1": 1.0}])
    assert notes_of(V.check_raw(frame)) == [
        None, "has 1 of the 2 metrics other launches have (a cut or damaged file?): the rest is unknown", None]


def test_a_launch_without_the_only_metric_is_cut() -> None:
    frame = raw_frame([{"m0": 1.0}, {"m0": 1.0}])
    frame.loc[1, "m0"] = np.nan
    assert notes_of(V.check_raw(frame)) == [
        None, "has 0 of the 1 metrics other launches have (a cut or damaged file?): the rest is unknown"]


def test_frame_without_launch_ids() -> None:
    frame = raw_frame([{"m0": 1.0}, {"m0": 1.0}]).drop(columns="id")
    checked = V.check_raw(frame)
    assert list(checked["m0"]) == [1.0, 1.0] and notes_of(checked) == [None, None]


def test_one_launch_is_never_cut() -> None:
    assert notes_of(V.check_raw(raw_frame([{"m0": 1.0}]))) == [None]


@pytest.mark.parametrize("launches", [0, 1])
def test_no_other_launch_to_compare_with(launches: int) -> None:
    """No launch, or a single one, has no other launches to be cut short against: nothing noted
    (``check_raw`` is public: an empty frame must not fail)."""
    frame = raw_frame([{"m0": 1.0, "m1": 2.0}])
    checked = V.check_raw(frame.iloc[:launches])
    assert len(checked) == launches and notes_of(checked) == [None] * launches


def test_duplicate_rows_read_once_and_shared_ids_noted() -> None:
    frame = raw_frame([{"m0": 1.0}, {"m0": 2.0}])
    frame["id"] = [7, 7]
    twice = pd.concat([frame.iloc[[0]], frame], ignore_index=True)
    checked = V.check_raw(twice)
    assert list(checked["m0"]) == [1.0, 2.0]
    once = "this launch's row appears more than once in the input (a joined or edited file?): read once"
    used = "launch ID 7 is used by more than one launch (a joined or edited file?)"
    assert notes_of(checked) == [f"{once}; {used}", used]


# --------------------------------------------------------------------------- rates against the peaks


def tidy_with_dram(ratio_of_peak: float, peak: float = 1e12) -> pd.DataFrame:
    """A tidy launch of 1 ms that moved ``ratio_of_peak`` x what the ``peak`` allows."""
    raw = raw_frame([{M.TIME: 1e-3, "dram__bytes.sum": ratio_of_peak * peak * 1e-3,
                      "dram__bytes.sum.peak_sustained": peak / 1e9, "dram__cycles_elapsed.avg.per_second": 1e9}])
    tidy = normalize(raw)
    tidy["peak_dram_bytes_per_s"] = peak
    return tidy


def test_rate_just_under_the_margin_is_kept() -> None:
    tidy = V.check_tidy(tidy_with_dram(1.49))
    assert tidy["dram_bytes"].iloc[0] == pytest.approx(1.49e9, rel=1e-12)
    assert notes_of(tidy) == [None]


def test_rate_over_the_margin_is_damaged() -> None:
    tidy = V.check_tidy(tidy_with_dram(1.51))
    assert math.isnan(tidy["dram_bytes"].iloc[0])
    assert tidy["time_s"].iloc[0] == 1e-3
    assert notes_of(tidy) == ["achieved DRAM bandwidth is 1.51x the device's peak: dram_bytes is judged damaged "
                              "(unknown)"]


def test_a_zero_peak_is_no_peak() -> None:
    """A peak of 0 (a damaged report) judges nothing: the bytes are kept, with no note (not infinitely over)."""
    tidy = tidy_with_dram(1.0)
    tidy["peak_dram_bytes_per_s"] = 0.0
    tidy = V.check_tidy(tidy)
    assert tidy["dram_bytes"].iloc[0] == 1e9
    assert notes_of(tidy) == [None]


def test_several_rates_over_the_margin_make_the_duration_unknown() -> None:
    tidy = tidy_with_dram(2.0)
    tidy["l2_bytes"] = 4e9
    tidy["peak_l2_bytes_per_s"] = 1e12  # 4x
    tidy = V.check_tidy(tidy)
    assert math.isnan(tidy["time_s"].iloc[0])
    assert tidy["dram_bytes"].iloc[0] == 2e9 and tidy["l2_bytes"].iloc[0] == 4e9
    assert notes_of(tidy) == ["achieved DRAM bandwidth, L2 bandwidth are all above the device's peaks by more "
                              "than 1.5x: the duration is judged damaged (unknown)"]


def test_the_device_table_peak_stands_in_for_a_missing_one() -> None:
    tidy = tidy_with_dram(1.0, peak=1e12)
    tidy["peak_dram_bytes_per_s"] = np.nan
    tidy["device"] = "NVIDIA A10G"  # 600 GB/s in the device table
    tidy["dram_bytes"] = 1e9 * 1.0  # 1 TB/s over 1 ms: 1.67x the A10G's 600 GB/s
    tidy = V.check_tidy(tidy)
    assert math.isnan(tidy["dram_bytes"].iloc[0])
    assert notes_of(tidy)[0].startswith("achieved DRAM bandwidth is 1.6")


def test_flops_recomputed_after_a_damaged_count() -> None:
    tidy = tidy_with_dram(1.0)
    tidy["flops_fp32"] = 2e12  # 2 PFLOP/s over 1 ms against a 1 PFLOP/s peak
    tidy["peak_fp32_flops_per_s"] = 1e15
    tidy["flops"] = 2e12
    tidy = V.check_tidy(tidy)
    assert math.isnan(tidy["flops_fp32"].iloc[0]) and math.isnan(tidy["flops"].iloc[0])
    assert notes_of(tidy) == ["achieved FP32 rate is 2x the device's peak: flops_fp32 is judged damaged (unknown)"]


def test_flops_keep_the_precisions_that_are_not_damaged() -> None:
    tidy = tidy_with_dram(1.0)
    tidy["flops_fp64"] = 3e9  # 3 TFLOP/s over 1 ms against a 10 TFLOP/s peak: kept
    tidy["peak_fp64_flops_per_s"] = 1e13
    tidy["flops_fp32"] = 2e12  # damaged
    tidy["peak_fp32_flops_per_s"] = 1e15
    tidy["flops"] = 3e9 + 2e12
    tidy = V.check_tidy(tidy)
    assert tidy["flops"].iloc[0] == 3e9  # fp64 alone: the sum of what is left


# --------------------------------------------------------------------------- file notes


@pytest.mark.parametrize(("noted", "lines"), [(10, 10), (11, 11)])
def test_file_notes_name_ten_launches_then_count(noted: int, lines: int) -> None:
    table = pd.DataFrame({"id": range(12), "kernel": "k",
                          V.NOTES: [f"note {i}" if i < noted else np.nan for i in range(12)]})
    out = V.file_notes(table)
    assert len(out) == lines
    assert out[0] == "launch 0 (k): note 0" and out[9] == "launch 9 (k): note 9"
    if noted == 11:
        assert out[10] == "1 more launch(es) have notes: see the notes column of `ncu-roof table`"


def test_file_notes_of_a_table_without_notes() -> None:
    assert V.file_notes(pd.DataFrame({"id": [0], "kernel": ["k"]})) == []
    assert V.file_notes(pd.DataFrame({"id": [], "kernel": [], V.NOTES: []})) == []


def test_only_suspect_columns_are_judged_and_they_hold_every_impossible_value() -> None:
    """``_values`` judges only the columns whose least or largest value could be impossible: on
    matrices seeded with every kind of boundary value, that finds exactly what judging every column
    finds, and a column of possible values is not judged."""
    rng = np.random.default_rng(49)
    kinds = np.array(["time", "clock", "cycles", "count"] * 3)
    special = [np.nan, np.inf, -np.inf, -1.0, -0.0, 0.0, 1e-13, 1e-12, 5e-10, V.MIN_TIME_S, V.MAX_TIME_S,
               V.MAX_TIME_S * 2, V.MAX_COUNT, V.MAX_COUNT * 2, V.CLOCK_RANGE_HZ[0] / 2, V.CLOCK_RANGE_HZ[0],
               V.CLOCK_RANGE_HZ[1], V.CLOCK_RANGE_HZ[1] * 2]
    for _ in range(200):
        values = np.exp(rng.uniform(np.log(1e-6), np.log(1e9), size=(40, len(kinds))))
        values[:, kinds == "clock"] = rng.uniform(1e8, 2e9, size=(40, 3))
        for _ in range(int(rng.integers(0, 6))):
            values[rng.integers(0, 40), rng.integers(0, len(kinds))] = special[int(rng.integers(0, len(special)))]
        judged = V._suspect_columns(values, kinds)
        screened = np.zeros(values.shape, dtype=bool)
        screened[:, judged] = V._impossible(values[:, judged], kinds[judged])
        assert (screened == V._impossible(values, kinds)).all()
    clean = np.array([[1e-6, 1e9, 100.0, 3.0], [2e-6, 1.2e9, 200.0, 0.5]])
    assert not V._suspect_columns(clean, np.array(["time", "clock", "cycles", "count"])).any()
    assert V._suspect_columns(np.empty((0, 2)), np.array(["time", "count"])).tolist() == [False, False]
