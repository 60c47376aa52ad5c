"""Where in the code: findings in; out, the same findings, each one a source line can explain
carrying its lines, ranked by each line's share of what the fix removes, and that share of its
stake (:class:`~ncu_roof.rules.base.SourceLine`).

A post-pass after the rules: it reads the Source Counters (:mod:`ncu_roof.read.source`) of the
launches the findings name, one launch at a time, and sums each finding's ranking counter by
line (file and line where the cubin has a line table; else by instruction: the function, its
offset and the SASS where known). The counter that ranks a rule's lines is declared with the rule
(``About.lines``: one of the :class:`Ranking` values below; :func:`ranking_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ncu_roof.model.build import DEBUG_LOCAL_CAUSE
from ncu_roof.read.cubin import short_name
from ncu_roof.read.source import NO_LINES_HINT
from ncu_roof.rules.base import Finding, SourceLine, about
from ncu_roof.rules.library import library_of

WARP = 32
TOP = 10  # lines kept per finding
LAUNCHES_READ = 3  # per kernel of a finding, its longest launches are read
ALL_INSTRUCTIONS = "instructions (all kinds)"  # what an operation ranking falls back to without SASS

# SASS operations (as :mod:`ncu_roof.read.sass` names them) that rank the lines of pipe-specific findings
FP64_OPERATIONS = frozenset({"DADD", "DMUL", "DFMA", "DSETP", "DMNMX"})
UNFUSED_OPERATIONS = {"fp64": frozenset({"DADD", "DMUL"}), "fp32": frozenset({"FADD", "FMUL"}),
                      "fp16": frozenset({"HADD2", "HMUL2"})}
# each pipe's operations where Nsight Compute's pipe descriptions name them (the ALU's integer and
# logic mix is not ranked: its set is not told apart from the other pipes' by the operation alone)
PIPE_OPERATIONS = {
    "pipe_fp64": FP64_OPERATIONS,
    "pipe_fma": frozenset({"FADD", "FMUL", "FFMA", "IMAD", "IDP"}),
    "pipe_fmaheavy": frozenset({"FFMA", "IMAD", "IDP"}),
    "pipe_fp16": frozenset({"HADD2", "HMUL2", "HFMA2"}),
    "pipe_tensor": frozenset({"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA"}),
    "pipe_lsu": frozenset({"LD", "LDG", "LDL", "LDS", "LDSM", "LDGSTS", "ST", "STG", "STL", "STS", "ATOM", "ATOMG",
                           "ATOMS", "RED", "S2R", "SHFL"}),
    "pipe_xu": frozenset({"MUFU", "MUFU.COS", "MUFU.SIN", "MUFU.EX2", "MUFU.RCP", "MUFU.RSQ", "MUFU.RCP64H", "F2F",
                          "F2I", "I2F", "FRND"}),
}
_PIPE_WORDS = {"pipe_fp64": "FP64", "pipe_fma": "FMA-pipe (FP32 and IMAD)", "pipe_fmaheavy": "FMA-heavy (FFMA, IMAD)",
               "pipe_fp16": "FP16", "pipe_tensor": "tensor-core", "pipe_lsu": "load, store and shuffle",
               "pipe_xu": "special-function and conversion"}


@dataclass(frozen=True)
class Operations:
    """Lines ranked by the executed instructions of some SASS operations (all instructions where the
    report's operations are unknown): ``of`` the finding's operations, their words and the counter's
    name (None: the finding points at no lines)."""

    of: Callable[[Finding], tuple[frozenset[str], str, str] | None]

    def value(self, frame: Any, finding: Finding) -> Any:
        got = self.of(finding)
        if got is None or "inst_executed" not in frame:
            return None
        if not known_operations(frame):
            return frame["inst_executed"]
        return frame["inst_executed"].where(frame["operation"].isin(got[0]), 0.0)

    def counter(self, finding: Finding, frame: Any) -> str:
        got = self.of(finding)
        return f"inst_executed_{got[2]}" if got is not None and known_operations(frame) else "inst_executed"


def known_operations(frame: Any) -> bool:
    """Whether the per-instruction table names any instruction's SASS operation."""
    return "operation" in frame and bool(frame["operation"].notna().any())


@dataclass(frozen=True)
class Ranking:
    """What ranks a rule's lines: a column of the per-instruction table (or a function of it), its
    words, the columns it reads and the counter's name in the JSON (or a function of the finding and
    the table); ``by_reason``: the words, columns and name come from the finding's first stall reason;
    ``operations``: the executed instructions of the finding's SASS operations."""

    what: str
    value: Callable[[Any, Finding], Any]
    columns: tuple[str, ...] = ()
    counter: str | Callable[[Finding, Any], str] = ""
    by_reason: bool = False
    operations: Operations | None = None


def _column(name: str) -> Callable[[Any, Finding], Any]:
    return lambda frame, _: frame[name] if name in frame else None


def _inactive(frame: Any, _: Finding) -> Any:
    """Thread slots of executed instructions whose lanes sat idle (32 per warp instruction, less
    the threads that ran it): what divergence costs, on the lines where it is paid."""
    if "inst_executed" not in frame or "thread_inst_executed" not in frame:
        return None
    return (WARP * frame["inst_executed"] - frame["thread_inst_executed"]).clip(lower=0)


def _stalls(frame: Any, finding: Finding) -> Any:
    reasons = finding.evidence.get("reasons") or []
    column = f"samples_{reasons[0]}" if reasons else "samples"
    return frame[column] if column in frame else None


def _stall_column(finding: Finding) -> str:
    reasons = finding.evidence.get("reasons") or []
    return f"samples_{reasons[0]}" if reasons else "samples"


def _by_operations(what: str, of: Callable[[Finding], tuple[frozenset[str], str, str] | None]) -> Ranking:
    ops = Operations(of)
    return Ranking(what, ops.value, counter=ops.counter, operations=ops)


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list | tuple) and value else value


