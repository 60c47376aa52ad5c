"""What the summaries share: the placed table, regions and findings in, display cells and lines out
(roof cell, headline, unjudged and skipped lines, regions, advice groups, roofs, ncu's rules).

The per-kernel totals they print are :func:`ncu_roof.model.kernels.kernel_summary`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ncu_roof.fmt import UNKNOWN, fmt_pct, fmt_seconds, plural, short_name
from ncu_roof.fmt import fmt_si as _fmt_si
from ncu_roof.model.units import short_label
from ncu_roof.rules.base import Finding, Skipped

# fmt_pct and fmt_seconds live in ncu_roof.fmt; they stay importable from here for older importers.
__all__ = ["fmt_pct", "fmt_seconds", "fmt_si"]


def roof_cell(k: pd.Series) -> str:
    """The '% of roof' cell: the roofline's percent ("at roof" above a practical, unmeasured DRAM
    roof), else ncu's speed of light marked as such."""
    if k.get("above_practical_roof") and k["pct_of_roof"] > 100:
        return "at roof"
    if k["pct_of_roof"] == k["pct_of_roof"]:
        return fmt_pct(k["pct_of_roof"])
    sol = k.get("sol_pct")
    return f"SOL {sol:.0f}%" if sol is not None and sol == sol else UNKNOWN


def limiter_cell(k: pd.Series) -> str:
    """The 'limiter' cell: the binding unit and how busy it is (``FP64 85%``), '-' where none is known."""
    unit, share = k.get("binding_unit"), k.get("binding_unit_share")
    if not isinstance(unit, str) or share is None or share != share:
        return "-"
    if share >= 1.0:  # above its limit: DRAM over the practical (estimated) roof
        return f"{short_label(unit)} at roof"
    return f"{short_label(unit)} {fmt_pct(share * 100)}"


def unjudged_line(placed: pd.DataFrame, anything_ranked: bool, unmeasured_advice: bool = False,
                  priced: Collection[tuple[Any, Any]] | None = None) -> str | None:
    """What the advice cannot speak for: the share of time (or launches) with no verdict.

    ``unmeasured_advice``: some rule advises a change without a time at stake (launch-bound work
    that is not measured), so "nothing to win" would contradict it. ``priced``: the (report, id) of the
    launches a ranked finding prices (from ncu's unit throughputs where they have no roofline): those
    are judged; None: every launch without a roofline counts as not judged unless all of them are."""
    total = placed["time_s"].sum(min_count=1)
    # no roofline: unknown, or latency-bound by ncu's speed of light alone
    unknown = placed["bound"].eq("unknown") | (placed["bound"].eq("latency") & placed["pct_of_roof"].isna())
    no_time = int(placed["time_s"].isna().sum())
    share = placed.loc[unknown, "time_s"].sum() / total if total and total > 0 else np.nan
    if no_time == len(placed):
        return "Cannot judge these launches: none has a measured time (see the notes)."
    if share == share and share >= 0.05:
        why = _why_unjudged(placed[unknown])
        unpriced = unknown if priced is None else unknown & ~_keys(placed).isin(list(priced))
        left = placed.loc[unpriced, "time_s"].sum() / total
        if anything_ranked and (share > 0.995 if priced is None else left < 0.05):  # priced from ncu's units
            where = "" if share > 0.995 else f" for {share:.0%} of the time"
            return (f"No roofline{where}: {why} (see the notes); the stakes below come from what the report does "
                    "hold (ncu's unit throughputs, the launch shape).")
        rest = "" if anything_ranked or share > 0.995 else "; nothing to win in the rest"
        return f"Cannot judge {left:.0%} of the time: {why} (see the notes){rest}."
    if not anything_ranked and unmeasured_advice:
        return "No time at stake could be measured in these launches; what the rules found:"
    if anything_ranked:
        return None
    # no finding: "nothing to win" only where a roof judged the launches; elsewhere the rules could not tell
    roofless = placed["pct_of_roof"].isna() & placed["time_s"].notna() if "pct_of_roof" in placed else unknown
    share = placed.loc[roofless, "time_s"].sum() / total if total and total > 0 else np.nan
    if share == share and share >= 0.05:
        return (f"Cannot judge {share:.0%} of the time: {_why_unjudged(placed[roofless])}, so no rule could price a "
                "fix (see the notes; Nsight Compute's own rules, where the report has them, are below).")
    return "Nothing to win: no rule found time at stake in these launches."


