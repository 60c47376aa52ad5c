"""The charts' inputs, computed column-wise for speed, are what the former row-by-row code gave
(kept here as it was at commit 06f6c6d): the finite checks, the roofs' medians and the kernels'
points, on awkward values, the fixtures, the trap zoo and the real sample."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncu_roof.diagnosis import Diagnosis
from ncu_roof.model.kernels import intensities
from ncu_roof.render.charts.points import LEVELS, _finite, finite_mask, kernel_points, truncate_name
from ncu_roof.render.charts.roofs import ROOF_SPREAD, Roof, _median_roofs, _merged_name, _name_pattern
from tests.conftest import cached_diagnosis
from tests.samples import REAL_SAMPLE, SYNTHETIC_FIXTURES

SYNTHETIC = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
LAYERNORM = SYNTHETIC / "synthetic_layernorm.toml"


# --- finite checks ---------------------------------------------------------------------------------
_CELLS = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -3.0, 1e-300, 2.0**53, 1e300, 5, 0, -2,
                          True, False, None, pd.NA, "1e3", " 12 ", "inf", "x", ""])
_DTYPES = ["float64", "float32", "int64", "Int64", "Float64", "boolean", "bool", "uint8", "object"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 1e300 as float32
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells=st.lists(_CELLS, max_size=8), dtype=st.sampled_from(_DTYPES))
def test_finite_mask_is_finite_of_each_value(cells: list[Any], dtype: str) -> None:
    try:
        values = pd.Series(cells, dtype=dtype, index=[f"r{i}" for i in range(len(cells))])
    except (TypeError, ValueError, OverflowError):
        return  # cells this dtype cannot hold
    mask = finite_mask(values)
    assert mask.dtype == bool and list(mask.index) == list(values.index)
    assert mask.tolist() == [_finite(v) for v in values]


def _former_median_roofs(kind: str, values: pd.Series, names: pd.Series, sources: pd.Series) -> list[Roof]:
    """``roofs._median_roofs`` as it was before it was vectorised (commit 06f6c6d)."""
    frame = pd.DataFrame({"value": pd.to_numeric(values, errors="coerce"), "name": names.astype("object"),
                          "source": sources.astype("object")})
    frame = frame[frame["value"].map(_finite)]
    frame["name"] = frame["name"].where(frame["name"].notna(), "?").astype(str)
    frame["source"] = frame["source"].where(frame["source"].notna(), "?").astype(str)
    frame["pattern"] = frame["name"].map(_name_pattern)
    roofs: list[tuple[int, Roof]] = []
    for (_, source), group in frame.groupby(["pattern", "source"], sort=False):
        group = group.sort_values("value", kind="stable")
        start, ids = group["value"].iloc[0], []
        for v in group["value"]:
            if v > start * (1 + ROOF_SPREAD):
                start = v
            ids.append(start)
        cluster = pd.Series(ids, index=group.index)
        for _, part in group.groupby(cluster, sort=False):
            vals = part["value"].to_numpy(dtype=float)
            roofs.append((len(part), Roof(kind, _merged_name(list(part["name"])), float(np.median(vals)), str(source),
                                          float(vals.min()), float(vals.max()), len(part))))
    return [r for _, r in sorted(roofs, key=lambda t: -t[0])]


_ROOF_VALUES = st.sampled_from([1e12, 1.02e12, 1.04e12, 1.05e12, 1.06e12, 1.2e12, 3e13, 3.1e13, 0.0, -1.0, math.nan,
                                math.inf, None, "2e12", "x"])
_ROOF_NAMES = st.sampled_from(["fp32 mixed (79% of FMA rate)", "fp32 mixed (80% of FMA rate)", "fp64 FMA", None,
                               pd.NA, "DRAM"])
_SOURCES = st.sampled_from(["report", "device table", None, "report x 88% (practical, not measured)"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(_ROOF_VALUES, _ROOF_NAMES, _SOURCES), min_size=1, max_size=12))  # no rows: it raised
def test_roof_medians_are_the_former_codes(rows: list[tuple[Any, Any, Any]]) -> None:
    index = pd.Index([7 * i for i in range(len(rows))])
    values, names, sources = (pd.Series([r[i] for r in rows], index=index, dtype="object") for i in range(3))
    numbers = pd.to_numeric(values, errors="coerce")
    for given_values in (values, numbers):
        assert _median_roofs("compute", given_values, names, sources) == \
            _former_median_roofs("compute", given_values, names, sources)


@pytest.mark.parametrize("name", ["NCAR__GPU_workshop/MW_Baseline.ncu-rep", "CodeGandee__accelsim-test/raw.csv"])
def test_real_roofs_are_the_former_codes(realdata: Path, name: str) -> None:
    placed = cached_diagnosis(realdata / name).placed
    columns = [c for c in placed if re.fullmatch(r"(peak_\w+_flops_per_s|\w+_roof_bytes_per_s)", c)]
    assert columns
    for column in columns:
        names = placed.get("compute_roof", pd.Series("roof", index=placed.index))
        sources = placed.get(f"{column}_src", pd.Series("report", index=placed.index))
        assert _median_roofs("memory", placed[column], names, sources) == \
            _former_median_roofs("memory", placed[column], names, sources)


# --- kernel points ------------------------------------------------------------------------------------
def _former_first_by_time(frame: pd.DataFrame, keys: list[str], column: str) -> pd.Series:
    ok = frame[frame[column].notna()]
    if ok.empty:
        return pd.Series(dtype="object")
    time = ok["time_s"].fillna(0.0).clip(lower=0.0) + 1e-30
    totals = time.groupby([ok[k] for k in keys] + [ok[column]], sort=False).sum()
    best = totals.groupby(level=list(range(len(keys))), sort=False).idxmax()
    return best.map(lambda key: key[-1])


def _former_kernel_points(placed: pd.DataFrame, share_per_device: bool = False) -> pd.DataFrame:
    """``points.kernel_points`` as it was before it grouped by group number (commit 06f6c6d)."""
    if placed.empty:
        return pd.DataFrame()
    t = placed.assign(device=placed["device"].fillna("unknown device").astype(str),
                      kernel=placed["kernel"].astype(str))
    keys = ["device", "kernel"]
    g = t.groupby(keys, sort=False)
    cols = ["time_s", "flops"] + [f"{lv}_bytes" for lv, _ in LEVELS] + [
        c for c in ("alg_flops", "alg_bytes") if c in t]
    sums = g[cols].sum(min_count=1).where(g[cols].count().eq(g.size(), axis=0))
    out = sums.copy()
    out["launches"] = g.size()
    w = t["time_s"].where(t["pct_of_roof"].notna() & (t["time_s"] > 0))
    out["pct_of_roof"] = (t["pct_of_roof"] * w).groupby([t[k] for k in keys], sort=False).sum() / \
        w.groupby([t[k] for k in keys], sort=False).sum().replace(0.0, np.nan)
    out["bound"] = _former_first_by_time(t, keys, "bound").reindex(out.index).fillna("unknown")
    out["compute_roof"] = _former_first_by_time(t, keys, "compute_roof").reindex(out.index)
    out["peak"] = _former_first_by_time(t, keys, "peak_flops_per_s").reindex(out.index).astype("float64")
    out["dram_roof"] = _former_first_by_time(t, keys, "dram_roof_bytes_per_s").reindex(out.index).astype("float64")
    out["full_name"] = g["kernel_demangled"].first().reindex(out.index)
    out = out.reset_index()
    out["full_name"] = out["full_name"].where(out["full_name"].notna(), out["kernel"]).astype(str)
    total = (out.groupby("device")["time_s"].transform("sum") if share_per_device
             else pd.Series(out["time_s"].sum(), index=out.index))
    out["share"] = out["time_s"] / total.where(total > 0)
    out["achieved"] = out["flops"] / out["time_s"].where(out["time_s"] > 0)
    ratios = intensities(t, keys)
    for level, _ in LEVELS:
        column = f"intensity_{level}"
        out[column] = (ratios[column].reindex(pd.MultiIndex.from_frame(out[keys])).to_numpy()
                       if column in ratios else np.nan)
    for col in ("alg_flops", "alg_bytes"):
        if col not in out:
            out[col] = np.nan
    out["alg_intensity"] = out["alg_flops"] / out["alg_bytes"].where(out["alg_bytes"] > 0)
    out["short"] = out["kernel"].map(truncate_name)
    return out.sort_values("time_s", ascending=False, na_position="last", kind="stable").reset_index(drop=True)


def _same_points(placed: pd.DataFrame) -> None:
    for per_device in (True, False):
        pd.testing.assert_frame_equal(kernel_points(placed, per_device), _former_kernel_points(placed, per_device),
                                      check_exact=True)


@pytest.mark.parametrize("name", SYNTHETIC_FIXTURES)
def test_the_fixtures_kernel_points_are_the_former_codes(name: str) -> None:
    _same_points(cached_diagnosis(SYNTHETIC / name, algorithmic=LAYERNORM if "layernorm" in name else None).placed)


def test_the_trap_zoos_kernel_points_are_the_former_codes(tmp_path: Path) -> None:
    from tests.test_golden_outputs import diagnose_zoo

    d: Diagnosis = diagnose_zoo(tmp_path)
    _same_points(d.placed)
    mixed = d.placed.copy()  # missing devices and kernels, a repeated index, launches out of order
    mixed.loc[mixed.index[::3], "device"] = None
    mixed.loc[mixed.index[1::4], "kernel"] = np.nan
    _same_points(mixed.iloc[::-1].set_axis([i // 2 for i in range(len(mixed))]))


@pytest.mark.parametrize("name", REAL_SAMPLE)
def test_real_inputs_kernel_points_are_the_former_codes(realdata: Path, name: str) -> None:
    _same_points(cached_diagnosis(realdata / name).placed)