def _fp64_operations(_: Finding) -> tuple[frozenset[str], str, str]:
    # with the reciprocal seed each FP64 division starts with (its DFMA chain is among the FP64 ones)
    return FP64_OPERATIONS | {"MUFU.RCP64H"}, "FP64 instructions", "fp64"


def _unfused_operations(finding: Finding) -> tuple[frozenset[str], str, str] | None:
    precision = str(_first(finding.evidence.get("compute_roof")) or "").split(" ")[0]
    ops = UNFUSED_OPERATIONS.get(precision)
    return None if ops is None else (ops, f"unfused {precision.upper()} adds and multiplies", f"unfused_{precision}")


def _pipe_operations(finding: Finding) -> tuple[frozenset[str], str, str] | None:
    unit = str(_first(finding.evidence.get("unit") or finding.evidence.get("binding_unit")) or "")
    ops = PIPE_OPERATIONS.get(unit)
    return None if ops is None else (ops, f"{_PIPE_WORDS[unit]} instructions", unit)


EXCESS_SECTORS = Ranking("excess global sectors", _column("l2_sectors_global_excessive"),
                         ("l2_sectors_global_excessive",), "l2_sectors_global_excessive")
EXCESS_WAVEFRONTS = Ranking("excess shared-memory wavefronts", _column("shared_wavefronts_excessive"),
                            ("shared_wavefronts_excessive",), "shared_wavefronts_excessive")
IDLE_LANES = Ranking("idle-lane instruction slots", _inactive, ("thread_inst_executed",), "idle_lane_slots")
STALL_SAMPLES = Ranking("stall samples", _stalls, counter=lambda f, _: _stall_column(f), by_reason=True)
FP64_INSTRUCTIONS = _by_operations("FP64 instructions", _fp64_operations)
UNFUSED_INSTRUCTIONS = _by_operations("unfused adds and multiplies", _unfused_operations)
PIPE_INSTRUCTIONS = _by_operations("the binding pipe's instructions", _pipe_operations)
LOCAL_SECTORS = Ranking("local-memory sectors", _column("l2_sectors_local"), ("l2_sectors_local",), "l2_sectors_local")


def ranking_of(rule: str) -> Ranking | None:
    """What ranks the lines of a rule's findings (None: its findings point at no lines)."""
    ranking = about(rule).lines
    return ranking if isinstance(ranking, Ranking) else None


def ranked(finding: Finding) -> Ranking | None:
    """What ranks this finding's lines (None: it points at none, as a binding unit no operations tell)."""
    ranking = ranking_of(finding.rule)
    if ranking is None or (ranking.operations is not None and ranking.operations.of(finding) is None):
        return None
    return ranking


