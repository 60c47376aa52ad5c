"""vecadd FP32, c = a + b: 1 FLOP and 12 bytes per element (intensity 0.083)."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

SOURCE = C.Source("vecadd", r"""
extern "C" __global__ void vecadd(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
""", ("vecadd",))
SOURCES = (SOURCE,)


def counts(n: int) -> tuple[int, int]:
    """1 add per element; read a and b, write c (4 bytes each)."""
    return n, 12 * n


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--n", type=int, default=1 << 26, help="elements")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    a, b = C.randn(args.n, seed=args.seed), C.randn(args.n, seed=args.seed + 1)
    c = cp.empty_like(a)
    k = C.kernel(SOURCE)
    res = C.run("vecadd", lambda: k(C.grid1d(args.n, 256), (256,), (a, b, c, cp.int64(args.n))),
                counts(args.n), args, lambda: C.close(c, reference(a.get(), b.get())))
    return C.finish([res], args)


if __name__ == "__main__":
    raise SystemExit(main())
