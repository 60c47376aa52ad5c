"""``ncu-roof capture --timeline``: a timeline of the same program beside its report, recorded in a
separate run (not under ncu, whose replay serialises launches and stretches every gap).

Two recorders: a PyTorch profiler trace (``python -m ncu_roof.torch_trace``: CPU and CUDA activity,
``record_shapes``, ``with_stack``) where the program is a Python script or module and its Python
can import torch; else an Nsight Systems run (``nsys profile``, then ``nsys export --type sqlite``)
where nsys is found. :func:`plan_timeline` picks one and builds its command lines (pure, given what
was found); :func:`run_timeline` runs them; :func:`next_command` is the ``ncu-roof timeline`` line
that reads the trace beside the report.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ncu_roof.capture import REPORT_SUFFIX, CaptureOptions, capture_env, report_path, target_argv
from ncu_roof.capture_output import ScriptError
from ncu_roof.errors import CaptureError

Recorder = Literal["torch", "nsys"]
RECORDERS: tuple[str, ...] = ("auto", "torch", "nsys")
NSYS_GLOBS: tuple[str, ...] = (
    "/usr/local/cuda/bin/nsys",
    "/usr/local/cuda-*/bin/nsys",
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/usr/lib/nsight-systems/bin/nsys",
)


@dataclass(frozen=True)
class TimelinePlan:
    """How the timeline is recorded: the recorder, the trace ``ncu-roof timeline`` reads, the
    commands that write it (in order) and a note on what was not found here."""

    recorder: Recorder
    trace: Path
    commands: tuple[tuple[str, ...], ...]
    note: str = ""

    @property
    def words(self) -> str:
        if self.recorder == "torch":
            return ("a PyTorch profiler trace (torch.profiler: CPU and CUDA activity, record_shapes, with_stack) "
                    "from a separate run of the program, not under ncu")
        return ("an Nsight Systems run (nsys profile, then nsys export --type sqlite) separate from ncu's, "
                "its replay left out")


def find_nsys(env: Mapping[str, str], globs: Sequence[str] = NSYS_GLOBS) -> Path | None:
    """nsys: ``$NSYS``, then ``PATH``, then the usual install folders (newest first); None when absent."""
    given = env.get("NSYS")
    if given and Path(given).is_file() and os.access(given, os.X_OK):
        return Path(given)
    on_path = shutil.which("nsys", path=env.get("PATH", os.defpath))
    if on_path:
        return Path(on_path)
    for pattern in globs:
        for hit in sorted(glob.glob(pattern), reverse=True):  # noqa: PTH207 - absolute patterns
            if os.access(hit, os.X_OK):
                return Path(hit)
    return None


def torch_importable(python: Path, timeout: float = 60.0) -> bool:
    """Whether ``python`` finds the torch package (without importing it)."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    try:
        return subprocess.run([str(python), "-c", probe], capture_output=True, timeout=timeout,
                              check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _stem(opts: CaptureOptions) -> Path:
    """The report's path without ``.ncu-rep``: the trace files are named after it."""
    out = report_path(opts.report)
    return out.with_name(out.name[: -len(REPORT_SUFFIX)])


def torch_commands(opts: CaptureOptions, trace: Path) -> tuple[tuple[str, ...], ...]:
    """The program under the PyTorch profiler runner (a script or a module)."""
    target = ["-m", opts.module] if opts.module else [str(opts.script)]
    return ((str(opts.python), "-m", "ncu_roof.torch_trace", str(trace), *target, *opts.script_args),)


def nsys_commands(opts: CaptureOptions, nsys: Path | str) -> tuple[tuple[str, ...], ...]:
    """``nsys profile`` of the program (CUDA and NVTX traced), then its SQLite export."""
    stem = _stem(opts)
    overwrite = ("--force-overwrite", "true") if opts.force else ()
    argv = target_argv(replace(opts, torch_ops=False))  # op regions would cost the timeline time of their own
    return ((str(nsys), "profile", "--trace", "cuda,nvtx", *overwrite, "--output", str(stem), *argv),
            (str(nsys), "export", "--type", "sqlite", *overwrite, "--output", f"{stem}.sqlite", f"{stem}.nsys-rep"))


def plan_timeline(opts: CaptureOptions, choice: str, torch_ok: bool, nsys: Path | None,
                  dry_run: bool = False) -> TimelinePlan:
    """The recorder for ``choice`` (auto: torch for a script or module whose Python has it, else
    nsys) and its commands. What is not here fails, except in a dry run (the command is for the GPU
    machine): there it is a note."""
    python_target = not opts.program
    if choice == "auto":
        choice = "torch" if python_target and torch_ok else "nsys" if nsys is not None else ""
    if not choice:
        need = (f"torch importable by {opts.python} (a PyTorch profiler trace) or " if python_target else "")
        message = f"--timeline needs {need}nsys (Nsight Systems: on PATH, $NSYS or a CUDA folder); neither is here"
        if not dry_run:
            raise CaptureError(message)
        return TimelinePlan("nsys", Path(f"{_stem(opts)}.sqlite"), nsys_commands(opts, "nsys"),
                            f"{message}; the commands name plain `nsys`")
    if choice == "torch":
        if not python_target:
            raise CaptureError("--timeline-with torch runs a Python script or module (-m), not a command: "
                               "use --timeline-with nsys for a launcher")
        note = "" if torch_ok else f"torch is not importable by {opts.python} here"
        if note and not dry_run:
            raise CaptureError(f"--timeline-with torch: {note} (pip install torch, or --timeline-with nsys)")
        trace = Path(f"{_stem(opts)}.trace.json")
        return TimelinePlan("torch", trace, torch_commands(opts, trace), note)
    note = "" if nsys is not None else "nsys was not found here; the commands name plain `nsys`"
    if note and not dry_run:
        raise CaptureError("--timeline-with nsys: nsys not found (install Nsight Systems, put it on PATH or set NSYS)")
    return TimelinePlan("nsys", Path(f"{_stem(opts)}.sqlite"), nsys_commands(opts, nsys or "nsys"), note)


def check_timeline(plan: TimelinePlan, force: bool) -> None:
    """Refuse before anything runs: a trace that exists without force."""
    written = [plan.trace] + ([plan.trace.with_suffix(".nsys-rep")] if plan.recorder == "nsys" else [])
    for path in written:
        if path.exists() and not force:
            raise CaptureError(f"timeline {path} already exists: pass --force to overwrite it or -o to choose another")


def run_timeline(plan: TimelinePlan, opts: CaptureOptions, on_line: Callable[[str], None],
                 env: Mapping[str, str] | None = None) -> Path:
    """Run the plan's commands in turn, streaming their output; the trace written."""
    run_env = capture_env(os.environ if env is None else env, torch_ops=plan.recorder == "torch")
    for argv in plan.commands:
        try:
            proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, text=True, errors="replace", bufsize=1, env=run_env)
        except OSError as exc:
            raise CaptureError(f"cannot start the timeline run ({argv[0]}: {exc.strerror or exc})") from None
        assert proc.stdout is not None
        for raw in proc.stdout:
            on_line(raw.rstrip("\n"))
        code = proc.wait()
        if code != 0:
            raise ScriptError(f"the timeline run ({Path(argv[0]).name} {argv[1]}) failed with exit code {code} (its "
                              "output is above); the report is kept", exit_code=code)
    if not plan.trace.is_file():
        raise CaptureError(f"the timeline run finished but wrote no trace at {plan.trace}")
    return plan.trace


def next_command(plan: TimelinePlan, reports: Sequence[Path]) -> str:
    """``ncu-roof timeline TRACE --report R``: the trace read beside the report(s)."""
    args = ["ncu-roof", "timeline", str(plan.trace)]
    for report in reports:
        args += ["--report", str(report)]
    return shlex.join(args)
