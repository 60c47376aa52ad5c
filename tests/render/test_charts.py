"""Charts and the HTML report: golden Vega-Lite specs, roofs = engine numbers, escaping, a real browser.

The fixture is a synthetic tidy table (two made-up devices, known roofs, a kernel named with
markup, a size sweep, an algorithmic region) run through the real engine (``diagnose_table``).
Golden specs live in tests/golden/*.vl.json; ``pytest --update-golden`` rewrites them.
"""

from __future__ import annotations

import copy
import json
import math
import re
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from browser import CHROMIUM
from browser import dump as _chromium_dump
from conftest import REALDATA, cached_diagnose_paths

from ncu_roof.diagnosis import Diagnosis, diagnose_table
from ncu_roof.errors import InputError
from ncu_roof.render.charts import labels as charts_labels
from ncu_roof.render.charts import points as charts_points
from ncu_roof.render.charts import roofline as charts
from ncu_roof.render.charts import roofs as charts_roofs
from ncu_roof.render.charts import save, views

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
MARKUP = '<script>alert(1)</script>&"x"'
TIDY_COLUMNS = (
    "report id kernel kernel_demangled device cc process stream grid_dim block_dim nvtx time_s time_s_src "
    "sm_clock_hz smsp_clock_hz dram_clock_hz lts_clock_hz l1tex_clock_hz sm_cycles smsp_cycles dram_bytes "
    "dram_bytes_src dram_read_bytes l2_bytes l2_bytes_src l1_bytes l1_bytes_src shared_bytes shared_bytes_src "
    "inst_dfma inst_dadd inst_dmul inst_ffma inst_fadd inst_fmul inst_hfma inst_hadd inst_hmul "
    "peak_fp64_flops_per_s peak_fp64_flops_per_s_src peak_fp32_flops_per_s peak_fp32_flops_per_s_src "
    "peak_fp16_flops_per_s peak_fp16_flops_per_s_src peak_dram_bytes_per_s peak_dram_bytes_per_s_src "
    "peak_l2_bytes_per_s peak_l2_bytes_per_s_src peak_l1_bytes_per_s peak_l1_bytes_per_s_src grid_size "
    "block_size waves registers_per_thread shared_mem_per_block occupancy_limit_blocks "
    "occupancy_limit_registers occupancy_limit_shared_mem occupancy_limit_warps sm_count sm_clock_spec_hz "
    "achieved_occupancy_pct theoretical_occupancy_pct threads_per_inst sm_throughput_pct "
    "memory_throughput_pct dram_throughput_pct global_load_sectors global_load_requests global_store_sectors "
    "global_store_requests shared_bank_conflicts shared_wavefronts shared_requests global_load_inst "
    "flops_fp64 flops_fp64_src flops_fp32 flops_fp32_src flops_fp16 flops_fp16_src tensor_precision "
    "flops_tensor flops_tensor_src flops peak_fp32_nofma_flops_per_s missing"
).split()
DEVICE_A = {"device": "Synthetic GPU A", "peak_fp32_flops_per_s": 1e13, "peak_fp64_flops_per_s": 5e11,
            "peak_dram_bytes_per_s": 1e12, "peak_l2_bytes_per_s": 4e12, "peak_l1_bytes_per_s": 1.6e13}
DEVICE_B = {"device": "Synthetic GPU B", "peak_fp32_flops_per_s": 4e13, "peak_fp64_flops_per_s": 2e13,
            "peak_dram_bytes_per_s": 3e12}


def _launch(i: int, kernel: str, dev: dict[str, Any], time_s: float, dram: float, *, ffma: float = 0.0,
            fadd: float = 0.0, dfma: float = 0.0, grid: float = 1024.0) -> dict[str, Any]:
    """One tidy launch with FLOPs from instruction counts (FMA = 2) and L2/L1 bytes above DRAM."""
    row: dict[str, Any] = dict.fromkeys(TIDY_COLUMNS, np.nan)
    row.update(dev)
    row.update(report="synthetic.ncu-rep", id=i, kernel=kernel, kernel_demangled=kernel, cc="9.0", nvtx=None,
               time_s=time_s, dram_bytes=dram, l2_bytes=dram * 1.5, l1_bytes=dram * 3.0,
               inst_ffma=ffma, inst_fadd=fadd, inst_fmul=0.0, inst_dfma=dfma, inst_dadd=0.0, inst_dmul=0.0,
               flops_fp32=2 * ffma + fadd, flops_fp64=2 * dfma, flops=2 * ffma + fadd + 2 * dfma,
               grid_size=grid, block_size=256.0, missing="", process=None, tensor_precision=None)
    for col in ("peak_fp32_flops_per_s_src", "peak_fp64_flops_per_s_src", "peak_dram_bytes_per_s_src"):
        row[col] = "synthetic"
    return row


def synthetic_table() -> pd.DataFrame:
    rows = [
        _launch(0, "void gemm_kernel<float, 128>(float const*, float*, int)", DEVICE_A, 1e-3, 1e8, ffma=4e9),
        _launch(1, "stream_copy(float*, float const*, unsigned long)", DEVICE_A, 1e-3, 8e8, fadd=1e7),
        _launch(2, MARKUP, DEVICE_A, 5e-6, 1e6, ffma=5e4, grid=4.0),
        _launch(7, "void reduce_kernel<double>(double const*, double*)", DEVICE_B, 2e-3, 4e9, dfma=2e9),
    ]
    for i, (grid, time_s) in enumerate(((64, 5e-6), (256, 6e-6), (1024, 12e-6), (4096, 40e-6)), start=3):
        rows.append(_launch(i, "axpy(float, float const*, float*, int)", DEVICE_A, time_s, grid * 256 * 12.0,
                            ffma=grid * 256, grid=float(grid)))
    return pd.DataFrame(rows, columns=list(TIDY_COLUMNS))


