"""ncu-roof capture: the command builder, the metric set against ncu's catalogue, the failure paths.

Without a GPU the real ncu (Debian's 2024.1.1) stops before the script runs; fake ``ncu``
executables stand in for what only a GPU machine prints (ERR_NVGPUCTRPERM, passes, a report).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from conftest import ROOT, ncu_env
from typer.testing import CliRunner

from ncu_roof import capture as cap
from ncu_roof.cli import capture as capture_cmd
from ncu_roof.errors import CaptureError, InputError
from ncu_roof.read.metrics import capture_metrics, quantity, sources_of

# Every chip ncu 2024.1.1 knows (`ncu --list-chips`) and its compute capability.
CHIP_CC: dict[str, tuple[int, int]] = {
    "gv100": (7, 0), "gv11b": (7, 2),
    "tu102": (7, 5), "tu104": (7, 5), "tu106": (7, 5), "tu116": (7, 5), "tu117": (7, 5),
    "ga100": (8, 0), "ga102": (8, 6), "ga103": (8, 6), "ga104": (8, 6), "ga106": (8, 6), "ga107": (8, 6),
    "ga10b": (8, 7),
    "ad102": (8, 9), "ad103": (8, 9), "ad104": (8, 9), "ad106": (8, 9), "ad107": (8, 9),
    "gh100": (9, 0),
}
REQUIRED_CHIPS = ("gv100", "tu102", "ga100", "ga102", "ad102", "gh100")
# Not hardware counters, so absent from --query-metrics: launch attributes and occupancy come from
# the stock section files; device attributes are stored with every result of a report.
DEVICE_ATTRIBUTES = {"device__attribute_display_name", "device__attribute_multiprocessor_count",
                     "device__attribute_clock_rate"}


def _opts(**kw: object) -> cap.CaptureOptions:
    base: dict[str, object] = dict(script=Path("work/saxpy.py"), report=Path("out/saxpy"), ncu=Path("/opt/ncu"),
                                   python=Path("/usr/bin/python3"), cc=(9, 0))
    base.update(kw)
    return cap.CaptureOptions(**base)  # type: ignore[arg-type]


# --- the command builder --------------------------------------------------------------------
def test_build_command_exact_argv() -> None:
    opts = _opts(script_args=("--n", "1 000"), kernel_name="regex:^sax", launch_skip=2, launch_count=5,
                 replay_mode="application", cache_control="none", clock_control="none",
                 ncu_args=("--set", "full"))
    metrics = ",".join(capture_metrics((9, 0)).metrics)
    assert cap.build_ncu_command(opts) == [
        "/opt/ncu", "--metrics", metrics, "--section", "SourceCounters", "--import-source", "yes",
        "--nvtx", "--target-processes", "all",
        "--replay-mode", "application", "--cache-control", "none", "--clock-control", "none",
        "--kernel-name", "regex:^sax", "--launch-skip", "2", "--launch-count", "5",
        "--export", "out/saxpy.ncu-rep", "--set", "full",
        "/usr/bin/python3", "work/saxpy.py", "--n", "1 000",
    ]


def test_build_command_defaults_and_force() -> None:
    cmd = cap.build_ncu_command(_opts())
    assert cmd[7:16] == ["--nvtx", "--target-processes", "all", "--replay-mode", "kernel",
                         "--cache-control", "all", "--clock-control", "base"]
    assert "--force-overwrite" not in cmd and "--kernel-name" not in cmd and "--launch-count" not in cmd
    forced = cap.build_ncu_command(_opts(force=True, report=Path("r.ncu-rep")))
    i = forced.index("--export")
    assert forced[i:i + 3] == ["--export", "r.ncu-rep", "--force-overwrite"]
    assert all(isinstance(a, str) for a in forced)
    assert cap.build_ncu_command(_opts()) == cmd  # pure: same options, same argv


def test_report_path_appends_suffix() -> None:
    assert cap.report_path("a/b") == Path("a/b.ncu-rep")
    assert cap.report_path(Path("a/b.ncu-rep")) == Path("a/b.ncu-rep")
    assert cap.report_path("run.v2") == Path("run.v2.ncu-rep")
    assert cap.default_report(Path("k/saxpy.py")) == Path("saxpy.ncu-rep")


def test_capture_env_sets_c_locale() -> None:
    base = {"LC_ALL": "de_DE.UTF-8", "PATH": "/bin"}
    env = cap.capture_env(base)
    assert env["LC_ALL"] == "C" and env["PYTHONUNBUFFERED"] == "1" and env["PATH"] == "/bin"
    assert base["LC_ALL"] == "de_DE.UTF-8"


@pytest.mark.parametrize(("text", "cc"), [("9.0", (9, 0)), ("8.6", (8, 6)), ("90", (9, 0)), ("sm_89", (8, 9)),
                                          ("10.0", (10, 0))])
def test_parse_cc(text: str, cc: tuple[int, int]) -> None:
    assert cap.parse_cc(text) == cc


def test_parse_cc_bad() -> None:
    with pytest.raises(InputError, match=r"^bad compute capability 'hopper': write it like 9.0"):
        cap.parse_cc("hopper")


# --- the metric set -------------------------------------------------------------------------
ROOFLINE_QUANTITIES = (
    "time_s", "sm_clock_hz", "smsp_clock_hz", "dram_clock_hz", "lts_clock_hz", "l1tex_clock_hz",
    "sm_cycles", "smsp_cycles", "dram_bytes", "dram_read_bytes", "l2_bytes", "l1_bytes", "shared_bytes",
    "inst_dfma", "inst_dadd", "inst_dmul", "inst_ffma", "inst_fadd", "inst_fmul", "inst_hfma", "inst_hadd",
    "inst_hmul", "peak_fp64_flops_per_s", "peak_fp32_flops_per_s", "peak_fp16_flops_per_s",
    "peak_dram_bytes_per_s", "peak_l2_bytes_per_s", "peak_l1_bytes_per_s", "grid_size", "block_size", "waves",
    "achieved_occupancy_pct", "theoretical_occupancy_pct", "sm_count",
)


@pytest.mark.parametrize("cc", [None, (7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0)])
def test_metric_set_covers_roofline(cc: tuple[int, int] | None) -> None:
    """Each roofline quantity has a catalogue source whose metrics are all captured."""
    metrics = set(capture_metrics(cc).metrics)
    missing = [q for q in ROOFLINE_QUANTITIES if not any(set(s.metrics) <= metrics for s in sources_of(quantity(q)))]
    assert missing == []


def test_metric_set_tensor_counters() -> None:
    h100 = capture_metrics((9, 0))
    assert h100.name == "rules-cc90"
    assert {"sm__ops_path_tensor_src_fp16.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
            "sm__ops_path_tensor_src_fp16.sum.peak_sustained"} <= set(h100.metrics)
    common = capture_metrics(None)
    assert common.name == "rules-common"
    assert not any(m.startswith("sm__ops_path_tensor") for m in common.metrics)
    assert "sm__inst_executed_pipe_tensor.sum" in common.metrics
    assert len(h100.metrics) == len(set(h100.metrics))
    orin = capture_metrics((8, 7))
    assert not any(m.startswith("dram__") for m in orin.metrics) and "Tegra" in orin.notes[0]


def test_estimate_passes_is_a_range() -> None:
    metrics = capture_metrics((9, 0)).metrics
    hw = cap.hardware_counters(metrics)
    assert "launch__grid_size" not in hw and "dram__bytes.sum.peak_sustained" not in hw
    assert "dram__bytes_read.sum" in hw
    lo, hi = cap.estimate_passes(metrics)
    assert 1 <= lo < hi
    assert (lo, hi) == (-(-len(hw) // 8), -(-len(hw) // 4))


def _query(ncu: Path, tmp: Path, *args: str) -> set[str]:
    out = subprocess.run([str(ncu), *args], capture_output=True, text=True, env=ncu_env(tmp), timeout=60,
                         check=True).stdout
    return {ln.split()[0] for ln in out.splitlines()
            if ln and ln[0] not in " -" and not ln.startswith(("Chip ", "Metric Name"))}


@pytest.fixture(scope="session")
def ncu_chips(ncu_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = subprocess.run([str(ncu_exe), "--list-chips"], capture_output=True, text=True, timeout=60, check=True,
                         env=ncu_env(tmp_path_factory.mktemp("home"))).stdout
    return [c.strip() for c in out.split(",") if c.strip()]


def test_every_ncu_chip_is_mapped(ncu_chips: list[str]) -> None:
    assert set(REQUIRED_CHIPS) <= set(ncu_chips)
    assert [c for c in ncu_chips if c not in CHIP_CC] == [], "add new chips to CHIP_CC"


@pytest.mark.parametrize("chip", sorted(CHIP_CC))
def test_metric_set_exists_in_ncu_catalogue(chip: str, ncu_exe: Path, ncu_chips: list[str], tmp_path: Path) -> None:
    """Every captured hardware metric exists for the chip, full name with suffixes (ncu lists the
    suffixes of the base names asked for and leaves out any base name the chip does not have)."""
    if chip not in ncu_chips:
        pytest.skip(f"this ncu does not know {chip}")
    metrics = capture_metrics(CHIP_CC[chip]).metrics
    hw = [m for m in metrics if not m.startswith(("launch__", "device__attribute_"))
          and m != "sm__maximum_warps_per_active_cycle_pct"]
    full = _query(ncu_exe, tmp_path, "--query-metrics-mode", "suffix", "--chip", chip,
                  "--metrics", ",".join(sorted({m.split(".")[0] for m in hw})))
    assert [m for m in hw if m not in full] == []


def test_non_counter_metrics_known_to_ncu(ncu_exe: Path) -> None:
    """launch__* and occupancy metrics appear in ncu's stock sections; device attributes are allow-listed."""
    sections = list(ncu_exe.resolve().parents[1].glob("**/sections/*.section"))
    if not sections:
        pytest.skip("ncu's section files were not unpacked")
    text = "\n".join(p.read_text(errors="replace") for p in sections)
    metrics = capture_metrics((9, 0)).metrics
    others = [m for m in metrics if m.startswith("launch__") or m == "sm__maximum_warps_per_active_cycle_pct"]
    assert others and [m for m in others if not re.search(rf'"{re.escape(m)}"', text)] == []
    assert {m for m in metrics if m.startswith("device__attribute_")} <= DEVICE_ATTRIBUTES


