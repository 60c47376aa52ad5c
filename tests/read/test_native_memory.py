"""The native reader's memory does not follow the report's size: a report of many copies of a
real ``--set full`` launch (210 KB each) is read holding about one launch of it, not the file.

Measured in a fresh process as the rise of its peak resident set (``VmHWM``, reset through
``/proc/self/clear_refs`` after the imports) while ``load_native`` reads the report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SOURCE = "NCAR__GPU_workshop/MW_Baseline.ncu-rep"  # launch 3: 210 KB, --set full
COPIES = 400  # an 84 MB report

PROBE = """
import sys
from pathlib import Path
import pandas, numpy  # noqa: F401 - imported before the peak is reset
from ncu_roof.read import native

def peak_kib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

Path("/proc/self/clear_refs").write_text("5")
before = peak_kib()
frame = native.load_native(sys.argv[1])
print(len(frame), peak_kib() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS is read from Linux's /proc")
def test_reading_a_big_report_holds_about_one_launch(reportgen_mod: Any, realdata: Path, tmp_path: Path) -> None:
    report = tmp_path / "copies.ncu-rep"
    reportgen_mod.replicate(realdata / SOURCE, report, COPIES, index=3)
    size_mb = report.stat().st_size / 2**20
    assert size_mb > 75
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", PROBE, str(report)], capture_output=True, text=True, cwd=root,
                          check=False)
    if done.returncode and "clear_refs" in done.stderr:
        pytest.skip(f"this kernel does not let a process reset its peak RSS: {done.stderr.splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    launches, rise_kib = map(int, done.stdout.split())
    assert launches == COPIES
    # The rows and the frame of 400 launches are a few MB; a mapped walk kept 64 KiB of the file
    # resident per launch touched (25 MB here) and a read window of up to 64 MB.
    assert rise_kib / 1024 < 20, f"reading a {size_mb:.0f} MB report raised the peak RSS by {rise_kib / 1024:.0f} MB"
