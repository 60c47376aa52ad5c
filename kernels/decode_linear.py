"""Decode linear layer, FP16: Y[B,N] = X[B,K] W[K,N] through cuBLAS, over batch sizes B.

The weights dominate the bytes and are shared by the batch, so intensity ~ B until the ridge:
2BKN FLOPs over 2(KN + BK + BN) bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

SOURCES: tuple[C.Source, ...] = ()  # cuBLAS through cupy.matmul: no source of our own
BATCHES = tuple(C.pow2_range(1, 256))


def counts(batch: int, k: int, n: int) -> tuple[int, int]:
    """2BKN FLOPs; W, X read once and Y written once, 2 bytes each."""
    return 2 * batch * k * n, 2 * (k * n + batch * k + batch * n)


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32) @ w.astype(np.float32)).astype(np.float16)


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--batch", type=int, nargs="+", default=list(BATCHES))
    p.add_argument("--k", type=int, default=8192, help="input features")
    p.add_argument("--n", type=int, default=8192, help="output features (W is K x N, FP16)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    scale = float(1 / np.sqrt(args.k))
    w = C.randn((args.k, args.n), "float16", seed=args.seed, scale=scale)
    results = []
    for b in args.batch:
        x = C.randn((b, args.k), "float16", seed=args.seed + b)
        y = cp.empty((b, args.n), cp.float16)
        results.append(C.run(f"decode_linear_b{b:04d}", lambda x=x, y=y: cp.matmul(x, w, out=y),
                             counts(b, args.k, args.n), args,
                             lambda x=x, y=y: C.close(y[:4], reference(x[:4].get(), w.get()),
                                                      2e-2, 2e-2)))
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
