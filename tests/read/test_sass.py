"""SASS operations read from the cubins real reports store: each launch's executed instructions
summed by operation equal Nsight Compute's own count of that operation in the same report
(``sass__inst_executed_per_opcode``, and ``..._with_modifier_all`` for MUFU's functions and
HFMA2.MMA; read with NVIDIA's ncu_report when these tests were written), on six architectures."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import REALDATA

from ncu_roof.read import sass
from ncu_roof.read.source import sum_instructions

EE384 = REALDATA / "jestes15__EE384_FinalProject"
# report, launch, the architecture its cubin is for, and ncu's count of some of its operations
CASES = [
    ("examples:instructionMix/sobelDouble.ncu-rep", 0, 86,
     {"IMAD": 1_125_008, "DFMA": 884_736, "ISETP": 753_664, "DADD": 425_984, "DMUL": 229_376, "DSETP": 131_072,
      "MUFU.RCP64H": 98_304}),
    ("NCAR__GPU_workshop/MW_Baseline.ncu-rep", 2, 70,  # compute_tendencies_x_279_gpu on a V100
     {"IMAD": 274_381_274, "DFMA": 250_895_971, "DMUL": 107_521_820, "DADD": 60_011_904, "DSETP": 32_580_238}),
    ("SimonLuder__hs22-mc2/v1.ncu-rep", 0, 75,  # Numba: a linked image, symbols at their loaded addresses
     {"IMAD": 8_677_988_256, "DADD": 846_000_000, "LDG": 2_538_000_000}),
    ("jestes15__EE384_FinalProject/profile_output.83e15dfe71.ncu-rep", 3, 89,  # fill_vector, RTX 4070 Ti
     {"IADD3": 88_000, "FMUL": 50_744, "F2F": 48_000, "DMUL": 24_000, "DSETP": 24_000}),
    ("jestes15__EE384_FinalProject/profile_output.3b348f5ef8.ncu-rep", 3, 90,  # the same kernel on an H100
     {"IADD3": 114_870_000, "DMUL": 28_724_064, "DSETP": 28_717_500, "MUFU.RCP": 9_572_500, "MUFU.SIN": 1_347_261}),
    ("bwd29__self-join-MiSTIC/prof4.ncu-rep", 0, 80,  # linked, with $-labels inside the kernel's section
     {"IMAD": 50_099_234_070, "DFMA": 5_113_905_142, "DADD": 5_113_905_142, "DSETP": 6_141_736_967,
      "HFMA2.MMA": 5_113_937_897, "MUFU.RCP": 1_027_831_825}),
]


def _path(name: str, realdata: Path, examples: Path) -> Path:
    return examples / name.split(":", 1)[1] if name.startswith("examples:") else realdata / name


@pytest.mark.parametrize("name, launch, sm, counts", CASES, ids=[c[0].split("/")[-1] for c in CASES])
def test_operations_sum_to_ncus_count_of_each(name: str, launch: int, sm: int, counts: dict[str, int],
                                              realdata: Path, ncu_examples: Path) -> None:
    table = sum_instructions(_path(name, realdata, ncu_examples), [launch])
    ran = table[table["inst_executed"] > 0]
    assert ran["operation"].notna().all()  # every executed instruction named
    by_operation = ran.groupby("operation")["inst_executed"].sum()
    assert {op: by_operation.get(op, 0.0) for op in counts} == pytest.approx(counts, rel=0, abs=0.5)


def test_the_cubins_architecture_is_read(realdata: Path) -> None:
    from ncu_roof.read.source.native import iter_counters

    for name, launch, _, _ in CASES[1:]:
        module = next(iter_counters(realdata / name, [launch])).module
        assert module is not None and module.codes, name
    cubin = _cubin(realdata / CASES[1][0])
    assert sass.sm_version(cubin) == 70
    assert sass.sm_version(cubin[:7] + b"\x08" + cubin[8:]) is None  # another header layout: not decoded
    assert sass.function_codes(cubin[:7] + b"\x08" + cubin[8:], ["compute_tendencies_x_279_gpu"]) == {}


def _cubin(report: Path) -> bytes:
    """The first cubin a report's launches refer to (its module, as the native reader keeps it)."""
    from ncu_roof.read.native.blocks import FileBytes, index
    from ncu_roof.read.native.wire import schema

    size = report.stat().st_size
    with report.open("rb") as fh:
        found = index(FileBytes(fh.fileno(), size), size, report)
        for offset, n in found.sources:
            fh.seek(offset)
            binary = schema().SourceData.FromString(fh.read(n)).Binary
            if binary:
                return bytes(binary)
    raise AssertionError(f"{report} stores no cubin")


