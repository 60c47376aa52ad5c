"""A store's Parquet parts as written and as found: the folder each device's rows go in, each part's
size and sha256 (kept in its batch's ``batch.json``, checked before every query), and the one line
for a part that cannot be read or a disk that fills while a batch is written."""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ncu_roof.errors import InputError

MAX_FOLDER = 200  # characters of a device's folder name (file systems allow 255 bytes)
NULL_FOLDER = "device=__HIVE_DEFAULT_PARTITION__"  # DuckDB's name for rows without a device


def device_folder(device: str | None) -> str:
    """``device=<name>``, the name percent-encoded as DuckDB writes it; one too long for a folder
    (a 300-character device name) cut, with a hash of the whole name to keep it unique."""
    if device is None:
        return NULL_FOLDER
    name = quote(device, safe="")
    if len(name) > MAX_FOLDER:
        cut = name[: MAX_FOLDER - 13]
        if "%" in cut[-2:]:  # not inside a %XX escape
            cut = cut[: cut.rindex("%")]
        name = f"{cut}~{hashlib.sha256(device.encode('utf-8')).hexdigest()[:12]}"
    return f"device={name}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fingerprints(folder: Path, parts: list[str]) -> dict[str, list[Any]]:
    """Each part's [size in bytes, modification time in ns, sha256], as written."""
    out: dict[str, list[Any]] = {}
    for part in parts:
        st = (folder / part).stat()
        out[part] = [st.st_size, st.st_mtime_ns, _sha256(folder / part)]
    return out


def check_fingerprints(store: Path, batch: Path, recorded: dict[str, Any]) -> None:
    """Every part of ``batch`` as it was written: its size, and its sha256 where its modification
    time moved (a copied store is hashed; an untouched one costs a stat per part)."""
    for part, (size, mtime, sha) in sorted(recorded.items()):
        path = batch / part
        try:
            st = path.stat()
            same = st.st_size == size and (st.st_mtime_ns == mtime or _sha256(path) == sha)
        except OSError as exc:
            raise damaged(store, path, exc.strerror or str(exc)) from None
        if not same:
            said = (f"is {st.st_size:,} bytes, written as {size:,}" if st.st_size != size
                    else "has changed since it was written (its sha256 differs)")
            raise damaged(store, path, said)


def damaged(store: Path, part: Path, what: str) -> InputError:
    """The one line for a damaged part of ``store``."""
    return InputError(f"the store at {store} is damaged: its Parquet part {part} {what}; restore the folder from a "
                      "backup, or ingest the reports into a new store")


def read_failure(store: Path, exc: Exception, files: list[str]) -> InputError | None:
    """A DuckDB error met reading the store as the one line naming the part that cannot be read
    (found by reading each part whole, only now); None where every part reads (the query's own
    fault)."""
    import duckdb

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    named = [f for f in files if f"'{f}'" in first or f'"{f}"' in first]
    con = duckdb.connect()
    try:
        for f in named + [f for f in files if f not in named]:
            try:
                con.execute("SELECT * FROM read_parquet(?)", [f]).fetchall()
            except duckdb.Error as bad:
                said = (str(bad).strip().splitlines() or [type(bad).__name__])[0].replace(f" '{f}'", "")
                return damaged(store, Path(f), f"cannot be read (DuckDB: {said[:160]})")
    finally:
        con.close()
    return None


def write_failure(store: Path, exc: Exception) -> InputError:
    """The one line for a batch that could not be written (nothing of it was added)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if getattr(exc, "errno", None) == errno.ENOSPC or "No space left on device" in text:
        return InputError(f"cannot add to the store at {store}: its disk is full (no space left on device); nothing "
                          "was added: free space there, or give --store a folder on another disk")
    said = getattr(exc, "strerror", None) or text[:200]
    return InputError(f"cannot add to the store at {store}: {said}; nothing was added")