@pytest.fixture(scope="module")
def diagnosis(tmp_path_factory: pytest.TempPathFactory) -> Diagnosis:
    toml = tmp_path_factory.mktemp("alg") / "alg.toml"
    toml.write_text('[[region]]\nname = "copy"\nkernels = "^stream_copy"\nflops = 1e7\nbytes = 4e8\n')
    return diagnose_table(synthetic_table(), algorithmic=toml)


@pytest.fixture(scope="module")
def _roofline_spec(diagnosis: Diagnosis) -> dict[str, Any]:
    return save.chart_spec(charts.roofline_chart(diagnosis), validate=True)  # checked against Vega-Lite's schema


@pytest.fixture()
def roofline_spec(_roofline_spec: dict[str, Any]) -> dict[str, Any]:
    """The fixture's roofline spec, built once per module (Altair takes seconds), a copy per test."""
    return copy.deepcopy(_roofline_spec)


def _rounded(value: Any) -> Any:
    """Floats to 9 significant digits, so goldens survive last-ulp differences of libm."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items() if k != "$schema"}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.9g}")
    return value


@pytest.mark.parametrize("name", ["roofline", "time_share", "extra_bytes", "sweep"])
def test_golden_specs(diagnosis: Diagnosis, name: str, request: pytest.FixtureRequest) -> None:
    if name == "roofline":
        spec = _rounded(request.getfixturevalue("roofline_spec"))
    else:
        chart = getattr(views, f"{name}_chart")(diagnosis)
        assert chart is not None, f"{name} chart is empty for the fixture"
        spec = _rounded(save.chart_spec(chart, validate=True))  # checked against Vega-Lite's schema
        assert _rounded(save.chart_spec(chart)) == spec  # as the outputs write it, unchecked: the same
    path = GOLDEN / f"{name}.vl.json"
    if request.config.getoption("--update-golden"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert path.is_file(), f"no golden {path.name}: run pytest --update-golden"
    assert spec == json.loads(path.read_text(encoding="utf-8")), f"{name} spec changed: review, then --update-golden"


def _data_rows(spec: Any) -> list[dict[str, Any]]:
    """Every inline data row anywhere in a spec."""
    rows: list[dict[str, Any]] = []
    if isinstance(spec, dict):
        values = spec.get("data", {}).get("values") if isinstance(spec.get("data"), dict) else None
        rows += values or []
        for v in spec.values():
            rows += _data_rows(v)
    elif isinstance(spec, list):
        for v in spec:
            rows += _data_rows(v)
    return rows


def test_roofs_are_the_engines_numbers(diagnosis: Diagnosis, roofline_spec: dict[str, Any]) -> None:
    rows = _data_rows(roofline_spec)
    placed = diagnosis.placed
    compute = {r["value"] for r in rows if r.get("kind") == "compute"}
    memory = {r["value"] for r in rows if r.get("kind") == "memory"}
    assert compute == set(placed["peak_flops_per_s"].dropna())  # exactly the roofs the launches are held to
    assert set(placed["dram_roof_bytes_per_s"].dropna()) <= memory
    assert {4e12, 1.6e13} <= memory  # L2 and L1 of device A
    assert 5e12 in compute  # fp32 no-FMA, for stream_copy (adds only)
    labels = " ".join(str(r.get("roof")) for r in rows)
    assert "DRAM 880 GB/s (report ×88%, practical)" in labels and "fp32 FMA 10 TFLOP/s (report)" in labels
    assert "fp32 no-FMA 5 TFLOP/s (report)" in labels


REAL = REALDATA  # ../shared/realdata (NCU_ROOF_SHARED)


ESMM = "AveryClapp__ESMM-Research/profile_output.a62323b2dd.ncu-rep"  # 4 launches, 4 SM clocks
V100 = "NCAR__GPU_workshop/MW_Baseline.ncu-rep"  # fp64 mixed at 79% and 80% of FMA rate


@pytest.mark.parametrize("path", [V100, "tanvisharma__nsight-compute-files/3136_64_64_rtx2080ti_sgemm.ncu-rep", ESMM])
def test_real_roofs_equal_the_engine(path: str) -> None:
    """One compute roof per precision and kind, at the median of the engine's per-launch roofs
    (launches differ in clock, or in FMA share by a point): the V100's two fp64 mixed roofs 1%
    apart and ESMM's four per-clock fp32 roofs are each one line, their spread in the tooltip."""
    if not (REAL / path).is_file():
        pytest.skip("real reports not available")
    d = cached_diagnose_paths(REAL / path)  # the chart is tested here, not reading
    rows = _data_rows(save.chart_spec(charts.roofline_chart(d)))
    drawn = {r["value"]: r for r in rows if r.get("kind") == "compute"}
    placed = d.placed[d.placed["peak_flops_per_s"].notna()]
    kinds = placed["compute_roof"].map(charts_roofs._name_pattern)
    assert len(drawn) == kinds.nunique()  # one line per precision and kind
    for kind, launches in placed.groupby(kinds):
        median = float(np.median(launches["peak_flops_per_s"]))
        assert median in drawn, (kind, median, sorted(drawn))
        assert charts.fmt_si(median, "FLOP/s") in drawn[median]["roof"] and " / " not in drawn[median]["roof"]
        if launches["peak_flops_per_s"].nunique() > 1:
            low, high = (charts.fmt_si(v, "FLOP/s") for v in (launches["peak_flops_per_s"].min(),
                                                             launches["peak_flops_per_s"].max()))
            assert f"median of {len(launches)} launches: {low} to {high}" in drawn[median]["tip"]
    dram = {r["value"] for r in rows if r.get("kind") == "memory" and str(r["roof"]).startswith("DRAM")}
    assert dram == {float(np.median(placed["dram_roof_bytes_per_s"]))}
    context = [r for r in rows if r.get("kind") == "context"]
    assert all("context" in r["roof"] for r in context)


