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


def _joined(texts: list[str]) -> str:
    """The distinct texts, in order, with `` / `` between."""
    return " / ".join(dict.fromkeys(texts))


def _sides(figs: list[dict[str, Any]], side: str) -> str:
    """One side (``a``: ncu-roof, ``b``: the baseline) of each figure, with `` / `` between; a figure
    measured by the same run as the one before it (the report's memory and its text time) is shown
    once, but two runs that took the same time each keep their cell."""
    runs = [f[side] for n, f in enumerate(figs) if n == 0 or f[side] != figs[n - 1][side]]
    return " / ".join(_side(run) for run in runs)


# Figures shown in one row (one command's output formats), by id, and what makes the row's title of
# the first one's.
GROUPS = {
    "full-": (("full-text", "full-json", "full-markdown", "full-html"),
              lambda what: what.replace("(text)", "in text / JSON / Markdown and `report` (HTML)")),
    "rep-big-": (("rep-big-memory", "rep-big-text", "rep-big-json", "rep-big-markdown", "rep-big-html"),
                 lambda what: what + "; time in text / JSON / Markdown / HTML (`report`)"),
}


def _group(fig: dict[str, Any]) -> str | None:
    return next((name for name, (ids, _) in GROUPS.items() if fig["id"] in ids), None)


def _row(figs: list[dict[str, Any]]) -> str:
    """One row of the table: a figure, or the figures of one group side by side."""
    group = _group(figs[0])
    what = figs[0]["what"] if len(figs) == 1 or group is None else GROUPS[group][1](figs[0]["what"])
    return (f"| {what} | {_sides(figs, 'a')} | {_sides(figs, 'b')} | "
            f"{' / '.join(_value(f) for f in figs)} | {_bounds(figs, group)} |")


def _bounds(figs: list[dict[str, Any]], group: str | None) -> str:
    """The bounds of a row; in a group, which of its figures missed theirs."""
    if len(figs) == 1 or group is None:
        return _joined([_bound(f) for f in figs])
    missed = [f["id"].removeprefix(group) for f in figs if not f["met"]]
    return _joined([_bound({**f, "met": True}) for f in figs]) + (f" (missed: {', '.join(missed)})" if missed else "")


def readme_table(results: dict[str, Any]) -> str:
    """The figures as a Markdown table (the figures of one group in one row: :data:`GROUPS`), and the line saying
    where and when they were measured."""
    lines = ["| figure | ncu-roof | baseline | result | bound |", "|---|---|---|---|---|"]
    rows: list[list[dict[str, Any]]] = []
    for fig in results["figures"]:
        if rows and _group(fig) and _group(rows[-1][-1]) == _group(fig):
            rows[-1].append(fig)
        else:
            rows.append([fig])
    lines += [_row(figs) for figs in rows]
    m = results["machine"]
    pairs = sorted({f["pairs"] for f in results["figures"]})
    lines.append("")
    lines.append(f"Whole processes, medians of {' or '.join(map(str, pairs))} interleaved pairs (seconds: wall "
                 f"clock, bounds judged on it; CPU: user + system time; MB: peak resident memory of the largest "
                 f"process), measured by `python benchmarks/run.py` "
                 f"on {results['date']} at commit {results['commit']}: {m['cores']} cores, {m['memory_gib']} GiB, "
                 f"Python {m['python']}, load average {m['load_average_at_start']} at the start"
                 + (f"; left out: {'; '.join(results['skipped'])}" if results["skipped"] else "") + ".")
    return "\n".join(lines)


def update_readme(readme: str, results: dict[str, Any]) -> str:
    """The README with its benchmark table replaced by the one ``results`` gives."""
    head, start, rest = readme.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the README has no benchmark table markers ({START} ... {END})")
    return f"{head}{START}\n{readme_table(results)}\n{END}{tail}"
