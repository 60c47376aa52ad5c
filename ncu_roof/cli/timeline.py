"""``ncu-roof timeline``: PyTorch profiler traces measured: busy, idle and why, and what to do."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import Device, Force, Output, Quiet, ReaderChoice, use_read_options
from ncu_roof.cli._output import write_output


class TimelineFormat(str, Enum):
    """What ``timeline`` writes."""

    text = "text"
    markdown = "markdown"
    json = "json"
    html = "html"


def command(
    traces: Annotated[list[Path], typer.Argument(
        metavar="TRACE", help="torch.profiler traces (.json, .json.gz), Nsight Systems SQLite exports (.sqlite), "
                                  "folders of ranks or globs")],
    fmt: Annotated[TimelineFormat | None, typer.Option(
        "--format", "-f", help="text, markdown, json or html (the page with the timeline chart, offline; default: "
                               "from the -o suffix, else text)")] = None,
    output: Output = None,
    force: Force = False,
    report: Annotated[list[Path] | None, typer.Option(
        "--report", "-r", metavar="REPORT", help="an Nsight Compute report (.ncu-rep, CSV) of the same program: "
        "its kernels matched to the trace's, its findings weighed by their time in the trace and ranked with "
        "the gaps (repeat for several)")] = None,
    device: Device = None,
    quiet: Quiet = False,
) -> None:
    """Measure PyTorch profiler traces (export_chrome_trace): the span from first to last GPU
    activity, GPU busy (the union of kernel intervals) and idle, streams, launches, the launch
    floor, syncs and CPU-bound gaps; and the findings: launch overhead (the overhead regime),
    CPU-bound, sync stalls, each with the idle time it could win.

    Each trace is read as a stream (a million events in bounded memory); a folder is read as
    one trace per rank. With --report, each kernel of the trace is matched to the report's (name,
    grid, block, order), placed under its roofs, and the report's findings are scaled by their
    kernels' time in the trace over their time in the report, in one ranking with the gaps."""
    from ncu_roof.files import check_writable
    from ncu_roof.render.formats import pick_format
    from ncu_roof.render.timeline import RENDERERS
    from ncu_roof.traces import analyse_traces

    use_read_options(ReaderChoice.native, None, quiet)  # -q: no progress bar reading the --report files
    name = pick_format("timeline", fmt.value if fmt else None, output)
    if output is not None:
        check_writable(output, force)
    results, notes = analyse_traces(traces, report, device)
    if name == "html":
        from ncu_roof.render.timeline_html import render_html

        write_output(render_html(results, notes), output, force)
        return
    write_output(RENDERERS[name](results, notes), output, force)
