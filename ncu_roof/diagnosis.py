"""The diagnosis pipeline: load -> normalize -> place under roofs -> regions -> rules.

:func:`diagnose_paths` is what ``ncu-roof diagnose`` calls; :class:`Diagnosis` holds every
stage's result, and :func:`to_dict` is the JSON contract (schema ``ncu-roof/diagnose/1``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof.gc_pause import paused_gc
from ncu_roof.jsonable import clean, clean_json_text, json_num
from ncu_roof.model.algorithmic import (
    RegionSpec,
    attach_kernel_algorithmic,
    read_algorithmic,
    regions_from_nvtx,
    summarize_regions,
    unmatched_notes,
)
from ncu_roof.model.build import mark_debug_builds
from ncu_roof.model.roofline import Thresholds, place
from ncu_roof.model.units import l1_basis_note
from ncu_roof.read.table import load_table
from ncu_roof.request import DiagnoseRequest
from ncu_roof.rules import Context, Finding, Skipped, evaluate
from ncu_roof.rules.crossexam import cross_examine

SCHEMA = "ncu-roof/diagnose/1"


@dataclass
class Diagnosis:
    """Every stage of one diagnosis."""

    placed: pd.DataFrame
    regions: pd.DataFrame
    findings: list[Finding]
    skipped: list[Skipped]
    notes: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    ceilings: str | None = None
    ncu_rules: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)  # how each report was captured
    # the source text around the lines findings point at, by file and line, where reports carry it
    sources: dict[str, dict[int, str]] = field(default_factory=dict)

    @property
    def total_time_s(self) -> float:
        return float(self.placed["time_s"].sum(min_count=1)) if len(self.placed) else math.nan


def load_ceilings(path: str | Path | None) -> dict[str, Any] | None:
    """Measured ceilings from ``ncu-roof ceilings`` (validated by ncu_roof.model.ceilings)."""
    if path is None:
        return None
    from ncu_roof.model.ceilings import read_ceilings

    data = dict(read_ceilings(Path(path)))
    data.setdefault("source", str(path))
    return data


def diagnose_table(table: pd.DataFrame, algorithmic: str | Path | None = None,
                   ceilings: str | Path | None = None, thresholds: Thresholds | None = None,
                   lines: bool = True) -> Diagnosis:
    """Diagnose an already loaded tidy table (Python's cyclic garbage collector paused meanwhile:
    :mod:`ncu_roof.gc_pause`); with ``lines``, each finding a source line can explain gets its
    lines from the reports' Source Counters (:mod:`ncu_roof.rules.lines`)."""
    with paused_gc():
        return _diagnose_table(table, algorithmic, ceilings, thresholds, lines)


def _diagnose_table(table: pd.DataFrame, algorithmic: str | Path | None, ceilings: str | Path | None,
                    thresholds: Thresholds | None, lines: bool = True) -> Diagnosis:
    th = thresholds or Thresholds()
    # placed without the table's attrs (its rule results), which pandas deep-copies into every frame and
    # column made from it; the placed table has none either way
    placed = place(pd.DataFrame(table, copy=False), load_ceilings(ceilings), th)
    specs: list[RegionSpec] = regions_from_nvtx(placed)
    unmatched: list[str] = []
    if algorithmic is not None:
        from_file = read_algorithmic(algorithmic)
        unmatched = unmatched_notes(placed, from_file)
        specs += from_file
    placed = attach_kernel_algorithmic(placed, specs)
    regions = summarize_regions(placed, specs)
    findings, skipped = evaluate(Context(placed, regions, th))
    line_notes: list[str] = []
    sources: dict[str, dict[int, str]] = {}
    if lines:
        from ncu_roof.rules.lines import attach_lines

        findings, line_notes = attach_lines(findings, launches=placed, sources=sources)
    notes = list(table.attrs.get("notes", [])) + unmatched + line_notes
    notes += _missing_notes(placed, notes)
    l1_note = l1_basis_note(placed)
    notes += [l1_note] if l1_note else []
    verdicts = cross_examine(table.attrs.get("ncu_rule_results", []), placed, findings, th)
    return Diagnosis(placed, regions, findings, skipped, notes, list(table.attrs.get("inputs", [])),
                     None if ceilings is None else str(ceilings), verdicts,
                     mark_debug_builds(list(table.attrs.get("runs", [])), placed),
                     sources)


