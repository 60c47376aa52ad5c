"""The diagnosis rules: the seeds' worked examples, Nsight Compute's own example pairs, real reports.

Synthetic launches are built on the seeds' card (RTX 5070: 30.9 TFLOP/s FP32, 672 GB/s spec,
88% practical = 591.36 GB/s; peaks from the device table) as raw frames in base units and go
through the real pipeline (normalize -> place -> regions -> rules).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import cached_diagnosis

from ncu_roof.diagnosis import Diagnosis, diagnose_paths, diagnose_table, to_dict
from ncu_roof.errors import NcuRoofError
from ncu_roof.model.roofline import Thresholds
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.normalize import normalize
from ncu_roof.render.markdown import render_markdown
from ncu_roof.render.text import render_text
from ncu_roof.rules import RULES, Finding

SYNTHETIC = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
CARD = "NVIDIA GeForce RTX 5070"
PRACTICAL = 0.88 * 672e9
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"


def launch(kernel: str, time_s: float, **metrics: float) -> dict[str, Any]:
    """One raw launch on the seeds' card (no FP32 instructions unless given), metrics in base units."""
    row: dict[str, Any] = {c: pd.NA for c in IDENTITY_COLUMNS}
    row.update(report="synthetic", kernel=kernel, kernel_demangled=kernel, device=CARD, cc="12.0",
               **{"gpu__time_duration.sum": time_s, "device__attribute_multiprocessor_count": 48.0,
                  FFMA: 0.0, FADD: 0.0, FMUL: 0.0})
    row.update(metrics)
    return row


def diagnose_rows(rows: list[dict[str, Any]], algorithmic: Path | None = None) -> Diagnosis:
    raw = pd.DataFrame(rows)
    raw["id"] = range(len(raw))
    return diagnose_table(normalize(raw), algorithmic=algorithmic)


def by_rule(d: Diagnosis, rule_id: str) -> list[Finding]:
    return [f for f in d.findings if f.rule == rule_id]


def point(kernel: str, intensity: float, flops_per_s: float, time_s: float = 1e-3) -> dict[str, Any]:
    """A pure-FMA FP32 kernel at a given DRAM intensity and FLOP rate."""
    flops = flops_per_s * time_s
    return launch(kernel, time_s, **{FFMA: flops / 2, "dram__bytes_read.sum": flops / intensity,
                                     "dram__bytes_write.sum": 0.0})


# --- (a) the six-kernel layernorm --------------------------------------------------------------
def test_layernorm_is_told_to_fuse_with_5x_extra_bytes_and_0_9_ms() -> None:
    d = diagnose_paths(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv",
                       algorithmic=SYNTHETIC / "synthetic_layernorm.toml")
    [fuse] = by_rule(d, "fuse-extra-bytes")
    assert d.findings[0] is fuse  # ranked first: the most time at stake
    assert fuse.region == "layernorm"
    assert len(fuse.kernels) == 6 and all(k.startswith("ln_") for k in fuse.kernels)
    ev = fuse.evidence
    assert ev["dram_bytes"] == pytest.approx(10 * 268_435_456)  # ten passes of 268 MB
    assert ev["alg_bytes"] == 2 * 268_435_456
    assert ev["extra_bytes_factor"] == pytest.approx(5.0)
    assert ev["time_s"] == pytest.approx(4.55e-3, rel=0.01)  # ~590 GB/s per kernel
    assert ev["ideal_time_s"] == pytest.approx(536_870_912 / PRACTICAL) == pytest.approx(0.908e-3, rel=1e-3)
    assert fuse.time_at_stake_s == pytest.approx(ev["time_s"] - ev["ideal_time_s"])
    assert "5.0x extra bytes" in fuse.message and "908 us" in fuse.message and "4.55 ms" in fuse.message
    assert "2.15 GB" in fuse.message  # bytes saved
    # each kernel is on its roof: no below-roof advice, and no stop (the region is not at its ideal)
    assert not by_rule(d, "below-roof") and not by_rule(d, "at-roof-stop")
    text = render_text(d)
    assert "fuse-extra-bytes" in text and "Nothing to win" not in text


def test_fused_layernorm_at_the_ideal_intensity_is_told_to_stop() -> None:
    d = diagnose_paths(SYNTHETIC / "synthetic_layernorm_fused_rtx5070.csv",
                       algorithmic=SYNTHETIC / "synthetic_layernorm.toml")
    assert not by_rule(d, "fuse-extra-bytes")
    [stop] = by_rule(d, "at-roof-stop")
    assert stop.evidence["extra_bytes_factor"] == pytest.approx(1.0)
    assert "stop" in stop.message and "new algorithm" in stop.message and "narrower data type" in stop.message


