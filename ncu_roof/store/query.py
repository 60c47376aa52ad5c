"""``query``: any SQL over the store's tables (``runs``, ``launches``, ``kernels``, ``findings``,
``ncu_rules``), run by DuckDB; the result as a DataFrame and as text, CSV, JSON or Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof.errors import InputError
from ncu_roof.store import layout


def _check_read_only(db: Any, sql: str) -> None:
    """One SELECT, by DuckDB's own parser: COPY ... TO, CREATE, ATTACH and the like
    would write beside a store opened read-only, and a second statement could; SQL it cannot parse
    is left to fail as the query would."""
    try:
        kinds = [str(s.type).rsplit(".", 1)[-1] for s in db.connect().extract_statements(sql)]
    except db.Error:
        return
    if kinds != ["SELECT"]:  # EXPLAIN ANALYZE would run what it explains
        said = "several statements" if len(kinds) > 1 else (kinds[0] if kinds else "nothing")
        raise InputError(f"the store is read-only here: give one SELECT (or WITH ... SELECT), not {said}")


def run_query(store: str | Path, sql: str) -> pd.DataFrame:
    """The result of ``sql`` on the store (one line for SQL DuckDB refuses)."""
    db = layout.duckdb()
    _check_read_only(db, sql)
    con = layout.connect(Path(store))
    try:
        relation = con.sql(sql)
        if relation is None:
            raise InputError("the query returns no rows to show: give a SELECT (the store is read-only here)")
        return relation.df()
    except db.Error as exc:
        raise layout.read_error(Path(store), exc) from None
    finally:
        con.close()


def query_text(frame: pd.DataFrame, fmt: str) -> str:
    """A query's result as ``text`` (aligned columns), ``csv``, ``json`` (records) or ``markdown``."""
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "json":
        return frame.to_json(orient="records", indent=1, date_format="iso", double_precision=15) + "\n"
    if fmt == "markdown":
        head = "| " + " | ".join(map(str, frame.columns)) + " |"
        rule = "|" + "---|" * len(frame.columns)
        rows = ["| " + " | ".join("" if pd.isna(v) else str(v).replace("|", "\\|") for v in row) + " |"
                for row in frame.itertuples(index=False)]
        return "\n".join([head, rule, *rows]) + "\n"
    return (frame.to_string(index=False) if len(frame.columns) else "(no columns)") + "\n"
