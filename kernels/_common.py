"""Shared plumbing for the kernel scripts: arguments, CUDA-event timing, NVRTC sources, checks.

Nothing here imports CuPy at module level, so every script can be imported (and asked for
``--help``) on a machine without a GPU. CuPy is imported by :func:`cupy` inside ``main``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # scripts run as `python kernels/x.py` still import ncu_roof
    sys.path.insert(0, str(ROOT))

from ncu_roof.region import region  # noqa: E402

# --- CUDA sources -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One CUDA C++ translation unit: its text and the ``extern "C"`` kernels it defines."""

    name: str
    code: str
    kernels: tuple[str, ...]
    min_arch: int = 75  # lowest compute capability x10 it needs (WMMA FP16: 70)

    @property
    def headers(self) -> tuple[str, ...]:
        """The ``#include <...>`` headers the source needs (NVRTC must find them)."""
        return tuple(line.split("<", 1)[1].split(">", 1)[0] for line in self.code.splitlines()
                     if line.strip().startswith("#include <"))


# Device helpers shared by the row kernels: block-wide sum and max over blockDim.x threads.
BLOCK_REDUCE = r"""
#define NEG_INF __int_as_float(0xff800000)
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Block-wide reduction; every thread gets the result. blockDim.x must be a multiple of 32.
__device__ float block_reduce(float v, bool is_max) {
    __shared__ float buf[32];
    __shared__ float result;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = is_max ? warp_max(v) : warp_sum(v);
    if (lane == 0) buf[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < nwarps ? buf[lane] : (is_max ? NEG_INF : 0.0f);
        w = is_max ? warp_max(w) : warp_sum(w);
        if (lane == 0) result = w;
    }
    __syncthreads();
    float r = result;
    __syncthreads();  // buf/result may be reused by the next call
    return r;
}
"""


def cuda_include_dirs() -> list[str]:
    """Directories holding the CUDA headers (cuda_fp16.h, mma.h): toolkit first, then wheels."""
    dirs = []
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / "include")
    dirs.append(Path("/usr/local/cuda/include"))
    for entry in sys.path:
        nv = Path(entry or ".") / "nvidia"
        dirs += [nv / "cu13" / "include", nv / "cuda_runtime" / "include"]
    seen: list[str] = []
    for d in dirs:
        if (d / "cuda_fp16.h").is_file() and str(d) not in seen:
            seen.append(str(d))
    return seen


def nvrtc_options() -> tuple[str, ...]:
    """NVRTC options shared by CuPy's RawModule and the tests' compile check."""
    return ("--std=c++17", *(f"-I{d}" for d in cuda_include_dirs()[:1]))


# --- CuPy ---------------------------------------------------------------------------------------


def cupy() -> Any:
    """Import CuPy (only inside ``main``); a clear message where it is missing."""
    try:
        import cupy as cp  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - exercised on GPU machines only
        raise SystemExit(f"this script needs CuPy and a CUDA GPU ({exc}); "
                         "pip install 'ncu-roof[kernels]'") from None
    return cp


@cache
def _module(code: str) -> Any:
    return cupy().RawModule(code=code, options=nvrtc_options())


def kernel(source: Source, name: str | None = None) -> Any:
    """The compiled ``cupy.RawKernel`` for one kernel of ``source`` (its first by default)."""
    return _module(source.code).get_function(name or source.kernels[0])


def randn(shape: int | tuple[int, ...], dtype: str = "float32", seed: int = 0,
          scale: float = 1.0) -> Any:
    """Normal random CuPy array (generated in float32, then cast)."""
    cp = cupy()
    a = cp.random.default_rng(seed).standard_normal(shape, dtype=cp.float32)
    return (a * scale).astype(dtype)


def to_host(a: Any) -> Any:
    return a.get() if hasattr(a, "get") else a


# --- arguments, timing, output --------------------------------------------------------------


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An ArgumentParser with the options every script shares."""
    p = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--repeat", type=int, default=10, help="timed repetitions (each in a region)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs before timing")
    p.add_argument("--no-check", action="store_true", help="skip the check against NumPy")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    p.add_argument("--seed", type=int, default=0, help="random seed for the inputs")
    return p


def row_parser(doc: str | None) -> argparse.ArgumentParser:
    """:func:`parser` plus the row-wise kernels' sizes (softmax, layernorm): one block per row."""
    p = parser(doc)
    p.add_argument("--rows", type=int, default=16384)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--block", type=int, default=256, help="threads per row (multiple of 32)")
    return p


@dataclass
class Result:
    """One measured piece of work: mean time per repetition and its algorithmic counts."""

    name: str
    time_s: float
    flops: float
    bytes: float
    ok: bool | None = None

    def line(self) -> str:
        t = self.time_s
        gbs = self.bytes / t / 1e9 if t > 0 else float("nan")
        gfs = self.flops / t / 1e9 if t > 0 else float("nan")
        ai = self.flops / self.bytes if self.bytes else float("inf")
        check = {None: "", True: "  ok", False: "  MISMATCH"}[self.ok]
        return (f"{self.name:<28s} {t * 1e6:12.2f} us {gbs:10.1f} GB/s {gfs:11.1f} GFLOP/s"
                f"  I={ai:.3g} FLOP/B{check}")


def measure(name: str, work: Callable[[], Any], flops: float, nbytes: float,
            args: argparse.Namespace) -> Result:
    """Run ``work`` warmup times, then ``repeat`` times each inside ``region(name, ...)``.

    Time comes from CUDA events around the timed loop (mean per repetition).
    """
    cp = cupy()
    for _ in range(args.warmup):
        work()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(max(args.repeat, 1)):
        with region(name, flops=flops, bytes=nbytes):
            work()
    stop.record()
    stop.synchronize()
    ms = cp.cuda.get_elapsed_time(start, stop)
    return Result(name, ms * 1e-3 / max(args.repeat, 1), float(flops), float(nbytes))


def close(got: Any, want: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """Compare a GPU result with the NumPy reference (in float64)."""
    import numpy as np

    g = np.asarray(to_host(got), dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    return g.shape == w.shape and bool(np.allclose(g, w, rtol=rtol, atol=atol))


def finish(results: Sequence[Result], args: argparse.Namespace) -> int:
    """Print one line per result, write JSON if asked; exit code 1 on any mismatch."""
    for r in results:
        print(r.line())
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 1 if any(r.ok is False for r in results) else 0


def run(name: str, work: Callable[[], Any], counts: tuple[float, float], args: argparse.Namespace,
        check: Callable[[], bool] | None = None) -> Result:
    """:func:`measure` then, unless ``--no-check``, attach ``check()`` to the result."""
    res = measure(name, work, counts[0], counts[1], args)
    if check is not None and not args.no_check:
        res.ok = bool(check())
    return res


def pow2_range(lo: int, hi: int) -> list[int]:
    """Powers of two from lo to hi inclusive (lo, hi powers of two)."""
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def grid1d(n: int, block: int) -> tuple[int]:
    return ((n + block - 1) // block,)