def diagnose_request(request: DiagnoseRequest) -> Diagnosis:
    """Load the request's inputs and diagnose them."""
    return diagnose_table(load_table(request.inputs, request.device), request.algorithmic, request.ceilings,
                          request.thresholds, request.lines)


def diagnose_paths(paths: str | Path | Iterable[str | Path], **options: Any) -> Diagnosis:
    """Load reports/exports and diagnose them; ``options`` are :class:`DiagnoseRequest`'s
    (``algorithmic``, ``ceilings``, ``device`` where an input names no GPU, ``thresholds``, and
    ``lines=False`` for callers that show no source lines)."""
    return diagnose_request(DiagnoseRequest((), **options).of(paths))


def _missing_notes(placed: pd.DataFrame, said: list[str] | None = None) -> list[str]:
    """How many launches lack each key quantity and what gives it; where the input has the metric
    but a note already made its values unknown (not numbers, impossible), that is said instead."""
    from ncu_roof.read.normalize import KEY_QUANTITIES

    notes = []
    missing = placed["missing"].fillna("")
    lists = missing.value_counts()  # launches repeat their lists: each distinct one once
    measured = {key for key in KEY_QUANTITIES if key != "roof"}
    nothing = [text for text in lists.index if measured <= set(str(text).split(","))]
    shapeless = placed["grid_size"].isna() if "grid_size" in placed else pd.Series(True, index=placed.index)
    blank = missing.isin(nothing) & shapeless
    if blank.any():  # launches with no time, counter or launch shape: one note for them, not one per quantity
        names = sorted({str(k) for k in placed.loc[blank, "kernel"]})
        notes.append(f"{int(blank.sum())} of {len(placed)} launches hold no measurement ({', '.join(names[:3])}"
                     f"{', ...' if len(names) > 3 else ''}): no time, counters or launch shape, as ncu lists a launch "
                     "it could not profile (an empty grid, a failed launch or replay)")
        lists = missing[~blank].value_counts()
    for key, metric in KEY_QUANTITIES.items():
        count = sum(int(n) for text, n in lists.items() if key in str(text).split(","))
        if count:
            name = metric.split(" ")[0]
            damaged = key != "roof" and any(name in n and n.rstrip().endswith("unknown") for n in (said or []))
            need = (f"the input has {name}, but its values for them are unknown: see the notes above" if damaged
                    else f"give {metric}" if key == "roof" else f"capture {metric}")
            notes.append(f"{count} of {len(placed)} launches lack {'a ' if key == 'roof' else ''}{key} ({need})")
            if key == "roof":
                notes += _roofless_device_notes(placed)
    return notes


def _roofless_device_notes(placed: pd.DataFrame) -> list[str]:
    """For each device whose launches lack a roof: which device, what the device table knows of it,
    and what to pass instead (``--device NAME``, ``--ceilings FILE``)."""
    from ncu_roof import devices

    lacking = placed["missing"].fillna("").astype(str).str.split(",").map(lambda keys: "roof" in keys)
    names = placed.loc[lacking, "device"]
    give = ("pass measured roofs with --ceilings FILE (`ncu-roof ceilings` measures them on the GPU), or "
            "--device NAME for a GPU of the same roofs (`ncu-roof devices` lists the table)")
    notes = []
    if names.isna().any():
        notes.append(f"the input names no GPU and holds no peaks: {give}")
    for name in names.dropna().astype(str).unique():
        spec = devices.lookup(name)
        if spec is None:
            notes.append(f"{name} is not in the device table and the report holds no peaks: {give}")
            continue
        known = [f"CC {spec.cc}"] + ([f"{spec.sm_count} SMs"] if spec.sm_count else [])
        why = ("; a laptop part, whose maker sets the clock: its clock range or memory speed is not in the "
               "table's sources" if "laptop" in name.lower() or "LAPTOP" in (spec.notes or "") else "")
        notes.append(f"{name} is in the device table ({', '.join(known)}) without its DRAM bandwidth or "
                     f"FLOP/s peaks{why}: {give}")
    return notes


