"""``ncu-roof report``: one self-contained HTML page (charts, kernels, advice) that works offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import (
    Algorithmic,
    Ceilings,
    Device,
    Force,
    Jobs,
    Quiet,
    Reader,
    ReaderChoice,
    Reports,
    stdout_dash,
    use_read_options,
)
from ncu_roof.cli._output import write_output

DEFAULT_OUTPUT = Path("ncu-roof-report.html")


def command(
    reports: Reports,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="the HTML file to write ('-': stdout)",
                                                callback=stdout_dash)] = DEFAULT_OUTPUT,
    algorithmic: Algorithmic = None,
    ceilings: Ceilings = None,
    force: Force = False,
    device: Device = None,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
) -> None:
    """Write the diagnosis as one HTML page: roofline and other charts, kernel table, ranked advice."""
    use_read_options(reader, jobs, quiet)
    from ncu_roof.files import check_writable

    if output is not None:
        check_writable(output, force, (".html",), "report")  # before the (slow) diagnosis
    from ncu_roof.diagnosis import diagnose_paths
    from ncu_roof.render.html import render_html

    result = diagnose_paths(reports, algorithmic=algorithmic, ceilings=ceilings, device=device)
    write_output(render_html(result), output, force)
    if output is not None:
        typer.echo(f"wrote {output}", err=True)
