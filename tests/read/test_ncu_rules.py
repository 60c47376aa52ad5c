"""Nsight Compute's own rule results: read alike from .ncu-rep and CSV, and cross-examined with the roofline.

Measured truth for the example pairs (Nsight Compute's examples, RTX A4500, their README.TXT):
addConstDouble3 89.86 us -> addConstDouble 89.73 us (0.1%; ncu estimated 64.7% from coalescing);
transposeCoalesced 1420.8 us -> transposeNoBankConflicts 997.6 us (29.8%; ncu 93.7% for bank
conflicts); sobelDouble 628.0 us -> sobelFloat 31.9 us (94.9%; ncu 80.7% for FP64).
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any, get_args

import pandas as pd
import pytest
from conftest import cached_diagnosis, cached_table, ncu_env

from ncu_roof.diagnosis import Diagnosis, to_dict
from ncu_roof.errors import ReportLoadError
from ncu_roof.model.roofline import Thresholds
from ncu_roof.read.ncu_rules import from_rep_dict, plain_message, rule_record
from ncu_roof.read.table import load_table
from ncu_roof.rules.base import Finding
from ncu_roof.rules.crossexam import ADVICE, Advice, Launches, Verdict, disagreements, judge

KEYS = {"id", "rule", "section", "type", "title", "message", "speedup_pct", "speedup_type"}
VERDICT_KEYS = {"rule", "kernels", "ids", "ncu_message", "ncu_estimated_speedup_pct", "verdict",
                "roofline_cap_pct", "reason"}
# Reports Debian's ncu 2024.1.1 can import (written by 2024.1 or older), with stored rule results.
IMPORTABLE = [
    "NCAR__GPU_workshop/MW_Baseline.ncu-rep",
    "tanvisharma__nsight-compute-files/3136_64_64_rtx2080ti_sgemm.ncu-rep",
    "AveryClapp__ESMM-Research/profile_output.a62323b2dd.ncu-rep",
    "bwd29__self-join-MiSTIC/profileTINYK1.out.ncu-rep",
    "eschnett__IndexSpaces.jl/profile.74de19f3d8.ncu-rep",
    "tkhenry-uofa__mixes-reconstruction/full_profile.ncu-rep",
    "NVIDIA__nsight-training/manual_nvtx.ncu-rep",
]
EXAMPLES = ["uncoalescedGlobalAccesses/addConstDouble3", "uncoalescedGlobalAccesses/addConstDouble",
            "sharedBankConflicts/transposeCoalesced", "sharedBankConflicts/transposeNoBankConflicts",
            "instructionMix/sobelDouble", "instructionMix/sobelFloat"]


# --- the record schema --------------------------------------------------------------------------
def test_markup_is_rendered_as_the_csv_export_prints_it() -> None:
    text = ("Start with the @section:MemoryWorkloadAnalysis:Memory Workload Analysis@ section. See the "
            "@url:CUDA Programming Guide:https://docs.nvidia.com/cuda/x.html#y@ and @source:14a6:0x14a6@.")
    assert plain_message(text) == ("Start with the Memory Workload Analysis section. See the CUDA Programming "
                                   "Guide (https://docs.nvidia.com/cuda/x.html#y) and 0x14a6.")


def test_rep_dict_and_csv_row_make_the_same_record() -> None:
    rep = from_rep_dict(3, {"rule_identifier": "UncoalescedGlobalAccess", "name": "Uncoalesced Global Accesses",
                            "section_identifier": "SourceCounters",
                            "rule_message": {"title": "", "message": "See @section:Occupancy:Occupancy@.",
                                             "type": 2},
                            "speedup_estimation": {"type": 2, "speedup": 64.6723990142505}})
    csv = rule_record(3, "UncoalescedGlobalAccess", "SourceCounters", "OPT", None, "See Occupancy.", 64.67,
                      "global")
    assert rep is not None and csv is not None and set(rep) == set(csv) == KEYS
    assert {k: rep[k] for k in KEYS - {"speedup_pct"}} == {k: csv[k] for k in KEYS - {"speedup_pct"}}
    assert rep["speedup_pct"] == pytest.approx(csv["speedup_pct"], abs=0.005)
    assert (rep["type"], rep["title"], rep["speedup_type"]) == ("OPT", None, "global")
    # MsgType 3 is WRN, 4 ERR; an empty NONE result (type 0) is dropped like CSV exports drop it
    assert rule_record(0, "R", None, 3, None, "m", None, None)["type"] == "WRN"  # type: ignore[index]
    assert rule_record(0, "R", None, 4, None, "m", None, None)["type"] == "ERR"  # type: ignore[index]
    assert rule_record(0, "R", None, 0, None, "", None, None) is None
    none = rule_record(0, "R", None, "", None, "No pipeline is over-utilized.", None, "")
    assert none is not None and none["type"] == "0" and math.isnan(none["speedup_pct"])


# --- the same rule results from .ncu-rep and ncu's own details CSV export --------------------------
def _details_csv(ncu: Path, report: Path, tmp: Path) -> Path:
    result = subprocess.run([str(ncu), "--import", str(report), "--csv", "--page", "details"],
                            capture_output=True, text=True, env=ncu_env(tmp), timeout=300)
    assert result.returncode == 0, result.stderr
    out = tmp / "details.csv"
    out.write_text(result.stdout)
    return out


def _comparable(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Records without the title (CSV exports have none), speedups at the CSV's 4 significant digits."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        pct = r["speedup_pct"]
        return (r["id"], r["rule"], r["section"], r["type"], r["message"],
                None if math.isnan(pct) else float(f"{pct:.4g}"), r["speedup_type"])
    return sorted((key(r) for r in records), key=str)


@pytest.mark.parametrize("name", [f"example:{e}" for e in EXAMPLES] + IMPORTABLE)
def test_report_and_details_export_give_the_same_rule_results(
    name: str, ncu_exe: Path, tmp_path: Path, realdata: Path
) -> None:
    examples = ncu_exe.parents[2] / "share" / "doc" / "nsight-compute" / "examples"
    report = examples / f"{name[8:]}.ncu-rep" if name.startswith("example:") else realdata / name
    if not report.is_file():
        pytest.skip(f"{report} is not here")
    from_rep = load_table(report).attrs["ncu_rule_results"]
    from_csv = load_table(_details_csv(ncu_exe, report, tmp_path)).attrs["ncu_rule_results"]
    assert from_rep and all(set(r) == KEYS | {"report"} for r in [*from_rep, *from_csv])
    assert _comparable(from_rep) == _comparable(from_csv)


# --- the example pairs: ncu-roof near the measured truth, ncu's far-off estimates capped -----------
@pytest.fixture(scope="module")
def examples(ncu_examples: Path) -> dict[str, Diagnosis]:
    return {e.split("/")[1]: cached_diagnosis(ncu_examples / f"{e}.ncu-rep") for e in EXAMPLES}


def _verdict(d: Diagnosis, rule: str) -> dict[str, Any]:
    [record] = [r for r in d.ncu_rules if r["rule"] == rule]
    return record


def test_coalescing_estimate_is_capped_by_the_dram_roof(examples: dict[str, Diagnosis]) -> None:
    """ncu: 64.7% from coalescing; measured 89.86 -> 89.73 us (0.1%); the kernel is at its DRAM roof."""
    before, after = examples["addConstDouble3"], examples["addConstDouble"]
    measured = 1 - after.total_time_s / before.total_time_s
    assert before.total_time_s == pytest.approx(89.856e-6, rel=1e-3) and measured < 0.01
    r = _verdict(before, "UncoalescedGlobalAccess")
    assert r["ncu_estimated_speedup_pct"] == pytest.approx(64.67, abs=0.01) and r["ids"] == [0]
    assert r["verdict"] == "capped" and r["roofline_cap_pct"] <= 10.0
    assert r["roofline_cap_pct"] == pytest.approx(measured * 100, abs=10.0)
    assert "uncoalesced-access" in r["reason"] and "64.7%" in r["reason"]
    # 31.1% from FP32 math and 11.7% from occupancy on a kernel at its DRAM roof (capped instead where a
    # limiter rule of ncu-roof's names the same thing with nothing at stake)
    for rule in ("SOLFPRoofline", "AchievedOccupancy"):
        other = _verdict(before, rule)
        assert other["verdict"] in ("not-the-limiter", "capped") and other["roofline_cap_pct"] == 0.0, other


def test_bank_conflict_estimate_is_capped_near_the_measured_win(examples: dict[str, Diagnosis]) -> None:
    """ncu: 93.7% (87.2% for shared loads); measured 1420.8 -> 997.6 us (29.8%); ncu-roof caps at 29.6%."""
    before, after = examples["transposeCoalesced"], examples["transposeNoBankConflicts"]
    measured = (1 - after.total_time_s / before.total_time_s) * 100
    assert measured == pytest.approx(29.8, abs=0.1)
    for rule, estimate in (("UncoalescedSharedAccess", 93.68), ("SharedMemoryConflicts", 87.2)):
        r = _verdict(before, rule)
        assert r["ncu_estimated_speedup_pct"] == pytest.approx(estimate, abs=0.05)
        assert r["verdict"] == "capped" and r["findings"] == ["bank-conflicts"]
        assert 20.0 <= r["roofline_cap_pct"] <= 40.0
        assert r["roofline_cap_pct"] == pytest.approx(measured, abs=1.0)  # 29.6% against 29.8% measured
    pipes = _verdict(before, "HighPipeUtilization")  # "all compute pipelines are under-utilized": 96.2% (local)
    assert pipes["verdict"] == "capped" and pipes["roofline_cap_pct"] <= 29.7
    for r in after.ncu_rules:  # the fixed kernel is at its DRAM roof: nothing left to win
        assert r["verdict"] in ("not-the-limiter", "capped") and r["roofline_cap_pct"] <= 1.0, r


def test_fp64_estimate_agrees_where_ncu_is_right(examples: dict[str, Diagnosis]) -> None:
    """ncu: 80.7% from FP32 instead of FP64; measured 628 -> 31.9 us (94.9%); ncu-roof says 98.2%."""
    before, after = examples["sobelDouble"], examples["sobelFloat"]
    measured = (1 - after.total_time_s / before.total_time_s) * 100
    assert measured == pytest.approx(94.9, abs=0.1)
    r = _verdict(before, "SOLFPRoofline")
    assert r["ncu_estimated_speedup_pct"] == pytest.approx(80.7, abs=0.05)
    assert r["verdict"] == "agrees" and r["roofline_cap_pct"] >= 80.0
    assert r["roofline_cap_pct"] == pytest.approx(measured, abs=5.0)
    assert set(r["findings"]) & {"fp64-pipe", "fp64-on-consumer-gpu"}


def test_summaries_show_only_the_disagreements_that_matter(examples: dict[str, Diagnosis]) -> None:
    from ncu_roof.render.markdown import render_markdown
    from ncu_roof.render.text import render_text

    d = examples["transposeCoalesced"]
    shown = disagreements(d.ncu_rules, d.total_time_s)
    assert [r["rule"] for r in shown] == ["HighPipeUtilization", "UncoalescedSharedAccess", "SharedMemoryConflicts"]
    text = render_text(d)
    assert "Nsight Compute's estimates the roofline contradicts:" in text
    assert "- UncoalescedSharedAccess on transposeCoalesced: capped: ncu-roof's bank-conflicts finding puts at most " \
           "29.6% of the time at stake (at 70% of its DRAM roof); ncu estimates 93.7%." in " ".join(text.split())
    assert "IssueSlotUtilization on" not in text  # 9.8% against a 29.6% cap: no disagreement
    assert "## Nsight Compute's estimates the roofline contradicts" in render_markdown(d)
    assert not disagreements(examples["sobelDouble"].ncu_rules, examples["sobelDouble"].total_time_s)


def test_json_lists_the_verdicts(examples: dict[str, Diagnosis]) -> None:
    out = to_dict(examples["sobelDouble"])
    assert out["ncu_rules"] and all(VERDICT_KEYS <= set(r) for r in out["ncu_rules"])
    r = next(r for r in out["ncu_rules"] if r["rule"] == "HighPipeUtilization")
    assert r["ncu_estimated_speedup_pct"] is None  # no estimate: null, never NaN or 0
    assert r["verdict"] == "agrees"


# --- every stored result judged, every agreement backed by a finding ------------------------------
def _all_reports(realdata: Path, examples: Path | None) -> list[Path]:
    found = sorted(realdata.glob("*/*.ncu-rep")) + sorted(realdata.glob("*/*.csv"))
    return found + (sorted(examples.glob("*/*.ncu-rep")) if examples else [])


def test_every_big_estimate_is_judged_and_every_agreement_has_a_finding(realdata: Path, ncu_exe: Path) -> None:
    examples = ncu_exe.parents[2] / "share" / "doc" / "nsight-compute" / "examples"
    checked = 0
    for path in _all_reports(realdata, examples if examples.is_dir() else None):
        try:
            table = cached_table(path)
        except ReportLoadError:  # a failed run's log: no CSV, so no rules
            continue
        d, stored = cached_diagnosis(path), table.attrs["ncu_rule_results"]  # diagnose_table(table), kept
        judged = {(r["report"], i, r["rule"]) for r in d.ncu_rules for i in r["ids"]}
        for s in stored:
            if s["type"] in ("OPT", "WRN") and s["speedup_pct"] >= 10.0:
                assert (str(path), s["id"], s["rule"]) in judged, (path, s)
                checked += 1
        for r in d.ncu_rules:
            assert r["verdict"] in get_args(Verdict) and r["reason"]
            if r["verdict"] in ("agrees", "underestimated"):  # both name a finding of ours that matches
                mapped = ADVICE[r["rule"]].findings
                assert any(f.rule in mapped and f.report == r["report"] and set(f.ids) & set(r["ids"])
                           for f in d.findings), (path, r)
    assert checked >= 300  # alife alone stores 263 results of 10% or more


# --- the verdict rules on their own ---------------------------------------------------------------
TH = Thresholds()
AT_DRAM_ROOF = Launches(time_s=100e-6, floor_s=95e-6, pct_of_roof=95.0, binding="dram", missing=())
BELOW_ROOF = Launches(time_s=100e-6, floor_s=40e-6, pct_of_roof=40.0, binding="dram", missing=())
OCCUPANCY, COALESCING, FP64 = ADVICE["AchievedOccupancy"], ADVICE["UncoalescedGlobalAccess"], ADVICE["SOLFPRoofline"]


def _finding(rule: str, stake: float) -> Finding:
    return Finding(rule, ("k",), None, "high", "m", stake, ids=(0,), report="r")


@pytest.mark.parametrize(("advice", "launches", "estimate", "matched", "verdict", "cap"), [
    (OCCUPANCY, AT_DRAM_ROOF, 30.0, [], "not-the-limiter", 5.0),  # occupancy advice at 95% of the DRAM roof
    (FP64, AT_DRAM_ROOF, 30.0, [], "not-the-limiter", 5.0),  # faster math under a memory roof
    (COALESCING, BELOW_ROOF, 80.0, [], "capped", 60.0),  # more than the roofline leaves
    (COALESCING, BELOW_ROOF, 64.0, [], "cannot-judge", 60.0),  # within the 5-point margin: not refuted
    (OCCUPANCY, BELOW_ROOF, 30.0, [], "cannot-judge", 60.0),  # room for it, nothing to confirm it
    (COALESCING, BELOW_ROOF, 80.0, [(_finding("uncoalesced-access", 0.0), 0.0)], "capped", 0.0),
    (COALESCING, BELOW_ROOF, 20.0, [(_finding("uncoalesced-access", 30e-6), 30.0)], "agrees", 30.0),
    # a matching finding agrees within a factor of 2 (or both under 5% of the time), else says which is lower
    (COALESCING, BELOW_ROOF, 20.0, [(_finding("uncoalesced-access", 40e-6), 40.0)], "agrees", 40.0),
    (COALESCING, BELOW_ROOF, 20.0, [(_finding("uncoalesced-access", 41e-6), 41.0)], "underestimated", 41.0),
    (COALESCING, BELOW_ROOF, 20.0, [(_finding("uncoalesced-access", 9e-6), 9.0)], "capped", 9.0),
    (COALESCING, BELOW_ROOF, 0.4, [(_finding("uncoalesced-access", 4.9e-6), 4.9)], "agrees", 4.9),
    (COALESCING, BELOW_ROOF, 0.4, [(_finding("uncoalesced-access", 74.8e-6), 74.8)], "underestimated", 74.8),
    (None, BELOW_ROOF, 20.0, [], "cannot-judge", 60.0),  # a rule ncu-roof has no mapping for
])
def test_verdicts(advice: Advice | None, launches: Launches, estimate: float,
                  matched: list[tuple[Finding, float]], verdict: str, cap: float) -> None:
    got, got_cap, reason = judge(advice, launches, estimate, "global", matched, TH)
    assert (got, got_cap) == (verdict, pytest.approx(cap))
    assert f"{estimate:.1f}%" in reason and (not matched or f"{cap:.1f}%" in reason)  # both numbers


def test_without_a_roof_it_says_what_is_missing() -> None:
    s = Launches(time_s=1e-3, floor_s=math.nan, pct_of_roof=math.nan, binding=None, missing=("dram_bytes", "roof"))
    verdict, cap, reason = judge(COALESCING, s, 70.0, "global", [], TH)
    assert verdict == "cannot-judge" and math.isnan(cap) and "missing: dram_bytes, roof" in reason


def test_html_table_escapes_every_string() -> None:
    from ncu_roof.render.html import _ncu_rules

    bad = '<script>alert(1)</script>&"x"'
    record = {"rule": bad, "report": bad, "kernels": [bad], "ids": [0], "type": bad, "ncu_message": bad,
              "ncu_estimated_speedup_pct": 50.0, "ncu_speedup_type": bad, "verdict": bad,
              "roofline_cap_pct": 10.0, "reason": bad, "findings": [], "time_s": 1.0}
    d = Diagnosis(pd.DataFrame(), pd.DataFrame(), [], [], ncu_rules=[record])
    html = _ncu_rules(d)
    # each field once; the verdict three times (the count line above the folded table: class and text)
    assert "<script>" not in html and html.count("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&quot;") == 10


def test_html_table_counts_launches_and_puts_the_largest_time_at_stake_first() -> None:
    from ncu_roof.render.html import _ncu_rules

    def record(rule: str, ids: list[int], time_s: float, est: float) -> dict[str, Any]:
        return {"rule": rule, "report": "r", "kernels": ["k"], "ids": ids, "type": "OPT", "ncu_message": "m",
                "ncu_estimated_speedup_pct": est, "ncu_speedup_type": "global", "verdict": "capped",
                "roofline_cap_pct": 1.0, "reason": "x", "findings": [], "time_s": time_s}

    halo = record("HaloRule", list(range(18)), 12e-6 * 18, 50.0)  # 18 launches of 12 us: 108 us at stake
    big = record("BigRule", [3], 6.19e-3, 20.0)  # one 6.19 ms launch: 1.24 ms at stake
    d = Diagnosis(pd.DataFrame(), pd.DataFrame(), [], [], ncu_rules=[halo, big])
    html = _ncu_rules(d)
    assert html.index("BigRule") < html.index("HaloRule")
    ids = ", ".join(str(i) for i in range(18))
    assert f'<td class="num" title="launch IDs {ids}">18</td>' in html  # a count; the IDs on hover


# --- rule results as columns, and their groups --------------------------------------------------
def _result(launch: int, rule: str, message: str, pct: float, kind: str = "OPT", **extra: Any) -> dict[str, Any]:
    record = rule_record(launch, rule, None, kind, None, message, pct, "global")
    assert record is not None
    return {**record, **extra}


def test_rule_results_keep_each_record_once_and_hand_out_copies() -> None:
    from ncu_roof.read.ncu_rules import RuleResults

    shared = {k: v for k, v in _result(0, "CPIStall", "Stalls: 10%.", 10.0).items() if k != "id"}
    one = RuleResults.of_columns([shared], [0, 1, 2], [0, 0, 0])
    other = RuleResults([_result(7, "Occupancy", "Low.", 5.0, report="given.ncu-rep")])
    both = RuleResults.concat([one, other], ["a.ncu-rep", None])
    assert len(both) == 4 and len(both.distinct) == 2
    assert [(r["id"], r["rule"], r["report"]) for r in both] == [
        (0, "CPIStall", "a.ncu-rep"), (1, "CPIStall", "a.ncu-rep"), (2, "CPIStall", "a.ncu-rep"),
        (7, "Occupancy", "given.ncu-rep")]
    assert list(both[-1]) == [*KEYS_IN_ORDER, "report"] and both[1:3] == list(both)[1:3]
    assert both[3] == {**_result(7, "Occupancy", "Low.", 5.0), "report": "given.ncu-rep"}
    both[0]["rule"] = "changed"
    assert both[0]["rule"] == "CPIStall" and shared["rule"] == "CPIStall"
    assert "report" not in one[0] and one == [{"id": i, **shared} for i in range(3)]
    with pytest.raises(IndexError):
        both[4]


KEYS_IN_ORDER = ["id", "rule", "section", "type", "title", "message", "speedup_pct", "speedup_type"]


def test_results_group_by_report_rule_kernel_and_message_up_to_numbers() -> None:
    """Groups come in the order of their first result, results in input order; a launch the table
    lacks is kernel "?", INF results are left out, and ncu's estimate is the time-weighted mean."""
    from ncu_roof.read.ncu_rules import RuleResults
    from ncu_roof.rules.crossexam import PlacedColumns, estimate_pct, group_results, summarize

    placed = pd.DataFrame({"report": ["a", "a", "a", "b"], "id": [0, 1, 2, 0], "kernel": ["k", "k", "j", "k"],
                           "time_s": [1.0, 3.0, 2.0, 4.0], "pct_of_roof": [50.0, 10.0, math.nan, 80.0],
                           "binding": ["dram", "compute", "dram", None], "missing": ["", "flops", "", "roof,x"],
                           "unit_lower_bound_s": [0.5, 1.0, 1.0, 2.0], "time_lower_bound_s": [0.5] * 4})
    results = RuleResults.concat([
        RuleResults([_result(0, "CPIStall", "Stalls cost 12% here.", 12.0), _result(2, "CPIStall", "Stalls.", 1.0),
                     _result(1, "CPIStall", "Stalls cost 40% here.", 40.0), _result(0, "Occupancy", "x", 3.0, "INF"),
                     _result(9, "CPIStall", "Stalls cost 5% here.", 5.0)]),
        RuleResults([_result(0, "CPIStall", "Stalls cost 7% here.", 7.0)]),
    ], ["a", "b"])
    launches = PlacedColumns(placed)
    groups = group_results(results, launches)
    assert [(g.report, g.ids, g.speedups) for g in groups] == [
        ("a", [0, 1], [12.0, 40.0]), ("a", [2], [1.0]), ("a", [9], [5.0]), ("b", [0], [7.0])]
    assert [launches.kernel_of(g.report, g.ids[0]) for g in groups] == ["k", "j", "?", "k"]
    assert estimate_pct(groups[0].ids, groups[0].speedups, launches.times()["a"]) == (12.0 * 1 + 40.0 * 3) / 4
    s = summarize(launches, [0, 1, 2], "all")
    assert (s.time_s, s.floor_s, s.pct_of_roof) == (6.0, 2.5, (50.0 * 1 + 10.0 * 3) / 4)
    assert s.binding == "dram" and s.missing == ("flops",)  # dram 1 + 2 s ties compute 3 s: the first seen
    assert summarize(launches, [3], "all").missing == ("roof",)
