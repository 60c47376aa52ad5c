"""Options several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Reports = Annotated[list[Path], typer.Argument(
    metavar="REPORT", help=".ncu-rep files, CSV exports, folders or globs")]
Device = Annotated[str | None, typer.Option(
    "--device", help="GPU for inputs that do not name one, as ncu spells it (e.g. 'Tesla V100-PCIE-32GB')")]
