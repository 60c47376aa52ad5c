"""How a kernel or region moved: launches (or a region's row) in, totals per side, the before/after
columns of a comparison row and the phrase that describes the move (faster or slower, within the
run-to-run noise or not, on the roofline, bytes per level, toward or away from the roof) out.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds
from ncu_roof.jsonable import json_num
from ncu_roof.model.kernels import intensity, time_weighted
from ncu_roof.model.roofline import PRECISIONS
from ncu_roof.model.units import label as unit_label

LEVELS = ("dram", "l2", "l1", "shared")
SAME = 0.02  # relative changes below this are "unchanged"
NOISE_MIN_LAUNCHES = 3  # launches per side needed to measure the run-to-run spread
NOISE_UNKNOWN = 0.15  # without that spread, a smaller change may be noise (short kernels vary so)
# ...unless both sides were captured with clocks locked and launches this long: ncu's own replay then
# times a launch to within a few percent (the launch floor's jitter is what makes short ones vary)
NOISE_LOCKED = 0.03
LOCKED_MIN_TIME_S = 100e-6


def _sum(series: pd.Series) -> float:
    return float(series.sum(min_count=1)) if series.notna().any() else math.nan


def ratio(a: float, b: float) -> float:
    return a / b if a == a and b == b and b > 0 else math.nan


def _dominant(launches: pd.DataFrame, column: str) -> str | None:
    by = launches.groupby(column, dropna=True)["time_s"].sum()
    if by.empty:
        return None
    return str(by.idxmax()) if by.notna().any() and by.max() > 0 else str(by.index[0])


def aggregate(launches: pd.DataFrame) -> dict[str, Any]:
    """Totals of a set of launches: time, FLOPs, bytes per level, intensity, % of roof, bound."""
    time_s, flops = _sum(launches["time_s"]), _sum(launches["flops"])
    out: dict[str, Any] = {"launches": len(launches), "time_s": time_s, "flops": flops}
    for level in LEVELS:
        out[f"{level}_bytes"] = _sum(launches[f"{level}_bytes"])
    out["intensity"] = intensity(launches, "dram")  # the one per-kernel intensity (ratio of sums)
    out["flops_per_s"] = ratio(flops, time_s)
    out["dram_bytes_per_s"] = ratio(out["dram_bytes"], time_s)
    out["pct_of_roof"] = time_weighted(launches, "pct_of_roof")
    out["pct_basis"] = _dominant(launches, "pct_basis") if "pct_basis" in launches else None
    out["peak_flops_per_s"] = time_weighted(launches, "peak_flops_per_s")
    out["dram_roof_bytes_per_s"] = time_weighted(launches, "dram_roof_bytes_per_s")
    out["time_cv"] = _time_cv(launches["time_s"])
    out["bound"] = _dominant(launches, "bound")
    out["device"] = _dominant(launches, "device")
    out["precision"] = (
        _dominant(launches, "compute_precision") if "compute_precision" in launches else None
    )
    for precision in PRECISIONS:
        column = f"flops_{precision}"
        out[column] = _sum(launches[column]) if column in launches else float("nan")
    out["compute_roof"] = _dominant(launches, "compute_roof") if "compute_roof" in launches else None
    out["binding_unit"] = _dominant(launches, "binding_unit") if "binding_unit" in launches else None
    unit = launches[launches["binding_unit"] == out["binding_unit"]] if out["binding_unit"] else launches.iloc[:0]
    out["binding_unit_share"] = time_weighted(unit, "binding_unit_share") if len(unit) else float("nan")
    busy = f"unit_{out['binding_unit']}_s"  # the binding unit's busy time (its work at its peak)
    out["binding_unit_busy_s"] = _sum(launches[busy]) if busy in launches else float("nan")
    return out


def _time_cv(times: pd.Series) -> float:
    """Spread of the launch times (std / mean), NaN with fewer than ``NOISE_MIN_LAUNCHES`` known."""
    known = times.dropna()
    if len(known) < NOISE_MIN_LAUNCHES or not known.mean() > 0:
        return float("nan")
    return float(known.std(ddof=1) / known.mean())


def time_noise(b: dict[str, Any], n: dict[str, Any]) -> float:
    """Run-to-run noise of a speedup, as a relative change: twice the standard error of the
    ratio of mean times, from each side's launch-to-launch spread (NaN with too few launches)."""
    cv_b, cv_n = b.get("time_cv", float("nan")), n.get("time_cv", float("nan"))
    if not (cv_b == cv_b and cv_n == cv_n):
        return float("nan")
    return 2.0 * math.sqrt(cv_b**2 / b["launches"] + cv_n**2 / n["launches"])


