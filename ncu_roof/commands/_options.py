"""Options several commands share."""

from __future__ import annotations

from typing import Annotated

import typer

Device = Annotated[str | None, typer.Option(
    "--device", help="GPU for inputs that do not name one, as ncu spells it (e.g. 'Tesla V100-PCIE-32GB')")]
