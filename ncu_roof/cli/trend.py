"""``ncu-roof trend``: each kernel's history in a store, and where it moved beyond the noise."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ncu_roof.cli._options import ForceFiles, Output, SummaryFormat
from ncu_roof.cli._output import write_output


def command(
    store: Annotated[Path, typer.Option("--store", metavar="DIR", help="the store folder (from ncu-roof ingest)")],
    kernel: Annotated[str | None, typer.Option("--kernel", metavar="RE",
                                               help="kernels whose name matches this regex (RE2)")] = None,
    metric: Annotated[str, typer.Option(
        "--metric", help="time (per launch), total_time, pct_of_roof, bytes (DRAM), l2_bytes, flops, intensity, "
                         "sol or launches")] = "time",
    by: Annotated[str, typer.Option("--by", help="one point per run, per date (day of ingest) or per label value "
                                                 "(label:KEY, e.g. label:commit)")] = "run",
    device: Annotated[str | None, typer.Option("--device", help="only runs on this GPU (as the store names it)")
                      ] = None,
    fmt: Annotated[SummaryFormat | None, typer.Option(
        "--format", "-f", help="text, markdown or json (default: from the -o suffix, else text)")] = None,
    output: Output = None,
    chart: Annotated[Path | None, typer.Option(help="also save the chart (.html, .png, .svg, .json)")] = None,
    force: ForceFiles = False,
) -> None:
    """Per kernel: its series over the store's runs, the median, a noise band from the run-to-run
    spread, and the runs where it moved beyond the noise (pip install 'ncu-roof[store]')."""
    from ncu_roof.files import check_distinct, check_writable
    from ncu_roof.render.formats import pick_format
    from ncu_roof.store.render import RENDERERS, trend_chart
    from ncu_roof.store.trend import trend

    name = pick_format("trend", fmt.value if fmt else None, output)
    check_distinct(output, chart)
    if output is not None:
        check_writable(output, force)
    if chart is not None:
        from ncu_roof.render.charts.save import check_chart_path

        check_chart_path(chart, force)
    result = trend(store, metric, by, kernel, device)
    write_output(RENDERERS[name](result), output, force)
    if chart is not None:
        from ncu_roof.render.charts.save import save_chart

        save_chart(trend_chart(result), chart, force)
