"""The bottleneck model: every unit the report measured, each unit's time at its limit, the binding one.

A launch keeps several units busy at once: DRAM, L2, L1/TEX, the shared-memory data pipe, the
issue slots, each execution pipe (FP64, FMA, ALU, XU, LSU, tensor, ...). For each unit the report
measured, its *lower bound* is the time it needs for the work it did at its peak rate:

- from the work: DRAM bytes at the practical DRAM roof, L2 and L1 bytes at their roofs, FLOPs at
  the compute roof (the roofline's roofs are units like the others);
- from the busy share Nsight Compute measured: share of peak x the duration (the pipes' shares
  are over elapsed cycles from the read stage on; the L1/TEX share and issue slots read over the
  SMs' active cycles are scaled here by the active share of the elapsed cycles); DRAM's share is
  over the practical roof, as the roofline judges it.

Where a unit has both, the larger is kept. The *binding unit* is the one with the largest lower
bound, its *share* that bound over the duration. ``sm`` and ``memory`` (ncu's compute and memory
throughput, the maximum of their sub-units) stand in for a side only where no finer unit of that
side is known. Unknown stays NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ncu_roof.read.metrics import PIPES

Family = Literal["memory", "compute"]


@dataclass(frozen=True)
class Unit:
    """A hardware unit with a measurable limit: its column suffix, how outputs name it, its side."""

    name: str
    label: str
    family: Family
    coarse: bool = False  # ncu's compute/memory throughput: used where no finer unit of its side is known


_PIPE_LABELS = {"fp64": "FP64 pipe", "fma": "FMA pipe", "fmaheavy": "FMA-heavy pipe", "alu": "ALU pipe",
                "fp16": "FP16 pipe", "lsu": "LSU pipe", "xu": "XU pipe (special functions)",
                "tensor": "tensor pipe", "adu": "ADU pipe", "cbu": "CBU pipe (branches)",
                "uniform": "uniform pipe", "tex": "TEX pipe"}

UNITS: tuple[Unit, ...] = (
    Unit("dram", "DRAM", "memory"),
    Unit("l2", "L2", "memory"),
    Unit("l1", "L1/TEX", "memory"),
    Unit("shared", "shared memory", "memory"),
    Unit("flops", "FLOP roof", "compute"),
    Unit("issue", "issue slots", "compute"),
    *(Unit(f"pipe_{p}", _PIPE_LABELS.get(p, f"{p} pipe"), "compute") for p in PIPES),
    Unit("sm", "SM (ncu's compute throughput)", "compute", coarse=True),
    Unit("memory", "memory (ncu's memory throughput)", "memory", coarse=True),
)
BY_NAME = {u.name: u for u in UNITS}
# Units that serve the same accesses: a fix that cuts one unit's work cuts theirs with it (L1/TEX
# wavefronts and shared-memory wavefronts come from the LSU pipe's load and store instructions).
COUPLED: dict[str, tuple[str, ...]] = {"l1": ("pipe_lsu",), "pipe_lsu": ("l1", "shared"), "shared": ("pipe_lsu", "l1")}
# units whose bound comes from the roofline's work and roofs; the others from measured busy shares
# the tidy columns the model reads for its units (a capture must collect them for every unit to speak)
READS: tuple[str, ...] = ("time_s", "dram_bytes", "l2_bytes", "l1_bytes", "flops", "l1_throughput_active_pct",
                          "l1_breakdown_pct",
                          "l2_throughput_pct", "shared_pipe_pct", "issue_active", "sm_active_cycles", "sm_cycles",
                          "pipe_alu_pct", "pipe_fma_pct", "pipe_fp64_pct", "pipe_lsu_pct", "pipe_xu_pct",
                          "pipe_tensor_pct", "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct")


def unit_column(name: str) -> str:
    return f"unit_{name}_s"


UNIT_COLUMNS = tuple(unit_column(u.name) for u in UNITS)


_SHORT = {"dram": "DRAM", "l2": "L2", "l1": "L1/TEX", "shared": "shared", "flops": "FLOP roof", "issue": "issue",
          "sm": "SM (SOL)", "memory": "mem (SOL)"}


def short_label(name: object) -> str:
    """A table cell's name for a unit: ``FP64``, ``L1/TEX``, ``issue``."""
    text = str(name)
    return _SHORT.get(text) or (text[5:].upper() if text.startswith("pipe_") else text)


