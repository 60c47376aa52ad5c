"""Debian's ncu 2024.1.1 for the tests, unpacked once per machine by ``../shared/tools/get-ncu.sh``
into :data:`NCU_CACHE` (``$NCU_ROOF_NCU_DIR``, default ``~/.cache/ncu-roof/ncu``; about 189 MB).

Whatever uses the unpacked files (ncu, its example reports, the ``.proto`` schemas
``tests/reportgen.py`` compiles) calls :func:`unpacked_ncu` first. pytest-xdist's workers take
``.ncu-unpack.lock`` in turn: one unpacks while the others wait, and an unpack counts as done only
when the script has finished and left :data:`MARKER` (ncu's executable is written before the rest
of the package, so its presence proves nothing).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NCU_ROOF_SHARED", ROOT.parent / "shared"))
NCU_CACHE = Path(os.environ.get("NCU_ROOF_NCU_DIR", Path.home() / ".cache" / "ncu-roof" / "ncu"))
LIB = NCU_CACHE / "root" / "usr" / "lib" / "nsight-compute"
EXE = LIB / "ncu"
FILE_FORMAT = LIB / "extras" / "FileFormat"
MARKER = NCU_CACHE / ".unpacked"


def _whole() -> bool:
    """Every part the tests use is there (an unpack from before the marker, or one killed midway)."""
    return EXE.is_file() and any(FILE_FORMAT.rglob("*.proto")) and (LIB / "target").is_dir()


def unpacked_ncu() -> Path | None:
    """ncu's executable once the whole package is unpacked (waiting for another process that is
    unpacking it); None where it cannot be (no ``get-ncu.sh``, no Debian archive, no network)."""
    if MARKER.is_file():
        return EXE
    script = SHARED / "tools" / "get-ncu.sh"
    try:
        NCU_CACHE.mkdir(parents=True, exist_ok=True)
        with (NCU_CACHE.parent / ".ncu-unpack.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not MARKER.is_file():
                if not _whole():
                    if not script.is_file():
                        return None
                    shutil.rmtree(NCU_CACHE / "root", ignore_errors=True)  # a partial unpack
                    subprocess.run(["bash", str(script), str(NCU_CACHE)], check=True, capture_output=True,
                                   timeout=900)
                if _whole():
                    MARKER.write_text("unpacked by tests/ncu_cache.py\n")
    except (subprocess.SubprocessError, OSError):
        return None
    return EXE if MARKER.is_file() else None
