"""The store: ingest (one run per report, all or nothing), its tables against ``ncu-roof table``,
the schema version check, and the CLI's one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REALDATA, ROOT
from store_helpers import real_inputs, store_deps, write_reports  # noqa: F401 - fixtures

pytestmark = pytest.mark.usefixtures("store_deps")
MW = REALDATA / "NCAR__GPU_workshop"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, object]:
    """Every real input ingested twice into one store: (store, first ingest, second ingest)."""
    from ncu_roof.store.ingest import ingest

    store = tmp_path_factory.mktemp("real") / "store"
    inputs = real_inputs()
    first = ingest(inputs, store, {"commit": "a"}, jobs=2)
    second = ingest(inputs, store, {"commit": "b"}, jobs=2)
    return store, first, second


def _query(store: Path, sql: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    from ncu_roof.store.layout import connect

    con = connect(store)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def test_ingesting_the_real_reports_twice_gives_one_run_each(real_store: tuple[Path, object, object]) -> None:
    store, first, second = real_store
    inputs = real_inputs()
    assert len(inputs) >= 20
    assert len(first.added) == len(inputs) and first.already == []  # type: ignore[attr-defined]
    assert second.added == [] and second.batch is None  # type: ignore[attr-defined]
    assert sorted(a["path"] for a in second.already) == sorted(map(str, inputs))  # type: ignore[attr-defined]
    assert _query(store, "SELECT count(*), count(DISTINCT sha256) FROM runs") == [(len(inputs), len(inputs))]
    assert len(list((store / "batches").iterdir())) == 1
    # the labels of the first ingest stay: the second added nothing
    assert _query(store, "SELECT DISTINCT labels FROM runs") == [('{"commit": "a"}',)]


def test_the_stores_launches_equal_ncu_roof_table_row_for_row(real_store: tuple[Path, object, object]) -> None:
    from ncu_roof.read.table import load_table_csv, table_text
    from ncu_roof.store.layout import connect

    store = real_store[0]
    con = connect(store)
    total = 0
    for path in real_inputs():
        table, text = load_table_csv([path], jobs=1)
        (key,) = con.execute("SELECT run_key FROM runs WHERE path = ?", [str(path)]).fetchone()
        stored = con.execute("SELECT * FROM launches WHERE run_key = ? ORDER BY launch_index", [key]).df()
        assert table_text(stored[list(table.columns)], "csv") == text, path.name
        total += len(stored)
        if path.parent.name == "jonahshader__alife_cuda":
            assert len(stored) == 143, path.name
    con.close()
    assert _query(store, "SELECT count(*) FROM launches") == [(total,)]


def test_the_runs_table_says_how_each_report_was_captured(real_store: tuple[Path, object, object]) -> None:
    store = real_store[0]
    row = _query(store, "SELECT device, ncu_version, cuda_version, driver_version, replay_mode, clock_control, "
                        "cache_control, metric_set, report_format_version, input_kind, launches, kernels, "
                        "size_bytes, ncu_roof_version FROM runs WHERE path LIKE '%MW_Baseline%'")
    assert row == [("Tesla V100-SXM2-32GB", "2022.2.0.0", "11.6", "510.47.03", "kernel", "base", "all", "full", 7,
                    "ncu-rep", 5, 5, 1506769, "0.1.0")]
    csv = _query(store, "SELECT input_kind, ncu_version, report_format_version FROM runs WHERE path LIKE '%sgemm.csv'")
    assert csv == [("csv", None, None)]
    # partitioned by device: one folder per GPU in each table
    folders = {p.name for p in (store / "batches").glob("*/launches/*")}
    [(devices,)] = _query(store, "SELECT count(DISTINCT coalesce(device, '')) FROM launches")  # no name: one folder
    assert "device=Tesla%20V100-SXM2-32GB" in folders and len(folders) == devices


def test_findings_and_ncu_rules_keep_the_diagnosis(real_store: tuple[Path, object, object]) -> None:
    store = real_store[0]
    (evidence,) = _query(store, "SELECT f.evidence FROM findings f JOIN runs r USING (run_key) "
                                "WHERE r.path LIKE '%MW_Baseline%' AND f.rule = 'fp64-pipe'")[0]
    assert json.loads(str(evidence))["inst_fp64_rcp"] == 38647495
    rules = _query(store, "SELECT count(*) FROM ncu_rules n JOIN runs r USING (run_key) WHERE r.path LIKE '%MW_Base%'")
    assert rules == [(49,)]


def test_a_failed_ingest_leaves_the_store_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ncu_roof.errors import InputError
    from ncu_roof.store import layout
    from ncu_roof.store.ingest import ingest

    store = tmp_path / "s"
    ingest([MW / "MW_Baseline.ncu-rep"], store, jobs=1)
    before = sorted(p.relative_to(store) for p in store.rglob("*") if ".staging" not in p.parts)
    bad = REALDATA / "meinie0826__Roofline-Analysis" / "flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv"
    with pytest.raises(InputError, match="holds no CSV"):  # the second input fails after the first was staged
        ingest([MW / "MW_DivToMult.ncu-rep", bad], store, jobs=1)

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(layout, "commit", fail)  # everything written, the rename not done
    with pytest.raises(InputError, match="^cannot add to the store at .*: disk full; nothing was added$"):
        ingest([MW / "MW_DivToMult.ncu-rep"], store, jobs=1)
    after = sorted(p.relative_to(store) for p in store.rglob("*") if ".staging" not in p.parts)
    assert after == before
    assert not any((store / ".staging").iterdir())
    assert _query(store, "SELECT count(*) FROM runs") == [(1,)]


def test_a_batch_is_written_in_parts_and_reads_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      write_reports) -> None:  # noqa: F811
    """Every PART_RUNS runs the staged rows go to Parquet (what an ingest holds is one part), and a
    failure after parts were written still leaves the store as it was."""
    from ncu_roof.errors import InputError
    from ncu_roof.store import ingest as ingest_module
    from ncu_roof.store import layout

    monkeypatch.setattr(ingest_module, "PART_RUNS", 2)
    reports = write_reports("parts", [{"k": 100.0 + i} for i in range(5)])
    store = tmp_path / "s"
    done = ingest_module.ingest(reports, store, jobs=1)
    parts = sorted(p.name for p in (store / "batches" / done.batch / "runs").rglob("*.parquet"))
    assert parts == ["part0_0.parquet", "part1_0.parquet", "part2_0.parquet"]
    assert _query(store, "SELECT count(*) FROM runs") == [(5,)]
    assert _query(store, "SELECT count(*) FROM launches") == [(5,)]
    assert _query(store, "SELECT count(DISTINCT run_key) FROM kernels") == [(5,)]

    def fail(*_: object) -> None:
        raise OSError("disk full")

    more = write_reports("more", [{"k": 200.0 + i} for i in range(5)])
    monkeypatch.setattr(layout, "commit", fail)
    with pytest.raises(InputError, match="^cannot add to the store at .*: disk full; nothing was added$"):
        ingest_module.ingest(more, store, jobs=1)
    assert _query(store, "SELECT count(*) FROM runs") == [(5,)]
    assert not any((store / ".staging").iterdir())


def test_a_killed_ingest_leaves_no_partial_run(tmp_path: Path, write_reports) -> None:  # noqa: F811
    from ncu_roof.store.ingest import ingest

    store = tmp_path / "s"
    ingest([MW / "MW_Baseline.ncu-rep"], store, jobs=1)
    batches = sorted((store / "batches").iterdir())
    reports = write_reports("kill", [{"k": 100.0 + i} for i in range(40)])
    proc = subprocess.Popen([sys.executable, "-m", "ncu_roof", "ingest", *map(str, reports), "--store", str(store),
                             "--jobs", "1"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list((store / ".staging").glob("*/batch")) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # some reports staged
    assert proc.poll() is None, "the ingest ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert sorted((store / "batches").iterdir()) == batches
    assert _query(store, "SELECT count(*) FROM runs") == [(1,)]
    assert _query(store, "SELECT count(*) FROM launches") == [(5,)]
    done = ingest(reports, store, jobs=1)  # the next ingest clears what the killed one staged
    assert len(done.added) == 40 and not list((store / ".staging").iterdir())
    assert _query(store, "SELECT count(*) FROM runs") == [(41,)]


def test_a_store_of_another_schema_version_is_refused_in_one_line(tmp_path: Path) -> None:
    from ncu_roof.store.ingest import ingest

    store = tmp_path / "s"
    ingest([MW / "MW_Baseline.ncu-rep"], store, jobs=1)
    manifest = json.loads((store / "store.json").read_text())
    for version, hint in ((0, "ingest the reports again into a new store (ncu-roof ingest REPORT... --store "
                              "NEW_DIR)"),
                          (2, "it was written by a newer ncu-roof: upgrade ncu-roof (pip install -U ncu-roof) to "
                              "read it")):
        (store / "store.json").write_text(json.dumps({**manifest, "schema_version": version}))
        for args in (("query", "--store", str(store), "SELECT 1"), ("ingest", str(MW), "--store", str(store))):
            r = _cli(*args)
            assert r.returncode == 2 and r.stdout == ""
            assert r.stderr == (f"ncu-roof: error: {store} is an ncu-roof store of schema version {version}; this "
                                f"ncu-roof reads schema version 1: {hint}\n")


def test_cli_ingest_query_and_their_errors(tmp_path: Path) -> None:
    store = tmp_path / "s"
    r = _cli("ingest", str(MW), "--store", str(store), "--label", "commit=abc", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].endswith(": 2 run(s) added (batch " + r.stdout.split("(batch ")[1].split(")")[0]
                                              + "), 0 already there")
    again = _cli("ingest", str(MW / "MW_Baseline.ncu-rep"), "--store", str(store))
    assert again.stdout.splitlines()[-1] == f"{store}: 0 run(s) added, 1 already there"
    q = _cli("query", "--store", str(store), "-f", "csv",
             "SELECT kernel, time_s FROM kernels JOIN runs USING (run_key) WHERE path LIKE '%DivToMult%' "
             "AND kernel LIKE 'compute_tendencies_x_279%'")
    assert q.stdout == "kernel,time_s\ncompute_tendencies_x_279_gpu,0.00348224\n"
    errors = {
        ("ingest", str(MW), "--store", str(store), "--label", "commit"):
            "--label 'commit' is not key=value: write e.g. --label commit=1a2b3c",
        ("query", "--store", str(store), "SELECT nope FROM runs"):
            'the query failed: Binder Error: Referenced column "nope" not found in FROM clause!',
        ("query", "--store", str(tmp_path / "none"), "SELECT 1"):
            f"{tmp_path / 'none'} does not exist: make a store with ncu-roof ingest REPORT... --store "
            f"{tmp_path / 'none'}",
        ("ingest", str(MW), "--store", str(MW)):
            f"{MW} is not empty and is not an ncu-roof store (no store.json): give --store a new or empty folder",
    }
    for args, line in errors.items():
        r = _cli(*args)
        assert (r.returncode, r.stderr) == (2, f"ncu-roof: error: {line}\n"), args
