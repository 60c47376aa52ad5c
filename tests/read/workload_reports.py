"""Reports of range, command-list and graph results, written for tests (no GPU, no capture).

Each result is built on a template launch of a real report: its metrics without the ``launch__*``
ones (a range has no single launch shape), the NVTX ranges given, and a reference to the
template's module (``SourceData``). Results go into blocks as given, so a test can put two kinds
in one block (which Nsight Compute reads only the first kind of).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

_KIND = {"kernel": ("results", "ProfileResult"), "range": ("ranges", "RangeResult"),
         "cmdlist": ("cmdlists", "CmdlistResult"), "graph": ("graphs", "GraphResult")}


@dataclass
class Result:
    """One result: its kind, the NVTX push/pop stack at its start, metrics to set (ncu's names and
    units), a command list's display name."""

    kind: str
    nvtx: Sequence[str] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    display: str | None = None


def _workload(rg: Any, pb: SimpleNamespace, base: Any, spec: Result, api_call: int, names: Any) -> Any:
    cls = getattr(pb, _KIND[spec.kind][1])
    msg = cls(ThreadID=base.ThreadID, APICallID=api_call)
    msg.MetricResults.extend(m for m in base.MetricResults
                             if not names.table.Strings[m.NameId].startswith("launch__"))
    rg._set_metrics(msg, spec.metrics, names)
    if spec.nvtx:
        msg.Nvtx.CopyFrom(rg.nvtx_state(pb, base.ThreadID, {rg.DEFAULT_DOMAIN: spec.nvtx}, api_call))
    msg.References.append(base.Source.Reference)
    if spec.display is not None:
        msg.DisplayName = spec.display
    return msg


def write_workloads(rg: Any, dst: Path, blocks: Sequence[Sequence[Result]], template: Path, *,
                    index: int = 0) -> None:
    """Write a report whose blocks hold ``blocks``' results, in order (the first in the template's
    launch block, the others each in a block of their own after it); ``rg`` is ``tests/reportgen``."""
    pb = rg.proto_modules()
    report = rg.read_report(template, pb)
    base, home = rg._pick(report, index)
    names = rg._Names(rg._string_table(home))
    home.results = []
    api_call = base.APICallID
    built = []
    for specs in blocks:
        block = home if not built else rg.Block(pb.BlockHeader(NumSources=0))
        if block is not home and home.header.HasField("Process"):
            block.header.Process.CopyFrom(home.header.Process)
        for spec in specs:
            api_call += 1
            if spec.kind == "kernel":
                launch = pb.ProfileResult()
                launch.CopyFrom(base)
                launch.APICallID = api_call
                block.results.append(launch)
            else:
                getattr(block, _KIND[spec.kind][0]).append(_workload(rg, pb, base, spec, api_call, names))
        built.append(block)
    out = []
    for block in report.blocks:
        if block is not home and block.results:  # the template's other launches go
            block.results = []
            h = block.header
            if not (block.sources or h.HasField("SessionDetails") or h.HasField("StringTable")):
                continue
        out.append(block)
        if block is home:
            out += built[1:]
    rg.save_report(rg.Report(report.header, out), dst)
