"""The timeline for notebooks and scripts: :func:`timeline` returns a :class:`TimelineResult`.

Its parts are DataFrames over every trace read (a ``trace`` column says which): ``.kernels`` (one row
per kernel launch, with the report kernel it matched where a report was given), ``.gaps`` (the idle
stretches, their cause and price), ``.steps``, ``.streams``, ``.ops``, ``.op_roofline`` (ops placed
from recorded shapes), ``.findings`` (ranked) and
``.matched`` (the report's kernels weighed by the trace); ``.chart(i)`` is the timeline chart of
trace ``i``; it writes every output the ``timeline`` command writes (``.to_text()``,
``.to_markdown()``, ``.to_json()``, ``.report(path)`` for the HTML page) and shows itself in
Jupyter: each trace's headline, its chart as inline SVG (offline) and its top findings.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ncu_roof.traces import TraceResult

TOP_SHOWN = 5  # findings per trace in the notebook view


def _stack(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    import pandas as pd

    parts = [f.assign(trace=name) for name, f in frames if len(f)]
    if not parts:
        return pd.DataFrame({"trace": pd.Series(dtype=str)})
    out = pd.concat(parts, ignore_index=True)
    return out[["trace", *[c for c in out.columns if c != "trace"]]]


@dataclass(frozen=True)
class TimelineResult:
    """Traces measured (and beside a report): DataFrames, the timeline chart, every output, a notebook view."""

    results: list[TraceResult]
    notes: list[str] = field(default_factory=list)

    def _each(self, part: Any) -> pd.DataFrame:
        return _stack([(r.timeline.trace, part(r)) for r in self.results])

    @property
    def kernels(self) -> pd.DataFrame:
        """One row per kernel launch (the trace's ``gpu`` columns); with a report, ``kernel`` (the
        report's kernel it matched), ``match`` and ``ncu_id`` (the report launch it pairs with)."""

        def rows(r: TraceResult) -> pd.DataFrame:
            k = r.trace.gpu[r.trace.gpu["kind"] == "kernel"].reset_index(drop=True) if r.trace is not None else None
            if k is None:
                import pandas as pd

                return pd.DataFrame()
            if r.report is not None:
                m = r.report.match.launches
                k = k.assign(kernel=m["kernel"].to_numpy(), match=m["match"].to_numpy(), ncu_id=m["ncu_id"].to_numpy())
            return k

        return self._each(rows)

    @property
    def gaps(self) -> pd.DataFrame:
        """The idle stretches between busy blocks: cause, copies, CPU op time, the next kernel and its
        op, and the price of each finding's share (``launch_s``, ``host_s``, ``sync_s``)."""
        return self._each(lambda r: r.timeline.gaps)

    @property
    def steps(self) -> pd.DataFrame:
        """Per ``ProfilerStep#N``: span, busy, idle, kernels."""
        return self._each(lambda r: r.timeline.steps)

    @property
    def streams(self) -> pd.DataFrame:
        return self._each(lambda r: r.timeline.streams)

    @property
    def ops(self) -> pd.DataFrame:
        """Kernels and their time per launching CPU op, most time first."""
        return self._each(lambda r: r.timeline.ops)

    @property
    def op_roofline(self) -> pd.DataFrame:
        """Per (op, input shapes, types), where shapes were recorded: calls, kernel time, algorithmic
        FLOPs and bytes, and the placement under the GPU's roofs (:mod:`ncu_roof.model.trace_ops`)."""
        import pandas as pd

        return self._each(lambda r: r.op_roofline if r.op_roofline is not None else pd.DataFrame())

    @property
    def matched(self) -> pd.DataFrame:
        """The report's kernels beside the trace: launches and time on both sides, scale, placement."""
        import pandas as pd

        return self._each(lambda r: r.report.match.kernels if r.report is not None else pd.DataFrame())

    @property
    def findings(self) -> pd.DataFrame:
        """The findings of each trace, ranked (with a report, one ranking with the report's)."""
        import pandas as pd

        from ncu_roof.render.timeline import _ranked

        cols = ["rule", "kernels", "severity", "time_at_stake_s", "message"]
        return self._each(lambda r: pd.DataFrame([{c: f.as_dict()[c] for c in cols} for f in _ranked(r)],
                                                 columns=cols))

    def chart(self, i: int = 0) -> Any:
        """The timeline chart of trace ``i`` (Altair; None without a kernel)."""
        from ncu_roof.render.charts.timeline import timeline_chart

        return timeline_chart(self.results[i])

    def to_text(self) -> str:
        from ncu_roof.render.timeline import render_text

        return render_text(self.results, self.notes)

    def to_markdown(self) -> str:
        from ncu_roof.render.timeline import render_markdown

        return render_markdown(self.results, self.notes)

    def to_json(self) -> str:
        from ncu_roof.render.timeline import render_json

        return render_json(self.results, self.notes)

    def report(self, path: str | Path, title: str = "ncu-roof timeline", force: bool = False) -> Path:
        """Write the offline HTML page (never over an existing file unless ``force``)."""
        from ncu_roof.files import check_writable, write_atomic
        from ncu_roof.render.timeline_html import render_html

        target = Path(path)
        check_writable(target, force, (".html", ".htm"), "report", "path")
        return write_atomic(target, render_html(self.results, self.notes, title))

    def _repr_html_(self) -> str:
        from ncu_roof.api import _findings_table, _first_line, _svg
        from ncu_roof.render.timeline import _headline, _ranked

        blocks = []
        for i, r in enumerate(self.results):
            head = _headline(r.timeline)
            try:
                chart = self.chart(i)
                picture = _svg(chart) if chart is not None else ""
            except Exception as exc:  # noqa: BLE001 - a chart that cannot be drawn must not hide the numbers
                picture = f"<p>(timeline chart not drawn: {html.escape(_first_line(exc))})</p>"
            ranked = [f.as_dict() for f in _ranked(r)][:TOP_SHOWN]
            blocks.append(f"<p><b>{html.escape(head[0])}</b><br>" + "<br>".join(html.escape(h) for h in head[1:])
                          + f"</p>{picture}{_findings_table(ranked)}")
        return "<div class=\"ncu-roof\">" + "".join(blocks) + "</div>"

    def __repr__(self) -> str:
        return self.to_text()


def timeline(paths: Any, report: Any = None, device: str | None = None) -> TimelineResult:
    """Read PyTorch profiler traces (a path, a folder of ranks, a glob or a list) and measure them;
    ``report`` an Nsight Compute report (or a list) of the same program, matched kernel by kernel."""
    from ncu_roof.traces import analyse_traces

    reports = None if report is None else [report] if isinstance(report, str | Path) else list(report)
    return TimelineResult(*analyse_traces(paths, reports, device))
