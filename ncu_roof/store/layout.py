"""Where a store keeps its files, its schema version check, its lock, and a DuckDB connection
with one view per table.

Only committed batches are read: a batch is staged under ``.staging/`` and moved to ``batches/``
by one rename, so readers see a whole batch or none of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ncu_roof.errors import InputError
from ncu_roof.store.parts import check_fingerprints, read_failure
from ncu_roof.store.schema import METADATA_KEY, SCHEMA_VERSION, TABLES, create_sql

MANIFEST = "store.json"
BATCHES = "batches"
STAGING = ".staging"
LOCK = ".lock"
FORMAT = "ncu-roof store"


def duckdb() -> Any:
    """The duckdb module, or the one line saying which extra gives it."""
    try:
        import duckdb as module
    except ModuleNotFoundError:
        raise InputError("the store needs DuckDB: pip install 'ncu-roof[store]'") from None
    return module


def _manifest(store: Path) -> dict[str, Any] | None:
    path = store / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is damaged ({exc}): it is not a store manifest ncu-roof can read") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{path} is not an ncu-roof store manifest: name another folder for --store")
    return data


def version_error(store: Path, found: object) -> InputError:
    """The one line for a store of another schema version."""
    if isinstance(found, int) and found > SCHEMA_VERSION:
        hint = "it was written by a newer ncu-roof: upgrade ncu-roof (pip install -U ncu-roof) to read it"
    else:
        hint = "ingest the reports again into a new store (ncu-roof ingest REPORT... --store NEW_DIR)"
    return InputError(f"{store} is an ncu-roof store of schema version {found}; this ncu-roof reads schema "
                      f"version {SCHEMA_VERSION}: {hint}")


def check_version(store: Path, manifest: dict[str, Any]) -> None:
    found = manifest.get("schema_version")
    if found != SCHEMA_VERSION:
        raise version_error(store, found)


def open_store(store: Path) -> Path:
    """An existing store (its schema version checked), for reading."""
    store = Path(store)
    manifest = _manifest(store)
    if manifest is None:
        what = "does not exist" if not store.exists() else "is not an ncu-roof store (it has no store.json)"
        raise InputError(f"{store} {what}: make a store with ncu-roof ingest REPORT... --store {store}")
    check_version(store, manifest)
    return store


def create_or_open(store: Path) -> Path:
    """The store at ``store``, made (empty, with its manifest) when the folder is new or empty."""
    store = Path(store)
    if store.exists() and not store.is_dir():
        raise InputError(f"{store} is a file: give --store a folder (new, empty, or an ncu-roof store)")
    manifest = _manifest(store)
    if manifest is not None:
        check_version(store, manifest)
        return store
    if store.exists() and any(store.iterdir()):
        raise InputError(f"{store} is not empty and is not an ncu-roof store (no store.json): give --store a "
                         "new or empty folder")
    try:
        store.mkdir(parents=True, exist_ok=True)
        from ncu_roof import __version__
        from ncu_roof.files import write_atomic

        text = json.dumps({"format": FORMAT, "schema_version": SCHEMA_VERSION,
                           "created_by": f"ncu-roof {__version__}"}, indent=1)
        write_atomic(store / MANIFEST, text + "\n")
    except OSError as exc:
        raise InputError(f"cannot make the store {store}: {exc.strerror or exc}") from None
    return store


@contextmanager
def locked(store: Path) -> Iterator[None]:
    """Hold the store's lock (one ingest at a time; a second waits)."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock
        yield
        return
    with (store / LOCK).open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def table_files(store: Path, table: str) -> list[str]:
    """The Parquet files of ``table`` in the committed batches, oldest batch first."""
    return sorted(str(p) for p in (store / BATCHES).glob(f"*/{table}/*/*.parquet"))


def _quoted(files: list[str]) -> str:
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"


def _check_file_versions(con: Any, store: Path, files: list[str]) -> None:
    rows = con.execute(f"SELECT DISTINCT value FROM parquet_kv_metadata({_quoted(files)}) "
                       f"WHERE key = '{METADATA_KEY}'").fetchall()
    found = {bytes(v).decode() for (v,) in rows}
    if found - {str(SCHEMA_VERSION)} or not found:
        raise version_error(store, ", ".join(sorted(found)) or "unknown (no version in its files)")


def check_parts(store: Path) -> None:
    """Every batch holds exactly the Parquet parts its ``batch.json`` lists (batches written before
    the list was kept are not checked): a part deleted or added by hand is one line, not rows
    silently missing from a query."""
    for batch in sorted((store / BATCHES).glob("*/batch.json")):
        try:
            said = json.loads(batch.read_text(encoding="utf-8"))
            listed, recorded = said.get("parts"), said.get("fingerprints")
        except (OSError, ValueError, AttributeError) as exc:
            raise InputError(f"the store at {store} is damaged: {batch} cannot be read ({exc})") from None
        if listed is None:
            continue
        present = sorted(str(f.relative_to(batch.parent)) for f in batch.parent.rglob("*.parquet"))
        missing, extra = sorted(set(listed) - set(present)), sorted(set(present) - set(listed))
        if missing or extra:
            what = f"lacks {missing[0]}" if missing else f"holds {extra[0]}, which it does not list"
            raise InputError(f"the store at {store} is damaged: batch {batch.parent.name} {what} "
                             f"({len(missing)} missing, {len(extra)} unlisted); restore the folder or ingest "
                             "the reports into a new store")
        if isinstance(recorded, dict):  # batches written before sizes and hashes were kept: the list only
            check_fingerprints(store, batch.parent, recorded)


def connect(store: Path) -> Any:
    """An in-memory DuckDB connection with a view per table over the store's Parquet files (an
    empty table of the declared columns where the store has none yet); the parts are checked
    against their batches' lists first (:func:`check_parts`)."""
    db = duckdb()
    store = open_store(store)
    check_parts(store)
    con = db.connect()
    for table in TABLES:
        files = table_files(store, table)
        if not files:
            con.execute(create_sql(table))
            continue
        try:
            if table == "runs":
                _check_file_versions(con, store, files)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({_quoted(files)}, "
                        "union_by_name = true, hive_partitioning = false)")
        except db.Error as exc:
            con.close()
            raise read_error(store, exc) from None
    return con


def read_error(store: Path, exc: Exception) -> InputError:
    """A DuckDB error met reading ``store``: the damaged part it comes from (one line naming it),
    else the error itself, as a query's."""
    db = duckdb()
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if not isinstance(exc, (db.ParserException, db.BinderException, db.CatalogException)):  # the SQL's own
        found = read_failure(store, exc, [f for table in TABLES for f in table_files(store, table)])
        if found is not None:
            return found
    return InputError(f"the query failed: {first}")


def staging_dir(store: Path, batch: str) -> Path:
    return store / STAGING / batch


def clear_staging(store: Path) -> None:
    """Remove what a killed ingest left staged (never part of the store)."""
    import shutil

    staging = store / STAGING
    if staging.exists():
        shutil.rmtree(staging, ignore_errors=True)


def commit(staged: Path, store: Path, batch: str) -> Path:
    """Move a staged batch into ``batches/`` with one rename: the moment it joins the store."""
    target = store / BATCHES / batch
    target.parent.mkdir(exist_ok=True)
    staged.replace(target)
    return target
