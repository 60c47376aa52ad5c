"""Findings from a measured timeline: the overhead regime, CPU-bound stretches, syncs that stall.

Enters: a :class:`~ncu_roof.model.timeline.Timeline` (one trace). Leaves: findings ranked by time at
stake, each stake a sum of gap prices of :func:`~ncu_roof.model.timeline.price_gaps`, so no finding
claims more than the idle time measured, and the three together claim at most all of it:

- ``launch-overhead``: the GPU waited for launches (the overhead regime where such gaps are most
  of the idle time and most kernels are shorter than the launch floor): CUDA graphs,
  ``torch.compile``, fusion or larger batches remove it;
- ``cpu-bound``: the GPU waited while the launching thread did other work than launching;
- ``sync-stall``: a synchronisation drained the queue and the GPU waited for it to refill.

Not in ``RULE_MODULES``: these rules read a timeline, not the placed table of a report; the
``timeline`` command (and the API) call :func:`timeline_findings` directly.
"""

from __future__ import annotations

import pandas as pd

from ncu_roof.fmt import fmt_pct, fmt_seconds, plural, short_name
from ncu_roof.model.roofline import Thresholds
from ncu_roof.model.timeline import Timeline
from ncu_roof.rules.base import SEVERITY_ORDER, Finding, run_severity

MIN_SHARE = 0.01  # a stake under this share of the span is not worth a finding
REGIME_IDLE_SHARE = 0.5  # launch gaps this share of the idle time, and...
REGIME_SUB_FLOOR_SHARE = 0.5  # ...this share of kernels under the launch floor: the overhead regime


def _top(gaps: pd.DataFrame, weight: str, key: str, n: int = 3) -> list[tuple[str, float]]:
    """The ``n`` values of ``key`` with the most ``weight`` seconds, largest first."""
    part = gaps[gaps[weight] > 0].dropna(subset=[key])
    if part.empty:
        return []
    sums = part.groupby(part[key].astype(str))[weight].sum().sort_values(ascending=False, kind="stable")
    return [(str(k), float(v)) for k, v in sums.head(n).items()]


def _named(items: list[tuple[str, float]]) -> str:
    return ", ".join(f"{short_name(name, 60)} ({fmt_seconds(s)})" for name, s in items)


def _where(gaps: pd.DataFrame, weight: str) -> tuple[str, dict[str, object]]:
    """The ops (and script lines, where the trace has Python stacks) the GPU waited on most."""
    ops = _top(gaps, weight, "next_top_op")
    inner = _top(gaps, weight, "next_op")
    lines = _top(gaps, weight, "next_python")
    text = f" The GPU waited most on: {_named(ops)}" if ops else ""
    if inner and [n for n, _ in inner] != [n for n, _ in ops]:
        text += f" (inner ops: {_named(inner)})"
    if lines:
        text += f"; script lines: {_named(lines)}"
    evidence: dict[str, object] = {"ops": dict(ops), "inner_ops": dict(inner), "lines": dict(lines)}
    return (text + ".") if text else "", evidence


