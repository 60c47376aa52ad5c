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
