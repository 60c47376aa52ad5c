"""Stage: the store of runs (DuckDB and Parquet, ``pip install 'ncu-roof[store]'``).

Enters: reports (``ingest.py``, each one read and diagnosed by ``rows.py``), then SQL over the store.
Leaves: Parquet tables of runs, launches, kernels, findings and ncu rules; read back, the history
of each kernel (``trend.py``), any query's result (``query.py``) and the gate's baseline of the
last runs (``history.py``, for ``check --baseline-store``).

Layout (``layout.py``): ``store.json`` (format, schema version), ``batches/<id>/<table>/device=<GPU>/
part0_0.parquet`` (zstd), ``batches/<id>/batch.json`` (its parts, their sizes and sha256, checked
before every query: ``parts.py``). A batch is one ``ingest`` call, staged in ``.staging/`` and committed by one
directory rename, so a killed ingest leaves the store as it was. Declared column types live in
``schema.py``.
"""