def test_clock_spread_is_one_roof_at_the_median() -> None:
    """Four launches of one kernel at four clocks (roofs 0-1.2% apart): one fp32 FMA roof, the
    median of the four, labelled with one value, which the model gave every launch (one number in
    every output); a roof 2x away (no-FMA) stays a roof of its own."""
    table = synthetic_table()
    gemm = table.iloc[[0] * 4].copy()
    gemm["id"] = [10, 11, 12, 13]
    gemm["peak_fp32_flops_per_s"] = [1e13, 1.004e13, 1.008e13, 1.012e13]
    d = diagnose_table(pd.concat([table.iloc[[1]], gemm], ignore_index=True))
    compute = charts_roofs.compute_roofs(d.placed)
    fma = [r for r in compute if r.name == "fp32 FMA"]
    assert len(fma) == 1 and fma[0].value == pytest.approx(np.median(
        d.placed.loc[d.placed["compute_roof"] == "fp32 FMA", "peak_flops_per_s"]))
    # the median of the five launches of the device (the other kernel's at 1e13 too): 1.004e13
    assert fma[0].label == "fp32 FMA 10 TFLOP/s (report)" and fma[0].value == 1.004e13
    assert set(d.placed.loc[d.placed["compute_roof"] == "fp32 FMA", "peak_flops_per_s"]) == {1.004e13}
    assert any(r.name == "fp32 no-FMA" for r in compute)
    assert charts_roofs._merged_name(["fp64 mixed (79% of FMA rate)", "fp64 mixed (80% of FMA rate)"]) == \
        "fp64 mixed (79–80% of FMA rate)"