# --- (b) intensity 10 at 6 TFLOP/s vs intensity 100 at 25% of peak ------------------------------
def test_roof_points_excellent_vs_wasting_the_hardware() -> None:
    d = diagnose_rows([point("i10", 10.0, 6e12), point("i100", 100.0, 0.25 * 30.9e12)])
    placed = d.placed.set_index("kernel")
    # 25% of its compute roof is "well below both": latency-bound (binding roof still compute)
    assert placed.loc["i10", "bound"] == "memory" and placed.loc["i100", "bound"] == "latency"
    assert placed.loc["i100", "binding"] == "compute"
    assert placed.loc["i10", "attainable_flops_per_s"] == pytest.approx(10 * PRACTICAL)  # 5.9 TFLOP/s
    [good] = by_rule(d, "at-roof")
    assert good.kernels == ("i10",) and "excellent" in good.message
    assert good.evidence["pct_of_roof"] == pytest.approx(6e12 / (10 * PRACTICAL) * 100)  # 101%
    [bad] = by_rule(d, "below-roof")
    assert bad.kernels == ("i100",)
    assert bad.evidence["pct_of_roof"] == pytest.approx(25.0)
    assert bad.time_at_stake_s == pytest.approx(0.75e-3)  # 1 ms measured, 0.25 ms at the roof
    assert "25%" in bad.message and "750 us" in bad.message
    assert not by_rule(d, "above-dram-roof")  # 600 GB/s is under the 672 GB/s spec


# --- (c) wave quantization: 300 blocks on 288 slots ----------------------------------------------
def test_300_blocks_on_288_slots_gets_the_wave_finding() -> None:
    waves = 300 / 288
    tail = launch("tail", 100e-6, **{"launch__grid_size": 300.0, "launch__block_size": 256.0,
                                     "launch__waves_per_multiprocessor": waves})
    full = launch("full", 100e-6, **{"launch__grid_size": 288.0 * 20, "launch__block_size": 256.0,
                                     "launch__waves_per_multiprocessor": 20.0})
    d = diagnose_rows([tail, full])
    [f] = by_rule(d, "wave-tail")
    assert f.kernels == ("tail",)
    assert f.evidence["slots"] == pytest.approx(288.0)
    assert f.evidence["tail_blocks"] == pytest.approx(12.0)
    # a 288-block grid doing the same work takes 1.04 of 2 wave times: saves (1 - 12/288) / 2 of 100 us
    assert f.time_at_stake_s == pytest.approx(100e-6 * (1 - 12 / 288) / 2) == pytest.approx(47.9e-6, rel=1e-3)
    assert "300 blocks on 288 slots" in f.message and "47.9 us" in f.message


# --- (d) a point above the DRAM roof --------------------------------------------------------------
def test_point_above_the_dram_roof_gets_the_cache_finding(tmp_path: Path) -> None:
    toml = tmp_path / "alg.toml"
    toml.write_text('[[region]]\nname = "small"\nkernels = "^small$"\nbytes = 16e6\nflops = 4e6\n')
    # 16 MB counted in 10 us = 1.6 TB/s > 672 GB/s; DRAM saw 0.5 MB, L2 moved the 16 MB
    small = launch("small", 10e-6, **{FADD: 4e6, "dram__bytes_read.sum": 0.5e6, "dram__bytes_write.sum": 0.0,
                                      "lts__t_bytes.sum": 16e6, "lts__t_bytes.sum.peak_sustained": 2048.0,
                                      "lts__cycles_elapsed.avg.per_second": 2.0e9})
    d = diagnose_rows([small], algorithmic=toml)
    # since the above-the-roof merge (i14-roof) the cache-resident region gets its own above-dram-roof
    # note (271% of its DRAM roof, placed against L2, no stake), beside the launch's finding
    [f] = [x for x in by_rule(d, "above-dram-roof") if x.region is None]
    [r] = [x for x in by_rule(d, "above-dram-roof") if x.region == "small"]
    assert r.time_at_stake_s == 0.0 and "not the 'stop, on the roof' case" in r.message
    assert not by_rule(d, "at-roof-stop")
    assert f.evidence["bytes_per_s"] == pytest.approx(1.6e12)
    assert f.evidence["over_peak"] == pytest.approx(1.6e12 / 672e9)
    assert f.evidence["l2_roof_bytes_per_s"] == pytest.approx(4.096e12)
    assert "cache" in f.message and "1.6 TB/s" in f.message and "L2 roof" in f.message
    assert f.time_at_stake_s == pytest.approx(10e-6 - 16e6 / 4.096e12)
    assert not by_rule(d, "at-roof")


def test_measured_dram_bandwidth_above_peak_gets_the_cache_finding() -> None:
    d = diagnose_rows([launch("hot", 1e-3, **{"dram__bytes_read.sum": 900e6, "dram__bytes_write.sum": 0.0})])
    [f] = by_rule(d, "above-dram-roof")
    assert f.evidence["achieved_dram_bytes_per_s"] == pytest.approx(900e9)
    assert "measured DRAM bytes" in f.message and "no L2 byte count" in f.message


