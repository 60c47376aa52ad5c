"""``ncu-roof ceilings``: measure this GPU's practical roofs and write them as TOML."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import Force
from ncu_roof.files import check_writable
from ncu_roof.model import ceilings as ceil

_SHOW = {"byte/s": (1e9, "GB/s"), "FLOP/s": (1e12, "TFLOP/s"), "s": (1e-6, "us")}


def _summary_lines(measured: ceil.Measured) -> list[str]:
    lines = [f"device: {measured.device.get('name', '?')} (CC {measured.device.get('cc', '?')})"]
    for key in ceil.CEILING_KEYS:
        if key in measured.ceilings:
            scale, label = _SHOW[ceil.CEILING_UNITS[key][0]]
            lines.append(f"  {key:<26} {measured.ceilings[key] / scale:12.2f} {label}")
        else:
            lines.append(f"  {key:<26} {'-':>12}  ({measured.method.get(key, 'not measured')})")
    return lines


def command(
    output: Annotated[Path, typer.Option("-o", "--output", help="the TOML file to write")] = Path("ceilings.toml"),
    force: Force = False,
) -> None:
    """Measure DRAM/L2 bandwidth, FP32 and tensor peaks and launch overhead with CuPy (needs a GPU)."""
    check_writable(output, force)
    measured = ceil.measure_ceilings(progress=lambda s: typer.echo(f"ncu-roof: {s}", err=True))
    text = ceil.format_ceilings(measured.device, measured.ceilings, measured.method)
    ceil.write_ceilings(output, text, force=force)
    typer.echo("\n".join(_summary_lines(measured)))
    typer.echo(f"ncu-roof: ceilings written: {output}", err=True)
