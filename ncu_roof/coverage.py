"""Which rules a metric set leaves out: each rule's declared inputs against what ncu would collect.

A rule declares the placed-table columns it needs and reads (:class:`ncu_roof.rules.base.Rule`);
a column is obtainable from a metric set when one of its catalogue sources is (every metric of
the source collected, and the cycles or clock it scales by), or, for the columns the model
derives (FLOPs, the compute precision, the binding unit, the roofline's bound), when what it is
derived from is. Device attributes come with every result; metrics of an instanced family
(``sass__inst_executed_per_opcode_with_modifier_all[MUFU.RCP64H]``) with their family.
"""

from __future__ import annotations

from collections.abc import Iterable

from ncu_roof.read import metrics as M

# derived columns: obtainable when any one of these groups is
_DERIVED: dict[str, tuple[tuple[str, ...], ...]] = {
    "flops_fp64": (("inst_dfma", "inst_dadd", "inst_dmul"),),
    "flops_fp32": (("inst_ffma", "inst_fadd", "inst_fmul"),),
    "flops_fp16": (("inst_hfma", "inst_hadd", "inst_hmul"),),
    "flops": (("flops_fp64",), ("flops_fp32",), ("flops_fp16",)),
    "compute_precision": (("flops",),),
    "peak_flops_per_s": (("peak_fp32_flops_per_s",), ("peak_fp64_flops_per_s",)),
    "pct_of_roof": (("time_s", "dram_bytes"), ("time_s", "flops")),
    "time_lower_bound_s": (("dram_bytes",), ("flops",)),
    "dram_peak_bytes_per_s": (("peak_dram_bytes_per_s",), ()),  # () : the device table has it
    "binding_unit": (("time_s", "dram_bytes"), ("time_s", "issue_active"), ("time_s", "sm_throughput_pct")),
}


def _available(metric: str, metrics: frozenset[str]) -> bool:
    if metric in metrics or metric.startswith("device__attribute_"):
        return True
    return "[" in metric and metric.split("[")[0] in metrics


def obtainable(column: str, metrics: Iterable[str], _seen: frozenset[str] = frozenset()) -> bool:
    """Whether a metric set yields ``column`` of the placed table."""
    have = metrics if isinstance(metrics, frozenset) else frozenset(metrics)
    if column in _seen:
        return False
    seen = _seen | {column}
    if column == "flops_tensor":  # from the tensor-op counters, else tensor-pipe instructions
        return any(m in have for m in M.TENSOR_INST_METRICS) or any(M.TENSOR_OPS_PATTERN.match(m) for m in have)
    if column in _DERIVED:
        return any(all(obtainable(c, have, seen) for c in group) for group in _DERIVED[column])
    try:
        quantity = M.quantity(column)
    except KeyError:
        return False
    for source in M.sources_of(quantity):
        if all(_available(m, have) for m in source.metrics) and (
                source.cycles is None or obtainable(source.cycles, have, seen)):
            return True
    return False


def rules_unable(metrics: Iterable[str]) -> dict[str, list[str]]:
    """Rule id -> the columns it needs (to run at all) that the metric set cannot give."""
    from ncu_roof.rules import RULES
    from ncu_roof.rules.base import alternatives, need_text

    have = frozenset(metrics)
    return {r.id: missing for r in RULES
            if (missing := [need_text(n) for n in r.needs if not any(obtainable(c, have) for c in alternatives(n))])}


def rules_left_out(metrics: Iterable[str]) -> dict[str, list[str]]:
    """Rule id -> the columns it needs or reads that the metric set cannot give (rules that need
    algorithmic counts are judged on their metrics only)."""
    from ncu_roof.rules import RULES
    from ncu_roof.rules.base import alternatives, need_text

    have = frozenset(metrics)
    out: dict[str, list[str]] = {}
    for r in RULES:
        needs = [need_text(n) for n in r.needs if not any(obtainable(c, have) for c in alternatives(n))]
        missing = list(dict.fromkeys((*needs, *(c for c in r.reads if not obtainable(c, have)))))
        if missing:
            out[r.id] = missing
    return out