# --- labels: on no point and no other label, and every drawn kernel named -------------------------
def _panels(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return spec.get("vconcat") or [spec]


def _panel_frame(panel: dict[str, Any]) -> charts_roofs.Frame:
    """The screen geometry of a layered panel, from its scales' domains and its size."""
    enc = next(lay["encoding"] for lay in panel["layer"] if "domain" in lay.get("encoding", {}).get("x", {})
               .get("scale", {}))
    (x_lo, x_hi), (y_lo, y_hi) = enc["x"]["scale"]["domain"], enc["y"]["scale"]["domain"]
    return charts_roofs.Frame(x_lo, x_hi, y_lo, y_hi, panel["width"], panel["height"])


def _text_boxes(panel: dict[str, Any], frame: charts_roofs.Frame) -> list[tuple[str, list[charts_labels.Box]]]:
    """Where each drawn label's text lies on screen (as Vega sets it: the first line at the anchor
    and baseline, further lines below it), a rotated one as a chain of boxes."""
    out = []
    for lay in panel["layer"]:
        mark = lay["mark"]
        if (not isinstance(mark, dict) or mark["type"] != "text" or "stroke" in mark
                or "values" not in lay.get("data", {})):
            continue  # (the white halo under each label is the same text again; arrow texts ride the arrows)
        row, size = lay["data"]["values"][0], mark.get("fontSize", 11)
        lines, bold = str(row["text"]).split("\n"), mark.get("fontWeight") == "bold"
        angle = mark.get("angle", 0) % 360
        if angle:
            model = {"text": row["text"], "x": row["x"], "y": row["y"], "align": mark["align"], "angle": angle,
                     "baseline": mark["baseline"], "dx": mark["dx"], "dy": mark["dy"], "bold": bold, "size": size}
            out.append((row["text"], charts_labels._boxes(frame, model)))
            continue
        px, py = frame.px(row["x"], row["y"])
        ax, ay = px + mark.get("dx", 0), py + mark.get("dy", 0)
        w = max(len(t) for t in lines) * charts_labels.CHAR_W * size / 11 * (1.1 if bold else 1.0)
        top = {"bottom": ay - size, "top": ay, "middle": ay - size / 2}[mark["baseline"]]
        left = {"left": ax, "right": ax - w, "center": ax - w / 2}[mark["align"]]
        out.append((row["text"], [(left, top, left + w, top + size + (len(lines) - 1) * mark.get("lineHeight", size))]))
    return out


def _point_boxes(panel: dict[str, Any], frame: charts_roofs.Frame) -> list[charts_labels.Box]:
    """Every drawn point (kernels sized by their share of time, ridges, ideal points, arrow heads)."""
    out = []
    for lay in panel["layer"]:
        mark = lay["mark"]
        if not isinstance(mark, dict) or mark["type"] != "point" or "data" not in lay:
            continue
        fx, fy = lay["encoding"]["x"]["field"], lay["encoding"]["y"]["field"]
        for r in lay["data"]["values"]:  # sized by share (as the size scale does) or by the mark
            size = 40 + 660 * r["share"] if "share" in r else mark["size"]
            out.append(charts_labels._point_box(frame, r[fx], r[fy], size))
    return out


def _overlaps(a: list[charts_labels.Box], b: list[charts_labels.Box]) -> bool:
    return any(charts_labels._overlap(x, y) > 1.0 for x in a for y in b)


def _label_clashes(spec: dict[str, Any]) -> list[str]:
    """Labels that cover a point or another label, in words."""
    clashes = []
    for panel in _panels(spec):
        frame = _panel_frame(panel)
        texts, points = _text_boxes(panel, frame), _point_boxes(panel, frame)
        clashes += [f"{t!r} covers a point" for t, boxes in texts if _overlaps(boxes, points)]
        clashes += [f"{a!r} covers {b!r}" for i, (a, ba) in enumerate(texts) for b, bb in texts[i + 1:]
                    if _overlaps(ba, bb)]
    return clashes


def _unnamed_kernels(spec: dict[str, Any]) -> list[str]:
    """Drawn kernels whose name is in no label on the plot and not in the panel's key (subtitle)."""
    missing = []
    for panel in _panels(spec):
        frame = _panel_frame(panel)
        words = " ".join(t for t, _ in _text_boxes(panel, frame)) + " ".join(panel["title"]["subtitle"])
        kernels = {str(r["key"]).split("|", 1)[1] for r in _data_rows(panel) if "key" in r}
        missing += [k for k in kernels if k[:20] not in words]
    return missing


def _real_or_skip(path: str) -> Diagnosis:
    if not (REAL / path).is_file():
        pytest.skip("real reports not available")
    return cached_diagnose_paths(REAL / path)  # the charts are tested here, not reading


@pytest.mark.parametrize("which", ["synthetic", ESMM, V100])
def test_labels_cover_nothing_and_name_every_kernel(diagnosis: Diagnosis, which: str,
                                                   request: pytest.FixtureRequest) -> None:
    """ESMM's four kernels (three rows 6 px apart) and the V100's roofs 1% apart used to get labels on
    points and on each other, and warptiling no name at all."""
    d = diagnosis if which == "synthetic" else _real_or_skip(which)
    for look in (charts_roofs.Look(), charts_roofs.REPORT_LOOK):
        if which == "synthetic" and look == charts_roofs.Look():  # the module's spec, built once
            spec = request.getfixturevalue("roofline_spec")
        else:
            spec = save.chart_spec(charts.roofline_chart(d, look))
        assert _label_clashes(spec) == []
        assert _unnamed_kernels(spec) == []


def test_hierarchical_charts_of_every_real_report_cover_nothing(realdata: Path) -> None:
    """Every real report's chart with points at two memory levels or more (L1, L2, DRAM for each
    kernel), in both looks: no label on a point or on another label, every kernel named."""
    drawn = 0
    for path in sorted(realdata.glob("*/*.ncu-rep")):
        d = cached_diagnose_paths(path)
        for look in (charts_roofs.Look(), charts_roofs.REPORT_LOOK):
            spec = save.chart_spec(charts.roofline_chart(d, look))
            levels = {r.get("level") for panel in _panels(spec) for r in _data_rows(panel) if "key" in r}
            if len(levels - {None}) < 2:
                continue
            assert _label_clashes(spec) == [], path
            assert _unnamed_kernels(spec) == [], path
            drawn += 1
    assert drawn >= 6  # the H100 SiLU, the A10G ESMM ladder and the 2080 Ti SGEMM, in both looks


H100_MATLAB = "jestes15__EE384_FinalProject/profile_output.3b348f5ef8.ncu-rep"  # DRAM 1.79 and 1.9 TB/s
RTX4070TI_MATLAB = "jestes15__EE384_FinalProject/profile_output.83e15dfe71.ncu-rep"  # fp32 mixed 19.8 / no-FMA 17.3


def _roof_lines(panel: dict[str, Any], frame: charts_roofs.Frame) -> dict[str, list[charts_labels.Box]]:
    """Each drawn roof line (its two points in the roof layer's data) as a chain of 1.6 px boxes."""
    ends: dict[str, list[tuple[float, float]]] = {}
    for r in sorted(_data_rows(panel), key=lambda r: r.get("order", 0)):
        if "roof" in r and "order" in r:
            ends.setdefault(r["roof"], []).append(frame.px(r["x"], r["y"]))
    return {roof: charts_labels._segment_boxes(*a, *b, half=0.8) for roof, (a, b) in ends.items()}


def _roof_label_crossings(spec: dict[str, Any]) -> list[str]:
    """Roof labels (TFLOP/s, GB/s) that a roof line runs through, in words."""
    out = []
    for panel in _panels(spec):
        frame = _panel_frame(panel)
        lines = _roof_lines(panel, frame)
        for text, boxes in _text_boxes(panel, frame):
            if "FLOP/s" in text or "B/s" in text:
                out += [f"{roof!r} runs through {text!r}" for roof, line in lines.items()
                        if any(charts_labels._overlap(a, b) > 0 for a in boxes for b in line)]
    return out


@pytest.mark.parametrize("path", [H100_MATLAB, RTX4070TI_MATLAB])
def test_no_roof_line_runs_through_a_roof_label(path: str) -> None:
    """Roofs 3-6 px apart: the H100's DRAM slopes at 1.79 and 1.9 TB/s (launches at two memory
    clocks), the RTX 4070 Ti's fp32 mixed (19.8 TFLOP/s) and no-FMA (17.3) roofs. Each label lies
    beside its line, the upper roof's above the pair and the lower's below, crossed by no line."""
    d = _real_or_skip(path)
    for look in (charts_roofs.Look(), charts_roofs.REPORT_LOOK):
        spec = save.chart_spec(charts.roofline_chart(d, look))
        assert _roof_label_crossings(spec) == [], look
        assert _label_clashes(spec) == []
        drawn = [t for panel in _panels(spec) for t, _ in _text_boxes(panel, _panel_frame(panel))]
        roofs = {str(r["roof"]) for panel in _panels(spec) for r in _data_rows(panel) if "roof" in r}
        assert all(any(t.startswith(r.split(" (report")[0]) for t in drawn) for r in roofs), (roofs, drawn)
    report = save.chart_spec(charts.roofline_chart(d, charts_roofs.REPORT_LOOK))
    (panel,) = _panels(report)
    frame = _panel_frame(panel)
    rows = {t: boxes for t, boxes in _text_boxes(panel, frame)}
    if path == H100_MATLAB:  # the 1.9 TB/s slope is the upper: its label above both lines, the 1.79's below
        ends = [frame.px(r["x"], r["y"]) for r in _data_rows(panel) if str(r.get("roof")).startswith("DRAM 1.9")]
        (x0, y0), (x1, y1) = ends

        def above(box: charts_labels.Box) -> bool:  # the box's centre above the 1.9 TB/s line on screen
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            return cy < y0 + (y1 - y0) * (cx - x0) / (x1 - x0)
        upper = next(b for t, b in rows.items() if t.startswith("DRAM 1.9 TB/s"))
        lower = next(b for t, b in rows.items() if t.startswith("DRAM 1.79 TB/s"))
        assert all(above(b) for b in upper) and not any(above(b) for b in lower)
    else:
        line = {str(r["roof"]): frame.px(r["x"], r["y"])[1] for r in _data_rows(panel) if "roof" in r}
        mixed = next(b for t, b in rows.items() if t.startswith("fp32 mixed"))[0]
        no_fma = next(b for t, b in rows.items() if t.startswith("fp32 no-FMA"))[0]
        assert mixed[3] < line["fp32 mixed (57% of FMA rate) 19.8 TFLOP/s (report)"]
        assert no_fma[1] > line["fp32 no-FMA 17.3 TFLOP/s (report)"]


def test_compare_roof_labels_do_not_collide() -> None:
    """Before and after on one GPU with roofs within the clock spread: one roof (the median of both
    sides' launches); labels on no arrow and no other label."""
    from ncu_roof.comparison.compare import compare
    from ncu_roof.render.charts.compare import _roofs, compare_chart

    base, new = _real_or_skip(V100), _real_or_skip("NCAR__GPU_workshop/MW_DivToMult.ncu-rep")
    c = compare(base, new)
    roofs = _roofs(c)
    assert len(roofs) == 1 and roofs[0][0] == "before and after (Tesla V100-SXM2-32GB)"
    both = pd.concat([base.placed, new.placed])
    fp64 = both.loc[both["compute_roof"] == "fp64 FMA", "peak_flops_per_s"]
    assert roofs[0][1] == pytest.approx(np.median(fp64))
    spec = save.chart_spec(compare_chart(c))
    frame = _panel_frame(spec)
    texts = _text_boxes(spec, frame)
    assert len(texts) == 2 and not _overlaps(*(b for _, b in texts))


def test_levels_without_a_roof_are_not_drawn(roofline_spec: dict[str, Any]) -> None:
    """Device B has no L2/L1 roof: its L2/L1 points are left out and the subtitle says so."""
    spec = roofline_spec
    panel_b = spec["vconcat"][1]
    assert "Synthetic GPU B" in panel_b["title"]["text"]
    levels = {r["level"] for r in _data_rows(panel_b) if "level" in r}
    assert levels == {"DRAM"}
    assert any("L2 and L1 roofs unknown" in line for line in panel_b["title"]["subtitle"])


def test_time_share_is_per_device(diagnosis: Diagnosis) -> None:
    spec = save.chart_spec(views.time_share_chart(diagnosis))
    panels = {p["title"]["text"].rsplit(": ", 1)[-1]: p for p in spec["vconcat"]}
    assert set(panels) == {"Synthetic GPU A", "Synthetic GPU B"}
    b = [r for r in _data_rows(panels["Synthetic GPU B"]) if "key" in r]
    assert [r["Share of time"] for r in b] == ["100%"]  # of device B's time, not of both devices
    a = panels["Synthetic GPU A"]
    assert "ms" in json.dumps(a) and "GPU time (ms)" in json.dumps(a)
    tiny = Diagnosis(diagnosis.placed[diagnosis.placed["time_s"] < 1e-4], pd.DataFrame(), [], [])
    assert "GPU time (µs)" in json.dumps(save.chart_spec(views.time_share_chart(tiny)), ensure_ascii=False)


def test_speed_of_light_fallback(diagnosis: Diagnosis, tmp_path: Path) -> None:
    """No FLOPs or bytes anywhere (a basic-set report): the chart is compute vs memory SOL %."""
    placed = diagnosis.placed[diagnosis.placed["device"] == "Synthetic GPU A"].copy()
    for col in ("flops", "dram_bytes", "l2_bytes", "l1_bytes", "achieved_flops_per_s",
                "intensity_dram", "intensity_l2", "intensity_l1"):
        placed[col] = np.nan
    placed["sm_throughput_pct"] = np.linspace(10, 80, len(placed))
    placed["memory_throughput_pct"] = np.linspace(90, 20, len(placed))
    d = Diagnosis(placed, pd.DataFrame(), [], [])
    assert charts.placeable_kernels(d) == 0
    titles = [t for t, _ in views.all_charts(d)]
    assert titles[0] == "Speed of light"
    spec = json.loads(save.save_chart(d, tmp_path / "sol.json").read_text())
    assert spec["title"]["text"] == "Speed of light"
    rows = [r for r in _data_rows(spec) if "key" in r]
    assert len(rows) == placed["kernel"].nunique()
    axpy = placed[placed["kernel"].str.startswith("axpy")]
    expect = float((axpy["sm_throughput_pct"] * axpy["time_s"]).sum() / axpy["time_s"].sum())
    assert next(r["sm"] for r in rows if r["Kernel"].startswith("axpy")) == pytest.approx(expect)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    assert spec["title"]["subtitle"][:2] == ["no kernel has the FLOP counters a roofline needs (basic set? --set full",
                                             "  collects them)"]


@pytest.mark.parametrize(("path", "kernels"), [("aplainjane__CUDA_Learning/report.ncu-rep", "5 kernels, 68.7 ms"),
                                               ("victor-lvsy__seq_align/profile.ncu-rep", "2 kernels, 509 us")])
def test_speed_of_light_of_integer_kernels_says_they_do_no_floating_point_work(path: str, kernels: str) -> None:
    """A --set full report of integer-only kernels (an int reduction ladder, a DP sequence alignment):
    the FP instruction counters are there and 0, so the chart says no kernel does floating-point
    work, not '(basic set?)'; a launch without the counters is still a basic-set guess."""
    d = _real_or_skip(path)
    assert d.placed["inst_ffma"].notna().all() and d.placed["flops"].eq(0).all()
    spec = save.chart_spec(views.sol_chart(d))
    assert spec["title"]["subtitle"] == [
        "no FLOPs to place on a roofline: no kernel does floating-point work (its FP",
        "  add, multiply and FMA instruction counters are present and 0)",
        f"{kernels}; time-weighted speed-of-light % per kernel, size = share of its device's time",
        "dashed: 60% (busy)"]
    mixed = d.placed.copy()
    mixed.loc[mixed.index[0], "flops"] = np.nan
    assert views.why_no_roofline(mixed) == (
        f"no FLOPs to place on a roofline: {len(mixed) - 1} launch{'es do' if len(mixed) > 2 else ' does'} no "
        "floating-point work (FP instruction counters 0), 1 launch lacks the FLOP counters (basic set?)")


def test_roofline_panels_points_and_ideal(roofline_spec: dict[str, Any]) -> None:
    spec = roofline_spec
    assert len(spec["vconcat"]) == 2  # one panel per device
    rows = _data_rows(spec)
    levels = {r["level"] for r in rows if "level" in r}
    assert {"DRAM", "L2", "L1", "ideal (algorithmic)"} <= levels
    ideal = next(r for r in rows if r.get("level") == "ideal (algorithmic)")
    assert ideal["x"] == pytest.approx(1e7 / 4e8) and ideal["Extra bytes"] == "2x"
    tips = {r["Kernel"] for r in rows if "Kernel" in r}
    assert MARKUP in tips  # full name in the tooltip (escaped by JSON/Vega, see the HTML tests)
    for axis in ("x", "y"):
        layer = next(lay for lay in spec["vconcat"][0]["layer"] if axis in lay.get("encoding", {}))
        enc = layer["encoding"][axis]
        assert enc["scale"]["type"] == "log" and "(" in enc["title"]
        assert all(math.log10(v) == round(math.log10(v)) for v in enc["axis"]["values"])  # decades


def test_names_are_only_truncated() -> None:
    """The kernel column is already short and unique: the charts keep its start and add "…", nothing else."""
    assert charts_points.truncate_name("_kernel_agent<ReduceAgent> #4") == "_kernel_agent<ReduceAgent> #4"
    assert charts_points.truncate_name("InitializeMatrix_kernel<__half>") == "InitializeMatrix_kernel<__half>"
    assert charts_points.truncate_name("k" * 100) == "k" * 35 + "…"


def test_same_looking_kernels_stay_apart() -> None:
    """Two kernels whose names differ only in template arguments are two bars, keyed on the whole name."""
    table = synthetic_table().iloc[[0, 1]].copy()
    table["kernel"] = ["InitializeMatrix_kernel<float>", "InitializeMatrix_kernel<__half>"]
    d = diagnose_table(table)
    rows = _data_rows(save.chart_spec(views.time_share_chart(d)))
    assert {r["key"] for r in rows} == {"InitializeMatrix_kernel<float>", "InitializeMatrix_kernel<__half>"}
    spec = save.chart_spec(charts.roofline_chart(d))
    assert len({r["key"] for r in _data_rows(spec) if "key" in r}) == 2


def test_thousands_of_launches_aggregate(diagnosis: Diagnosis) -> None:
    """6000 launches of 120 kernels: one point per kernel, the top MAX_KERNELS drawn, no row limit hit."""
    placed = pd.concat([diagnosis.placed] * 750, ignore_index=True)
    placed["kernel"] = [f"{k}_{i % 120}" for i, k in enumerate(placed["kernel"])]
    d = Diagnosis(placed, pd.DataFrame(), [], [])
    points = charts_points.kernel_points(placed)
    assert len(points) == placed.groupby(["device", "kernel"]).ngroups
    assert points["time_s"].sum() == pytest.approx(placed["time_s"].sum())
    spec = save.chart_spec(charts.roofline_chart(d))
    keys = {r["key"] for r in _data_rows(spec) if "key" in r}
    assert len(keys) <= charts_points.MAX_KERNELS * 2  # per device panel
    assert "not placed" in json.dumps(spec)  # the subtitle says what was left out
    assert len(_data_rows(save.chart_spec(views.time_share_chart(d)))) <= (charts_points.MAX_BARS + 2) * 2  # per device


def test_save_chart(diagnosis: Diagnosis, roofline_spec: dict[str, Any], tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    out = save.save_chart(diagnosis, tmp_path / "r.json")
    assert json.loads(out.read_text())["vconcat"]
    with pytest.raises(InputError, match="--force"):
        save.save_chart(diagnosis, out)
    save.save_chart(roofline_spec, out, force=True)  # the same chart as a spec: built once per module
    with pytest.raises(InputError, match=r"\.html, \.json, \.png or \.svg"):
        save.save_chart(diagnosis, tmp_path / "r.gif")
    monkeypatch.setitem(__import__("sys").modules, "vl_convert", None)
    for suffix in ("png", "html"):  # the HTML inlines vl-convert's Vega bundle
        with pytest.raises(InputError, match=re.escape("pip install 'ncu-roof[png]'")):
            save.save_chart(roofline_spec, tmp_path / f"r.{suffix}")
        assert not (tmp_path / f"r.{suffix}").exists()


def _png_pixels(data: bytes) -> tuple[int, int, np.ndarray]:
    """Decode an 8-bit RGB(A) PNG with zlib alone (no PIL): width, height, pixel array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * bpp
    out = np.zeros((height, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            pred = {0: 0, 1: a, 2: b, 3: (a + b) // 2}.get(ftype)
            if pred is None:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + pred) & 0xFF
        out[y], prev = cur, cur
    return width, height, out.reshape(height, width, bpp)


def test_png_is_not_blank(diagnosis: Diagnosis, roofline_spec: dict[str, Any], tmp_path: Path) -> None:
    vl_convert = pytest.importorskip("vl_convert")
    path = save.save_chart(roofline_spec, tmp_path / "r.png")  # the fixture's main chart (its roofline)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
    spec = save.chart_spec(charts.roofline_chart(Diagnosis(diagnosis.placed.iloc[[0]], pd.DataFrame(), [], [])))
    width, height, pixels = _png_pixels(vl_convert.vegalite_to_png(spec, scale=0.6))  # small: quick to decode
    assert width > 300 and height > 200
    rgb = pixels[..., :3].reshape(-1, 3)
    colours = {tuple(p) for p in rgb[:: 7]}
    assert len(colours) > 20
    assert (rgb.min(axis=1) < 200).mean() > 0.01  # more than 1% of the pixels are ink, not background
    assert ((rgb[:, 0] > 180) & (rgb[:, 1] < 80)).any()  # the red of a compute-bound kernel


# --- the HTML report -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def report_html(diagnosis: Diagnosis, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("vl_convert")
    from ncu_roof.render.html import render_html

    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(diagnosis), encoding="utf-8")
    return path


def test_html_is_escaped_and_offline(report_html: Path) -> None:
    text = report_html.read_text(encoding="utf-8")
    assert MARKUP not in text and "<script>alert" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&quot;" in text  # the kernel table's title
    assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I)
    assert not re.search(r"<link[^>]*https?://", text, re.I)
    scripts = re.findall(r"<script type=\"application/json\"[^>]*>(.*?)</script>", text, re.S)
    assert len(scripts) == 4 and all("<" not in s for s in scripts)
    assert json.loads(scripts[0])["vconcat"]


def test_html_table_hygiene(diagnosis: Diagnosis) -> None:
    pytest.importorskip("vl_convert")
    from ncu_roof.render.html import _kernel_table

    placed = diagnosis.placed.copy()
    placed.loc[placed["kernel"].str.startswith("stream_copy"), "headroom_s"] = -11.2e-6
    zero = placed["kernel"].str.startswith("axpy")
    placed.loc[zero, ["compute_roof", "intensity_dram"]] = [None, 0.0]
    table = _kernel_table(Diagnosis(placed, diagnosis.regions, [], []))
    assert ">nan<" not in table and ">0<" not in table and "-11.2" not in table
    assert "0 (above the practical roof)" in table
    assert table.count("<h3>") == 2 and "<th>device</th>" not in table  # grouped per device
    assert "extra bytes" not in table  # no multi-kernel region: no empty column


def test_report_roofline_uses_the_page(report_html: Path) -> None:
    """The report's roofline is drawn for a 1400 px page (not 620 px), with larger text."""
    text = report_html.read_text(encoding="utf-8")
    spec = json.loads(re.findall(r"<script type=\"application/json\"[^>]*>(.*?)</script>", text, re.S)[0])
    assert min(p["width"] for p in spec["vconcat"]) >= 1000 and spec["config"]["axis"]["labelFontSize"] >= 13
    assert any(lay["mark"].get("fontSize", 0) >= 13 for lay in spec["vconcat"][0]["layer"]
               if isinstance(lay["mark"], dict) and lay["mark"]["type"] == "text")
    assert int(re.search(r"max-width: (\d+)px", text).group(1)) >= 1300  # type: ignore[union-attr]


def test_report_without_empty_panels_or_zero_times() -> None:
    """A GPU whose launches have no time and no FLOPs (the GH200 SiLU report) gets no empty roofline
    panel (a note names it) and its time reads "unknown", never "0 ns"."""
    pytest.importorskip("vl_convert")
    from ncu_roof.render.html import _kernel_table, render_html

    silent = _launch(20, "silu_kernel", {"device": "NVIDIA GH200 480GB", "peak_dram_bytes_per_s": 4e12},
                     math.nan, math.nan)
    silent.update(flops=math.nan, flops_fp32=math.nan, inst_ffma=math.nan, inst_fadd=math.nan)
    d = diagnose_table(pd.concat([synthetic_table(), pd.DataFrame([silent])], ignore_index=True))
    spec = save.chart_spec(charts.roofline_chart(d))
    titles = [p["title"]["text"] for p in spec["vconcat"]]
    assert titles == ["Roofline: Synthetic GPU A", "Roofline: Synthetic GPU B"]
    assert any("no roofline for GH200 480GB" in line for line in spec["vconcat"][0]["title"]["subtitle"])
    table = _kernel_table(d)
    assert "0 ns" not in table and "1 kernel, unknown; shares" in table
    assert "0 ns" not in render_html(d)


def test_html_extra_bytes_of_a_region() -> None:
    pytest.importorskip("vl_convert")
    from ncu_roof.diagnosis import diagnose_paths
    from ncu_roof.render.html import _kernel_table

    synthetic = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
    d = diagnose_paths(synthetic / "synthetic_layernorm_unfused_rtx5070.csv",
                       algorithmic=synthetic / "synthetic_layernorm.toml")
    assert _kernel_table(d).count("5x (layernorm)") == 6


def test_report_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ncu_roof.cli import app

    out = tmp_path / "r.html"
    out.write_text("keep me")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "missing.ncu-rep"), "-o", str(out)])
    assert result.exit_code != 0 and out.read_text() == "keep me"


