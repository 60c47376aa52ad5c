"""Fuzz tests (hypothesis): mutated exports, reports and sidecars never give a traceback, a hang or
a silently changed number.

Every run asserts the contract: exit 0 or 2 (``check``: 1 for a violation), exactly one
``ncu-roof: error:`` line on stderr with exit 2 (and never the catch-all "could not process the
input", which would be a bug), no traceback, and a finishing time under :data:`TIME_BOUND`. With
exit 0 every figure of the table is finite and non-negative, there are no more launches than
the input holds, and each launch the mutation did not touch keeps its numbers (or says why in a
note). A mutated value is read right, flagged in a note, or refused.

The CI profile runs :data:`EXAMPLES` examples per test (well under a minute in all). For a longer
run set ``NCU_ROOF_FUZZ_EXAMPLES`` (e.g. ``NCU_ROOF_FUZZ_EXAMPLES=2000 python -m pytest
tests/test_fuzz.py``); ``NCU_ROOF_FUZZ_SEED`` picks other examples (the CI profile is derandomized,
so it runs the same examples every time).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.cli.test_cli import run as run_in_process

ROOT = Path(__file__).resolve().parents[1]
SYN = ROOT / "fixtures" / "synthetic"
EXAMPLES = int(os.environ.get("NCU_ROOF_FUZZ_EXAMPLES", "12"))
SEED = int(os.environ.get("NCU_ROOF_FUZZ_SEED", "0"))
TIME_BOUND = 30.0  # seconds per run, on a loaded 2-core machine (a run takes well under 1 s)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="NCU_ROOF_FUZZ_SEED" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
KEY = ("time_s", "dram_bytes", "l2_bytes", "l1_bytes", "flops", "grid_size", "block_size")
CSV_INPUTS = {
    "raw": SYN / "synthetic_layernorm_unfused_rtx5070.csv",
    "details": SYN / "synthetic_details_rules.csv",
    "stdout": SYN / "synthetic_metrics_stdout.csv",
}
OUT_OF_RANGE = ["-1", "-4096", "1e308", "inf", "-inf", "1" * 30, "1e-300", "abc", "0x1F", "--5"]


# --- running ncu-roof and the contract ---------------------------------------------------------
def run(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``ncu-roof ARGS`` run in this process (tests/cli/test_cli.py's
    ``run``: an escaping exception is exit 1 and a traceback, which :func:`contract` refuses),
    within :data:`TIME_BOUND`."""
    start = time.monotonic()
    result = run_in_process(*args)
    elapsed = time.monotonic() - start
    assert elapsed < TIME_BOUND, f"{args} took {elapsed:.1f} s"
    return result.returncode, result.stdout, result.stderr


def contract(code: int, err: str, allowed: tuple[int, ...] = (0, 2)) -> None:
    assert code in allowed, (code, err)
    assert "Traceback" not in err, err
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("ncu-roof: error: "), err
        assert "could not process the input" not in lines[0], err  # the catch-all: a bug to fix
    else:
        assert all(line.startswith("ncu-roof: ") for line in err.strip().splitlines() if line), err


def table(path: Path) -> tuple[int, list[dict[str, Any]] | None, str]:
    code, out, err = run("table", str(path), "--format", "json")
    contract(code, err)
    if code != 0:
        return code, None, err
    rows = json.loads(out)
    for row in rows:
        for key in KEY:
            value = row.get(key)
            assert value is None or (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0), \
                (key, value, row.get("notes"))
    return code, rows, err


def _baseline(path: Path) -> list[dict[str, Any]]:
    code, rows, err = table(path)
    assert code == 0 and rows is not None, err
    return rows


def unchanged_or_noted(before: list[dict[str, Any]], after: list[dict[str, Any]], err: str,
                       touched: set[int] | None) -> None:
    """Launches the mutation did not touch keep their numbers, unless a note says why."""
    assert len(after) <= len(before) + 0 or touched is None
    if "ncu-roof: note:" in err:  # the file says something happened: the notes carry it
        return
    original = {r["id"]: r for r in before}
    for row in after:
        base = original.get(row["id"])
        if base is None or row.get("notes") or (touched is not None and row["id"] in touched):
            continue
        if touched is None:
            continue
        for key in KEY:
            if row[key] is not None:
                assert base[key] is not None and math.isclose(row[key], base[key], rel_tol=1e-9), \
                    (row["id"], key, base[key], row[key])


def _write(data: bytes, suffix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="ncu-roof-fuzz-"))
    path = folder / f"m{suffix}"
    path.write_bytes(data)
    return path


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def _line_ids(text: str) -> list[int | None]:
    """The launch ID of each line of an export (None for the header, units and preamble)."""
    ids: list[int | None] = []
    for line in text.splitlines(keepends=True):
        first = line.split(",", 1)[0].strip('"')
        ids.append(int(first) if first.isdigit() else None)
    return ids


