"""Where a finding's source line is, in words: a file and line, or a function and offset whose
mangled name is shortened as Nsight Compute shows it."""

from ncu_roof.render.lines import where
from ncu_roof.rules.base import SourceLine


def _line(file: str | None, line: int | None, function: str | None, offsets: tuple[int, ...] = (),
          sass: str | None = None) -> SourceLine:
    return SourceLine(file=file, line=line, function=function, offsets=offsets, counter="c", value=1.0,
                      share=1.0, time_s=None, sass=sass)


def test_a_line_table_gives_the_files_base_name_and_line() -> None:
    assert where(_line("C:\\src\\conv.cu", 44, "_Z4convPf")) == "conv.cu:44"


def test_a_mangled_function_is_shown_by_its_short_name_with_the_offset() -> None:
    mangled = ("_ZN6cudapy8__main__26reconstruct_svd_cuda_1_241B96cw51cXTLSUwv1kAPW1tQPAP9CY9GJAHUqIFJIBltW60OjnB1Kw"
               "E5ArrayIfLi2E1C7mutable7alignedE")
    assert where(_line(None, None, mangled, (0xD60,))) == "reconstruct_svd_cuda_1_241+0xd60"
    assert where(_line(None, None, "_Z5SobelIfEvP6uchar4S1_ii", (0x1F0,), "DADD R2, R4, R6")) == \
        "Sobel+0x1f0 (DADD R2, R4, R6)"


def test_a_plain_or_missing_function_name_is_kept() -> None:
    assert where(_line(None, None, "my_kernel", (0x10,))) == "my_kernel+0x10"
    assert where(_line(None, None, None)) == "unknown function"
