"""``ncu-roof check``: a CI gate. Exit 0 when all bounds hold, 1 on a violation, 2 on bad input."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.commands._options import Device
from ncu_roof.commands._output import write_output

EXIT_VIOLATION = 1


class Format(str, Enum):
    text = "text"
    json = "json"


def command(
    reports: Annotated[
        list[str], typer.Argument(metavar="REPORT", help=".ncu-rep, CSV, folder or quoted glob")
    ],
    rules: Annotated[
        Path, typer.Option("--rules", help="TOML gate rules: [defaults] and [[kernel]] overrides")
    ],
    baseline: Annotated[
        list[str] | None,
        typer.Option(metavar="REPORT", help="times to hold against (max_slowdown); repeatable"),
    ] = None,
    algorithmic: Annotated[
        Path | None, typer.Option(help="TOML [[region]] counts (max_extra_bytes_factor)")
    ] = None,
    ceilings: Annotated[
        Path | None, typer.Option(help="measured roofs (from `ncu-roof ceilings`)")
    ] = None,
    mapping: Annotated[
        Path | None, typer.Option("--map", help='TOML [rename] baseline_name = "new_name"')
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="text or json")] = Format.text,
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
) -> None:
    """CI gate: fail when a kernel is below its % of roof (min_pct_of_roof), a region below its
    % of ideal = ideal time / time (min_pct_of_ideal), either moves too many extra bytes, or is
    slower than the baseline beyond the noise band.

    Exit codes: 0 all bounds hold (one OK line); 1 a violation (one line each); 2 bad input, or
    a stated bound that could be checked on no kernel or region (unless --allow-unchecked).
    The results of the bounds that were checked are always printed first; an unchecked bound
    then follows as an error on stderr. A violation wins over an unchecked bound: both give 1.
    """
    from ncu_roof.compare import read_mapping
    from ncu_roof.diagnose import diagnose_paths
    from ncu_roof.errors import InputError
    from ncu_roof.files import check_writable
    from ncu_roof.gate import RENDERERS, check, read_rules

    if output is not None:
        check_writable(output, force)
    gate_rules = read_rules(rules)
    renames = read_mapping(mapping) if mapping is not None else None
    current = diagnose_paths(reports, algorithmic, ceilings, device=device)
    base = diagnose_paths(baseline, algorithmic, ceilings, device=device) if baseline else None
    result = check(current, gate_rules, base, renames)
    fatal = bool(result.unchecked) and not allow_unchecked
    write_output(RENDERERS[fmt.value](result, unchecked_fatal=fatal), output, force)
    if fatal:
        message = "; ".join(result.unchecked) + " (--allow-unchecked to pass anyway)"
        if not result.passed:  # a violation wins over an unchecked bound
            typer.echo(f"ncu-roof: error: {message}", err=True)
            raise typer.Exit(EXIT_VIOLATION)
        raise InputError(message)
    if not result.passed:
        raise typer.Exit(EXIT_VIOLATION)