# --- overhead regime -------------------------------------------------------------------------------
def test_short_launches_that_do_not_scale_are_in_the_overhead_regime() -> None:
    rows = [launch("tiny", t, **{"launch__grid_size": g, "dram__bytes_read.sum": g * 1024.0,
                                 "dram__bytes_write.sum": 0.0})
            for g, t in ((16.0, 3.0e-6), (64.0, 3.1e-6), (256.0, 3.3e-6), (1024.0, 4.0e-6))]
    d = diagnose_rows(rows)
    [f] = by_rule(d, "overhead-regime")
    assert f.ids == (0, 1, 2, 3)
    assert f.evidence["size_ratio"] == pytest.approx(64.0)
    fixed = np.polyfit([16, 64, 256, 1024], [3.0e-6, 3.1e-6, 3.3e-6, 4.0e-6], 1)[1]
    assert f.evidence["fixed_s"] == pytest.approx(fixed)
    sizes, times = (16, 64, 256, 1024), (3.0e-6, 3.1e-6, 3.3e-6, 4.0e-6)
    # each launch wins at most its time above its DRAM bound (its g kB at the practical roof) and above the
    # 1.5 us launch floor, which no fix wins
    above = sum(t - max(g * 1024 / PRACTICAL, 1.5e-6) for g, t in zip(sizes, times, strict=True))
    # the larger of that and the fixed part paid 4 times instead of once (within the time above the floors)
    merged = min(3 * fixed, sum(t - 1.5e-6 for t in times))
    assert f.time_at_stake_s == pytest.approx(max(above, merged))
    assert "CUDA graph" in f.message and "does not scale" in f.message


# --- FMA and precision ------------------------------------------------------------------------------
def test_add_only_compute_bound_kernel_is_judged_against_the_no_fma_roof() -> None:
    """Adds alone have nothing to fuse with: the no-FMA roof judges them (65% of 15.45 TFLOP/s, below-roof
    speaks), and no-fma-roof does not promise what FMAs would win. Adds and multiplies in pairs fuse:
    all FMAs take half the compute bound at the same efficiency."""
    flops = 10e12 * 1e-3  # 10 TFLOP/s of adds: 65% of the 15.45 TFLOP/s no-FMA roof
    dram = {"dram__bytes_read.sum": 1e6, "dram__bytes_write.sum": 0.0}
    d = diagnose_rows([launch("adds", 1e-3, **{FADD: flops, **dram})])
    assert d.placed["compute_roof"].iloc[0] == "fp32 no-FMA"
    assert not by_rule(d, "no-fma-roof") and by_rule(d, "below-roof")
    paired = diagnose_rows([launch("adds", 1e-3, **{FADD: flops / 2, FMUL: flops / 2, **dram})])
    [f] = by_rule(paired, "no-fma-roof")
    assert f.evidence["fma_fraction"] == 0.0 and f.evidence["fusable_fraction"] == 1.0
    assert f.time_at_stake_s == pytest.approx(0.5e-3)  # all FMAs: half the compute bound, same efficiency
    assert "15.4 TFLOP/s" in f.message and "30.9 TFLOP/s" in f.message
    assert not by_rule(paired, "below-roof")  # explained by the instruction mix


# --- rendering ------------------------------------------------------------------------------------
def test_a_report_with_only_notes_says_nothing_can_be_won() -> None:
    d = diagnose_rows([point("i10", 10.0, 6e12)])
    assert [f.rule for f in d.findings] == ["at-roof"]
    assert "Nothing to win" in render_text(d) and "Nothing to win" in render_markdown(d)
    assert "at-roof" in render_text(d)


def test_every_rule_declares_inputs_and_how_to_capture_them() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    for expected in ("fuse-extra-bytes", "below-roof", "at-roof-stop", "overhead-regime", "wave-tail",
                     "above-dram-roof", "no-fma-roof", "fp64-pipe", "uncoalesced-access",
                     "bank-conflicts", "low-occupancy", "divergence"):
        assert expected in ids
    assert all(r.enable for r in RULES)
    d = diagnose_rows([point("i10", 10.0, 6e12)])
    skipped = {s.rule: s for s in d.skipped}
    assert skipped["bank-conflicts"].missing == ("shared_bank_conflicts", "shared_wavefronts")
    assert "MemoryWorkloadAnalysis" in skipped["bank-conflicts"].enable


# --- Nsight Compute's example pairs ------------------------------------------------------------------
PAIRS = [
    ("uncoalescedGlobalAccesses", "addConstDouble3", "addConstDouble", "uncoalesced-access"),
    ("sharedBankConflicts", "transposeCoalesced", "transposeNoBankConflicts", "bank-conflicts"),
    ("instructionMix", "sobelDouble", "sobelFloat", "fp64-pipe"),
]


