"""``ncu-roof diagnose``: roofline placement, regions and ranked advice."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import (
    Algorithmic,
    Ceilings,
    Device,
    ForceFiles,
    Jobs,
    Output,
    Quiet,
    Reader,
    ReaderChoice,
    Reports,
    SummaryFormat,
    use_read_options,
)
from ncu_roof.cli._output import write_output


def command(
    reports: Reports,
    algorithmic: Algorithmic = None,
    ceilings: Ceilings = None,
    fmt: Annotated[SummaryFormat | None, typer.Option("--format", "-f", help="text, markdown or json "
                                                  "(default: from the -o suffix, else text)")] = None,
    output: Output = None,
    chart: Annotated[Path | None, typer.Option(help="also save the roofline chart (.html, .png, .svg, .json)")] = None,
    force: ForceFiles = False,
    device: Device = None,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
) -> None:
    """Place every kernel under its roofs and rank what can be won, where, and how."""
    use_read_options(reader, jobs, quiet)
    from ncu_roof.diagnose import diagnose_paths
    from ncu_roof.files import check_distinct, check_writable
    from ncu_roof.fmt import terminal_width
    from ncu_roof.render.formats import pick_format
    from ncu_roof.render.renderers import RENDERERS, render_text

    name = pick_format("diagnose", fmt.value if fmt else None, output)
    check_distinct(output, chart)
    if output is not None:  # paths first, so a bad one costs nothing and prints nothing
        check_writable(output, force)
    if chart is not None:
        from ncu_roof.render.charts.save import check_chart_path

        check_chart_path(chart, force)
    result = diagnose_paths(reports, algorithmic=algorithmic, ceilings=ceilings, device=device)
    if name == "text":  # wrapped to the terminal; a file gets whole tables
        text = render_text(result, width=terminal_width() if output is None else None)
    else:
        text = RENDERERS[name](result)
    write_output(text, output, force)
    if chart is not None:
        from ncu_roof.render.charts.save import save_chart

        save_chart(result, chart, force=force)
