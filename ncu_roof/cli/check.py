"""``ncu-roof check``: a CI gate. Exit 0 when all bounds hold, 1 on a violation, 2 on bad input."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import Device, Jobs, Quiet, Reader, ReaderChoice, use_read_options
from ncu_roof.cli._output import write_output


class Format(str, Enum):
    text = "text"
    json = "json"


def command(
    reports: Annotated[
        list[str], typer.Argument(metavar="REPORT", help=".ncu-rep files, CSV exports, folders or quoted globs")
    ],
    rules: Annotated[
        Path, typer.Option("--rules", help="TOML file of gate rules: [defaults], [[kernel]] and [[region]] bounds")
    ],
    baseline: Annotated[
        list[str] | None,
        typer.Option(metavar="REPORT", help="times to hold against (max_slowdown); repeatable"),
    ] = None,
    algorithmic: Annotated[
        Path | None, typer.Option(help="TOML file of [[region]] algorithmic counts (for the region bounds)")
    ] = None,
    ceilings: Annotated[
        Path | None, typer.Option(help="measured roofs (from `ncu-roof ceilings`)")
    ] = None,
    mapping: Annotated[
        Path | None, typer.Option("--map", help='TOML file of renames: [rename] baseline_name = "new_name"')
    ] = None,
    fmt: Annotated[Format | None, typer.Option(
        "--format", "-f", help="text or json (default: from the -o suffix, else text)")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write here instead of stdout")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="overwrite an existing output file")
    ] = False,
    allow_unchecked: Annotated[
        bool,
        typer.Option(
            "--allow-unchecked",
            help="pass (with a note) when a stated bound can be checked on no kernel or region",
        ),
    ] = False,
    device: Device = None,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
) -> None:
    """CI gate: fail when a kernel is below its % of roof (min_pct_of_roof), a region below its
    % of ideal = ideal time / time (min_pct_of_ideal), either moves too many extra bytes, or is
    slower than the baseline beyond the noise band.

    Exit codes: 0 all bounds hold (one OK line); 1 a violation (one line each); 2 bad input, or
    a stated bound that could be checked on no kernel or region (unless --allow-unchecked).
    The results of the bounds that were checked are always printed first; an unchecked bound
    then follows as an error on stderr. A violation wins over an unchecked bound: both give 1.
    """
    use_read_options(reader, jobs, quiet)
    from ncu_roof.comparison.gate import EXIT_INPUT, run_check
    from ncu_roof.errors import InputError
    from ncu_roof.files import check_writable
    from ncu_roof.render.formats import pick_format

    name = pick_format("check", fmt.value if fmt else None, output)
    if output is not None:
        check_writable(output, force)
    outcome = run_check(
        reports, rules, baseline, algorithmic, ceilings, mapping, name, allow_unchecked, device
    )
    write_output(outcome.text, output, force)
    if outcome.exit_code == EXIT_INPUT:
        raise InputError(outcome.error)
    if outcome.error is not None:  # a violation wins over an unchecked bound
        typer.echo(f"ncu-roof: error: {outcome.error}", err=True)
    if outcome.exit_code:
        raise typer.Exit(outcome.exit_code)
