"""Run a Python script under Nsight Compute (ncu) and write a ``.ncu-rep`` with the roofline metrics.

The parts are separate so most of them are testable without a GPU:

- :func:`find_ncu` locates the ncu executable;
- :func:`build_ncu_command` is a pure function of :class:`CaptureOptions` returning an argv list;
- :class:`ProgressTracker` reads ncu's ``==PROF==`` lines (kernels profiled, replay passes);
- :func:`classify_failure` turns ncu's output and exit status into one-line :class:`CaptureError`s;
- :func:`run_capture` runs ncu, streaming every output line to a callback.

Nothing here prints or exits; the CLI renders.
"""

from __future__ import annotations

import glob
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ncu_roof.errors import CaptureError, InputError
from ncu_roof.read.metrics import MetricSet, capture_metrics

ReplayMode = Literal["kernel", "application", "range"]
CacheControl = Literal["all", "none"]
ClockControl = Literal["base", "none"]

REPORT_SUFFIX = ".ncu-rep"
PERM_URL = "https://developer.nvidia.com/ERR_NVGPUCTRPERM"

# Where ncu lives besides $NCU and PATH, most specific first (newest version first within a glob).
NCU_GLOBS: tuple[str, ...] = (
    "/usr/local/cuda/bin/ncu",
    "/usr/local/cuda-*/bin/ncu",
    "/opt/nvidia/nsight-compute/*/ncu",
    "/usr/local/NVIDIA-Nsight-Compute*/ncu",
    "/opt/cuda/bin/ncu",
    "/usr/lib/nsight-compute/ncu",
)


# --- errors ---------------------------------------------------------------------------------
class NcuNotFoundError(CaptureError):
    """No ncu executable."""


class NoGpuError(CaptureError):
    """ncu could not reach a CUDA driver or GPU."""


class CounterPermissionError(CaptureError):
    """ERR_NVGPUCTRPERM: the user may not read GPU performance counters."""


class ScriptError(CaptureError):
    """The script is missing, or it ran and failed; ``exit_code`` is the script's own code."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class NoKernelsError(CaptureError):
    """ncu ran the script but profiled no kernel."""


class CaptureInterrupted(CaptureError):
    """Ctrl-C during the capture; the message says what was kept."""

    exit_code = 130


# --- locating ncu and the GPU ---------------------------------------------------------------
def _is_exe(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _version_key(path: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


def find_ncu(explicit: str | None, env: Mapping[str, str], globs: Sequence[str] = NCU_GLOBS) -> Path:
    """Locate ncu: ``--ncu PATH``, then ``$NCU``, then ``PATH``, then the usual install folders."""
    for given, origin in ((explicit, "--ncu"), (env.get("NCU"), "NCU")):
        if given:
            path = Path(given).expanduser()
            if _is_exe(path):
                return path
            raise NcuNotFoundError(
                f"ncu not found: {origin} {given} is not an executable file "
                "(install Nsight Compute or pass --ncu PATH / set NCU)"
            )
    on_path = shutil.which("ncu", path=env.get("PATH", os.defpath))
    if on_path:
        return Path(on_path)
    for pattern in globs:
        # absolute install-path patterns (/usr/local/cuda*/...): Path.glob takes only relative ones
        for hit in sorted(glob.glob(pattern), key=_version_key, reverse=True):  # noqa: PTH207
            if _is_exe(Path(hit)):
                return Path(hit)
    raise NcuNotFoundError(
        "ncu not found: install Nsight Compute (it comes with the CUDA toolkit) "
        "or pass --ncu PATH / set NCU"
    )


def parse_cc(text: str) -> tuple[int, int]:
    """``"9.0"`` / ``"90"`` / ``"sm_90"`` -> ``(9, 0)``."""
    s = text.strip().lower().removeprefix("sm_").removeprefix("sm")
    m = re.fullmatch(r"(\d+)\.(\d)", s) or re.fullmatch(r"(\d+)(\d)", s)
    if not m:
        raise InputError(f"bad compute capability {text!r}: write it like 9.0 (H100/H200) or 8.6")
    return int(m.group(1)), int(m.group(2))


def detect_cc(env: Mapping[str, str] | None = None, timeout: float = 10.0) -> tuple[int, int] | None:
    """The first GPU's compute capability from ``nvidia-smi``; None when it cannot tell."""
    smi = shutil.which("nvidia-smi", path=(env or os.environ).get("PATH", os.defpath))
    if not smi:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return None
    try:
        return parse_cc(lines[0])
    except InputError:
        return None


