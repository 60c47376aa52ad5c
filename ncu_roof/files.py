"""Output files: checked before any work is done, and never overwritten without ``force``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ncu_roof.errors import InputError


def check_writable(path: Path, force: bool, suffixes: Sequence[str] | None = None, what: str = "file",
                   option: str = "-o") -> None:
    """Raise a one-line InputError unless ``path`` may be written (suffix, existing file, folder)."""
    if suffixes is not None and path.suffix.lower() not in suffixes:
        choices = ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}" if len(suffixes) > 1 else suffixes[0]
        raise InputError(f"cannot save a {what} as {path.name}: use {choices}")
    if path.exists() and not force:
        raise InputError(f"{path} exists: choose another {option} path or pass --force to overwrite it")
    if not path.parent.exists():
        raise InputError(f"cannot write {path}: folder {path.parent} does not exist")
