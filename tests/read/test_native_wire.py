"""The hand-written protobuf decoding of the native reader against a plain decode of every item."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from ncu_roof.read.native.wire import encode_varint, instances, named_instances


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = encode_varint(number << 3 | wire)
    return key + (encode_varint(len(payload)) + payload if wire == 2 else payload)


def _scalar(value: object) -> bytes:
    """A ``ProfileMetricValue`` holding ``value`` (str, float as a double, int as a uint64)."""
    if isinstance(value, str):
        return _field(1, 2, value.encode())
    if isinstance(value, float):
        return _field(3, 1, struct.pack("<d", value))
    return _field(5, 0, encode_varint(int(value)))  # type: ignore[call-overload]


def _metric(name_id: int, items: list[tuple[object, object]], aggregate: float | None) -> tuple[bytes, int]:
    """An encoded instanced ``ProfileMetricResult`` and where the fields after its NameId start."""
    head = _field(1, 0, encode_varint(name_id))
    body = _field(2, 2, _scalar(aggregate)) if aggregate is not None else b""
    for ident, value in items:
        body += _field(3, 2, _field(1, 2, _scalar(ident)) + _field(2, 2, _scalar(value)))
    return head + body, len(head)


OPCODES = ("MUFU.RCP64H", "MUFU.RCP", "DFMA")
names = st.text(st.characters(codec="ascii") | st.sampled_from("éΣ漢🙂"), min_size=1, max_size=20)
idents = st.one_of(st.sampled_from(OPCODES + ("MUFU.RCP64", "RCP", "FFMA", "X" * 130)), names, st.integers(0, 2**40))
values = st.one_of(st.floats(allow_nan=False), st.integers(0, 2**63), st.just("n/a"))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(idents, values), max_size=12), st.one_of(st.none(), st.floats(allow_nan=False)),
       st.integers(0, 20000))
def test_named_instances_equal_the_whole_list_decoded(items: list[tuple[object, object]],
                                                      aggregate: float | None, name_id: int) -> None:
    elem, start = _metric(name_id, items, aggregate)
    whole = instances(elem, start)
    expected = None if whole is None else {name: whole.get(name, 0.0) for name in OPCODES}
    assert named_instances(elem, start, OPCODES) == expected


def test_named_instances_of_a_real_shape() -> None:
    elem, start = _metric(185, [("IMAD", 5), ("MUFU.RCP64H", 2.5), ("MUFU.RCP", 300), ("MUFU.RCP64H", 4.0)], 11.0)
    assert named_instances(elem, start, OPCODES) == {"MUFU.RCP64H": 4.0, "MUFU.RCP": 300.0, "DFMA": 0.0}
    numbered, start = _metric(3, [(7, 1.0), ("MUFU.RCP", 2.0)], None)
    assert named_instances(numbered, start, OPCODES) == {"MUFU.RCP64H": 0.0, "MUFU.RCP": 2.0, "DFMA": 0.0}
    assert named_instances(_metric(3, [(7, 1.0)], None)[0], start, OPCODES) is None
