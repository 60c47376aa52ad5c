"""The gate's baseline from a store: per kernel and device, the median time of its last ``window``
runs on that device (``ncu-roof check --baseline-store DIR --window N``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ncu_roof.comparison.gate import GateResult
from ncu_roof.diagnosis import DiagnoseRequest
from ncu_roof.errors import InputError
from ncu_roof.store import layout


def last_runs_median(store: str | Path, devices: Iterable[str], window: int,
                     exclude: Iterable[str] = ()) -> pd.DataFrame:
    """Columns device, kernel, time_s (the median of the kernel's time, all its launches in a run,
    over the last ``window`` runs on the device that have it), runs (how many); ``exclude``: the
    sha256 of runs to leave out (the reports being checked, when they are in the store already)."""
    if window < 1:
        raise InputError(f"--window must be at least 1, not {window}")
    con = layout.connect(Path(store))
    try:
        con.execute("CREATE TEMP TABLE wanted (device VARCHAR)")
        con.executemany("INSERT INTO wanted VALUES (?)", [[d] for d in set(devices)])
        con.execute("CREATE TEMP TABLE excluded (sha256 VARCHAR)")
        con.executemany("INSERT INTO excluded VALUES (?)", [[s] for s in set(exclude)])
        frame = con.execute("""
            WITH ranked AS (
                SELECT k.device, k.kernel, k.time_s,
                       row_number() OVER (PARTITION BY k.device, k.kernel ORDER BY r.ingested_at DESC, r.run_key) AS n
                FROM kernels k JOIN runs r USING (run_key)
                WHERE k.device IN (SELECT device FROM wanted) AND r.sha256 NOT IN (SELECT sha256 FROM excluded)
                  AND k.time_s IS NOT NULL)
            SELECT device, kernel, median(time_s) AS time_s, count(*) AS runs
            FROM ranked WHERE n <= ? GROUP BY device, kernel ORDER BY device, kernel""", [window]).df()
    except layout.duckdb().Error as exc:  # a part damaged where its size and hash do not show it
        raise layout.read_error(Path(store), exc) from None
    finally:
        con.close()
    frame.attrs["inputs"] = [f"{store} (median of the last {window} run(s) on the same device)"]
    return frame


def check_against_store(request: DiagnoseRequest, rules: Path, store: Path, window: int) -> GateResult:
    """:func:`ncu_roof.comparison.gate.check` of the request's reports with the store's medians as the
    baseline."""
    from ncu_roof.comparison.gate import check
    from ncu_roof.comparison.gate_file import read_rules
    from ncu_roof.diagnosis import diagnose_request
    from ncu_roof.read.inputs import expand_inputs
    from ncu_roof.store.ingest import sha256_of

    layout.open_store(Path(store))
    gate_rules = read_rules(rules)
    current = diagnose_request(replace(request, lines=False))
    found, _ = expand_inputs(request.inputs)
    mine = [sha256_of(p)[0] for p in found]
    devices = [str(d) for d in current.placed["device"].dropna().unique()]
    history = last_runs_median(store, devices, window, mine)
    return check(current, gate_rules, None, None, history)
