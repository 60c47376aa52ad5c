"""The timeline pipeline: PyTorch profiler traces in, each one's measured timeline and findings out.

Enters: trace paths (files, folders of ranks, globs) and, optionally, Nsight Compute reports of the
same program. Each trace is read (:mod:`ncu_roof.read.trace`), measured
(:mod:`ncu_roof.model.timeline`) and judged (:mod:`ncu_roof.rules.timeline`), its ops placed on the
roofline from recorded shapes (:mod:`ncu_roof.model.trace_ops`); with reports, its
kernels are matched to theirs (:mod:`ncu_roof.model.trace_match`), the report's findings weighed
by each kernel's time in the trace, and ranked with the trace's own. Leaves: one
:class:`TraceResult` per trace, in input order, and the notes on the inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ncu_roof.errors import InputError
from ncu_roof.fmt import plural
from ncu_roof.model.timeline import Timeline, measure
from ncu_roof.model.trace_match import TraceMatch, match_trace
from ncu_roof.model.trace_ops import op_roofline
from ncu_roof.read.inputs import trace_inputs
from ncu_roof.read.trace import Trace, read_trace
from ncu_roof.read.trace.nsys import read_nsys
from ncu_roof.rules.base import Finding
from ncu_roof.rules.timeline import rank, timeline_findings, weigh_findings

if TYPE_CHECKING:  # the diagnosis is imported where reports are given: a trace alone needs none of it
    from ncu_roof.diagnosis import Diagnosis


@dataclass(frozen=True)
class WithReport:
    """A trace beside a report: the kernels matched, and one ranking of the trace's findings (its
    gaps) and the report's (each weighed by its kernels' time in the trace)."""

    inputs: list[str]
    match: TraceMatch
    ranking: list[Finding]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TraceResult:
    """One trace: its timeline and the findings on it (and, with a report, the two together)."""

    timeline: Timeline
    findings: list[Finding] = field(default_factory=list)
    report: WithReport | None = None
    trace: Trace | None = field(default=None, repr=False, compare=False)
    op_roofline: pd.DataFrame | None = field(default=None, repr=False, compare=False)


def with_report(trace: Trace, timeline: Timeline, findings: list[Finding], d: Diagnosis) -> WithReport:
    """The trace's kernels matched to the diagnosis's, and one ranking of both sides' findings."""
    from ncu_roof.model.kernels import kernel_summary

    match = match_trace(trace.gpu, d.placed, kernel_summary(d.placed))
    weighed, notes = weigh_findings(d.findings, match.kernels, timeline.span_s)
    unmatched = match.unprofiled
    if len(unmatched):
        notes.append(f"{Path(timeline.trace).name}: {int(unmatched['launches'].sum()):,} kernel launches "
                     f"({100 * float(unmatched['share'].sum()):.3g}% of the trace's kernel time) are of "
                     f"{plural(len(unmatched), 'kernel')} the report does not hold: their roofline is unknown")
    return WithReport(list(d.inputs), match, rank([*findings, *weighed]), notes)


def analyse_traces(paths: str | Path | Iterable[str | Path], reports: Iterable[str | Path] | None = None,
                   device: str | None = None) -> tuple[list[TraceResult], list[str]]:
    """Every trace under ``paths`` read, measured and judged (beside ``reports``, diagnosed once,
    where given), its ops placed on the roofline where it recorded shapes (``device``: the GPU where
    a trace names none the device table knows); and the notes on what was read."""
    files, notes = trace_inputs(paths)
    d = None
    if reports:
        from ncu_roof.diagnosis import diagnose_paths

        d = diagnose_paths(list(reports), device=device)
        notes += d.notes
    named = {Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)}
    results = []
    for path in files:
        try:
            trace = read_nsys(path) if path.suffix.lower() == ".sqlite" else read_trace(path)
        except InputError as exc:
            if path in named or len(files) == 1:  # a file the user named: refused
                raise
            notes.append(f"skipped {exc}")  # a file a folder or a glob held: the others are read
            continue
        timeline = measure(trace)
        findings = timeline_findings(timeline)
        joined = with_report(trace, timeline, findings, d) if d is not None else None
        ops, op_notes = op_roofline(trace, device)
        results.append(TraceResult(timeline, findings, joined, trace, ops))
        notes += timeline.notes + (joined.notes if joined else []) + op_notes
    if not results:
        raise InputError(f"none of the {len(files)} traces could be read: {notes[-1].removeprefix('skipped ')}")
    return results, notes
