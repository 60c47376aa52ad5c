"""Compressed reports: a ``.ncu-repz`` (gzip, zip or zstd, told by its first bytes) in, the path
of a plain ``.ncu-rep`` out (a temporary copy, removed when done); a plain report passes through."""

from __future__ import annotations

import gzip
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ncu_roof.errors import ReportLoadError

_COMPRESSED = {b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip", b"\x28\xb5\x2f\xfd": "zstd"}


def compression_of(head: bytes) -> str | None:
    """The compression a file's first bytes name (gzip, zip, zstd), None for a plain file."""
    return next((kind for magic, kind in _COMPRESSED.items() if head.startswith(magic)), None)


@contextmanager
def uncompressed(path: Path) -> Iterator[Path]:
    """The report itself, or for a compressed one (``.ncu-repz``) a temporary uncompressed copy."""
    with path.open("rb") as fh:
        head = fh.read(4)
    kind = compression_of(head)
    if kind is None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="ncu-roof-") as tmp:
        out = Path(tmp) / (path.stem + ".ncu-rep")
        try:
            with out.open("wb") as sink:
                _decompress(path, kind, sink)
        except ReportLoadError:
            raise
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile, ValueError, RuntimeError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ReportLoadError(
                f"{path} is a damaged or truncated {kind} archive ({first}): copy it again, or decompress "
                "it yourself and pass the .ncu-rep"
            ) from None
        yield out


def _decompress(path: Path, kind: str, sink: BinaryIO) -> None:
    if kind == "gzip":
        with gzip.open(path, "rb") as src:
            shutil.copyfileobj(src, sink)
    elif kind == "zip":
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.namelist() if not m.endswith("/")]
            if not members:
                raise ReportLoadError(f"{path} is an empty zip archive: pass the .ncu-rep inside it")
            with archive.open(members[0]) as src:
                shutil.copyfileobj(src, sink)
    else:
        try:
            import zstandard  # type: ignore[import-not-found]
        except ImportError:
            raise ReportLoadError(
                f"{path} is zstd-compressed: pip install zstandard, or decompress it (zstd -d) first"
            ) from None
        with path.open("rb") as src:
            zstandard.ZstdDecompressor().copy_stream(src, sink)
