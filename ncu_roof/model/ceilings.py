"""Measured roofline ceilings: CuPy micro-benchmarks, and the TOML file that holds them.

Pure parts (tested without a GPU): the work each benchmark does (:func:`copy_bytes`,
:func:`fma_flops`, :func:`gemm_flops`...), timing statistics (:func:`summarize`), the TOML
writer (:func:`format_ceilings`) and reader (:func:`read_ceilings`).
GPU parts (CuPy, imported lazily): :func:`measure_ceilings` and the ``_bench_*`` functions.

File layout::

    [device]   name, cc, driver (when known)
    [ceilings] dram_bytes_per_s, l2_bytes_per_s, fp32_flops_per_s, fp16_tensor_flops_per_s,
               bf16_tensor_flops_per_s, launch_overhead_s, launch_sync_s, launch_graph_s
    [method]   one line per ceiling on how it was measured (or why it was skipped)

A ceiling that could not be measured is left out of ``[ceilings]``; ``[method]`` says why.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ncu_roof.errors import CaptureError, InputError
from ncu_roof.files import check_writable, write_atomic
from ncu_roof.schema import check_keys, nearest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# key -> (unit, lowest plausible, highest plausible); the range catches unit mistakes (TB/s vs B/s).
CEILING_UNITS: dict[str, tuple[str, float, float]] = {
    "dram_bytes_per_s": ("byte/s", 1e8, 1e15),
    "l2_bytes_per_s": ("byte/s", 1e8, 1e16),
    "fp32_flops_per_s": ("FLOP/s", 1e8, 1e17),
    "fp16_tensor_flops_per_s": ("FLOP/s", 1e8, 1e18),
    "bf16_tensor_flops_per_s": ("FLOP/s", 1e8, 1e18),
    "launch_overhead_s": ("s", 1e-9, 1.0),
    "launch_sync_s": ("s", 1e-9, 1.0),
    "launch_graph_s": ("s", 1e-9, 1.0),
}
CEILING_KEYS = tuple(CEILING_UNITS)
INSTALL_HINT = "pip install 'ncu-roof[capture]'"


# --- arithmetic of each benchmark -------------------------------------------------------------
def copy_bytes(n: int, itemsize: int) -> int:
    """DRAM/L2 traffic of ``y[i] = x[i]``: one read and one write per element."""
    return 2 * n * itemsize


def read_bytes(n: int, itemsize: int, repeats: int) -> int:
    """Traffic of reading ``n`` elements ``repeats`` times."""
    return n * itemsize * repeats


def fma_flops(threads: int, iterations: int, chains: int) -> int:
    """FLOPs of a kernel where each thread runs ``chains`` FMA chains ``iterations`` long (2 per FMA)."""
    return 2 * threads * iterations * chains


def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of an ``m x k`` by ``k x n`` matrix product (one multiply and one add per term)."""
    return 2 * m * n * k


def rate(work: float, seconds: float) -> float:
    """Work per second; the caller's work unit (bytes, FLOPs)."""
    if seconds <= 0 or not math.isfinite(seconds):
        raise ValueError(f"bad time {seconds!r}")
    return work / seconds


