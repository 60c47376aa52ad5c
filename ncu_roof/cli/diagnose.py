"""``ncu-roof diagnose``: roofline placement, regions and ranked advice."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ncu_roof.cli._options import (
    ForceFiles,
    Jobs,
    Output,
    Quiet,
    Reader,
    ReaderChoice,
    Reports,
    Scheduler,
    SummaryFormat,
    asks_diagnosis,
    reading_begun,
    use_read_options,
)
from ncu_roof.cli._output import write_output

if TYPE_CHECKING:
    from ncu_roof.diagnosis import DiagnoseRequest


class DiagnoseFormat(str, Enum):
    """What ``diagnose`` prints: the summary formats and the digest for agents."""

    text = "text"
    markdown = "markdown"
    json = "json"
    digest = "digest"
    html = "html"


@asks_diagnosis("reports", algorithmic="reports", ceilings="algorithmic", device="suggest_regions")
def command(
    reports: Reports,
    fmt: Annotated[DiagnoseFormat | None, typer.Option("--format", "-f", help="text, markdown, json, digest "
                                                   "(for agents: --budget tokens) or html (the page `report` "
                                                   "writes); default: from the -o suffix, else text")] = None,
    budget: Annotated[int | None, typer.Option("--budget", min=100, help="the digest's size in tokens, estimated "
                                               "as characters / 4 (default 2000)")] = None,
    output: Output = None,
    chart: Annotated[Path | None, typer.Option(help="also save the roofline chart (.html, .png, .svg, .json)")] = None,
    force: ForceFiles = False,
    suggest_regions: Annotated[Path | None, typer.Option(
        "--suggest-regions", help="write the [[region]] stanzas of kernel sequences that look fusable here "
                                  "(TOML for --algorithmic)")] = None,
    reader: Reader = ReaderChoice.native,
    jobs: Jobs = None,
    quiet: Quiet = False,
    scheduler: Scheduler = None,
    *,
    asked: DiagnoseRequest,
) -> None:
    """Place every kernel under its roofs and rank what can be won, where, and how."""
    use_read_options(reader, jobs, quiet, scheduler)
    prepared = check_outputs(fmt, output, chart, force)
    if suggest_regions is not None:
        from ncu_roof.files import check_distinct, check_writable

        check_distinct(output, suggest_regions)
        check_writable(suggest_regions, force, (".toml",), "region file", "--suggest-regions")
    with reading_begun(asked.inputs):
        result = diagnose_and_write(asked, prepared, budget)
    if suggest_regions is not None:
        write_suggestions(result, suggest_regions, force)


def write_suggestions(result: Any, path: Path, force: bool) -> None:
    """The [[region]] stanzas of the fusion-chain findings, written to ``path`` (or a line saying none)."""
    from ncu_roof.model.chains import find_chains, region_stanzas

    d = result.diagnosis
    flagged = {tuple(f.evidence["chain"]) for f in d.findings if f.rule == "fusion-chain"}
    chains = [c for c in find_chains(d.placed) if c.kernels in flagged]
    if not chains:
        typer.echo(f"ncu-roof: no kernel sequence looks fusable; {path} not written", err=True)
        return
    write_output(region_stanzas(chains), path, force)
    typer.echo(f"ncu-roof: {len(chains)} [[region]] stanza(s) written to {path}: check the counts, then pass "
               f"--algorithmic {path}", err=True)


def check_outputs(fmt: SummaryFormat | DiagnoseFormat | None, output: Path | None, chart: Path | None, force: bool
                  ) -> tuple[str, Path | None, Path | None, bool]:
    """The format and the checked output paths (checked first, so a bad one costs nothing and
    prints nothing): (format name, output, chart, force)."""
    from ncu_roof.files import check_distinct, check_writable
    from ncu_roof.render.formats import pick_format

    name = pick_format("diagnose", fmt.value if fmt else None, output)
    check_distinct(output, chart)
    if output is not None:
        check_writable(output, force)
    if chart is not None:
        from ncu_roof.render.charts.save import check_chart_path

        check_chart_path(chart, force)
    return name, output, chart, force


def check_diagnosis_inputs(request: DiagnoseRequest) -> None:
    """Read the request's counts and ceilings files and look its device up now (``capture`` calls
    this before profiling, so a typo does not cost a capture)."""
    from ncu_roof.diagnosis import load_ceilings
    from ncu_roof.model.algorithmic import read_algorithmic
    from ncu_roof.read.table import check_device

    if request.algorithmic is not None:
        read_algorithmic(Path(request.algorithmic))
    load_ceilings(request.ceilings)
    check_device(request.device)


def diagnose_and_write(request: DiagnoseRequest, prepared: tuple[str, Path | None, Path | None, bool],
                       budget: int | None = None) -> Any:
    """Diagnose the request (:func:`ncu_roof.diagnosis.diagnose_request`, behind the library's own
    result) and write the summary (and chart) as :func:`check_outputs` prepared; returns the result."""
    from ncu_roof.api import DiagnosisResult
    from ncu_roof.diagnosis import diagnose_request
    from ncu_roof.fmt import terminal_width

    name, output, chart, force = prepared
    result = DiagnosisResult(diagnose_request(request))
    if name == "text":  # wrapped to the terminal; a file gets whole tables
        text = result.to_text(width=terminal_width() if output is None else None)
    elif name == "html":  # the page `ncu-roof report` writes
        from ncu_roof.render.html import render_html

        text = render_html(result.diagnosis)
    else:
        text = result.to_digest(budget) if name == "digest" else {"markdown": result.to_markdown,
                                                                  "json": result.to_json}[name]()
    write_output(text, output, force)
    if chart is not None:
        from ncu_roof.render.charts.save import save_chart

        save_chart(result.diagnosis, chart, force=force)
    return result
