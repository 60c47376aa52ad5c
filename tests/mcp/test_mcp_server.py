"""``ncu-roof mcp`` through the MCP SDK's own client: ``python -m ncu_roof mcp`` started as a subprocess
over stdio, its tools listed and each called on real inputs from ../shared/realdata; the answers are
the CLI's (``diagnose --format json``, ``table``, ``query``, ``compare``), and a failure is an error
result carrying the line the CLI prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'ncu-roof[mcp]'")

import anyio  # noqa: E402 - the SDK's own dependency
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"diagnose", "lines", "compare", "timeline", "table", "query", "capture_plan"}


def _structured(result: Any) -> Any:
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _schema(tool: Any) -> Any:
    return getattr(tool, "output_schema", None) or getattr(tool, "outputSchema", None)


async def _session(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "ncu_roof", "mcp"], cwd=str(ROOT))
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def served(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One server session: every tool called once on real inputs (and one call that fails)."""
    store = tmp_path_factory.mktemp("store") / "runs"
    coalda = realdata / "Alaric617R__COALDA"
    cutlass = realdata / "panjd123__cutlass"
    ingest = _cli("ingest", str(coalda), "--store", str(store), "-q")
    assert ingest.returncode == 0, ingest.stderr
    trace = next((realdata / "facebookresearch__HolisticTraceAnalysis").glob("ns_resolution_trace__*.json.gz"))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("diagnose", {"paths": [str(cutlass)], "top": 0}),
        ("diagnose", {"paths": [str(coalda)], "top": 0, "budget": 1500}),
        ("lines", {"report": str(cutlass / "report-s4.ncu-rep"), "kernel": "Kernel", "top": 3}),
        ("compare", {"before": str(coalda / "uncoalesced_chart.ncu-rep"),
                     "after": str(coalda / "coalesced_chart.ncu-rep")}),
        ("timeline", {"traces": [str(trace)]}),
        ("table", {"paths": [str(coalda)], "columns": ["time_s", "dram_bytes", "grid_size"]}),
        ("query", {"store": str(store), "sql": "SELECT kernel, time_s FROM kernels ORDER BY time_s DESC"}),
        ("capture_plan", {"paths": [str(cutlass)], "ranks": [1, 2]}),
        ("diagnose", {"paths": [str(realdata / "no-such-report.ncu-rep")]}),
        ("query", {"store": str(store), "sql": "COPY (SELECT 1) TO 'x.csv'"}),
    ]
    tools, results = anyio.run(_session, calls)
    return {"tools": tools, "results": results, "store": store, "coalda": coalda, "cutlass": cutlass}


def test_lists_every_tool_with_an_output_schema(served: dict[str, Any]) -> None:
    tools = {t.name: t for t in served["tools"]}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        schema = _schema(tool)
        assert schema and schema.get("type") == "object" and schema.get("properties"), name


@pytest.mark.parametrize("call", [0, 1])
def test_diagnose_has_the_cli_json_findings_and_stakes(served: dict[str, Any], call: int) -> None:
    result = served["results"][call]
    assert not _is_error(result)
    path = served["cutlass"] if call == 0 else served["coalda"]
    cli = _cli("diagnose", str(path), "--format", "json", "-q")
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)["findings"]
    got = _structured(result)
    assert got["findings_total"] == len(expected) > 0
    assert [(f["rule"], f["kernels"], f["ids"], f["report"]) for f in got["findings"]] == \
        [(f["rule"], f["kernels"], f["ids"], f["report"]) for f in expected]
    assert [f["time_at_stake_s"] for f in got["findings"]] == pytest.approx([f["time_at_stake_s"] for f in expected])
    assert [f["verify"]["command"] for f in got["findings"]] == [f["verify"]["command"] for f in expected]
    # the text the model reads is the digest, in its budget
    text = result.content[0].text
    assert text == got["digest"] and text.startswith("# ncu-roof digest")
    assert len(text) <= 4 * (1500 if call == 1 else 2000)


def test_diagnose_names_the_top_finding_of_the_cutlass_report(served: dict[str, Any]) -> None:
    top = _structured(served["results"][0])["findings"][0]
    assert (top["rule"], top["kernels"], top["ids"]) == ("grid-underfill", ["Kernel<Gemm>"], [0])
    assert top["time_at_stake_s"] == pytest.approx(8.9e-6, rel=0.01)
    assert top["verify"]["kernel"] == "Kernel" and top["verify"]["launch_skip"] == 0
    assert "LaunchStats" in top["verify"]["sections"]