# --- JSON contract ----------------------------------------------------------------------------
def _str(value: Any) -> str | None:
    return None if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else str(value)


def region_record(row: pd.Series) -> dict[str, Any]:
    return {
        "name": row["name"], "origin": _str(row.get("origin")), "kernels": list(row.get("kernels") or []),
        "launches": json_num(row.get("launches")), "occurrences": json_num(row.get("occurrences")),
        "time_s": json_num(row.get("time_s")), "flops": json_num(row.get("flops")),
        "bytes": {"dram": json_num(row.get("dram_bytes")), "l2": json_num(row.get("l2_bytes")),
                  "l1": json_num(row.get("l1_bytes"))},
        "algorithmic": {"flops": json_num(row.get("alg_flops")), "bytes": json_num(row.get("alg_bytes")),
                        "intensity": json_num(row.get("alg_intensity"))},
        "achieved_intensity": json_num(row.get("achieved_intensity")),
        "extra_bytes_factor": json_num(row.get("extra_bytes_factor")),
        "ideal_time_s": json_num(row.get("ideal_time_s")), "time_at_stake_s": json_num(row.get("time_at_stake_s")),
    }


def to_dict(d: Diagnosis) -> dict[str, Any]:
    """The JSON contract of a diagnosis (its launches from whole columns: :mod:`ncu_roof.kernel_json`)."""
    from ncu_roof.kernel_json import kernel_records

    return _contract(d, kernel_records(d.placed))


def to_json(d: Diagnosis, end: str = "") -> str:
    """``json.dumps(to_dict(d), indent=2)`` (and ``end``), written from the contract's values as they
    are (:func:`ncu_roof.jsonable.clean_json_text`) and its launches from whole columns (no dict per
    launch), joined once."""
    from ncu_roof.kernel_json import kernels_json_pieces

    pieces = ["{"]
    for i, (key, value) in enumerate(_fields(d).items()):
        pieces.append(("," if i else "") + "\n  " + encode_basestring_ascii(key) + ": ")
        if key == "kernels":
            pieces += kernels_json_pieces(d.placed, 1)
        else:
            pieces.append(clean_json_text(value, 1))
    pieces.append("\n}" + end)
    return "".join(pieces)


def _contract(d: Diagnosis, kernels: Any) -> dict[str, Any]:
    """The contract with ``kernels`` (already clean) as its launches."""
    out: dict[str, Any] = clean(_fields(d))
    out["kernels"] = kernels  # in its place among the keys
    return out


def _fields(d: Diagnosis) -> dict[str, Any]:
    """The contract's keys in order, their values not yet cleaned, ``kernels`` None."""
    return {
        "schema": SCHEMA,
        "inputs": d.inputs,
        "ceilings": d.ceilings,
        "runs": d.runs,
        "total_time_s": json_num(d.total_time_s),
        "kernels": None,
        "regions": [region_record(row) for _, row in d.regions.iterrows()],
        "findings": finding_records(d),
        "skipped_rules": [{"rule": s.rule, "missing": list(s.missing), "enable": s.enable} for s in d.skipped],
        "ncu_rules": d.ncu_rules,
        "notes": d.notes,
        "definitions": _definitions(d.placed),
    }


def finding_records(d: Diagnosis) -> list[dict[str, Any]]:
    """Each finding's record, with ``verify``: the ncu command that re-collects what proves it
    (:mod:`ncu_roof.verify`)."""
    from ncu_roof.verify import finding_verify

    return [{**f.as_dict(), "verify": finding_verify(d, f)} for f in d.findings]


def _definitions(placed: pd.DataFrame) -> dict[str, str]:
    """The metric definitions the numbers use, where anchors disagree (from the source labels)."""
    from ncu_roof.read.metrics import DEFINITIONS

    used: dict[str, str] = {}
    for col in ("l2_bytes_src", "l1_bytes_src", "flops_fp16_src", "flops_tensor_src"):
        if col not in placed:
            continue
        for label in placed[col].dropna().unique():
            key = str(label).rsplit("[", 1)[-1].rstrip("]") if "[" in str(label) else None
            if key in DEFINITIONS:
                used[key] = DEFINITIONS[key]
    return used
