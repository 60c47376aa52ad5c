"""Two traces of a program compared: step time, busy, idle and its causes, and what moved.

Enters: two :class:`~ncu_roof.traces.TraceResult` (a base and a new trace, each measured). Leaves:
a :class:`TraceComparison`:

``totals``  one row per number (``span_s``, ``gpu_busy_s``, ``gpu_idle_s``, ``idle_share``,
            ``launches``, ``launch_floor_s``, ``step_s``, ``step_busy_s``, ``step_idle_s``, ``idle_<cause>_s``,
            each finding's stake ``stake_<rule>_s``): ``base``, ``new``, ``delta`` (new - base) and ``ratio``
            (new / base; NaN where the base is 0 or unknown);
``ops``     per launching CPU op: launches and kernel time on each side and the delta, the largest
            moves first (an op on one side only has 0 on the other);
``kernels`` the same per kernel name.

A step's numbers are means over the trace's ``ProfilerStep#N`` instances (NaN without steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ncu_roof.model.timeline import Timeline

if TYPE_CHECKING:
    from ncu_roof.traces import TraceResult

RULES = ("launch-overhead", "cpu-bound", "sync-stall")


@dataclass(frozen=True)
class TraceComparison:
    """Base and new trace side by side (see the module docstring)."""

    base: str
    new: str
    totals: pd.DataFrame
    ops: pd.DataFrame
    kernels: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def total(self, name: str) -> pd.Series:
        """The row of one number: ``base``, ``new``, ``delta``, ``ratio``."""
        row = self.totals[self.totals["number"] == name].iloc[0]
        return pd.Series({k: float(row[k]) for k in ("base", "new", "delta", "ratio")})


def _step(tl: Timeline, column: str) -> float:
    steps = tl.steps
    n = float(steps["count"].sum()) if len(steps) else 0.0
    return float(steps[column].sum()) / n if n > 0 else float("nan")


def _numbers(res: TraceResult) -> dict[str, float]:
    tl = res.timeline
    stakes = {f.rule: float(f.time_at_stake_s or 0.0) for f in res.findings}
    return {"span_s": tl.span_s, "gpu_busy_s": tl.gpu_busy_s, "gpu_idle_s": tl.gpu_idle_s,
            "idle_share": tl.idle_share, "launches": float(tl.launches), "launch_floor_s": tl.launch_floor_s,
            "step_s": _step(tl, "span_s"), "step_busy_s": _step(tl, "gpu_busy_s"),
            "step_idle_s": _step(tl, "gpu_idle_s"),
            **{f"idle_{c}_s": v for c, v in tl.idle_by_cause().items()},
            **{f"stake_{r}_s": stakes.get(r, 0.0) for r in RULES}}


def _moved(base: pd.DataFrame, new: pd.DataFrame, key: str) -> pd.DataFrame:
    """Launches and time per ``key`` on both sides (0 where absent), the largest |delta| first."""
    both = base.set_index(key).add_suffix("_base").join(new.set_index(key).add_suffix("_new"), how="outer")
    cols = ["launches_base", "launches_new", "time_s_base", "time_s_new"]
    both = both.reindex(columns=cols).fillna(0.0)
    both[["launches_base", "launches_new"]] = both[["launches_base", "launches_new"]].astype(int)
    both["delta_s"] = both["time_s_new"] - both["time_s_base"]
    order = np.argsort(-both["delta_s"].abs().to_numpy(), kind="stable")
    return both.iloc[order].rename_axis(key).reset_index()


def _per_name(res: TraceResult) -> pd.DataFrame:
    if res.trace is None:
        return pd.DataFrame(columns=["kernel", "launches", "time_s"])
    k = res.trace.gpu[res.trace.gpu["kind"] == "kernel"]
    out = k.groupby(k["name"].astype(str)).agg(launches=("duration_s", "size"), time_s=("duration_s", "sum"))
    return out.rename_axis("kernel").reset_index()


def compare_traces(base: TraceResult, new: TraceResult) -> TraceComparison:
    """``new`` against ``base``: every total, and the ops and kernels that moved."""
    a, b = _numbers(base), _numbers(new)
    rows = []
    for name in a:
        x, y = a[name], b[name]
        rows.append({"number": name, "base": x, "new": y, "delta": y - x,
                     "ratio": y / x if x == x and x != 0 else float("nan")})
    ops = _moved(base.timeline.ops.rename(columns={"kernel_time_s": "time_s"}),
                 new.timeline.ops.rename(columns={"kernel_time_s": "time_s"}), "op")
    notes = [*base.timeline.notes, *new.timeline.notes]
    if base.timeline.gpu_name and new.timeline.gpu_name and base.timeline.gpu_name != new.timeline.gpu_name:
        notes.append(f"the traces ran on different GPUs: {base.timeline.gpu_name} and {new.timeline.gpu_name}")
    if len(base.timeline.steps) != len(new.timeline.steps):
        notes.append(f"the traces hold {len(base.timeline.steps)} and {len(new.timeline.steps)} distinct profiler "
                     "steps: compare the step means, not the totals")
    return TraceComparison(base.timeline.trace, new.timeline.trace, pd.DataFrame(rows), ops,
                           _moved(_per_name(base), _per_name(new), "kernel"), notes)
