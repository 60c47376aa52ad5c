"""What one diagnosis is asked (:class:`DiagnoseRequest`), in a module that imports nothing heavy:
the CLI builds one before pandas is imported (a big report's launches are then already being read
while pandas loads, :func:`ncu_roof.read.parallel.start_reading`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ncu_roof.model.roofline import Thresholds


@dataclass(frozen=True)
class DiagnoseRequest:
    """What one diagnosis is asked: its inputs (reports, exports, folders, patterns) and what shapes
    their placing: algorithmic counts, measured ceilings, the GPU where an input names none, the
    thresholds, and whether to find source lines (the gate and the store show none). The CLI and the
    library build one and hand it down, instead of threading each option through every signature."""

    inputs: str | Path | tuple[str | Path, ...]
    algorithmic: str | Path | None = None
    ceilings: str | Path | None = None
    device: str | None = None
    thresholds: Thresholds | None = None
    lines: bool = True

    def of(self, inputs: str | Path | Iterable[str | Path]) -> DiagnoseRequest:
        """The same request for other inputs (the other side of a comparison, a baseline)."""
        return replace(self, inputs=inputs if isinstance(inputs, (str, Path)) else tuple(inputs))
