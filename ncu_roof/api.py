"""The library's face for notebooks and scripts: :func:`diagnose` and :func:`compare`.

Both return a result whose parts are DataFrames (``.launches``, ``.kernels``, ``.findings``,
``.ncu_rules``, ``.regions``), whose charts are Altair charts (``.chart(kind)``, shown in Jupyter as
SVG drawn here), which writes every
output the CLI writes (``.to_text()``, ``.to_markdown()``, ``.to_json()``, ``.report(path)``), and
which shows itself in Jupyter: the summary line, the roofline as inline SVG (drawn here by
vl-convert, so it renders offline and in exported notebooks) and the top findings. The CLI's
``diagnose`` and ``compare`` are built on these calls (``compare``'s on :func:`run_compare`: the
comparison, its chart and its text).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import altair as alt
    import pandas as pd

    from ncu_roof.comparison.compare import Comparison
    from ncu_roof.diagnosis import DiagnoseRequest, Diagnosis

TOP_SHOWN = 5  # findings in the notebook view
# A text block keeps its columns in a notebook and an exported one (JupyterLab's CSS wraps a <pre>)
FIXED_WIDTH = ('class="ncu-roof-text" style="white-space: pre; overflow-x: auto; font-family: monospace; '
               'font-variant-ligatures: none; line-height: 1.3"')
CHART_KINDS = ("roofline", "time-share", "extra-bytes", "sweep", "speed-of-light")


def _svg(chart: Any) -> str:
    """A chart as inline SVG (no script, no network)."""
    from ncu_roof.render.charts.notebook import svg

    return svg(chart)


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _line_text(line: Any) -> str:
    """Where a finding's hottest line is: ``conv.cu:44``, or ``function+0xf00`` (a mangled name as its
    function's) where the program has no line table."""
    from ncu_roof.fmt import short_name
    from ncu_roof.read.cubin import short_name as function_name
    from ncu_roof.render.lines import where

    if (line.file is not None and line.line is not None) or not line.function:
        return where(line)
    name = str(line.function)
    at = f"+0x{line.offsets[0]:x}" if line.offsets else ""
    return short_name(function_name(name) if name.startswith("_Z") else name, 80) + at


def _findings_table(records: list[dict[str, Any]]) -> str:
    from ncu_roof.fmt import fmt_seconds

    rows = "".join(
        f"<tr><td>{i}</td><td>{html.escape(str(r['severity']))}</td><td><code>{html.escape(str(r['rule']))}</code>"
        f"</td><td>{html.escape(fmt_seconds(r['time_at_stake_s'])) if r.get('time_at_stake_s') else ''}</td>"
        f"<td style=\"text-align:left\">{html.escape(str(r['message']))}</td></tr>"
        for i, r in enumerate(records, 1))
    return ("<table><tr><th>#</th><th>severity</th><th>rule</th><th>at stake</th><th>what to do</th></tr>"
            f"{rows}</table>") if rows else "<p>No finding with time at stake.</p>"


