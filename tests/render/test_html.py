"""The HTML report's page: its charts fit the window in a real browser, long tables fold.

The browser checks open the report in headless chromium at 900, 1,024 and 1,400 px and read where
each chart, its legends and its points landed; they skip without chromium (``tests/browser.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import CHROMIUM, SKIP_REASON, measure, probe
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


# Where the browser drew each roof label and roof line: a label is crossed where a point of a line
# (every px along its path) falls inside the label's box (in the text's own, rotated, coordinates;
# widened by 1 px: a line touching a label crosses it), and two labels overlap where a point of one's
# box (corners and edges) falls inside the other's.
_ROOF_LABELS_JS = """
function (done) {
  var tries = 0;
  function inside(el, box, x, y) {
    var p = new DOMPoint(x, y).matrixTransform(el.getScreenCTM().inverse());
    return p.x > box.x - 1 && p.x < box.x + box.width + 1 && p.y > box.y - 1 && p.y < box.y + box.height + 1;
  }
  function run() {
    var svg = document.querySelector('#chart0 svg.marks');
    if (!svg && tries++ < 200) { setTimeout(run, 50); return; }
    var texts = Array.prototype.filter.call(svg.querySelectorAll('g.mark-text text'), function (t) {
      return t.getAttribute('stroke') !== 'white' && /FLOP\\/s|B\\/s/.test(t.textContent); });
    var lines = Array.prototype.filter.call(svg.querySelectorAll('g.mark-line path'), function (p) {
      return p.getAttribute('stroke-width') === '1.6'; });
    var out = {labels: texts.map(function (t) { return t.textContent; }), lines: lines.length, crossed: [],
               overlaps: []};
    texts.forEach(function (t) {
      var box = t.getBBox();
      lines.forEach(function (p, i) {
        var m = p.getScreenCTM(), n = p.getTotalLength();
        for (var s = 0; s <= n; s += 1) {
          var q = new DOMPoint(p.getPointAtLength(s).x, p.getPointAtLength(s).y).matrixTransform(m);
          if (inside(t, box, q.x, q.y)) { out.crossed.push(t.textContent + ' by line ' + i); break; }
        }
      });
      texts.forEach(function (u) {
        if (u === t) return;
        var b = u.getBBox(), m = u.getScreenCTM();
        for (var fx = 0; fx <= 1; fx += 0.05) for (var fy = 0; fy <= 1; fy += 0.25) {
          var q = new DOMPoint(b.x + fx * b.width, b.y + fy * b.height).matrixTransform(m);
          if (inside(t, box, q.x, q.y)) { out.overlaps.push(u.textContent + ' on ' + t.textContent); return; }
        }
      });
    });
    done(out);
  }
  run();
}
"""


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=SKIP_REASON)
@pytest.mark.parametrize(("path", "labels"), [
    ("jestes15__EE384_FinalProject/profile_output.3b348f5ef8.ncu-rep",  # H100 PCIe: two DRAM slopes 6% apart
     ["DRAM 1.9 TB/s (report ×88%, practical)", "DRAM 1.79 TB/s (report ×88%, practical)"]),
    ("jestes15__EE384_FinalProject/profile_output.83e15dfe71.ncu-rep",  # RTX 4070 Ti: fp32 roofs 13% apart
     ["fp32 mixed (57% of FMA rate) 19.8 TFLOP/s (report)", "fp32 no-FMA 17.3 TFLOP/s (report)"]),
])
def test_roof_labels_are_crossed_by_no_line_in_a_browser(path: str, labels: list[str], tmp_path: Path) -> None:
    """The report's roofline at 1,024 px in chromium: every roof named, no roof line through a roof
    label (the 1.9 TB/s slope ran through the 1.79's label, the mixed roof through no-FMA's) and no
    roof label on another."""
    from ncu_roof.api import diagnose

    if not (REALDATA / path).is_file():
        pytest.skip(f"no {REALDATA / path} (the shared real data)")
    pytest.importorskip("vl_convert")
    page = diagnose(REALDATA / path).report(tmp_path / "report.html")
    got = probe(page, tmp_path / "profile", 1024, _ROOF_LABELS_JS)
    assert set(labels) <= set(got["labels"]), got["labels"]
    assert got["lines"] >= 5
    assert got["crossed"] == [] and got["overlaps"] == []


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
