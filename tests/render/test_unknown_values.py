"""What a reader sees where a number is unknown or tiny: never ``nan`` or ``?``, whole nanoseconds at
most, and one number for one roof in every output of a report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import cached_diagnosis, roofless_diagnosis

from ncu_roof.fmt import UNKNOWN, fmt_pct, fmt_seconds, fmt_si, prose_seconds
from ncu_roof.render.html import render_html
from ncu_roof.render.renderers import RENDERERS
from ncu_roof.render.summary import roof_lines

# reports without byte or FLOP counters (basic sets, --metrics only): their cross-examination of ncu's
# rules once read "at nan% of its ? roof", and their tables "nan" for an unnamed device
NO_COUNTERS = [
    "jonahshader__alife_cuda/profile_output.ncu-rep", "AveryClapp__ESMM-Research/profile.049ec61252.ncu-rep",
    "josiahls__cuda_learning_mojo/profile.ncu-rep", "zloyaloha__GPU-programming/profile_report.ncu-rep",
    "Alconno__cuda_ai_cpp/profile_report.ncu-rep", "Lashi0812__CudaProgramming/ncu_reduceInteger.csv",
    "GOATnote-Inc__robogoat/metrics.csv",
]
# a value printed as nan, a lone '?' cell or word, sub-nanosecond digits
BAD = re.compile(r"\bnan\b|nan%|(?:^|[\s(|])\?(?:$|[\s)|,;%])|\d\.\d+ ns\b", re.IGNORECASE)


def _bad(text: str) -> list[str]:
    return [line for line in text.splitlines() if BAD.search(line)]


@pytest.mark.parametrize("path", NO_COUNTERS)
def test_no_nan_or_question_mark_in_any_output(realdata: Path, path: str) -> None:
    d = cached_diagnosis(realdata / path)
    for name, render in RENDERERS.items():
        text = render(d)
        assert not _bad(text), (name, _bad(text)[:3])
    reasons = [r["reason"] for r in json.loads(RENDERERS["json"](d)).get("ncu_rules", [])]
    assert not any("nan" in r or "?" in r for r in reasons)
    html = re.sub(r"<script.*?</script>", "", render_html(d), flags=re.S)
    assert not _bad(re.sub(r"<[^>]+>", " ", html))


def test_alife_cross_examination_says_the_roof_is_unknown(realdata: Path) -> None:
    """jonahshader's alife (RTX 2070 SUPER, basic set): no roof percentage to quote, so none is."""
    d = cached_diagnosis(realdata / "jonahshader__alife_cuda/profile_output.ncu-rep")
    reasons = [r["reason"] for r in json.loads(RENDERERS["json"](d))["ncu_rules"]]
    assert any("its roof percentage unknown" in r for r in reasons)


@pytest.mark.parametrize(("seconds", "text"), [
    (1.36e-10, "<1 ns"), (0.0, "0 ns"), (50.7e-9, "51 ns"), (999.4e-9, "999 ns"), (999.7e-9, "1 us"),
    (1.234e-6, "1.23 us"), (float("nan"), UNKNOWN), (None, UNKNOWN),
])
def test_times_print_at_most_whole_nanoseconds(seconds: float | None, text: str) -> None:
    assert fmt_seconds(seconds) == text


def test_unknown_is_a_dash_in_tables_and_a_word_in_prose() -> None:
    assert UNKNOWN == "-" and fmt_pct(float("nan")) == "-" and fmt_si(None, "B/s") == "-"
    assert prose_seconds(float("nan")) == "unknown" and prose_seconds(2e-3) == "2 ms"


def test_one_number_per_roof_in_every_output(realdata: Path) -> None:
    """MW_Baseline (V100): the report's FP64 peak is a rate x each launch's clock (6.63, 6.57 and 6.58
    TFLOP/s over its three long launches); the summary, the findings and the chart now say one
    number. The two 11-13 us halo launches ran at clocks 40-50% lower: roofs of their own."""
    d = cached_diagnosis(realdata / "NCAR__GPU_workshop/MW_Baseline.ncu-rep")
    long = d.placed[d.placed["time_s"] > 1e-3]
    fp64 = long["peak_fp64_flops_per_s"]
    assert len(fp64) == 3 and fp64.nunique() == 1 and fp64.iloc[0] == pytest.approx(6.568e12, rel=1e-3)
    text = RENDERERS["text"](d)
    assert re.findall(r"(\d+\.\d+) TFLOP/s vs 13.1 TFLOP/s", text) == ["6.57"]
    assert "FP32 (6.57 TFLOP/s vs 13.1 TFLOP/s)" in text
    assert "6.63" not in text and "6.58" not in text
    assert roof_lines(d.placed)[0].startswith("Roofs on Tesla V100-SXM2-32GB: fp64 mixed (80% of FMA rate) "
                                              "5.26 TFLOP/s (report); fp32 FMA 13.1 TFLOP/s (FP32 FLOPs here, "
                                              "not binding); DRAM 784 GB/s")
    assert "5.26 TFLOP/s" in render_html(d)


def test_where_nothing_is_ranked_ncus_own_estimates_are_listed(realdata: Path) -> None:
    """copy_blocked.csv (expert read 4, M2): no GPU named, no roof, so no finding; the Advice line points to
    Nsight Compute's rules 'below', which listed only a count. Its kernel-wide estimates are listed, largest
    first, with the first sentence of ncu's text (UncoalescedGlobalAccess: 75% of the sectors excessive); a
    local estimate (HighPipeUtilization's 98.9%, one unit's) is not."""
    d = roofless_diagnosis(realdata / "brycelelbach__nsightful" / "copy_blocked.csv")  # its T4 left unnamed
    for name in ("text", "markdown"):
        out = RENDERERS[name](d).replace("copy\\_blocked", "copy_blocked")  # Markdown escapes the underscore
        assert ("UncoalescedGlobalAccess on copy_blocked: ncu estimates 74%: This kernel has uncoalesced global "
                "accesses resulting in a total of 25165824 excessive sectors (75% of the total 33554432 "
                "sectors).") in " ".join(out.split()), name
        assert "HighPipeUtilization on copy_blocked" not in out
    # with its T4 inferred from its clock, below-roof ranks (70% of its DRAM roof) but names no cause: ncu's
    # estimates for the kernel are still listed, under their own heading after the disagreements
    inferred = RENDERERS["text"](cached_diagnosis(realdata / "brycelelbach__nsightful" / "copy_blocked.csv"))
    assert "1. (high) below-roof [6.37 ms at stake]" in inferred
    tail = " ".join(inferred[inferred.index("Where no rule names a cause, Nsight Compute estimates:"):].split())
    assert tail.startswith("Where no rule names a cause, Nsight Compute estimates: - UncoalescedGlobalAccess on "
                           "copy_blocked: ncu estimates 74%: This kernel has uncoalesced global accesses")
    # a report with ranked findings lists no such line (alife: its disagreements, if any, only)
    assert "ncu estimates 74%" not in RENDERERS["text"](cached_diagnosis(realdata / "jonahshader__alife_cuda" /
                                                                         "profile_output.ncu-rep"))
