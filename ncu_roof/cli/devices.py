"""``ncu-roof devices [NAME]``: the built-in device table, each figure with its source."""

from __future__ import annotations

import json
from dataclasses import asdict
from enum import Enum
from typing import Annotated

import typer

from ncu_roof import devices
from ncu_roof.fmt import fmt_si

# (column title, DeviceSpec field, unit); FLOP/s and bytes/s are shown with an SI prefix
COLUMNS = (
    ("DRAM", "dram_bytes_per_s", "B/s"),
    ("FP64", "fp64_flops_per_s", "FLOP/s"),
    ("FP32", "fp32_flops_per_s", "FLOP/s"),
    ("FP16", "fp16_flops_per_s", "FLOP/s"),
    ("tensor FP16", "tensor_fp16_flops_per_s", "FLOP/s"),
)


class DevicesFormat(str, Enum):
    text = "text"
    json = "json"


def _value(spec: devices.DeviceSpec, field: str, unit: str) -> str:
    value = getattr(spec, field)
    return "-" if value is None else fmt_si(value, unit)


def table_lines(specs: list[devices.DeviceSpec]) -> list[str]:
    """One line per device: name, CC, SMs, the main peaks, and where they come from."""
    rows = [("device", "CC", "SMs", *(title for title, _, _ in COLUMNS), "source")]
    rows += [
        (s.name, s.cc or "-", str(s.sm_count or "-"), *(_value(s, f, u) for _, f, u in COLUMNS),
         s.source or "-")
        for s in specs
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows]


def _detail_value(key: str, value: object) -> str:
    units = {"_bytes_per_s": "B/s", "_flops_per_s": "FLOP/s", "_ops_per_s": "op/s", "_hz": "Hz", "l2_bytes": "B"}
    for suffix, unit in units.items():
        if key.endswith(suffix) and isinstance(value, float):
            return f"{fmt_si(value, unit)} ({value:.6g})"
    return str(value)


def detail_lines(spec: devices.DeviceSpec) -> list[str]:
    """Every known figure of one device, its aliases, source and notes."""
    lines = [spec.name]
    for key, value in asdict(spec).items():
        if key == "tensor_kinds" and value == ():
            value = ("none (no tensor cores)",)
        if key == "name" or value in (None, (), False):
            continue
        shown = ", ".join(value) if isinstance(value, tuple) else _detail_value(key, value)
        lines.append(f"  {key:<30} {shown}")
    return lines


def command(
    name: Annotated[str | None, typer.Argument(
        metavar="NAME", help="show devices whose name contains this (e.g. H100, 'RTX 40', A100 MIG 1g.5gb)")] = None,
    fmt: Annotated[DevicesFormat, typer.Option("--format", "-f", help="text or json")] = DevicesFormat.text,
) -> None:
    """List the built-in device table (spec-sheet roofs) and the source of each number."""
    from ncu_roof.errors import InputError

    specs = devices.find_devices(name)
    if not specs:
        raise InputError(f"no device in the table matches {name!r}: run `ncu-roof devices` for the list")
    if fmt is DevicesFormat.json:
        typer.echo(json.dumps([asdict(s) for s in specs], indent=1))
    elif len(specs) == 1:
        typer.echo("\n".join(detail_lines(specs[0])))
    else:
        typer.echo("\n".join(table_lines(specs)))
