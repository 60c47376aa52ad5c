"""Run a program under Nsight Compute (ncu) and write a ``.ncu-rep`` with the metrics the rules read.

The program is a Python script, a module (``-m``) or any command (a launcher such as torchrun or
pytest). The parts are separate so most of them are testable without a GPU:

- :func:`find_ncu` locates the ncu executable;
- :func:`build_ncu_command` is a pure function of :class:`CaptureOptions` returning an argv list;
- :class:`ProgressTracker` reads ncu's ``==PROF==`` lines (kernels profiled, replay passes) and
  :func:`classify_failure` turns ncu's output into one-line errors (:mod:`ncu_roof.capture_output`);
- :func:`run_capture` runs ncu, streaming every output line to a callback.

Nothing here prints or exits; the CLI renders.
"""

from __future__ import annotations

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

from ncu_roof.capture_output import (
    PERM_URL,
    CaptureProgress,
    CounterPermissionError,
    NoGpuError,
    NoKernelsError,
    ProgressTracker,
    ScriptError,
)
from ncu_roof.capture_output import classify_failure as _classify
from ncu_roof.errors import CaptureError, InputError
from ncu_roof.ncu_install import NCU_GLOBS, NcuNotFoundError, find_ncu, is_exe  # noqa: F401 - part of capture's API
from ncu_roof.read.metrics import MetricSet, capture_metrics

__all__ = ["PERM_URL", "CaptureProgress", "CounterPermissionError", "NoGpuError", "NoKernelsError",
           "ProgressTracker", "ScriptError"]

ReplayMode = Literal["kernel", "application", "range", "app-range"]
GraphProfiling = Literal["node", "graph"]
CacheControl = Literal["all", "none"]
ClockControl = Literal["base", "none"]

REPORT_SUFFIX = ".ncu-rep"
# launchers that start one process per rank, and the environment variable that names the rank
LAUNCHERS = {"torchrun": "RANK", "accelerate": "RANK", "deepspeed": "RANK", "mpirun": "OMPI_COMM_WORLD_RANK",
             "mpiexec": "OMPI_COMM_WORLD_RANK", "srun": "SLURM_PROCID"}
# communication kernels: serialised by ncu, they wait on peers that never run and hang the capture
COMMS_EXCLUDE = "regex:^(?!nccl|ncclDevKernel|ncclKernel)"

# --- errors ---------------------------------------------------------------------------------
class CaptureInterrupted(CaptureError):
    """Ctrl-C during the capture; the message says what was kept."""

    exit_code = 130


# --- locating ncu and the GPU ---------------------------------------------------------------
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
    """Everything that decides the ncu command line. The program is ``script`` (a Python file),
    ``module`` (``python -m``) or ``program`` (any command and its arguments), ``script_args`` after it."""

    script: Path | None
    report: Path
    ncu: Path = Path("ncu")
    python: Path = field(default_factory=lambda: Path(sys.executable))
    script_args: tuple[str, ...] = ()
    module: str | None = None
    program: tuple[str, ...] = ()
    cc: tuple[int, int] | None = None
    tier: str = "rules"
    kernel_name: str | None = None
    kernel_name_base: str | None = None  # function, demangled or mangled
    kernel_id: str | None = None  # ncu's context:stream:name:invocation
    regions: tuple[str, ...] = ()  # NVTX ranges to profile inside
    launch_skip: int | None = None
    launch_count: int | None = None
    gated: bool = False  # profiling starts at ncu_roof.profile() (cudaProfilerStart), not at launch
    replay_mode: ReplayMode = "kernel"
    graph_profiling: GraphProfiling = "node"
    include_comms: bool = False  # profile NCCL kernels too (they can hang a serialised capture)
    cache_control: CacheControl = "all"
    clock_control: ClockControl = "base"
    force: bool = False
    ncu_args: tuple[str, ...] = ()
    torch_ops: bool = False  # every PyTorch op in a region with its counts (python -m ncu_roof.torch)
    source: bool = True  # the Source Counters (per instruction) with the source files imported

    @property
    def target(self) -> str:
        """What runs, in words: ``the script train.py``, ``the module pkg.main``, ``torchrun``."""
        if self.module:
            return f"the module {self.module}"
        if self.program:
            return f"the command {self.program[0]}"
        return f"the script {self.script}"