def _keys(placed: pd.DataFrame) -> pd.MultiIndex:
    """Each launch's (report, id), the key a finding names it by, in the placed table's order."""
    reports = placed["report"] if "report" in placed else pd.Series(None, index=placed.index, dtype=object)
    ids = placed["id"] if "id" in placed else pd.Series(placed.index, index=placed.index)
    return pd.MultiIndex.from_arrays([reports.to_numpy(), ids.to_numpy()])


def priced_launches(findings: Iterable[Finding]) -> set[tuple[Any, Any]]:
    """The (report, id) of the launches the given findings put a time at stake on."""
    return {(f.report, i) for f in findings if f.time_at_stake_s for i in f.ids}


def _why_unjudged(rows: pd.DataFrame) -> str:
    """What the unjudged launches lack, in words: the GPU's name (FLOPs and bytes are there), or
    the counters."""
    has_work = rows["flops"].notna() & rows["dram_bytes"].notna() if "flops" in rows and "dram_bytes" in rows else None
    no_device = rows["device"].isna() if "device" in rows else None
    if has_work is not None and no_device is not None and bool((has_work & no_device).all()):
        return ("the report does not name the GPU, so no roof is known (its FLOPs and bytes are there): pass "
                "--device NAME or --ceilings FILE")
    return "no roof, FLOPs or bytes for those launches"


def headline(placed: pd.DataFrame) -> str:
    """``3 launches, 1 kernel``."""
    return f"{plural(len(placed), 'launch')}, {plural(int(placed['kernel'].nunique()), 'kernel')}"


def has_algorithmic(placed: pd.DataFrame) -> bool:
    """Whether any launch has algorithmic counts (``--algorithmic`` or ``ncu_roof.region``)."""
    return "alg_bytes" in placed and bool(placed["alg_bytes"].notna().any())


ALGORITHMIC_HINT = ("extra bytes (achieved / algorithmic) need algorithmic counts: pass --algorithmic FILE.toml "
                    "or wrap the work in ncu_roof.region(name, flops=..., bytes=...)")


def skipped_lines(skipped: list[Skipped]) -> list[str]:
    """The skipped rules in two groups: those that need algorithmic counts (a file to pass, not a
    capture to redo) and those that lack metrics (what to capture)."""
    need_alg = [s.rule for s in skipped if "algorithmic counts" in s.missing]
    lacking = [s for s in skipped if "algorithmic counts" not in s.missing]
    lines = []
    if need_alg:
        lines.append(f"{', '.join(need_alg)}: need algorithmic counts (pass --algorithmic FILE.toml)")
    if lacking:
        lines.append("lack metrics: " + ", ".join(f"{s.rule} ({', '.join(s.missing)})" for s in lacking)
                     + " (--format json says what to capture)")
    return lines


def fmt_si(value: float | None, unit: str) -> str:
    """:func:`ncu_roof.fmt.fmt_si` with an upper-case ``K`` for kilo, as the charts print it."""
    return _fmt_si(value, unit, kilo="K")


def region_summary(regions: pd.DataFrame) -> pd.DataFrame:
    """Regions with launches, most time at stake first, with display strings for the summaries."""
    if regions.empty or "time_s" not in regions:
        return pd.DataFrame()
    out = regions[regions["launches"].fillna(0) > 0].copy()
    out["extra"] = out["extra_bytes_factor"].map(lambda x: UNKNOWN if x != x else f"{x:.1f}x")
    out["intensities"] = [
        f"{UNKNOWN if a != a else f'{a:.3g}'} / {UNKNOWN if b != b else f'{b:.3g}'}"
        for a, b in zip(out["alg_intensity"], out["achieved_intensity"], strict=True)]
    return out.sort_values("time_at_stake_s", ascending=False, na_position="last").reset_index(drop=True)


