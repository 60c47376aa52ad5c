"""Write full-set-like ``.ncu-rep`` reports without NVIDIA's schemas or any real report.

For the benchmark where ``../shared`` (real reports, ncu's ``.proto`` files) is absent: a
launch shaped like one of a ``--set full`` capture (every metric the catalogue reads, a few
hundred more with per-instance values such as source counters, rule results, NVTX) is encoded
by hand (protobuf wire format; field numbers from ``NCU-REP-FORMAT.md`` and the format itself)
and copied ``n`` times, as ``tests/reportgen.replicate`` does with a real launch. NVIDIA's
``ncu_report`` reads the result.

    python benchmarks/synth_report.py OUT.ncu-rep [--launches N]
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncu_roof.read import metrics  # noqa: E402
from ncu_roof.read.native.wire import encode_varint as _varint  # noqa: E402

MAGIC = b"NVR\x00"


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _msg(field: int, body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _double(field: int, value: float) -> bytes:
    return _varint(field << 3 | 1) + struct.pack("<d", value)


def _value(value: float | int | str) -> bytes:
    """A ``ProfileMetricValue``."""
    if isinstance(value, str):
        return _msg(1, value)
    if isinstance(value, int):
        return _int(5, value)
    return _double(3, value)


def _framed(body: bytes) -> bytes:
    return struct.pack("<I", len(body)) + body


# catalogue metrics with plausible values (launch configuration and device attributes by name)
_VALUES: dict[str, float | int | str] = {
    "gpu__time_duration.sum": 52_000.0, "launch__grid_dim_x": 1024, "launch__grid_dim_y": 1, "launch__grid_dim_z": 1,
    "launch__block_dim_x": 256, "launch__block_dim_y": 1, "launch__block_dim_z": 1, "launch__grid_size": 1024,
    "launch__block_size": 256, "launch__stream_id": 7, "launch__context_id": 1, "launch__device_id": 0,
    "device__attribute_compute_capability_major": 7, "device__attribute_compute_capability_minor": 0,
    "device__attribute_display_name": "Tesla V100-SXM2-32GB", "launch__sm_count": 80,
    # what ncu_report infers metric units from (GV100)
    "device__attribute_chip": 320, "device__attribute_architecture": 320, "device__attribute_implementation": 320,
}


def launch_bytes(table: list[str], index: int, instances: int = 300) -> bytes:
    """One ``ProfileResult``: names from ``table`` (extended as needed), ~200 KB encoded."""
    ids = {name: i for i, name in enumerate(table)}

    def name_id(name: str) -> int:
        if name not in ids:
            ids[name] = len(table)
            table.append(name)
        return ids[name]

    parts = [_int(1, 4242), _int(2, 1000 + index), _int(3, 0x7F00), _int(4, 5000 + index),
             _msg(5, "_Z13stencil_stepPKdPdi"), _msg(6, "stencil_step"),
             _msg(7, "stencil_step(const double *, double *, int)"), _int(8, 3), _msg(9, b""),
             _msg(10, _int(1, 1024) + _int(2, 1) + _int(3, 1)), _msg(11, _int(1, 256) + _int(2, 1) + _int(3, 1))]
    for n, name in enumerate(dict.fromkeys([*metrics.needed_metrics(), *_VALUES])):
        value = _VALUES.get(name, 1000.0 + n * 0.5 if not name.endswith("_pct") else 12.5)
        parts.append(_msg(13, _int(1, name_id(name)) + _msg(2, _value(value))))
    for n in range(600):  # what a full set adds: counters, and source counters per instruction
        body = _int(1, name_id(f"synthetic__counter_{n:03d}.sum")) + _msg(2, _value(float(n)))
        if n % 2 == 0:
            body += b"".join(_msg(3, _msg(1, _value(k * 16)) + _msg(2, _value(k % 7)))
                             for k in range(instances // 2))
        parts.append(_msg(13, body))
    parts.append(_msg(15, b""))  # Source
    for rule in range(12):
        item = _msg(1, _msg(1, f"Rule {rule} finds something to improve by {rule * 1.5:.1f}%.") + _int(2, 4)
                    + _msg(4, f"Finding {rule}"))
        item += _msg(10, _int(1, 2) + _double(2, rule * 1.5))
        parts.append(_msg(19, _msg(1, f"Rule{rule}") + _msg(2, f"Rule {rule}") + _msg(3, _msg(1, item))
                          + _msg(4, "SpeedOfLight")))
    nvtx = (_msg(1, _int(1, 0) + _msg(2, "<default domain>"))
            + _msg(2, _int(1, 4242) + _msg(2, _int(1, 0) + _msg(3, _msg(1, "solver")) + _msg(3, _msg(1, "step")))))
    parts.append(_msg(21, nvtx))
    return b"".join(parts)


def write(dst: Path, launches: int) -> None:
    """An ``launches``-launch report: one block with the string table, then one launch per block."""
    table: list[str] = []
    launch = launch_bytes(table, 0)
    process = _msg(6, _int(1, 4242) + _msg(3, "/opt/app/solver"))
    with dst.open("wb") as out:
        out.write(MAGIC + _framed(_int(1, 7)))
        for i in range(launches):
            body = launch if i == 0 else launch.replace(_int(2, 1000), _int(2, 1000 + i), 1)
            payload = _framed(body)
            header = _int(1, 0) + _int(2, 1)
            if i == 0:
                header += _msg(4, b"".join(_msg(1, s) for s in table))
            header += _int(5, len(payload)) + process
            out.write(_framed(header) + payload)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--launches", type=int, default=2000)
    args = parser.parse_args()
    write(args.out, args.launches)
    print(f"{args.out}: {args.launches} launches, {args.out.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