def test_lines_match_the_cli(served: dict[str, Any]) -> None:
    got = _structured(served["results"][2])
    assert (got["kernel"], got["launches"], got["ranked_by"]) == ("Kernel", 1, "samples")
    assert [(x["where"], x["samples"]) for x in got["lines"]] == [
        ("mma_multistage.h:490", 16), ("mma_sm80.h:842", 15), ("device_kernel.h:71", 6)]
    cli = _cli("lines", str(served["cutlass"] / "report-s4.ncu-rep"), "-k", "Kernel", "--top", "3")
    assert [line.split()[0] for line in cli.stdout.splitlines()[2:]] == [x["where"] for x in got["lines"]]


def test_compare_is_the_cli_json(served: dict[str, Any]) -> None:
    got = _structured(served["results"][3])
    coalda = served["coalda"]
    cli = _cli("compare", str(coalda / "uncoalesced_chart.ncu-rep"), str(coalda / "coalesced_chart.ncu-rep"),
               "--format", "json", "-q")
    assert got["comparison"] == json.loads(cli.stdout)
    assert got["text"].strip()


def test_timeline_measures_the_trace(served: dict[str, Any]) -> None:
    got = _structured(served["results"][4])
    assert len(got["traces"]) == 1
    tl = got["traces"][0]["timeline"]
    assert tl["span_s"] == pytest.approx(0.480029179) and tl["launches"] == 4350
    assert tl["gpu_busy_s"] + tl["gpu_idle_s"] == pytest.approx(tl["span_s"])
    trace = got["traces"][0]["trace"]
    cli = json.loads(_cli("timeline", trace, "--format", "json").stdout)
    assert got["traces"] == cli["traces"]


def test_table_selects_columns_of_every_launch(served: dict[str, Any]) -> None:
    got = _structured(served["results"][5])
    assert got["columns"] == ["report", "id", "kernel", "time_s", "dram_bytes", "grid_size"]
    assert got["total_rows"] == len(got["rows"]) == 6
    cli = json.loads(_cli("table", str(served["coalda"]), "--format", "json", "-q").stdout)
    mine = sorted((r["kernel"], r["time_s"], r["grid_size"]) for r in got["rows"])
    theirs = sorted((r["kernel"], r["time_s"], r["grid_size"]) for r in cli)
    assert [k for k, _, _ in mine] == [k for k, _, _ in theirs]
    assert [x for _, t, g in mine for x in (t, g)] == pytest.approx([x for _, t, g in theirs for x in (t, g)],
                                                                   rel=1e-12)


def test_query_reads_the_store(served: dict[str, Any]) -> None:
    got = _structured(served["results"][6])
    cli = json.loads(_cli("query", "SELECT kernel, time_s FROM kernels ORDER BY time_s DESC", "--store",
                          str(served["store"]), "--format", "json").stdout)
    assert [r["kernel"] for r in got["rows"]] == [r["kernel"] for r in cli]
    assert [r["time_s"] for r in got["rows"]] == pytest.approx([r["time_s"] for r in cli], rel=1e-12)
    assert got["rows"][0]["kernel"] == "rgb_increase_brightness_unroll"


def test_capture_plan_combines_two_causes_of_one_launch(served: dict[str, Any]) -> None:
    got = _structured(served["results"][7])
    assert [p["rank"] for p in got["plans"]] == [1, 2]
    assert [p["rule"] for p in got["plans"]] == ["grid-underfill", "warp-stalls"]
    combined = got["combined"]
    for section in ("LaunchStats", "WarpStateStats"):
        assert f"--section {section}" in combined
    assert "SourceCounters" not in combined  # a CUTLASS kernel: no lines of its machine code are pointed at
    assert "--kernel-name 'regex:^Kernel$' --launch-skip 0 --launch-count 1" in combined


def test_errors_carry_the_cli_line(served: dict[str, Any], realdata: Path) -> None:
    result = served["results"][8]
    assert _is_error(result)
    cli = _cli("diagnose", str(realdata / "no-such-report.ncu-rep"))
    assert cli.returncode == 2
    assert result.content[0].text == cli.stderr.strip()
    refused = served["results"][9]
    assert _is_error(refused)
    assert refused.content[0].text == "ncu-roof: error: the query must be one SELECT: the store is read-only here"
    assert not (served["store"].parent / "x.csv").exists() and not (ROOT / "x.csv").exists()
