"""tests/reportgen.py: byte-exact round trips, replicated launches, written NVTX reports.

Every report written here is read back by NVIDIA's ``ncu_report`` and, where it matters, by the
real ncu (``--import ... --csv --page raw``).
"""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import reportgen
from conftest import ncu_env
from reportgen import LaunchSpec

VECADD = "NVIDIA__nsight-training/CuVectorAddDrv.ncu-rep"
NVTX = "NVIDIA__nsight-training/manual_nvtx.ncu-rep"
FULL = "NCAR__GPU_workshop/MW_Baseline.ncu-rep"
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="session")
def pb(ncu_exe: Path) -> SimpleNamespace:
    """Python modules for the schemas of the unpacked ncu (generated into tests/_generated)."""
    pytest.importorskip("grpc_tools", reason="grpcio-tools is needed to compile ncu's schemas")
    fmt = ncu_exe.parent / "extras" / "FileFormat"
    if not any(fmt.glob("*.proto")):
        pytest.skip(f"ncu's report schemas are absent: no .proto files in {fmt}")
    return reportgen.proto_modules(fmt)


@pytest.fixture(scope="session")
def ncu_report() -> Any:
    return pytest.importorskip("ncu_report", reason="NVIDIA's ncu_report module is not installed")


def _real(realdata: Path, rel: str) -> Path:
    path = realdata / rel
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def _ncu_csv(ncu_exe: Path, report: Path, tmp: Path, *args: str) -> list[dict[str, str]]:
    """``ncu --import report --csv --page raw``: data rows (the units row dropped)."""
    cmd = [str(ncu_exe), "--import", str(report), "--csv", "--page", "raw", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=ncu_env(tmp), timeout=120,
                         check=True)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    return rows[1:]  # the first row after the header holds the units


def _actions(ncu_report: Any, path: Path) -> list[Any]:
    ctx = ncu_report.load_report(str(path))
    assert ctx.num_ranges() == 1
    rng = ctx.range_by_idx(0)
    return [rng.action_by_idx(i) for i in range(rng.num_actions())]


@pytest.mark.parametrize("rel", [VECADD, NVTX, FULL])
def test_read_write_gives_identical_bytes(pb: SimpleNamespace, realdata: Path, rel: str) -> None:
    data = _real(realdata, rel).read_bytes()
    report = reportgen.parse_report(data, pb)
    assert reportgen.encode_report(report) == data
    assert report.header.Version == 7
    assert len(list(report.results())) == {VECADD: 1, NVTX: 3, FULL: 5}[rel]


