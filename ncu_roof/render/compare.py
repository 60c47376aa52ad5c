"""Renderers of a before/after comparison: text (terminal), markdown and JSON.

The JSON contract is schema ``ncu-roof/compare/1``; ``ncu-roof compare`` runs
:func:`ncu_roof.api.run_compare`: check the chart path, compare, draw the chart and render.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from ncu_roof.comparison.compare import SCHEMA, Comparison, kernel_label
from ncu_roof.comparison.deltas import LEVELS
from ncu_roof.comparison.match import FUSION, rename_lines
from ncu_roof.diagnosis import Diagnosis
from ncu_roof.fmt import (
    PROSE_WIDTH,
    UNKNOWN,
    fmt_pct,
    fmt_seconds,
    fmt_si,
    plural,
    prose_seconds,
    short_name,
    unique_short_names,
    wrap,
)
from ncu_roof.jsonable import clean, json_num
from ncu_roof.render.compare_lines import json_lines, markdown_section, text_line


# --- JSON -------------------------------------------------------------------------------------
def _side(row: pd.Series, when: str, kind: str = "kernel") -> dict[str, Any]:
    pct = "pct_of_ideal" if kind == "region" else "pct_of_roof"
    return {
        "launches": json_num(row[f"launches_{when}"]),
        "time_s": json_num(row[f"time_s_{when}"]),
        "flops": json_num(row[f"flops_{when}"]),
        "bytes": {lv: json_num(row[f"{lv}_bytes_{when}"]) for lv in LEVELS},
        "intensity": json_num(row[f"intensity_{when}"]),
        "flops_per_s": json_num(row[f"flops_per_s_{when}"]),
        pct: json_num(row[f"pct_of_roof_{when}"]),
        "bound": row[f"bound_{when}"],
        "device": row[f"device_{when}"],
        "precision": p if isinstance(p := row.get(f"precision_{when}"), str) else None,
    }


def _moves(row: pd.Series, kind: str = "kernel") -> dict[str, Any]:
    return {
        "speedup": json_num(row["speedup"]),
        "delta_s": json_num(row["delta_s"]),
        "time": row["time_move"],
        "intensity": row["intensity_move"],
        "performance": row["perf_move"],
        ("ideal" if kind == "region" else "roof"): row["roof_move"],
        "summary": row["direction"],
        "findings_appeared": list(row["findings_appeared"]),
        "findings_disappeared": list(row["findings_disappeared"]),
    }


def _kernel_dict(r: pd.Series, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """One compared kernel in the JSON contract, with its source lines that moved."""
    return {
        "kernel": r["kernel"],
        "kernel_new": r["kernel_new"],
        "match": r["match"],
        "before": _side(r, "before"),
        "after": _side(r, "after"),
        **_moves(r),
        "lines": lines,
    }


def _region_dict(r: pd.Series) -> dict[str, Any]:
    """One compared region in the JSON contract (% of ideal, and its extra-bytes factor)."""
    return {
        "region": r["region"],
        "before": {
            **_side(r, "before", "region"),
            "extra_bytes_factor": json_num(r["extra_bytes_factor_before"]),
        },
        "after": {
            **_side(r, "after", "region"),
            "extra_bytes_factor": json_num(r["extra_bytes_factor_after"]),
        },
        **_moves(r, "region"),
    }


def _run_dict(d: Diagnosis, total_s: float) -> dict[str, Any]:
    """One side's inputs, launch count and total time."""
    return {"inputs": d.inputs, "launches": len(d.placed), "total_time_s": json_num(total_s)}


def _unmatched_dict(c: Comparison) -> dict[str, Any]:
    return {
        "base": c.unmatched_base.to_dict(orient="records"),
        "new": c.unmatched_new.to_dict(orient="records"),
        "regions_base": c.unmatched_regions.get("base", []),
        "regions_new": c.unmatched_regions.get("new", []),
    }


