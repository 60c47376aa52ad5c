"""Where in the code: findings in; out, the same findings, each one a source line can explain
carrying its lines, ranked by each line's share of what the fix removes, and that share of its
stake (:class:`~ncu_roof.rules.base.SourceLine`).

A post-pass after the rules: it reads the Source Counters (:mod:`ncu_roof.read.source`) of the
launches the findings name, one launch at a time, and sums each finding's ranking counter by
line (file and line where the cubin has a line table; else by instruction: the function, its
offset and the SASS where known). The counter that ranks a rule's lines is :data:`RANKED_BY`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ncu_roof.read.source import NO_LINES_HINT, iter_instructions
from ncu_roof.rules.base import Finding, SourceLine

WARP = 32
TOP = 10  # lines kept per finding
# FP64 and MUFU (reciprocal, the division's seed) instructions, by SASS opcode
_FP64_OPS = ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DSET", "MUFU")


@dataclass(frozen=True)
class Ranking:
    """What ranks a rule's lines: a column of the per-instruction table (or a function of it) and its words."""

    what: str
    value: Callable[[Any, Finding], Any]


def _column(name: str) -> Callable[[Any, Finding], Any]:
    return lambda frame, _: frame[name] if name in frame else None


def _inactive(frame: Any, _: Finding) -> Any:
    """Thread slots of executed instructions whose lanes sat idle (32 per warp instruction, less
    the threads that ran it): what divergence costs, on the lines where it is paid."""
    if "inst_executed" not in frame or "thread_inst_executed" not in frame:
        return None
    return (WARP * frame["inst_executed"] - frame["thread_inst_executed"]).clip(lower=0)


def _fp64(frame: Any, _: Finding) -> Any:
    """FP64 and MUFU instructions where the SASS is known; every instruction where it is not."""
    if "inst_executed" not in frame:
        return None
    sass = frame["sass"]
    if sass.isna().all():
        return frame["inst_executed"]
    op = sass.fillna("").str.replace(r"^@!?U?P\w+\s+", "", regex=True).str.split(".", n=1).str[0].str.strip()
    return frame["inst_executed"].where(op.isin(_FP64_OPS), 0.0)


def _stalls(frame: Any, finding: Finding) -> Any:
    reasons = finding.evidence.get("reasons") or []
    column = f"samples_{reasons[0]}" if reasons else "samples"
    return frame[column] if column in frame else None


RANKED_BY: dict[str, Ranking] = {
    "uncoalesced-access": Ranking("excess global sectors", _column("l2_sectors_global_excessive")),
    "bank-conflicts": Ranking("excess shared-memory wavefronts", _column("shared_wavefronts_excessive")),
    "divergence": Ranking("idle-lane instruction slots", _inactive),
    "warp-stalls": Ranking("stall samples", _stalls),
    "fp64-pipe": Ranking("FP64 and MUFU instructions", _fp64),
    "fp64-on-consumer-gpu": Ranking("FP64 and MUFU instructions", _fp64),
    "division": Ranking("FP64 and MUFU instructions", _fp64),
    "local-memory": Ranking("local-memory sectors", _column("l2_sectors_local")),
    "spills": Ranking("local-memory sectors", _column("l2_sectors_local")),
}


def ranking_words(finding: Finding) -> str:
    """What the finding's lines are ranked by, in words."""
    ranking = RANKED_BY.get(finding.rule)
    if ranking is None:
        return ""
    if finding.rule == "warp-stalls" and finding.evidence.get("reasons"):
        return f"{str(finding.evidence['reasons'][0]).replace('_', ' ')} stall samples"
    if ranking.value is _fp64 and finding.lines and all(x.counter == "inst_executed" for x in finding.lines):
        return "instructions"
    return ranking.what


