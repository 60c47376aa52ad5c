"""The JSON contract's launches, built from whole columns (``ncu_roof.kernel_json``), are what the
former launch-by-launch code gave: that code is kept here (``_old_*``, as it was at commit 0646c75)
and both are run on the synthetic fixtures, the trap zoo, real reports and CSV exports, and placed
tables whose cells are made awkward on purpose (NaN, infinities, -0.0, 2**53, text in number
columns, pandas' NA, non-ASCII names): the dicts (``to_dict``) and the JSON text, byte for byte."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncu_roof.diagnosis import SCHEMA, Diagnosis, _definitions, finding_records, region_record, to_dict, to_json
from ncu_roof.jsonable import clean, json_num, json_nums, json_text
from ncu_roof.kernel_json import kernel_records, kernels_json
from ncu_roof.model.units import UNITS, unit_column
from ncu_roof.render.renderers import render_json
from tests.conftest import cached_diagnosis
from tests.samples import REAL_SAMPLE, SYNTHETIC_FIXTURES

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "fixtures" / "synthetic"
LAYERNORM = SYNTHETIC / "synthetic_layernorm.toml"


# --- the former code -----------------------------------------------------------------------------
def _old_str(value: Any) -> str | None:
    return None if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else str(value)


def _old_share(row: Mapping[str, Any], column: str) -> float | None:
    t, lb = json_num(row.get("time_s")), json_num(row.get(column))
    return lb / t if t and lb is not None else None


def _old_kernel_record(row: Mapping[str, Any]) -> dict[str, Any]:
    alg = None
    if json_num(row.get("alg_flops")) is not None or json_num(row.get("alg_bytes")) is not None:
        alg = {"flops": json_num(row.get("alg_flops")), "bytes": json_num(row.get("alg_bytes")),
               "intensity": json_num(row.get("alg_intensity"))}
    missing = [m for m in str(row.get("missing") or "").split(",") if m]
    notes = row.get("notes")
    return {
        "id": json_num(row["id"]), "report": _old_str(row["report"]), "kernel": _old_str(row["kernel"]),
        "kernel_demangled": _old_str(row.get("kernel_demangled")), "device": _old_str(row.get("device")),
        "nvtx": _old_str(row.get("nvtx")), "time_s": json_num(row["time_s"]),
        "flops": {"fp64": json_num(row["flops_fp64"]), "fp32": json_num(row["flops_fp32"]),
                  "fp16": json_num(row["flops_fp16"]), "tensor": json_num(row["flops_tensor"]),
                  "total": json_num(row["flops"])},
        "bytes": {"dram": json_num(row["dram_bytes"]), "l2": json_num(row["l2_bytes"]),
                  "l1": json_num(row["l1_bytes"]), "shared": json_num(row["shared_bytes"])},
        "bytes_source": {"dram": _old_str(row.get("dram_bytes_src")), "l2": _old_str(row.get("l2_bytes_src")),
                         "l1": _old_str(row.get("l1_bytes_src")), "shared": _old_str(row.get("shared_bytes_src"))},
        "intensity": {level: json_num(row[f"intensity_{level}"]) for level in ("dram", "l2", "l1")},
        "roof": {
            "compute": _old_str(row.get("compute_roof")), "peak_flops_per_s": json_num(row["peak_flops_per_s"]),
            "peak_flops_source": _old_str(row.get("peak_flops_src")),
            "dram_bytes_per_s": json_num(row["dram_roof_bytes_per_s"]),
            "dram_source": _old_str(row.get("dram_roof_src")),
            "l2_bytes_per_s": json_num(row["l2_roof_bytes_per_s"]),
            "l1_bytes_per_s": json_num(row["l1_roof_bytes_per_s"]),
            "attainable_flops_per_s": json_num(row["attainable_flops_per_s"]),
            "achieved_flops_per_s": json_num(row["achieved_flops_per_s"]),
            "achieved_dram_bytes_per_s": json_num(row["achieved_dram_bytes_per_s"]),
            "pct_of_roof": json_num(row["pct_of_roof"]), "pct_basis": _old_str(row.get("pct_basis")),
            "above_practical_roof": bool(row.get("above_practical_roof", False)),
            "binding": _old_str(row.get("binding")),
            "source": _old_str(row.get("peak_flops_src")) or _old_str(row.get("dram_roof_src")),
        },
        "time_lower_bound_s": json_num(row["time_lower_bound_s"]), "headroom_s": json_num(row["headroom_s"]),
        "bound": _old_str(row["bound"]), "binding_unit": _old_str(row.get("binding_unit")),
        "binding_unit_share": json_num(row.get("binding_unit_share")),
        "units": {u.name: json_num(_old_share(row, unit_column(u.name))) for u in UNITS
                  if json_num(row.get(unit_column(u.name))) is not None},
        "algorithmic": alg, "missing": missing,
        "notes": notes.split("; ") if isinstance(notes, str) and notes else [],
    }


def _old_to_dict(d: Diagnosis) -> dict[str, Any]:
    return cast("dict[str, Any]", clean({
        "schema": SCHEMA, "inputs": d.inputs, "ceilings": d.ceilings, "runs": d.runs,
        "total_time_s": json_num(d.total_time_s),
        "kernels": [_old_kernel_record(cast("dict[str, Any]", row)) for row in d.placed.to_dict("records")],
        "regions": [region_record(row) for _, row in d.regions.iterrows()],
        "findings": finding_records(d),
        "skipped_rules": [{"rule": s.rule, "missing": list(s.missing), "enable": s.enable} for s in d.skipped],
        "ncu_rules": d.ncu_rules, "notes": d.notes, "definitions": _definitions(d.placed),
    }))


def _old_json(d: Diagnosis) -> str:
    return json.dumps(_old_to_dict(d), indent=2, allow_nan=False) + "\n"


def _same(d: Diagnosis) -> None:
    old = _old_to_dict(d)
    new = to_dict(d)
    assert json.dumps(new) == json.dumps(old)  # the same keys in the same order, the same values
    def types(doc: dict[str, Any]) -> list[type]:
        return [type(v) for r in doc["kernels"] for v in r.values()]

    assert types(new) == types(old)
    assert render_json(d) == _old_json(d)


# --- the inputs ---------------------------------------------------------------------------------
FIXTURES = [(name, LAYERNORM if "layernorm" in name else None) for name in SYNTHETIC_FIXTURES]
REAL = REAL_SAMPLE


@pytest.mark.parametrize(("name", "algorithmic"), FIXTURES)
def test_the_fixtures_json_is_the_former_codes(name: str, algorithmic: Path | None) -> None:
    _same(cached_diagnosis(SYNTHETIC / name, algorithmic=algorithmic))


def test_the_trap_zoos_json_is_the_former_codes(tmp_path: Path) -> None:
    from tests.test_golden_outputs import diagnose_zoo

    d = diagnose_zoo(tmp_path)
    assert any(r["algorithmic"] for r in to_dict(d)["kernels"])  # the zoo's regions give counts
    _same(d)


@pytest.mark.parametrize("name", REAL)
def test_real_inputs_json_is_the_former_codes(realdata: Path, name: str) -> None:
    _same(cached_diagnosis(realdata / name))


# --- awkward cells --------------------------------------------------------------------------------
_NUMBERS = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -3.0, 0.1, 1e-300, 2.0**53,
                            2.0**53 - 1, -(2.0**53), 1e300, 7.046400000000001e-05, 123456789.0, 0.5])
_TEXTS = st.sampled_from([None, pd.NA, math.nan, "", "dram", "a; b", "é \"q\" \\ \u2028", "x,,y", 3, 2.5, True])


def _placed() -> pd.DataFrame:
    return cached_diagnosis(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv", algorithmic=LAYERNORM).placed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_awkward_cells_give_the_former_records_and_text(data: st.DataObject) -> None:
    placed = _placed()
    n = len(placed)
    numeric = [c for c in placed.columns if placed[c].dtype.kind == "f"]
    texts = [c for c in placed.columns if placed[c].dtype == object or isinstance(placed[c].dtype, pd.StringDtype)]
    for column in data.draw(st.lists(st.sampled_from(numeric), max_size=12, unique=True)):
        placed[column] = np.array(data.draw(st.lists(_NUMBERS, min_size=n, max_size=n)), dtype=np.float64)
    for column in data.draw(st.lists(st.sampled_from(texts), max_size=8, unique=True)):
        placed[column] = pd.Series(data.draw(st.lists(_TEXTS, min_size=n, max_size=n)), dtype=object,
                                   index=placed.index)
    for column in data.draw(st.lists(st.sampled_from(["alg_flops", "alg_bytes", "unit_dram_s", "nvtx",
                                                      "binding_unit_share", "notes", "above_practical_roof"]),
                                     max_size=3, unique=True)):
        placed = placed.drop(columns=column)
    if data.draw(st.booleans()):
        placed["id"] = placed["id"].astype("int64") * 2**40
    if data.draw(st.booleans()):
        placed["notes"] = pd.Series(data.draw(st.lists(_TEXTS, min_size=n, max_size=n)), dtype=object,
                                    index=placed.index)
    try:
        old = [_old_kernel_record(cast("dict[str, Any]", r)) for r in placed.to_dict("records")]
    except TypeError as exc:  # pandas' NA has no truth value: the former code failed, and so does this one
        with pytest.raises(TypeError, match=str(exc)):
            kernel_records(placed)
        return
    new = kernel_records(placed)
    assert json.dumps(new) == json.dumps(old)
    assert kernels_json(placed, 1) == json.dumps({"kernels": old}, indent=2).split(": ", 1)[1][:-2]


def test_each_launch_gets_its_own_lists_and_dicts() -> None:
    records = kernel_records(_placed())
    records[0]["missing"].append("changed")
    records[0]["units"]["changed"] = 1
    assert "changed" not in records[1]["missing"] and "changed" not in records[1]["units"]


def test_no_launches_is_an_empty_list() -> None:
    placed = _placed().iloc[:0]
    assert kernel_records(placed) == [] and kernels_json(placed, 1) == "[]"


def test_a_marker_met_elsewhere_falls_back_to_the_whole_dump() -> None:
    d = cached_diagnosis(SYNTHETIC / "synthetic_raw_units.csv")
    d.notes.append("\x00ncu-roof: the kernels\x00")
    assert to_json(d) + "\n" == _old_json(d)


@given(st.lists(st.one_of(st.floats(), st.integers(-(2**60), 2**60).map(float), st.sampled_from(
    [0.0, -0.0, 2.0**53, 2.0**53 - 1, 2.0**53 + 2, -(2.0**53), math.inf, math.nan]))))
def test_json_nums_is_json_num_of_each(values: list[float]) -> None:
    array = np.array(values, dtype=np.float64)
    got, want = json_nums(array), [json_num(v) for v in values]
    assert [(type(g), g) for g in got] == [(type(w), w) for w in want]
    whole = np.nan_to_num(array, nan=0, posinf=0, neginf=0).clip(-(2**62), 2**62)
    with np.errstate(over="ignore"):
        singles = array.astype(np.float32)
    for other in (whole.astype(np.int64), np.abs(whole).astype(np.uint64), (np.abs(whole) % 256).astype(np.uint8),
                  whole != 0, singles):
        assert json_nums(other) == [json_num(v) for v in other.tolist()]


_TEXT = st.text(st.characters(exclude_categories=("Cs",)))  # every character UTF-8 writes (not by codec: no warning)
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT


@given(st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                    max_leaves=8), st.integers(0, 4))
def test_json_text_is_what_json_writes_at_that_depth(value: Any, level: int) -> None:
    nested: Any = value
    for _ in range(level):
        nested = [nested]
    want = json.dumps(nested, indent=2)
    got = json_text(value, level)
    assert want == "".join(["[\n" + "  " * (i + 1) for i in range(level)]) + got + "".join(
        "\n" + "  " * i + "]" for i in reversed(range(level)))