def to_dict(c: Comparison) -> dict[str, Any]:
    """The JSON contract of a comparison (schema ``ncu-roof/compare/1``)."""
    return clean(
        {
            "schema": SCHEMA,
            "base": _run_dict(c.base, c.total_before_s),
            "new": _run_dict(c.new, c.total_after_s),
            "speedup": json_num(c.speedup),
            "comparable": c.comparable,
            "matched_time_share": {
                "base": json_num(c.matched_share[0]),
                "new": json_num(c.matched_share[1]),
            },
            "matched_launches": len(c.pairs),
            "renames": c.renames,
            "suggested_renames": dict(c.suggested_renames),
            "kernels": [_kernel_dict(r, json_lines(c, r)) for _, r in c.kernels.iterrows()],
            "regions": [_region_dict(r) for _, r in c.regions.iterrows()],
            "unmatched": _unmatched_dict(c),
            "notes": c.notes,
        }
    )


def render_json(c: Comparison) -> str:
    return json.dumps(to_dict(c), indent=2, allow_nan=False) + "\n"


# --- text and markdown ------------------------------------------------------------------------
def _x(value: float) -> str:
    return UNKNOWN if value != value else f"{value:.2f}x"


def _arrow(before: Any, after: Any, fmt: Any) -> str:
    """``before -> after``, a unit both share said once (``6.19 -> 3.48 ms``); one value where both
    read the same (``compute``, not ``compute -> compute``)."""
    shown = fmt(before), fmt(after)
    if shown[0] == shown[1]:
        return shown[0]
    units = [s.rsplit(" ", 1) for s in shown]
    if all(len(u) == 2 for u in units) and units[0][1] == units[1][1] and not units[0][1][0].isdigit():
        return f"{units[0][0]} -> {units[1][0]} {units[0][1]}"
    return f"{shown[0]} -> {shown[1]}"


def _intensity(v: float | None) -> str:
    return UNKNOWN if v is None or v != v else f"{v:.3g}"


def _cells(row: pd.Series) -> list[str]:
    """Table cells of one compared kernel or region."""
    return [
        _arrow(row["time_s_before"], row["time_s_after"], fmt_seconds),
        _x(row["speedup"]),
        _flops_cell(row),
        _arrow(row["dram_bytes_before"], row["dram_bytes_after"], lambda v: fmt_si(v, "B", kilo="K")),
        _arrow(row["intensity_before"], row["intensity_after"], _intensity),
        _arrow(row["pct_of_roof_before"], row["pct_of_roof_after"], fmt_pct),
        _arrow(row["bound_before"] or "unknown", row["bound_after"] or "unknown", str),
    ]


HEADERS = ["time", "speedup", "FLOPs", "DRAM bytes", "FLOP/B", "% of roof", "bound"]
# a region's percent is its ideal time (algorithmic counts at the roofs) over its time
REGION_HEADERS = [h if h != "% of roof" else "% of ideal" for h in HEADERS]


def _headers(first: str) -> list[str]:
    return REGION_HEADERS if first == "region" else HEADERS


def _flops_cell(row: pd.Series) -> str:
    """``22.8 G -> 9.33 G fp64``: the FLOP counts and the precision that dominates them."""
    cell = _arrow(row["flops_before"], row["flops_after"], lambda v: fmt_si(v, "").strip())
    before, after = (
        p if isinstance(p, str) else None
        for p in (row.get("precision_before"), row.get("precision_after"))
    )
    if before and after and before != after:
        return f"{cell} {before} -> {after}"
    return f"{cell} {before or after}" if before or after else cell


def _headline(c: Comparison) -> str:
    if c.comparable:
        total = _x(c.speedup)
    else:
        share = min(s for s in c.matched_share if s == s)
        total = f"not comparable: only {fmt_pct(100 * share)} of the time matched"
    return (
        f"ncu-roof compare: {len(c.base.placed)} -> {plural(len(c.new.placed), 'launch')}, "
        f"{len(c.pairs)} matched; "
        f"total GPU time {prose_seconds(c.total_before_s)} -> {prose_seconds(c.total_after_s)} "
        f"({total})"
    )


def _finding_changes(row: pd.Series) -> str:
    parts = []
    if row["findings_appeared"]:
        parts.append("+" + ", +".join(row["findings_appeared"]))
    if row["findings_disappeared"]:
        parts.append("-" + ", -".join(row["findings_disappeared"]))
    return " ".join(parts)


