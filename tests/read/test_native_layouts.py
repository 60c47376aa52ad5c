"""One launch's metrics read through the layout the last launch of its string table had: launches
that share it are read by C-level maps checked at the wanted positions only, and every launch
whose metrics moved, went missing or changed encoding still reads exactly what it holds."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ncu_roof.read.native.launch import _read_values, wanted
from ncu_roof.read.native.wire import encode_varint

TABLE = ["gpu__time_duration.sum", "dram__bytes_read.sum", "launch__grid_size", "not__wanted_a", "not__wanted_b"]
TIME, DRAM, GRID, OTHER_A, OTHER_B = range(len(TABLE))


def _double(name_id: int, value: float) -> bytes:
    return b"\x08" + encode_varint(name_id) + b"\x12\x09\x19" + struct.pack("<d", value)


def _uint(name_id: int, value: int) -> bytes:
    body = b"\x28" + encode_varint(value)
    return b"\x08" + encode_varint(name_id) + b"\x12" + encode_varint(len(body)) + body


def _read(want: object, elems: list[bytes]) -> dict[str, float]:
    row: dict[str, float] = {}
    _read_values(elems, want, row)  # type: ignore[arg-type]
    return row


def test_launches_of_one_table_read_what_each_holds() -> None:
    want = wanted(TABLE)
    assert want.names == ["dram__bytes_read.sum", "gpu__time_duration.sum", "launch__grid_size"]
    first = [_double(TIME, 1500.0), _double(DRAM, 4e6), _uint(GRID, 80), _uint(OTHER_A, 1)]
    expected = {"dram__bytes_read.sum": 4e6, "gpu__time_duration.sum": 1.5e-6, "launch__grid_size": 80.0}
    assert _read(want, first) == pytest.approx(expected, rel=1e-15)
    learnt = want.layout
    assert learnt is not None and learnt.others is not None  # every wanted metric present: checked in place

    # the same layout, another unwanted metric and new values: read through the layout learnt
    same = [_double(TIME, 7.0), _double(DRAM, 9.0), _uint(GRID, 3), _uint(OTHER_B, 2)]
    assert _read(want, same) == pytest.approx(
        {"dram__bytes_read.sum": 9.0, "gpu__time_duration.sum": 7e-9, "launch__grid_size": 3.0}, rel=1e-15)
    assert want.layout is learnt

    # two wanted metrics swap places, as many metrics in all: a new layout
    swapped = [_double(DRAM, 5.0), _double(TIME, 6.0), _uint(GRID, 4), _uint(OTHER_A, 1)]
    assert _read(want, swapped) == pytest.approx(
        {"dram__bytes_read.sum": 5.0, "gpu__time_duration.sum": 6e-9, "launch__grid_size": 4.0}, rel=1e-15)
    assert want.layout is not learnt

    # a wanted metric missing and an unwanted one in its place: it stays absent, not read from elsewhere
    missing = [_double(DRAM, 5.0), _double(TIME, 6.0), _uint(OTHER_B, 4), _uint(OTHER_A, 1)]
    assert _read(want, missing) == pytest.approx({"dram__bytes_read.sum": 5.0, "gpu__time_duration.sum": 6e-9},
                                                 rel=1e-15)
    assert want.layout is not None and want.layout.others is None  # incomplete: every later launch checked whole

    # after an incomplete layout, a launch holding the missing metric where another lay reads it
    back = [_double(DRAM, 1.0), _double(TIME, 2.0), _uint(GRID, 9), _uint(OTHER_A, 1)]
    assert _read(want, back) == pytest.approx(
        {"dram__bytes_read.sum": 1.0, "gpu__time_duration.sum": 2e-9, "launch__grid_size": 9.0}, rel=1e-15)

    # in place, but a one-byte integer grown to three bytes and a double stored as an integer
    grown = [_uint(DRAM, 2**40 + 3), _double(TIME, 2.5), _uint(GRID, 70000), _uint(OTHER_A, 1)]
    assert _read(want, grown) == {"dram__bytes_read.sum": float(2**40 + 3), "gpu__time_duration.sum": 2.5e-9,
                                  "launch__grid_size": 70000.0}


def test_a_metric_read_one_by_one_is_found_where_it_moved() -> None:
    """A two-byte integer is read by itself (not by the maps); when it swaps places with an
    unwanted metric, the launch is not read through the old positions."""
    want = wanted(TABLE)
    first = [_double(TIME, 1.0), _double(DRAM, 2.0), _uint(GRID, 300), _uint(OTHER_A, 5)]
    assert _read(want, first)["launch__grid_size"] == 300.0
    moved = [_double(TIME, 1.0), _double(DRAM, 2.0), _uint(OTHER_A, 5), _uint(GRID, 301)]
    assert _read(want, moved)["launch__grid_size"] == 301.0


def test_a_window_still_sliced_is_let_go_not_refused(tmp_path: Path) -> None:
    """Closing the reader's window while a slice of it is alive (a cycle the paused collector keeps)
    raised BufferError ('cannot close exported pointers exist') when the window was a mapping: a generic
    error on a real report under the Dask test. The window is now read into a buffer kept for the next
    window, which a live slice does not stop either."""
    import os

    from ncu_roof.read.native.values import Reader

    path = tmp_path / "bytes.bin"
    path.write_bytes(bytes(range(256)) * 64)
    fd = os.open(path, os.O_RDONLY)
    try:
        reader = Reader(fd, str(path), {}, None)  # type: ignore[arg-type]
        launches = [type("L", (), {"offset": 0, "size": 4096, "kind": "kernel"})(),
                    type("L", (), {"offset": 8192, "size": 4096, "kind": "kernel"})()]
        reader._map(launches, 0)
        kept = reader.bytes[10:20]  # a numpy slice of the window, alive past close()
        view = reader.view[10:20]
        reader.close()
        assert reader.filled == 0 and bytes(kept) == bytes(range(10, 20)) == bytes(view)
        reader._map(launches, 1)  # the next window, read into the same buffer
        assert reader.at == 8192 and bytes(reader.view[:4]) == bytes(range(4))
    finally:
        os.close(fd)
