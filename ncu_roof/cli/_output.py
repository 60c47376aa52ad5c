"""Writing command output: stdout by default, a file only if it does not exist (or --force).
Standard input and pipes are named as the user gave them (``-``, a FIFO's path), not by their
temporary copies (:mod:`ncu_roof.stream_names`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import typer

from ncu_roof.files import check_writable, write_atomic
from ncu_roof.stream_names import shown


def write_output(text: str | bytes, output: Path | None, force: bool = False) -> None:
    """Print, or write to ``output``; refuse to overwrite an existing file unless ``force``."""
    text = shown(text) if isinstance(text, str) else text
    if output is None:
        sys.stdout.write(text if isinstance(text, str) else text.decode())
        return
    check_writable(output, force)
    write_atomic(output, text)


def echo_notes(notes: Iterable[str]) -> None:
    """Each note as a line on stderr (``ncu-roof: note: ...``)."""
    for note in notes:
        typer.echo(shown(f"ncu-roof: note: {note}", message=True), err=True)