def test_parse_rejects_what_is_not_a_report(pb: SimpleNamespace, realdata: Path) -> None:
    with pytest.raises(ValueError, match="magic"):
        reportgen.parse_report(b"ID,Kernel Name\n", pb)
    data = _real(realdata, VECADD).read_bytes()
    with pytest.raises(ValueError, match="truncated"):
        reportgen.parse_report(data[: len(data) // 2], pb)


@pytest.fixture(scope="module")
def thousand(pb: SimpleNamespace, realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CuVectorAddDrv's one launch copied 1,000 times."""
    dst = tmp_path_factory.mktemp("replicate") / "vecadd_1000.ncu-rep"
    reportgen.replicate(_real(realdata, VECADD), dst, 1000, pb=pb)
    return dst


def test_replicate_gives_distinct_ids(pb: SimpleNamespace, thousand: Path) -> None:
    results = list(reportgen.read_report(thousand, pb).results())
    assert len(results) == 1000
    assert len({r.KernelID for r in results}) == len({r.APICallID for r in results}) == 1000
    assert {r.KernelFunctionName for r in results} == {"VecAdd_kernel"}


def test_replicate_reads_back_with_ncu_report(ncu_report: Any, thousand: Path) -> None:
    actions = _actions(ncu_report, thousand)
    assert len(actions) == 1000
    assert {a.name() for a in actions} == {"VecAdd_kernel"}
    times = {a.metric_by_name("gpu__time_duration.sum").as_double() for a in actions[::97]}
    assert len(times) == 1  # copies: same numbers


def test_replicate_reads_back_with_ncu(ncu_exe: Path, thousand: Path, tmp_path: Path) -> None:
    rows = _ncu_csv(ncu_exe, thousand, tmp_path)
    assert len(rows) == 1000
    assert [r["ID"] for r in rows] == [str(i) for i in range(1000)]
    assert {r["Kernel Name"] for r in rows} == {"VecAdd_kernel"}


def test_replicate_picks_a_launch(pb: SimpleNamespace, ncu_report: Any, realdata: Path,
                                  tmp_path: Path) -> None:
    dst = tmp_path / "daxpy.ncu-rep"
    reportgen.replicate(_real(realdata, NVTX), dst, 3, index=1, pb=pb)
    actions = _actions(ncu_report, dst)
    assert [a.name() for a in actions] == ["daxpy_kernel"] * 3
    ctx = ncu_report.load_report(str(dst)).range_by_idx(0)
    assert ctx.actions_by_nvtx(["run_test/daxpy"], []) == (0, 1, 2)
    with pytest.raises(IndexError):
        reportgen.replicate(_real(realdata, NVTX), dst, 1, index=3, pb=pb)


SPECS = [
    LaunchSpec("ln_fwd", {"gpu__time_duration.sum": 1500.0, "dram__bytes_read.sum": 4096.0,
                          "dram__bytes_write.sum": 2048,
                          "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6},
               nvtx=["step", "layernorm"], device=H100),
    LaunchSpec("gemm", {"gpu__time_duration.sum": 9000.0}, nvtx=["step", "attn"],
               nvtx_domains={"mylib": ["outer", "inner"]}, device=H100, demangled="gemm(float*)"),
    LaunchSpec("ln_bwd", {"gpu__time_duration.sum": 2500.0}, nvtx=["step", "layernorm", "bwd"],
               device=H100),
    LaunchSpec("plain", {"my__made_up_metric.sum": 7.5}, device=H100),
]


@pytest.fixture(scope="module", params=[VECADD, NVTX])
def written(request: pytest.FixtureRequest, pb: SimpleNamespace, realdata: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SPECS written on a launch without NVTX (CuVectorAddDrv) and one with (manual_nvtx)."""
    dst = tmp_path_factory.mktemp("written") / "specs.ncu-rep"
    reportgen.write_report(dst, SPECS, _real(realdata, request.param), pb=pb)
    return dst


def test_written_launches_and_metrics(ncu_report: Any, written: Path) -> None:
    actions = _actions(ncu_report, written)
    assert [a.name() for a in actions] == ["ln_fwd", "gemm", "ln_bwd", "plain"]
    assert actions[1].name(ncu_report.IAction.NameBase_DEMANGLED) == "gemm(float*)"
    first = actions[0]
    for name, value in SPECS[0].metrics.items():
        assert first.metric_by_name(name).as_double() == value
    assert first.metric_by_name("dram__bytes_write.sum").as_uint64() == 2048
    assert first.metric_by_name("gpu__time_duration.sum").unit() == "ns"
    times = [a.metric_by_name("gpu__time_duration.sum").as_double() for a in actions[1:3]]
    assert times == [9000, 2500]
    assert actions[3].metric_by_name("my__made_up_metric.sum").as_double() == 7.5
    assert actions[0].metric_by_name("my__made_up_metric.sum") is None
    devices = {a.metric_by_name("device__attribute_display_name").as_string() for a in actions}
    assert devices == {H100}


def test_written_nvtx(ncu_report: Any, written: Path) -> None:
    rng = ncu_report.load_report(str(written)).range_by_idx(0)
    assert rng.actions_by_nvtx(["layernorm/"], []) == (0, 2)
    assert rng.actions_by_nvtx(["step/"], []) == (0, 1, 2)
    assert rng.actions_by_nvtx(["step/attn"], []) == (1,)
    assert rng.actions_by_nvtx(["mylib@outer/inner"], []) == (1,)
    state = rng.action_by_idx(1).nvtx_state()
    stacks = {state.domain_by_id(d).name(): tuple(state.domain_by_id(d).push_pop_ranges())
              for d in state.domains()}
    assert stacks == {reportgen.DEFAULT_DOMAIN: ("step", "attn"), "mylib": ("outer", "inner")}
    plain = rng.action_by_idx(3).nvtx_state()
    assert plain is None or not any(plain.domain_by_id(d).push_pop_ranges()
                                    for d in plain.domains())


def test_written_reads_back_with_ncu(ncu_exe: Path, written: Path, tmp_path: Path) -> None:
    rows = _ncu_csv(ncu_exe, written, tmp_path, "--metrics",
                    "gpu__time_duration.sum,device__attribute_display_name")
    # ncu prints the demangled name
    assert [r["Kernel Name"] for r in rows] == ["ln_fwd", "gemm(float*)", "ln_bwd", "plain"]
    assert [float(r["gpu__time_duration.sum"]) for r in rows[:3]] == [1.5, 9.0, 2.5]  # usecond
    assert {r["device__attribute_display_name"] for r in rows} == {H100}
    nvtx = next(k for k in rows[0] if k.startswith("thread Domain:Push/Pop_Range"))
    assert ":layernorm:" in rows[0][nvtx] and ":mylib:" not in rows[0][nvtx]
    assert "mylib:inner:" in rows[1][nvtx]


def test_keep_drops_template_metrics(pb: SimpleNamespace, ncu_report: Any, realdata: Path,
                                     tmp_path: Path) -> None:
    dst = tmp_path / "only.ncu-rep"
    spec = LaunchSpec("k", {"gpu__time_duration.sum": 10.0})
    reportgen.write_report(dst, [spec], _real(realdata, FULL),
                           keep=lambda n: n.startswith("device__"), pb=pb)
    (action,) = _actions(ncu_report, dst)
    assert action.metric_by_name("dram__bytes_read.sum") is None
    assert action.metric_by_name("gpu__time_duration.sum").as_double() == 10.0
    device = action.metric_by_name("device__attribute_display_name").as_string()
    assert device == "Tesla V100-SXM2-32GB"


_FAKE_GET_NCU = """#!/usr/bin/env bash
# get-ncu.sh's order: ncu's executable first, the schemas and target folders after a while
set -e
echo run >> "$1/../script-runs"
L="$1/root/usr/lib/nsight-compute"
mkdir -p "$L" && echo '#!/bin/sh' > "$L/ncu" && chmod +x "$L/ncu"
touch "$1/../started"
sleep 2
mkdir -p "$L/extras/FileFormat" "$L/target" && echo 'syntax = "proto2";' > "$L/extras/FileFormat/A.proto"
echo "$L/ncu"
"""
_ASK = ("import sys; sys.path.insert(0, sys.argv[1]); import ncu_cache; exe = ncu_cache.unpacked_ncu(); "
        "print(exe is not None and exe.is_file() and any(ncu_cache.FILE_FORMAT.rglob('*.proto')))")


def test_a_worker_waits_for_the_unpack_another_has_begun(tmp_path: Path) -> None:
    """Two processes ask for ncu on a machine without it: the second starts while the first's unpack
    has written ncu but not yet the schemas, and must get them whole (it used to find no .proto
    file and skip); the script runs once; an unpack killed midway is done again."""
    import os
    import sys
    import time

    shared = tmp_path / "shared"
    (shared / "tools").mkdir(parents=True)
    (shared / "tools" / "get-ncu.sh").write_text(_FAKE_GET_NCU)
    env = dict(os.environ, NCU_ROOF_SHARED=str(shared), NCU_ROOF_NCU_DIR=str(tmp_path / "cache" / "ncu"))
    tests = str(Path(__file__).resolve().parent)

    def ask() -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", _ASK, tests], env=env, stdout=subprocess.PIPE, text=True)

    first = ask()
    deadline = time.monotonic() + 60
    while not (tmp_path / "cache" / "started").exists():
        assert time.monotonic() < deadline and first.poll() is None, "the unpack did not start"
        time.sleep(0.05)
    second = ask()  # ncu is there now, its schemas are not
    assert [p.communicate(timeout=60)[0].strip() for p in (first, second)] == ["True", "True"]
    assert (tmp_path / "cache" / "script-runs").read_text().count("run") == 1

    lib = tmp_path / "cache" / "ncu" / "root" / "usr" / "lib" / "nsight-compute"
    (tmp_path / "cache" / "ncu" / ".unpacked").unlink()  # as if killed after ncu, before the schemas
    (lib / "extras" / "FileFormat" / "A.proto").unlink()
    assert ask().communicate(timeout=60)[0].strip() == "True"
    assert (tmp_path / "cache" / "script-runs").read_text().count("run") == 2
