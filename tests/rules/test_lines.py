"""Lines per finding: each finding a source line can explain names its lines, ranked by the counter
the fix removes, each with its share of the stake (real reports, pinned numbers)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REALDATA

from ncu_roof.diagnosis import diagnose_paths, to_dict
from ncu_roof.render.text import render_text
from ncu_roof.rules.base import Finding
from ncu_roof.rules.lines import attach_lines, ranking_words

MW = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"


@pytest.fixture(scope="module")
def mw(realdata: Path):  # type: ignore[no-untyped-def]
    return diagnose_paths(MW)


def test_mw_baseline_division_finding_names_f90_288_first(mw) -> None:  # type: ignore[no-untyped-def]
    fp64 = next(f for f in mw.findings if f.rule == "fp64-pipe")
    assert fp64.kernels == ("compute_tendencies_x_279_gpu",)
    first = fp64.lines[0]
    assert first.file is not None and first.file.endswith("miniWeather_mpi_openacc.F90") and first.line == 288
    # its FP64 instructions (of 439,531,424 in all), read from the V100's cubin (sm_70)
    assert (first.value, first.counter) == (155_324_928, "inst_executed_fp64")
    # the shares are of the launch's FP64 instructions and division seeds (ncu's per-opcode counts: DFMA
    # 250,895,971, DMUL 107,521,820, DADD 60,011,904, DSETP 32,580,238, MUFU.RCP64H 38,647,495), and split
    # the stake; the bounds check and index arithmetic of the line count none
    assert first.share == pytest.approx(155_324_928 / 489_657_428)
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
    assert "at miniWeather_mpi_openacc.F90:288, 32% of the FP64 instructions (155M): about 961 us" in text
    fp64 = next(f for f in to_dict(mw)["findings"] if f["rule"] == "fp64-pipe")
    line = fp64["lines"][0]
    assert (line["line"], line["value"], line["counter"]) == (288, 155_324_928, "inst_executed_fp64")
    assert len(line["offsets"]) == 132  # of the line's 381 instructions, those of the FP64 pipe


def test_report_without_line_table_points_at_instructions_with_a_hint(realdata: Path) -> None:
    d = diagnose_paths(REALDATA / "AshunFeiyu__Cuda_Gemm_Practice" / "gemm_v9.ncu-rep")
    bank = next(f for f in d.findings if f.rule == "bank-conflicts")
    assert all(x.line is None and x.function and x.function.startswith("_Z4gemm") for x in bank.lines)
    # two shared-memory instructions carry 844,800 excess wavefronts each, 41% of the kernel's
    assert [(x.offsets, x.value) for x in bank.lines[:2]] == [((3024,), 844_800.0), ((3072,), 844_800.0)]
    assert bank.lines[0].share == pytest.approx(0.407, abs=0.001)
    assert any("-lineinfo" in n and "gemm_v9.ncu-rep" in n for n in d.notes)


def test_a_library_kernel_s_machine_code_is_not_pointed_at(realdata: Path) -> None:
    """Expert read 5, row 95: tanvisharma's cuBLAS volta_sgemm_32x128_nn put its warp-stall finding at
    volta_sgemm_32x128_nn+0x11a0, +0x970 and +0xdb0, which no one can change; the user's own kernel in the
    same kind of report keeps its instructions (gemm_v9 above)."""
    d = diagnose_paths(REALDATA / "tanvisharma__nsight-compute-files" / "3136_64_64_rtx2080ti_sgemm.ncu-rep")
    stalls = next(f for f in d.findings if f.rule == "warp-stalls")
    assert stalls.kernels == ("volta_sgemm_32x128_nn",) and stalls.lines == ()
    assert stalls.time_at_stake_s == pytest.approx(7.35e-6, rel=2e-3)


def test_many_launches_read_from_the_longest_scaled_to_all(reportgen_mod, realdata: Path,  # type: ignore[no-untyped-def]
                                                          tmp_path: Path) -> None:
    from ncu_roof.rules.lines import LAUNCHES_READ, attach_lines

    report = tmp_path / "mw12.ncu-rep"
    reportgen_mod.replicate(MW, report, 12, index=2)  # compute_tendencies_x_279_gpu, 12 times
    d = diagnose_paths(report)
    fp64 = next(f for f in d.findings if f.rule == "fp64-pipe")
    assert len(fp64.ids) == 12 and LAUNCHES_READ < 12
    first = fp64.lines[0]
    assert first.line == 288 and first.value == pytest.approx(12 * 155_324_928)
    assert any(f"({LAUNCHES_READ} of 12 launches)" in n for n in d.notes)
    # reading every launch gives the same lines
    every, notes = attach_lines([fp64], per_kernel=None)
    assert [x.line for x in every[0].lines] == [x.line for x in fp64.lines]
    assert [x.value for x in every[0].lines] == pytest.approx([x.value for x in fp64.lines])
    assert not any("longest launches" in n for n in notes)


EE384 = REALDATA / "jestes15__EE384_FinalProject" / "profile_output.83e15dfe71.ncu-rep"


def test_fp64_lines_are_the_fp64_instructions_not_every_instruction(realdata: Path) -> None:
    """MATLAB Coder's fill_vector (RTX 4070 Ti, sm_89): by all instructions the bounds check and
    integer division of line 119 came first (240,500 of them); its FP64 instructions (DMUL and
    DSETP, 48,000) are the products 2.0f * M_PI of lines 113-115, where M_PI promotes to double."""
    d = diagnose_paths(EE384)
    fp64 = next(f for f in d.findings if f.rule == "fp64-pipe")
    assert sorted((x.line, x.value, x.counter) for x in fp64.lines) == [
        (113, 16_000.0, "inst_executed_fp64"), (114, 16_000.0, "inst_executed_fp64"),
        (115, 16_000.0, "inst_executed_fp64")]
    assert all(x.share == pytest.approx(1 / 3) for x in fp64.lines)
    assert "fm_encode.cu:114, 33% of the FP64 instructions (16k)" in render_text(d)


def test_sobel_double_lines_by_fp64_and_by_unfused_instructions(ncu_examples: Path) -> None:
    """Nsight Compute's sobelDouble (RTX A4500): the division routine the compiler put at the closing
    brace (line 123: 458,752 FP64 instructions and seeds) and the two accumulations (110, 111) and
    divisions by 9 (115, 116), 294,912 each; its unfused DADD/DMUL are the accumulations' (196,608)."""
    d = diagnose_paths(ncu_examples / "instructionMix" / "sobelDouble.ncu-rep")
    fp64 = next(f for f in d.findings if f.rule == "fp64-pipe")
    assert [(x.line, x.value) for x in fp64.lines[:5]] == [(123, 458_752.0), (110, 294_912.0), (115, 294_912.0),
                                                           (111, 294_912.0), (116, 294_912.0)]
    # 7.33M DMUL pair with as many of the 13.6M DADD beside 28.3M DFMA: 30% of its FP64 instructions at
    # most, so no-fma-roof is silent; the lines its unfused instructions would rank are these
    assert not [f for f in d.findings if f.rule == "no-fma-roof"]
    unfused = attach_lines([replace(fp64, rule="no-fma-roof", lines=(), evidence={"compute_roof": "fp64"})])[0][0]
    assert [(x.line, x.value, x.counter) for x in unfused.lines[:2]] == [
        (110, 196_608.0, "inst_executed_unfused_fp64"), (111, 196_608.0, "inst_executed_unfused_fp64")]
    assert unfused.lines[0].share == pytest.approx(0.3)
    assert ranking_words(unfused) == "unfused FP64 adds and multiplies"