@pytest.mark.skipif(not CHROMIUM.is_file(), reason="no /usr/bin/chromium (Debian: apt-get install chromium); "
                    ".ci/run installs it")
def test_report_renders_in_headless_chromium(report_html: Path, rendered: Any) -> None:
    dom, log = rendered(report_html)
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    assert not [c for c in console if re.search(r"Uncaught|Error|error|WARN|failed", c)], console
    assert dom.count("<svg") >= 4  # every chart rendered
    for mark in ("mark-symbol", "mark-line", "mark-text", "mark-rect"):
        assert f'class="{mark}' in dom, f"no {mark} in the rendered charts"
    assert len(re.findall(r"<path[^>]* d=\"M", dom)) > 20
    assert not re.search(r"<div[^>]*>chart failed", dom)
    assert "<script>alert(1)</script>" not in dom  # never became an element
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom  # ...but is there as text


def _compare_html(tmp_path: Path) -> Path:
    """``compare --chart x.html`` of the synthetic layernorm pair (the region's move)."""
    from ncu_roof.comparison.compare import compare
    from ncu_roof.diagnosis import diagnose_paths
    from ncu_roof.render.charts.compare import save_compare_chart

    synthetic = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
    alg = synthetic / "synthetic_layernorm.toml"
    c = compare(*(diagnose_paths(synthetic / f"synthetic_layernorm_{k}_rtx5070.csv", algorithmic=alg)
                  for k in ("unfused", "fused")))
    return save_compare_chart(c, tmp_path / "cmp.html")


