"""Layernorm as six unfused kernels (the seeds' worked example), FP32.

mean = x.mean(-1); xc = x - mean; sq = xc*xc; var = sq.mean(-1); y = xc*rsqrt(var+eps);
out = y*gamma + beta: six launches. Algorithmic bytes are two passes over x (read x, write out);
the kernels actually move ten (read x | read x, write xc | read xc, write sq | read sq |
read xc, write y | read y, write out): 2.7 GB instead of 0.54 GB at 16384 x 4096.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C
from kernels import layernorm

ACHIEVED_PASSES = 10
ALGORITHMIC_PASSES = 2

SOURCE = C.Source("layernorm_unfused", C.BLOCK_REDUCE + r"""
extern "C" __global__ void row_mean(const float* __restrict__ x, float* __restrict__ m, int cols) {
    const float* xr = x + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    s = block_reduce(s, false);
    if (threadIdx.x == 0) m[blockIdx.x] = s / cols;
}
extern "C" __global__ void sub_rows(const float* __restrict__ x, const float* __restrict__ m,
                                    float* __restrict__ xc, int cols, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) xc[i] = x[i] - m[i / cols];
}
extern "C" __global__ void square(const float* __restrict__ a, float* __restrict__ b, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i] * a[i];
}
extern "C" __global__ void normalize(const float* __restrict__ xc, const float* __restrict__ var,
                                     float* __restrict__ y, int cols, float eps, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = xc[i] * rsqrtf(var[i / cols] + eps);
}
extern "C" __global__ void affine(const float* __restrict__ y, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ out,
                                  int cols, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { int j = (int)(i % cols); out[i] = y[i] * gamma[j] + beta[j]; }
}
""", ("row_mean", "sub_rows", "square", "normalize", "affine"))
SOURCES = (SOURCE,)
OPS = ("mean", "sub", "square", "mean_sq", "normalize", "affine")  # six launches


def counts(rows: int, cols: int) -> tuple[int, int]:
    """The algorithmic counts: the same computation as the fused layernorm."""
    return layernorm.counts(rows, cols)


def achieved_bytes(rows: int, cols: int) -> int:
    """The bytes the six kernels move: ten passes over the FP32 activation."""
    return ACHIEVED_PASSES * 4 * rows * cols


def algorithmic_bytes(rows: int, cols: int) -> int:
    """Two passes (read x, write out), without gamma and beta: the seeds' 0.54 GB."""
    return ALGORITHMIC_PASSES * 4 * rows * cols


reference = layernorm.reference


def six_ops(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = layernorm.EPS) -> np.ndarray:
    """The six kernels' steps in NumPy, one line each (equal to :func:`reference`)."""
    mean = x.mean(axis=-1, keepdims=True)      # kernel 1
    xc = x - mean                              # kernel 2
    sq = xc * xc                               # kernel 3
    var = sq.mean(axis=-1, keepdims=True)      # kernel 4
    y = xc / np.sqrt(var + eps)                # kernel 5
    return y * gamma + beta                    # kernel 6


def build_parser() -> C.argparse.ArgumentParser:
    p = layernorm.build_parser()
    p.description = (__doc__ or "").splitlines()[0]
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    x, gamma, beta = layernorm.inputs(args)
    rows, cols, n = args.rows, args.cols, args.rows * args.cols
    mean, var = cp.empty(rows, cp.float32), cp.empty(rows, cp.float32)
    xc, sq, y, out = (cp.empty_like(x) for _ in range(4))
    k = {name: C.kernel(SOURCE, name) for name in SOURCE.kernels}
    g, b = C.grid1d(n, 256), (256,)
    c32, n64, eps = cp.int32(cols), cp.int64(n), cp.float32(layernorm.EPS)

    def work() -> None:
        k["row_mean"]((rows,), (args.block,), (x, mean, c32))           # read x
        k["sub_rows"](g, b, (x, mean, xc, c32, n64))                    # read x, write xc
        k["square"](g, b, (xc, sq, n64))                                # read xc, write sq
        k["row_mean"]((rows,), (args.block,), (sq, var, c32))           # read sq
        k["normalize"](g, b, (xc, var, y, c32, eps, n64))               # read xc, write y
        k["affine"](g, b, (y, gamma, beta, out, c32, n64))              # read y, write out

    res = C.run("layernorm_unfused", work, counts(rows, cols), args,
                lambda: layernorm.check(out, x, gamma, beta))
    print(f"# bytes model: algorithmic {algorithmic_bytes(rows, cols) / 1e9:.2f} GB, "
          f"six kernels move ~{achieved_bytes(rows, cols) / 1e9:.2f} GB")
    return C.finish([res], args)


if __name__ == "__main__":
    raise SystemExit(main())