def _columns(finding: Finding) -> set[str]:
    """The per-instruction columns a finding's lines need (instructions always)."""
    ranking = ranking_of(finding.rule)
    assert ranking is not None
    if ranking.by_reason:
        return {"inst_executed", _stall_column(finding)}
    return {"inst_executed", *ranking.columns}


def ranking_words(finding: Finding, counter: str | None = None) -> str:
    """What the finding's lines are ranked by, in words (``counter``: the column they were ranked by,
    where it is not that of the finding's lines)."""
    ranking = ranking_of(finding.rule)
    if ranking is None:
        return ""
    if ranking.by_reason and finding.evidence.get("reasons"):
        return f"{str(finding.evidence['reasons'][0]).replace('_', ' ')} stall samples"
    if ranking.operations is not None:
        got = ranking.operations.of(finding)
        counters = {counter} if counter else {x.counter for x in finding.lines}
        if got is None:
            return ""
        return ALL_INSTRUCTIONS if counters == {"inst_executed"} else got[1]
    return ranking.what


def ranking_key(finding: Finding) -> tuple[str, ...]:
    """Findings with one key rank their lines by the same counter (operation rankings: the same SASS
    operations; warp stalls: the samples of their first reason)."""
    ranking = ranking_of(finding.rule)
    assert ranking is not None
    if ranking.by_reason:
        return ("stalls", *[str(r) for r in (finding.evidence.get("reasons") or [])[:1]])
    if ranking.operations is not None:
        got = ranking.operations.of(finding)
        return (ranking.what, got[2] if got else "")
    return (ranking.what,)


@dataclass
class LineSums:
    """One finding's ranking counter summed by line (or instruction) over the launches read."""

    value: dict[tuple[Any, ...], float] = field(default_factory=dict)
    inst: dict[tuple[Any, ...], float] = field(default_factory=dict)
    offsets: dict[tuple[Any, ...], set[int]] = field(default_factory=dict)
    sass: dict[tuple[Any, ...], str | None] = field(default_factory=dict)
    functions: dict[tuple[Any, ...], str | None] = field(default_factory=dict)
    counter: str = ""

    def add(self, frame: Any, values: Any, scale: float = 1.0) -> None:
        keep = values.fillna(0.0) > 0
        if not keep.any():
            return
        part = frame.loc[keep, ["function", "offset", "file", "line", "sass"]].copy()
        part["inst_executed"] = frame["inst_executed"][keep] if "inst_executed" in frame else 0.0
        part["value"] = values[keep] * scale
        part["inst_executed"] = part["inst_executed"] * scale
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


def _groups(finding: Finding, launches: Any, per_kernel: int | None) -> list[tuple[tuple[int, ...], float]]:
    """The launches read for a finding: per kernel of its launches, the ``per_kernel`` longest (all
    with None), and the factor that scales their counts to all of the kernel's (by time)."""
    ids = tuple(sorted(finding.ids))
    if launches is None or per_kernel is None or not len(launches):
        return [(ids, 1.0)]
    rows = launches[(launches["report"] == finding.report) & launches["id"].isin(ids)]
    if rows.empty:
        return [(ids, 1.0)]
    out = []
    for _, group in rows.groupby("kernel", sort=False):
        times = group["time_s"].astype("float64")
        order = group.assign(_t=times.fillna(-1.0)).sort_values(["_t", "id"], ascending=[False, True])
        chosen = order.head(per_kernel)
        read, total = float(chosen["_t"].clip(lower=0).sum()), float(times.fillna(0.0).sum())
        scale = total / read if read > 0 and total > 0 else len(group) / len(chosen)
        out.append((tuple(sorted(int(i) for i in chosen["id"])), scale))
    return out


def _read(wanted: dict[str, set[tuple[int, ...]]], reader: str, notes: list[str], columns: set[str],
          texts: dict[str, str]) -> dict[tuple[str, tuple[int, ...]], Any]:
    """Each report's launch groups summed instruction by instruction, by (report, launch ids); the
    source texts their modules carry into ``texts``."""
    from ncu_roof.read.source import sum_groups

    frames: dict[tuple[str, tuple[int, ...]], Any] = {}
    for report, groups in wanted.items():
        for ids, frame in sum_groups(report, {ids: ids for ids in groups}, reader, notes, columns=columns).items():
            frames[(report, ids)] = frame
            texts.update(frame.attrs.get("sources", {}))
    return frames


