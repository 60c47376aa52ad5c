"""``ncu-roof mcp``: a Model Context Protocol server (stdio) whose tools are the library's calls.

Tools: ``diagnose`` (the digest and the ranked findings with stakes and verify commands), ``lines`` (a
kernel's source lines by cost), ``compare`` (before/after), ``timeline`` (traces, with reports),
``table`` (selected columns of selected launches), ``query`` (read-only SQL over a store) and
``capture_plan`` (the ncu command collecting what findings read). Each returns structured content
with an output schema, and text for the model (the digest for ``diagnose``); a failure is an error
result whose text is the line the CLI prints (:func:`ncu_roof.errors.error_line`).
Needs the MCP SDK (``pip install 'ncu-roof[mcp]'``): mcp 2 (``MCPServer``) or mcp 1 (``FastMCP``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from typing_extensions import TypedDict

from ncu_roof.errors import InputError, error_line

try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    try:
        from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef,attr-defined,unused-ignore]
    except ImportError:
        raise InputError("ncu-roof mcp needs the MCP SDK: pip install 'ncu-roof[mcp]'") from None
from mcp.types import CallToolResult

ROWS = 200  # rows a table or query returns at most (the rest counted)
F = TypeVar("F", bound=Callable[..., Any])


class Verify(TypedDict):
    command: str
    argv: list[str]
    sections: list[str]
    metrics: list[str]
    kernel: str
    launch_id: int
    launch_skip: int
    program: list[str] | None
    basis: str


class FindingOut(TypedDict):
    rank: int
    rule: str
    kernels: list[str]
    severity: str
    message: str
    time_at_stake_s: float | None
    ids: list[int]
    report: str | None
    line: str | None
    verify: Verify | None


class KernelOut(TypedDict):
    kernel: str
    device: str | None
    launches: int
    time_s: float | None
    share: float | None
    binding_unit: str | None
    pct_of_roof: float | None


class DiagnoseOut(TypedDict):
    digest: str
    total_time_s: float | None
    findings_total: int
    findings: list[FindingOut]
    kernels: list[KernelOut]
    skipped_rules: list[dict[str, Any]]
    notes: list[str]


class LinesOut(TypedDict):
    kernel: str
    launches: int
    ranked_by: str
    lines: list[dict[str, Any]]
    notes: list[str]


class CompareOut(TypedDict):
    text: str
    comparison: dict[str, Any]


class TimelineOut(TypedDict):
    text: str
    traces: list[dict[str, Any]]
    notes: list[str]


class RowsOut(TypedDict):
    columns: list[str]
    rows: list[dict[str, Any]]
    total_rows: int


class PlanOut(TypedDict):
    plans: list[FindingOut]
    combined: str | None


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and NA as None, numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    try:
        import pandas as pd

        if value is pd.NA:
            return None
    except ImportError:  # pragma: no cover
        pass
    return value


def _result(text: str, structured: dict[str, Any]) -> CallToolResult:
    """The text the model reads and the structured content (camelCase on the wire in mcp 1 and 2)."""
    return CallToolResult.model_validate({"content": [{"type": "text", "text": text}],
                                          "structuredContent": _clean(structured)})


def _cli_errors(func: F) -> F:
    """A tool whose failures are error results (``isError``) whose text is the CLI's one line, as is
    (a raised ``ToolError`` would reach the client prefixed with the SDK's "Error executing tool")."""
    import functools

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is the CLI's one line
            return CallToolResult.model_validate({"content": [{"type": "text", "text": error_line(exc)}],
                                                  "isError": True})

    return run  # type: ignore[return-value]


def _findings(d: Any, ranks: list[int] | None = None) -> list[FindingOut]:
    """The findings' records as the JSON contract writes them (:func:`ncu_roof.diagnosis.finding_records`),
    ranked from 1; only ``ranks`` where given."""
    from ncu_roof.diagnosis import finding_records
    from ncu_roof.render.digest import _line_text

    out: list[FindingOut] = []
    for rank, (f, rec) in enumerate(zip(d.findings, finding_records(d), strict=True), 1):
        if ranks is not None and rank not in ranks:
            continue
        line = _line_text(d, f)
        out.append({"rank": rank, "rule": rec["rule"], "kernels": rec["kernels"], "severity": rec["severity"],
                    "message": rec["message"], "time_at_stake_s": rec["time_at_stake_s"], "ids": rec["ids"],
                    "report": rec["report"], "line": line.strip()[len("line: "):] if line else None,
                    "verify": rec["verify"]})
    return out


def _kernels(d: Any) -> list[KernelOut]:
    from ncu_roof.model.kernels import kernel_summary

    if d.placed.empty:
        return []
    return [{"kernel": str(k["kernel"]), "device": _clean(k.get("device")), "launches": int(k["launches"]),
             "time_s": _clean(k.get("time_s")), "share": _clean(k.get("share")),
             "binding_unit": _clean(k.get("binding_unit")), "pct_of_roof": _clean(k.get("pct_of_roof"))}
            for _, k in kernel_summary(d.placed).iterrows()]


@_cli_errors
def diagnose(paths: list[str], budget: int = 2000, top: int = 10, device: str | None = None,
             algorithmic: str | None = None, ceilings: str | None = None
             ) -> Annotated[CallToolResult, DiagnoseOut]:
    """Diagnose Nsight Compute reports or CSV exports (files, folders or globs): the digest (device and
    roofs, top kernels with their binding unit, findings with the time at stake: the top one with its
    evidence, source line and the ncu command that verifies it, the others one line each; what the
    reports lack) in `budget` tokens (characters / 4), and the `top` findings (0: all) as data, ranked by
    time at stake, each with its message, line and verify command."""
    from ncu_roof.api import diagnose as run_diagnose

    d = run_diagnose([Path(p) for p in paths], algorithmic=algorithmic, ceilings=ceilings, device=device).diagnosis
    from ncu_roof.render.digest import render_digest

    digest = render_digest(d, budget)
    found = _findings(d)
    out: DiagnoseOut = {"digest": digest, "total_time_s": _clean(d.total_time_s), "findings_total": len(found),
                        "findings": found[:top] if top > 0 else found, "kernels": _kernels(d)[:max(top, 0) or None],
                        "skipped_rules": [{"rule": s.rule, "missing": list(s.missing), "enable": s.enable}
                                          for s in d.skipped], "notes": list(d.notes)}
    return _result(digest, dict(out))


@_cli_errors
def lines(report: str, kernel: str | None = None, top: int = 20) -> LinesOut:
    """One kernel's source lines (Nsight Compute's Source Counters) with their counters summed over its
    launches, hottest first (stall samples, else instructions)."""
    from ncu_roof.cli.lines import kernel_lines

    chosen, launches, shown, sums, _, notes = kernel_lines(Path(report), kernel, top)
    key = "samples" if "samples" in sums else shown[0][0]
    rows = [{"where": str(where), **{c: _clean(row[c]) for c, _ in shown}} for where, row in sums.iterrows()]
    return {"kernel": chosen, "launches": launches, "ranked_by": key, "lines": rows, "notes": notes}


@_cli_errors
def compare(before: str, after: str, mapping: str | None = None) -> CompareOut:
    """Compare two runs (reports, exports, folders; or two PyTorch profiler traces) per kernel and
    region: time, FLOPs, bytes, % of roof, what moved and whether the win matches a finding's stake."""
    from ncu_roof.cli.compare import _traces, compare_trace_paths

    if _traces(before, after):
        return {"text": compare_trace_paths(before, after, "text"),
                "comparison": json.loads(compare_trace_paths(before, after, "json"))}
    from ncu_roof.api import compare as run_compare

    result = run_compare(before, after, mapping=mapping)
    return {"text": result.to_text(width=100), "comparison": json.loads(result.to_json())}


@_cli_errors
def timeline(traces: list[str], reports: list[str] | None = None, device: str | None = None) -> TimelineOut:
    """Measure PyTorch profiler traces or Nsight Systems SQLite exports: GPU busy and idle and why,
    the launch floor, syncs; with `reports`, their findings weighed by their kernels' time in the trace."""
    from ncu_roof.render.timeline import render_text, trace_dict
    from ncu_roof.traces import analyse_traces

    results, notes = analyse_traces([Path(t) for t in traces], [Path(r) for r in reports or []] or None, device)
    return {"text": render_text(results, notes), "traces": [trace_dict(r) for r in results], "notes": list(notes)}


def _records(frame: Any, limit: int) -> RowsOut:
    rows = [_clean(r) for r in frame.head(limit).to_dict(orient="records")]
    return {"columns": [str(c) for c in frame.columns], "rows": rows, "total_rows": len(frame)}


@_cli_errors
def table(paths: list[str], columns: list[str] | None = None, launches: list[int] | None = None,
          kernel: str | None = None, limit: int = ROWS, device: str | None = None) -> RowsOut:
    """Selected columns (tidy-table names, e.g. time_s, dram_bytes, grid_size) of selected launches (by
    ID, or kernel name containing `kernel`) of reports or exports; report, id and kernel always."""
    from ncu_roof.read.table import load_table
    from ncu_roof.schema import nearest

    frame = load_table([Path(p) for p in paths], device)
    keys = [c for c in ("report", "id", "kernel") if c in frame]
    for col in columns or []:
        if col not in frame:
            guess = nearest(col, [str(c) for c in frame.columns])
            raise InputError(f"no column {col!r} in the table" + (f" (did you mean {guess!r}?)" if guess else
                                                                   "; `ncu-roof table` lists them"))
    if launches:
        frame = frame[frame["id"].isin(launches)]
    if kernel:
        frame = frame[frame["kernel"].astype(str).str.contains(kernel, regex=False)]
    chosen = list(dict.fromkeys([*keys, *(columns or [])])) if columns else list(frame.columns)
    return _records(frame[chosen], limit)


@_cli_errors
def query(store: str, sql: str, limit: int = ROWS) -> RowsOut:
    """Read-only SQL (one SELECT) over a store of runs (from `ncu-roof ingest`): the tables runs,
    launches, kernels, findings and ncu_rules."""
    from ncu_roof.store.layout import duckdb
    from ncu_roof.store.query import run_query

    kinds = [s.type for s in duckdb().connect().extract_statements(sql)]
    if len(kinds) != 1 or kinds[0] != duckdb().StatementType.SELECT:
        raise InputError("the query must be one SELECT: the store is read-only here")
    return _records(run_query(Path(store), sql), limit)


@_cli_errors
def capture_plan(paths: list[str], ranks: list[int] | None = None) -> PlanOut:
    """The ncu command lines that re-collect what the findings ranked `ranks` (default [1]) read, one
    launch each; `combined`: one command collecting all of it where they name the same launch (the
    fastest way to tell two causes apart)."""
    from ncu_roof.api import diagnose as run_diagnose

    d = run_diagnose([Path(p) for p in paths]).diagnosis
    wanted = ranks or [1]
    plans = _findings(d, wanted)
    missing = sorted(set(wanted) - {p["rank"] for p in plans})
    if missing:
        raise InputError(f"no finding ranked {', '.join(map(str, missing))}: the diagnosis has {len(d.findings)}")
    verifies = [p["verify"] for p in plans if p["verify"]]
    return {"plans": plans, "combined": _combined(verifies)}


def _combined(verifies: list[Any]) -> str | None:
    """One command for several findings of the same launch: their sections and metrics together."""
    import shlex

    if len(verifies) < 2 or len({(v["kernel"], v["launch_id"]) for v in verifies}) != 1:
        return None
    sections = list(dict.fromkeys(s for v in verifies for s in v["sections"]))
    metrics = list(dict.fromkeys(m for v in verifies for m in v["metrics"]))
    first = verifies[0]["argv"]
    tail = first[first.index("--kernel-name"):]
    argv = ["ncu", *(a for s in sections for a in ("--section", s))]
    argv += ["--metrics", ",".join(metrics)] if metrics else []
    argv += ["--import-source", "yes"] if "SourceCounters" in sections else []
    return shlex.join(argv + tail)


TOOLS = (diagnose, lines, compare, timeline, table, query, capture_plan)


def build_server() -> Any:
    """The server with every tool registered (structured output from each tool's return type)."""
    server = Server("ncu-roof", instructions=(
        "Roofline diagnosis of NVIDIA Nsight Compute reports: call diagnose first (its digest names every "
        "number's source), capture_plan or a finding's verify command before editing, compare after."))
    for tool in TOOLS:
        server.tool(name=tool.__name__, structured_output=True)(tool)
    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client closes it (no progress bars: stdout is the protocol)."""
    from ncu_roof.read.parallel import set_options

    set_options(reader="native", jobs=None, quiet=True)
    build_server().run("stdio")