def test_device_attributes_in_a_real_report(realdata: Path, ncu_exe: Path, tmp_path: Path) -> None:
    rep = realdata / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep"
    if not rep.is_file():
        pytest.skip("CuVectorAddDrv.ncu-rep not in realdata")
    out = subprocess.run([str(ncu_exe), "-i", str(rep), "--page", "raw", "--csv"], capture_output=True, text=True,
                         env=ncu_env(tmp_path), timeout=60, check=True).stdout
    header = out.splitlines()[0]
    assert all(f'"{a}"' in header for a in DEVICE_ATTRIBUTES)


# --- progress -------------------------------------------------------------------------------
def test_progress_tracker() -> None:
    t = cap.ProgressTracker()
    assert not t.feed("hello from the script")
    assert not t.feed("==PROF== Connected to process 4242 (/usr/bin/python3.11)")
    assert t.feed('==PROF== Profiling "saxpy_kernel" - 0: 0%....50%....100% - 9 passes')
    assert t.feed('==PROF== Profiling "void gemm<float>(int)" - 1: 0%....50%....100% - 12 passes')
    assert not t.feed("==PROF== Report: /tmp/out.ncu-rep")
    p = t.progress
    assert (p.kernels, p.last_kernel, p.last_passes, p.total_passes) == (2, "void gemm<float>(int)", 12, 21)
    assert p.report == Path("/tmp/out.ncu-rep")


