"""--scheduler: reading and ingesting as Dask tasks on a LocalCluster (loopback, two worker
processes) gives what --jobs 1 gives; a worker that cannot open a path fails in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REALDATA, ROOT, cached_table
from store_helpers import real_inputs

MW = REALDATA / "NCAR__GPU_workshop"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    distributed = pytest.importorskip("distributed", reason="--scheduler needs Dask: pip install 'ncu-roof[dask]'")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], cwd=ROOT, capture_output=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_the_table_on_a_cluster_is_the_table_of_jobs_1_on_every_real_report(scheduler: str) -> None:
    inputs = [str(p) for p in real_inputs()]
    here = _cli("table", *inputs, "--jobs", "1")
    there = _cli("table", *inputs, "--scheduler", scheduler)
    assert here.returncode == 0 and there.returncode == 0, there.stderr
    assert there.stdout == here.stdout and there.stderr == here.stderr
    launches = sum(len(cached_table(Path(p))) for p in inputs)
    assert len(here.stdout.splitlines()) == launches + 1  # every launch and the header


def test_ingest_on_a_cluster_stores_what_jobs_1_stores(scheduler: str, tmp_path: Path) -> None:
    from ncu_roof.store.ingest import ingest
    from ncu_roof.store.query import run_query

    names = ("MW_Baseline.ncu-rep", "MW_DivToMult.ncu-rep", "profile_output.ncu-rep", "sgemm.csv",
             "full_profile.ncu-rep")
    inputs = [p for p in real_inputs() if p.name in names]
    ingest(inputs, tmp_path / "here", jobs=1)
    done = ingest(inputs, tmp_path / "there", scheduler=scheduler)
    assert len(done.added) == len(inputs) > len(names)  # several reports are named profile_output.ncu-rep
    for table, order in (("launches", "run_key, launch_index"), ("kernels", "run_key, device, kernel"),
                         ("findings", "run_key, position"), ("ncu_rules", "run_key, position")):
        sql = f"SELECT * FROM {table} ORDER BY {order}"
        assert run_query(tmp_path / "there", sql).equals(run_query(tmp_path / "here", sql)), table
    runs = "SELECT * EXCLUDE (ingested_at, batch) FROM runs ORDER BY run_key"
    assert run_query(tmp_path / "there", runs).equals(run_query(tmp_path / "here", runs))


def test_a_worker_that_cannot_open_a_path_fails_in_one_line(scheduler: str) -> None:
    from ncu_roof.errors import InputError
    from ncu_roof.read.cluster import map_ordered
    from ncu_roof.read.parallel import _whole_file

    missing = "/nonexistent/reports/run.ncu-rep"
    with pytest.raises(InputError) as info:
        list(map_ordered(_whole_file, [(missing, (missing, "native", None))], scheduler=scheduler))
    worker = str(info.value).split("Dask worker ")[1].split(" ")[0]
    assert worker.startswith("tcp://127.0.0.1:")
    assert str(info.value) == (f"{missing}: Dask worker {worker} cannot open it (No such file or directory): the "
                               "reports must be on storage every worker sees, at the same path")


def test_dask_scheduler_address_is_read_and_an_unreachable_one_is_one_line() -> None:
    pytest.importorskip("distributed", reason="--scheduler needs Dask: pip install 'ncu-roof[dask]'")
    report = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    if not report.is_file():
        pytest.skip(f"real reports not available: {report} is absent")
    r = _cli("table", str(report), env={"DASK_SCHEDULER_ADDRESS": "tcp://127.0.0.1:9"})
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode() == ("ncu-roof: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 (Timed out "
                                 "trying to connect to tcp://127.0.0.1:9 after 5 s): start it, or drop --scheduler "
                                 "(and unset DASK_SCHEDULER_ADDRESS) to read here\n")


def test_local_n_starts_a_cluster_of_n_workers_here_for_the_run() -> None:
    """--scheduler local:2 (issue 47): the table a cluster of two local worker processes reads is the
    one --jobs 1 reads; a local: without a whole number is one line."""
    pytest.importorskip("distributed", reason="--scheduler needs Dask: pip install 'ncu-roof[dask]'")
    inputs = [str(MW / "MW_Baseline.ncu-rep"), str(MW / "MW_DivToMult.ncu-rep")]
    here = _cli("table", *inputs, "--jobs", "1")
    there = _cli("table", *inputs, "--scheduler", "local:2")
    assert there.returncode == 0, there.stderr
    assert there.stdout == here.stdout
    bad = _cli("table", *inputs, "--scheduler", "local:x")
    assert bad.returncode == 2 and bad.stderr.decode().strip() == (
        "ncu-roof: error: --scheduler local:x: give local:N with N the worker processes (local:4), or a "
        "scheduler's address (tcp://host:8786)")
