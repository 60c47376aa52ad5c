"""The verify step: for each finding, the ncu command line that re-collects just what proves it.

A finding's rule declares the placed-table columns it needs and reads (``needs``/``reads`` of
:class:`ncu_roof.rules.base.Rule`, read here, never changed). Each column is a quantity of the metric
catalogue (:mod:`ncu_roof.read.metrics`; its first source's metrics) or one derived from some
(:data:`DERIVED`); :func:`ncu_roof.capture_sections.sections_for` turns the metrics into ncu sections,
and names the rest with ``--metrics``. The command profiles one launch: the finding's first, by the
kernel's function name (``--kernel-name regex:^name$``) and ``--launch-skip``, the launches of that
name before it in the report; the program is the report's own (from its ncu command line) or ``<app>``.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable
from typing import Any

import pandas as pd

# Columns the model derives rather than reads: the columns they come from.
_INST = ("inst_dfma", "inst_dadd", "inst_dmul", "inst_ffma", "inst_fadd", "inst_fmul", "inst_hfma", "inst_hadd",
         "inst_hmul")
DERIVED: dict[str, tuple[str, ...]] = {
    "flops": _INST,
    "flops_fp16": ("inst_hfma", "inst_hadd", "inst_hmul"),
    "flops_tensor": ("pipe_tensor_pct",),
    "compute_precision": _INST,
    "dram_peak_bytes_per_s": ("peak_dram_bytes_per_s",),
    "pct_of_roof": ("time_s", "dram_bytes", *_INST, "peak_dram_bytes_per_s", "peak_fp32_flops_per_s"),
    "time_lower_bound_s": ("time_s", "dram_bytes", *_INST, "peak_dram_bytes_per_s", "peak_fp32_flops_per_s"),
    "binding_unit": ("time_s", "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
                     "l1_throughput_active_pct", "l2_throughput_pct"),
}
# ncu's options that take no value (ncu 2024.1.1 --help): the rest take one, so the program is the
# first word that is neither an option nor an option's value.
_FLAGS = frozenset({"-h", "--help", "-v", "--version", "--call-stack", "--nvtx", "--support-32bit", "--null-stdin",
                    "--list-sets", "--list-sections", "--section-folder-restore", "--list-rules", "--list-metrics",
                    "--query-metrics", "--list-chips", "--disable-profiler-start-stop", "--quiet", "--verbose",
                    "--disable-extra-suffixes", "-f", "--force-overwrite", "--open-in-ui", "--csv", "--print-fp",
                    "--print-rule-details"})
_REGEX_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}])")
APP = "<app>"


def rule_columns(rule_id: str) -> tuple[str, ...]:
    """The placed-table columns a rule needs and reads (its registry declaration), in order."""
    from ncu_roof.rules import RULES
    from ncu_roof.rules.base import alternatives

    found = next((r for r in RULES if r.id == rule_id), None)
    needs = (c for n in found.needs for c in alternatives(n)[:1]) if found is not None else ()
    return () if found is None else tuple(dict.fromkeys(("time_s", *needs, *found.reads)))


def column_metrics(columns: Iterable[str]) -> list[str]:
    """The ncu metrics that fill ``columns``: each quantity's first source (and the clock or cycles
    it is scaled by), derived columns through what they derive from; instance brackets dropped."""
    from ncu_roof.read.metrics import quantity, sources_of

    out: dict[str, None] = {}
    todo, seen = list(columns), set()
    while todo:
        col = todo.pop(0)
        if col in seen:
            continue
        seen.add(col)
        if col in DERIVED:
            todo.extend(DERIVED[col])
            continue
        try:
            sources = sources_of(quantity(col))
        except KeyError:
            continue
        if not sources:
            continue
        source = sources[0]  # the catalogue's preferred definition
        out.update((m.split("[", 1)[0], None) for m in source.metrics)
        if source.cycles:
            todo.append(source.cycles)
    return list(out)


def rule_sections(rule_id: str) -> tuple[list[str], list[str]]:
    """(sections, metrics no section collects) that re-collect what ``rule_id`` reads."""
    from ncu_roof.capture_sections import sections_for

    return sections_for(column_metrics(rule_columns(rule_id)))


@functools.lru_cache(maxsize=4096)
def function_name(demangled: str) -> str:
    """ncu's ``function`` name basis of a kernel: the demangled name without its return type,
    scope, template arguments and parameters (``void ns::k<int>(float*)`` -> ``k``)."""
    name = demangled.strip()
    for open_, close in (("(", ")"), ("<", ">")):
        if name.endswith(close):
            depth = 0
            for i in range(len(name) - 1, -1, -1):
                depth += (name[i] == close) - (name[i] == open_)
                if depth == 0:
                    name = name[:i].rstrip()
                    break
    return re.split(r"::|\s", name)[-1] or demangled


def program_of(command_line: str | None) -> list[str] | None:
    """The profiled program and its arguments in an ncu command line (None where there is none)."""
    line = command_line or ""
    windows = re.search(r"\b[A-Za-z]:\\", line) is not None  # Windows: backslashes separate paths, not escape
    try:
        words = shlex.split(line, posix=not windows)
    except ValueError:
        return None
    if windows:
        words = [w[1:-1] if len(w) > 1 and w[0] == w[-1] == '"' else w for w in words]
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 1 if words[i] in _FLAGS or "=" in words[i] else 2
    return words[i:] or None


def _skip_count(placed: pd.DataFrame, report: str | None, name: str, launch_id: int) -> int:
    """Launches of the same function name before ``launch_id`` in its report."""
    rows = placed if report is None or "report" not in placed else placed[placed["report"].astype(str) == report]
    names = (rows["kernel_demangled"].fillna(rows["kernel"]).astype(str) if "kernel_demangled" in rows
             else rows["kernel"].astype(str))
    earlier = rows["id"] < launch_id
    return int(sum(function_name(n) == name for n in names[earlier]))


def verify_record(rule_id: str, ids: Iterable[int], report: str | None, placed: pd.DataFrame,
                  runs: list[dict[str, Any]], lines: bool = False) -> dict[str, Any] | None:
    """The command that re-collects what proves a finding of ``rule_id`` on its first launch of ``ids``
    (None for a finding without launches); ``lines`` adds the Source Counters and the source."""
    launch_ids = sorted(int(i) for i in ids)
    if not launch_ids or "id" not in placed:
        return None
    first = launch_ids[0]
    rows = placed[placed["id"] == first]
    if report is not None and "report" in rows:
        rows = rows[rows["report"].astype(str) == report]
    if rows.empty:
        return None
    row = rows.iloc[0]
    demangled = row.get("kernel_demangled")
    name = function_name(str(demangled if isinstance(demangled, str) and demangled else row["kernel"]))
    sections, loose = rule_sections(rule_id)
    if lines and "SourceCounters" not in sections:
        sections.append("SourceCounters")
    skip = _skip_count(placed, report, name, first)
    run = next((r for r in runs if r.get("report") == report), runs[0] if len(runs) == 1 else {})
    program = program_of(run.get("command_line"))
    argv = ["ncu", *(a for s in sections for a in ("--section", s))]
    argv += ["--metrics", ",".join(_grouped(loose))] if loose else []
    argv += ["--import-source", "yes"] if lines else []
    pattern = _REGEX_SPECIAL.sub(r"\\\1", name)
    argv += ["--kernel-name", f"regex:^{pattern}$", "--launch-skip", str(skip),
             "--launch-count", "1", "-o", f"verify-{rule_id}-{first}", "-f", *(program or [APP])]
    return {"command": shlex.join(argv), "argv": argv, "sections": sections, "metrics": loose, "kernel": name,
            "launch_id": first, "launch_skip": skip, "program": program,
            "basis": ("--launch-skip counts the report's launches of this function name before launch "
                      f"{first}; a report captured with its own --launch-skip or filters needs those added")}


_INST_METRIC = re.compile(r"^smsp__sass_thread_inst_executed_op_[dfh](fma|add|mul)_pred_on\.sum$")
INST_REGEX = r"regex:^smsp__sass_thread_inst_executed_op_[dfh](fma|add|mul)_pred_on\.sum$"


def _grouped(metrics: list[str]) -> list[str]:
    """``metrics`` with the nine FP instruction counters as one ncu regex (``--metrics regex:...``)."""
    inst = [m for m in metrics if _INST_METRIC.match(m)]
    if len(inst) < 2:
        return metrics
    rest = [m for m in metrics if m not in inst]
    return [*rest, INST_REGEX]


def finding_verify(d: Any, finding: Any) -> dict[str, Any] | None:
    """:func:`verify_record` of one finding of a :class:`~ncu_roof.diagnosis.Diagnosis`."""
    return verify_record(finding.rule, finding.ids, finding.report, d.placed, d.runs, lines=bool(finding.lines))