def _launch_overhead(tl: Timeline) -> Finding | None:
    g = tl.gaps
    stake = float(g["launch_s"].sum())
    launch_gaps = g[g["cause"] == "launch"]
    sub = tl.sub_floor_kernels
    sub_share = sub / tl.launches if sub is not None and tl.launches else float("nan")
    regime = (float(launch_gaps["idle_s"].sum()) >= REGIME_IDLE_SHARE * tl.gpu_idle_s
              and sub_share >= REGIME_SUB_FLOOR_SHARE)
    where, evidence = _where(g, "launch_s")
    head = ("The overhead regime, measured: the GPU waits for launches" if regime
            else "Launch gaps: the GPU waited for the next launch")
    message = (
        f"{head}: {fmt_seconds(stake)} of the {fmt_seconds(tl.span_s)} span ({fmt_pct(100 * stake / tl.span_s)}) "
        f"in {int((launch_gaps['launch_s'] > 0).sum()):,} gaps where the next kernel was launched only after "
        f"the GPU ran dry. {'?' if sub is None else f'{sub:,}'} of {tl.launches:,} kernels "
        f"({fmt_pct(100 * sub_share)}) run "
        f"shorter than the launch floor, {fmt_seconds(tl.launch_floor_s)} between one launch and the next on a "
        f"thread here (the launch call itself {fmt_seconds(tl.launch_call_s)}): launched one by one they cannot "
        "keep the GPU busy. Fewer launches remove this time: capture the step in a CUDA graph "
        "(torch.cuda.graph, or torch.compile(mode=\"reduce-overhead\")), fuse the small ops with torch.compile, "
        f"or raise the batch size so each kernel outlasts the floor.{where}")
    evidence.update({"launch_gap_idle_s": float(launch_gaps["idle_s"].sum()), "gpu_idle_s": tl.gpu_idle_s,
                     "span_s": tl.span_s, "launch_floor_s": tl.launch_floor_s, "launch_call_s": tl.launch_call_s,
                     "kernel_switch_s": tl.kernel_switch_s, "sub_floor_kernels": tl.sub_floor_kernels,
                     "launches": tl.launches, "regime": regime})
    return Finding("launch-overhead", (), None, "medium", message, stake, evidence, report=tl.trace)


def _cpu_bound(tl: Timeline) -> Finding | None:
    g = tl.gaps
    stake = float(g["host_s"].sum())
    under = float(g.loc[g["cause"] == "launch", "under_op_s"].sum())
    where, evidence = _where(g, "host_s")
    message = (
        f"CPU-bound: the GPU sat idle {fmt_seconds(stake)} ({fmt_pct(100 * stake / tl.span_s)} of the span) while "
        "the thread that launched the next kernel did other work than launching (more than its launches cost "
        f"at the {fmt_seconds(tl.launch_floor_s)} floor); that thread was inside a CPU op for {fmt_seconds(under)} "
        f"of these gaps.{where} Look at these ops on the CPU side: one-time warm-up (cudnn.benchmark autotuning, "
        "lazy initialisation) belongs outside the measured steps; load input in DataLoader workers "
        "(num_workers, pin_memory=True, non_blocking copies); larger batches spread the host's per-step work.")
    evidence.update({"under_op_s": under, "gpu_idle_s": tl.gpu_idle_s, "span_s": tl.span_s})
    return Finding("cpu-bound", (), None, "medium", message, stake, evidence, report=tl.trace)


def _sync_stall(tl: Timeline) -> Finding | None:
    g = tl.gaps
    stake = float(g["sync_s"].sum())
    sync_gaps = g[g["sync_s"] > 0]
    calls = sync_gaps["sync_call"].value_counts()
    ops = sync_gaps["sync_op"].dropna().value_counts()
    said = ", ".join(f"{name} ({n})" for name, n in calls.head(3).items())
    in_ops = ", ".join(f"{short_name(str(o), 50)} ({n})" for o, n in ops.head(3).items())
    by = f", called in {in_ops}" if in_ops else ""
    where, evidence = _where(g, "sync_s")
    message = (
        f"Synchronisations stall the GPU: {fmt_seconds(stake)} ({fmt_pct(100 * stake / tl.span_s)} of the span) in "
        f"{plural(len(sync_gaps), 'gap')} that began while the CPU waited in {said}{by}: the queue ran dry and "
        "refilled at launch speed. Remove the sync from the step: no .item(), .cpu(), .tolist() or printing of "
        "tensors in the loop, no data-dependent shapes (torch.nonzero, boolean masks); keep values on the GPU "
        f"and read them every N steps. A CUDA graph cannot hold a sync.{where}")
    evidence.update({"sync_calls": {str(k): int(v) for k, v in calls.items()},
                     "sync_ops": {str(k): int(v) for k, v in ops.items()}, "syncs": tl.syncs,
                     "gpu_idle_s": tl.gpu_idle_s, "span_s": tl.span_s})
    return Finding("sync-stall", (), None, "medium", message, stake, evidence, report=tl.trace)


