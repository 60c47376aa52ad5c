"""``ncu-roof query``: SQL over a store (DuckDB)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import Force, Output
from ncu_roof.cli._output import write_output


class QueryFormat(str, Enum):
    text = "text"
    csv = "csv"
    json = "json"
    markdown = "markdown"


def command(
    sql: Annotated[str, typer.Argument(metavar="SQL", help="a query over the tables runs, launches, kernels, "
                                                           "findings and ncu_rules")],
    store: Annotated[Path, typer.Option("--store", metavar="DIR", help="the store folder (from ncu-roof ingest)")],
    fmt: Annotated[QueryFormat | None, typer.Option(
        "--format", "-f", help="text, csv, json or markdown (default: from the -o suffix, else text)")] = None,
    output: Output = None,
    force: Force = False,
) -> None:
    """Run SQL on a store of runs.

    The tables: runs, launches, kernels, findings and ncu_rules (pip install 'ncu-roof[store]'),
    e.g. "SELECT kernel, median(time_s) FROM kernels GROUP BY kernel"."""
    from ncu_roof.files import check_writable
    from ncu_roof.render.formats import pick_format
    from ncu_roof.store.query import query_text, run_query

    name = pick_format("query", fmt.value if fmt else None, output)
    if output is not None:
        check_writable(output, force)
    write_output(query_text(run_query(store, sql), name), output, force)
