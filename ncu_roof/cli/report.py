"""``ncu-roof report``: one self-contained HTML page (charts, kernels, advice) that works offline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ncu_roof.cli._options import (
    Force,
    Jobs,
    Quiet,
    Reader,
    ReaderChoice,
    Reports,
    asks_diagnosis,
    reading_begun,
    stdout_dash,
    use_read_options,
)
from ncu_roof.cli._output import write_output

if TYPE_CHECKING:
    from ncu_roof.diagnosis import DiagnoseRequest

DEFAULT_OUTPUT = Path("ncu-roof-report.html")


@asks_diagnosis("reports", algorithmic="output", ceilings="algorithmic", device="force")
def command(
    reports: Reports,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="the HTML file to write ('-': stdout)",
                                                callback=stdout_dash)] = DEFAULT_OUTPUT,
    force: Force = False,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
    *,
    asked: DiagnoseRequest,
) -> None:
    """Write the diagnosis as one HTML page: roofline and other charts, kernel table, ranked advice."""
    use_read_options(reader, jobs, quiet)
    from ncu_roof.files import check_writable

    if output is not None:
        check_writable(output, force, (".html",), "report")  # before the (slow) diagnosis
    with reading_begun(asked.inputs):
        from ncu_roof.diagnosis import diagnose_request
        from ncu_roof.render.html import render_html

        write_output(render_html(diagnose_request(asked)), output, force)
    if output is not None:
        typer.echo(f"wrote {output}", err=True)
