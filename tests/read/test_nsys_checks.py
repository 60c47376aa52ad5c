"""Every value an Nsight Systems export gives is checked (issue 46, item 2): a kernel row that ends before
it starts, has a NULL, text or negative time, ends 9e18 ns later or is there twice is left out with a
note; an export whose kernel table is gone beside its launch calls is refused; an unknown name id is
unknown, with a note; epoch nanoseconds keep every nanosecond."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ncu_roof.errors import InputError
from ncu_roof.model.timeline import measure
from ncu_roof.read.trace.nsys import read_nsys
from tests.read.test_nsys import write_export

KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
NAME = "synthetic_checks.sqlite"
UNCONSTRAINED = (f"CREATE TABLE k2 AS SELECT * FROM {KERNELS}; DROP TABLE {KERNELS}; "
                 f"ALTER TABLE k2 RENAME TO {KERNELS};")  # the same columns without NOT NULL


def export(tmp: Path, sql: str) -> Path:
    path = write_export(tmp / NAME)
    db = sqlite3.connect(path)
    db.executescript(sql)
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize(("sql", "note"), [
    (f'UPDATE {KERNELS} SET "end" = start - 1 WHERE correlationId = 1',
     f"1 row of {KERNELS} left out: an end before its start in start/end"),
    (UNCONSTRAINED + f"UPDATE {KERNELS} SET start = NULL WHERE correlationId = 1",
     f"1 row of {KERNELS} left out: NULL or not a whole number in start/end"),
    (UNCONSTRAINED + f'UPDATE {KERNELS} SET "end" = NULL WHERE correlationId = 1',
     f"1 row of {KERNELS} left out: NULL or not a whole number in start/end"),
    (f"UPDATE {KERNELS} SET start = 'abc' WHERE correlationId = 1",
     f"1 row of {KERNELS} left out: NULL or not a whole number in start/end"),
    (f"UPDATE {KERNELS} SET start = 1050000.5 WHERE correlationId = 1",
     f"1 row of {KERNELS} left out: NULL or not a whole number in start/end"),
    (f"UPDATE {KERNELS} SET start = -5 WHERE correlationId = 1",
     f"1 row of {KERNELS} left out: a negative start in start/end"),
    (f'UPDATE {KERNELS} SET "end" = 9000000000000000000 WHERE correlationId = 1',
     "1 GPU activity left out: outside the trace (its events start within 0.001605 s; a 'ts' or 'dur' out of "
     "range)"),
])
def test_a_bad_kernel_row_is_left_out_with_a_note(tmp_path: Path, sql: str, note: str) -> None:
    tl = measure(read_nsys(export(tmp_path, sql)))
    assert tl.launches == 5  # of 6
    assert f"{NAME}: {note}" in tl.notes
    assert tl.span_s == pytest.approx(2.64e-3 - 1.45e-3, abs=1e-12)  # from the second kernel: 1.59 ms with the first


def test_a_kernel_row_twice_counts_once(tmp_path: Path) -> None:
    tl = measure(read_nsys(export(tmp_path, f"INSERT INTO {KERNELS} SELECT * FROM {KERNELS} LIMIT 1")))
    assert (tl.launches, tl.gpu_busy_s) == (6, pytest.approx(0.00104, abs=1e-12))
    assert f"{NAME}: 1 GPU activity left out: the same event twice" in tl.notes


def test_launch_calls_without_a_kernel_table_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        read_nsys(export(tmp_path, f"DROP TABLE {KERNELS}"))
    assert str(err.value) == (
        f"{tmp_path / NAME}: 6 kernel launch calls but no kernels (the CUPTI_ACTIVITY_KIND_KERNEL table is "
        "missing or empty): the export is incomplete; export it again with `nsys export --type sqlite`")


def test_an_unknown_name_id_is_unknown_with_a_note(tmp_path: Path) -> None:
    trace = read_nsys(export(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 99999 WHERE correlationId = 1"))
    assert int(trace.calls["name"].isna().sum()) == 1 and "None" not in set(trace.calls["name"].astype(str))
    assert (f"{NAME}: 1 runtime call with a name id not in StringIds: its name unknown (syncs and launches among "
            "them are not counted)") in trace.notes


def test_a_negative_grid_is_unknown_not_a_size(tmp_path: Path) -> None:
    trace = read_nsys(export(tmp_path, f"UPDATE {KERNELS} SET gridX = -2, gridY = -1 WHERE correlationId = 1"))
    k = trace.gpu[trace.gpu["kind"] == "kernel"]
    assert k["grid_size"].isna().sum() == 1 and k["grid_dim"].isna().sum() == 1
    assert f"{NAME}: 1 kernel row(s) with a grid dimension below 1: kept, the grid unknown" in trace.notes


def test_epoch_nanoseconds_are_kept_to_the_nanosecond(tmp_path: Path) -> None:
    epoch = 1_712_195_495_505_543_211  # float64 would round these to 256 ns
    plain = measure(read_nsys(write_export(tmp_path / "synthetic_plain.sqlite")))
    shifted = export(tmp_path, "".join(f'UPDATE {t} SET start = start + {epoch}, "end" = "end" + {epoch};'
                                       for t in (KERNELS, "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")))
    tl = measure(read_nsys(shifted))
    assert (tl.span_s, tl.gpu_busy_s, tl.gpu_idle_s) == (plain.span_s, plain.gpu_busy_s, plain.gpu_idle_s)
    assert list(tl.gaps["idle_s"]) == list(plain.gaps["idle_s"])
