"""``ingest``: reports in, one committed batch of runs in the store out.

Each report is hashed here (sha256): one already in the store, or named twice, is not read again
(the same report twice is one run). The others are read and diagnosed one task per report (here,
in ``jobs`` processes, or on a Dask cluster) and their rows appended, as they arrive, to DuckDB
tables that are written out as a Parquet part under ``.staging/`` every ``PART_RUNS`` runs, so this
process holds one part's rows at a time. The batch joins the store by one rename; a failure or a
kill before that leaves the store as it was (the next ingest clears the staged files).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof.errors import InputError
from ncu_roof.store import layout
from ncu_roof.store.parts import device_folder, fingerprints, write_failure
from ncu_roof.store.rows import Source, run_rows
from ncu_roof.store.schema import METADATA_KEY, SCHEMA_VERSION, TABLES, create_sql

STAGING_MEMORY = "64MB"  # DuckDB's memory while it stages and writes a part (it spills beyond)
PART_RUNS = 50  # runs per Parquet part of a batch: a part's rows are all an ingest holds


@dataclass
class IngestResult:
    """What an ingest did: the runs it added, the inputs already in the store, its notes."""

    store: Path
    batch: str | None
    added: list[dict[str, Any]] = field(default_factory=list)
    already: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """``--label key=value`` items as a dict (one line for a malformed one)."""
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--label {item!r} is not key=value: write e.g. --label commit=1a2b3c")
        labels[key.strip()] = value.strip()
    return labels


def sha256_of(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def known_runs(store: Path) -> dict[str, str]:
    """sha256 -> path of every run in the store."""
    files = layout.table_files(store, "runs")
    if not files:
        return {}
    con = layout.connect(store)
    try:
        return dict(con.execute("SELECT sha256, path FROM runs").fetchall())
    except layout.duckdb().Error as exc:  # a part damaged where its size and hash do not show it
        raise layout.read_error(Path(store), exc) from None
    finally:
        con.close()


def _append(con: Any, table: str, frame: pd.DataFrame) -> None:
    """Rows of ``frame`` into the staged ``table``, each column cast to its declared type."""
    if frame.empty:
        return
    types = dict(TABLES[table])
    select = ", ".join(f'CAST("{c}" AS {types[c]}) AS "{c}"' for c in frame.columns)
    con.register("incoming", frame)
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT {select} FROM incoming")
    finally:
        con.unregister("incoming")


def _write_parquet(con: Any, table: str, folder: Path, part: int) -> None:
    """The staged rows of ``table`` as zstd Parquet files ``part<part>_0.parquet``, one folder per
    device (:func:`~ncu_roof.store.parts.device_folder`: a name too long for a folder is cut), the
    schema version in each file; the staged rows then go."""
    for (device,) in con.execute(f"SELECT DISTINCT device FROM {table}").fetchall():
        target = folder / table / device_folder(device)
        target.mkdir(parents=True, exist_ok=True)
        where = "device IS NULL" if device is None else "device = '" + str(device).replace("'", "''") + "'"
        out = str(target / f"part{part}_0.parquet").replace("'", "''")
        con.execute(f"COPY (SELECT * FROM {table} WHERE {where}) TO '{out}' (FORMAT PARQUET, COMPRESSION ZSTD, "
                    f"KV_METADATA {{{METADATA_KEY}: '{SCHEMA_VERSION}'}})")
    con.execute(f"DELETE FROM {table}")


def _summary(rows: dict[str, pd.DataFrame]) -> dict[str, Any]:
    run = rows["runs"].iloc[0]
    return {"run_key": run["run_key"], "path": run["path"], "device": run["device"],
            "launches": int(run["launches"]), "kernels": int(run["kernels"])}


def _sources(inputs: list[Path], known: dict[str, str], result: IngestResult) -> list[Source]:
    from ncu_roof.stream_names import shown

    sources: dict[str, Source] = {}
    for path in inputs:
        sha, size = sha256_of(path)
        first = known.get(sha) or (sources[sha].name if sha in sources else None)
        if first is not None:
            result.already.append({"path": shown(str(path)), "run_key": sha, "as": first})
            continue
        sources[sha] = Source(str(path), sha, size, shown(str(path)))
    return list(sources.values())


def _stage(db: Any, staged: Path, batch: str, rows_of_runs: Iterable[dict[str, pd.DataFrame]],
           result: IngestResult) -> None:
    """Append each run's rows to DuckDB tables as they arrive and write them out as Parquet parts
    in ``staged/batch`` every ``PART_RUNS`` runs (so what is held is one part's rows, whatever the
    batch's size), then ``batch.json``."""
    out = staged / "batch"
    out.mkdir()
    con = db.connect()
    try:
        con.execute(f"SET memory_limit = '{STAGING_MEMORY}'")
        con.execute(f"SET temp_directory = '{str(staged / 'spill').replace(chr(39), chr(39) * 2)}'")
        con.execute("SET preserve_insertion_order = false")  # readers order by run_key, launch_index
        for table in TABLES:
            con.execute(create_sql(table))
        part = held = 0
        for rows in rows_of_runs:
            for table, frame in rows.items():
                _append(con, table, frame)
            result.added.append(_summary(rows))
            held += 1
            if held == PART_RUNS:
                for table in TABLES:
                    _write_parquet(con, table, out, part)
                part, held = part + 1, 0
        for table in TABLES:
            _write_parquet(con, table, out, part)
    finally:
        con.close()
    parts = sorted(str(f.relative_to(out)) for f in out.rglob("*.parquet"))  # checked before every query
    (out / "batch.json").write_text(json.dumps({"batch": batch, "schema_version": SCHEMA_VERSION,
                                                "runs": [r["run_key"] for r in result.added],
                                                "parts": parts, "fingerprints": fingerprints(out, parts)}) + "\n")


def ingest(paths: str | Path | Iterable[str | Path], store: str | Path, labels: dict[str, str] | None = None, *,
           reader: str | None = None, jobs: int | None = None, scheduler: str | None = None,
           device: str | None = None) -> IngestResult:
    """Add the runs of ``paths`` not yet in ``store`` (made when new) as one batch."""
    from ncu_roof.read.cluster import map_ordered
    from ncu_roof.read.inputs import expand_inputs
    from ncu_roof.read.parallel import available_cores, options
    from ncu_roof.read.table import _unique, check_device

    db = layout.duckdb()
    check_device(device)
    found, notes = expand_inputs(paths)
    root = layout.create_or_open(Path(store))
    opts = options()
    reader, scheduler = reader or opts.reader, scheduler or opts.scheduler
    workers = jobs or opts.jobs or available_cores()
    with layout.locked(root):
        layout.clear_staging(root)
        result = IngestResult(root, None, notes=list(notes))
        sources = _sources(_unique(found), known_runs(root), result)
        if not sources:
            return result
        batch = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        staged = layout.staging_dir(root, batch)
        staged.mkdir(parents=True)
        try:
            tasks = [(s.path, (s, labels or {}, batch, reader, device)) for s in sources]
            try:
                _stage(db, staged, batch, map_ordered(run_rows, tasks, workers, scheduler), result)
                layout.commit(staged / "batch", root, batch)
            except (OSError, db.IOException) as exc:  # a full disk, a folder that went away: nothing added
                raise write_failure(root, exc) from None
            result.batch = batch
        finally:
            shutil.rmtree(staged, ignore_errors=True)
    return result