# --- dry run --------------------------------------------------------------------------------
def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("capture")(capture_cmd.command)
    app.callback()(lambda: None)
    return app


def test_dry_run_output(tmp_path: Path) -> None:
    script = tmp_path / "k.py"
    script.write_text("print('hi')\n")
    res = CliRunner().invoke(_app(), ["capture", str(script), "-o", str(tmp_path / "r"), "--cc", "9.0",
                                      "--ncu", sys.executable, "--python", "/usr/bin/python3", "-k", "saxpy",
                                      "--ncu-arg", "--set", "--ncu-arg", "full", "--dry-run", "--", "--n", "8"])
    assert res.exit_code == 0, res.output
    mset = capture_metrics((9, 0))
    n_hw = len(cap.hardware_counters(mset.metrics))
    lo, hi = cap.estimate_passes(mset.metrics)
    metrics = ",".join(mset.metrics)
    assert res.output.splitlines() == [
        "ncu-roof capture: dry run, nothing was run",
        f"command: {sys.executable} --metrics {metrics} --section SourceCounters --import-source yes "
        "--nvtx --target-processes all --replay-mode kernel "
        f"--cache-control all --clock-control base --kernel-name saxpy --export {tmp_path / 'r.ncu-rep'} "
        f"--set full /usr/bin/python3 {script} --n 8",
        "environment: LC_ALL=C PYTHONUNBUFFERED=1",
        f"report: {tmp_path / 'r.ncu-rep'}",
        f"metric set: rules-cc90, {len(mset.metrics)} metrics ({n_hw} hardware counters)",
        "replay passes: not known without a GPU (ncu prints the real count per kernel); "
        f"rough estimate {lo}-{hi} per kernel",
        "source counters: --section SourceCounters --import-source yes (each finding's source lines; lines need "
        "the program built with line information: nvcc -lineinfo; CuPy RawKernel/RawModule options=('-lineinfo',); "
        "Numba @cuda.jit(lineinfo=True); nvfortran -gpu=lineinfo; Triton keeps it unless TRITON_DISABLE_LINE_INFO=1)",
        "rules: every rule's metrics are in the set",
        "metrics:",
        *(f"  {m}" for m in mset.metrics),
    ]