CONTEXT = 2  # source lines kept either side of a hot line


def snippets(findings: list[Finding], texts: dict[str, str], context: int = CONTEXT) -> dict[str, dict[int, str]]:
    """The source text of each line the findings point at and ``context`` lines either side, by file
    (as the lines name it) and line number, where the report carries the file (``--import-source yes``)."""
    by_base: dict[str, list[str]] = {}
    for stored in texts:
        by_base.setdefault(stored.replace("\\", "/").rsplit("/", 1)[-1], []).append(stored)
    out: dict[str, dict[int, str]] = {}
    split: dict[str, list[str]] = {}
    for f in findings:
        for x in f.lines:
            if x.file is None or x.line is None:
                continue
            name: str | None = x.file if x.file in texts else None
            if name is None:
                same = by_base.get(x.file.replace("\\", "/").rsplit("/", 1)[-1], [])
                name = same[0] if len(same) == 1 else None
            if name is None:
                continue
            lines = split.setdefault(name, texts[name].splitlines())
            for n in range(max(1, x.line - context), min(len(lines), x.line + context) + 1):
                out.setdefault(x.file, {})[n] = lines[n - 1]
    return out


def line_sums(findings: list[Finding], reader: str = "native", launches: Any = None,
              per_kernel: int | None = LAUNCHES_READ) -> tuple[dict[int, LineSums], list[str]]:
    """Each finding's ranking counter summed by line (every line, not the top ones), by the
    finding's index, and notes on source data that could not be read; launches chosen and scaled as
    :func:`attach_lines` does. Findings without Source Counters are left out."""
    sums, notes, _, _ = _summed(findings, reader, launches, per_kernel)
    return sums, notes


def _library_only(f: Finding) -> bool:
    """A finding on library kernels alone (cuBLAS, CUTLASS, ...): its lines would be the library's machine
    code, which its user cannot change (tanvisharma's volta_sgemm: long-scoreboard stalls at +0x11a0)."""
    return bool(f.kernels) and all(library_of({"kernel": k}) is not None for k in f.kernels)


def _summed(findings: list[Finding], reader: str, launches: Any, per_kernel: int | None
            ) -> tuple[dict[int, LineSums], list[str], dict[str, tuple[set[int], set[int]]], dict[str, str]]:
    """The sums of :func:`line_sums`, its notes, the launches read of all (by report name) and the
    source texts the reports carry."""
    plans: dict[int, list[tuple[tuple[int, ...], float]]] = {}
    wanted: dict[str, set[tuple[int, ...]]] = {}  # report -> the launch groups read from it
    columns: set[str] = set()
    for i, f in enumerate(findings):
        if (ranked(f) and f.report and Path(f.report).suffix.lower() in (".ncu-rep", ".ncu-repz") and f.ids
                and not _library_only(f)):
            plans[i] = _groups(f, launches, per_kernel)
            wanted.setdefault(f.report, set()).update(ids for ids, _ in plans[i])
            columns |= _columns(f)
    notes: list[str] = []
    texts: dict[str, str] = {}
    frames = _read(wanted, reader, notes, columns, texts)
    sums: dict[int, LineSums] = {}
    sampled: dict[str, tuple[set[int], set[int]]] = {}
    for i, plan in plans.items():
        f = findings[i]
        for ids, scale in plan:
            frame = frames.get((str(f.report), ids))
            if frame is None:
                continue
            values = ranked(f).value(frame, f)  # type: ignore[union-attr]
            if values is None:
                continue
            s = sums.setdefault(i, LineSums())
            s.counter = _counter_name(f, frame)
            s.add(frame, values.astype("float64"), scale)
        if len(plan) and sum(len(ids) for ids, _ in plan) < len(f.ids) and i in sums:
            read, every = sampled.setdefault(Path(f.report or "").name, (set(), set()))
            read.update(n for ids, _ in plan for n in ids)  # launches, once whatever the findings reading them
            every.update(f.ids)
    return sums, notes, sampled, texts


