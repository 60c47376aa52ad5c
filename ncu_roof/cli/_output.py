"""Writing command output: stdout by default, a file only if it does not exist (or --force)."""

from __future__ import annotations

import sys
from pathlib import Path

from ncu_roof.files import check_writable, write_atomic


def write_output(text: str | bytes, output: Path | None, force: bool = False) -> None:
    """Print, or write to ``output``; refuse to overwrite an existing file unless ``force``."""
    if output is None:
        sys.stdout.write(text if isinstance(text, str) else text.decode())
        return
    check_writable(output, force)
    write_atomic(output, text)
