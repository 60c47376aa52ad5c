"""Helpers and fixtures of the store tests (imported by each test file): the real inputs, and
generated reports of known kernel times."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from conftest import REALDATA

# Every real input ncu-roof reads (the flashinfer CSV holds only ncu's log of a failed run)
UNREADABLE = {"flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv"}


def real_inputs() -> list[Path]:
    if not (REALDATA / "MANIFEST.md").is_file():
        pytest.skip(f"real reports not available: {REALDATA} is absent (it lives beside the repo in ../shared)")
    return sorted(p for p in REALDATA.glob("*/*") if p.suffix in (".ncu-rep", ".csv") and p.name not in UNREADABLE)


@pytest.fixture(scope="session")
def store_deps() -> None:
    pytest.importorskip("duckdb", reason="the store needs DuckDB: pip install 'ncu-roof[store]'")


@pytest.fixture(scope="session")
def write_reports(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[Path]]:
    """``write(name, times_us)``: one report per entry of ``times_us`` (a kernel -> microseconds
    dict, or a list of launch times per kernel), built on MW_Baseline's first launch."""
    template = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    if not template.is_file():
        pytest.skip(f"real reports not available: {template} is absent")
    reportgen = pytest.importorskip("reportgen", reason="tests/reportgen.py needs grpcio-tools and protobuf")
    try:
        pb = reportgen.proto_modules()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"cannot build the .ncu-rep protobuf modules: {exc}")
    folder = tmp_path_factory.mktemp("store_reports")

    def write(name: str, runs: Sequence[dict[str, float | list[float]]]) -> list[Path]:
        paths = []
        for i, kernels in enumerate(runs):
            specs = []
            for kernel, times in kernels.items():
                for us in times if isinstance(times, list) else [times]:
                    metrics = {"gpu__time_duration.sum": int(us * 1000), "gpc__cycles_elapsed.max": us * 1500.0,
                               "gpc__cycles_elapsed.avg.per_second": 1.5e9}
                    specs.append(reportgen.LaunchSpec(kernel=kernel, metrics=metrics))
            path = folder / f"{name}_{i:04d}.ncu-rep"
            reportgen.write_report(path, specs, template, pb=pb)
            paths.append(path)
        return paths

    return write