def timeline_findings(tl: Timeline, th: Thresholds | None = None) -> list[Finding]:
    """The timeline's findings with a stake of at least ``MIN_SHARE`` of its span, largest first;
    severity by the stake's share of the span (the thresholds every finding uses)."""
    th = th or Thresholds()
    if tl.gaps.empty or not tl.span_s > 0:
        return []
    found = [f for f in (_launch_overhead(tl), _cpu_bound(tl), _sync_stall(tl))
             if f is not None and (f.time_at_stake_s or 0.0) >= MIN_SHARE * tl.span_s]
    found = [Finding(f.rule, f.kernels, f.region, run_severity(f, tl.span_s, th), f.message, f.time_at_stake_s,
                     f.evidence, f.ids, f.report) for f in found]
    return sorted(found, key=lambda f: (-(f.time_at_stake_s or 0.0), SEVERITY_ORDER[f.severity]))


def weigh_findings(findings: list[Finding], kernels: pd.DataFrame, span_s: float,
                   th: Thresholds | None = None) -> tuple[list[Finding], list[str]]:
    """A report's findings weighed by the trace: each stake scaled by its kernels' time in the trace
    over their time in the report (``kernels``: :class:`~ncu_roof.model.trace_match.TraceMatch`'s
    table), the message saying so; severity by the share of the trace's span. A finding whose
    kernels did not run in the trace is left out (a note says which); one without kernels is
    scaled by all matched kernels' time."""
    th = th or Thresholds()
    t_all, n_all = float(kernels["trace_time_s"].sum()), float(kernels["ncu_time_s"].sum())
    out, absent = [], []
    for f in findings:
        rows = kernels[kernels["kernel"].isin(f.kernels)] if f.kernels else kernels
        t, n = (float(rows["trace_time_s"].sum()), float(rows["ncu_time_s"].sum())) if f.kernels else (t_all, n_all)
        if f.kernels and not t > 0:
            absent.append(f"{f.rule} ({', '.join(short_name(k, 40) for k in f.kernels)})")
            continue
        stake = f.time_at_stake_s
        scaled = stake * t / n if stake is not None and stake == stake and n > 0 else None
        said = f"{'its kernels' if f.kernels else 'the matched kernels'} ran {fmt_seconds(t)} in the trace and " \
               f"{fmt_seconds(n)} in the report"
        message = f.message + (f" Weighed by the trace: {said}, so the report's stake of {fmt_seconds(stake)} is "
                               f"scaled by {t / n:.3g} to {fmt_seconds(scaled)}." if scaled is not None
                               else f" In the trace: {said}.")
        evidence = {**f.evidence, "ncu_stake_s": stake, "trace_time_s": t, "ncu_time_s": n,
                    "scale": t / n if n > 0 else None}
        weighed = Finding(f.rule, f.kernels, f.region, f.severity, message, scaled, evidence, f.ids, f.report, f.lines)
        out.append(Finding(f.rule, f.kernels, f.region, run_severity(weighed, span_s, th), message, scaled,
                           evidence, f.ids, f.report, f.lines))
    whose = "its" if len(absent) == 1 else "their"
    notes = [f"{plural(len(absent), 'report finding')} left out of the ranking: {whose} kernels did not run in the "
             f"trace: {'; '.join(absent)}"] if absent else []
    return out, notes


def rank(findings: list[Finding]) -> list[Finding]:
    """One ranking: most time at stake first, findings without a stake last."""
    return sorted(findings, key=lambda f: (f.time_at_stake_s is None, -(f.time_at_stake_s or 0.0),
                                           SEVERITY_ORDER[f.severity]))
