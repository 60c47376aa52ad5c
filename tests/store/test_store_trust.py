"""The store says when it cannot be trusted (issue 46, item 6): a Parquet part deleted or added by
hand is one line, not rows silently missing; queries are one SELECT, so nothing is written beside a
store opened read-only."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REALDATA
from store_helpers import store_deps  # noqa: F401 - fixtures

from ncu_roof.errors import InputError

pytestmark = pytest.mark.usefixtures("store_deps")
MW = REALDATA / "NCAR__GPU_workshop"


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
