"""Which source lines moved: two diagnoses and their launch pairs in; out, for each paired kernel
with a finding its lines can explain (on either side), the counter that finding ranks its lines by
(instructions, excess sectors or wavefronts, stall samples) summed per line on each side, the
lines that moved most first (:class:`LineMove`).

The Source Counters are read only for those kernels, their longest launches scaled to all of the
paired ones, as the diagnosis reads them (:func:`ncu_roof.rules.lines.line_sums`). A line is its
file and number (files of the same base name paired across build folders); without a line table,
the function it lies in (offsets change with any rebuild).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from ncu_roof.diagnosis import Diagnosis
from ncu_roof.rules.base import Finding
from ncu_roof.rules.lines import LineSums, line_sums, ranking_key, ranking_of, ranking_words

TOP = 3  # lines kept per kernel and counter
MATERIAL = 0.01  # a move under this share of the larger side's total is not a move


@dataclass(frozen=True)
class LineMove:
    """One line's ranking counter before -> after, on a paired kernel."""

    kernel: str
    kernel_new: str
    rules: tuple[str, ...]  # the findings (either side) that rank lines by this counter
    what: str  # the counter in words: "instructions", "excess global sectors", ...
    counter: str  # the per-instruction column (or quantity) it is
    file: str | None  # None: no line table, the line is the function
    line: int | None
    function: str | None
    before: float
    after: float

    @property
    def where(self) -> str:
        """``file.F90:288`` (the file's base name), or the function without a line table."""
        if self.file is not None and self.line is not None:
            return f"{self.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{self.line}"
        return f"function {self.function or 'unknown'}"

    def as_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "kernel_new": self.kernel_new, "rules": list(self.rules), "what": self.what,
                "counter": self.counter, "file": self.file, "line": self.line, "function": self.function,
                "before": self.before, "after": self.after}


def _names(launches: pd.DataFrame) -> set[str]:
    return set(launches["kernel"].astype(str)) | set(launches["kernel_demangled"].dropna().astype(str))


def _probes(template: Finding, launches: pd.DataFrame) -> list[Finding]:
    """The template finding restricted to these launches, one per report they come from."""
    return [replace(template, report=str(report), ids=tuple(int(i) for i in group["id"]), lines=())
            for report, group in launches.groupby(launches["report"].astype(str), sort=False)]


def _by_line(sums: list[LineSums]) -> dict[tuple[Any, ...], float]:
    """The sums of one side by line ((file, line)) or, without a line table, by function."""
    out: dict[tuple[Any, ...], float] = {}
    for s in sums:
        for key, value in s.value.items():
            at = (key[0], key[1]) if key[1] > 0 else ("", s.functions.get(key))
            out[at] = out.get(at, 0.0) + value
    return out


def _base_name(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _paired_files(before: dict[tuple[Any, ...], float], after: dict[tuple[Any, ...], float]) -> dict[str, str]:
    """New-side files renamed to the base side's where only the folder differs (a unique base name)."""
    old = {k[0] for k in before if k[0]}
    new = {k[0] for k in after if k[0]}
    by_base: dict[str, list[str]] = {}
    for name in old:
        by_base.setdefault(_base_name(name), []).append(name)
    out = {}
    for name in new - old:
        same = by_base.get(_base_name(name), [])
        if len(same) == 1 and same[0] not in new:
            out[name] = same[0]
    return out


def _moves(kernel: str, kernel_new: str, rules: tuple[str, ...], words: str, counter: str,
           before: dict[tuple[Any, ...], float], after: dict[tuple[Any, ...], float]) -> list[LineMove]:
    rename = _paired_files(before, after)
    after = {((rename.get(k[0], k[0]), k[1]) if k[0] else k): v for k, v in after.items()}
    floor = MATERIAL * max(sum(before.values()), sum(after.values()))
    keys = sorted(set(before) | set(after), key=lambda k: -abs(after.get(k, 0.0) - before.get(k, 0.0)))
    out = []
    for key in keys[:TOP]:
        b, a = before.get(key, 0.0), after.get(key, 0.0)
        if not abs(a - b) > floor:
            break
        lined = bool(key[0])
        out.append(LineMove(kernel, kernel_new, rules, words, counter, key[0] if lined else None,
                            int(key[1]) if lined else None, None if lined else key[1], b, a))
    return out


def line_moves(base: Diagnosis, new: Diagnosis, pairs: pd.DataFrame, reader: str = "native"
               ) -> tuple[list[LineMove], list[str]]:
    """The lines that moved on each paired kernel with a finding its lines can explain, and notes
    (source data that could not be read; a side without Source Counters)."""
    plans: list[tuple[str, str, tuple[str, ...], Finding, list[Finding], list[Finding]]] = []
    for (kernel, kernel_new), group in pairs.groupby(["kernel", "kernel_new"], sort=False):
        b = base.placed.iloc[group["base_row"].to_numpy(dtype=int)]
        n = new.placed.iloc[group["new_row"].to_numpy(dtype=int)]
        found = [f for f in base.findings if ranking_of(f.rule) and f.lines and _names(b) & set(f.kernels)]
        found += [f for f in new.findings if ranking_of(f.rule) and f.lines and _names(n) & set(f.kernels)]
        by_key: dict[tuple[str, ...], list[Finding]] = {}
        for f in found:
            by_key.setdefault(ranking_key(f), []).append(f)
        for same in by_key.values():
            rules = tuple(dict.fromkeys(f.rule for f in same))
            plans.append((str(kernel), str(kernel_new), rules, same[0], _probes(same[0], b), _probes(same[0], n)))
    if not plans:
        return [], []
    sides = ([p for plan in plans for p in plan[4]], [p for plan in plans for p in plan[5]])
    (b_sums, b_notes), (n_sums, n_notes) = (line_sums(sides[0], reader, base.placed),
                                            line_sums(sides[1], reader, new.placed))
    moves: list[LineMove] = []
    notes = list(dict.fromkeys([*b_notes, *n_notes]))
    at = [0, 0]
    for kernel, kernel_new, rules, template, b_probes, n_probes in plans:
        got = []
        for side, probes, sums in ((0, b_probes, b_sums), (1, n_probes, n_sums)):
            got.append([sums[i] for i in range(at[side], at[side] + len(probes)) if i in sums])
            at[side] += len(probes)
        if not got[0] or not got[1]:
            which = "BASE" if not got[0] else "NEW"
            notes.append(f"lines of {kernel} not compared: {which} has no Source Counters for it")
            continue
        counter = got[0][0].counter
        if any(s.counter != counter for s in got[0] + got[1]):  # e.g. FP64 by SASS on one side only
            notes.append(f"lines of {kernel} not compared: the two sides count {', '.join(rules)} differently")
            continue
        moves += _moves(kernel, kernel_new, rules, ranking_words(template, counter), counter,
                        _by_line(got[0]), _by_line(got[1]))
    return moves, notes