def report_path(path: Path | str) -> Path:
    """The file ncu writes for ``--export path``: it appends ``.ncu-rep`` when missing."""
    p = Path(path)
    return p if p.name.endswith(REPORT_SUFFIX) else p.with_name(p.name + REPORT_SUFFIX)


def default_report(script: Path) -> Path:
    """``work/saxpy.py`` -> ``saxpy.ncu-rep`` in the current folder."""
    return Path(script.stem + REPORT_SUFFIX)


def metric_set(opts: CaptureOptions) -> MetricSet:
    return capture_metrics(opts.cc, opts.tier)


def rank_variable(opts: CaptureOptions) -> str | None:
    """The environment variable naming each rank's process, where the program is a launcher."""
    return LAUNCHERS.get(Path(opts.program[0]).name) if opts.program else None


def export_name(opts: CaptureOptions) -> str:
    """ncu's ``--export`` name: one report per rank (``train.rank%q{RANK}``) under a launcher."""
    rank = rank_variable(opts)
    if rank is None:
        return str(report_path(opts.report))
    base = report_path(opts.report)
    return str(base.with_name(base.name[: -len(REPORT_SUFFIX)] + f".rank%q{{{rank}}}" + REPORT_SUFFIX))


def target_argv(opts: CaptureOptions) -> list[str]:
    """The program's own argv: ``python script.py``, ``python -m module``, or the command; with
    ``torch_ops`` the script runs under ``python -m ncu_roof.torch`` (every op a region)."""
    if opts.module:
        return [str(opts.python), "-m", opts.module, *opts.script_args]
    if opts.program:
        return [*opts.program, *opts.script_args]
    runner = ["-m", "ncu_roof.torch"] if opts.torch_ops else []
    return [str(opts.python), *runner, str(opts.script), *opts.script_args]


def filters_text(opts: CaptureOptions) -> str:
    """The kernel filters in force, as ncu options (for messages)."""
    parts = [f"--kernel-name {opts.kernel_name}" if opts.kernel_name else "",
             f"--kernel-id {opts.kernel_id}" if opts.kernel_id else "",
             *(f"--region {r}" for r in opts.regions),
             f"--launch-skip {opts.launch_skip}" if opts.launch_skip else "",
             f"--launch-count {opts.launch_count}" if opts.launch_count else "",
             "ncu_roof.profile() (profiling off outside it)" if opts.gated else ""]
    return ", ".join(p for p in parts if p)


def source_args(opts: CaptureOptions) -> list[str]:
    """The ncu options that collect the Source Counters (what each finding's lines are ranked by:
    instructions, sectors, wavefronts, stall samples per instruction) and import the source files
    into the report; ``--set full`` has the section already."""
    if not opts.source:
        return []
    section = [] if metric_set(opts).ncu_set == "full" else ["--section", "SourceCounters"]
    return [*section, "--import-source", "yes"]


