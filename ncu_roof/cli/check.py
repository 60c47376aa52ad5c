"""``ncu-roof check``: a CI gate. Exit 0 when all bounds hold, 1 on a violation, 2 on bad input."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ncu_roof.cli._options import Force, Jobs, Output, Quiet, Reader, ReaderChoice, asks_diagnosis, use_read_options
from ncu_roof.cli._output import write_output

if TYPE_CHECKING:
    from ncu_roof.comparison.gate import GateResult
    from ncu_roof.diagnosis import DiagnoseRequest

EXIT_OK, EXIT_VIOLATION, EXIT_INPUT = 0, 1, 2


class Format(str, Enum):
    text = "text"
    json = "json"


# check's --algorithmic says what it is for here
REGION_COUNTS = Annotated[
    Path | None, typer.Option(help="TOML file of [[region]] algorithmic counts (for the region bounds)")]
ALLOW_UNCHECKED = "pass (with a note) when a stated bound can be checked on no kernel or region"


@asks_diagnosis("reports", {"algorithmic": REGION_COUNTS}, algorithmic="baseline", ceilings="window",
                device="allow_unchecked")
def command(
    reports: Annotated[
        list[str], typer.Argument(metavar="REPORT", help=".ncu-rep files, CSV exports, folders or quoted globs")],
    rules: Annotated[
        Path, typer.Option("--rules", help="TOML file of gate rules: [defaults], [[kernel]] and [[region]] bounds")],
    baseline: Annotated[list[str] | None, typer.Option(
        metavar="REPORT", help="times to hold against (max_slowdown); repeatable")] = None,
    baseline_store: Annotated[Path | None, typer.Option(
        "--baseline-store", metavar="DIR", help="times to hold against: each kernel's median over its last "
                                                "--window runs on the same device in this store")] = None,
    window: Annotated[int, typer.Option("--window", min=1, metavar="N",
                                        help="runs of --baseline-store per kernel (default 5)")] = 5,
    mapping: Annotated[Path | None, typer.Option(
        "--map", help='TOML file of renames: [rename] baseline_name = "new_name"')] = None,
    fmt: Annotated[Format | None, typer.Option(
        "--format", "-f", help="text or json (default: from the -o suffix, else text)")] = None,
    output: Output = None,
    force: Force = False,
    allow_unchecked: Annotated[bool, typer.Option("--allow-unchecked", help=ALLOW_UNCHECKED)] = False,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
    *,
    asked: DiagnoseRequest,
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
    from ncu_roof.files import check_writable
    from ncu_roof.render.formats import pick_format

    name = pick_format("check", fmt.value if fmt else None, output)
    if output is not None:
        check_writable(output, force)
    result = gate(asked, rules, baseline, mapping, baseline_store, window)
    write_verdict(result, name, output, force, allow_unchecked)


def gate(asked: DiagnoseRequest, rules: Path, baseline: list[str] | None, mapping: Path | None,
         baseline_store: Path | None, window: int) -> GateResult:
    """The rules checked on the request's reports, against ``baseline`` or the store's recent runs."""
    from ncu_roof.comparison.gate import check_paths
    from ncu_roof.errors import InputError

    if baseline_store is None:
        return check_paths(asked, rules, baseline, mapping)
    if baseline or mapping:
        raise InputError("give --baseline REPORT or --baseline-store DIR, not both (--map goes with --baseline)")
    from ncu_roof.store.history import check_against_store

    return check_against_store(asked, rules, baseline_store, window)


def write_verdict(result: GateResult, fmt: str, output: Path | None, force: bool, allow_unchecked: bool) -> None:
    """Write the result as ``fmt``, then say what it means: an error line, exit 1 or 2 (see :func:`verdict`)."""
    from ncu_roof.errors import InputError
    from ncu_roof.render.gate import RENDERERS

    exit_code, error = verdict(result, allow_unchecked)
    if exit_code == EXIT_INPUT and fmt == "text" and not (result.checked["kernels"] or result.checked["regions"]):
        raise InputError(f"no kernel or region checked: {error}")  # not an OK line over nothing
    write_output(RENDERERS[fmt](result, error is not None), output, force)
    if exit_code == EXIT_INPUT:
        raise InputError(error)
    if error is not None:  # a violation wins over an unchecked bound
        typer.echo(f"ncu-roof: error: {error}", err=True)
    if exit_code:
        raise typer.Exit(exit_code)


def verdict(result: GateResult, allow_unchecked: bool = False) -> tuple[int, str | None]:
    """The exit code of a gate result, and the error its unchecked bounds make.

    0 all bounds hold, 1 a violation, 2 a stated bound checked on nothing (and no violation).
    The error (None with ``allow_unchecked`` or nothing unchecked) follows the printed result: a
    line on stderr with exit 1 (a violation wins), or the InputError of exit 2; the text renderer
    then leaves the unchecked bounds out of its notes."""
    if not result.unchecked or allow_unchecked:
        return (EXIT_OK if result.passed else EXIT_VIOLATION), None
    error = "; ".join(result.unchecked) + " (--allow-unchecked to pass anyway)"
    return (EXIT_INPUT if result.passed else EXIT_VIOLATION), error