# --- timing statistics ----------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    """Summary of repeated timings in seconds."""

    median: float
    minimum: float
    maximum: float
    runs: int

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the runs were."""
        return (self.maximum - self.minimum) / self.median if self.median else math.inf


def summarize(samples: list[float]) -> Timing:
    """Median, min and max of timings (seconds); the median is what ceilings use."""
    if not samples:
        raise ValueError("no timing samples")
    return Timing(statistics.median(samples), min(samples), max(samples), len(samples))


# --- the TOML file --------------------------------------------------------------------------
def _toml_str(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"')
    out = "".join(c if c >= " " or c == "\t" else f"\\u{ord(c):04x}" for c in out)
    return f'"{out}"'


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot write non-finite {v!r}")
        return repr(v)
    return _toml_str(str(v))


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else _toml_str(k)


def format_ceilings(
    device: Mapping[str, object], ceilings: Mapping[str, float], method: Mapping[str, str],
    when: datetime | None = None,
) -> str:
    """The ceilings file text (a small TOML writer: strings, numbers, booleans)."""
    unknown = sorted(set(ceilings) - set(CEILING_UNITS))
    if unknown:
        raise ValueError(f"unknown ceilings {unknown}")
    stamp = (when or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"# Measured roofline ceilings, written by `ncu-roof ceilings` at {stamp}.",
             "# Units: bytes/s, FLOP/s, seconds. Feed to `ncu-roof diagnose --ceilings`.", ""]
    lines.append("[device]")
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in device.items()]
    lines += ["", "[ceilings]"]
    lines += [f"{k} = {_toml_value(float(ceilings[k]))}" for k in CEILING_KEYS if k in ceilings]
    lines += ["", "[method]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in method.items()]
    return "\n".join(lines) + "\n"


def write_ceilings(path: Path, text: str, force: bool = False) -> Path:
    """Write the file, refusing to overwrite unless ``force``."""
    check_writable(path, force)
    return write_atomic(path, text)


def _check_value(path: Path, key: str, value: object) -> float:
    unit, lo, hi = CEILING_UNITS[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{path}: {key} must be a number in {unit}, not {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{path}: {key} = {value!r} must be a positive number in {unit}")
    if not lo <= v <= hi:
        raise InputError(f"{path}: {key} = {value!r} is not plausible in {unit} (expected {lo:g} to {hi:g}): "
                         "write plain units, e.g. 3.3e12 for 3.3 TB/s")
    return v


def read_ceilings(path: Path | str) -> dict[str, Any]:
    """Read and validate a ceilings file.

    Returns ``{"device": {...}, "ceilings": {key: float in plain units}, "method": {...}}``;
    raises :class:`InputError` with a one-line message for a missing or bad file.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"ceilings file not found: {p}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{p}: not a valid TOML ceilings file ({first})") from None
    table = data.get("ceilings")
    if not isinstance(table, dict) or not table:
        raise InputError(f"{p}: no [ceilings] table (write one with `ncu-roof ceilings -o {p.name}`)")
    unknown = sorted(set(table) - set(CEILING_UNITS))
    if unknown:
        guess = nearest(unknown[0], CEILING_KEYS)
        hint = f"; did you mean {guess!r}?" if guess else ""
        raise InputError(f"{p}: unknown ceiling {unknown[0]!r} (known: {', '.join(CEILING_KEYS)}{hint})")
    check_keys(data, ("device", "ceilings", "method"), "the file", p)
    ceilings = {k: _check_value(p, k, table[k]) for k in CEILING_KEYS if k in table}
    for name in ("device", "method"):
        if name in data and not isinstance(data[name], dict):
            raise InputError(f"{p}: [{name}] must be a table")
    return {"device": dict(data.get("device", {})), "ceilings": ceilings, "method": dict(data.get("method", {}))}


# --- GPU benchmarks (CuPy) ------------------------------------------------------------------
Progress = Callable[[str], None]