def test_dry_run_quotes_for_the_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my script.py").write_text("")
    res = CliRunner().invoke(_app(), ["capture", "my script.py", "--cc", "8.6", "--ncu", sys.executable,
                                      "--dry-run", "--", "a b"])
    command = res.output.splitlines()[1]
    assert command.endswith(" 'my script.py' 'a b'")
    assert "rules-cc86" in res.output


def test_dry_run_via_module(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH="/nonexistent", NCU="")
    env.pop("NCU")
    (tmp_path / "k.py").write_text("")
    res = subprocess.run([sys.executable, "-m", "ncu_roof", "capture", "k.py", "--dry-run"], cwd=tmp_path,
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "ncu-roof capture: dry run, nothing was run"
    assert lines[1].startswith("command: ncu --metrics gpu__time_duration.sum,")
    assert lines[1].endswith(f" --export k.ncu-rep {sys.executable} k.py")
    assert "note: ncu was not found here; the command names plain `ncu`" in lines
    assert ("note: GPU architecture unknown (no --cc, no nvidia-smi): common set without tensor-op counters"
            in lines)


# --- finding ncu ----------------------------------------------------------------------------
def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_ncu_order(tmp_path: Path) -> None:
    a = _exe(tmp_path / "ncu", "#!/bin/sh\n")
    b = _exe(tmp_path / "other-ncu", "#!/bin/sh\n")
    assert cap.find_ncu(str(b), {"NCU": str(a)}) == b
    assert cap.find_ncu(None, {"NCU": str(b), "PATH": str(tmp_path)}) == b
    assert cap.find_ncu(None, {"PATH": str(tmp_path)}) == a
    (tmp_path / "cuda-12.1" / "bin").mkdir(parents=True)
    (tmp_path / "cuda-12.10" / "bin").mkdir(parents=True)
    _exe(tmp_path / "cuda-12.1" / "bin" / "ncu", "#!/bin/sh\n")
    newest = _exe(tmp_path / "cuda-12.10" / "bin" / "ncu", "#!/bin/sh\n")
    assert cap.find_ncu(None, {"PATH": "/nonexistent"}, globs=(str(tmp_path / "cuda-*" / "bin" / "ncu"),)) == newest


def test_find_ncu_missing() -> None:
    with pytest.raises(cap.NcuNotFoundError) as err:
        cap.find_ncu("/nonexistent/ncu", {})
    assert str(err.value) == ("ncu not found: --ncu /nonexistent/ncu is not an executable file "
                              "(install Nsight Compute or pass --ncu PATH / set NCU)")
    assert err.value.exit_code == 2
    with pytest.raises(cap.NcuNotFoundError, match=r"^ncu not found: NCU /x/ncu is not"):
        cap.find_ncu(None, {"NCU": "/x/ncu"})
    with pytest.raises(cap.NcuNotFoundError) as err:
        cap.find_ncu(None, {"PATH": "/nonexistent"}, globs=())
    assert str(err.value) == ("ncu not found: install Nsight Compute (it comes with the CUDA toolkit) "
                              "or pass --ncu PATH / set NCU")


# --- failure paths --------------------------------------------------------------------------
@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    return _exe(tmp_path / "tiny.py", "print('hello from tiny')\n")


def _run(opts: cap.CaptureOptions, tmp_path: Path) -> tuple[list[str], cap.CaptureProgress | None]:
    lines: list[str] = []
    seen: list[cap.CaptureProgress] = []
    try:
        cap.run_capture(opts, lines.append, seen.append, env=ncu_env(tmp_path))
    finally:
        _run.lines = lines  # type: ignore[attr-defined]
    return lines, (seen[-1] if seen else None)


NO_GPU = ("no usable NVIDIA GPU or driver (ncu: Nsight Compute failed to connect to the CUDA driver "
          "(stub libcuda.so[.1] on path?)): run capture on a machine with an NVIDIA GPU and its driver, "
          "or diagnose an existing report with `ncu-roof diagnose`")


def test_real_ncu_without_gpu(ncu_exe: Path, tiny: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=ncu_exe, cc=(9, 0))
    with pytest.raises(cap.NoGpuError) as err:
        _run(opts, tmp_path)
    assert str(err.value) == NO_GPU
    assert err.value.exit_code == 2
    assert "==ERROR== Nsight Compute failed to connect to the CUDA driver (stub libcuda.so[.1] on path?)." in _run.lines  # type: ignore[attr-defined]
    assert not (tmp_path / "r.ncu-rep").exists()


def test_real_ncu_without_gpu_cli(ncu_exe: Path, tiny: Path, tmp_path: Path) -> None:
    env = dict(ncu_env(tmp_path), PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "ncu_roof", "capture", str(tiny), "-o", str(tmp_path / "r"),
                          "--ncu", str(ncu_exe), "--cc", "9.0"], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1] == f"ncu-roof: error: {NO_GPU}"


