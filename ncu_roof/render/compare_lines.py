"""The source lines that moved between the two sides of a comparison, in words: per paired kernel
``miniWeather_mpi_openacc.F90:288: 440M -> 17.7M instructions`` (text and Markdown), and their
entries in the JSON contract (each compared kernel's ``lines``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ncu_roof.comparison.compare import Comparison
from ncu_roof.comparison.lines import LineMove
from ncu_roof.fmt import fmt_si
from ncu_roof.jsonable import json_num


def _count(value: float) -> str:
    return fmt_si(value, "").replace(" ", "")


def move_text(m: LineMove) -> str:
    """``file.F90:288: 440M -> 17.7M instructions``."""
    return f"{m.where}: {_count(m.before)} -> {_count(m.after)} {m.what}"


def kernel_moves(c: Comparison, row: pd.Series) -> list[LineMove]:
    """The line moves of one compared kernel (a row of ``c.kernels``), largest first."""
    return [m for m in c.lines if m.kernel == row["kernel"] and m.kernel_new == row["kernel_new"]]


def text_line(c: Comparison, row: pd.Series) -> str:
    """``lines (fp64-pipe): a: x -> y instructions; b: ...`` for the text table, or ``""``."""
    groups: dict[tuple[str, ...], list[LineMove]] = {}
    for m in kernel_moves(c, row):
        groups.setdefault(m.rules, []).append(m)
    return "; ".join(f"lines ({', '.join(rules)}): " + ", ".join(move_text(m) for m in moves)
                     for rules, moves in groups.items())


def markdown_section(c: Comparison, label: Any) -> list[str]:
    """The "Lines that moved" section: one table row per line, or nothing when none moved."""
    if not c.lines:
        return []
    lines = ["## Lines that moved", "", "| kernel | line | counted | before | after | findings |",
             "|---|---|---|---|---|---|"]
    for _, row in c.kernels.iterrows():
        for m in kernel_moves(c, row):
            cells = (f"`{label(row)}`", m.where, m.what, _count(m.before), _count(m.after), ", ".join(m.rules))
            lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in cells) + " |")
    return [*lines, ""]


def json_lines(c: Comparison, row: pd.Series) -> list[dict[str, Any]]:
    """The ``lines`` list of one compared kernel in the JSON contract."""
    return [{"file": m.file, "line": m.line, "function": m.function, "rules": list(m.rules), "counted": m.what,
             "counter": m.counter, "before": json_num(m.before), "after": json_num(m.after)}
            for m in kernel_moves(c, row)]
