"""SAXPY FP32, y = a*x + y: 2 FLOPs (one FMA) and 12 bytes per element (intensity 0.17)."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

SOURCE = C.Source("saxpy", r"""
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                 long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}
""", ("saxpy",))
SOURCES = (SOURCE,)


def counts(n: int) -> tuple[int, int]:
    """One FMA (2 FLOPs) per element; read x and y, write y."""
    return 2 * n, 12 * n


def reference(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.float32(a) * x + y


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--n", type=int, default=1 << 26, help="elements")
    p.add_argument("--a", type=float, default=2.0, help="the scalar a")
    return p


def launch(cp: object, n: int, a: float, x: object, y: object) -> None:
    """One SAXPY launch (also used by size_sweep)."""
    C.kernel(SOURCE)(C.grid1d(n, 256), (256,), (cp.float32(a), x, y, cp.int64(n)))  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    x, y0 = C.randn(args.n, seed=args.seed), C.randn(args.n, seed=args.seed + 1)
    y = y0.copy()
    want_once = reference(args.a, x.get(), y0.get()) if not args.no_check else None

    res = C.run("saxpy", lambda: launch(cp, args.n, args.a, x, y), counts(args.n), args)
    if want_once is not None:  # run once more on fresh inputs for the check
        cp.copyto(y, y0)
        launch(cp, args.n, args.a, x, y)
        res.ok = C.close(y, want_once)
    return C.finish([res], args)


if __name__ == "__main__":
    raise SystemExit(main())