def _move(before: float, after: float, up: str, down: str) -> str | None:
    if not (before == before and after == after) or before <= 0 or after <= 0:
        return None
    change = after / before - 1.0
    return "same" if abs(change) < SAME else (up if change > 0 else down)


def _pct_move(before: float, after: float) -> str | None:
    if not (before == before and after == after):
        return None
    return "same" if abs(after - before) < 1.0 else ("closer" if after > before else "further")


def compare_row(b: dict[str, Any], n: dict[str, Any], kind: str = "kernel",
                predicted: tuple[str, float] | None = None, kept: tuple[str, float] | None = None) -> dict[str, Any]:
    """Before/after columns of one kernel or region, and its move on the roofline.

    ``pct_of_roof_*`` holds a kernel's % of roof; for a region it is its % of ideal (ideal time /
    time), named so in every output. ``predicted``: the before-report's largest stake among the
    findings whose evidence moved (or that are gone), and its rule, set beside the win that
    happened; ``kept``: the largest one still there with its evidence unchanged (not what won)."""
    row: dict[str, Any] = {"predicted_rule": predicted[0] if predicted else None,
                           "predicted_stake_s": predicted[1] if predicted else float("nan")}
    for key in (
        "launches",
        "time_s",
        "flops",
        *(f"{lv}_bytes" for lv in LEVELS),
        "intensity",
        "flops_per_s",
        "pct_of_roof",
        "pct_basis",
        "bound",
        "device",
        "precision",
        "peak_flops_per_s",
        "dram_roof_bytes_per_s",
        *(f"flops_{p}" for p in PRECISIONS),
        "compute_roof",
        "binding_unit",
        "binding_unit_share",
        "binding_unit_busy_s",
    ):
        row[f"{key}_before"], row[f"{key}_after"] = b.get(key), n.get(key)
    row["clocks_locked"] = bool(b.get("clocks_locked") and n.get("clocks_locked"))
    row["kept_rule"], row["kept_stake_s"] = kept if kept else (None, float("nan"))
    row["speedup"] = ratio(b["time_s"], n["time_s"])
    row["time_noise"] = time_noise(b, n)
    row["delta_s"] = n["time_s"] - b["time_s"]
    row["time_move"] = _move(b["time_s"], n["time_s"], "slower", "faster")
    row["intensity_move"] = _move(b["intensity"], n["intensity"], "right", "left")
    row["perf_move"] = _move(b["flops_per_s"], n["flops_per_s"], "up", "down")
    row["roof_move"] = _pct_move(b["pct_of_roof"], n["pct_of_roof"])
    if kind != "region" and b.get("pct_basis") != n.get("pct_basis"):
        row["roof_move"] = None  # a % of the FLOP roof and a % of the DRAM roof do not compare
    row["direction"] = describe_move(row, kind)
    return row


