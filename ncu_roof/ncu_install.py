"""Where Nsight Compute's ``ncu`` is installed: the one place both capture (to run it) and the
``ncu_report`` reader (to import NVIDIA's Python module beside it) look for it."""

from __future__ import annotations

import glob
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from ncu_roof.errors import CaptureError

# Where ncu lives besides $NCU and PATH, most specific first (newest version first within a glob).
NCU_GLOBS: tuple[str, ...] = (
    "/usr/local/cuda/bin/ncu",
    "/usr/local/cuda-*/bin/ncu",
    "/opt/nvidia/nsight-compute/*/ncu",
    "/usr/local/NVIDIA-Nsight-Compute*/ncu",
    "/opt/cuda/bin/ncu",
    "/usr/lib/nsight-compute/ncu",
)


class NcuNotFoundError(CaptureError):
    """No ncu executable."""


def is_exe(path: Path) -> bool:
    """An executable file."""
    return path.is_file() and os.access(path, os.X_OK)


def _version_key(path: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


def find_ncu(explicit: str | None, env: Mapping[str, str], globs: Sequence[str] = NCU_GLOBS) -> Path:
    """Locate ncu: ``--ncu PATH``, then ``$NCU``, then ``PATH``, then the usual install folders."""
    for given, origin in ((explicit, "--ncu"), (env.get("NCU"), "NCU")):
        if given:
            path = Path(given).expanduser()
            if is_exe(path):
                return path
            raise NcuNotFoundError(
                f"ncu not found: {origin} {given} is not an executable file "
                "(install Nsight Compute or pass --ncu PATH / set NCU)"
            )
    on_path = shutil.which("ncu", path=env.get("PATH", os.defpath))
    if on_path:
        return Path(on_path)
    for pattern in globs:
        # absolute install-path patterns (/usr/local/cuda*/...): Path.glob takes only relative ones
        for hit in sorted(glob.glob(pattern), key=_version_key, reverse=True):  # noqa: PTH207
            if is_exe(Path(hit)):
                return Path(hit)
    raise NcuNotFoundError(
        "ncu not found: install Nsight Compute (it comes with the CUDA toolkit) "
        "or pass --ncu PATH / set NCU"
    )