def build_ncu_command(opts: CaptureOptions) -> list[str]:
    """The ncu argv for a capture (pure: no file system, no environment)."""
    mset = metric_set(opts)
    cmd = [str(opts.ncu)]
    if mset.ncu_set:
        cmd += ["--set", mset.ncu_set]
    cmd += [
        "--metrics", ",".join(mset.metrics),
        *source_args(opts),
        "--nvtx",
        "--target-processes", "all",
        "--replay-mode", opts.replay_mode,
        "--cache-control", opts.cache_control,
        "--clock-control", opts.clock_control,
    ]
    if opts.graph_profiling != "node":
        cmd += ["--graph-profiling", opts.graph_profiling]
    if opts.gated:
        cmd += ["--profile-from-start", "off"]
    for region in opts.regions:  # push/pop ranges match "name/", start/end ranges "name"
        cmd += ["--nvtx-include", f"{region}/", "--nvtx-include", region]
    name = opts.kernel_name or (None if opts.include_comms or not opts.program else COMMS_EXCLUDE)
    if name:
        cmd += ["--kernel-name", name]
    if opts.kernel_name_base:
        cmd += ["--kernel-name-base", opts.kernel_name_base]
    if opts.kernel_id:
        cmd += ["--kernel-id", opts.kernel_id]
    if opts.launch_skip is not None:
        cmd += ["--launch-skip", str(opts.launch_skip)]
    if opts.launch_count is not None:
        cmd += ["--launch-count", str(opts.launch_count)]
    cmd += ["--export", export_name(opts)]
    if opts.force:
        cmd.append("--force-overwrite")
    cmd += list(opts.ncu_args)
    return cmd + target_argv(opts)


def uses_profile_gate(script: Path | None) -> bool:
    """Whether a script starts and stops profiling itself with ``ncu_roof.profile()`` (read from its
    source: an import of ``profile`` from ncu_roof, or a call of ``ncu_roof.profile``)."""
    if script is None or not script.is_file():
        return False
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(re.search(r"ncu_roof\.profile\(|from\s+ncu_roof\s+import\s+[^\n]*\bprofile\b", text))


def capture_env(base_env: Mapping[str, str], torch_ops: bool = False) -> dict[str, str]:
    """The environment ncu runs in: C locale (plain numbers) and unbuffered Python output; with
    ``torch_ops`` this ncu_roof on PYTHONPATH (the script's Python may not have it installed)."""
    env = dict(base_env)
    env["LC_ALL"] = "C"
    env["PYTHONUNBUFFERED"] = "1"
    if torch_ops:
        here = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
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


def classify_failure(lines: Sequence[str], returncode: int, opts: CaptureOptions) -> CaptureError | None:
    """The one-line error for a finished ncu run of ``opts``, or None when it succeeded."""
    return _classify(lines, returncode, opts.target, filters_text(opts))


# --- running --------------------------------------------------------------------------------
def command_found(name: str) -> bool:
    """A command on PATH, or an executable file."""
    return shutil.which(name) is not None or is_exe(Path(name))


def check_inputs(opts: CaptureOptions, find_program: bool = True) -> None:
    """Refuse before starting ncu: missing script, Python or command (``find_program``), a report that
    exists without force."""
    if opts.program:
        if find_program and not command_found(opts.program[0]):
            raise ScriptError(f"command not found: {opts.program[0]} (not on PATH, not an executable file)")
    elif opts.module is None and (opts.script is None or not opts.script.is_file()):
        raise ScriptError(f"script not found: {opts.script}")
    if not opts.program and not is_exe(opts.python):
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
    per_rank = rank_variable(opts) is not None
    tracker = ProgressTracker()
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, errors="replace", bufsize=1, env=capture_env(os.environ if env is None else env, opts.torch_ops),
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
    if per_rank:  # one report per rank: return the first, the others lie beside it
        ranks = sorted(out.parent.glob(out.name[: -len(REPORT_SUFFIX)] + ".rank*" + REPORT_SUFFIX))
        if ranks:
            return ranks[0]
    if not out.is_file():
        raise CaptureError(f"ncu finished but wrote no report at {out}")
    return out


def rank_reports(report: Path) -> list[Path]:
    """Every rank's report beside the first one a launcher capture returned (or just ``report``)."""
    name = report.name
    if ".rank" not in name:
        return [report]
    stem = name[: name.index(".rank")]
    return sorted(report.parent.glob(stem + ".rank*" + REPORT_SUFFIX)) or [report]