@pytest.mark.parametrize(("folder", "naive", "fixed", "rule_id"), PAIRS)
def test_ncu_example_pairs(ncu_examples: Path, folder: str, naive: str, fixed: str, rule_id: str) -> None:
    bad = cached_diagnosis(ncu_examples / folder / f"{naive}.ncu-rep")
    good = cached_diagnosis(ncu_examples / folder / f"{fixed}.ncu-rep")
    assert rule_id in [f.rule for f in bad.findings]
    assert rule_id not in [f.rule for f in good.findings]
    assert_traceable(bad)
    assert_traceable(good)


def test_ncu_example_numbers(ncu_examples: Path) -> None:
    """The numbers each example's README points at, as the findings state them."""
    [unc] = by_rule(cached_diagnosis(ncu_examples / "uncoalescedGlobalAccesses" / "addConstDouble3.ncu-rep"),
                    "uncoalesced-access")
    assert unc.evidence["sectors_per_load_request"] == 24.0  # double3: 24 sectors where 8 would do
    assert unc.evidence["excess"] == pytest.approx(3.0)
    [bank] = by_rule(cached_diagnosis(ncu_examples / "sharedBankConflicts" / "transposeCoalesced.ncu-rep"),
                     "bank-conflicts")
    assert bank.evidence["conflict_share"] == pytest.approx(65011712 / 69544080)
    assert bank.time_at_stake_s == pytest.approx(bank.evidence["time_s"] - bank.evidence["time_lower_bound_s"])
    sobel = cached_diagnosis(ncu_examples / "instructionMix" / "sobelDouble.ncu-rep")
    [fp64] = by_rule(sobel, "fp64-pipe")
    assert fp64.evidence["fp64_over_fp32_peak"] == pytest.approx(1 / 64, rel=0.01)
    assert sobel.findings[0] is fp64  # the most time at stake
    assert 0.5e-3 < fp64.time_at_stake_s < fp64.evidence["time_s"]  # sobelFloat really takes 32 us of 628


# --- every real report ---------------------------------------------------------------------------------
def _real_inputs(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".ncu-rep", ".csv"))


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, str) or isinstance(a, str):
        return str(a) == str(b)
    fa = None if a is None or a is pd.NA else float(a)
    fb = None if b is None or b is pd.NA or (isinstance(b, float) and math.isnan(b)) else float(b)
    return fa == fb or (fa is not None and fb is not None and math.isclose(fa, fb, rel_tol=1e-12))


def assert_traceable(d: Diagnosis) -> None:
    """Every evidence value under a placed-column (or region-column) name equals that table's value."""
    for f in d.findings:
        assert f.ids and f.kernels and f.message
        if f.region is not None:
            region = d.regions.set_index("name").loc[f.region]
            for key, value in f.evidence.items():
                if key in region.index:
                    assert _same(value, region[key]), (f.rule, key)
            continue
        rows = d.placed[(d.placed["report"] == f.report) & d.placed["id"].isin(f.ids)].set_index("id").loc[list(f.ids)]
        assert set(rows["kernel"]) == set(f.kernels)
        for key, value in f.evidence.items():
            if key not in rows:
                continue
            values = value if isinstance(value, list) else [value]
            assert len(values) == len(rows), (f.rule, key)
            assert all(_same(v, w) for v, w in zip(values, rows[key], strict=True)), (
                f.rule, key, values, list(rows[key]))
        assert f.time_at_stake_s is None or f.time_at_stake_s >= 0


def test_every_real_report_diagnoses_with_traceable_findings(realdata: Path) -> None:
    done = 0
    for path in _real_inputs(realdata):
        try:
            d = cached_diagnosis(path)
        except NcuRoofError:
            continue  # the loaders refuse what is not a report (a failed run's log); tested there
        assert_traceable(d)
        # ranked by stake, conditional findings (a hypothesis to check) among the others; notes last; a
        # finding naming another on its launches as its cause right after that one
        stakes = [f.time_at_stake_s or 0.0 for f in d.findings if "caused_by" not in f.evidence]
        assert stakes == sorted(stakes, reverse=True), path
        for before, f in zip(d.findings, d.findings[1:], strict=False):
            if "caused_by" in f.evidence and (f.time_at_stake_s or 0.0) > (before.time_at_stake_s or 0.0):
                assert (before.rule, before.ids) == (f.evidence["caused_by"], f.ids), path
        for f in d.findings:  # never more than its launches' time, never a finding "at 0 ns"
            t = float(d.placed.loc[d.placed["id"].isin(f.ids), "time_s"].sum()) if f.ids else math.inf
            assert (f.time_at_stake_s or 0.0) <= t * (1 + 1e-9), (path, f.rule)
            if f.time_at_stake_s is not None and not f.time_at_stake_s > 0:  # known to win nothing: a note
                assert f.severity == "info", (path, f.rule)
        # one price per kernel and cause
        keys = [(f.report, f.rule, f.kernels, f.region) for f in d.findings]
        assert len(keys) == len(set(keys)), path
        to_dict(d)  # the JSON contract holds the findings
        done += 1
    assert done >= 15


