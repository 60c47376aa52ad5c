"""A finding's source lines in words: where (``conv.cu:44``, or a function and offset with its SASS
where the program has no line table), its share of what ranks them, and that share of the stake."""

from __future__ import annotations

from ncu_roof.fmt import fmt_seconds, fmt_si
from ncu_roof.read.cubin import short_name
from ncu_roof.rules.base import Finding, SourceLine
from ncu_roof.rules.lines import ranking_words

TOP_LINES = 3  # lines shown per finding in text and Markdown


def where(line: SourceLine) -> str:
    """``file.cu:44`` (the file's base name), or ``function+0x1f0 (SASS)`` without a line table (a
    mangled function by its short name, as ncu shows it: ``_Z5SobelIfEvP6uchar4S1_ii`` -> ``Sobel``)."""
    if line.file is not None and line.line is not None:
        return f"{line.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line.line}"
    at = f"+0x{line.offsets[0]:x}" if line.offsets else ""
    sass = f" ({line.sass})" if line.sass else ""
    return f"{short_name(line.function) if line.function else 'unknown function'}{at}{sass}"


def line_text(line: SourceLine, words: str, launches: int = 1) -> str:
    """``conv.cu:44, 99% of the excess global sectors (14.4G over 4 launches): about 110 ms``: a
    line's counter is summed over the finding's launches, which the message may count per launch."""
    stake = f": about {fmt_seconds(line.time_s)}" if line.time_s is not None and line.time_s > 0 else ""
    value = fmt_si(line.value, "").replace(" ", "") + (f" over {launches} launches" if launches > 1 else "")
    return f"{where(line)}, {line.share:.0%} of the {words} ({value}){stake}"


def finding_line_texts(f: Finding, top: int = TOP_LINES) -> list[str]:
    """The finding's top lines, each as :func:`line_text` says it."""
    words = ranking_words(f)
    return [line_text(x, words, len(f.ids)) for x in f.lines[:top]]