def unmeasured_advice(findings: list[Finding]) -> bool:
    """Whether a rule gives advice (not an info note) without a time at stake."""
    return any(not f.time_at_stake_s and f.severity != "info" for f in findings)


def advice_groups(findings: list[Finding]) -> tuple[list[Finding], list[str]]:
    """Findings with something at stake (ranked as given), and one line per rule for the rest
    (notes such as "at the roof"), so that a page of good news does not bury the advice."""
    ranked = [f for f in findings if f.time_at_stake_s]
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        if not f.time_at_stake_s:
            by_rule.setdefault(f.rule, []).append(f)
    notes = []
    for rule_id, group in by_rule.items():
        if len(group) == 1:
            notes.append(f"{rule_id}: {group[0].message}")
            continue
        kernels = list(dict.fromkeys(k for f in group for k in f.kernels))
        shown = ", ".join(kernels[:6]) + (f" and {len(kernels) - 6} more" if len(kernels) > 6 else "")
        notes.append(f"{rule_id}: {len(kernels)} kernels ({shown}); first: {group[0].message}")
    return ranked, notes


def _main_value(group: pd.DataFrame, value: str, label: str) -> tuple[float, str | None]:
    """The value of ``value`` (and its ``label``) that holds the most time in ``group``."""
    rows = group[group[value].notna()]
    if rows.empty:
        return np.nan, None
    weights = rows["time_s"].fillna(0.0).groupby(rows[value]).sum()
    best = float(str(weights.idxmax()))
    labels = rows.loc[rows[value] == best, label].dropna()
    return best, (str(labels.iloc[0]) if len(labels) else None)


def roof_lines(placed: pd.DataFrame) -> list[str]:
    """One line per device: the compute and DRAM roofs most of its time is held to, with sources."""
    lines = []
    for device, group in placed.groupby(placed["device"].fillna("unknown device"), sort=False):
        parts = _compute_roof_parts(group) + _unbound_precisions(group)
        dram, dram_src = _main_value(group, "dram_roof_bytes_per_s", "dram_roof_src")
        if dram == dram:
            theoretical = group.loc[group["dram_roof_bytes_per_s"] == dram, "dram_peak_bytes_per_s"].dropna()
            if dram_src and "practical" in dram_src and len(theoretical):
                parts.append(f"DRAM {fmt_si(dram, 'B/s')} = {dram / theoretical.iloc[0]:.0%} of "
                             f"{fmt_si(theoretical.iloc[0], 'B/s')} ({dram_src.split(' x ')[0]}; practical, "
                             "not measured: a kernel can exceed it)")
            else:
                parts.append(f"DRAM {fmt_si(dram, 'B/s')}" + (f" ({dram_src})" if dram_src else ""))
        lines.append(f"Roofs on {device}: " + ("; ".join(parts) if parts else "none known (see the notes)"))
    return lines


HELD_NAMED = 2  # kernels named per roof where a device's kernels are held to several


def _compute_roof_parts(group: pd.DataFrame) -> list[str]:
    """The compute roof most time is held to, per precision held (most time first), with its source;
    where kernels are held to several, the kernels each one holds (their % of roof is against it)."""
    precision = group["compute_precision"] if "compute_precision" in group else pd.Series(None, index=group.index)
    held = precision.fillna("")
    order = group["time_s"].fillna(0.0).groupby(held).sum().sort_values(ascending=False)
    several = (order.index != "").sum() > 1
    parts = []
    for p in order.index:
        rows = group[held == p]
        peak, roof = _main_value(rows, "peak_flops_per_s", "compute_roof")
        if peak == peak:
            source = rows.loc[rows["peak_flops_per_s"] == peak, "peak_flops_src"].dropna()
            notes = [source.iloc[0]] if len(source) else []
            if several and p:
                notes.append(_kernels_held(rows))
            parts.append(f"{roof or 'compute'} {fmt_si(peak, 'FLOP/s')}" + (f" ({'; '.join(notes)})" if notes else ""))
    return parts