def describe_move(row: dict[str, Any] | pd.Series, kind: str = "kernel") -> str:
    """One phrase: faster/slower, the move on the roofline and toward or away from the roof
    (for a region: toward or away from its ideal time)."""
    speed = row["speedup"]
    parts = []
    if row["time_move"] == "same":
        parts.append("time unchanged")
    elif row["time_move"] is not None:
        parts.append((f"{speed:.2f}x faster" if speed > 1 else f"{1 / speed:.2f}x slower") + _noise_note(row))
    flops = _flops_change(row)
    if flops:
        parts.append(flops)
    arrow = [m for m in (row["perf_move"], row["intensity_move"]) if m not in (None, "same")]
    if arrow:
        removed = flops and "-" in flops and row["time_move"] == "faster" and row["perf_move"] == "down"
        parts.append("moved " + "-".join(arrow) + " on the roofline"
                     + (" (down: work was removed, not time added)" if removed else ""))
    parts += _roof_and_limiter(row)
    changed = _bytes_changes(row)
    if changed:
        parts.append("bytes " + ", ".join(changed))
    elif not flops and row["time_move"] in ("faster", "slower"):
        parts += _unit_work(row)
    dram_only = row.get("pct_basis_before") == row.get("pct_basis_after") == "dram bandwidth"
    if row["roof_move"] in ("closer", "further"):
        where = "closer to" if row["roof_move"] == "closer" else "further from"
        pcts = f"{fmt_pct(row['pct_of_roof_before'])} -> {fmt_pct(row['pct_of_roof_after'])}"
        if kind == "region":
            parts.append(f"{where} its ideal time ({pcts} of ideal)")
        elif dram_only:
            parts.append(f"{where} the DRAM roof ({pcts}; no FLOPs counted: the only roof known, which need not "
                         "be what limits it)")
        else:
            parts.append(f"{where} the roof ({pcts})")
    if row["bound_before"] != row["bound_after"] and row["bound_before"] and row["bound_after"]:
        parts.append(f"{row['bound_before']} -> {row['bound_after']} bound")
    parts += _credit(row)
    return "; ".join(parts) or "no comparable numbers"


def _credit(row: dict[str, Any] | pd.Series) -> list[str]:
    """The win beside the stake of the finding whose evidence moved; else, on a win, the finding
    still there with its evidence unchanged named as not the cause."""
    predicted = _predicted_text(row)
    if predicted:
        return [predicted]
    if row.get("kept_rule") and row["time_move"] == "faster":
        return [f"not the {row['kept_rule']} finding's doing (its evidence did not move; "
                f"{fmt_seconds(row['kept_stake_s'])} at stake before)"]
    return []


def _unit_work(row: dict[str, Any] | pd.Series) -> list[str]:
    """Where no FLOPs or bytes tell what moved: the binding unit's busy time (its work at its peak),
    '-> FMA pipe busy time +100% (95% -> 97% busy)': more work on that unit, not a slower rate."""
    unit = row.get("binding_unit_before")
    change = _change(row.get("binding_unit_busy_s_before"), row.get("binding_unit_busy_s_after"))
    if not isinstance(unit, str) or unit != row.get("binding_unit_after") or change is None or abs(change) <= SAME:
        return []
    shares = (f"{fmt_pct(100 * row['binding_unit_share_before'])} -> "
              f"{fmt_pct(100 * row['binding_unit_share_after'])} busy")
    return [f"{unit_label(unit)} busy time {100 * change:+.0f}% ({shares}): its work "
            f"{'grew' if change > 0 else 'shrank'}, not its rate"]


def _predicted_text(row: dict[str, Any] | pd.Series) -> str | None:
    """The win beside what the before-report put at stake: '2.71 ms won, 89% of the 3.06 ms ...'."""
    stake, rule = row.get("predicted_stake_s"), row.get("predicted_rule")
    won = -row["delta_s"] if row.get("delta_s") == row.get("delta_s") else float("nan")
    if not (stake and stake == stake and stake > 0 and won == won and won > 0 and rule):
        return None
    return (f"{fmt_seconds(won)} won, {won / stake:.0%} of the {fmt_seconds(stake)} the before-report put at "
            f"stake ({rule})")


def _noise_note(row: dict[str, Any] | pd.Series) -> str:
    """What the speedup rests on: within the measured run-to-run noise, or too few launches to
    tell a small change from noise (changes above ``NOISE_UNKNOWN`` are left unqualified); launches
    of 100 us or more captured with clocks locked on both sides vary by ``NOISE_LOCKED`` at most."""
    change = abs(row["speedup"] - 1.0)
    noise = row.get("time_noise", float("nan"))
    launches = f"{row['launches_before']} and {row['launches_after']} launches"
    long = min(row["time_s_before"] / row["launches_before"], row["time_s_after"] / row["launches_after"])
    if noise != noise and row.get("clocks_locked") and long >= LOCKED_MIN_TIME_S:
        return "" if change > NOISE_LOCKED else f" (within the {NOISE_LOCKED:.0%} clock-locked launches vary by)"
    if noise == noise:
        if change <= noise:
            return f" (within run-to-run noise: +/-{noise:.0%} from {launches})"
        return ""
    if change < NOISE_UNKNOWN:
        return f" (from {launches}: too few to tell from run-to-run noise)"
    return ""


