"""ReLU FP16, y = max(x, 0): ~1 FLOP (a compare) and 4 bytes per element (intensity ~0.25)."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

SOURCE = C.Source("relu_fp16", r"""
#include <cuda_fp16.h>
extern "C" __global__ void relu_fp16(const __half* __restrict__ x, __half* __restrict__ y,
                                     long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        __half v = x[i];
        y[i] = __hgt(v, __float2half(0.0f)) ? v : __float2half(0.0f);
    }
}
""", ("relu_fp16",))
SOURCES = (SOURCE,)


def counts(n: int) -> tuple[int, int]:
    """One compare per element; read 2 bytes, write 2 bytes."""
    return n, 4 * n


def reference(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), dtype=x.dtype))


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--n", type=int, default=1 << 27, help="elements")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    x = C.randn(args.n, "float16", seed=args.seed)
    y = cp.empty_like(x)
    k = C.kernel(SOURCE)
    res = C.run("relu_fp16", lambda: k(C.grid1d(args.n, 256), (256,), (x, y, cp.int64(args.n))),
                counts(args.n), args, lambda: C.close(y, reference(x.get()), 0, 0))
    return C.finish([res], args)


if __name__ == "__main__":
    raise SystemExit(main())