# --- CSV: bytes ----------------------------------------------------------------------------------
@FUZZ
@seed(SEED)
@given(kind=st.sampled_from(sorted(CSV_INPUTS)), data=st.data())
def test_csv_truncation_and_bit_flips(kind: str, data: st.DataObject) -> None:
    text = CSV_INPUTS[kind].read_text(encoding="utf-8-sig")
    raw = text.encode()
    before = _baseline(CSV_INPUTS[kind])
    how = data.draw(st.sampled_from(["truncate", "flip"]))
    line_of = [0] * len(raw)
    line = 0
    for i, b in enumerate(raw):
        line_of[i] = line
        line += b == 0x0A
    ids = _line_ids(text)
    if how == "truncate":
        cut = data.draw(st.integers(1, len(raw) - 1))
        mutated = raw[:cut]
        touched = {i for i in ids[line_of[cut - 1]:] if i is not None}
    else:
        positions = data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=4))
        buf = bytearray(raw)
        for p in positions:
            buf[p] ^= 1 << data.draw(st.integers(0, 7))
        mutated = bytes(buf)
        lines = {line_of[p] for p in positions}
        header_hit = any(ids[n] is None for n in lines)
        touched = None if header_hit else {ids[n] for n in lines if ids[n] is not None}
    code, after, err = table(_write(mutated, ".csv"))
    if code == 0 and after is not None:
        unchanged_or_noted(before, after, err, touched)


# --- CSV: columns and rows -----------------------------------------------------------------------
@FUZZ
@seed(SEED)
@given(kind=st.sampled_from(["raw", "details"]), data=st.data())
def test_csv_columns_and_rows(kind: str, data: st.DataObject) -> None:
    text = CSV_INPUTS[kind].read_text(encoding="utf-8-sig")
    rows = _rows(text)
    before = _baseline(CSV_INPUTS[kind])
    how = data.draw(st.sampled_from(["reorder", "dup-column", "dup-row", "drop-row", "swap-rows"]))
    width = len(rows[0])
    first_data = 2 if kind == "raw" else 1
    touched: set[int] | None = set()
    if how == "reorder":
        order = data.draw(st.permutations(range(width)))
        rows = [[r[i] if i < len(r) else "" for i in order] for r in rows]
    elif how == "dup-column":
        j = data.draw(st.integers(0, width - 1))
        rows = [r[: j + 1] + r[j: j + 1] + r[j + 1:] for r in rows]
    else:
        i = data.draw(st.integers(first_data, len(rows) - 1))
        if how == "dup-row":
            rows.insert(data.draw(st.integers(first_data, len(rows))), rows[i])
        elif how == "drop-row":
            touched = {int(rows[i][0])}
            del rows[i]
        else:
            j = data.draw(st.integers(first_data, len(rows) - 1))
            rows[i], rows[j] = rows[j], rows[i]
    code, after, err = table(_write(_csv(rows), ".csv"))
    if how in ("reorder", "dup-column", "dup-row", "swap-rows") and kind == "raw":
        assert code == 0, err  # a valid export in another shape is read, not refused
    if code == 0 and after is not None:
        unchanged_or_noted(before, after, err, touched)
        if how in ("reorder", "dup-row", "swap-rows") and kind == "raw":
            assert sorted(r["id"] for r in after) == sorted(r["id"] for r in before)


@FUZZ
@seed(SEED)
@given(data=st.data())
def test_csv_out_of_range_values_are_flagged_or_refused(data: st.DataObject) -> None:
    rows = _rows(CSV_INPUTS["raw"].read_text())
    head = rows[0]
    metric_cols = [j for j, name in enumerate(head) if "__" in name and name != "device__attribute_display_name"]
    i = data.draw(st.integers(2, len(rows) - 1))
    j = data.draw(st.sampled_from(metric_cols))
    value = data.draw(st.sampled_from(OUT_OF_RANGE))
    rows[i][j] = value
    launch = int(rows[i][0])
    code, after, err = table(_write(_csv(rows), ".csv"))
    if code != 0 or after is None:
        return  # refused, in one line
    noted = [r for r in after if r["id"] == launch and r.get("notes")]
    assert noted or f"{head[j]}" in err, (head[j], value, err)


@FUZZ
@seed(SEED)
@given(encoding=st.sampled_from(["latin-1", "cp1252", "utf-16", "utf-8-sig", "utf-32"]),
       name=st.text(alphabet="abcéüßø€ñ", min_size=1, max_size=12))