# --- the command ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CaptureOptions:
    """Everything that decides the ncu command line."""

    script: Path
    report: Path
    ncu: Path = Path("ncu")
    python: Path = field(default_factory=lambda: Path(sys.executable))
    script_args: tuple[str, ...] = ()
    cc: tuple[int, int] | None = None
    kernel_name: str | None = None
    launch_skip: int | None = None
    launch_count: int | None = None
    replay_mode: ReplayMode = "kernel"
    cache_control: CacheControl = "all"
    clock_control: ClockControl = "base"
    force: bool = False
    ncu_args: tuple[str, ...] = ()


def report_path(path: Path | str) -> Path:
    """The file ncu writes for ``--export path``: it appends ``.ncu-rep`` when missing."""
    p = Path(path)
    return p if p.name.endswith(REPORT_SUFFIX) else p.with_name(p.name + REPORT_SUFFIX)


def default_report(script: Path) -> Path:
    """``work/saxpy.py`` -> ``saxpy.ncu-rep`` in the current folder."""
    return Path(script.stem + REPORT_SUFFIX)


def metric_set(opts: CaptureOptions) -> MetricSet:
    return capture_metrics(opts.cc)


def build_ncu_command(opts: CaptureOptions) -> list[str]:
    """The ncu argv for a capture (pure: no file system, no environment)."""
    cmd = [
        str(opts.ncu),
        "--metrics", ",".join(metric_set(opts).metrics),
        "--nvtx",
        "--target-processes", "all",
        "--replay-mode", opts.replay_mode,
        "--cache-control", opts.cache_control,
        "--clock-control", opts.clock_control,
    ]
    if opts.kernel_name:
        cmd += ["--kernel-name", opts.kernel_name]
    if opts.launch_skip is not None:
        cmd += ["--launch-skip", str(opts.launch_skip)]
    if opts.launch_count is not None:
        cmd += ["--launch-count", str(opts.launch_count)]
    cmd += ["--export", str(report_path(opts.report))]
    if opts.force:
        cmd.append("--force-overwrite")
    cmd += list(opts.ncu_args)
    cmd += [str(opts.python), str(opts.script), *opts.script_args]
    return cmd


def capture_env(base_env: Mapping[str, str]) -> dict[str, str]:
    """The environment ncu runs in: C locale (plain numbers) and unbuffered Python output."""
    env = dict(base_env)
    env["LC_ALL"] = "C"
    env["PYTHONUNBUFFERED"] = "1"
    return env


# --- replay passes --------------------------------------------------------------------------
_NOT_COUNTERS = re.compile(r"^(launch__|device__attribute_)|\.peak_sustained$|_pct$")
PASSES_PER_COUNTERS = (8, 4)  # rough: one replay pass per 4..8 hardware counters


def hardware_counters(metrics: Iterable[str]) -> list[str]:
    """Metrics that need performance counters (launch attributes and peaks are free)."""
    return [m for m in metrics if not _NOT_COUNTERS.search(m)]


def estimate_passes(metrics: Iterable[str]) -> tuple[int, int]:
    """A rough (low, high) replay-pass estimate; ncu computes the real number on the GPU.

    ncu 2024.1 offers no way to ask for the pass count of a metric list without a GPU, so this
    only scales with the number of hardware counters (about 4 to 8 counters per pass).
    """
    n = len(hardware_counters(metrics))
    lo, hi = (max(1, math.ceil(n / k)) for k in PASSES_PER_COUNTERS)
    return lo, hi


# --- progress -------------------------------------------------------------------------------
_PROFILING = re.compile(r'==PROF== Profiling "(?P<name>[^"]*)"(?:.*?- (?P<passes>\d+) pass)?')
_REPORT = re.compile(r"==PROF== Report: (?P<path>.+?)\s*$")


@dataclass
class CaptureProgress:
    """What ncu said so far."""

    kernels: int = 0
    last_kernel: str = ""
    last_passes: int | None = None
    total_passes: int = 0
    report: Path | None = None


class ProgressTracker:
    """Updates a :class:`CaptureProgress` from ncu's output lines."""

    def __init__(self) -> None:
        self.progress = CaptureProgress()
        self.lines: list[str] = []

    def feed(self, line: str) -> bool:
        """Record one line; True when it reported a profiled kernel."""
        self.lines.append(line)
        m = _PROFILING.search(line)
        if m:
            p = self.progress
            p.kernels += 1
            p.last_kernel = m.group("name")
            p.last_passes = int(m.group("passes")) if m.group("passes") else None
            p.total_passes += p.last_passes or 0
            return True
        r = _REPORT.search(line)
        if r:
            self.progress.report = Path(r.group("path"))
        return False


# --- failures -------------------------------------------------------------------------------
_NO_DRIVER = (
    "failed to connect to the CUDA driver",
    "no CUDA-capable device",
    "CUDA_ERROR_NO_DEVICE",
    "cudaErrorNoDevice",
    "no supported device",
    "No supported GPU",
    "driver version is insufficient",
    "CUDA driver version is insufficient",
)
_APP_CODE = re.compile(r"==ERROR== The application returned an error code \((\d+)\)")
_NCU_ERROR = re.compile(r"==ERROR== (.+)")


