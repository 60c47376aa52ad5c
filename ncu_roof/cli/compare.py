"""``ncu-roof compare``: before/after per kernel and region, and each move on the roofline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ncu_roof.cli._options import (
    ForceFiles,
    Jobs,
    Output,
    Quiet,
    Reader,
    ReaderChoice,
    SummaryFormat,
    asks_diagnosis,
    use_read_options,
)
from ncu_roof.cli._output import write_output

if TYPE_CHECKING:
    from ncu_roof.diagnosis import DiagnoseRequest


@asks_diagnosis("base", algorithmic="mapping", ceilings="algorithmic", device="force")
def command(
    base: Annotated[str, typer.Argument(metavar="BASE", help="before: a .ncu-rep, CSV, folder or quoted glob")],
    new: Annotated[str, typer.Argument(metavar="NEW", help="after: a .ncu-rep, CSV, folder or quoted glob")],
    fmt: Annotated[SummaryFormat | None, typer.Option(
        "--format", "-f", help="text, markdown or json (default: from the -o suffix, else text)")] = None,
    output: Output = None,
    chart: Annotated[Path | None, typer.Option(help="also save the arrows chart (.html, .png, .svg, .json)")] = None,
    mapping: Annotated[Path | None, typer.Option(
        "--map", help='TOML file of renames: [rename] base_name = "new_name"')] = None,
    force: ForceFiles = False,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
    *,
    asked: DiagnoseRequest,
) -> None:
    """Compare two runs per kernel and region: time, FLOPs, bytes, intensity, % of roof (kernels)
    or % of ideal (regions: ideal time / time), findings.

    Two PyTorch profiler traces (.json, .json.gz) are compared as timelines: span, step time,
    GPU busy and idle (by cause), launches, the findings' stakes, and the ops and kernels whose
    time moved.

    When nothing matches, the [rename] lines a --map file would need are printed; with one
    kernel on each side the two are paired (with a note). --chart draws each kernel's and
    region's move, and fails before any output when there is nothing to draw."""
    use_read_options(reader, jobs, quiet)
    from ncu_roof.api import run_compare
    from ncu_roof.files import check_distinct, check_writable
    from ncu_roof.fmt import terminal_width
    from ncu_roof.render.charts.compare import save_compare_chart
    from ncu_roof.render.formats import pick_format

    # every output path is checked before any work, so a bad one costs nothing and prints nothing
    name = pick_format("compare", fmt.value if fmt else None, output)
    check_distinct(output, chart)
    if output is not None:
        check_writable(output, force)
    if _traces(base, new):
        write_output(compare_trace_paths(base, new, name, chart), output, force)
        return
    outcome = run_compare(asked, asked.of(new), name, chart, mapping, force,
                          width=terminal_width() if output is None else None)
    write_output(outcome.text, output, force)
    if chart is not None:
        save_compare_chart(outcome.comparison, chart, force=force, chart=outcome.chart)


def _traces(base: str, new: str) -> bool:
    """Whether both sides are PyTorch profiler traces (by name: .json, .json.gz)."""
    from ncu_roof.read.inputs import is_trace_name

    return is_trace_name(Path(base)) and is_trace_name(Path(new))


def compare_trace_paths(base: str, new: str, fmt: str, chart: Path | None = None) -> str:
    """Two traces read, measured and compared, rendered as ``fmt`` (a ``chart`` refused: a trace's
    chart is its timeline page)."""
    from ncu_roof.comparison.traces import compare_traces
    from ncu_roof.errors import InputError
    from ncu_roof.render.trace_compare import RENDERERS
    from ncu_roof.traces import analyse_traces

    if chart is not None:
        raise InputError("--chart draws reports' kernels; for traces, `ncu-roof timeline TRACE -o page.html` "
                         "draws each timeline")
    sides = []
    for path in (base, new):
        results, _ = analyse_traces(path)
        if len(results) != 1:
            raise InputError(f"{path}: compare takes one trace a side, not {len(results)}")
        sides.append(results[0])
    return RENDERERS[fmt](compare_traces(sides[0], sides[1]))