def _unmatched_lines(c: Comparison, bullet: str = "- ") -> list[str]:
    lines = []
    for side, frame in (("base", c.unmatched_base), ("new", c.unmatched_new)):
        for _, r in frame.iterrows():
            lines.append(
                f"{bullet}only in {side}: {r['kernel']} "
                f"({plural(int(r['launches']), 'launch')}, {fmt_seconds(r['time_s'])})"
            )
    for side in ("base", "new"):
        lines += [
            f"{bullet}region only in {side}: {name}" for name in c.unmatched_regions.get(side, [])
        ]
    return lines


def _suggestion(c: Comparison) -> list[str]:
    """The ``[rename]`` table a --map file would need, with the left-over kernels as comments."""
    lines = rename_lines(c.suggested_renames)
    for side, word in (("base", "BASE"), ("new", "NEW")):
        left = c.left_over.get(side, [])
        if left:
            lines.append(
                f"# no counterpart for {plural(len(left), 'kernel')} of {word} (fused or split?): "
                + ", ".join(left)
            )
    return lines


def _fusion_lines(c: Comparison) -> list[str]:
    """No match between runs of different kernel counts: a fusion or split, not a rename."""
    base, new = c.left_over.get("base", []), c.left_over.get("new", [])
    return [
        f"No launches matched, and BASE runs {plural(len(base), 'kernel')} where NEW runs {len(new)}: "
        "a fusion or a split, not a rename. Compare the work as regions (--algorithmic FILE.toml or "
        "ncu_roof.region), or pair kernels yourself in a --map FILE.toml [rename] table.",
        f"  BASE: {', '.join(base)}",
        f"  NEW:  {', '.join(new)}",
    ]


def _no_match_lines(c: Comparison) -> list[str]:
    if c.suggestion_basis == FUSION:
        return _fusion_lines(c)
    if not c.suggested_renames:
        return ["No launches matched: check kernel names (use --map FILE.toml for renames)."]
    return [
        "No launches matched. If kernels were renamed, save these lines as a --map FILE.toml "
        f"(paired by {c.suggestion_basis}; check each pair):",
        "",
        *_suggestion(c),
    ]


# columns left out, in order, to fit (the prose says a move of the bound)
DROP_FIRST = ("FLOP/B", "bound", "FLOPs", "DRAM bytes")
NAME_MIN = 16


def _fit_columns(headers: list[str], rows: list[tuple[str, list[str], str]], width: int) -> list[int]:
    """Indexes of the columns that fit ``width`` beside a name column of at least ``NAME_MIN``."""
    keep = list(range(len(headers)))

    def needed() -> int:
        cells = sum(max(len(headers[i]), *(len(r[1][i]) for r in rows)) + 2 for i in keep)
        return cells + NAME_MIN

    for name in DROP_FIRST:
        if needed() <= width:
            break
        keep.remove(headers.index(name))
    return keep


def _text_table(rows: list[tuple[str, list[str], str]], first: str, width: int | None) -> list[str]:
    """The before -> after table, fitted to ``width`` when given: the name column narrowed, then
    the least telling columns left out (named in a line below; markdown and json have them all)."""
    headers = _headers(first)
    keep = _fit_columns(headers, rows, width) if width else list(range(len(headers)))
    shown = [headers[i] for i in keep]
    widths = [max(len(shown[j]), *(len(r[1][i]) for r in rows)) for j, i in enumerate(keep)]
    name_w = max(len(first), *(len(short_name(r[0])) for r in rows))
    if width:
        name_w = max(NAME_MIN, min(name_w, width - sum(w + 2 for w in widths)))
    header = "  ".join(h.ljust(w) for h, w in zip([first, *shown], [name_w, *widths], strict=True))
    lines = [header.rstrip(), "-" * len(header.rstrip())]
    names = unique_short_names([r[0] for r in rows], name_w)
    for (_, cells, tail), short in zip(rows, names, strict=True):
        values = [short, *(cells[i] for i in keep)]
        lines.append("  ".join(v.ljust(w) for v, w in zip(values, [name_w, *widths], strict=True)).rstrip())
        for part in tail.split("\n"):  # the move, then the lines that moved
            lines += wrap(part, width or PROSE_WIDTH, indent="    ", first="    ")
    dropped = [h for h in headers if h not in shown]
    if dropped and width:
        lines += wrap(f"({', '.join(dropped)} left out to fit {width} columns: --format markdown or json has "
                      "them)", width)
    return lines