@pytest.fixture(scope="module")
def every_html(_roofline_spec: dict[str, Any], report_html: Path,
               tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every kind of HTML file the tool writes: the report, diagnose --chart (the fixture's main
    chart, its roofline) and compare --chart (written once for the tests of this module, which only
    read them)."""
    tmp = tmp_path_factory.mktemp("every_html")
    return {"report": report_html, "diagnose --chart": save.save_chart(_roofline_spec, tmp / "roofline.html"),
            "compare --chart": _compare_html(tmp)}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``rendered(path)``: headless chromium's DOM and log of an HTML file, one browser run per file
    for this module (the report is checked by two tests)."""
    done: dict[Path, tuple[str, str]] = {}

    def render(path: Path) -> tuple[str, str]:
        if path not in done:
            done[path] = _chromium_dump(path, tmp_path_factory.mktemp(f"profile-{path.stem}"))
        return done[path]

    return render


def test_every_html_is_self_contained(every_html: dict[str, Path]) -> None:
    """No HTML the tool writes fetches anything: no script src, no stylesheet link, no URL to load."""
    pytest.importorskip("vl_convert")
    for what, path in every_html.items():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I), what
        assert not re.search(r"<link[^>]*href", text, re.I), what
        assert "cdn.jsdelivr" not in text and "vegaEmbed(" in text, what


