"""Options several commands share."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


class SummaryFormat(str, Enum):
    """What ``diagnose`` and ``compare`` print."""

    text = "text"
    markdown = "markdown"
    json = "json"


Reports = Annotated[list[Path], typer.Argument(
    metavar="REPORT", help=".ncu-rep files, CSV exports, folders or globs")]
Device = Annotated[str | None, typer.Option(
    "--device", help="GPU for inputs that do not name one, as ncu spells it (e.g. 'Tesla V100-PCIE-32GB')")]


class ReaderChoice(str, Enum):
    native = "native"
    ncu_report = "ncu_report"


Reader = Annotated[ReaderChoice, typer.Option(
    "--reader", help=".ncu-rep reader: native (ncu-roof's own, streaming) or ncu_report (NVIDIA's module: "
                     "pip install ncu-report; for report formats the native reader does not know)")]
Jobs = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, help="processes reading inputs and the launches of big reports (default: the cores "
                                "available)")]
Scheduler = Annotated[str | None, typer.Option(
    "--scheduler", envvar="DASK_SCHEDULER_ADDRESS", metavar="ADDRESS",
    help="read and diagnose each input as a task on this Dask cluster (tcp://host:8786, or local:N for N "
         "worker processes here; pip install 'ncu-roof[dask]'); the inputs must be on storage every worker "
         "sees, at the same path")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar while reading big reports")]
def stdout_dash(value: Path | None) -> Path | None:
    """``-o -`` is standard output, as in every Unix tool (not a file named ``-``)."""
    return None if value is not None and str(value) == "-" else value


Output = Annotated[Path | None, typer.Option("--output", "-o", help="write here instead of stdout ('-': stdout)",
                                             callback=stdout_dash)]
Force = Annotated[bool, typer.Option("--force", help="overwrite an existing output file")]
ForceFiles = Annotated[bool, typer.Option("--force", help="overwrite existing output files")]
Algorithmic = Annotated[Path | None, typer.Option(help="TOML file of [[region]] algorithmic counts")]
Ceilings = Annotated[Path | None, typer.Option(help="measured roofs (from `ncu-roof ceilings`)")]


def use_read_options(reader: ReaderChoice, jobs: int | None, quiet: bool, scheduler: str | None = None) -> None:
    """Make ``--reader``, ``--jobs``, ``--quiet`` and ``--scheduler`` the options every read of this
    command uses."""
    from ncu_roof.read.parallel import set_options

    set_options(reader=reader.value, jobs=jobs, quiet=quiet, scheduler=scheduler or None)