@dataclass
class _Sums:
    """One finding's ranking counter summed by line (or instruction) over the launches read."""

    value: dict[tuple[Any, ...], float] = field(default_factory=dict)
    inst: dict[tuple[Any, ...], float] = field(default_factory=dict)
    offsets: dict[tuple[Any, ...], set[int]] = field(default_factory=dict)
    sass: dict[tuple[Any, ...], str | None] = field(default_factory=dict)
    functions: dict[tuple[Any, ...], str | None] = field(default_factory=dict)
    counter: str = ""

    def add(self, frame: Any, values: Any) -> None:
        keep = values.fillna(0.0) > 0
        if not keep.any():
            return
        part = frame.loc[keep, ["function", "offset", "file", "line", "sass", "inst_executed"]].copy()
        part["value"] = values[keep]
        lined = part["line"] > 0
        # a line: (file, line, None); without one, an instruction: (None, -1, function, offset)
        part["key"] = [(f, int(n), None) if ok else (None, -1, fn, int(o)) for f, n, fn, o, ok
                       in zip(part["file"], part["line"], part["function"], part["offset"], lined, strict=True)]
        for key, group in part.groupby("key", sort=False):
            self.value[key] = self.value.get(key, 0.0) + float(group["value"].sum())
            self.inst[key] = self.inst.get(key, 0.0) + float(group["inst_executed"].fillna(0.0).sum())
            self.offsets.setdefault(key, set()).update(int(o) for o in group["offset"] if o >= 0)
            self.functions.setdefault(key, group["function"].iloc[0])
            if len(group) == 1:
                self.sass.setdefault(key, group["sass"].iloc[0])

    def lines(self, stake: float | None) -> tuple[SourceLine, ...]:
        total = sum(self.value.values())
        if not total > 0:
            return ()
        ranked = sorted(self.value.items(), key=lambda kv: -kv[1])[:TOP]
        out = []
        for key, value in ranked:
            share = value / total
            lined = key[1] > 0
            out.append(SourceLine(
                file=key[0] if lined else None, line=key[1] if lined else None, function=self.functions.get(key),
                offsets=tuple(sorted(self.offsets.get(key, ()))), counter=self.counter, value=value, share=share,
                time_s=share * stake if stake is not None and stake == stake else None,
                sass=None if lined else self.sass.get(key), counters={"inst_executed": self.inst.get(key, 0.0)}))
        return tuple(out)


def attach_lines(findings: list[Finding], reader: str = "native") -> tuple[list[Finding], list[str]]:
    """``findings`` with the lines of each one a line can explain, and notes (source data that could
    not be read; findings whose lines are instructions because the program has no line table)."""
    wanted: dict[str, dict[int, list[int]]] = {}  # report -> launch id -> findings
    for i, f in enumerate(findings):
        if f.rule in RANKED_BY and f.report and Path(f.report).suffix.lower() in (".ncu-rep", ".ncu-repz") and f.ids:
            for launch in f.ids:
                wanted.setdefault(f.report, {}).setdefault(launch, []).append(i)
    sums: dict[int, _Sums] = {}
    notes: list[str] = []
    for report, by_launch in wanted.items():
        for launch, frame, _ in iter_instructions(report, sorted(by_launch), reader, notes):
            for i in by_launch.get(launch, ()):
                values = RANKED_BY[findings[i].rule].value(frame, findings[i])
                if values is None:
                    continue
                s = sums.setdefault(i, _Sums())
                s.counter = _counter_name(findings[i], frame)
                s.add(frame, values.astype("float64"))
    out = list(findings)
    unlined: set[str] = set()
    for i, s in sums.items():
        lines = s.lines(findings[i].time_at_stake_s)
        out[i] = replace(findings[i], lines=lines)
        if lines and all(x.line is None for x in lines):
            unlined.add(Path(findings[i].report or "").name)
    if unlined:
        notes.append(f"{', '.join(sorted(unlined))}: findings point at instructions (function and offset), not "
                     f"source lines: the report has no line table; {NO_LINES_HINT}")
    return out, notes


def _counter_name(finding: Finding, frame: Any) -> str:
    """The per-instruction column (or quantity) a finding's lines are ranked by, for the JSON."""
    rule = finding.rule
    if rule == "divergence":
        return "idle_lane_slots"
    if rule == "warp-stalls":
        reasons = finding.evidence.get("reasons") or []
        return f"samples_{reasons[0]}" if reasons else "samples"
    if RANKED_BY[rule].value is _fp64:
        return "inst_executed" if frame["sass"].isna().all() else "inst_executed_fp64_mufu"
    names = {"uncoalesced-access": "l2_sectors_global_excessive", "bank-conflicts": "shared_wavefronts_excessive"}
    return names.get(rule, "l2_sectors_local")