def _quote_ncu(line: str) -> str:
    m = _NCU_ERROR.search(line)
    return (m.group(1) if m else line).strip().rstrip(".")


def classify_failure(lines: Sequence[str], returncode: int, opts: CaptureOptions) -> CaptureError | None:
    """The one-line error for a finished ncu run, or None when it succeeded."""
    text = "\n".join(lines)
    if "ERR_NVGPUCTRPERM" in text:
        return CounterPermissionError(
            "GPU performance counters are not permitted for this user (ERR_NVGPUCTRPERM): run as root, "
            "or allow all users with `sudo modprobe nvidia NVreg_RestrictProfilingToAdminUsers=0` "
            "(driver reloaded; to persist put `options nvidia NVreg_RestrictProfilingToAdminUsers=0` "
            f"in /etc/modprobe.d/), see {PERM_URL}"
        )
    for line in lines:
        if any(k.lower() in line.lower() for k in _NO_DRIVER):
            return NoGpuError(
                f"no usable NVIDIA GPU or driver (ncu: {_quote_ncu(line)}): run capture on a machine with "
                "an NVIDIA GPU and its driver, or diagnose an existing report with `ncu-roof diagnose`"
            )
    for line in lines:
        if "does not exist or is not an executable" in line:
            return ScriptError(f"cannot start the script: {_quote_ncu(line)}")
    app = next((int(m.group(1)) for m in map(_APP_CODE.search, lines) if m), None)
    if app is not None:
        return ScriptError(
            f"the script {opts.script} failed with exit code {app} under ncu (its output is above); "
            "fix it so it runs on its own first", exit_code=app if app else 2,
        )
    if "No kernels were profiled" in text:
        return NoKernelsError(
            "no kernels were profiled: the script launched no CUDA kernel that matched "
            "(check --kernel-name/--launch-skip/--launch-count; kernels in child processes are "
            "followed since --target-processes all is on)"
        )
    if returncode != 0:
        errors = [_quote_ncu(ln) for ln in lines if "==ERROR==" in ln]
        detail = f": {errors[-1]}" if errors else ""
        return CaptureError(f"ncu exited with code {returncode}{detail}")
    return None


# --- running --------------------------------------------------------------------------------
def check_inputs(opts: CaptureOptions) -> None:
    """Refuse before starting ncu: missing script or Python, a report that exists without force."""
    if not opts.script.is_file():
        raise ScriptError(f"script not found: {opts.script}")
    if not _is_exe(opts.python):
        raise ScriptError(f"python not found: {opts.python} is not an executable (pass --python PATH)")
    out = report_path(opts.report)
    if out.exists() and not opts.force:
        raise CaptureError(f"report {out} already exists: pass --force to overwrite it or -o to choose another")
    if not out.parent.is_dir():
        raise CaptureError(f"cannot write {out}: folder {out.parent} does not exist")


def _interrupted(proc: subprocess.Popen[str], out: Path) -> CaptureInterrupted:
    try:
        proc.wait(timeout=30)  # ncu got the SIGINT too; let it finish writing
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait(timeout=10)
    if out.exists():
        return CaptureInterrupted(f"interrupted: kept what ncu wrote in {out} (may hold fewer kernels)")
    return CaptureInterrupted("interrupted before ncu wrote a report; nothing was kept")


def run_capture(
    opts: CaptureOptions,
    on_line: Callable[[str], None],
    on_progress: Callable[[CaptureProgress], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Run ncu on the script; stream each output line (script and ncu) to ``on_line``.

    Returns the written report path; raises a :class:`CaptureError` subclass on failure.
    """
    check_inputs(opts)
    cmd = build_ncu_command(opts)
    out = report_path(opts.report)
    tracker = ProgressTracker()
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, errors="replace", bufsize=1, env=capture_env(os.environ if env is None else env),
        )
    except FileNotFoundError:
        raise NcuNotFoundError(
            f"ncu not found: {opts.ncu} (install Nsight Compute or pass --ncu PATH / set NCU)"
        ) from None
    except PermissionError:
        raise NcuNotFoundError(f"ncu at {opts.ncu} is not executable (pass --ncu PATH / set NCU)") from None
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            on_line(line)
            if tracker.feed(line) and on_progress is not None:
                on_progress(tracker.progress)
        returncode = proc.wait()
    except KeyboardInterrupt:
        raise _interrupted(proc, out) from None
    error = classify_failure(tracker.lines, returncode, opts)
    if error is not None:
        raise error
    if not out.is_file():
        raise CaptureError(f"ncu finished but wrote no report at {out}")
    return out