@dataclass(frozen=True)
class DiagnosisResult:
    """One diagnosis: DataFrames, charts and every output, and a notebook view."""

    diagnosis: Diagnosis

    @property
    def launches(self) -> pd.DataFrame:
        """Every launch, placed under its roofs (the placed table: one row per launch)."""
        return self.diagnosis.placed

    @property
    def kernels(self) -> pd.DataFrame:
        """One row per kernel (and device): launches, time, share, bound, limiter, % of roof."""
        from ncu_roof.model.kernels import kernel_summary

        return kernel_summary(self.diagnosis.placed)

    @property
    def findings(self) -> pd.DataFrame:
        """The findings to read, largest time at stake first (a cause before the stalls it explains,
        findings without a stake last), one row each, indexed by ``rank`` (1 = the first line of
        ``diagnose``):

        - ``rule``, ``severity`` (high, medium, low, info)
        - ``at_stake`` (text, e.g. ``'3.03 ms'``; ``''`` without a stake) and ``at_stake_s`` (seconds)
        - ``kernels`` (their names, comma-separated) or ``region``, and ``launches`` (how many)
        - ``line``: the hottest source line it points at (``file:line``, ``''`` where none)
        - ``message``: what to do

        The records behind it (kernel lists, launch IDs, evidence, every line) are
        :attr:`findings_raw`."""
        import pandas as pd

        from ncu_roof.fmt import fmt_seconds

        rows = [{"rule": f.rule, "severity": f.severity,
                 "at_stake": fmt_seconds(f.time_at_stake_s) if f.time_at_stake_s is not None else "",
                 "at_stake_s": f.time_at_stake_s, "kernels": ", ".join(f.kernels), "region": f.region or "",
                 "launches": len(f.ids), "line": _line_text(f.lines[0]) if f.lines else "", "message": f.message}
                for f in self.diagnosis.findings]
        columns = ["rule", "severity", "at_stake", "at_stake_s", "kernels", "region", "launches", "line", "message"]
        out = pd.DataFrame.from_records(rows, columns=columns).astype({"at_stake_s": "float64", "launches": "int64"})
        out = out.sort_values("at_stake_s", ascending=False, kind="stable", na_position="last")
        out.index = pd.RangeIndex(1, len(out) + 1, name="rank")
        return out

    @property
    def findings_raw(self) -> pd.DataFrame:
        """The findings as records, in rank order: ``rule``, ``kernels`` (a list), ``region``,
        ``severity``, ``message``, ``time_at_stake_s``, ``evidence`` (a dict), ``ids`` (launch IDs),
        ``report`` and ``lines`` (dicts), as ``diagnose --format json`` writes them."""
        import pandas as pd

        records = [f.as_dict() for f in self.diagnosis.findings]
        return pd.DataFrame.from_records(records, columns=list(records[0]) if records else
                                         ["rule", "kernels", "region", "severity", "message", "time_at_stake_s",
                                          "evidence", "ids", "report", "lines"])

    @property
    def lines(self) -> pd.DataFrame:
        """The source lines the findings point at: one row per (finding, line), hottest first within a
        finding: ``finding`` (its rank), ``rule``, ``kernels``, ``file``, ``line`` (None without a line
        table), ``function``, ``offsets``, ``sass``, ``counter`` and ``value`` (what ranks them),
        ``share`` of it, ``time_s`` (that share of the stake), ``source`` (the line's text where the
        report carries it)."""
        import pandas as pd

        columns = ["finding", "rule", "kernels", "file", "line", "function", "offsets", "sass", "counter", "value",
                   "share", "time_s", "source"]
        sources = self.diagnosis.sources
        rows = [{"finding": i, "rule": f.rule, "kernels": list(f.kernels), **x.as_dict(),
                 "source": sources.get(x.file or "", {}).get(x.line) if x.line is not None else None}
                for i, f in enumerate(self.diagnosis.findings, 1) for x in f.lines]
        out = pd.DataFrame.from_records(rows, columns=[*columns, "counters"])[columns]
        return out.astype({"line": "Int64"})

    @property
    def ncu_rules(self) -> pd.DataFrame:
        """Nsight Compute's own rule results, with ncu-roof's verdict on each estimate."""
        import pandas as pd

        return pd.DataFrame.from_records(self.diagnosis.ncu_rules)

    @property
    def regions(self) -> pd.DataFrame:
        """NVTX and sidecar regions with their algorithmic and achieved intensities."""
        return self.diagnosis.regions

    @property
    def notes(self) -> list[str]:
        return list(self.diagnosis.notes)

    def chart(self, kind: str = "roofline") -> Any:
        """An Altair chart: ``roofline``, ``time-share``, ``extra-bytes``, ``sweep`` or
        ``speed-of-light`` (None where the reports hold nothing to draw; the charts are built without
        Altair, then made again in it). Jupyter shows it as SVG drawn here, so it renders offline and
        in an exported notebook."""
        from ncu_roof.errors import InputError
        from ncu_roof.render.charts import roofline, views
        from ncu_roof.render.charts.notebook import offline
        from ncu_roof.render.charts.vegalite import to_altair

        makers: dict[str, Callable[[Diagnosis], Any]] = {
            "roofline": roofline.roofline_chart, "time-share": views.time_share_chart,
            "extra-bytes": views.extra_bytes_chart, "sweep": views.sweep_chart, "speed-of-light": views.sol_chart}
        if kind not in makers:
            raise InputError(f"no chart {kind!r}: choose one of {', '.join(CHART_KINDS)}")
        return offline(to_altair(makers[kind](self.diagnosis)))

    def to_text(self, width: int | None = None) -> str:
        from ncu_roof.render.renderers import render_text

        return render_text(self.diagnosis, width=width)

    def to_markdown(self) -> str:
        from ncu_roof.render.markdown import render_markdown

        return render_markdown(self.diagnosis)

    def to_json(self) -> str:
        from ncu_roof.render.renderers import render_json

        return render_json(self.diagnosis)

    def to_digest(self, budget: int | None = None) -> str:
        """The digest for an agent, in ``budget`` tokens (characters / 4; default about 2,000)."""
        from ncu_roof.render.digest import DEFAULT_BUDGET, render_digest

        return render_digest(self.diagnosis, DEFAULT_BUDGET if budget is None else budget)

    def to_dict(self) -> dict[str, Any]:
        from ncu_roof.diagnosis import to_dict

        return to_dict(self.diagnosis)

    def report(self, path: str | Path, title: str = "ncu-roof report", force: bool = False) -> Path:
        """Write the one-page offline HTML report (never over an existing file unless ``force``)."""
        from ncu_roof.files import check_writable, write_atomic
        from ncu_roof.render.html import render_html

        target = Path(path)
        check_writable(target, force, (".html", ".htm"), "report", "path")
        return write_atomic(target, render_html(self.diagnosis, title))

    def _repr_html_(self) -> str:
        from ncu_roof.render.charts.views import _main_chart
        from ncu_roof.render.html import _summary_line
        from ncu_roof.rules.base import order_words

        d = self.diagnosis
        title, chart = _main_chart(d)
        try:
            picture = _svg(chart)
        except Exception as exc:  # noqa: BLE001 - a chart that cannot be drawn must not hide the findings
            picture = f"<p>({html.escape(title)} not drawn: {html.escape(_first_line(exc))})</p>"
        ranked = [f.as_dict() for f in d.findings if f.time_at_stake_s][:TOP_SHOWN]
        more = len([f for f in d.findings if f.time_at_stake_s]) - len(ranked)
        return ("<div class=\"ncu-roof\">"
                f"<p><b>ncu-roof</b>: {html.escape(_summary_line(d))}</p>{picture}"
                f"<h4>Advice ({order_words(d.findings)})</h4>{_findings_table(ranked)}"
                + (f"<p>... and {more} more: <code>.findings</code></p>" if more > 0 else "")
                + "</div>")

    def __repr__(self) -> str:
        return self.to_text(width=100)