def test_csv_encodings(encoding: str, name: str) -> None:
    text = CSV_INPUTS["raw"].read_text().replace("python3", name)
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        return
    code, after, err = table(_write(data, ".csv"))
    if code == 0 and after is not None:
        assert all("\ufffd" not in (r["process"] or "") for r in after)
        if encoding in ("utf-8-sig",) or (encoding in ("latin-1", "cp1252") and name.isascii()):
            assert after[0]["process"] == name
        elif encoding == "cp1252":
            assert after[0]["process"] == name and "read as Windows-1252" in err


# --- .ncu-rep ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def report_bytes(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[dict[str, Any]]]:
    from conftest import REALDATA

    template = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    if not template.is_file():
        pytest.skip(f"real reports not available: {template} is absent")
    reportgen = pytest.importorskip("reportgen", reason="tests/reportgen.py needs grpcio-tools and protobuf")
    pytest.importorskip("ncu_report", reason="NVIDIA's ncu_report module is not installed")
    try:
        pb = reportgen.proto_modules()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"cannot build the .ncu-rep protobuf modules: {exc}")
    path = tmp_path_factory.mktemp("fuzz_rep") / "base.ncu-rep"
    metrics = {"gpu__time_duration.sum": 84480, "gpc__cycles_elapsed.max": 126720.0,
               "gpc__cycles_elapsed.avg.per_second": 1.5e9}
    specs = [reportgen.LaunchSpec(kernel=f"k{i % 2}", metrics=metrics) for i in range(3)]
    reportgen.write_report(path, specs, template, pb=pb)
    return path.read_bytes(), _baseline(path)


@FUZZ
@seed(SEED)
@given(data=st.data())
def test_report_truncation_bit_flips_and_compression(report_bytes: tuple[bytes, list[dict[str, Any]]],
                                                     data: st.DataObject) -> None:
    raw, before = report_bytes
    how = data.draw(st.sampled_from(["truncate", "flip", "gzip-truncate", "gzip-flip"]))
    payload = gzip.compress(raw, compresslevel=1) if how.startswith("gzip") else raw
    if how.endswith("truncate"):
        mutated = payload[: data.draw(st.integers(1, len(payload) - 1))]
    else:
        buf = bytearray(payload)
        for p in data.draw(st.lists(st.integers(0, len(payload) - 1), min_size=1, max_size=6)):
            buf[p] ^= 1 << data.draw(st.integers(0, 7))
        mutated = bytes(buf)
    code, after, err = table(_write(mutated, ".ncu-repz" if how.startswith("gzip") else ".ncu-rep"))
    if code == 0 and after is not None:
        assert len(after) <= len(before)


# --- sidecars ------------------------------------------------------------------------------------
VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10**12),
                   st.sampled_from(["two", "", "^ln_", "^(a+)+$", "(", True]))


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf
                                                  else repr(value))
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)


@FUZZ
@seed(SEED)
@given(entries=st.dictionaries(st.sampled_from(["name", "kernels", "nvtx", "flops", "bytes", "occurrences",
                                                 "byts", "occurences"]), VALUES, min_size=1, max_size=6))
def test_algorithmic_sidecar(entries: dict[str, Any]) -> None:
    body = "[[region]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in entries.items())
    toml = _write(body.encode(), ".toml")
    code, out, err = run("diagnose", str(CSV_INPUTS["raw"]), "--algorithmic", str(toml), "--format", "json")
    contract(code, err)
    if code == 0:  # accepted: then every stated value was valid
        assert set(entries) <= {"name", "kernels", "nvtx", "flops", "bytes", "occurrences"}
        for key in ("flops", "bytes"):
            if key in entries:
                v = entries[key]
                assert not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v > 0
        if "occurrences" in entries:
            assert isinstance(entries["occurrences"], int) and entries["occurrences"] >= 1
        json.loads(out)


@FUZZ
@seed(SEED)
@given(key=st.sampled_from(["min_pct_of_roof", "max_slowdown", "min_time_s", "max_extra_bytes_factor",
                            "min_pct_of_rof"]), value=VALUES)
def test_rules_sidecar(key: str, value: Any) -> None:
    toml = _write(f"[defaults]\n{key} = {_toml_value(value)}\n".encode(), ".toml")
    code, _out, err = run("check", str(CSV_INPUTS["raw"]), "--rules", str(toml), "--allow-unchecked")
    contract(code, err, (0, 1, 2))
    if code in (0, 1):
        assert key != "min_pct_of_rof" and not isinstance(value, (bool, str)) and math.isfinite(value) and value >= 0


def _check_fuzz_settings_documented(
        read: Callable[[], str] = lambda: (ROOT / "docs" / "inputs.md").read_text()) -> None:
    assert "NCU_ROOF_FUZZ_EXAMPLES" in read()


def test_fuzz_profile_is_documented() -> None:
    _check_fuzz_settings_documented()