def _import_cupy() -> Any:
    try:
        import cupy
    except ImportError:
        raise CaptureError(f"CuPy is not installed: {INSTALL_HINT}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy raises CUDARuntimeError (no driver / no device)
        raise CaptureError(f"no CUDA GPU found ({exc}): run ceilings on a machine with an NVIDIA GPU") from None
    if count < 1:
        raise CaptureError("no CUDA GPU found: run ceilings on a machine with an NVIDIA GPU")
    return cupy


def _time_gpu(cp: Any, fn: Callable[[], object], runs: int = 7, warmup: int = 2) -> Timing:
    """Median of ``runs`` CUDA-event timings of ``fn`` (after ``warmup`` untimed calls)."""
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    samples = []
    for _ in range(runs):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    return summarize(samples)


def device_info(cp: Any) -> dict[str, object]:
    """Name, compute capability, driver version, SM count and L2 size of device 0."""
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    info: dict[str, object] = {"name": name, "cc": f"{props['major']}.{props['minor']}"}
    try:
        v = cp.cuda.runtime.driverGetVersion()
        info["driver"] = f"CUDA {v // 1000}.{(v % 1000) // 10}"
    except Exception:  # noqa: BLE001 - the driver version is optional
        pass
    info["sm_count"] = int(props["multiProcessorCount"])
    info["l2_bytes"] = int(props["l2CacheSize"])
    return info


_COPY = "extern \"C\" __global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, long long n)" \
    "{ for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;" \
    " i += (long long)gridDim.x * blockDim.x) y[i] = x[i]; }"

_L2_READ = r"""
extern "C" __global__ void l2_read(const float4* __restrict__ x, long long n, int repeats, float* out) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    long long stride = (long long)gridDim.x * blockDim.x;
    for (int r = 0; r < repeats; ++r)
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
            float4 v = __ldcg(x + i);  // cached in L2 only: every read is L2 traffic
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    if (acc.x + acc.y + acc.z + acc.w == 1234.5f) out[0] = acc.x;  // keep the loads alive
}
"""

FMA_CHAINS = 8
FMA_ITERS = 4096
_FMA = r"""
extern "C" __global__ void fma_peak(float* out, float b, float c, int iters) {
    float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3,
          a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;  // 8 independent chains
    #pragma unroll 16
    for (int i = 0; i < iters; ++i) {
        a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
        a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
    }
    float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    if (s == 1234.5f) out[0] = s;
}
"""
_EMPTY = 'extern "C" __global__ void empty() {}'


def _bench_dram(cp: Any, info: Mapping[str, object]) -> tuple[float, str]:
    free, _total = cp.cuda.runtime.memGetInfo()
    size = min(1 << 30, int(free * 0.4) // 16 * 16)  # 1 GiB per array, two arrays
    if size < 16 * int(info["l2_bytes"]):  # type: ignore[call-overload]
        raise RuntimeError(f"not enough free GPU memory for arrays far larger than L2 ({free} bytes free)")
    n4 = size // 16
    x, y = cp.ones(n4 * 4, dtype=cp.float32), cp.empty(n4 * 4, dtype=cp.float32)
    kern = cp.RawKernel(_COPY, "copy4")
    blocks = int(info["sm_count"]) * 8  # type: ignore[call-overload]
    t = _time_gpu(cp, lambda: kern((blocks,), (512,), (x, y, cp.int64(n4))))
    nbytes = copy_bytes(n4 * 4, 4)
    return rate(nbytes, t.median), (f"float4 copy kernel, 2 x {size / 2**30:.2f} GiB arrays, bytes = read + write "
                                    f"= {nbytes}, CUDA events, median of {t.runs} (spread {t.spread:.1%})")


def _bench_l2(cp: Any, info: Mapping[str, object]) -> tuple[float, str]:
    size = max(1 << 20, int(info["l2_bytes"]) // 4 // 16 * 16)  # type: ignore[call-overload]
    n4, repeats = size // 16, 200
    x = cp.ones(n4 * 4, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.float32)
    kern = cp.RawKernel(_L2_READ, "l2_read")
    blocks = int(info["sm_count"]) * 8  # type: ignore[call-overload]
    t = _time_gpu(cp, lambda: kern((blocks,), (512,), (x, cp.int64(n4), cp.int32(repeats), out)))
    nbytes = read_bytes(n4 * 4, 4, repeats)
    return rate(nbytes, t.median), (f"__ldcg (L2-only) reads of a {size / 2**20:.1f} MiB array (1/4 of L2) x "
                                    f"{repeats}, bytes = {nbytes}, CUDA events, median of {t.runs}")


def _bench_fp32(cp: Any, info: Mapping[str, object]) -> tuple[float, str]:
    threads, blocks = 256, int(info["sm_count"]) * 16  # type: ignore[call-overload]
    out = cp.zeros(1, dtype=cp.float32)
    kern = cp.RawKernel(_FMA, "fma_peak")
    t = _time_gpu(cp, lambda: kern((blocks,), (threads,), (out, cp.float32(0.999), cp.float32(0.001),
                                                           cp.int32(FMA_ITERS))))
    flops = fma_flops(threads * blocks, FMA_ITERS, FMA_CHAINS)
    return rate(flops, t.median), (f"RawKernel, {FMA_CHAINS} independent fmaf chains x {FMA_ITERS} per thread, "
                                   f"{blocks} x {threads} threads, FLOPs = 2 per FMA = {flops}, median of {t.runs}")


GEMM_N = 8192


def _bench_fp16(cp: Any) -> tuple[float, str]:
    a = cp.random.random((GEMM_N, GEMM_N), dtype=cp.float32).astype(cp.float16)
    b = cp.random.random((GEMM_N, GEMM_N), dtype=cp.float32).astype(cp.float16)
    c = cp.empty((GEMM_N, GEMM_N), dtype=cp.float16)
    t = _time_gpu(cp, lambda: cp.matmul(a, b, out=c))
    flops = gemm_flops(GEMM_N, GEMM_N, GEMM_N)
    return rate(flops, t.median), (f"cupy.matmul (cuBLAS) fp16 {GEMM_N}^3, FLOPs = 2 m n k = {flops}, "
                                   f"median of {t.runs}")


def _bench_bf16(cp: Any) -> tuple[float, str]:
    """cuBLAS gemmEx on bf16 bit patterns (CuPy has no bfloat16 dtype)."""
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    cuda_r_16bf, compute_32f, algo_default = 14, 68, -1
    bits = cp.random.random((GEMM_N, GEMM_N), dtype=cp.float32).view(cp.uint32)
    a = (bits >> 16).astype(cp.uint16)  # bf16 = upper half of fp32
    b = a.copy()
    c = cp.empty_like(a)
    one, zero = np.ones(1, dtype=np.float32), np.zeros(1, dtype=np.float32)
    handle = cp.cuda.device.get_cublas_handle()

    def gemm() -> None:
        cublas.gemmEx(handle, 0, 0, GEMM_N, GEMM_N, GEMM_N, one.ctypes.data, a.data.ptr, cuda_r_16bf, GEMM_N,
                      b.data.ptr, cuda_r_16bf, GEMM_N, zero.ctypes.data, c.data.ptr, cuda_r_16bf, GEMM_N,
                      compute_32f, algo_default)

    t = _time_gpu(cp, gemm)
    flops = gemm_flops(GEMM_N, GEMM_N, GEMM_N)
    return rate(flops, t.median), (f"cuBLAS gemmEx bf16 in/out, fp32 compute, {GEMM_N}^3, FLOPs = {flops}, "
                                   f"median of {t.runs}")


LAUNCHES = 2000


def _bench_launch(cp: Any) -> dict[str, tuple[float, str]]:
    """Empty-kernel launch costs: back-to-back, with synchronize, via a CUDA graph (host wall clock)."""
    kern = cp.RawKernel(_EMPTY, "empty")
    dev = cp.cuda.Device()
    kern((1,), (1,), ())
    dev.synchronize()

    def back_to_back() -> float:
        t0 = time.perf_counter()
        for _ in range(LAUNCHES):
            kern((1,), (1,), ())
        dev.synchronize()
        return (time.perf_counter() - t0) / LAUNCHES

    def with_sync() -> float:
        t0 = time.perf_counter()
        for _ in range(LAUNCHES // 4):
            kern((1,), (1,), ())
            dev.synchronize()
        return (time.perf_counter() - t0) / (LAUNCHES // 4)

    out = {
        "launch_overhead_s": (summarize([back_to_back() for _ in range(5)]).median,
                              f"{LAUNCHES} empty-kernel launches back to back then one synchronize, "
                              "host wall clock per launch, median of 5"),
        "launch_sync_s": (summarize([with_sync() for _ in range(5)]).median,
                          "empty kernel + Device.synchronize() each, host wall clock per launch, median of 5"),
    }
    stream = cp.cuda.Stream(non_blocking=True)
    if not hasattr(stream, "begin_capture"):
        raise _Skip("launch_graph_s", "this CuPy has no stream capture (CUDA graphs)", out)
    with stream:
        stream.begin_capture()
        for _ in range(LAUNCHES):
            kern((1,), (1,), ())
        graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()

    def graph_run() -> float:
        t0 = time.perf_counter()
        graph.launch(stream)
        stream.synchronize()
        return (time.perf_counter() - t0) / LAUNCHES

    out["launch_graph_s"] = (summarize([graph_run() for _ in range(5)]).median,
                             f"CUDA graph of {LAUNCHES} empty kernels (stream capture), one graph launch + "
                             "synchronize, host wall clock / kernels, median of 5")
    return out


class _Skip(Exception):
    """A benchmark that partly ran: the results so far and why one key was skipped."""

    def __init__(self, key: str, reason: str, partial: dict[str, tuple[float, str]]) -> None:
        super().__init__(reason)
        self.key, self.reason, self.partial = key, reason, partial


@dataclass
class Measured:
    device: dict[str, object]
    ceilings: dict[str, float]
    method: dict[str, str]


def measure_ceilings(progress: Progress = lambda _s: None) -> Measured:
    """Run every benchmark on GPU 0; a failing one is skipped and the reason kept in ``method``."""
    cp = _import_cupy()
    info = device_info(cp)
    result = Measured({k: info[k] for k in ("name", "cc", "driver") if k in info}, {}, {})
    single: list[tuple[str, Callable[[], tuple[float, str]]]] = [
        ("dram_bytes_per_s", lambda: _bench_dram(cp, info)),
        ("l2_bytes_per_s", lambda: _bench_l2(cp, info)),
        ("fp32_flops_per_s", lambda: _bench_fp32(cp, info)),
        ("fp16_tensor_flops_per_s", lambda: _bench_fp16(cp)),
        ("bf16_tensor_flops_per_s", lambda: _bench_bf16(cp)),
    ]
    for key, bench in single:
        progress(f"measuring {key}")
        try:
            value, how = bench()
            result.ceilings[key], result.method[key] = value, how
        except Exception as exc:  # noqa: BLE001 - one failing benchmark must not lose the others
            result.method[key] = f"skipped: {type(exc).__name__}: {exc}".splitlines()[0]
        _free(cp)
    progress("measuring launch overhead")
    try:
        launches = _bench_launch(cp)
    except _Skip as skip:
        launches = skip.partial
        result.method[skip.key] = f"unsupported: {skip.reason}"
    except Exception as exc:  # noqa: BLE001
        launches = {}
        result.method["launch_overhead_s"] = f"skipped: {type(exc).__name__}: {exc}".splitlines()[0]
    for key, (value, how) in launches.items():
        result.ceilings[key], result.method[key] = value, how
    return result


def _free(cp: Any) -> None:
    cp.get_default_memory_pool().free_all_blocks()
