"""The store's declared tables: every column's DuckDB type, fixed here, never inferred from a file.

:data:`SCHEMA_VERSION` is written in ``store.json`` and in every Parquet file's key-value metadata
(``ncu_roof_schema_version``). Bump it when a column changes meaning or type; a store of another
version is refused with one line (:func:`ncu_roof.store.layout.check_version`). The launch columns
are the tidy table's (the catalogue of ``ncu_roof/read/metrics.py`` and what ``normalize`` adds),
after the store's own ``run_key`` and ``launch_index``.
"""

from __future__ import annotations

from ncu_roof.read.frame import IDENTITY_COLUMNS

SCHEMA_VERSION = 1
METADATA_KEY = "ncu_roof_schema_version"

Columns = tuple[tuple[str, str], ...]

_IDENTITY_TYPES = {"id": "BIGINT", "stream": "DOUBLE"}  # the others are text


def _launch_columns() -> Columns:
    from ncu_roof.read.metrics import QUANTITIES
    from ncu_roof.read.normalize import PRECISIONS, TENSOR_DTYPES

    cols: dict[str, str] = {"run_key": "VARCHAR", "launch_index": "BIGINT"}
    cols.update({c: _IDENTITY_TYPES.get(c, "VARCHAR") for c in IDENTITY_COLUMNS})
    for q in QUANTITIES:
        cols[q.name] = "DOUBLE"
        if q.tracked:
            cols[f"{q.name}_src"] = "VARCHAR"
    for precision in (*PRECISIONS, "tensor"):
        cols[f"flops_{precision}"], cols[f"flops_{precision}_src"] = "DOUBLE", "VARCHAR"
    cols["tensor_precision"] = "VARCHAR"
    cols.update({f"peak_tensor_{dtype}_flops_per_s": "DOUBLE" for dtype in TENSOR_DTYPES})
    cols.update({"flops": "DOUBLE", "peak_fp32_nofma_flops_per_s": "DOUBLE", "missing": "VARCHAR",
                 "notes": "VARCHAR"})
    return tuple(cols.items())


RUNS: Columns = (
    ("run_key", "VARCHAR"), ("sha256", "VARCHAR"), ("path", "VARCHAR"), ("size_bytes", "BIGINT"),
    ("device", "VARCHAR"), ("gpu_uuid", "VARCHAR"), ("cc", "VARCHAR"), ("input_kind", "VARCHAR"),
    ("report_format_version", "INTEGER"), ("ncu_version", "VARCHAR"), ("cuda_version", "VARCHAR"),
    ("driver_version", "VARCHAR"), ("replay_mode", "VARCHAR"), ("clock_control", "VARCHAR"),
    ("cache_control", "VARCHAR"), ("profile_from_start", "BOOLEAN"), ("metric_set", "VARCHAR"),
    ("command_line", "VARCHAR"), ("launches", "BIGINT"), ("kernels", "BIGINT"), ("total_time_s", "DOUBLE"),
    ("ncu_roof_version", "VARCHAR"), ("ingested_at", "TIMESTAMP"), ("batch", "VARCHAR"),
    ("labels", "VARCHAR"), ("notes", "VARCHAR"),
)
LAUNCHES: Columns = _launch_columns()
KERNELS: Columns = (
    ("run_key", "VARCHAR"), ("device", "VARCHAR"), ("kernel", "VARCHAR"), ("launches", "BIGINT"),
    ("time_s", "DOUBLE"), ("time_per_launch_s", "DOUBLE"), ("launch_time_spread", "DOUBLE"),
    ("share", "DOUBLE"), ("bound", "VARCHAR"), ("compute_roof", "VARCHAR"), ("pct_of_roof", "DOUBLE"),
    ("pct_basis", "VARCHAR"), ("intensity_dram", "DOUBLE"), ("extra_bytes_factor", "DOUBLE"),
    ("headroom_s", "DOUBLE"), ("missing", "VARCHAR"), ("sol_pct", "DOUBLE"), ("binding_unit", "VARCHAR"),
    ("binding_unit_share", "DOUBLE"), ("above_practical_roof", "BOOLEAN"), ("dram_bytes", "DOUBLE"),
    ("l2_bytes", "DOUBLE"), ("l1_bytes", "DOUBLE"), ("flops", "DOUBLE"),
)
FINDINGS: Columns = (
    ("run_key", "VARCHAR"), ("device", "VARCHAR"), ("position", "BIGINT"), ("rule", "VARCHAR"),
    ("kernels", "VARCHAR"), ("region", "VARCHAR"), ("severity", "VARCHAR"), ("message", "VARCHAR"),
    ("time_at_stake_s", "DOUBLE"), ("evidence", "VARCHAR"), ("ids", "VARCHAR"), ("report", "VARCHAR"),
)
NCU_RULES: Columns = (
    ("run_key", "VARCHAR"), ("device", "VARCHAR"), ("position", "BIGINT"), ("rule", "VARCHAR"),
    ("kernels", "VARCHAR"), ("ids", "VARCHAR"), ("type", "VARCHAR"), ("verdict", "VARCHAR"),
    ("ncu_message", "VARCHAR"), ("ncu_estimated_speedup_pct", "DOUBLE"), ("time_s", "DOUBLE"),
    ("record", "VARCHAR"), ("report", "VARCHAR"),
)

TABLES: dict[str, Columns] = {
    "runs": RUNS, "launches": LAUNCHES, "kernels": KERNELS, "findings": FINDINGS, "ncu_rules": NCU_RULES,
}
JSON_COLUMNS = "runs.labels, runs.notes, findings.kernels/evidence/ids, ncu_rules.kernels/ids/record"


def create_sql(table: str) -> str:
    """``CREATE TABLE`` of a declared table."""
    return f"CREATE TABLE {table} (" + ", ".join(f'"{c}" {t}' for c, t in TABLES[table]) + ")"


def undeclared(table: str, columns: list[str]) -> list[str]:
    """The columns a frame has that ``table`` does not declare."""
    declared = {c for c, _ in TABLES[table]}
    return [c for c in columns if c not in declared]
