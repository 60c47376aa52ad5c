"""GELU after a matmul, FP32: unfused (tiled GEMM, then a GELU kernel) vs fused into the epilogue.

Both do the same algorithmic work: 2MNK + 10 MN FLOPs over A, B read once and C written once.
The unfused pair also writes C and reads it back: 8 MN extra bytes (128 MB at 4096 x 4096).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C
from kernels import gemm

GELU_FLOPS = 10  # per element, the seeds' count for the tanh approximation
_GELU = r"""
__device__ __forceinline__ float gelu(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}
"""
FUSED = gemm.source("fp32", _GELU + "__device__ __forceinline__ float EPI(float v) { return gelu(v); }",
                    "_gelu")
GELU = C.Source("gelu", _GELU + r"""
extern "C" __global__ void gelu_inplace(float* __restrict__ c, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) c[i] = gelu(c[i]);
}
""", ("gelu_inplace",))
SOURCES = (FUSED, GELU)


def counts(n: int) -> tuple[int, int]:
    """Square N: 2N^3 + 10 N^2 FLOPs; A, B read and C written once (12 N^2 bytes)."""
    return 2 * n**3 + GELU_FLOPS * n**2, 12 * n**2


def extra_bytes_unfused(n: int) -> int:
    """The round trip of the matmul's output through DRAM: write it, read it back."""
    return 8 * n**2


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    c = a.astype(np.float64) @ b.astype(np.float64)
    return 0.5 * c * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (c + 0.044715 * c**3)))


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--n", type=int, default=2048, help="square size N")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    n = args.n
    scale = float(1 / np.sqrt(n))  # keeps C ~ N(0, 1), where GELU is not trivial
    a = C.randn((n, n), seed=args.seed, scale=scale)
    b = C.randn((n, n), seed=args.seed + 1)
    c = cp.empty_like(a)
    want = None if args.no_check else reference(a.get(), b.get())
    matmul = gemm.launcher(cp, "tiled", "fp32", a, b, c, n)
    fused = gemm.launcher(cp, "tiled", "fp32", a, b, c, n, src=FUSED)
    g = C.kernel(GELU)

    def unfused() -> None:
        matmul()
        g(C.grid1d(n * n, 256), (256,), (c, cp.int64(n * n)))

    check = None if want is None else (lambda: C.close(c, want, 1e-3, 1e-4))
    results = [C.run("gelu_unfused", unfused, counts(n), args, check),
               C.run("gelu_fused", fused, counts(n), args, check)]
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
