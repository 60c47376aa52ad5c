"""``trend``: per kernel (and device), its series over the store's runs, the median, a noise band
from the run-to-run spread, and the points where the kernel moved beyond that band.

A series has one point per group of runs: each run (``by="run"``), each day of ingest
(``"date"``) or each value of a label (``"label:commit"``), in the order of their first ingest;
a point is the median of its runs' values. The noise band is :data:`BAND_SPREADS` times the
relative spread, the largest of the spreads the store measures (each a robust standard
deviation: 1.4826 x the median absolute deviation, relative to the median):

- of the runs within one group (repeated runs of one commit, say),
- of a kernel's repeated launches within a run (time metrics only),
- of the successive points' changes, over sqrt(2) (with :data:`MIN_POINTS_FOR_SERIES` points or more);

where none is measured (single runs, single launches, a short series) the band is
:data:`UNMEASURED_BAND`, as ``compare`` assumes; it is never below :data:`MIN_BAND`. A point moved
when its ratio to the previous point is above 1 + band or below 1 / (1 + band).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.comparison.deltas import NOISE_UNKNOWN
from ncu_roof.errors import InputError
from ncu_roof.store import layout

# metric name -> (kernels column, unit, what it is, lower is better)
METRICS: dict[str, tuple[str, str, str, bool]] = {
    "time": ("time_per_launch_s", "s", "time per launch", True),
    "total_time": ("time_s", "s", "time of all its launches in the run", True),
    "pct_of_roof": ("pct_of_roof", "%", "% of roof", False),
    "bytes": ("dram_bytes", "B", "DRAM bytes of all its launches", True),
    "l2_bytes": ("l2_bytes", "B", "L2 bytes of all its launches", True),
    "flops": ("flops", "FLOP", "FLOPs of all its launches", False),
    "intensity": ("intensity_dram", "FLOP/B", "DRAM arithmetic intensity", False),
    "sol": ("sol_pct", "%", "speed of light of the busier side", False),
    "launches": ("launches", "", "launches", False),
}
TIME_METRICS = ("time", "total_time")
MAD_TO_SIGMA = 1.4826
BAND_SPREADS = 3.0
UNMEASURED_BAND = NOISE_UNKNOWN
MIN_BAND = 0.01
MIN_POINTS_FOR_SERIES = 4
DEFINITION = (f"noise band = {BAND_SPREADS:g} x the largest relative spread measured (1.4826 x median absolute "
              "deviation / median) of: runs within a point, repeated launches within a run (time), successive "
              f"points over sqrt(2) ({MIN_POINTS_FOR_SERIES}+ points); {UNMEASURED_BAND:.0%} where none is "
              f"measured, at least {MIN_BAND:.0%}; a move is a point whose ratio to the previous one is "
              "above 1 + band or below 1 / (1 + band)")


@dataclass(frozen=True)
class Point:
    group: str
    runs: int
    value: float
    first_ingest: str


@dataclass(frozen=True)
class Move:
    before: str
    after: str
    ratio: float  # after / before
    beyond_noise: bool


@dataclass
class Series:
    device: str | None
    kernel: str
    points: list[Point]
    median: float
    band: float
    band_basis: str
    moves: list[Move] = field(default_factory=list)


@dataclass
class Trend:
    store: str
    metric: str
    by: str
    series: list[Series]
    notes: list[str] = field(default_factory=list)
    definition: str = DEFINITION

    @property
    def moved(self) -> list[tuple[Series, Move]]:
        return [(s, m) for s in self.series for m in s.moves if m.beyond_noise]


def _robust_spread(values: np.ndarray) -> float:
    """1.4826 x median |x / median - 1| (NaN for fewer than two values or a median <= 0)."""
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return math.nan
    mid = float(np.median(values))
    return MAD_TO_SIGMA * float(np.median(np.abs(values / mid - 1.0))) if mid > 0 else math.nan


def _band(rows: pd.DataFrame, points: list[Point], metric: str) -> tuple[float, str]:
    spreads: dict[str, float] = {}
    deviations = []
    for _, group in rows.groupby("group", sort=False):
        values = group["value"].to_numpy(dtype="float64")
        mid = float(np.median(values))
        if len(values) > 1 and mid > 0:
            deviations += list(np.abs(values / mid - 1.0))
    if deviations:
        spreads["runs within a point"] = MAD_TO_SIGMA * float(np.median(deviations))
    if metric in TIME_METRICS:
        launch = rows["launch_time_spread"].dropna()
        if len(launch):
            spreads["repeated launches"] = MAD_TO_SIGMA * float(launch.median())
    values = np.array([p.value for p in points], dtype="float64")
    if len(values) >= MIN_POINTS_FOR_SERIES and (values > 0).all():
        steps = np.abs(np.diff(np.log(values)))
        spreads["successive points"] = MAD_TO_SIGMA * float(np.median(steps)) / math.sqrt(2.0)
    known = {k: v for k, v in spreads.items() if v == v}
    if not known:
        return UNMEASURED_BAND, "none measured"
    basis, spread = max(known.items(), key=lambda kv: kv[1])
    return max(BAND_SPREADS * spread, MIN_BAND), f"from {basis}"


def _groups(frame: pd.DataFrame, by: str, notes: list[str]) -> pd.Series:
    if by == "run":
        return frame["run_key"].str[:12]
    if by == "date":
        return frame["ingested_at"].dt.strftime("%Y-%m-%d")
    key = by.split(":", 1)[1]
    values = frame["labels"].map(lambda text: json.loads(text).get(key) if isinstance(text, str) else None)
    missing = frame.loc[values.isna(), "run_key"].nunique()
    if missing:
        notes.append(f"{missing} run(s) without a {key} label left out")
    return values


def check_by(by: str) -> str:
    if by in ("run", "date") or (by.startswith("label:") and len(by) > len("label:")):
        return by
    raise InputError(f"--by {by!r}: give run, date or label:KEY (e.g. label:commit)")


def _kernel_filter(pattern: str | None) -> Any:
    if pattern is None:
        return None
    from ncu_roof.schema import compile_regex

    return compile_regex(pattern, "--kernel", "option", Path("command line"))


def _rows(store: str | Path, column: str, device: str | None) -> pd.DataFrame:
    con = layout.connect(Path(store))
    try:
        where = "WHERE k.device = ?" if device else ""
        return con.execute(f'SELECT k.device, k.kernel, k.run_key, r.ingested_at, r.labels, k."{column}" AS value, '
                           f"k.launch_time_spread FROM kernels k JOIN runs r USING (run_key) {where} "
                           "ORDER BY r.ingested_at, k.run_key", [device] if device else []).df()
    except layout.duckdb().Error as exc:  # a part damaged where its size and hash do not show it
        raise layout.read_error(Path(store), exc) from None
    finally:
        con.close()


def trend(store: str | Path, metric: str = "time", by: str = "run", kernel: str | None = None,
          device: str | None = None) -> Trend:
    """Every kernel's series in ``store`` (kernels matching the RE2 regex ``kernel``, on ``device``)."""
    if metric not in METRICS:
        raise InputError(f"--metric {metric!r}: choose {', '.join(METRICS)}")
    by, pattern = check_by(by), _kernel_filter(kernel)
    frame = _rows(store, METRICS[metric][0], device)
    notes: list[str] = []
    if pattern is not None:
        frame = frame[frame["kernel"].map(lambda k: pattern.search(str(k)) is not None)]
    if frame.empty:
        notes.append("no kernel in the store matches" + (f" --kernel {kernel!r}" if kernel else "")
                     + (f" on --device {device!r}" if device else ""))
    frame = _follow_renames(frame.assign(group=_groups(frame, by, notes)).dropna(subset=["group"]), notes)
    series = [_series(dev, str(name), rows, metric) for (dev, name), rows
              in frame.groupby(["device", "kernel"], dropna=False, sort=True)]
    return Trend(str(store), metric, by, series, notes)


