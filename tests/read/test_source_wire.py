"""The per-PC decode of instanced metrics (:mod:`ncu_roof.read.source.wire`): the vectorised path
gives what the element-by-element walk gives on any mix of encodings, hand-checked numbers, and
damaged bytes raise (a note upstream), never wrong numbers."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ncu_roof.read.native.wire import encode_varint as v
from ncu_roof.read.source.wire import decode, instance_bytes, slow_instances


def _msg(key: int, body: bytes) -> bytes:
    return bytes([key]) + v(len(body)) + body


def _element(pc: int, value: int | float) -> bytes:
    number = b"\x19" + struct.pack("<d", value) if isinstance(value, float) else b"\x28" + v(value)
    return _msg(0x1A, _msg(0x0A, b"\x28" + v(pc)) + _msg(0x12, number))


def _metric(nid: int, pairs: list[tuple[int, int | float]], tail: bytes = b"") -> tuple[bytes, int]:
    """An encoded ``ProfileMetricResult`` (NameId, aggregate, instances, then ``tail``) and where its
    instances start."""
    head = b"\x08" + v(nid)
    elem = head + _msg(0x12, b"\x28" + v(7)) + b"".join(_element(p, x) for p, x in pairs) + tail
    return elem, instance_bytes(elem, len(head))


def test_hand_checked_pcs_and_values_with_trailing_fields() -> None:
    pc = 0x7F00_1234_5670  # a 48-bit address: a 7-byte varint
    big = 2**63 + 5  # a 10-byte varint
    a = _metric(3, [(pc, 1), (pc + 16, 300), (pc + 32, big)], tail=b"\x20\x00")
    b = _metric(200, [(pc + 16, 0)])
    empty = _metric(4, [])
    (pa, va), (pb, vb), (pe, ve) = decode([a, b, empty])
    assert pa.tolist() == [pc, pc + 16, pc + 32] and pa.dtype == np.uint64
    assert va.tolist() == [1.0, 300.0, float(big)]
    assert pb.tolist() == [pc + 16] and vb.tolist() == [0.0]
    assert len(pe) == 0 and len(ve) == 0


def test_double_values_and_extra_fields_take_the_walk() -> None:
    doubles = _metric(5, [(0x100, 2.5), (0x110, 0.125)])
    plain = _metric(7, [(0x300, 4)])
    got = decode([doubles, plain])
    assert got[0][0].tolist() == [0x100, 0x110] and got[0][1].tolist() == [2.5, 0.125]
    assert got[1][0].tolist() == [0x300] and got[1][1].tolist() == [4.0]
    elem, start = _metric(8, [(0x400, 3)], tail=_msg(0x1A, b"\x0a\x02\x28\x01"))  # an instance without value
    pcs, values = decode([(elem, start)])[0]
    assert pcs.tolist() == [0x400, 1] and values[0] == 3.0 and np.isnan(values[1])


def test_a_cut_metric_raises_rather_than_decoding_wrong_numbers() -> None:
    elem, start = _metric(3, [(0x7F00_0000_0000, 5), (0x7F00_0000_0010, 6)])
    with pytest.raises((IndexError, ValueError)):
        decode([(elem[:-3], start)])


_PAIRS = st.lists(st.tuples(st.integers(0, 2**48), st.one_of(st.integers(0, 2**64 - 1),
                                                              st.floats(allow_nan=False, width=64))), max_size=12)


@given(st.lists(st.tuples(_PAIRS, st.sampled_from([b"", b"\x20\x00", b"\x28\x96\x01"])), min_size=1, max_size=6))
def test_decode_equals_the_element_walk(metrics: list[tuple[list[tuple[int, int | float]], bytes]]) -> None:
    parts = [_metric(i + 1, pairs, tail) for i, (pairs, tail) in enumerate(metrics)]
    for (pcs, values), (elem, start) in zip(decode(parts), parts, strict=True):
        want_pcs, want_values = slow_instances(elem, start)
        assert np.array_equal(pcs, want_pcs)
        assert np.array_equal(values, want_values, equal_nan=True)