@pytest.mark.skipif(not CHROMIUM.is_file(), reason="no /usr/bin/chromium (Debian: apt-get install chromium)")
def test_every_html_renders_offline(every_html: dict[str, Path], rendered: Any) -> None:
    """Each HTML file renders its charts in a real browser with every host unresolvable."""
    pytest.importorskip("vl_convert")
    for what, path in every_html.items():
        dom, log = rendered(path)
        console = [line for line in log.splitlines() if "CONSOLE" in line]
        assert not [c for c in console if re.search(r"Uncaught|Error|error|failed", c)], (what, console)
        assert "<svg" in dom and 'class="mark-line' in dom and 'class="mark-text' in dom, what
        assert not re.search(r"<div[^>]*>chart failed", dom), what


@pytest.mark.skipif(shutil.which("chromium") is None and not CHROMIUM.is_file(), reason="no chromium")
def test_browser_check_catches_errors(tmp_path: Path) -> None:
    """The console check above would see a failing script (so its silence means something)."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>throw new Error('boom')</script></body></html>")
    _, log = _chromium_dump(bad, tmp_path / "profile")
    assert any("Uncaught Error: boom" in line for line in log.splitlines() if "CONSOLE" in line)


def test_every_precision_a_kernel_uses_has_its_roof_drawn(realdata: Path) -> None:
    """SimonLuder's Numba v1 (RTX 2070, FP64 at 1/32): reconstruct_svd's FP64 FLOPs bind (it was
    placed at 4% of the FP32 roof); the FP64 roof it is held to and the FP32 peak of its FP32 FLOPs
    are both drawn and labelled."""
    d = cached_diagnose_paths(realdata / "SimonLuder__hs22-mc2/v1.ncu-rep")
    row = d.placed.iloc[0]
    assert row["compute_precision"] == "fp64" and row["flops_fp32"] > 0 and round(row["pct_of_roof"]) == 43
    roofs = {r["roof"]: r for r in _data_rows(save.chart_spec(views.roofline_chart(d))) if "roof" in r}
    assert "fp64 no-FMA 87.9 GFLOP/s (report)" in roofs
    assert roofs["fp32 FMA peak (context: FP32 FLOPs here, not binding) 5.63 TFLOP/s (report)"]["kind"] == "context"