def test_binding_pipe_lines_by_its_operations(mw) -> None:  # type: ignore[no-untyped-def]
    """A binding pipe the operations tell ranks its lines by them (here the FP64 pipe of MW's x_279:
    line 288's DADD/DMUL/DFMA/DSETP, without the MUFU seeds fp64-pipe counts); one they do not tell
    (the ALU) points at no lines."""
    fp64 = next(f for f in mw.findings if f.rule == "fp64-pipe")

    def binding(unit: str) -> Finding:
        return Finding("binding-unit", fp64.kernels, None, "high", "", fp64.time_at_stake_s, {"unit": unit},
                       fp64.ids, fp64.report)

    (pipe, alu), _ = attach_lines([binding("pipe_fp64"), binding("pipe_alu")])
    assert (pipe.lines[0].line, pipe.lines[0].value, pipe.lines[0].counter) == (288, 136_497_664.0,
                                                                                "inst_executed_pipe_fp64")
    assert ranking_words(pipe) == "FP64 instructions" and alu.lines == ()


def test_without_sass_operations_lines_rank_by_all_instructions_and_say_so(
        mw, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Where the cubin's operations are not known (an architecture not decoded), the FP64 lines are
    ranked by every instruction, the text says "all kinds" and a note says why."""
    import ncu_roof.read.source.native as native

    monkeypatch.setattr(native, "function_codes", lambda *_: {})
    fp64 = next(f for f in mw.findings if f.rule == "fp64-pipe")
    (got,), notes = attach_lines([replace(fp64, lines=())])
    assert (got.lines[0].line, got.lines[0].value, got.lines[0].counter) == (288, 439_531_424, "inst_executed")
    assert ranking_words(got) == "instructions (all kinds)"
    assert any("fp64-pipe are ranked by all instructions" in n and "MW_Baseline.ncu-rep" in n for n in notes)
