"""Fused layernorm over rows, FP32: ~8 FLOPs and ~8 bytes per element (intensity ~1).

One block per row computes the mean, the variance and the normalized, scaled output; the row's
re-reads stay on chip, so DRAM sees one read of x and one write of out (plus gamma and beta).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

EPS = 1e-5
FLOPS_PER_ELEMENT = 8  # mean: add; var: sub, mul, add; normalize: sub, mul; affine: mul, add

SOURCE = C.Source("layernorm", C.BLOCK_REDUCE + r"""
extern "C" __global__ void layernorm_rows(const float* __restrict__ x,
                                          const float* __restrict__ gamma,
                                          const float* __restrict__ beta,
                                          float* __restrict__ out, int cols, float eps) {
    const float* xr = x + (long long)blockIdx.x * cols;
    float* orow = out + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    float mean = block_reduce(s, false) / cols;
    float v = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float d = xr[j] - mean; v += d * d; }
    float rstd = rsqrtf(block_reduce(v, false) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        orow[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}
""", ("layernorm_rows",))
SOURCES = (SOURCE,)


def counts(rows: int, cols: int) -> tuple[int, int]:
    """~8 FLOPs per element; compulsory bytes: x and out once (8 per element), gamma and beta."""
    n = rows * cols
    return FLOPS_PER_ELEMENT * n, 8 * n + 8 * cols


def reference(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = EPS) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def build_parser() -> C.argparse.ArgumentParser:
    return C.row_parser(__doc__)


def inputs(args: C.argparse.Namespace) -> tuple[object, object, object]:
    """x, gamma, beta on the GPU (shared with layernorm_unfused)."""
    x = C.randn((args.rows, args.cols), seed=args.seed)
    return x, C.randn(args.cols, seed=args.seed + 1), C.randn(args.cols, seed=args.seed + 2)


def check(out: object, x: object, gamma: object, beta: object) -> bool:
    f64 = [C.to_host(a).astype(np.float64) for a in (x, gamma, beta)]
    return C.close(out, reference(*f64), 1e-3, 1e-4)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    x, gamma, beta = inputs(args)
    out = cp.empty_like(x)
    k = C.kernel(SOURCE)
    res = C.run("layernorm", lambda: k((args.rows,), (args.block,),
                                       (x, gamma, beta, out, cp.int32(args.cols), cp.float32(EPS))),
                counts(args.rows, args.cols), args, lambda: check(out, x, gamma, beta))
    return C.finish([res], args)


if __name__ == "__main__":
    raise SystemExit(main())
