"""``ncu_roof.region``: mark a stretch of work with its algorithmic FLOPs and bytes.

The region opens an NVTX push/pop range whose message carries the counts, for example
``layernorm [ncu-roof flops=536870912 bytes=536870912]``. Nsight Compute stores the NVTX
stack of every launch in the report (capture with ``--nvtx``), and the loader reads the counts
back from the range name. With no profiler attached, or without the ``nvtx`` package, the cost
is one function call; no GPU is needed.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

DOMAIN = None  # the default NVTX domain, so `--nvtx-include "name/"` works as users expect
_TAG = re.compile(r"\s*\[ncu-roof(?P<body>[^\]]*)\]\s*$")
_FIELD = re.compile(r"(flops|bytes)=([0-9.eE+-]+)")


@dataclass(frozen=True)
class RegionCounts:
    """A region's name and algorithmic counts (None where not given)."""

    name: str
    flops: float | None
    bytes: float | None


def range_message(name: str, flops: float | None = None, bytes: float | None = None) -> str:
    """The NVTX message for a region: its name, then the counts in a bracketed tag."""
    fields = [f"{k}={int(v) if float(v).is_integer() else v!r}" for k, v in (("flops", flops), ("bytes", bytes))
              if v is not None]
    return f"{name} [ncu-roof {' '.join(fields)}]" if fields else name


def parse_range_message(message: str) -> RegionCounts:
    """Inverse of :func:`range_message`; a plain NVTX name gives counts of None."""
    m = _TAG.search(message)
    if not m:
        return RegionCounts(message, None, None)
    values = {k: float(v) for k, v in _FIELD.findall(m.group("body"))}
    return RegionCounts(message[: m.start()].strip(), values.get("flops"), values.get("bytes"))


_WARNED: list[bool] = []


def under_ncu(env: Any = None) -> bool:
    """Whether this process runs under Nsight Compute (ncu injects itself through CUDA_INJECTION64_PATH)."""
    environ = os.environ if env is None else env
    return "nsight-compute" in environ.get("CUDA_INJECTION64_PATH", "").lower() or "NV_COMPUTE_PROFILER" in environ


def _push_pop() -> tuple[Callable[[str], Any], Callable[[], Any]]:
    """NVTX push and pop from the ``nvtx`` package, else CuPy, else PyTorch (already imported), else none
    (warned once when running under ncu: the regions would be lost without a word)."""
    try:
        import nvtx  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        return (lambda m: nvtx.push_range(m, domain=DOMAIN)), (lambda: nvtx.pop_range(domain=DOMAIN))
    try:
        from cupy.cuda import nvtx as cupy_nvtx  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        return cupy_nvtx.RangePush, cupy_nvtx.RangePop
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "cuda") and hasattr(torch.cuda, "nvtx") and _built_with_cuda(torch):
        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    if under_ncu() and not _WARNED:
        _WARNED.append(True)
        warnings.warn("ncu_roof.region: no NVTX backend (pip install nvtx, or import cupy or torch first): "
                      "the regions will not reach the report", RuntimeWarning, stacklevel=3)
    return _NONE


def _built_with_cuda(torch: Any) -> bool:
    """Whether this PyTorch has CUDA (a CPU build has ``torch.cuda.nvtx`` but raises on use)."""
    is_built = getattr(getattr(getattr(torch, "backends", None), "cuda", None), "is_built", None)
    return True if is_built is None else bool(is_built())


_FOUND: list[tuple[Callable[[str], Any], Callable[[], Any]]] = []
_NONE: tuple[Callable[[str], Any], Callable[[], Any]] = ((lambda _m: None), (lambda: None))


def _backend() -> tuple[Callable[[str], Any], Callable[[], Any]]:
    """The NVTX backend, looked up until one is found (torch may be imported after ncu_roof)."""
    if not _FOUND:
        found = _push_pop()
        if found is _NONE:
            return found
        _FOUND.append(found)
    return _FOUND[0]


class region:  # noqa: N801 - used like a function: `with ncu_roof.region(...)`
    """Context manager and decorator: ``with region("softmax", flops=5*n, bytes=8*n): ...``."""

    def __init__(self, name: str, flops: float | None = None, bytes: float | None = None) -> None:
        if not name or "[" in name:
            raise ValueError("region name must be non-empty and must not contain '['")
        for label, v in (("flops", flops), ("bytes", bytes)):
            if v is not None and (v != v or v < 0):
                raise ValueError(f"region {label} must be a non-negative number, got {v!r}")
        self.counts = RegionCounts(name, None if flops is None else float(flops),
                                   None if bytes is None else float(bytes))
        self.message = range_message(name, flops, bytes)

    def __enter__(self) -> RegionCounts:
        _backend()[0](self.message)
        return self.counts

    def __exit__(self, *exc: object) -> None:
        _backend()[1]()

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]



# --- profiling on and off: warm-up and autotuning left out -------------------------------------
def _start_stop() -> tuple[Callable[[], Any], Callable[[], Any]] | None:
    """cudaProfilerStart/Stop through what the process already loaded: PyTorch, CuPy, else the CUDA
    runtime library itself (None where there is none)."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "cuda") and hasattr(torch.cuda, "profiler"):
        return torch.cuda.profiler.start, torch.cuda.profiler.stop
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        from cupy.cuda import profiler as cupy_profiler  # type: ignore[import-not-found]

        return cupy_profiler.start, cupy_profiler.stop
    import ctypes
    import ctypes.util

    for name in (ctypes.util.find_library("cudart"), "libcudart.so", "libcudart.so.12", "libcudart.so.13"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        return lib.cudaProfilerStart, lib.cudaProfilerStop
    return None


class profile:  # noqa: N801 - used like a function: `with ncu_roof.profile(): ...`
    """Context manager and decorator: profile only inside (``ncu-roof capture`` passes
    ``--profile-from-start off`` when the script uses it), so warm-up and autotuning stay out of the
    report. Without a CUDA runtime, or outside ncu, it costs a function call."""

    def __enter__(self) -> None:
        calls = _start_stop()
        if calls is not None:
            calls[0]()
        elif under_ncu():
            warnings.warn("ncu_roof.profile: no CUDA runtime found to start profiling (import torch or cupy "
                          "first)", RuntimeWarning, stacklevel=2)

    def __exit__(self, *exc: object) -> None:
        calls = _start_stop()
        if calls is not None:
            calls[1]()

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
