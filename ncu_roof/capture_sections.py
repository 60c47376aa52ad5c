"""Which Nsight Compute section collects which metric: what a verify command (:mod:`ncu_roof.verify`)
asks ncu for, so that it re-collects just what a finding reads.

:data:`SECTION_METRICS` (``ncu_roof/data/sections.toml``) lists, per section identifier
(``ncu --section ID``), the metrics of the catalogue (:mod:`ncu_roof.read.metrics`) that ncu 2024.1.1
collects for that section (``ncu --section ID --list-metrics``, which runs without a GPU;
``tests/mcp/test_agent_outputs.py`` checks the table against it). :data:`BREAKDOWN` adds the items of
the SpeedOfLight section's throughput breakdowns (``breakdown:gpu__compute_memory_throughput...``),
which ncu expands per chip. The sections are in the order :func:`sections_for` prefers them. A metric
in no section is asked for by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ncu_roof.read.metrics import L1_BREAKDOWN

# Always in a report whatever was collected: the device's attributes.
ALWAYS = ("device__attribute_",)

def _section_metrics() -> dict[str, tuple[str, ...]]:
    from ncu_roof.tomlfile import tomllib

    text = (Path(__file__).parent / "data" / "sections.toml").read_text(encoding="utf-8")
    return {name: tuple(entry["metrics"]) for name, entry in tomllib.loads(text)["sections"].items()}


SECTION_METRICS = _section_metrics()  # ncu_roof/data/sections.toml: ncu's own table, kept as data


BREAKDOWN = (*L1_BREAKDOWN, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
             *(f"lts__d_sectors_fill_{source}.avg.pct_of_peak_sustained_elapsed" for source in ("sysmem", "device")))


def sections_of(metric: str) -> list[str]:
    """The sections that collect ``metric``, in preference order (["*"] for a device attribute)."""
    if metric.startswith(ALWAYS):
        return ["*"]
    found = [s for s, names in SECTION_METRICS.items() if metric in names]
    return found + (["SpeedOfLight"] if metric in BREAKDOWN and "SpeedOfLight" not in found else [])


def sections_for(metrics: Iterable[str], least: int = 2) -> tuple[list[str], list[str]]:
    """The sections that collect ``metrics`` and the metrics left to ask for by name, each in
    preference order: greedily, the section that collects most of the metrics not yet collected,
    while it collects at least ``least`` of them (a section for one metric costs more passes than
    the metric alone)."""
    wanted = [m for m in dict.fromkeys(metrics) if sections_of(m) != ["*"]]
    holders = {m: sections_of(m) for m in wanted}
    left = [m for m in wanted if holders[m]]
    chosen: list[str] = []
    while left:
        order = list(SECTION_METRICS)
        counts = {s: sum(s in holders[m] for m in left) for s in order}
        best = max(order, key=lambda s: (counts[s], -order.index(s)))
        if counts[best] < least:
            break
        chosen.append(best)
        left = [m for m in left if best not in holders[m]]
    return chosen, [m for m in wanted if m in left or not holders[m]]
