"""What ncu prints while it runs: progress (kernels profiled, replay passes) and the one-line error
for a run that failed. Pure functions of ncu's output lines; :mod:`ncu_roof.capture` runs ncu.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncu_roof.errors import CaptureError


class NoGpuError(CaptureError):
    """ncu could not reach a CUDA driver or GPU, or does not support the GPU."""


class CounterPermissionError(CaptureError):
    """ERR_NVGPUCTRPERM: the user (or the container) may not read GPU performance counters."""


class ScriptError(CaptureError):
    """The program is missing, or it ran and failed; ``exit_code`` is its own code."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class NoKernelsError(CaptureError):
    """ncu ran the program but profiled no kernel."""


PERM_URL = "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
SLOW = "taking more time than expected"  # ncu's warning when serialised launches (NCCL) wait on each other


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
    slow: bool = False  # ncu warned that the run takes longer than expected


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
        if SLOW in line:
            self.progress.slow = True
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
_CONTAINER = ("RmProfilingAdminOnly", "CAP_SYS_ADMIN", "cap-add=SYS_ADMIN")
_UNSUPPORTED = ("device is not supported", "Device not supported", "is not supported by this version",
                "unsupported GPU architecture")
_APP_CODE = re.compile(r"==ERROR== The application returned an error code \((\d+)\)")
_NCU_ERROR = re.compile(r"==ERROR== (.+)")


def _quote_ncu(line: str) -> str:
    m = _NCU_ERROR.search(line)
    return (m.group(1) if m else line).strip().rstrip(".")


def classify_failure(lines: Sequence[str], returncode: int, target: str, filters: str = "",
                     ran: Sequence[str] = ()) -> CaptureError | None:
    """The one-line error for a finished ncu run, or None when it succeeded. ``target`` names what
    ran (the script, module or command), ``filters`` the kernel filters in force, ``ran`` the kernel
    names the program launched (where ncu reported them)."""
    text = "\n".join(lines)
    if any(k in text for k in _CONTAINER):
        return CounterPermissionError(
            "GPU performance counters are not permitted inside this container (RmProfilingAdminOnly): start it "
            "with --cap-add=SYS_ADMIN (docker/podman), or on the host allow all users with "
            f"NVreg_RestrictProfilingToAdminUsers=0, see {PERM_URL}"
        )
    unsupported = next((ln for ln in lines if any(k in ln for k in _UNSUPPORTED)), None)
    if unsupported is not None:
        return NoGpuError(
            f"this ncu does not support the GPU (ncu: {_quote_ncu(unsupported)}): install the Nsight Compute that "
            "came with a CUDA toolkit as new as the GPU, or pass it with --ncu PATH"
        )
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
            f"{target} failed with exit code {app} under ncu (its output is above); "
            "fix it so it runs on its own first", exit_code=app if app else 2,
        )
    if "No kernels were profiled" in text:
        which = f"the filters {filters} matched none of the kernels that ran" if filters else \
            "the program launched no CUDA kernel"
        names = f" (kernels that ran: {', '.join(list(dict.fromkeys(ran))[:8])})" if ran else ""
        return NoKernelsError(
            f"no kernels were profiled: {which}{names}; kernels in child processes are followed "
            "(--target-processes all)"
        )
    if returncode != 0:
        errors = [_quote_ncu(ln) for ln in lines if "==ERROR==" in ln]
        detail = f": {errors[-1]}" if errors else ""
        return CaptureError(f"ncu exited with code {returncode}{detail}")
    return None