def test_operation_codes_and_mufu_functions() -> None:
    # the encoding: low 9 bits the operation, bits 9-11 the operand form, MUFU's function at bits 74-77
    words = np.array([0x229, 0, 0x42B, 0, 0xC28, 0, 0x308, 6 << 10, 0x308, 4 << 10, 0x308, 11 << 10, 0x1FE, 0],
                     dtype="<u8").tobytes()
    elf = _one_function_elf(words)
    codes = sass.function_codes(elf, ["k"])["k"]
    assert sass.operation_names(codes).tolist() == ["DADD", "DFMA", "DMUL", "MUFU.RCP64H", "MUFU.RCP", "MUFU", None]


def _one_function_elf(code: bytes) -> bytes:
    """A minimal sm_86 relocatable cubin: a symbol table, its strings and one function's section."""
    strtab = b"\0k\0"
    header_size, sh_size = 0x40, 0x40
    text_at = header_size
    str_at = text_at + len(code)
    sym_at = str_at + len(strtab)
    symbols = struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0) + struct.pack("<IBBHQQ", 1, 0x12, 0x10, 3, 0, len(code))
    sh_at = sym_at + len(symbols)
    sections = (b"\0" * sh_size
                + struct.pack("<IIQQQQIIQQ", 0, 2, 0, 0, sym_at, len(symbols), 2, 1, 8, 24)
                + struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, str_at, len(strtab), 0, 0, 1, 0)
                + struct.pack("<IIQQQQIIQQ", 0, 1, 6, 0, text_at, len(code), 0, 0, 128, 0))
    ident = b"\x7fELF\x02\x01\x01" + bytes([51, 7]) + b"\0" * 7
    header = (ident + struct.pack("<HHIQQQIHHHHHH", 1, 190, 1, 0, 0, sh_at, 0x560556, header_size, 0, 0,
                                  sh_size, 4, 2))
    return header + code + strtab + symbols + sections


def test_operation_of_disassembled_text() -> None:
    assert [sass.operation_of_text(t) for t in ("@!P0 DFMA R2, R4, R6, R2 ;", "MUFU.RCP64H R3, R5 ;",
                                                "HFMA2.MMA R3, -RZ, RZ, 0, 0 ;", "IMAD.MOV.U32 R1, RZ, RZ, R2 ;",
                                                "", None)] == ["DFMA", "MUFU.RCP64H", "HFMA2.MMA", "IMAD", None, None]


def test_fill_vector_fp64_instructions_are_its_double_promotions(realdata: Path) -> None:
    """fill_vector (MATLAB Coder, RTX 4070 Ti): its FP64 instructions are the 2.0f * M_PI products of
    lines 113-115 (M_PI is a double), 16,000 each; the bounds check of line 119 runs none."""
    table = sum_instructions(EE384 / "profile_output.83e15dfe71.ncu-rep", [3])
    fp64 = table[table["operation"].isin(["DADD", "DMUL", "DFMA", "DSETP"])]
    by_line = fp64.groupby("line")["inst_executed"].sum()
    assert by_line.to_dict() == {113: 16_000.0, 114: 16_000.0, 115: 16_000.0}
    assert table.loc[table["line"] == 119, "inst_executed"].sum() == 240_500
