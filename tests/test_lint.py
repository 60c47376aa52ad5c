"""Style and types are part of the build: ruff and mypy (from the test extra) must pass."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("tool, args", [
    ("ruff", ["check", "ncu_roof", "tests", "kernels", "scripts", "capture", "benchmarks"]),
    ("mypy", []),
])
def test_tool_passes(tool: str, args: list[str]) -> None:
    if shutil.which(tool) is None and not (Path(sys.executable).parent / tool).exists():
        pytest.skip(f"{tool} is not installed (pip install -e '.[test]')")
    exe = shutil.which(tool) or str(Path(sys.executable).parent / tool)
    result = subprocess.run([exe, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