def test_script_missing(ncu_exe: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tmp_path / "nope.py", report=tmp_path / "r", ncu=ncu_exe)
    with pytest.raises(cap.ScriptError) as err:
        _run(opts, tmp_path)
    assert str(err.value) == f"script not found: {tmp_path / 'nope.py'}"
    assert err.value.exit_code == 2


def test_python_missing(ncu_exe: Path, tiny: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=ncu_exe, python=Path("/nonexistent/python"))
    with pytest.raises(cap.ScriptError, match=r"^python not found: /nonexistent/python is not an executable"):
        _run(opts, tmp_path)


def test_existing_report_needs_force(ncu_exe: Path, tiny: Path, tmp_path: Path) -> None:
    (tmp_path / "r.ncu-rep").write_bytes(b"old")
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=ncu_exe)
    with pytest.raises(CaptureError) as err:
        _run(opts, tmp_path)
    assert str(err.value) == (f"report {tmp_path / 'r.ncu-rep'} already exists: pass --force to overwrite it "
                              "or -o to choose another")
    assert (tmp_path / "r.ncu-rep").read_bytes() == b"old"
    forced = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=ncu_exe, force=True)
    with pytest.raises(cap.NoGpuError):  # gets past the check, then meets the missing GPU
        _run(forced, tmp_path)


def test_ncu_vanishes(tiny: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=Path("/nonexistent/ncu"))
    with pytest.raises(cap.NcuNotFoundError, match=r"^ncu not found: /nonexistent/ncu \(install"):
        _run(opts, tmp_path)


FAKE_NCU = """#!{python}
# Stands in for ncu on a GPU machine: prints what ncu prints, runs the script, writes the report.
import subprocess, sys
args = sys.argv[1:]
mode = {mode!r}
out = args[args.index("--export") + 1]
script = next(i for i, a in enumerate(args) if a.endswith(".py"))
if mode == "perm":
    print("==PROF== Connected to process 1 (/usr/bin/python3)")
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
          "Counters on the target device 0. For instructions on enabling permissions and to get more "
          "information see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    print("==PROF== Disconnected from process 1")
    sys.exit(0)
rc = subprocess.call(args[script - 1:])
if rc:
    print(f"==ERROR== The application returned an error code ({{rc}}).")
    print("==WARNING== No kernels were profiled.")
    sys.exit(1)
if mode == "nokernels":
    print("==WARNING== No kernels were profiled.")
    sys.exit(0)
print('==PROF== Profiling "saxpy" - 0: 0%....50%....100% - 9 passes', flush=True)
print('==PROF== Profiling "saxpy" - 1: 0%....50%....100% - 9 passes', flush=True)
if mode == "copy":  # the report a real capture wrote
    import shutil; shutil.copyfile({copy!r}, out)
else:
    open(out, "wb").write(b"NVIDIA report")
print("==PROF== Report: " + out, flush=True)
if mode == "slow":
    import time; time.sleep(0.3)
"""


def _fake_ncu(tmp_path: Path, mode: str, copy: Path | None = None) -> Path:
    return _exe(tmp_path / f"ncu-{mode}", FAKE_NCU.format(python=sys.executable, mode=mode, copy=str(copy)))