def test_basic_set_report_names_fp64_on_a_consumer_gpu_from_the_pipe_share(realdata: Path) -> None:
    """The alife report (RTX 2070 SUPER, FP64 at 1/32) has no FLOP/byte counters; mix_give_take_3_kernel,
    61% of the run, keeps its FP64 pipe 41% busy, the busiest unit: fp64-pipe names it (under the 50%
    busy cut: the binding unit on a consumer rate is enough) and points at double promotion; ncu's SOL
    reading stays silent since a finer unit binds (one verdict per kernel)."""
    d = cached_diagnosis(realdata / "jonahshader__alife_cuda" / "profile_output.ncu-rep")
    placed = d.placed[d.placed["kernel"] == "mix_give_take_3_kernel"]
    assert set(placed["binding_unit"]) == {"pipe_fp64"} and placed["time_s"].sum() / d.placed["time_s"].sum() > 0.6
    [f] = [g for g in by_rule(d, "fp64-pipe") if g.kernels == ("mix_give_take_3_kernel",)]
    assert d.findings[0] is f and f.evidence["fp64_over_fp32_peak"] == pytest.approx(1 / 32, rel=0.01)
    assert "the FP64 pipe is the limiter, 41% busy" in f.message and "-Wdouble-promotion" in f.message
    assert "fmaf" not in f.message
    # the FP64 pipe's work leaves; the next unit binds: at most the launches' time
    assert 0.5 * placed["time_s"].sum() < f.time_at_stake_s < placed["time_s"].sum()
    assert not [g for g in by_rule(d, "speed-of-light-only") if g.kernels == ("mix_give_take_3_kernel",)]


