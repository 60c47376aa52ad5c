"""``ncu-roof table``: the tidy per-launch table as CSV or JSON."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ncu_roof.cli._options import (
    Device,
    Force,
    Jobs,
    Output,
    Quiet,
    Reader,
    ReaderChoice,
    Reports,
    Scheduler,
    reading_begun,
    use_read_options,
)
from ncu_roof.cli._output import echo_notes, write_output


class TableFormat(str, Enum):
    csv = "csv"
    json = "json"


def command(
    reports: Reports,
    fmt: Annotated[TableFormat | None, typer.Option(
        "--format", "-f", help="csv or json (a list of records); default: from the -o suffix, else csv"
    )] = None,
    output: Output = None,
    force: Force = False,
    device: Device = None,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
    scheduler: Scheduler = None,
) -> None:
    """Read reports and exports into one tidy table: one row per launch, base units."""
    use_read_options(reader, jobs, quiet, scheduler)
    from ncu_roof.files import check_writable
    from ncu_roof.render.formats import pick_format

    name = pick_format("table", fmt.value if fmt else None, output)
    if output is not None:
        check_writable(output, force)
    with reading_begun(reports):
        from ncu_roof.read.table import load_table, load_table_csv, table_text

        if name == "csv":  # each input's rows formatted where it was read
            table, text = load_table_csv(reports, device)
        else:
            table = load_table(reports, device)
            text = table_text(table, name)
    write_output(text, output, force)
    echo_notes(table.attrs.get("notes", []))  # what was skipped, damaged or guessed (also per launch: notes)
