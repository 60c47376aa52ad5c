"""The HTML report's page: its charts fit the window in a real browser, long tables fold.

The browser checks open the report in headless chromium at 900, 1,024 and 1,400 px and read where
each chart, its legends and its points landed; they skip without chromium (``tests/browser.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import CHROMIUM, SKIP_REASON, measure
from conftest import FIXTURES, REALDATA, cached_diagnose_paths

from ncu_roof.diagnosis import Diagnosis

MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
SYNTHETIC = FIXTURES / "synthetic"


def _report(d: Diagnosis, path: Path) -> Path:
    from ncu_roof.render.html import render_html

    path.write_text(render_html(d), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def report_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The report of a real report (miniWeather on a V100: its top kernel, 40% of the time, sits at
    the right edge of the roofline) and of the synthetic layernorm pair (two runs, a region)."""
    pytest.importorskip("vl_convert")
    tmp = tmp_path_factory.mktemp("report_pages")
    pages = {"layernorm": _report(cached_diagnose_paths(
        [SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv", SYNTHETIC / "synthetic_layernorm_fused_rtx5070.csv"],
        algorithmic=SYNTHETIC / "synthetic_layernorm.toml"), tmp / "layernorm.html")}
    if MW.is_file():
        pages["MW_Baseline"] = _report(cached_diagnose_paths([MW]), tmp / "mw.html")
    return pages


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=SKIP_REASON)
@pytest.mark.parametrize("width", [900, 1024, 1400])
def test_report_charts_fit_the_window(report_pages: dict[str, Path], width: int,
                                      tmp_path: Path) -> None:
    """Every chart's SVG, its legends and every point lie inside a window ``width`` px wide; at
    1,400 px the roofline is drawn at its full size (it only shrinks where the page is narrower)."""
    if not MW.is_file():
        pytest.skip(f"no {MW} (the shared real data)")
    for name, page in report_pages.items():
        got = measure(page, tmp_path / f"profile-{name}", width)
        assert got["viewport"] == width, got["viewport"]
        assert got["charts"] and all(c["svg"] for c in got["charts"]), (name, got)
        for chart in got["charts"]:
            boxes = [chart["svg"], *chart["legends"], *chart["points"]]
            assert all(b["left"] >= 0 and b["right"] <= width + 0.5 for b in boxes), (name, width, chart["id"])
        roofline = got["charts"][0]
        assert roofline["legends"] and roofline["points"], name
        if width == 1400:
            assert roofline["svg"]["width"] >= 1200, (name, roofline["svg"])


def _rule(rule: str, kernel: str, verdict: str, time_s: float) -> dict[str, object]:
    return {"rule": rule, "report": "r", "kernels": [kernel], "ids": [0], "type": "OPT", "ncu_message": "m",
            "ncu_estimated_speedup_pct": 20.0, "ncu_speedup_type": "global", "verdict": verdict,
            "roofline_cap_pct": 5.0, "reason": "x", "findings": [], "time_s": time_s}


def test_ncu_rules_fold_under_a_count_line() -> None:
    """Nsight Compute's rule results (49 rows on a full-set report, most of the page) are one count
    line, then the table folded in <details> (closed)."""
    import pandas as pd

    from ncu_roof.render.html import _ncu_rules

    records = [_rule(f"Rule{i}", f"k{i % 3}", "capped" if i % 4 else "agrees", 1e-3 * (i + 1)) for i in range(49)]
    html = _ncu_rules(Diagnosis(pd.DataFrame(), pd.DataFrame(), [], [], ncu_rules=records))
    count = ('<p class="ncu-rules-count">49 rule results on 3 kernels: 13 <span class="verdict-agrees">agrees'
             '</span>, 36 <span class="verdict-capped">capped</span>.</p>')
    assert count in html
    fold = html.index('<details class="ncu-rules"><summary>The 49 rule results, largest time at stake first'
                      '</summary>')
    assert html.index(count) < fold < html.index("<table>") and html.rstrip().endswith("</table>\n</details>")
    assert html.count("<tr>") == 50 and "<details open" not in html
    one = _ncu_rules(Diagnosis(pd.DataFrame(), pd.DataFrame(), [], [], ncu_rules=records[:1]))
    assert "1 rule result on 1 kernel: 1 " in one and "<summary>The 1 rule result, " in one
    assert _ncu_rules(Diagnosis(pd.DataFrame(), pd.DataFrame(), [], [], ncu_rules=[])) == ""