def test_counter_permission(tiny: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=_fake_ncu(tmp_path, "perm"))
    with pytest.raises(cap.CounterPermissionError) as err:
        _run(opts, tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and err.value.exit_code == 2
    assert msg.startswith("GPU performance counters are not permitted for this user (ERR_NVGPUCTRPERM): "
                          "run as root, or allow all users with "
                          "`sudo modprobe nvidia NVreg_RestrictProfilingToAdminUsers=0`")
    assert msg.endswith("see https://developer.nvidia.com/ERR_NVGPUCTRPERM")


def test_no_kernels(tiny: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=_fake_ncu(tmp_path, "nokernels"))
    with pytest.raises(cap.NoKernelsError) as err:
        _run(opts, tmp_path)
    assert str(err.value) == ("no kernels were profiled: the program launched no CUDA kernel; kernels in child "
                              "processes are followed (--target-processes all)")
    # with filters, the message names them
    filtered = cap.CaptureOptions(script=tiny, report=tmp_path / "r2", ncu=_fake_ncu(tmp_path, "nokernels"),
                                  kernel_name="gemm", regions=("attention",))
    with pytest.raises(cap.NoKernelsError) as err:
        _run(filtered, tmp_path)
    assert str(err.value).startswith("no kernels were profiled: the filters --kernel-name gemm, --region attention "
                                     "matched none of the kernels that ran")
    assert "hello from tiny" in _run.lines  # type: ignore[attr-defined]


def test_failing_script_exit_code(tmp_path: Path) -> None:
    script = _exe(tmp_path / "fail.py", "import sys\nprint('boom')\nsys.exit(3)\n")
    opts = cap.CaptureOptions(script=script, report=tmp_path / "r", ncu=_fake_ncu(tmp_path, "ok"))
    with pytest.raises(cap.ScriptError) as err:
        _run(opts, tmp_path)
    assert err.value.exit_code == 3
    assert str(err.value) == (f"the script {script} failed with exit code 3 under ncu (its output is above); "
                              "fix it so it runs on its own first")


def test_success_streams_and_counts(tiny: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=_fake_ncu(tmp_path, "ok"))
    lines, progress = _run(opts, tmp_path)
    assert (tmp_path / "r.ncu-rep").read_bytes() == b"NVIDIA report"
    assert lines[0] == "hello from tiny"
    assert progress is not None and (progress.kernels, progress.last_passes, progress.total_passes) == (2, 9, 18)


def test_interrupt_keeps_report(tiny: Path, tmp_path: Path) -> None:
    opts = cap.CaptureOptions(script=tiny, report=tmp_path / "r", ncu=_fake_ncu(tmp_path, "slow"))

    def on_line(line: str) -> None:
        if line.startswith("==PROF== Report"):
            raise KeyboardInterrupt

    with pytest.raises(cap.CaptureInterrupted) as err:
        cap.run_capture(opts, on_line, env=ncu_env(tmp_path))
    assert str(err.value) == (f"interrupted: kept what ncu wrote in {tmp_path / 'r.ncu-rep'} "
                              "(may hold fewer kernels)")
    assert err.value.exit_code == 130


def test_classify_generic_ncu_error() -> None:
    err = cap.classify_failure(["==ERROR== Something odd happened."], 7, _opts())
    assert isinstance(err, CaptureError) and str(err) == "ncu exited with code 7: Something odd happened"
    assert cap.classify_failure(["fine"], 0, _opts()) is None


@pytest.mark.gpu
def test_capture_on_gpu(tmp_path: Path) -> None:
    """On a GPU machine: a CuPy saxpy under the real ncu gives a report with its kernel."""
    pytest.importorskip("cupy")
    script = tmp_path / "saxpy.py"
    script.write_text("import cupy as cp\nx = cp.ones(1 << 24, dtype=cp.float32)\ny = 2 * x + 1\n"
                      "cp.cuda.Device().synchronize()\n")
    opts = cap.CaptureOptions(script=script, report=tmp_path / "saxpy", ncu=cap.find_ncu(None, os.environ),
                              cc=cap.detect_cc())
    lines, progress = _run(opts, tmp_path)
    assert (tmp_path / "saxpy.ncu-rep").is_file()
    assert progress is not None and progress.kernels >= 1


def test_ncu_report_is_found_next_to_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GPU machines carry ncu_report only in Nsight Compute's extras/python, not as a wheel."""
    from ncu_roof.read import ncu_rep

    exe = tmp_path / "nsight-compute" / "ncu"
    (tmp_path / "nsight-compute" / "extras" / "python").mkdir(parents=True)
    (tmp_path / "nsight-compute" / "extras" / "python" / "ncu_report.py").write_text("")
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("NCU", str(exe))
    assert ncu_rep._ncu_python_dirs()[0] == (tmp_path / "nsight-compute" / "extras" / "python").resolve()


# --- tiers, gating, filters, any program -----------------------------------------------------------
def test_every_rule_reads_what_the_default_set_collects() -> None:
    """The rules' declared inputs (needs and reads) against each tier, on every architecture."""
    from ncu_roof.coverage import rules_left_out, rules_unable

    for cc in (None, *sorted(set(CHIP_CC.values()))):
        for tier in ("rules", "full"):
            left = rules_left_out(capture_metrics(cc, tier).metrics)
            if cc in ((7, 2), (8, 7)):  # Tegra: no DRAM counters at all (shared memory with the CPU)
                dram = {"dram_bytes", "dram_read_bytes", "dram_throughput_pct"}
                assert {c for cols in left.values() for c in cols} <= dram
            else:
                assert left == {}, (cc, tier)
    quick = capture_metrics((9, 0), "quick").metrics
    assert set(rules_unable(quick)) == {"bank-conflicts", "divergence", "low-occupancy", "uncoalesced-access",
                                        "warp-stalls", "local-memory", "idle-warps"}
    assert len(quick) < len(capture_metrics((9, 0)).metrics)
    full = cap.build_ncu_command(_opts(tier="full"))
    assert full[1:3] == ["--set", "full"]


def test_a_profile_gate_in_the_script_turns_profiling_off_from_the_start(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import ncu_roof\nfor step in range(10):\n    if step == 5:\n        with ncu_roof.profile():\n"
                      "            pass\n")
    assert cap.uses_profile_gate(script)
    (tmp_path / "other.py").write_text("from ncu_roof import region, profile\n")
    assert cap.uses_profile_gate(tmp_path / "other.py")
    (tmp_path / "plain.py").write_text("import ncu_roof\nwith ncu_roof.region('x'):\n    pass\n")
    assert not cap.uses_profile_gate(tmp_path / "plain.py")
    res = CliRunner().invoke(_app(), ["capture", str(script), "--cc", "9.0", "--ncu", sys.executable, "--dry-run",
                                      "-o", str(tmp_path / "r"), "-s", "2", "-c", "3"])
    assert res.exit_code == 0, res.output
    command = res.output.splitlines()[1]
    assert "--profile-from-start off" in command and "--launch-skip 2 --launch-count 3" in command
    assert "profiling: off until ncu_roof.profile() starts it (--profile-from-start off)" in res.output


def test_filters_module_and_a_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("")
    res = CliRunner().invoke(_app(), ["capture", "--cc", "9.0", "--ncu", sys.executable, "--dry-run",
                                      "--region", "attention", "--kernel-name-base", "demangled", "--", "torchrun",
                                      "--nproc-per-node", "2", "train.py"])
    assert res.exit_code == 0, res.output
    command = res.output.splitlines()[1]
    assert "--nvtx-include attention/ --nvtx-include attention" in command
    assert "--kernel-name 'regex:^(?!nccl|ncclDevKernel|ncclKernel)' --kernel-name-base demangled" in command
    assert command.endswith("--export 'train.rank%q{RANK}.ncu-rep' torchrun --nproc-per-node 2 train.py")
    assert "one report per rank: the rank from $RANK in each report's name" in res.output
    assert "NCCL kernels are left out" in res.output
    mod = CliRunner().invoke(_app(), ["capture", "-m", "pkg.bench", "--cc", "8.0", "--ncu", sys.executable,
                                      "--dry-run", "--kernel-id", "1:7:gemm:3", "--", "--size", "4096"])
    assert mod.exit_code == 0, mod.output
    line = mod.output.splitlines()[1]
    assert "--kernel-id 1:7:gemm:3 --export bench.ncu-rep" in line and line.endswith("-m pkg.bench --size 4096")
    assert "--kernel-name" not in line  # comms are filtered only under a launcher


def test_container_and_unsupported_gpu_errors() -> None:
    opts = _opts()
    err = cap.classify_failure(["==ERROR== RmProfilingAdminOnly is set"], 1, opts)
    assert isinstance(err, cap.CounterPermissionError) and "--cap-add=SYS_ADMIN" in str(err)
    err = cap.classify_failure(["==ERROR== The selected device is not supported by this version"], 1, opts)
    assert isinstance(err, cap.NoGpuError) and str(err).startswith("this ncu does not support the GPU")


def test_a_slow_warning_is_noted() -> None:
    t = cap.ProgressTracker()
    t.feed("==WARNING== Profiling is taking more time than expected")
    assert t.progress.slow


def test_torch_ops_runs_the_script_under_the_op_regions(tmp_path: Path) -> None:
    opts = _opts(torch_ops=True, script_args=("--batch", "8"))
    assert cap.target_argv(opts) == ["/usr/bin/python3", "-m", "ncu_roof.torch", "work/saxpy.py", "--batch", "8"]
    env = cap.capture_env({"PYTHONPATH": "/x"}, torch_ops=True)
    assert env["PYTHONPATH"] == os.pathsep.join([str(ROOT), "/x"])
    assert "PYTHONPATH" not in cap.capture_env({})
    script = tmp_path / "mlp.py"
    script.write_text("")
    res = CliRunner().invoke(_app(), ["capture", str(script), "--torch-ops", "--cc", "9.0", "--ncu", sys.executable,
                                      "--dry-run", "-o", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[1].endswith(f"-m ncu_roof.torch {script}")
    bad = subprocess.run([sys.executable, "-m", "ncu_roof", "capture", "-m", "pkg.train", "--torch-ops", "--cc", "9.0",
                          "--dry-run"], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == ["ncu-roof: error: Invalid value for --torch-ops: --torch-ops runs a Python "
                                       "script (SCRIPT.py), not a module or command (see ncu-roof capture -h)"]


def test_the_diagnosis_after_capture_takes_diagnose_s_options(tiny: Path, tmp_path: Path, realdata: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    ncu = _fake_ncu(tmp_path, "copy", copy=report)
    base = [sys.executable, "-m", "ncu_roof", "capture", str(tiny), "--ncu", str(ncu), "--cc", "7.0",
            "-o", str(tmp_path / "mw")]
    # a file the diagnosis would need is checked before anything is profiled
    bad = subprocess.run([*base, "--algorithmic", str(tmp_path / "missing.toml")], capture_output=True, text=True,
                         env=ncu_env(tmp_path))
    assert bad.returncode == 2 and not (tmp_path / "mw.ncu-rep").exists()
    assert bad.stderr.strip().splitlines() == [f"ncu-roof: error: no such file: {tmp_path / 'missing.toml'}"]
    res = subprocess.run([*base, "--summary", str(tmp_path / "mw.json"), "--device", "Tesla V100-SXM2-32GB"],
                         capture_output=True, text=True, env=ncu_env(tmp_path))
    assert res.returncode == 0, res.stderr
    out = json.loads((tmp_path / "mw.json").read_text())
    assert out["inputs"] == [str(tmp_path / "mw.ncu-rep")]
    assert out["runs"][0]["ncu_version"] == "2022.2.0.0" and len(out["kernels"]) == 5
    again = subprocess.run([*base, "--force", "--summary", str(tmp_path / "mw.json"), "-f", "markdown"],
                           capture_output=True, text=True, env=ncu_env(tmp_path))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "mw.json").read_text().startswith("# ncu-roof diagnosis")


# --- source counters and line information ---------------------------------------------------
def test_source_counters_are_collected_with_the_source_imported() -> None:
    rules = cap.build_ncu_command(_opts())
    i = rules.index("--section")
    assert rules[i:i + 4] == ["--section", "SourceCounters", "--import-source", "yes"]
    full = cap.build_ncu_command(_opts(tier="full"))  # --set full holds the section already
    assert full[1:3] == ["--set", "full"] and "--section" not in full
    assert full[full.index("--import-source") + 1] == "yes"
    bare = cap.build_ncu_command(_opts(source=False))
    assert "--section" not in bare and "--import-source" not in bare


def test_the_section_collects_what_the_lines_are_ranked_by(ncu_exe: Path) -> None:
    """Every Source Counter the lines post-pass ranks by is in ncu's own SourceCounters section."""
    from ncu_cache import NCU_CACHE

    from ncu_roof.read.metrics import SOURCE_COUNTERS
    from ncu_roof.rules import RULES
    from ncu_roof.rules.lines import LOCAL_SECTORS, ranking_of

    sections = list((NCU_CACHE / "root").rglob("sections/SourceCounters.section"))
    assert sections, "ncu's section files were not unpacked"
    text = sections[0].read_text()
    assert 'Identifier: "SourceCounters"' in text
    rankings = [x for r in RULES if (x := ranking_of(r.id)) is not None] + [LOCAL_SECTORS]
    ranked = {c for r in rankings for c in r.columns} | {"inst_executed", "thread_inst_executed"}
    names = {ncu for ncu, column in SOURCE_COUNTERS.items() if column in ranked}
    assert names and all(f'Name: "{n}"' in text for n in names), names
    assert 'Name: "smsp__pcsamp_warps_issue_stalled_long_scoreboard"' in text  # stall samples by reason


def test_dry_run_without_source_counters(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text("")
    res = CliRunner().invoke(_app(), ["capture", str(tmp_path / "k.py"), "--cc", "9.0", "--ncu", sys.executable,
                                      "--no-source", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "--import-source" not in res.output and "SourceCounters" not in res.output
    assert "source counters: not collected (--no-source): findings name no source lines" in res.output.splitlines()


@pytest.mark.parametrize(("report", "warned"), [("thedavidchu__speedy_scan/profile.ncu-rep", True),
                                                 ("NCAR__GPU_workshop/MW_Baseline.ncu-rep", False)])
def test_a_report_without_line_information_is_warned_about(report: str, warned: bool, tiny: Path, tmp_path: Path,
                                                            realdata: Path) -> None:
    ncu = _fake_ncu(tmp_path, "copy", copy=realdata / report)
    cmd = [sys.executable, "-m", "ncu_roof", "capture", str(tiny), "--ncu", str(ncu), "--cc", "8.0",
           "-o", str(tmp_path / "run"), "--no-diagnose"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(ncu_env(tmp_path), PYTHONPATH=str(ROOT)))
    assert res.returncode == 0, res.stderr
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("ncu-roof: warning:")]
    if not warned:
        assert warnings == []
        return
    assert warnings == [
        "ncu-roof: warning: run.ncu-rep has no line information (no line table in the cubins): findings will point "
        "at instructions, not source lines; build with line information to see source lines: nvcc -lineinfo; CuPy "
        "RawKernel/RawModule options=('-lineinfo',); Numba @cuda.jit(lineinfo=True); nvfortran -gpu=lineinfo; "
        "Triton keeps it unless TRITON_DISABLE_LINE_INFO=1"]
    quiet = subprocess.run([*cmd, "--force", "--no-source"], capture_output=True, text=True,
                           env=dict(ncu_env(tmp_path), PYTHONPATH=str(ROOT)))
    assert quiet.returncode == 0 and "warning" not in quiet.stderr  # no source counters: lines do not matter
