"""Square GEMM C = A B, FP32 and FP16: naive, shared-memory tiled, and cuBLAS (cupy.matmul).

2N^3 FLOPs; compulsory bytes 12N^2 in FP32 (intensity N/6) and 6N^2 in FP16 (N/3).
The FP16 kernels accumulate in FP32 and write FP16.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

TILE = 16
DTYPES = {"fp32": ("float", 4, "float32"), "fp16": ("__half", 2, "float16")}
IMPLS = ("naive", "tiled", "cublas")

_TEMPLATE = r"""
#include <cuda_fp16.h>
typedef @T@ T;
#define TILE @TILE@
__device__ __forceinline__ float ld(float v) { return v; }
__device__ __forceinline__ float ld(__half v) { return __half2float(v); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(__half* p, float v) { *p = __float2half(v); }
@EPILOGUE@
// C[i][j] = sum_k A[i][k] B[k][j]; one thread per output, operands straight from memory.
extern "C" __global__ void gemm_naive_@S@(const T* __restrict__ A, const T* __restrict__ B,
                                          T* __restrict__ C, int N) {
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) acc = fmaf(ld(A[(long long)i * N + k]), ld(B[(long long)k * N + j]), acc);
    st(&C[(long long)i * N + j], EPI(acc));
}
// The same product through TILE x TILE tiles in shared memory: each loaded value is used TILE times.
extern "C" __global__ void gemm_tiled_@S@(const T* __restrict__ A, const T* __restrict__ B,
                                          T* __restrict__ C, int N) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE + 1];
    int ty = threadIdx.y, tx = threadIdx.x;
    int i = blockIdx.y * TILE + ty, j = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < N; t += TILE) {
        As[ty][tx] = (i < N && t + tx < N) ? ld(A[(long long)i * N + t + tx]) : 0.0f;
        Bs[ty][tx] = (t + ty < N && j < N) ? ld(B[(long long)(t + ty) * N + j]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (i < N && j < N) st(&C[(long long)i * N + j], EPI(acc));
}
"""


def source(dtype: str, epilogue: str = "", suffix: str = "") -> C.Source:
    """The naive and tiled kernels for one dtype; ``epilogue`` defines ``float EPI(float)``."""
    ctype = DTYPES[dtype][0]
    epi = epilogue or "__device__ __forceinline__ float EPI(float v) { return v; }"
    s = dtype + suffix
    code = (_TEMPLATE.replace("@T@", ctype).replace("@TILE@", str(TILE))
            .replace("@EPILOGUE@", epi).replace("@S@", s))
    return C.Source(f"gemm_{s}", code, (f"gemm_naive_{s}", f"gemm_tiled_{s}"))


SOURCES = tuple(source(d) for d in DTYPES)


def counts(n: int, dtype: str = "fp32") -> tuple[int, int]:
    """2N^3 FLOPs; A and B read once, C written once: 3 N^2 elements."""
    return 2 * n**3, 3 * DTYPES[dtype][1] * n**2


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = a.astype(np.float64) @ b.astype(np.float64)
    return out.astype(a.dtype)


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--n", type=int, default=2048, help="matrix size N (N x N x N)")
    p.add_argument("--dtype", nargs="+", choices=tuple(DTYPES), default=list(DTYPES))
    p.add_argument("--impl", nargs="+", choices=IMPLS, default=list(IMPLS))
    return p


def launcher(cp: object, impl: str, dtype: str, a: object, b: object, c: object, n: int,
             src: C.Source | None = None):  # noqa: ANN201 - returns a zero-argument callable
    """A zero-argument function running one GEMM implementation (also used by gelu_epilogue)."""
    if impl == "cublas":
        return lambda: cp.matmul(a, b, out=c)  # type: ignore[attr-defined]
    src = src or source(dtype)
    k = C.kernel(src, f"gemm_{impl}_{src.kernels[0].split('_', 2)[2]}")
    grid = ((n + TILE - 1) // TILE, (n + TILE - 1) // TILE)
    return lambda: k(grid, (TILE, TILE), (a, b, c, cp.int32(n)))  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    n, results = args.n, []
    for dtype in args.dtype:
        np_dtype = DTYPES[dtype][2]
        a = C.randn((n, n), np_dtype, seed=args.seed)
        b = C.randn((n, n), np_dtype, seed=args.seed + 1)
        c = cp.empty_like(a)
        want = None if args.no_check else reference(a.get(), b.get())
        tol = 1e-3 if dtype == "fp32" else 2e-2
        # Bind the loop's values now, so a check run later still sees this dtype's buffers (B023).
        check = None if want is None else (lambda c=c, want=want, tol=tol: C.close(c, want, tol, tol * np.sqrt(n)))
        for impl in args.impl:
            results.append(C.run(f"gemm_{dtype}_{impl}", launcher(cp, impl, dtype, a, b, c, n),
                                 counts(n, dtype), args, check))
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
