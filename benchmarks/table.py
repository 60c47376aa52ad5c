"""The README's benchmark table, made from ``benchmarks/results.json`` (what ``run.py`` writes).

``update_readme(readme, results)`` puts :func:`readme_table` between the two marker lines of the
README; a test checks the README's table is what the last JSON gives.
"""

from __future__ import annotations

from typing import Any

START = "<!-- benchmarks: made by benchmarks/table.py from benchmarks/results.json; do not edit -->"
END = "<!-- /benchmarks -->"


def _value(fig: dict[str, Any]) -> str:
    name = fig["value"]
    got = fig[name] if name in fig else fig["a"][name]
    if name == "ratio":
        return f"{got:.2f}x (CPU {fig['cpu_ratio']:.2f}x)"
    if name == "difference_s":
        return f"{got:+.2f} s (CPU {fig['cpu_difference_s']:+.2f} s)"
    if name.endswith("_mb"):
        return f"{got:,.0f} MB"
    if name == "wall_s":
        return f"{got:.2f} s (CPU {fig['a']['cpu_s']:.2f} s)"
    return f"{got:.3f}"


def _bound(fig: dict[str, Any]) -> str:
    name, bound = fig["value"], fig["bound"]
    shown = (f"{bound:g}x" if name == "ratio" else f"+{bound:g} s" if name == "difference_s"
             else f"{bound:,.0f} MB" if name.endswith("_mb") else f"{bound:g} s" if name == "wall_s" else f"{bound:g}")
    return ("<= " if fig["better"] == "lower" else ">= ") + shown + ("" if fig["met"] else " (missed)")


def _side(side: dict[str, Any] | None) -> str:
    return "" if side is None else f"{side['wall_s']:.2f} s, {side['peak_mb']:,.0f} MB"


def _row(fig: dict[str, Any]) -> str:
    """One row of the table: one figure."""
    return f"| {fig['what']} | {_side(fig['a'])} | {_side(fig['b'])} | {_value(fig)} | {_bound(fig)} |"


def readme_table(results: dict[str, Any]) -> str:
    """The figures as a Markdown table, one row each, and the line saying where and when they
    were measured."""
    lines = ["| figure | ncu-roof | baseline | result | bound |", "|---|---|---|---|---|"]
    lines += [_row(fig) for fig in results["figures"]]
    m = results["machine"]
    pairs = sorted({f["pairs"] for f in results["figures"]})
    lines.append("")
    lines.append(f"Whole processes, medians of {' or '.join(map(str, pairs))} interleaved pairs (seconds: wall "
                 f"clock, bounds judged on it; CPU: user + system time; MB: peak resident memory of the largest "
                 f"process), measured by `python benchmarks/run.py` "
                 f"on {results['date']} at commit {results['commit']}: {m['cores']} cores, {m['memory_gib']} GiB, "
                 f"Python {m['python']}, load average {m['load_average_at_start']} at the start"
                 + (f" and {m['load_average_at_end']} at the end" if "load_average_at_end" in m else "")
                 + (f"; left out: {'; '.join(results['skipped'])}" if results["skipped"] else "") + ".")
    return "\n".join(lines)


def update_readme(readme: str, results: dict[str, Any]) -> str:
    """The README with its benchmark table replaced by the one ``results`` gives."""
    head, start, rest = readme.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the README has no benchmark table markers ({START} ... {END})")
    return f"{head}{START}\n{readme_table(results)}\n{END}{tail}"
