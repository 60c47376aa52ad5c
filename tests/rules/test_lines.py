"""Lines per finding: each finding a source line can explain names its lines, ranked by the counter
the fix removes, each with its share of the stake (real reports, pinned numbers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REALDATA

from ncu_roof.diagnosis import diagnose_paths, to_dict
from ncu_roof.render.text import render_text

MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"


@pytest.fixture(scope="module")
def mw(realdata: Path):  # type: ignore[no-untyped-def]
    return diagnose_paths(MW)


def test_mw_baseline_division_finding_names_f90_288_first(mw) -> None:  # type: ignore[no-untyped-def]
    fp64 = next(f for f in mw.findings if f.rule == "fp64-pipe")
    assert fp64.kernels == ("compute_tendencies_x_279_gpu",)
    first = fp64.lines[0]
    assert first.file is not None and first.file.endswith("miniWeather_mpi_openacc.F90") and first.line == 288
    assert first.value == 439_531_424  # instructions (no SASS in this report: every instruction counts)
    # the shares are of every instruction the launch ran (1,378,276,906), and split the stake
    assert first.share == pytest.approx(439_531_424 / 1_378_276_906)
    assert first.time_s == pytest.approx(first.share * fp64.time_at_stake_s)
    assert [x.value for x in fp64.lines] == sorted((x.value for x in fp64.lines), reverse=True)


def test_warp_stall_lines_are_ranked_by_the_named_reason(mw) -> None:  # type: ignore[no-untyped-def]
    stalls = next(f for f in mw.findings if f.rule == "warp-stalls" and f.kernels == ("set_halo_values_x_419_gpu",))
    assert stalls.evidence["reasons"][0] == "long_scoreboard"
    assert [(x.line, x.value) for x in stalls.lines] == [(423, 115.0), (424, 9.0)]
    assert sum(x.share for x in stalls.lines) == pytest.approx(1.0)


def test_findings_no_line_explains_carry_none(mw) -> None:  # type: ignore[no-untyped-def]
    assert all(not f.lines for f in mw.findings if f.rule in ("grid-underfill", "at-roof", "fusion-chain"))


def test_text_and_json_show_the_lines(mw) -> None:  # type: ignore[no-untyped-def]
    text = render_text(mw)
    assert "at miniWeather_mpi_openacc.F90:288, 32% of the instructions (440M): about 966 us" in text
    fp64 = next(f for f in to_dict(mw)["findings"] if f["rule"] == "fp64-pipe")
    line = fp64["lines"][0]
    assert (line["line"], line["value"], line["counter"]) == (288, 439_531_424, "inst_executed")
    assert len(line["offsets"]) == 381


def test_report_without_line_table_points_at_instructions_with_a_hint(realdata: Path) -> None:
    d = diagnose_paths(REALDATA / "AshunFeiyu__Cuda_Gemm_Practice" / "gemm_v9.ncu-rep")
    bank = next(f for f in d.findings if f.rule == "bank-conflicts")
    assert all(x.line is None and x.function and x.function.startswith("_Z4gemm") for x in bank.lines)
    # two shared-memory instructions carry 844,800 excess wavefronts each, 41% of the kernel's
    assert [(x.offsets, x.value) for x in bank.lines[:2]] == [((3024,), 844_800.0), ((3072,), 844_800.0)]
    assert bank.lines[0].share == pytest.approx(0.407, abs=0.001)
    assert any("-lineinfo" in n and "gemm_v9.ncu-rep" in n for n in d.notes)


def test_many_launches_read_from_the_longest_scaled_to_all(reportgen_mod, realdata: Path,  # type: ignore[no-untyped-def]
                                                          tmp_path: Path) -> None:
    from ncu_roof.rules.lines import LAUNCHES_READ, attach_lines

    report = tmp_path / "mw12.ncu-rep"
    reportgen_mod.replicate(MW, report, 12, index=2)  # compute_tendencies_x_279_gpu, 12 times
    d = diagnose_paths(report)
    fp64 = next(f for f in d.findings if f.rule == "fp64-pipe")
    assert len(fp64.ids) == 12 and LAUNCHES_READ < 12
    first = fp64.lines[0]
    assert first.line == 288 and first.value == pytest.approx(12 * 439_531_424)
    assert any(f"({LAUNCHES_READ} of 12 launches)" in n for n in d.notes)
    # reading every launch gives the same lines
    every, notes = attach_lines([fp64], per_kernel=None)
    assert [x.line for x in every[0].lines] == [x.line for x in fp64.lines]
    assert [x.value for x in every[0].lines] == pytest.approx([x.value for x in fp64.lines])
    assert not any("longest launches" in n for n in notes)