def attach_lines(findings: list[Finding], reader: str = "native", launches: Any = None,
                 per_kernel: int | None = LAUNCHES_READ, sources: dict[str, dict[int, str]] | None = None
                 ) -> tuple[list[Finding], list[str]]:
    """``findings`` with the lines of each one a line can explain, and notes (source data that could
    not be read; lines read from some of a kernel's launches; findings whose lines are instructions
    because the program has no line table).

    With ``launches`` (the placed table: ``report``, ``id``, ``kernel``, ``time_s``), only the
    ``per_kernel`` longest launches of each kernel of a finding are read, their counts scaled to all
    its launches by time (None: every launch). With ``sources``, the source text around each line
    (:func:`snippets`) is put in it."""
    sums, notes, sampled, texts = _summed(findings, reader, launches, per_kernel)
    out, notes = _finished(findings, sums, notes, sampled, per_kernel)
    if sources is not None and texts:
        sources.update(snippets(out, texts))
    return out, notes


def _finished(findings: list[Finding], sums: dict[int, LineSums], notes: list[str],
              sampled: dict[str, tuple[set[int], set[int]]],
              per_kernel: int | None) -> tuple[list[Finding], list[str]]:
    """The findings with their lines, and the notes on how they were read."""
    out = list(findings)
    unlined: set[str] = set()
    undecoded: dict[str, set[str]] = {}
    for i, s in sums.items():
        lines = s.lines(findings[i].time_at_stake_s)
        out[i] = called_function(replace(findings[i], lines=lines))
        if lines and all(x.line is None for x in lines):
            unlined.add(Path(findings[i].report or "").name)
        if lines and s.counter == "inst_executed" and ranking_words(out[i]) == ALL_INSTRUCTIONS:
            undecoded.setdefault(Path(findings[i].report or "").name, set()).add(findings[i].rule)
    for name, (read, every) in sorted(sampled.items()):
        notes.append(f"{name}: source lines read from the {per_kernel} longest launches of each kernel of a finding "
                     f"({len(read)} of {len(every)} launches), their counts scaled to all by time")
    for name, rules in sorted(undecoded.items()):
        notes.append(f"{name}: the lines of {', '.join(sorted(rules))} are ranked by all instructions, not by the "
                     "pipe's own: the report's SASS operations are not known (ncu-roof reads them from the cubins "
                     "of sm_70 to sm_90 the report stores)")
    if unlined:
        notes.append(f"{', '.join(sorted(unlined))}: findings point at instructions (function and offset), not "
                     f"source lines: the report has no line table; {NO_LINES_HINT}")
    return out, notes


CALLED_SHARE = 0.8  # of a local-memory finding's lines' share in functions the kernel calls: the calls cause it


def called_function(finding: Finding) -> Finding:
    """A local-memory finding whose traffic lies in a function the kernel calls (its lines in another
    function, no line table there: tkhenry's delayAndSum, all of it in sqrtf's register saves and
    restores): the call, not inlined, is its cause, said in place of the list of usual suspects."""
    cause = finding.evidence.get("cause_text")
    if (finding.rule != "local-memory" or not isinstance(cause, str) or not finding.lines
            or cause.startswith(DEBUG_LOCAL_CAUSE)):  # a debug build's calls: the build flag is the fix
        return finding
    own = {short_name(k) for k in finding.kernels}
    # instructions without a line table are named by the SASS function they are in (a line's function is
    # the inlined one its line table names, not a call)
    called = [x for x in finding.lines if x.line is None and x.function and short_name(x.function) not in own]
    share = sum(x.share for x in called)
    if not called or share < CALLED_SHARE:
        return finding
    name = short_name(called[0].function or "")
    text = (f"{'All' if share > 0.995 else f'{share:.0%}'} of it is in {name}, a called function saving registers on "
            "the stack: inline it (__forceinline__; -use_fast_math for math such as sqrtf, if accuracy allows).")
    return replace(finding, message=finding.message.replace(cause, text))


def _counter_name(finding: Finding, frame: Any) -> str:
    """The per-instruction column (or quantity) a finding's lines are ranked by, for the JSON."""
    ranking = ranking_of(finding.rule)
    assert ranking is not None
    return ranking.counter if isinstance(ranking.counter, str) else ranking.counter(finding, frame)