def _kernels_held(rows: pd.DataFrame) -> str:
    """'% of roof of fill_vector', or of 'linspace, generate_encoded_signal and 3 more': the kernels,
    most time first."""
    by_time = rows["time_s"].fillna(0.0).groupby(rows["kernel"].astype(str), sort=False).sum()
    names = [short_name(k) for k in by_time.sort_values(ascending=False, kind="stable").index]
    shown = names if len(names) <= HELD_NAMED + 1 else names[:HELD_NAMED]
    more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    return "% of roof of " + ", ".join(shown) + more


def _unbound_precisions(group: pd.DataFrame) -> list[str]:
    """The FMA peak of each precision the launches have FLOPs in but none is held to (a kernel's
    FP32 FLOPs where its FP64 ones bind): every precision used has its roof named."""
    held = set(group["compute_precision"].dropna().astype(str)) if "compute_precision" in group else set()
    out = []
    for p in ("fp64", "fp32", "fp16"):
        column = f"peak_{p}_flops_per_s"
        if p in held or column not in group or not (group.get(f"flops_{p}", pd.Series(dtype=float)) > 0).any():
            continue
        peak = group[column].dropna()
        if len(peak):
            out.append(f"{p} FMA {fmt_si(float(peak.median()), 'FLOP/s')} ({p.upper()} FLOPs here, not binding)")
    return out


TOP_NCU_RULES = 5


def ncu_rule_lines(records: list[dict[str, Any]], run_time_s: float) -> tuple[str, list[str]]:
    """The cross-examination of Nsight Compute's rules for a summary: a count per verdict, and one
    line per disagreement that matters (:func:`ncu_roof.rules.crossexam.disagreements`), largest first."""
    from ncu_roof.rules.crossexam import disagreements

    if not records:
        return "", []
    counts: dict[str, int] = {}
    for r in records:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    head = (f"{len(records)} Nsight Compute rule result{'s' if len(records) != 1 else ''} (OPT/WRN) checked: "
            + ", ".join(f"{n} {v}" for v, n in counts.items()) + " (all in --format json, ncu_rules).")
    shown = disagreements(records, run_time_s)
    lines = [f"{r['rule']} on {short_name(', '.join(r['kernels']), 60)}: {r['verdict']}: {r['reason']}"
             for r in shown[:TOP_NCU_RULES]]
    if len(shown) > TOP_NCU_RULES:
        lines.append(f"... and {len(shown) - TOP_NCU_RULES} more (see --format json)")
    return head, lines


UNJUDGED_TITLE = "Where no rule names a cause, Nsight Compute estimates"
# findings that say a launch is below its roof, or how busy its units are, without naming a cause
_CAUSELESS = frozenset({"below-roof", "speed-of-light-only"})


def ncu_unjudged_lines(records: list[dict[str, Any]], findings: Sequence[Finding]) -> list[str]:
    """For the kernels no finding names a cause for (none, or only below-roof or speed-of-light-only),
    what Nsight Compute's own rules estimate where the roofline cannot judge them: the largest estimates,
    each with the first sentence of ncu's text (copy_blocked: UncoalescedGlobalAccess, 75% of the sectors
    excessive, ncu estimates 74.1%, where the report holds no sector counts)."""
    named = {k for f in findings if f.rule not in _CAUSELESS for k in f.kernels}
    rows = [r for r in records if r["verdict"] == "cannot-judge" and _estimate(r) >= NCU_UNJUDGED_PCT
            and r.get("ncu_speedup_type") != "local"  # a local estimate is one unit's, not the kernel's time
            and not named & set(r["kernels"])]
    rows.sort(key=lambda r: -_estimate(r))
    return [f"{r['rule']} on {short_name(', '.join(r['kernels']), 60)}: ncu estimates {_estimate(r):.0f}%: "
            f"{_first_sentence(str(r.get('ncu_message') or ''))}" for r in rows[:TOP_NCU_UNJUDGED]]


NCU_UNJUDGED_PCT, TOP_NCU_UNJUDGED = 10.0, 3  # ncu's estimates shown where nothing is ranked: at least, at most