# --- severity, wording and escaping --------------------------------------------------------------
def test_severity_is_the_share_of_the_run_at_stake(realdata: Path) -> None:
    """MW_Baseline (15.5 ms): the 3.03 ms FP64-division finding outranks the halo kernels' few-us ones."""
    d = cached_diagnosis(realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep")
    run = float(d.placed["time_s"].sum())
    [below] = by_rule(d, "fp64-pipe")  # the limiter named, where below-roof once said "look at latency"
    assert below.kernels == ("compute_tendencies_x_279_gpu",)
    assert (below.time_at_stake_s or 0.0) / run == pytest.approx(0.1960, abs=1e-3)  # >= 10% of the run
    assert below.severity == "high" and [f for f in d.findings if f.rule != "fusion-chain"][0] is below
    halo = [f for f in d.findings if f.kernels[0].startswith("set_halo_values")]
    assert halo and all((f.time_at_stake_s or 0.0) / run < 0.02 for f in halo)
    assert all(f.severity == ("low" if f.time_at_stake_s else "info") for f in halo)  # no stake: a note
    assert all(f.severity == "info" for f in by_rule(d, "at-roof"))
    text = render_text(d)
    assert "2. (high) fp64-pipe [3.03 ms at stake]" in text and "(high) low-occupancy" not in text


def test_severity_cut_offs_follow_the_thresholds() -> None:
    # one 1 ms kernel at 25% of its roof (0.75 ms at stake) beside an on-roof kernel of 9 ms: 7.5% of 10 ms
    d = diagnose_rows([point("i100", 100.0, 0.25 * 30.9e12), point("i10", 10.0, 6e12, time_s=9e-3)])
    [bad] = by_rule(d, "below-roof")
    assert bad.time_at_stake_s == pytest.approx(0.75e-3) and bad.severity == "medium"
    alone = diagnose_rows([point("i100", 100.0, 0.25 * 30.9e12)])
    assert by_rule(alone, "below-roof")[0].severity == "high"  # 75% of its own run


def _message_faults(d: Diagnosis) -> list[str]:
    """Messages that are long, print an unknown as '?', or name a placed-table column."""
    columns = {c for c in d.placed.columns if "_" in c}
    faults = []
    for f in d.findings:
        text = f.message
        for k in f.kernels:  # kernel names are the report's, not ours
            text = text.replace(k, "").replace(k[:79], "")
        words = set(re.findall(r"[A-Za-z0-9_]+", text))
        if (len(f.message) >= 400 or "?" in text or "_pct" in text or "_bytes" in text
                or words & columns):
            faults.append(f"{f.rule} {f.kernels[0]}: {f.message}")
    return faults


def test_real_report_messages_are_short_plain_and_known(realdata: Path) -> None:
    faults, seen = [], 0
    for path in _real_inputs(realdata):
        try:
            d = cached_diagnosis(path)
        except NcuRoofError:
            continue
        faults += _message_faults(d)
        seen += len(d.findings)
    assert seen >= 30 and not faults, "\n".join(faults)


def test_no_real_finding_is_priced_above_its_launches_time_less_the_launch_floor(realdata: Path) -> None:
    """A stake is a promise: no fix wins back the 1.5 us an empty launch takes, on any real input."""
    floor, over, priced = Thresholds().launch_floor_s, [], 0
    for path in _real_inputs(realdata):
        try:
            d = cached_diagnosis(path)
        except NcuRoofError:
            continue
        for f in d.findings:
            if not f.time_at_stake_s:
                continue
            mine = d.placed["id"].isin(f.ids)
            if "report" in d.placed and f.report is not None:
                mine &= d.placed["report"].astype(str) == str(f.report)
            priced += 1
            if f.time_at_stake_s > max(float(d.placed.loc[mine, "time_s"].sum()) - mine.sum() * floor, 0.0) + 1e-12:
                over.append(f"{path.name} {f.rule} {f.kernels[0]}: {f.time_at_stake_s:.3g} s")
    assert priced >= 100 and not over, "\n".join(over)


def test_nothing_to_win_is_said_only_where_a_roof_judged_every_launch(realdata: Path) -> None:
    """Where no roof is known the rules cannot tell: 'Cannot judge', never 'Nothing to win'."""
    said, faults = 0, []
    for path in _real_inputs(realdata):
        try:
            d = cached_diagnosis(path)
        except NcuRoofError:
            continue
        if "Nothing to win" not in render_text(d):
            continue
        said += 1
        roofless = d.placed["pct_of_roof"].isna() & d.placed["time_s"].notna()
        if d.placed.loc[roofless, "time_s"].sum() >= 0.05 * d.placed["time_s"].sum():
            faults.append(f"{path.name}: {int(roofless.sum())} of {len(d.placed)} launches have no roof")
    assert said >= 3 and not faults, "\n".join(faults)


def test_silu_uncoalesced_message_names_the_stores_and_the_sector_counts(realdata: Path) -> None:
    """H100 silu_kernel_vector: 128-bit loads at 16 sectors a request are fine; the stores carry the excess,
    4-byte stores 16 bytes apart."""
    d = cached_diagnosis(realdata / "AlpriElse__cs599k" / "2025-04-21-vector-based.ncu-rep")
    [f] = by_rule(d, "uncoalesced-access")
    ev = f.evidence
    assert ev["global_sectors_theoretical"][0] == 41943040 and ev["global_sectors_ideal"][0] == 16777216
    assert ev["excess"] == pytest.approx(2.5) and ev["excess_side"] == "stores"
    msg = f.message
    assert msg.startswith("silu_kernel_vector: uncoalesced global stores")
    assert "41.9M sectors requested per launch where 16.8M would do (2.5x" in msg
    assert "17.3M of the 25.2M extra from stores" in msg  # the loads can carry at most 8.39M - 0.52M
    # each thread stores its four results one word at a time, 16 bytes from its neighbour's (128-bit loads at
    # 16 sectors a request are fine): the stores' own count and the vector fix, not a per-request list
    assert msg.endswith("Stores: 16.0 sectors a request, 16-byte elements split: write them whole ("
                        "float4/int4/double2).")
    assert "little time at stake" in msg  # it runs at its roofline bound


def test_an_alu_bound_kernel_reading_16_byte_elements_piecewise_is_told_to_load_them_whole(realdata: Path) -> None:
    """GPUIndexSpaces bb before align=16 (pair t4.bb.align16: 16-byte aligned loads won 2.04 ms of 16.7 ms):
    the ALU pipe binds and its loads read 16-byte elements 3.5 bytes at a time; the wider loads cut load
    instructions and their address arithmetic, so binding-unit names them, priced as the ALU's relief."""
    d = cached_diagnosis(realdata / "eschnett__GPUIndexSpaces" / "profile.db02bc1e7d.ncu-rep")
    [f] = by_rule(d, "binding-unit")
    assert d.findings[0] is f and f.time_at_stake_s == pytest.approx(8.52e-3, rel=1e-3)
    assert f.message.endswith("Global loads: 13.1 sectors a request, 3.5 bytes a thread: 16-byte elements read "
                              "piecewise. Load them whole (float4/int4/double2, 16-B aligned): one wider load, and its "
                              "address arithmetic, for several.")
    [u] = by_rule(d, "uncoalesced-access")
    assert u.message.endswith("Loads: 13.1 sectors a request, 16-byte elements split: read them whole ("
                              "float4/int4/double2). Overlaps binding-unit: not in addition.")


def test_unknown_sector_counts_are_left_out(realdata: Path) -> None:
    """BBAStar's initializeBiNodes has no global loads: no '? sectors per load request'."""
    d = cached_diagnosis(realdata / "HadiKhansaa__BBAStar" / "profile_output.ncu-rep")
    [f] = by_rule(d, "uncoalesced-access")
    assert "?" not in f.message and "loads" not in f.message
    assert "all 241M extra from stores" in f.message and "stores 32.0" in f.message
    assert "up to 10.3 ms of 15.1 ms at stake" in f.message


def test_markdown_escapes_kernel_names_in_advice() -> None:
    name = "gemm<float, 4>_v*2|`x`"
    d = diagnose_rows([point(name, 100.0, 0.25 * 30.9e12)])
    md = render_markdown(d)
    [line] = [x for x in md.splitlines() if x.startswith("1. **below-roof**")]
    assert "gemm\\<float, 4\\>\\_v\\*2\\|\\`x\\`" in line
    assert name not in line
    [row] = [x for x in md.splitlines() if x.startswith("| `` gemm")]  # a fence longer than the name's backticks
    assert row.startswith("| `` gemm<float, 4>_v*2\\|`x` `` |")


def test_grid_with_fewer_blocks_than_sms(realdata: Path) -> None:
    """cuBLAS sgemm on a 2080 Ti: 50 blocks for 68 SMs; the idle SMs, not 'occupancy', are the cause."""
    d = cached_diagnosis(realdata / "tanvisharma__nsight-compute-files" / "3136_64_64_rtx2080ti_sgemm.ncu-rep")
    row = d.placed.iloc[0]
    assert (row["grid_size"], row["sm_count"]) == (50, 68)
    finding = next(f for f in d.findings if f.rule == "grid-underfill")
    assert finding.evidence["idle_sms"] == 18 and finding.evidence["idle_fraction"] == pytest.approx(18 / 68)
    assert finding.time_at_stake_s == pytest.approx(min(row["time_s"] * 18 / 68, row["headroom_s"]))
    assert "50 blocks for 68 SMs: 18 SMs (26%) do nothing" in finding.message
    assert not any(f.rule == "low-occupancy" for f in d.findings)


def test_stalls_for_want_of_warps_come_after_the_grid_that_holds_too_few(realdata: Path) -> None:
    """The same cuBLAS sgemm: its warps stall (7.35 us, long scoreboard 34%, under one warp ready a
    cycle) because 50 blocks leave 18 of 68 SMs idle; warp-stalls names grid-underfill (2.84 us) as its
    cause, so grid-underfill leads and the header says why the larger stake comes second."""
    path = realdata / "tanvisharma__nsight-compute-files" / "3136_64_64_rtx2080ti_sgemm.ncu-rep"
    d = cached_diagnosis(path)
    ranked = [(f.rule, round(f.time_at_stake_s * 1e6, 2)) for f in d.findings if f.time_at_stake_s]
    assert ranked == [("grid-underfill", 2.84), ("warp-stalls", 7.35)]
    stalls = d.findings[1]
    assert stalls.evidence["caused_by"] == "grid-underfill" and stalls.evidence["overlaps"] == "grid-underfill"
    assert "the grid holds too few warps (grid-underfill)" in stalls.message
    text = render_text(d)
    assert "Advice (largest time at stake first, a cause before the stalls it explains):" in text
    plain = cached_diagnosis(realdata / "HadiKhansaa__BBAStar" / "profile_output.ncu-rep")
    assert "Advice (largest time at stake first):" in render_text(plain)


def test_the_cause_comes_before_the_symptom_and_stakes_are_not_added(realdata: Path) -> None:
    """BBAStar initializeBiNodes: stores 8x uncoalesced saturate L2 (89%) and L1 (78%); the lg-throttle
    stalls and the low occupancy are symptoms of the full store queue, not causes."""
    d = cached_diagnosis(realdata / "HadiKhansaa__BBAStar" / "profile_output.ncu-rep")
    row = d.placed.set_index("kernel").loc["initializeBiNodes"]
    assert row["binding_unit"] == "l2" and row["binding_unit_share"] == pytest.approx(0.89, abs=0.01)
    mine = [f for f in d.findings if f.kernels == ("initializeBiNodes",) and f.time_at_stake_s]
    # the cause alone: 7/8 of the L1 and L2 sectors go, the binding L2's 15.1 ms shrink to 1.9 ms and
    # DRAM (32% busy: 4.85 ms at its practical roof) binds: 10.3 ms to win
    assert [f.rule for f in mine] == ["uncoalesced-access"]
    assert mine[0].time_at_stake_s == pytest.approx(row["time_s"] - row["unit_dram_s"], rel=1e-6)
    # at its binding unit's limit the symptoms are not named (the stall rule needs a launch below it)
    named = {f.rule for f in d.findings if f.kernels == ("initializeBiNodes",)}
    assert not named & {"warp-stalls", "low-occupancy"}


def test_no_stake_above_its_launches_time_and_no_numpy_warning(realdata: Path, ncu_examples: Path) -> None:
    """Every real report and example: each finding's stake within [0, its launches' time], and the
    model and rules run without a NumPy RuntimeWarning (an empty mean, 0/0)."""
    import warnings

    from conftest import cached_table

    checked = 0
    for path in [*_real_inputs(realdata), *sorted(ncu_examples.glob("*/*.ncu-rep"))]:
        try:
            table = cached_table(path)
        except NcuRoofError:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            d = diagnose_table(table)
        for f in d.findings:
            rows = d.placed[d.placed["id"].isin(f.ids) & (d.placed["report"] == f.report if f.report else True)]
            stake = f.time_at_stake_s or 0.0
            assert 0.0 <= stake <= float(rows["time_s"].sum()) * (1 + 1e-9), (path.name, f.rule, f.message)
            checked += 1
    assert checked >= 90


SOURCE_ADVICE = ("__launch_bounds__", "Pad the array", "consecutive threads", "Write a*b+c", "Use a multiple of 32",
                 "Split the work", "Fill whole waves", "Make neighbouring threads", "Use FP32 where accuracy",
                 "Cut its work", "Tile in shared memory", "load whole words")


def test_advice_fits_the_kernel_and_the_device_on_every_real_report(realdata: Path, ncu_examples: Path) -> None:
    """No feature the device lacks (TF32/BF16 before Ampere, FP8 before Ada, tensor cores where there
    are none), no source-level advice for a library kernel, no tail where the grid runs many waves."""
    from ncu_roof.rules.common import has_tensor_cores
    from ncu_roof.rules.library import library_of

    checked = 0
    for path in [*_real_inputs(realdata), *sorted(ncu_examples.glob("*/*.ncu-rep"))]:
        try:
            d = cached_diagnosis(path)
        except NcuRoofError:
            continue
        for f in d.findings:
            rows = d.placed[d.placed["id"].isin(f.ids) & (d.placed["report"] == f.report if f.report else True)]
            if rows.empty:
                continue
            row = rows.iloc[0].to_dict()
            cc = str(row.get("cc") or "")
            major = int(cc.split(".")[0]) if cc[:1].isdigit() else None
            if major is not None and major < 8:
                assert "TF32" not in f.message and "BF16" not in f.message, f.message
            if major is not None and (major < 8 or cc == "8.6"):
                assert "FP8" not in f.message, f.message
            if not has_tensor_cores(row):
                assert "tensor cores (" not in f.message and "tensor-core math" not in f.message, f.message
            if library_of(row) is not None:
                assert not [p for p in SOURCE_ADVICE if p in f.message], f.message
            waves = rows["waves"].max() if "waves" in rows else float("nan")
            if waves == waves and waves > 4:
                assert "a tail" not in f.message and f.rule != "wave-tail", f.message
            checked += 1
    assert checked >= 90


def test_reports_with_and_without_a_dram_peak_diagnose_together_without_numpy_warnings(realdata: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # "All-NaN axis encountered" reached stderr
        d = diagnose_paths([realdata / "AlpriElse__cs599k" / "2025-04-21-vector-based.ncu-rep",
                            realdata / "brycelelbach__nsightful" / "copy_blocked.csv"])
    assert len(d.placed["report"].unique()) == 2


def test_a_rule_speaks_from_what_each_input_has_when_inputs_are_read_together(realdata: Path) -> None:
    """Lashi0812: the CSV export has only ncu's bytes used per sector of global loads, the report the
    sector and request counts; read together, the rule runs on both and the CSV's kernels are told
    from what they have (it crashed on an empty list of sides before)."""
    folder = realdata / "Lashi0812__CudaProgramming"
    d = diagnose_paths([folder / "ncu_reduceInteger.csv", folder / "torchLinear.ncu-rep"])
    [f] = [f for f in d.findings if f.rule == "uncoalesced-access" and "reduceNeighbored" in f.kernels]
    assert "Global loads use 25% of the bytes of each 32-byte sector they fetch (4.0x the sectors the data " \
           "needs)." in " ".join(f.message.split())
    assert f.evidence["excess_side"] == "loads"


def test_pytorch_random_number_kernels_are_told_they_may_be_a_benchmarks_input_setup(realdata: Path) -> None:
    """flyinglandlord's sglang report: the attention launch is empty, the RNG kernels that made its
    inputs take all the time; their findings say so instead of 'change the call'."""
    from ncu_roof.rules.library import fix_text

    d = cached_diagnosis(realdata / "flyinglandlord__sglang" / "profile.ncu-rep")
    rng = [f for f in d.findings if f.kernels == ("distribution_elementwise_grid_stride_kernel",)
           and f.rule in ("binding-unit", "wave-tail")]
    assert [f.rule for f in rng] == ["binding-unit", "wave-tail"]
    for f in rng:
        assert ("A PyTorch random-number kernel (torch.rand, dropout): if it only makes a benchmark's inputs, "
                "profile without it.") in f.message, f.message
    other = fix_text({"kernel": "vectorized_elementwise_kernel"}, "x")
    assert other.startswith("A PyTorch ATen kernel: change the call")