def label(name: object) -> str:
    unit = BY_NAME.get(str(name))
    return unit.label if unit else str(name)


def family(name: object) -> Family | None:
    unit = BY_NAME.get(str(name))
    return unit.family if unit else None


MEMORY_INSTRUCTION_UNITS = frozenset({"pipe_lsu"})  # a pipe of the SM, but its work is memory accesses


def bound_side(name: object) -> Family | None:
    """The side of the roofline a launch bound by this unit is on: its family, except the LSU pipe,
    which issues loads and stores (a kernel bound by it is bound by its memory instructions: memory,
    although ncu counts the pipe in the SM's compute throughput)."""
    return "memory" if str(name) in MEMORY_INSTRUCTION_UNITS else family(name)


def _col(t: pd.DataFrame, name: str) -> pd.Series:
    return t[name].astype("float64") if name in t else pd.Series(np.nan, index=t.index, dtype="float64")


def _share(t: pd.DataFrame, name: str) -> pd.Series:
    return _col(t, name) / 100.0


def _positive(s: pd.Series) -> pd.Series:
    return s.where(s > 0)


def _fmax(a: pd.Series, b: pd.Series) -> pd.Series:
    """The larger of two estimates per launch, ignoring an unknown one."""
    return pd.Series(np.fmax(a.to_numpy(dtype="float64"), b.to_numpy(dtype="float64")), index=a.index)


def _active_fraction(t: pd.DataFrame) -> pd.Series:
    """The SMs' active share of the elapsed cycles (1 where unknown)."""
    return (_col(t, "sm_active_cycles") / _positive(_col(t, "sm_cycles"))).clip(0.0, 1.0).fillna(1.0)


def l1_headline_share(t: pd.DataFrame) -> pd.Series:
    """ncu's L1/TEX throughput headline as a share of elapsed cycles (its active-cycle form scaled)."""
    return _fmax(_share(t, "l1_throughput_pct"), _share(t, "l1_throughput_active_pct") * _active_fraction(t))


def l1_share(t: pd.DataFrame) -> pd.Series:
    """L1/TEX's busy share over elapsed cycles: ncu's headline (``l1tex__throughput``), else the
    largest item of its breakdown. On Turing the headline is twice its largest item; the stalls of
    such kernels (MIO throttle, bank conflicts) and the per-SM maximum at 100% say the headline is the
    unit's load, so it is used, and a note says where the two differ."""
    headline = l1_headline_share(t)
    return headline.where(headline.notna(), _share(t, "l1_breakdown_pct"))


def l1_basis_note(t: pd.DataFrame) -> str | None:
    """A note where ncu's L1/TEX headline (used) exceeds the largest item of its own breakdown."""
    headline, breakdown = l1_headline_share(t), _share(t, "l1_breakdown_pct")
    apart = (headline > 1.1 * breakdown) & (headline - breakdown > 0.05)
    if not apart.any():
        return None
    i = int(np.nanargmax(np.where(apart.to_numpy(), (headline - breakdown).to_numpy(), np.nan)))
    return (f"L1/TEX busy share of {int(apart.sum())} of {len(t)} launches from ncu's headline (l1tex__throughput), "
            f"above the largest item of its own throughput breakdown (e.g. {t['kernel'].iloc[i]}: headline "
            f"{100 * headline.iloc[i]:.1f}% of elapsed cycles, breakdown at most {100 * breakdown.iloc[i]:.1f}%)")


