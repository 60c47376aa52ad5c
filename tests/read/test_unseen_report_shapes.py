"""Inputs shaped like reports and exports the project has not seen (other GPUs, ncu 2020.3-2026.2).

Look-alikes of the files ../shared/realdata/MANIFEST.md describes but does not ship: .ncu-rep
files written with tests/reportgen.py on a real template (skipped where realdata, ncu's schemas
or ``ncu_report`` are absent), and CSV exports written into ``tmp_path``. Every tidy value is
checked against a number computed here by hand; unknowns must be NaN, ``diagnose`` must exit 0
(or 2 with one line for garbage), and the JSON must hold every key of issue 3's schema.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import ncu_roof
from ncu_roof.cli import main

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "fixtures" / "synthetic"
TEMPLATE = "NVIDIA__nsight-training/CuVectorAddDrv.ncu-rep"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"
HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
        '"Grid Size","Device","CC",')
LONG_HEAD = HEAD + '"Section Name","Metric Name","Metric Unit","Metric Value"'


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``ncu-roof`` in-process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


def diagnose_json(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> dict[str, Any]:
    code, out, err = cli(capsys, "diagnose", str(path), "--format", "json", *extra)
    assert code == 0, err
    doc = json.loads(out)
    check_schema(doc)
    return doc


def check_schema(doc: dict[str, Any]) -> None:
    """Issue 3's contract: every listed key present; unknown numbers null (never 0 or NaN)."""
    assert doc["schema"] == "ncu-roof/diagnose/1"
    for key in ("kernels", "regions", "findings"):
        assert isinstance(doc[key], list)
    for k in doc["kernels"]:
        for key in ("id", "report", "kernel", "device", "time_s", "flops", "bytes", "intensity",
                    "roof", "bound", "algorithmic", "missing"):
            assert key in k, key
        assert set(k["flops"]) >= {"fp64", "fp32", "fp16", "tensor", "total"}
        assert set(k["bytes"]) >= {"dram", "l2", "l1", "shared"}
        assert set(k["intensity"]) >= {"dram", "l2", "l1"}
        assert set(k["roof"]) >= {"compute", "peak_flops_per_s", "dram_bytes_per_s",
                                  "attainable_flops_per_s", "pct_of_roof", "source"}
        assert k["bound"] in ("memory", "compute", "latency", "overhead", "unknown")
        assert isinstance(k["missing"], list)
        if k["time_s"] is None:
            assert k["bound"] == "unknown" and "time_s" in k["missing"]
    for r in doc["regions"]:
        for key in ("name", "kernels", "time_s", "flops", "bytes", "algorithmic", "extra_bytes_factor",
                    "ideal_time_s", "time_at_stake_s"):
            assert key in r, key
    for f in doc["findings"]:
        for key in ("rule", "kernels", "region", "severity", "message", "time_at_stake_s"):
            assert key in f, key
    text = json.dumps(doc)
    assert "NaN" not in text and "Infinity" not in text


def one_row(path: Path) -> pd.DataFrame:
    return ncu_roof.load([str(path)])


def close(a: object, b: float) -> bool:
    return isinstance(a, int | float) and math.isclose(float(a), b, rel_tol=1e-9)


def nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


# --------------------------------------------------------------------------- .ncu-rep look-alikes


