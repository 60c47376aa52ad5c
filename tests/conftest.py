"""Shared fixtures: the real data in ../shared, a real ncu (Debian's 2024.1.1) and its examples."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NCU_ROOF_SHARED", ROOT.parent / "shared"))
REALDATA = SHARED / "realdata"
FIXTURES = ROOT / "fixtures"
NCU_CACHE = Path(os.environ.get("NCU_ROOF_NCU_DIR", Path.home() / ".cache" / "ncu-roof" / "ncu"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("NCU_ROOF_GPU") == "1":
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: set NCU_ROOF_GPU=1 on a GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def realdata() -> Path:
    """../shared/realdata (third-party reports); skip where it is absent."""
    if not (REALDATA / "MANIFEST.md").is_file():
        pytest.skip(f"real reports not available: {REALDATA} is absent (it lives beside the repo in ../shared)")
    return REALDATA


def _get_ncu() -> Path | None:
    exe = NCU_CACHE / "root" / "usr" / "lib" / "nsight-compute" / "ncu"
    if exe.is_file():
        return exe
    script = SHARED / "tools" / "get-ncu.sh"
    if not script.is_file():
        return None
    try:
        subprocess.run(["bash", str(script), str(NCU_CACHE)], check=True, capture_output=True, timeout=900)
    except (subprocess.SubprocessError, OSError):
        return None
    return exe if exe.is_file() else None


@pytest.fixture(scope="session")
def ncu_exe() -> Path:
    """A real ncu 2024.1.1 that runs without a GPU (unpacked by ../shared/tools/get-ncu.sh)."""
    exe = _get_ncu()
    if exe is None:
        pytest.skip("no ncu: ../shared/tools/get-ncu.sh could not unpack Debian's nsight-compute")
    return exe


@pytest.fixture(scope="session")
def ncu_examples(ncu_exe: Path) -> Path:
    """Nsight Compute's example reports (with a README.TXT each) that come with the ncu package."""
    root = NCU_CACHE / "root" / "usr" / "share" / "doc" / "nsight-compute" / "examples"
    if not root.is_dir():
        pytest.skip("Nsight Compute example reports were not unpacked with ncu")
    return root


def ncu_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running ncu here: a scratch HOME (ncu writes there) and the C locale."""
    env = dict(os.environ)
    env.update(HOME=str(tmp_path), LC_ALL="C", LANG="C")
    return env


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--update-golden``: rewrite tests/golden/ (the chart specs ``*.vl.json``; the tables, findings
    ``*.json`` and Markdown ``*.md`` of the synthetic fixtures) from the current code, on purpose."""
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ (chart specs, tables, findings, Markdown) "
                          "instead of comparing; review the diff before committing")