def unit_bounds(t: pd.DataFrame, practical_dram_fraction: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(each unit's lower bound in seconds, the same from the roofline's work alone) for a placed table."""
    time = _col(t, "time_s").where(lambda s: s > 0)
    active = _active_fraction(t)
    work = {
        "dram": _col(t, "dram_bytes") / _positive(_col(t, "dram_roof_bytes_per_s")),
        "l2": _col(t, "l2_bytes") / _positive(_col(t, "l2_roof_bytes_per_s")),
        "l1": _col(t, "l1_bytes") / _positive(_col(t, "l1_roof_bytes_per_s")),
        # the binding precision's FLOPs (the roofline's ``roof_flops``) over its roof
        "flops": _positive(_col(t, "roof_flops" if "roof_flops" in t else "flops")) / _positive(
            _col(t, "peak_flops_per_s")),
    }
    busy: dict[str, pd.Series] = {
        "dram": _share(t, "dram_throughput_pct") * time / practical_dram_fraction,
        "l2": _share(t, "l2_throughput_pct") * time,
        "l1": l1_share(t) * time,
        "shared": _share(t, "shared_pipe_pct") * time,
        "issue": _col(t, "issue_active") * active * time,
        **{f"pipe_{p}": _share(t, f"pipe_{p}_pct") * time for p in PIPES},  # over elapsed cycles (read stage)
    }
    frame = pd.DataFrame(index=t.index)
    for u in UNITS:
        if u.coarse:
            continue
        w = work.get(u.name, pd.Series(np.nan, index=t.index))
        b = busy.get(u.name, pd.Series(np.nan, index=t.index))
        # DRAM: the bytes over the practical roof where counted; the busy share only without them
        frame[unit_column(u.name)] = w.where(w.notna(), b) if u.name == "dram" else _fmax(w, b)
    for u in (x for x in UNITS if x.coarse):  # where no busy share of a finer unit of its side is known
        fine = pd.DataFrame({k: v for k, v in busy.items() if BY_NAME[k].family == u.family})
        metric = "sm_throughput_pct" if u.family == "compute" else "memory_throughput_pct"
        frame[unit_column(u.name)] = (_share(t, metric) * time).where(fine.isna().all(axis=1))
    roofline = pd.DataFrame({unit_column(k): v for k, v in work.items()}, index=t.index)
    return frame, roofline


def bind(t: pd.DataFrame, practical_dram_fraction: float) -> pd.DataFrame:
    """Per launch: each unit's lower bound, the binding unit, its share of the time, the largest
    bound and the time above it; plus the largest share of the roofline's work alone."""
    frame, roofline = unit_bounds(t, practical_dram_fraction)
    time = _col(t, "time_s").where(lambda s: s > 0)
    lower = frame.max(axis=1, skipna=True)
    known = frame.notna().any(axis=1)
    names = np.array([u.name for u in UNITS if not u.coarse] + [u.name for u in UNITS if u.coarse], dtype=object)
    order = [unit_column(n) for n in names]
    picked = frame[order].fillna(-1.0).to_numpy().argmax(axis=1)
    frame["binding_unit"] = pd.Series(names[picked], index=t.index, dtype="object").where(known)
    frame["binding_unit_share"] = lower / time
    frame["unit_lower_bound_s"] = lower
    frame["unit_headroom_s"] = (time - lower).clip(lower=0.0)
    frame["roofline_share"] = roofline.max(axis=1, skipna=True) / time
    frame["next_binding_unit"], frame["next_binding_share"] = _runner_up(frame, time)
    return frame


def _runner_up(frame: pd.DataFrame, time: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The unit with the largest bound after the binding one (the first in ``UNITS`` order on a
    tie), and its share of the time: what binds once the binding unit is relieved."""
    names = np.array([u.name for u in UNITS], dtype=object)
    bounds = frame[[unit_column(n) for n in names]].to_numpy(dtype=float, copy=True)
    binding = frame["binding_unit"].to_numpy(dtype=object)
    bounds[binding[:, None] == names[None, :]] = np.nan
    known = ~np.isnan(bounds).all(axis=1)
    picked = np.where(np.isnan(bounds), -np.inf, bounds).argmax(axis=1)
    runner = pd.Series(names[picked], index=frame.index, dtype="object").where(known)
    share = pd.Series(bounds[np.arange(len(bounds)), picked], index=frame.index).where(known) / time
    return runner, share