@dataclass(frozen=True)
class ComparisonResult:
    """A before/after comparison: DataFrames, the arrows chart, every output, a notebook view."""

    comparison: Comparison

    @property
    def before(self) -> DiagnosisResult:
        return DiagnosisResult(self.comparison.base)

    @property
    def after(self) -> DiagnosisResult:
        return DiagnosisResult(self.comparison.new)

    @property
    def kernels(self) -> pd.DataFrame:
        """Per kernel: time, FLOPs and bytes before and after, the speedup and what moved."""
        return self.comparison.kernels

    @property
    def regions(self) -> pd.DataFrame:
        return self.comparison.regions

    def chart(self) -> Any:
        """The roofline with an arrow per kernel from before to after (speedups on the arrows); an
        Altair chart that Jupyter shows as SVG drawn here (offline, and in an exported notebook)."""
        from ncu_roof.render.charts.compare import compare_chart
        from ncu_roof.render.charts.notebook import offline

        return offline(compare_chart(self.comparison))

    def to_text(self, width: int | None = None) -> str:
        from ncu_roof.render.compare import render_text

        return render_text(self.comparison, width)

    def to_markdown(self) -> str:
        from ncu_roof.render.compare import render_markdown

        return render_markdown(self.comparison)

    def to_json(self) -> str:
        from ncu_roof.render.compare import render_json

        return render_json(self.comparison)

    def _repr_html_(self) -> str:
        try:
            picture = _svg(self.chart())
        except Exception as exc:  # noqa: BLE001 - nothing to draw (no kernel matched) must not hide the table
            picture = f"<p>(no chart: {html.escape(_first_line(exc))})</p>"
        return f"<div class=\"ncu-roof\">{picture}<pre {FIXED_WIDTH}>{html.escape(self.to_text(width=120))}</pre></div>"

    def __repr__(self) -> str:
        return self.to_text(width=100)