def _follow_renames(frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Kernels whose names differ only in the counter CUDA.jl appends on each rebuild
    (``julia_runsteps_6563``, ``julia_runsteps_6724``...) made one series, named by the stem, as
    ``compare`` pairs them (:func:`ncu_roof.read.kernel_names.stable_stem`); not where one run
    holds two of them (those are different kernels)."""
    from ncu_roof.read.kernel_names import stable_stem

    if frame.empty:
        return frame
    names = frame["kernel"].astype(str)
    stem = names.map(stable_stem)
    renamed = stem != names
    device = frame["device"].fillna("").astype(str)
    per_run = names[renamed].groupby([device[renamed], stem[renamed], frame.loc[renamed, "run_key"]]).nunique()
    clashing = {(d, s) for d, s, _ in per_run[per_run > 1].index}
    follow = renamed & ~pd.Series([(d, s) in clashing for d, s in zip(device, stem, strict=True)], index=frame.index)
    for (_, s), group in names[follow].groupby([device[follow], stem[follow]]):
        if group.nunique() > 1:
            notes.append(f"{s}: {group.nunique()} names one kernel takes as Julia rebuilds it "
                         f"({', '.join(sorted(group.unique()))}), followed as one series")
    return frame.assign(kernel=names.where(~follow, stem))


def _series(device: Any, kernel: str, rows: pd.DataFrame, metric: str) -> Series:
    points = []
    for group, g in rows.groupby("group", sort=False):  # in order of first ingest
        values = g["value"].dropna()
        points.append(Point(str(group), g["run_key"].nunique(), float(values.median()) if len(values) else math.nan,
                            str(g["ingested_at"].min())))
    known = [p.value for p in points if p.value == p.value]
    band, basis = _band(rows.dropna(subset=["value"]), [p for p in points if p.value == p.value], metric)
    moves = []
    previous: Point | None = None
    for p in points:
        if p.value != p.value:
            continue
        if previous is not None and previous.value > 0:
            ratio = p.value / previous.value
            moves.append(Move(previous.group, p.group, ratio, abs(math.log(ratio)) > math.log1p(band)))
        previous = p
    dev = None if device is None or (isinstance(device, float) and math.isnan(device)) else str(device)
    return Series(dev, str(kernel), points, float(np.median(known)) if known else math.nan, band, basis, moves)
