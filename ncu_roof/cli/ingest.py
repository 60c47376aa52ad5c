"""``ncu-roof ingest``: add reports to a store of runs (Parquet tables, read with DuckDB)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import Device, Jobs, Quiet, Reader, ReaderChoice, Reports, Scheduler, use_read_options
from ncu_roof.cli._output import echo_notes


def command(
    reports: Reports,
    store: Annotated[Path, typer.Option("--store", metavar="DIR", help="the store folder (made when new or empty)")],
    label: Annotated[list[str] | None, typer.Option(
        "--label", metavar="KEY=VALUE", help="a label of these runs, e.g. commit=1a2b3c or branch=main; repeatable")
    ] = None,
    device: Device = None,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
    scheduler: Scheduler = None,
) -> None:
    """Add reports to a store of runs (pip install 'ncu-roof[store]'): one run per report (by its
    sha256: a report already there is not added again), its launches, kernels, findings and ncu
    rules, all or nothing."""
    use_read_options(reader, jobs, quiet, scheduler)
    from ncu_roof.store.ingest import ingest, parse_labels

    result = ingest(reports, store, parse_labels(label or []))
    for run in result.added:
        typer.echo(f"added  {run['run_key'][:12]}  {run['device'] or '(no device)'}  {run['launches']} launches  "
                   f"{run['path']}")
    for seen in result.already:
        typer.echo(f"known  {seen['run_key'][:12]}  {seen['path']} (already in the store as {seen['as']})")
    batch = f" (batch {result.batch})" if result.batch else ""
    typer.echo(f"{result.store}: {len(result.added)} run(s) added{batch}, {len(result.already)} already there")
    if label and result.already:  # a run keeps the labels of its first ingest: say so, not silently
        result.notes.append(f"{len(result.already)} input(s) already in the store keep the labels of their first "
                            f"ingest: --label {' --label '.join(label)} applies to the runs added here only")
    echo_notes(result.notes)