def diagnose(paths: Any, algorithmic: str | Path | None = None, ceilings: str | Path | None = None,
             device: str | None = None) -> DiagnosisResult:
    """Read Nsight Compute reports or their CSV exports and diagnose them, as ``ncu-roof diagnose``.

    Args:
        paths: a ``.ncu-rep`` or ``.csv`` file, a folder of them, a glob (``"runs/*.ncu-rep"``), or
            a list of any of these; several reports are diagnosed together (one ranking).
        algorithmic: a sidecar TOML of ``[[region]]`` FLOP and byte counts (the ideal a region is
            measured against: its extra bytes and the time they cost).
        ceilings: a TOML of measured roofs (e.g. from a bandwidth test) to use instead of the
            report's or the device table's.
        device: the GPU for inputs that do not name one (a CSV without device attributes), as the
            device table spells it, e.g. ``"NVIDIA A100-SXM4-40GB"``.

    Returns:
        A :class:`DiagnosisResult`: ``.findings`` (largest time at stake first; a cause before the
        stalls it explains), ``.kernels``, ``.launches``, ``.lines`` and ``.ncu_rules`` as DataFrames,
        ``.chart(kind)``, the outputs
        (``.to_text()``, ``.to_json()``, ``.report(path)``), and a Jupyter view.

    Raises:
        ncu_roof.errors.InputError: an input that cannot be read (missing, not a report, no
            launches), with a one-line message saying why.

    Example:
        miniWeather's baseline on a V100 (``MW_Baseline.ncu-rep``, five OpenACC kernels)::

            >>> import ncu_roof
            >>> r = ncu_roof.diagnose("MW_Baseline.ncu-rep")
            >>> r.findings[["rule", "at_stake", "launches", "line"]].head(2)
                          rule at_stake  launches                             line
            rank
            1     fusion-chain  4.48 ms         2
            2        fp64-pipe  3.03 ms         1  miniWeather_mpi_openacc.F90:288
            >>> r.report("mw.html")  # the offline HTML page; r.to_text() is what the CLI prints
    """
    from ncu_roof.diagnosis import diagnose_paths

    return DiagnosisResult(diagnose_paths(paths, algorithmic=algorithmic, ceilings=ceilings, device=device))


def compare(before: Any, after: Any, mapping: str | Path | None = None, algorithmic: str | Path | None = None,
            ceilings: str | Path | None = None, device: str | None = None) -> ComparisonResult:
    """Compare two runs (paths, or results of :func:`diagnose`) per kernel and region;
    ``mapping`` a TOML of kernel renames."""
    from ncu_roof.comparison.compare import compare as compare_diagnoses
    from ncu_roof.comparison.match import read_mapping

    sides = [x.diagnosis if isinstance(x, DiagnosisResult) else diagnose(x, algorithmic, ceilings, device).diagnosis
             for x in (before, after)]
    renames = read_mapping(Path(mapping)) if mapping is not None else None
    return ComparisonResult(compare_diagnoses(sides[0], sides[1], renames))


@dataclass
class CompareOutcome:
    """A comparison, rendered, and its chart when one was asked for (drawn, not yet saved)."""

    comparison: Comparison
    text: str
    chart: alt.LayerChart | None = None


def run_compare(base: DiagnoseRequest, new: DiagnoseRequest, fmt: str | None = None, chart: Path | None = None,
                mapping: Path | None = None, force: bool = False, width: int | None = None) -> CompareOutcome:
    """What ``ncu-roof compare`` runs: compare two runs (:func:`ncu_roof.comparison.compare.compare_paths`)
    and render the comparison as ``fmt`` (default text, fitted to ``width`` columns when given). With
    ``chart``, its path is checked before any work and the chart is drawn before any output, so
    "nothing to draw" fails without half a result."""
    from ncu_roof.comparison.compare import compare_paths
    from ncu_roof.render.charts.compare import compare_chart
    from ncu_roof.render.charts.save import check_chart_path
    from ncu_roof.render.compare import RENDERERS, render_text

    if chart is not None:
        check_chart_path(chart, force)
    result = compare_paths(base, new, mapping)
    drawn = compare_chart(result) if chart is not None else None
    text = render_text(result, width) if (fmt or "text") == "text" else RENDERERS[fmt or "text"](result)
    return CompareOutcome(result, text, drawn)
