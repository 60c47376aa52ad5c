"""``ncu-roof lines``: one kernel's source lines (Nsight Compute's Source Counters), hottest first."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ncu_roof.cli._options import Reader, ReaderChoice
from ncu_roof.cli._output import echo_notes

REPORT_HELP = ("a .ncu-rep with Source Counters, or ncu's source page as CSV "
               "(ncu --import R --page source --csv --print-source sass)")
# (per-instruction column, header) shown where the kernel has the counter
SHOWN = (("inst_executed", "instructions"), ("l2_sectors_global_excessive", "excess sectors"),
         ("shared_wavefronts_excessive", "excess shared"), ("l2_sectors_local", "local sectors"),
         ("divergent_branches", "divergent"), ("samples", "stall samples"))


def command(
    report: Annotated[Path, typer.Argument(metavar="REPORT", help=REPORT_HELP)],
    kernel: Annotated[str | None, typer.Option("--kernel", "-k", help="the kernel (its name or a part of it)")] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="lines shown (at least 1)")] = 20,
    reader: Reader = ReaderChoice.native,
) -> None:
    """Print one kernel's source lines with their counters summed over its launches, by stall
    samples (else instructions)."""
    from ncu_roof.fmt import fmt_si
    from ncu_roof.read.source import NO_LINES_HINT

    chosen, launches, shown, sums, lined, notes = kernel_lines(report, kernel, top, reader.value)
    echo_notes(notes)
    key = "samples" if "samples" in sums else shown[0][0]
    typer.echo(f"{chosen} ({launches} launch{'es' * (launches > 1)}), by {dict(shown)[key]}:")
    width = max(len(w) for w in sums.index)
    typer.echo(f"{'line':<{width}} " + " ".join(f"{h:>14}" for _, h in shown))
    for where, row in sums.iterrows():
        cells = " ".join(f"{'-' if row[c] != row[c] else fmt_si(row[c], '').replace(' ', ''):>14}" for c, _ in shown)
        typer.echo(f"{where:<{width}} {cells}")
    if not lined:
        typer.echo(f"(no source lines: {NO_LINES_HINT})")


def kernel_lines(report: Path, kernel: str | None, top: int, reader: str = "native"
                 ) -> tuple[str, int, list[tuple[str, str]], Any, bool, list[str]]:
    """One kernel's source lines, counters summed over its launches, hottest first (stall samples, else
    instructions): (kernel, launches, shown (column, header), sums by line, whether lines are known, notes)."""
    from ncu_roof.errors import InputError
    from ncu_roof.read.source import sum_instructions

    if str(report) == "-" or (report.exists() and not report.is_file() and not report.is_dir()):
        from ncu_roof.read.inputs import expand_inputs

        report = expand_inputs(str(report))[0][0]  # standard input or a pipe, read once into a file
    if not report.is_file():
        raise InputError(f"{report} does not exist: pass a .ncu-rep")
    table = sum_instructions(report, reader=reader, columns=[c for c, _ in SHOWN])
    if table.empty:
        raise InputError(f"{report.name} has no Source Counters: capture with ncu --section SourceCounters "
                         "--import-source yes (or --set full)")
    shown_as = _shown_names(table)
    names = sorted(shown_as)
    chosen = [k for k in names if kernel is None or kernel in (k, shown_as[k])] or [
        k for k in names if kernel and (kernel in k or kernel in shown_as[k])]
    if len(chosen) != 1:
        raise InputError(f"{report.name}: name one kernel with --kernel (it has: "
                         f"{', '.join(shown_as[k] for k in names)})")
    notes = list(table.attrs["notes"])
    rows, lined = _placed(table[table["kernel"] == chosen[0]].copy(), f"{report.name}: {shown_as[chosen[0]]}", notes)
    rows["where"] = [f"{str(f).rsplit('/', 1)[-1]}:{n}" if ok else
                     f"{readable(fn) if isinstance(fn, str) and fn else '?'}+0x{o:x}"
                     for f, n, fn, o, ok in zip(rows["file"], rows["line"], rows["function"], rows["offset"], lined,
                                                strict=True)]
    shown = [(c, h) for c, h in SHOWN if c in rows and rows[c].notna().any()]
    if not shown:
        raise InputError(f"{report.name}: {shown_as[chosen[0]]} has no readable Source Counters (every count is "
                         "unknown or damaged): capture it again with ncu --section SourceCounters")
    sums = rows.groupby("where", sort=False)[[c for c, _ in shown]].sum(min_count=1)
    key = "samples" if "samples" in sums else shown[0][0]
    sums = sums.sort_values(key, ascending=False).head(top)
    launches = len(table.attrs["launches"].get(chosen[0], ()))
    return shown_as[chosen[0]], launches, shown, sums, bool(lined.any()), notes


MAX_OFFSET = 1 << 32  # an offset into one function beyond 4 GiB of code is a damaged address


def _placed(rows: Any, who: str, notes: list[str]) -> tuple[Any, Any]:
    """The instructions that can be placed (a source line, else an offset into a function) and which
    have a line; those with neither are left out and those in no named function said, each counted."""
    lined = (rows["line"] > 0) & rows["file"].map(lambda f: isinstance(f, str) and bool(f)).astype(bool)
    offset = (rows["offset"] >= 0) & (rows["offset"] < MAX_OFFSET)
    keep = lined | offset
    counts = rows["inst_executed"] if "inst_executed" in rows else None

    def share(mask: Any) -> str:
        if counts is None or not (counts.sum() > 0):
            return ""
        return f" ({counts[mask].sum() / counts.sum():.1%} of those executed)"

    if not keep.all():
        notes.append(f"{who}: {int((~keep).sum())} of {len(rows)} instructions{share(~keep)} left out: their "
                     "address is unreadable (no source line and no offset into a function; a damaged report?)")
    unnamed = keep & ~lined & ~rows["function"].map(lambda f: isinstance(f, str) and bool(f)).astype(bool)
    if unnamed.any():
        notes.append(f"{who}: {int(unnamed.sum())} instructions{share(unnamed)} lie in no function the report "
                     "names (a damaged load address?): shown as ?+offset")
    return rows[keep], lined[keep]


def _shown_names(table: Any) -> dict[str, str]:
    """Each kernel's name as the table shows it: that of its mangled function where the function does
    not spell the name (a Numba kernel's own name is its ABI tag, ``cw51cXTLSUwv1k...``), cut by
    :func:`readable`."""
    out = {}
    for name, functions in table.groupby("kernel", sort=False)["function"]:
        mangled = [f for f in functions.dropna().astype(str).unique() if f.startswith("_Z") and str(name) not in f]
        out[str(name)] = readable(mangled[0] if mangled else str(name))  # a name its function spells: as it is
    return out


NAME_WIDTH = 80  # a function or kernel name in the lines table, at most


def readable(name: str, width: int = NAME_WIDTH) -> str:
    """A function name fit for a table: a mangled one (Numba's run to 400 characters of ABI tags and
    argument types) as its function name (``_ZN6cudapy8__main__26reconstruct_svd_cuda_1_241B96cw...``
    -> ``reconstruct_svd_cuda_1_241``), then any name cut to ``width`` characters with an ellipsis."""
    from ncu_roof.fmt import short_name
    from ncu_roof.read.cubin import short_name as function_name

    return short_name(function_name(name) if name.startswith("_Z") else name, width)
