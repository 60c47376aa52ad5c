"""The timeline pipeline: PyTorch profiler traces in, each one's measured timeline and findings out.

Enters: trace paths (files, folders of ranks, globs). Each trace is read (:mod:`ncu_roof.read.trace`),
measured (:mod:`ncu_roof.model.timeline`) and judged (:mod:`ncu_roof.rules.timeline`). Leaves: one
:class:`TraceResult` per trace, in input order, and the notes on the inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ncu_roof.model.timeline import Timeline, measure
from ncu_roof.read.inputs import trace_inputs
from ncu_roof.read.trace import read_trace
from ncu_roof.rules.base import Finding
from ncu_roof.rules.timeline import timeline_findings


@dataclass(frozen=True)
class TraceResult:
    """One trace: its timeline and the findings on it."""

    timeline: Timeline
    findings: list[Finding] = field(default_factory=list)


def analyse_traces(paths: str | Path | Iterable[str | Path]) -> tuple[list[TraceResult], list[str]]:
    """Every trace under ``paths`` read, measured and judged; and the notes on what was read."""
    files, notes = trace_inputs(paths)
    results = []
    for path in files:
        timeline = measure(read_trace(path))
        results.append(TraceResult(timeline, timeline_findings(timeline)))
        notes += timeline.notes
    return results, notes