def _estimate(record: dict[str, Any]) -> float:
    value = record.get("ncu_estimated_speedup_pct")
    return float(value) if isinstance(value, (int, float)) and value == value else -1.0


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def practical_roof_note(placed: pd.DataFrame) -> str | None:
    """One line for launches above the practical (estimated) DRAM roof: at the roof, by how much
    above the estimate, and how to measure the real roof."""
    if "above_practical_roof" not in placed:
        return None
    above = placed[placed["above_practical_roof"].fillna(False).astype(bool)]
    if above.empty:
        return None
    lo, hi = float(above["pct_of_roof"].min()), float(above["pct_of_roof"].max())
    span = f"{lo:.1f}%" if round(lo, 1) == round(hi, 1) else f"{lo:.1f}-{hi:.1f}%"
    return (f"at roof: {plural(len(above), 'launch')} at {span} of the practical DRAM roof, which is an estimate "
            f"(a share of the spec, not measured): {'it is at its' if len(above) == 1 else 'they are at their'} "
            "roof, with no time to win there; "
            "`ncu-roof ceilings` on the GPU measures the real roof (pass it with --ceilings).")


_CONDITION_KEYS = ("ncu_version", "cuda_version", "driver_version", "replay_mode", "clock_control",
                   "cache_control", "profile_from_start")


def run_condition_text(run: dict[str, Any]) -> str:
    """How one report was captured, in words (what the report does not say is left out)."""
    versions = [f"ncu {run['ncu_version']}" if run.get("ncu_version") else "",
                f"CUDA {run['cuda_version']}" if run.get("cuda_version") else "",
                f"driver {run['driver_version']}" if run.get("driver_version") else ""]
    clocks = {"base": "clocks locked to base", "none": "clocks not locked (boost)"}
    caches = {"all": "caches flushed between passes", "none": "caches not flushed"}
    how = [f"{run['replay_mode']} replay" if run.get("replay_mode") else "",
           clocks.get(run.get("clock_control") or "", ""), caches.get(run.get("cache_control") or "", ""),
           "profiling started by the program" if run.get("profile_from_start") is False else ""]
    said = ", ".join(p for p in versions if p)
    done = ", ".join(p for p in how if p)
    return "; ".join(p for p in (said, done) if p) or "conditions not stored in the report"


def debug_build_line(run: dict[str, Any], short: bool = False) -> str | None:
    """One line for a report whose kernels are debug builds (:mod:`ncu_roof.model.build`): what marks
    them, and that the numbers and advice are for code the release build does not run (``short``: the
    kernels counted, not named, for the digest)."""
    kernels = run.get("debug_build_kernels")
    if not kernels:
        return None
    lo, hi = run["debug_mov_pct"]
    share = f"{lo:.0f}%" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}%"
    if short:
        return (f"Debug build (nvcc -G): {plural(len(kernels), 'kernel')} (MOV {share} of instructions, generic "
                "LD/ST): rebuild without -G and profile again")
    named = ", ".join(kernels[:4]) + (f" and {len(kernels) - 4} more" if len(kernels) > 4 else "")
    return (f"Debug build (nvcc -G) in {run['report']}: {named} (register copies {share} of the instructions "
            "executed, memory reached by generic loads and stores). Rebuild without -G (-lineinfo keeps the "
            "source lines) and profile again: the times and the advice below are for unoptimized code.")


def run_lines(runs: list[dict[str, Any]]) -> list[str]:
    """One line per distinct set of capture conditions (the reports sharing it counted), and what a
    condition means for the numbers: unlocked clocks or warm caches."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault(tuple(run.get(k) for k in _CONDITION_KEYS), []).append(run)
    lines = []
    for members in groups.values():
        who = members[0]["report"] if len(members) == 1 else f"{len(members)} reports"
        lines.append(f"Captured ({who}): {run_condition_text(members[0])}")
    for run in runs:
        line = debug_build_line(run)
        if line:
            lines.append(line)
    if any(r.get("clock_control") == "none" for r in runs):
        lines.append("Clocks were not locked (--clock-control none): durations are at the clock the GPU ran at, "
                     "so compare only runs captured the same way.")
    if any(r.get("cache_control") == "none" for r in runs):
        lines.append("Caches were not flushed between replay passes (--cache-control none): DRAM bytes can be low "
                     "where a pass found the data still in L2.")
    return lines
