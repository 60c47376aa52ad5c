"""Size sweep into the overhead regime: SAXPY from 2^10 to 2^26 elements.

Large sizes run at the bandwidth roof; below some size the time stops scaling with the work
(launch and ramp-up overhead dominate) and GB/s collapses.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C
from kernels import saxpy

SOURCES = saxpy.SOURCES
SIZES = tuple(C.pow2_range(1 << 10, 1 << 26))[::2]  # 2^10, 2^12, ..., 2^26
counts = saxpy.counts


def reference(a: float, x: np.ndarray, y0: np.ndarray, runs: int) -> np.ndarray:
    """y after ``runs`` in-place SAXPY launches."""
    return y0.astype(np.float64) + runs * a * x.astype(np.float64)


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="elements")
    p.add_argument("--a", type=float, default=0.5)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    runs = args.warmup + max(args.repeat, 1)
    results = []
    for n in args.sizes:
        x, y0 = C.randn(n, seed=args.seed), C.randn(n, seed=args.seed + 1)
        y = y0.copy()
        results.append(C.run(f"size_sweep_n{n:09d}", lambda n=n, x=x, y=y: saxpy.launch(cp, n, args.a, x, y),
                             counts(n), args,
                             lambda x=x, y=y, y0=y0: C.close(y, reference(args.a, x.get(), y0.get(), runs),
                                                             1e-4, 1e-4)))
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
