"""GEMV FP16, y = A x with A M x K: 2MK FLOPs and ~2MK bytes (intensity ~1).

One warp per row, half2 loads, FP32 accumulation, FP16 output.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

SOURCE = C.Source("gemv_fp16", r"""
#include <cuda_fp16.h>
// K must be even; blockDim.x = 32 * rows per block.
extern "C" __global__ void gemv_fp16(const __half* __restrict__ A, const __half* __restrict__ x,
                                     __half* __restrict__ y, int M, int K) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= M) return;
    const __half2* a2 = reinterpret_cast<const __half2*>(A + (long long)row * K);
    const __half2* x2 = reinterpret_cast<const __half2*>(x);
    float acc = 0.0f;
    for (int j = lane; j < K / 2; j += 32) {
        float2 a = __half22float2(a2[j]), v = __half22float2(x2[j]);
        acc = fmaf(a.x, v.x, acc);
        acc = fmaf(a.y, v.y, acc);
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = __float2half(acc);
}
""", ("gemv_fp16",))
SOURCES = (SOURCE,)


def counts(m: int, k: int) -> tuple[int, int]:
    """2MK FLOPs; bytes: A (2MK), x (2K) and y (2M) once."""
    return 2 * m * k, 2 * m * k + 2 * k + 2 * m


def reference(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (a.astype(np.float32) @ x.astype(np.float32)).astype(np.float16)


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--m", type=int, default=16384, help="rows of A")
    p.add_argument("--k", type=int, default=8192, help="columns of A (even)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    a = C.randn((args.m, args.k), "float16", seed=args.seed)
    x = C.randn(args.k, "float16", seed=args.seed + 1)
    y = cp.empty(args.m, cp.float16)
    kern, rows_per_block = C.kernel(SOURCE), 8
    grid = C.grid1d(args.m, rows_per_block)
    res = C.run("gemv_fp16", lambda: kern(grid, (32 * rows_per_block,),
                                          (a, x, y, cp.int32(args.m), cp.int32(args.k))),
                counts(args.m, args.k), args,
                lambda: C.close(y, reference(a.get(), x.get()), 2e-2, 2e-2))
    return C.finish([res], args)


if __name__ == "__main__":
    raise SystemExit(main())