@pytest.fixture(scope="module")
def rep(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A writer of .ncu-rep look-alikes on the RTX 3070 vecadd template (launch and device
    attributes kept, every other template metric dropped)."""
    from conftest import REALDATA

    template = REALDATA / TEMPLATE
    if not template.is_file():
        pytest.skip(f"real reports not available: {template} is absent")
    reportgen = pytest.importorskip("reportgen", reason="tests/reportgen.py needs grpcio-tools and protobuf")
    pytest.importorskip("ncu_report", reason="NVIDIA's ncu_report module is not installed")
    try:
        pb = reportgen.proto_modules()
    except Exception as exc:  # noqa: BLE001 - no ncu schemas here: say why and skip
        pytest.skip(f"cannot build the .ncu-rep protobuf modules: {exc}")
    folder = tmp_path_factory.mktemp("unseen_rep")

    def write(name: str, launches: list[Any], keep_launch: bool = True) -> Path:
        def keep(metric: str) -> bool:
            return metric.startswith("device__attribute") or (keep_launch and metric.startswith("launch__"))

        path = folder / f"{name}.ncu-rep"
        reportgen.write_report(path, launches, template, keep=keep, pb=pb)
        return path

    def replicate(name: str, n: int) -> Path:
        path = folder / f"{name}.ncu-rep"
        reportgen.replicate(template, path, n, pb=pb)
        return path

    write.spec = reportgen.LaunchSpec  # type: ignore[attr-defined]
    write.replicate = replicate  # type: ignore[attr-defined]
    return write


def test_rep_blackwell_consumer_op_read_write(rep: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = rep("rtx5070", [rep.spec("saxpy", {  # 12 MB in 20 us: 600 GB/s, under the card's 672 GB/s
        "gpu__time_duration.sum": 20_000.0, "dram__bytes_op_read.sum": 8e6, "dram__bytes_op_write.sum": 4e6,
        FFMA: 1e6, FADD: 0.0, FMUL: 0.0}, device="NVIDIA GeForce RTX 5070")])
    row = one_row(path).iloc[0]
    assert row["device"] == "NVIDIA GeForce RTX 5070"
    assert close(row["time_s"], 2e-5)
    assert close(row["dram_bytes"], 12e6) and close(row["dram_read_bytes"], 8e6)
    assert close(row["flops_fp32"], 2e6)
    assert nan(row["flops_fp64"]) and nan(row["l2_bytes"]) and nan(row["l1_bytes"])
    k = diagnose_json(capsys, path)["kernels"][0]
    assert close(k["bytes"]["dram"], 12e6) and close(k["intensity"]["dram"], 2e6 / 12e6)
    assert k["bytes"]["l2"] is None and k["flops"]["fp64"] is None


def test_rep_rates_only_with_time_avg(rep: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Only .per_second / .per_cycle_elapsed forms and gpu__time_duration.avg (no .sum)."""
    path = rep("rates", [rep.spec("k", {
        "gpu__time_duration.avg": 5_000.0, "dram__bytes.sum.per_second": 4e11,
        "smsp__cycles_elapsed.avg.per_second": 1.5e9, f"{FFMA}.per_cycle_elapsed": 100.0,
        f"{FADD}.per_cycle_elapsed": 10.0, f"{FMUL}.per_cycle_elapsed": 5.0})])
    row = one_row(path).iloc[0]
    assert close(row["time_s"], 5e-6) and row["time_s_src"] == "gpu__time_duration.avg"
    assert close(row["dram_bytes"], 4e11 * 5e-6)  # 2,000,000 B
    assert close(row["smsp_cycles"], 1.5e9 * 5e-6)  # 7,500 cycles
    assert close(row["flops_fp32"], (2 * 100 + 10 + 5) * 7_500)  # 1,612,500
    k = diagnose_json(capsys, path)["kernels"][0]
    assert close(k["time_s"], 5e-6) and close(k["bytes"]["dram"], 2e6)


def test_rep_scheduler_stats_only(rep: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """prof4-like: only scheduler/warp-state metrics, no time, no bytes, no launch attributes."""
    path = rep("sched", [rep.spec("k", {"smsp__issue_active.avg.pct_of_peak_sustained_active": 42.0,
                                        "smsp__warps_eligible.avg.per_cycle_active": 1.5})], keep_launch=False)
    row = one_row(path).iloc[0]
    for col in ("time_s", "dram_bytes", "l2_bytes", "l1_bytes", "flops", "flops_fp32", "grid_size"):
        assert nan(row[col]), col
    assert row["missing"] == "time_s,dram_bytes,l2_bytes,l1_bytes,flops"
    k = diagnose_json(capsys, path)["kernels"][0]
    assert k["time_s"] is None and k["bound"] == "unknown" and k["roof"]["pct_of_roof"] is None


def test_rep_nan_values_stay_unknown(rep: Any, capsys: pytest.CaptureFixture[str]) -> None:
    nan_ = float("nan")
    path = rep("nan", [
        rep.spec("a", {"gpu__time_duration.sum": nan_, "dram__bytes_read.sum": 100.0, "dram__bytes_write.sum": nan_,
                       FFMA: nan_, FADD: 3.0, FMUL: 0.0}),
        rep.spec("b", {"gpu__time_duration.sum": 1_000.0, "dram__bytes_read.sum": 100.0,
                       "dram__bytes_write.sum": 50.0, FFMA: 4.0, FADD: 3.0, FMUL: 0.0}),
    ])
    df = one_row(path)
    a, b = df.iloc[0], df.iloc[1]
    assert nan(a["time_s"]) and nan(a["dram_bytes"]) and nan(a["flops_fp32"])
    assert close(b["time_s"], 1e-6) and close(b["dram_bytes"], 150.0) and close(b["flops_fp32"], 11.0)
    doc = diagnose_json(capsys, path)
    ka = next(k for k in doc["kernels"] if k["kernel"] == "a")
    assert ka["time_s"] is None and ka["bytes"]["dram"] is None and ka["flops"]["fp32"] is None


def test_rep_two_thousand_launches(rep: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = rep.replicate("big", 2_000)
    df = one_row(path)
    assert len(df) == 2_000 and df["id"].is_unique
    assert df["time_s"].notna().all() and df["time_s"].nunique() == 1
    doc = diagnose_json(capsys, path)
    assert len(doc["kernels"]) == 2_000
    assert math.isclose(doc["total_time_s"], df["time_s"].sum(), rel_tol=1e-9)


# --------------------------------------------------------------------------- CSV look-alikes


def write(tmp_path: Path, name: str, text: str, *, bom: bool = False, crlf: bool = False) -> Path:
    path = tmp_path / name
    if crlf:
        text = text.replace("\n", "\r\n")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def long_rows(id_: int, kernel: str, rows: list[tuple[str, str, str, str]], cc: str = "7.5",
              grid: str = "(80, 1, 1)", trailing: str = "") -> str:
    ident = (f'"{id_}","4242","app","host","{kernel}","1","7","(128, 1, 1)","{grid}","0","{cc}",')
    return "".join(f'{ident}"{s}","{m}","{u}","{v}"{trailing}\n' for s, m, u, v in rows)


def test_csv_raw_page_with_label_headers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A raw page whose metric columns are display labels (as --print-metric-name label would write)."""
    text = (HEAD + '"Duration","DRAM Throughput","SM Frequency","dram__bytes_read.sum","dram__bytes_write.sum"\n'
            + ',,,,,,,,,,,"usecond","%","cycle/nsecond","Kbyte","byte"\n'
            + '"0","1","app","h","void k<int>(int *)","1","7","(256, 1, 1)","(40, 1, 1)","0","8.6",'
              '"12.50","61.20","1.41","1,536.25","512"\n')
    row = one_row(write(tmp_path, "raw_labels.csv", text)).iloc[0]
    assert row["kernel"] == "k"
    assert close(row["time_s"], 12.5e-6) and close(row["dram_throughput_pct"], 61.2)
    assert close(row["sm_clock_hz"], 1.41e9)
    assert close(row["dram_bytes"], 1_536_250.0 + 512.0)
    assert close(row["grid_size"], 40.0) and close(row["block_size"], 256.0)
    assert nan(row["flops_fp32"])
    diagnose_json(capsys, tmp_path / "raw_labels.csv")


def test_csv_details_t4_labels_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """copy_blocked-like: basic-set details with rule columns, only Duration/DRAM Throughput labels."""
    head = LONG_HEAD + ',"Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"\n'
    kernel = ("copy_blocked[v1,cw51cXTLSUwv1sDUaKthrqNgqqmjgOR3W3CwAkMXLaJtQYkOIgxJU0gQqO0Acig2BEzBUg_3d]"
              "(Array<long long, 1, C, mutable, aligned>)")
    body = long_rows(0, kernel.replace('"', '""'), [
        ("GPU Speed Of Light Throughput", "DRAM Frequency", "hz", "5,000,000,000"),
        ("GPU Speed Of Light Throughput", "SM Frequency", "hz", "585,000,000"),
        ("GPU Speed Of Light Throughput", "DRAM Throughput", "%", "83.17"),
        ("GPU Speed Of Light Throughput", "Duration", "ns", "1,234,560"),
        ("Launch Statistics", "Grid Size", "", "80"),  # = the (80, 1, 1) of the row: validation holds them equal
        ("Launch Statistics", "Waves Per SM", "", "51.20"),
    ], trailing=",")
    rule = ('"0","4242","app","host","x","1","7","(128, 1, 1)","(80, 1, 1)","0","7.5","SpeedOfLight","","","",'
            '"SOLBottleneck","OPT","Memory is ""busy"", see below","global","12.5"\n')
    path = write(tmp_path, "t4_details.csv", head + body + rule)
    row = one_row(path).iloc[0]
    assert row["kernel"].startswith("copy_blocked")  # numba names keep their [...] suffix
    assert close(row["time_s"], 1.23456e-3) and close(row["dram_throughput_pct"], 83.17)
    assert close(row["sm_clock_hz"], 585e6) and close(row["dram_clock_hz"], 5e9)
    assert close(row["grid_size"], 80.0) and close(row["waves"], 51.2)
    for col in ("dram_bytes", "l2_bytes", "l1_bytes", "flops", "flops_fp32"):
        assert nan(row[col]), col
    k = diagnose_json(capsys, path, "--device", "Tesla T4")["kernels"][0]
    assert k["device"] == "Tesla T4" and k["bytes"]["dram"] is None and k["flops"]["total"] is None
    diagnose_json(capsys, path)  # without --device too


@pytest.mark.parametrize("mode", ["label", "name", "label-name"])
def test_csv_details_print_metric_name(tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    """`--page details --print-metric-name label|name|label-name` (ncu 2024.1 ids for the SOL labels);
    the DRAM rate comes from Memory Workload Analysis's "Memory Throughput" in byte/s."""
    metrics = [("Duration", "gpu__time_duration.sum", "usecond", "11.36"),
               ("DRAM Throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", "25.40"),
               ("SM Frequency", "gpc__cycles_elapsed.avg.per_second", "cycle/usecond", "784.24"),
               ("Memory Throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%",
                "30.10"),
               ("Memory Throughput", "dram__bytes.sum.per_second", "Gbyte/second", "138.48")]

    def shown(label: str, metric: str) -> str:
        return {"label": label, "name": metric, "label-name": f"{label} ({metric})"}[mode]

    body = long_rows(0, "set_halo_values_x_396_gpu", [
        ("GPU Speed Of Light Throughput" if i < 4 else "Memory Workload Analysis", shown(lab, met), unit, val)
        for i, (lab, met, unit, val) in enumerate(metrics)], cc="7.0")
    path = write(tmp_path, f"details_{mode}.csv", LONG_HEAD + ",\n" + body.replace("\n", ",\n"))
    row = one_row(path).iloc[0]
    assert close(row["time_s"], 11.36e-6)
    assert close(row["dram_throughput_pct"], 25.40) and close(row["memory_throughput_pct"], 30.10)
    assert close(row["sm_clock_hz"], 784.24e6)
    assert close(row["dram_bytes"], 138.48e9 * 11.36e-6)  # 1,573,132.8 B
    diagnose_json(capsys, path, "--device", "Tesla V100-SXM2-32GB")


def test_csv_metrics_stdout_signal_lines_print_fp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Gardenia share_tile-like stdout: ==PROF== Received signal / Trying to shutdown lines, program
    output, --print-fp values (``.00`` on counters, with and without separators), BOM and CRLF."""
    pre = ("==PROF== Connected to process 1234 (/home/u/share_tile)\n"
           "matrix 1024 x 1024, tile 32 ✓\n"
           "==PROF== Profiling \"gemm_v2\" - 0: 0%....50%....100% - 9 passes\n"
           "==PROF== Received signal 2\n"
           "==PROF== Trying to shutdown target application\n"
           "==PROF== Disconnected from process 1234\n")
    section = "Command line profiler metrics"
    k0 = long_rows(0, "gemm_v2(float *, float *, float *, int)", [
        (section, "dram__bytes_read.sum", "byte", "16,840,298,332,000.00"),
        (section, "dram__bytes_write.sum", "Mbyte", "4.19"),
        (section, "gpu__time_duration.sum", "msecond", "2.50"),
        (section, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "1073741824.00"),
        (section, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "0.00"),
        (section, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", "2,048.00"),
        (section, "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", "inst", "0.00"),
    ], cc="8.0", grid="(32, 32, 1)")
    k1 = long_rows(1, "randomInit(float *, int)", [
        (section, "gpu__time_duration.sum", "usecond", "7.04"),
        (section, "dram__bytes_read.sum", "byte", "0.00"),
        (section, "dram__bytes_write.sum", "byte", "4194304.00"),
    ], cc="8.0")
    tail = "==PROF== Received signal 15\n==PROF== Trying to shutdown target application\n"
    path = write(tmp_path, "share_tile.csv", pre + LONG_HEAD + "\n" + k0 + k1 + tail, bom=True, crlf=True)
    df = one_row(path)
    assert list(df["id"]) == [0, 1]
    a, b = df.iloc[0], df.iloc[1]
    assert close(a["dram_bytes"], 16_840_298_332_000.0 + 4.19e6)  # implausible, read as printed
    assert close(a["time_s"], 2.5e-3) and close(a["flops_fp32"], 2 * 1_073_741_824 + 2_048)
    assert nan(a["flops_fp64"])  # dadd/dmul not captured: unknown, not 0
    assert a["cc"] == "8.0" and close(a["grid_size"], 1024.0)
    assert close(b["time_s"], 7.04e-6) and close(b["dram_bytes"], 4_194_304.0) and nan(b["flops_fp32"])
    diagnose_json(capsys, path, "--device", "NVIDIA A100-SXM4-40GB")


def test_csv_metrics_stdout_without_separators(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """robogoat-like H100 stdout: plain numbers, base units, the GPU printed by the program."""
    section = "Command line profiler metrics"
    pre = ("==PROF== Connected to process 77 (/w/bench)\nDetected GPU: NVIDIA H100 80GB HBM3\n"
           "==PROF== Disconnected from process 77\n")
    body = long_rows(0, "void add<float>(float const*, float const*, float*, int)", [
        (section, "dram__bytes_read.sum", "byte", "25165824"),
        (section, "dram__bytes_write.sum", "byte", "12582912"),
        (section, "gpu__time_duration.sum", "ns", "187500"),
        (section, FADD, "inst", "4194304"),
        (section, FFMA, "inst", "0"),
        (section, FMUL, "inst", "0"),
    ], cc="9.0")
    path = write(tmp_path, "robogoat.csv", pre + LONG_HEAD + "\n" + body)
    row = one_row(path).iloc[0]
    assert row["device"] == "NVIDIA H100 80GB HBM3" and row["kernel"] == "add"
    assert close(row["time_s"], 1.875e-4) and close(row["dram_bytes"], 37_748_736.0)
    assert close(row["flops_fp32"], 4_194_304.0)
    k = diagnose_json(capsys, path)["kernels"][0]
    assert close(k["intensity"]["dram"], 4_194_304 / 37_748_736)
    assert k["roof"]["peak_flops_per_s"] is not None  # device table: H100


def test_csv_raw_units_row_bom_and_odd_kernel_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Raw page with BOM + units row; kernel names with doubled quotes, commas, a newline, non-ASCII."""
    names = ['void ns::k<Pair<int, "a,b">>(float *)', "void unnamed>::gemm_tiled_kernel<32>(const float *)",
             "kernel_µ✓(float *)", "multi\nline(int)"]
    head = HEAD + '"gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum","launch__grid_size"\n'
    units = ',,,,,,,,,,,"nsecond","byte","byte",\n'
    rows = "".join(f'"{i}","1","a.exe","h","{n.replace(chr(34), 2 * chr(34))}","1","7","(32, 1, 1)",'
                   f'"({10 * (i + 1)}, 1, 1)","0","12.0","{1000 * (i + 1)}","{2048 * (i + 1)}","1024",'
                   f'"{10 * (i + 1)}"\n' for i, n in enumerate(names))
    path = write(tmp_path, "odd_names.csv", head + units + rows, bom=True, crlf=True)
    df = one_row(path)
    assert len(df) == 4
    assert list(df["kernel"])[:3] == ["k", "gemm_tiled_kernel", "kernel_µ✓"]
    assert df["kernel"].iloc[3].startswith("multi") and df["kernel"].iloc[3].endswith("line")  # kept whole
    assert df["kernel_demangled"].iloc[0] == names[0]
    for i in range(4):
        assert close(df["time_s"].iloc[i], 1e-6 * (i + 1))
        assert close(df["dram_bytes"].iloc[i], 2048.0 * (i + 1) + 1024.0)
        assert close(df["grid_size"].iloc[i], 10.0 * (i + 1))
    assert df["flops"].isna().all()
    doc = diagnose_json(capsys, path, "--device", "NVIDIA GeForce RTX 5070")
    assert len(doc["kernels"]) == 4


@pytest.mark.parametrize("content", [
    b"\x00\x01\x02garbage\xff\xfe" * 50,
    b"==PROF== Connected to process 1\n==ERROR== The application returned an error code (1).\n",
    b"Time(%),Time,Calls,Avg,Min,Max,Name\n12.5,1ms,1,1ms,1ms,1ms,k\n",
])
@pytest.mark.parametrize("suffix", [".csv", ".ncu-rep"])
def test_garbage_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
                                     suffix: str) -> None:
    path = tmp_path / f"junk{suffix}"
    path.write_bytes(content)
    code, _, err = cli(capsys, "diagnose", str(path))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncu-roof: error: ") and "Traceback" not in err