def _change(before: Any, after: Any) -> float | None:
    """Relative change after / before - 1 of two known, positive-before numbers, else None."""
    if before is None or after is None or before != before or after != after or before <= 0:
        return None
    return float(after / before - 1.0)


def _flops_change(row: dict[str, Any] | pd.Series) -> str | None:
    """``FLOPs -59% (FP64 work -57%)`` when the FLOP count changed by more than 5%: the total, and
    each precision whose work changed that much (gone, new, or by how much)."""
    change = _change(row.get("flops_before"), row.get("flops_after"))
    if change is None or abs(change) <= 0.05:
        return None
    per = []
    for precision in PRECISIONS:
        b, a = row.get(f"flops_{precision}_before"), row.get(f"flops_{precision}_after")
        name = precision.upper() if precision != "tensor" else "tensor"
        if b is not None and a is not None and b == b and a == a:
            if b > 0 and a <= 0:
                per.append(f"{name} work gone")
            elif b <= 0 < a:
                per.append(f"{name} work new")
            elif b > 0 and abs(a / b - 1.0) > 0.05:
                per.append(f"{name} work {100 * (a / b - 1.0):+.0f}%")
    return f"FLOPs {100 * change:+.0f}%" + (f" ({', '.join(per)})" if per else "")


def _roof_and_limiter(row: dict[str, Any] | pd.Series) -> list[str]:
    """The roof that applies and the binding unit, where they changed."""
    out = []
    rb, ra = row.get("compute_roof_before"), row.get("compute_roof_after")
    if isinstance(rb, str) and isinstance(ra, str) and rb.split(" (")[0] != ra.split(" (")[0]:
        out.append(f"the roof changed: {rb} -> {ra}")
    ub, ua = row.get("binding_unit_before"), row.get("binding_unit_after")
    if isinstance(ub, str) and isinstance(ua, str) and ub != ua:
        out.append(f"binding unit {_unit(ub, row.get('binding_unit_share_before'))} -> "
                   f"{_unit(ua, row.get('binding_unit_share_after'))}")
    return out


def _unit(name: str, share: Any) -> str:
    known = share is not None and share == share
    return f"{unit_label(name)} ({fmt_pct(share * 100)})" if known else unit_label(name)


def _bytes_changes(row: dict[str, Any] | pd.Series) -> list[str]:
    """Levels whose bytes changed by more than 5%, as "L1 -15%"."""
    out = []
    for level in LEVELS:
        b, a = row[f"{level}_bytes_before"], row[f"{level}_bytes_after"]
        if (
            b == b
            and a == a
            and b is not None
            and a is not None
            and b > 0
            and abs(a / b - 1) > 0.05
        ):
            out.append(
                f"{level.upper() if level != 'shared' else 'shared'} {100 * (a / b - 1):+.0f}%"
            )
    return out


def region_aggregate(region: pd.Series) -> dict[str, Any]:
    values = {
        k: json_num(region.get(k))
        for k in ("launches", "time_s", "flops", "dram_bytes", "l2_bytes", "l1_bytes")
    }
    out: dict[str, Any] = {k: (math.nan if v is None else v) for k, v in values.items()}
    out["shared_bytes"] = math.nan
    out["intensity"] = json_num(region.get("achieved_intensity")) or ratio(
        out["flops"], out["dram_bytes"]
    )
    out["flops_per_s"] = ratio(out["flops"], out["time_s"])
    ideal = json_num(region.get("ideal_time_s"))
    out["pct_of_roof"] = (
        100.0 * ideal / out["time_s"] if ideal is not None and out["time_s"] > 0 else math.nan
    )
    out["peak_flops_per_s"] = json_num(region.get("peak_flops_per_s"))
    out["dram_roof_bytes_per_s"] = json_num(region.get("dram_roof_bytes_per_s"))
    out["extra_bytes_factor"] = json_num(region.get("extra_bytes_factor"))
    out["bound"], out["device"], out["precision"] = None, None, None
    return out
