"""Findings' source lines in Markdown, HTML (the hot lines with the report's own source text, escaped)
and the notebook's ``r.lines``, on real reports that carry their source (``--import-source yes``)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REALDATA

import ncu_roof
from ncu_roof.api import DiagnosisResult
from ncu_roof.render.html import render_html
from ncu_roof.render.markdown import render_markdown

MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
CUTLASS = REALDATA / "panjd123__cutlass" / "report-s4.ncu-rep"


@pytest.fixture(scope="module")
def mw(realdata: Path) -> DiagnosisResult:
    return ncu_roof.diagnose(MW)


@pytest.fixture(scope="module")
def cutlass(realdata: Path) -> DiagnosisResult:
    return ncu_roof.diagnose(CUTLASS)


def test_markdown_shows_the_top_lines_under_each_finding(mw: DiagnosisResult) -> None:
    md = mw.to_markdown()
    head = md.index("1. **fp64-pipe**")
    assert md[head:].splitlines()[1] == ("   - at miniWeather\\_mpi\\_openacc.F90:288, 32% of the FP64 instructions "
                                         "(155M): about 961 us")


def test_notebook_lines_frame_has_each_line_its_share_and_its_source(cutlass: DiagnosisResult) -> None:
    lines = cutlass.lines
    # CUTLASS's reference GEMM (a test-harness kernel: a note, its lines kept) reads A[k + i * lda] along k:
    # 99.97% of the kernel's excess sectors
    first = lines[lines["rule"] == "uncoalesced-access"].iloc[0]
    assert first["file"].endswith("examples/00_basic_gemm/s8_gemm.cu")
    assert (first["line"], first["value"]) == (269, 28_311_552.0)
    assert first["share"] == pytest.approx(28_311_552 / (28_311_552 + 9_216))
    assert "static_cast<ElementCompute>(A[k + i * lda])" in first["source"]
    assert list(lines.columns[:5]) == ["finding", "rule", "kernels", "file", "line"]
    assert lines["line"].dtype == "Int64"


def test_html_source_view_shows_the_hot_line_in_its_context_escaped(cutlass: DiagnosisResult) -> None:
    page = render_html(cutlass.diagnosis)
    assert "<details><summary>where in the code: 2 lines, by excess global sectors</summary>" in page
    hot = ('<span class="hot">  269        accumulator += static_cast&lt;ElementCompute&gt;(A[k + i * lda]) * '
           'static_cast&lt;ElementCompute&gt;(B[k + j * ldb]);</span>')
    assert hot in page
    assert "  267  " in page and "  271  " in page  # two lines of context either side


def test_hostile_file_names_and_source_lines_are_escaped(mw: DiagnosisResult) -> None:
    d = mw.diagnosis
    evil = "<img src=x onerror=alert(1)>.cu"
    i = next(n for n, f in enumerate(d.findings) if f.lines)
    f = d.findings[i]
    bad = replace(f, lines=(replace(f.lines[0], file=evil, line=3),))
    findings = [*d.findings[:i], bad, *d.findings[i + 1:]]
    hostile = replace(d, findings=findings, sources={evil: {3: "</pre><script>alert(1)</script>", 4: "&amp;"}})
    page = render_html(hostile)
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&amp;amp;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;.cu:3" in page
    md = render_markdown(hostile)
    assert not re.search(r"(?<!\\)<img", md) and "\\<img src=x onerror=alert(1)\\>.cu:3" in md


def test_a_finding_says_per_launch_and_its_lines_say_over_how_many_launches(realdata: Path) -> None:
    """Swagatam's naive conv2d, 4 launches: the message counts one launch's sectors (3.61G extra),
    its line 44 sums them over the 4 (14.4G); neither said which it was."""
    from ncu_roof.diagnosis import diagnose_paths
    from ncu_roof.render.lines import finding_line_texts

    d = diagnose_paths(realdata / "Swagatam1812__hpca-gpu-memory-profiling/naive.ncu-rep")
    f = next(x for x in d.findings if x.rule == "uncoalesced-access")
    assert len(f.ids) == 4
    assert "4.89G sectors requested per launch where 1.27G would do" in f.message
    assert "of the 3.61G extra from loads" in f.message
    assert finding_line_texts(f)[0] == (
        "conv_kernels.cu:44, 99% of the excess global sectors (14.4G over 4 launches): about 110 ms")
