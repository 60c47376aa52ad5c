"""How a report was captured (ncu version, replay, clocks, caches, command line), read from the
session details ncu spreads over a report's blocks, and shown in every output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reportgen import proto_modules, read_report, write_blocks

from ncu_roof.diagnosis import diagnose_paths, to_dict
from ncu_roof.read.table import load_table
from ncu_roof.render.html import render_html
from ncu_roof.render.markdown import render_markdown
from ncu_roof.render.text import render_text


def test_a_real_report_says_which_ncu_cuda_and_driver_made_it_and_how(realdata: Path) -> None:
    path = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    (run,) = load_table([path]).attrs["runs"]
    # as `ncu --import MW_Baseline.ncu-rep --page session` prints them
    assert run == {
        "report": str(path), "ncu_version": "2022.2.0.0", "cuda_version": "11.6", "driver_version": "510.47.03",
        # the report stores no settings block: the command line's options, ncu's defaults where it gives none
        "replay_mode": "kernel", "clock_control": "base", "profile_from_start": True, "cache_control": "all",
        "command_line": "/glade/u/apps/opt/nvhpc/22.5/Linux_x86_64/22.5/profilers/Nsight_Compute/target/"
                        "linux-desktop-glibc_2_11_3-x64/ncu --set full --launch-skip 29 --launch-count 5 -f -o "
                        "MW_Baseline --print-summary per-kernel --target-processes all --import-source on "
                        "mpiexec -n 1 ./openacc",
    }
    text = render_text(diagnose_paths([path]))
    assert (f"Captured ({path}): ncu 2022.2.0.0, CUDA 11.6, driver 510.47.03; kernel replay, clocks locked to "
            "base, caches flushed between passes") in " ".join(text.split())


def _captured_unlocked(realdata: Path, dst: Path) -> Path:
    """MW_Baseline with its settings saying: application replay, clocks not locked, profiling
    started by the program, and a command line with --cache-control none."""
    pb = proto_modules()
    report = read_report(realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep", pb)
    details = report.blocks[0].header.SessionDetails
    details.ProfilerSettings.ReplayMode = "Application"
    details.ProfilerSettings.ClockControlMode = "None"
    details.ProfilerSettings.EnableProfilingFromStart = False
    for block in report.blocks:
        if block.header.SessionDetails.ProfilerCmdline:
            block.header.SessionDetails.ProfilerCmdline = "ncu --cache-control none -o r python train.py"
    with dst.open("wb") as out:
        write_blocks(out, report.header, report.blocks)
    return dst


def test_unlocked_clocks_and_warm_caches_are_said_in_every_output(realdata: Path, tmp_path: Path) -> None:
    path = _captured_unlocked(realdata, tmp_path / "unlocked.ncu-rep")
    d = diagnose_paths([path])
    (run,) = d.runs
    assert {k: run[k] for k in ("replay_mode", "clock_control", "profile_from_start", "cache_control")} == {
        "replay_mode": "application", "clock_control": "none", "profile_from_start": False, "cache_control": "none"}
    said = (f"Captured ({path}): ncu 2022.2.0.0, CUDA 11.6, driver 510.47.03; application replay, clocks not locked "
            "(boost), caches not flushed, profiling started by the program")
    clocks = ("Clocks were not locked (--clock-control none): durations are at the clock the GPU ran at, so compare "
              "only runs captured the same way.")
    caches = ("Caches were not flushed between replay passes (--cache-control none): DRAM bytes can be low where a "
              "pass found the data still in L2.")
    for out in (render_text(d), render_markdown(d)):
        flat = " ".join(out.split()).replace("\\", "")  # Markdown's escapes off
        assert said in flat and clocks in flat and caches in flat
    html = render_html(d)
    command = "ncu --cache-control none -o r python train.py"
    assert "<h2>How it was captured</h2>" in html and f"<code>{command}</code>" in html and clocks in html
    assert json.loads(json.dumps(to_dict(d)))["runs"][0]["command_line"] == command


@pytest.mark.parametrize("reader", ["ncu_report"])
def test_a_reader_that_cannot_see_the_session_says_nothing_rather_than_guess(realdata: Path, reader: str) -> None:
    pytest.importorskip("ncu_report", reason="NVIDIA's ncu_report module is not installed")
    table = load_table([realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"], reader=reader)
    assert table.attrs["runs"] == []
