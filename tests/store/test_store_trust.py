"""The store says when it cannot be trusted (issue 46, item 6): a Parquet part deleted, added,
changed or cut is one line naming it, not rows silently missing; queries are one SELECT, so nothing
is written beside a store opened read-only; a full disk is one line and adds nothing; a device name
too long for a folder name is stored whole."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from conftest import REALDATA
from store_helpers import store_deps  # noqa: F401 - fixtures

from ncu_roof.errors import InputError

pytestmark = pytest.mark.usefixtures("store_deps")
MW = REALDATA / "NCAR__GPU_workshop"
LAYERNORM = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    if not MW.is_dir():
        pytest.skip(f"{MW} is not in the real data")
    from ncu_roof.store.ingest import ingest

    root = tmp_path / "store"
    ingest([MW / "MW_Baseline.ncu-rep", MW / "MW_DivToMult.ncu-rep"], root, {"commit": "a"}, jobs=1)
    return root


def _parts(store: Path) -> list[Path]:
    return sorted(store.rglob("*.parquet"))


def test_a_deleted_part_is_named_before_any_query(store: Path) -> None:
    from ncu_roof.store.query import run_query

    assert run_query(store, "SELECT count(*) AS n FROM launches")["n"].tolist() == [10]
    part = next(p for p in _parts(store) if "launches" in p.parts)
    part.unlink()
    with pytest.raises(InputError, match=r"^the store at .* is damaged: batch \S+ lacks launches/") as err:
        run_query(store, "SELECT count(*) AS n FROM launches")
    assert "(1 missing, 0 unlisted)" in str(err.value)


def test_a_part_added_by_hand_is_named(store: Path) -> None:
    from ncu_roof.store.query import run_query

    part = next(p for p in _parts(store) if "runs" in p.parts)
    (part.parent / "extra.parquet").write_bytes(part.read_bytes())
    with pytest.raises(InputError, match=r"holds runs/.*extra\.parquet, which it does not list"):
        run_query(store, "SELECT * FROM runs")


@pytest.mark.parametrize(("sql", "said"), [
    ("COPY (SELECT * FROM runs) TO '{out}'", "COPY"),
    ("SELECT 1; COPY (SELECT * FROM runs) TO '{out}'", "several statements"),
    ("CREATE TABLE t AS SELECT * FROM runs", "CREATE"),
    ("EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}'", "EXPLAIN"),
])
def test_queries_that_would_write_are_refused(store: Path, tmp_path: Path, sql: str, said: str) -> None:
    from ncu_roof.store.query import run_query

    out = tmp_path / "out.csv"
    with pytest.raises(InputError, match=f"^the store is read-only here: give one SELECT .*not {said}$"):
        run_query(store, sql.format(out=out))
    assert not out.exists()
    assert run_query(store, "SELECT ';' AS x")["x"].tolist() == [";"]  # a semicolon in a string is no statement


def _cli_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from ncu_roof.cli import main

    with pytest.raises(SystemExit) as done:
        main(list(args))
    return int(done.value.code or 0), capsys.readouterr().err


def test_a_300_character_device_name_is_stored_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The folder of its rows was named after it (device=XXX...: 'File name too long', then the generic
    'could not process the input (IOException)'); the name is cut in the folder, whole in the rows."""
    from ncu_roof.store.query import run_query

    name = "NVIDIA GeForce RTX 5070 " + "x" * 276
    export = tmp_path / "synthetic_long_device.csv"
    export.write_text(LAYERNORM.read_text(encoding="utf-8").replace("NVIDIA GeForce RTX 5070", name), encoding="utf-8")
    code, err = _cli_in_process(capsys, "ingest", "-q", str(export), "--store", str(tmp_path / "s"))
    assert (code, err) == (0, "")
    got = run_query(tmp_path / "s", "SELECT device, count(*) AS n, sum(time_s) AS t FROM launches GROUP BY device")
    assert got["device"].tolist() == [name] and len(name) == 300 and got["n"].tolist() == [6]
    assert got["t"].tolist() == [pytest.approx(4.54975e-3)]
    folders = {p.parent.name for p in (tmp_path / "s").rglob("*.parquet")}
    assert len(folders) == 1 and all(len(f) <= 207 and f.startswith("device=NVIDIA%20GeForce") for f in folders)


@pytest.mark.parametrize("failure", ["oserror", "duckdb"])
def test_a_full_disk_is_one_line_and_adds_nothing(store: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str], failure: str) -> None:
    import duckdb

    from ncu_roof.store import ingest as ingest_module

    before = sorted(p.relative_to(store) for p in store.rglob("*") if ".staging" not in p.parts)

    def full(*_: object) -> None:
        if failure == "oserror":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        raise duckdb.IOException('IO Error: Could not write file "x.parquet": No space left on device')

    monkeypatch.setattr(ingest_module, "_write_parquet", full)
    code, err = _cli_in_process(capsys, "ingest", "-q", str(LAYERNORM), "--store", str(store))
    assert code == 2
    assert err == (f"ncu-roof: error: cannot add to the store at {store}: its disk is full (no space left on device); "
                   "nothing was added: free space there, or give --store a folder on another disk\n")
    assert sorted(p.relative_to(store) for p in store.rglob("*") if ".staging" not in p.parts) == before
    assert not any((store / ".staging").iterdir())


@pytest.mark.parametrize("damage", ["flip", "truncate", "flip, its time kept"])
def test_a_damaged_part_is_named_in_one_line(store: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    part = next(p for p in _parts(store) if "launches" in p.parts)
    st = part.stat()
    data = bytearray(part.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) - 5] ^= 0x10  # the footer's length (its top byte): unreadable wherever the store lives
    part.write_bytes(bytes(data))
    if damage == "flip, its time kept":  # as a disk's own damage leaves it: only reading it finds it
        os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns))
    for command in (["query", "--store", str(store), "SELECT count(*) FROM launches"], ["trend", "--store", str(store)],
                    ["ingest", "-q", str(LAYERNORM), "--store", str(store)]):
        code, err = _cli_in_process(capsys, *command)
        said = {"flip": "has changed since it was written (its sha256 differs)",
                "truncate": f"is {len(data):,} bytes, written as {st.st_size:,}",
                "flip, its time kept": "cannot be read (DuckDB: "}[damage]
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"ncu-roof: error: the store at {store} is damaged: its Parquet part {part} {said}")
        assert err.endswith("; restore the folder from a backup, or ingest the reports into a new store\n")
