"""The charts' Vega-Lite specs, built without Altair (``ncu_roof.render.charts.vegalite``), are the ones
Altair builds from the same calls (:func:`~ncu_roof.render.charts.vegalite.to_altair` makes them
again in Altair), text for text: small charts that use every construct the builder supports, then
every chart of the fixtures, the trap zoo, the two-device chart fixture and the real sample, at
both sizes."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import pytest

from ncu_roof.diagnosis import Diagnosis, diagnose_table
from ncu_roof.render.charts import vegalite as vl
from ncu_roof.render.charts.points import _json_default
from ncu_roof.render.charts.roofs import REPORT_LOOK, Look
from ncu_roof.render.charts.views import all_charts
from tests.conftest import cached_diagnosis
from tests.samples import REAL_SAMPLE, SYNTHETIC_FIXTURES

SYNTHETIC = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
LAYERNORM = SYNTHETIC / "synthetic_layernorm.toml"


def _altair_text(chart: vl.TopLevel, validate: bool = False) -> str:
    with alt.data_transformers.disable_max_rows():
        return _text(vl.to_altair(chart).to_dict(validate=validate))


def _text(spec: dict[str, Any]) -> str:
    return json.dumps(spec, default=_json_default)  # as the pages write it: numpy booleans too


def _same_as_altair(chart: vl.TopLevel, validate: bool = False) -> None:
    assert _text(chart.to_dict()) == _altair_text(chart, validate)


# --- every construct, small -----------------------------------------------------------------------
ROWS = [{"x": 1.0, "y": 2.0, "x2": 3.0, "y2": 4.0, "k": "a", "t": "text <b>", "n": 3, "v": None, "f": math.nan}]


def _unit() -> vl.TopLevel:
    axis = vl.Axis(values=[0.1, 1.0, 10.0], format="~g", grid=True, labelExpr="truncate(datum.label, 9)")
    return vl.Chart(vl.Data(values=ROWS)).mark_point(filled=True, opacity=0.5, strokeWidth=0.6, clip=True).encode(
        x=vl.X("x:Q", title="X", scale=vl.Scale(type="log", domain=(0.1, 10.0), nice=False), axis=axis),
        y=vl.Y("k:N", sort=["b", "a"], title=None, axis=vl.Axis(labelLimit=320)),
        x2="x2:Q", y2="y2:Q", detail="k:N", order="n:O", text="t:N", angle=vl.Angle("v:Q", scale=None),
        color=vl.Color("k:N", title="K", scale=vl.Scale(domain=["a"], range=["#123"]),
                       legend=vl.Legend(orient="right", symbolOpacity=1)),
        size=vl.Size("y:Q", scale=vl.Scale(domain=[0, 1], range=[40, 700]), legend=vl.Legend(values=[0.1, 1.0])),
        shape=vl.Shape("k:N", title="Level"), strokeDash=vl.StrokeDash("k:N", legend=None),
        tooltip=[vl.Tooltip("t:N"), "k:N", vl.Tooltip("x:Q", title="the x")],
    ).properties(width=300, height=200, title=vl.TitleParams("T", subtitle=["a", "b"], anchor="start"))


def _values_and_conditions() -> vl.TopLevel:
    base = vl.Chart(vl.Data(values=ROWS)).encode(x="x:Q", y="y:Q")
    return base.mark_line(point=True).encode(
        color=vl.condition("datum.k == 'a'", vl.value("#aaa"), vl.value("#444")), y="y2:Q",  # y again: replaced
        tooltip=vl.Tooltip("t:N", title="Tip")).encode(strokeDash=vl.value([4, 3]))


def _numbers() -> vl.TopLevel:
    rows = [{"i": np.int64(3), "f": np.float64(0.1), "g": np.float32(0.5), "b": np.bool_(True), "t": (1, 2),
             "a": np.array([1.5, 2]), "nested": {"l": [np.int32(1), None]}, "inf": math.inf}]
    return vl.Chart(vl.Data(values=rows)).mark_text(fontSize=11, align="left", dx=4).encode(text="t:N")


def _layers() -> vl.TopLevel:
    base = vl.Chart(vl.Data(values=ROWS)).encode(x="x:Q", y="y:Q")
    other = vl.Chart(vl.Data(values=[{"x": 5.0}])).mark_rule(color="#2ca02c", strokeDash=[4, 3]).encode(x="x:Q")
    shared = base.mark_bar() + base.mark_text(align="left")  # the data moves to the layer
    return (shared + other + base.mark_point()).properties(width=100, height=60)


def _layers_with_sizes() -> vl.TopLevel:
    base = vl.Chart(vl.Data(values=ROWS)).encode(x="x:Q")
    return vl.layer(base.mark_bar().properties(width=50), vl.Chart(vl.Data(values=ROWS)).mark_rule().encode(
        x="x2:Q").properties(width=50, height=20))


def _concatenated() -> vl.TopLevel:
    data = vl.Data(values=ROWS)
    panels = [vl.layer(vl.Chart(vl.Data(values=ROWS)).mark_point().encode(x="x:Q"),
                       vl.Chart(data).mark_rule().encode(y="y:Q")).properties(title=f"panel {i}") for i in range(2)]
    side = vl.hconcat(vl.Chart(data).mark_bar().encode(x="x:Q"), vl.Chart(data).mark_line().encode(x="y:Q"))
    chart = vl.vconcat(*panels, side.properties(title=vl.TitleParams("side", subtitle="one")))
    return chart.resolve_scale(color="independent", x="independent").resolve_scale(size="independent")


def _configured() -> vl.TopLevel:
    chart = vl.Chart(vl.Data(values=ROWS)).mark_circle().encode(x="x:Q", color=vl.value("#1f77b4"))
    return chart.configure_axis(labelFontSize=11, titleFontSize=12, gridColor="#e6e6e6").configure_legend(
        labelFontSize=11, symbolStrokeWidth=1).configure_title(fontSize=14, subtitleColor="#444").configure_view(
        stroke="#bbb").configure_axis(labelFontSize=13)


@pytest.mark.parametrize("make", [_unit, _values_and_conditions, _numbers, _layers, _layers_with_sizes,
                                  _concatenated, _configured], ids=lambda f: f.__name__.strip("_"))
def test_each_construct_is_written_as_altair_writes_it(make: Callable[[], vl.TopLevel]) -> None:
    _same_as_altair(make())


def test_a_chart_built_once_can_be_written_again_and_extended() -> None:
    chart = _layers()
    first = _text(chart.to_dict())
    assert _text(chart.to_dict()) == first
    _same_as_altair(chart + vl.Chart(vl.Data(values=[{"x": 1.0}])).mark_point().encode(x="x:Q"))
    assert _text(chart.to_dict()) == first  # what was built from it left it as it was


def test_what_the_builder_does_not_do_raises() -> None:
    with pytest.raises(ValueError, match="without data"):
        vl.Chart().mark_point().encode(x="x:Q").to_dict()
    for shorthand in ("sum(x):Q", "x", "x:Z"):
        with pytest.raises(ValueError, match="shorthand"):
            vl.Chart(vl.Data(values=ROWS)).mark_point().encode(x=shorthand).to_dict()
    with pytest.raises(ValueError, match="channel 'facet'"):
        vl.Chart(vl.Data(values=ROWS)).encode(facet="k:N")
    with pytest.raises(TypeError, match="Timestamp"):
        vl.Chart(vl.Data(values=[{"t": pd.Timestamp("2026-01-01")}])).mark_point().to_dict()
    with pytest.raises(ValueError, match="layered"):
        base = vl.Chart(vl.Data(values=ROWS)).mark_point()
        vl.vconcat(base, base) + base
    with pytest.raises(ValueError, match="inconsistent"):
        base = vl.Chart(vl.Data(values=ROWS))
        vl.layer(base.mark_point().properties(width=1), base.mark_bar().properties(width=2))


def test_altair_objects_inside_pass_through_to_altair() -> None:
    """The compare chart's labels: built here over Altair's scales, made again in Altair."""
    scale = alt.Scale(type="log", domain=[1, 10])
    text = vl.Chart(vl.Data(values=ROWS)).mark_text().encode(x=vl.X("x:Q", scale=scale), text="t:N")
    made = vl.to_altair([text])[0]
    assert isinstance(made, alt.Chart) and made.encoding.x["scale"] is scale


# --- every chart of the reports ---------------------------------------------------------------------
def _all_charts_same_as_altair(d: Diagnosis) -> None:
    for look in (REPORT_LOOK, Look()):
        charts = all_charts(d, look)
        assert charts
        for _, chart in charts:
            _same_as_altair(chart, validate=True)  # and valid against Vega-Lite's schema


@pytest.mark.parametrize("name", SYNTHETIC_FIXTURES)
def test_the_fixtures_charts_are_altairs(name: str) -> None:
    _all_charts_same_as_altair(cached_diagnosis(SYNTHETIC / name, algorithmic=LAYERNORM if "layernorm" in name
                                                else None))


def test_the_trap_zoos_charts_are_altairs(tmp_path: Path) -> None:
    from tests.test_golden_outputs import diagnose_zoo

    _all_charts_same_as_altair(diagnose_zoo(tmp_path))


def test_the_chart_fixtures_charts_are_altairs(tmp_path: Path) -> None:
    """Two devices (a column of panels), a size sweep, an algorithmic region, a name with markup."""
    from tests.render.test_charts import synthetic_table

    toml = tmp_path / "alg.toml"
    toml.write_text('[[region]]\nname = "copy"\nkernels = "^stream_copy"\nflops = 1e7\nbytes = 4e8\n')
    d = diagnose_table(synthetic_table(), algorithmic=toml)
    assert [t for t, _ in all_charts(d)] == ["Roofline", "Time share", "Extra bytes", "Size sweep"]
    _all_charts_same_as_altair(d)


@pytest.mark.parametrize("name", REAL_SAMPLE)
def test_real_inputs_charts_are_altairs(realdata: Path, name: str) -> None:
    _all_charts_same_as_altair(cached_diagnosis(realdata / name))