def _region_table_rows(c: Comparison) -> list[tuple[str, list[str], str]]:
    """(region, cells, direction and extra-bytes move) per region, for the text and Markdown tables."""
    return [
        (
            r["region"],
            _cells(r),
            r["direction"] + f"; extra bytes {_x(r['extra_bytes_factor_before'])} -> "
            f"{_x(r['extra_bytes_factor_after'])}",
        )
        for _, r in c.regions.iterrows()
    ]


def _kernel_table_rows(c: Comparison, tail: Callable[[pd.Series], str]) -> list[tuple[str, list[str], str]]:
    """(kernel label, cells, ``tail(row)``) per compared kernel."""
    return [(kernel_label(r), _cells(r), tail(r)) for _, r in c.kernels.iterrows()]


def _text_tail(r: pd.Series) -> str:
    """The move of one kernel in the text table, then its findings that came and went."""
    return r["direction"] + (f"; findings {_finding_changes(r)}" if _finding_changes(r) else "")


def render_text(c: Comparison, width: int | None = None) -> str:
    """The terminal comparison: per kernel and region before -> after, moves, unmatched; fitted
    to ``width`` columns (None: 100, as a file or pipe gets it)."""
    table_width = width = width or PROSE_WIDTH
    lines = [*wrap(_headline(c), width, indent="  "), ""]
    if not c.kernels.empty:
        def tail(r: pd.Series) -> str:
            moved = text_line(c, r)
            return _text_tail(r) + (f"\n{moved}" if moved else "")

        lines += _text_table(_kernel_table_rows(c, tail), "kernel", table_width)
    else:
        lines += [w for line in _no_match_lines(c) for w in (wrap(line, width, indent="  ") if line else [""])]
    if not c.regions.empty:
        lines += ["", *_text_table(_region_table_rows(c), "region", table_width)]
    unmatched = _unmatched_lines(c)
    if unmatched:
        lines += ["", "Unmatched:", *(w for u in unmatched for w in wrap(u, width, indent="  "))]
    if c.notes:
        lines += ["", "Notes:", *(w for n in c.notes for w in wrap(f"- {n}", width, indent="  "))]
    return "\n".join(lines) + "\n"


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(first: str, rows: list[tuple[str, list[str], str]]) -> list[str]:
    headers = _headers(first)
    lines = ["| " + " | ".join([first, *headers, "move"]) + " |", "|" + "---|" * (len(headers) + 2)]
    lines += [
        "| " + " | ".join(_md(v) for v in (f"`{name}`", *cells, tail)) + " |"
        for name, cells, tail in rows
    ]
    return lines


def _md_tail(r: pd.Series) -> str:
    """The move of one kernel in the markdown table, then its findings that came and went."""
    return " ".join(filter(None, (r["direction"], _finding_changes(r))))


def _md_kernels(c: Comparison) -> list[str]:
    """The Kernels section; with nothing matched, the suggested --map file or a hint."""
    if not c.kernels.empty:
        return ["## Kernels", "", *_md_table("kernel", _kernel_table_rows(c, _md_tail)), ""]
    if c.suggestion_basis == FUSION:
        first, *kernels = _fusion_lines(c)
        return ["## Kernels", "", _md(first), "", *(f"- {_md(k.strip())}" for k in kernels), ""]
    if c.suggested_renames:
        return [
            "## Kernels",
            "",
            f"No launches matched. If kernels were renamed, save this as a `--map` file "
            f"(paired by {c.suggestion_basis}; check each pair):",
            "",
            "```toml",
            *_suggestion(c),
            "```",
            "",
        ]
    return ["No launches matched: check kernel names (use `--map FILE.toml` for renames).", ""]


def render_markdown(c: Comparison) -> str:
    """The comparison as markdown tables."""
    lines = ["# ncu-roof compare", "", _headline(c).removeprefix("ncu-roof compare: "), ""]
    lines += _md_kernels(c)
    lines += markdown_section(c, kernel_label)
    if not c.regions.empty:
        lines += ["## Regions", "", *_md_table("region", _region_table_rows(c)), ""]
    unmatched = _unmatched_lines(c)
    if unmatched:
        lines += ["## Unmatched", "", *unmatched, ""]
    if c.notes:
        lines += ["## Notes", "", *(f"- {n}" for n in c.notes), ""]
    return "\n".join(lines)


RENDERERS: dict[str, Callable[[Comparison], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
