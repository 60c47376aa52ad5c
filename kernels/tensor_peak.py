"""Tensor-core peak: a WMMA mma_sync loop on operands held in registers, FP16 inputs,
FP32 accumulate vs FP16 accumulate.

Each warp loads one 16x16 A tile and two B tiles (B and -B) once, then alternates
mma(A, B) and mma(A, -B) on ACC independent accumulators, so the accumulators return to zero
after each pair; one last mma(A, B) leaves A@B in each. Integer-valued operands make the result
exact in both accumulator types. Each mma_sync is 2*16*16*16 = 8192 FLOPs.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

ACC = 4  # independent accumulators per warp
MMA_FLOPS = 2 * 16 * 16 * 16
WARPS_PER_BLOCK = 4
ACC_TYPES = {"f32acc": ("float", 4, np.float32), "f16acc": ("__half", 2, np.float16)}

SOURCE = C.Source("tensor_peak", r"""
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;
#define ACC @ACC@

template <typename AccT>
__device__ void mma_peak(const __half* __restrict__ A, const __half* __restrict__ Bp,
                         const __half* __restrict__ Bn, AccT* __restrict__ out, int iters) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bp, bn;
    wmma::fragment<wmma::accumulator, 16, 16, 16, AccT> c[ACC];
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(bp, Bp, 16);
    wmma::load_matrix_sync(bn, Bn, 16);
#pragma unroll
    for (int k = 0; k < ACC; ++k) wmma::fill_fragment(c[k], (AccT)0.0f);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < ACC; ++k) wmma::mma_sync(c[k], a, bp, c[k]);
#pragma unroll
        for (int k = 0; k < ACC; ++k) wmma::mma_sync(c[k], a, bn, c[k]);
    }
#pragma unroll
    for (int k = 0; k < ACC; ++k) wmma::mma_sync(c[k], a, bp, c[k]);
#pragma unroll
    for (int k = 1; k < ACC; ++k)
        for (int e = 0; e < c[0].num_elements; ++e) c[0].x[e] += c[k].x[e];
    long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    wmma::store_matrix_sync(out + warp * 256, c[0], 16, wmma::mem_row_major);
}
extern "C" __global__ void mma_peak_f32acc(const __half* A, const __half* Bp, const __half* Bn,
                                           float* out, int iters) {
    mma_peak<float>(A, Bp, Bn, out, iters);
}
extern "C" __global__ void mma_peak_f16acc(const __half* A, const __half* Bp, const __half* Bn,
                                           __half* out, int iters) {
    mma_peak<__half>(A, Bp, Bn, out, iters);
}
""".replace("@ACC@", str(ACC)), ("mma_peak_f32acc", "mma_peak_f16acc"), min_arch=70)
SOURCES = (SOURCE,)


def counts(blocks: int, iters: int, acc: str = "f32acc") -> tuple[int, int]:
    """FLOPs of all mma_sync; bytes: the three 16x16 FP16 tiles once, each warp's 16x16 output."""
    warps = blocks * WARPS_PER_BLOCK
    return warps * ACC * (2 * iters + 1) * MMA_FLOPS, 3 * 512 + warps * 256 * ACC_TYPES[acc][1]


def operands(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Integer-valued FP16 tiles in {-1, 0, 1}: every partial sum is exact in FP16."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-1, 2, (16, 16)).astype(np.float16),
            rng.integers(-1, 2, (16, 16)).astype(np.float16))


def reference(a: np.ndarray, b: np.ndarray, warps: int) -> np.ndarray:
    """Every warp stores ACC * (A @ B)."""
    tile = ACC * (a.astype(np.float64) @ b.astype(np.float64))
    return np.broadcast_to(tile, (warps, 16, 16))


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--blocks", type=int, default=2048, help=f"blocks of {WARPS_PER_BLOCK} warps")
    p.add_argument("--iters", type=int, default=4096, help="loop trips (2 x ACC mma_sync each)")
    p.add_argument("--acc", nargs="+", choices=tuple(ACC_TYPES), default=list(ACC_TYPES))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    a, b = operands(args.seed)
    da, dbp, dbn = cp.asarray(a), cp.asarray(b), cp.asarray(-b)
    warps = args.blocks * WARPS_PER_BLOCK
    want, results = reference(a, b, warps), []
    for acc in args.acc:
        out = cp.empty((warps, 16, 16), ACC_TYPES[acc][2])
        k = C.kernel(SOURCE, f"mma_peak_{acc}")
        results.append(C.run(f"tensor_peak_{acc}",
                             lambda k=k, out=out: k((args.blocks,), (32 * WARPS_PER_BLOCK,),
                                                    (da, dbp, dbn, out, cp.int32(args.iters))),
                             counts(args.blocks, args.iters, acc), args,
                             lambda out=out: C.close(out, want, 0, 0)))
    if len(results) == 2 and results[1].time_s > 0:
        print(f"# FP16-accumulate / FP32-accumulate throughput: "
              f"{results[0].time_s / results[1].time_s:.2f}x")
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
