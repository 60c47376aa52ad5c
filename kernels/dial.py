"""The intensity dial: load one float, do F FMAs, store one float; intensity F/4 FLOP/byte.

The F FMAs are generated as straight-line code (a compile-time F, no loop), spread over
independent chains (4 by default, 1 for the latency-bound variant) and merged by the last
chains-1 of the F FMAs, so each thread executes exactly F FFMA instructions.
Sweep F = 1..2048: GB/s is flat below the ridge, GFLOP/s is flat above it.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

B, CS = 0.999, (0.001, 0.002, 0.003, 0.004)  # multiplier and per-chain addends (runtime args)
F_VALUES = tuple(C.pow2_range(1, 2048))


def kernel_name(f: int, chains: int = 4) -> str:
    return f"dial_c{chains}_f{f}"


def _schedule(f: int, chains: int) -> tuple[int, list[int]]:
    """(number of chains used, the chain of each of the F - (chains - 1) chain FMAs in order)."""
    used = max(1, min(chains, f))
    return used, [k % used for k in range(f - (used - 1))]


def source(f: int, chains: int = 4) -> C.Source:
    """The dial kernel for one F as straight-line CUDA: exactly F ``fmaf`` calls."""
    if f < 1 or chains < 1:
        raise ValueError("F and chains must be >= 1")
    used, order = _schedule(f, chains)
    name = kernel_name(f, chains)
    body = [f"    float a{k} = v;" for k in range(used)]
    body += [f"    a{k} = fmaf(a{k}, b, c{k});" for k in order]
    body += [f"    a0 = fmaf(a0, b, a{k});" for k in range(1, used)]
    code = (f'extern "C" __global__ void {name}(const float* __restrict__ x, float* __restrict__ y,\n'
            "    float b, float c0, float c1, float c2, float c3, long long n) {\n"
            "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
            "    if (i >= n) return;\n"
            "    float v = x[i];\n" + "\n".join(body) + "\n    y[i] = a0;\n}\n")
    return C.Source(name, code, (name,))


SOURCES = (source(2048, 4), source(2048, 1), source(1, 4), source(6, 4))


def counts(n: int, f: int) -> tuple[int, int]:
    """F FMAs (2F FLOPs) per element; one float in, one float out (8 bytes)."""
    return 2 * f * n, 8 * n


def reference(x: np.ndarray, f: int, chains: int = 4) -> np.ndarray:
    """The same FMA schedule in float64 (one rounding per FMA on the GPU: compare with rtol)."""
    used, order = _schedule(f, chains)
    v = x.astype(np.float64)
    acc = [v.copy() for _ in range(used)]
    for k in order:
        acc[k] = acc[k] * B + CS[k]
    for k in range(1, used):
        acc[0] = acc[0] * B + acc[k]
    return acc[0]


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--n", type=int, default=1 << 26, help="elements (2 x 4n bytes; keep >> L2)")
    p.add_argument("--f", type=int, nargs="+", default=list(F_VALUES), help="FMAs per element")
    p.add_argument("--chains", type=int, nargs="+", default=[4, 1], help="independent FMA chains")
    p.add_argument("--check-n", type=int, default=1 << 16, help="elements checked against NumPy")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    x = C.randn(args.n, seed=args.seed)
    y = cp.empty_like(x)
    xs = x[: args.check_n].get()
    scal = (cp.float32(B), *(cp.float32(c) for c in CS), cp.int64(args.n))
    results = []
    for chains in args.chains:
        for f in args.f:
            k = C.kernel(source(f, chains))
            results.append(C.run(f"dial_c{chains}_f{f:04d}",
                                 lambda k=k: k(C.grid1d(args.n, 256), (256,), (x, y, *scal)),
                                 counts(args.n, f), args,
                                 lambda f=f, c=chains: C.close(y[: args.check_n],
                                                               reference(xs, f, c), 1e-4, 1e-5)))
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
