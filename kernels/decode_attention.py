"""Decode attention, FP16: one query per sequence and head against its own KV cache of length L.

Each sequence's K and V are private, so batching multiplies FLOPs and bytes alike and the
intensity stays ~1: B*H*(4LD + 5L) FLOPs over 2*(2BHLD + 2BHD) bytes. Head dim D = 128.
One block per (sequence, head): scores in shared memory, softmax, then P V.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from kernels import _common as C

HEAD_DIM = 128
BATCHES = tuple(C.pow2_range(1, 64))

SOURCE = C.Source("decode_attention", "#include <cuda_fp16.h>\n" + C.BLOCK_REDUCE + r"""
#define D 128
// blockDim.x == D; dynamic shared memory: L floats.
extern "C" __global__ void decode_attention(const __half* __restrict__ q,
                                            const __half* __restrict__ K,
                                            const __half* __restrict__ V,
                                            __half* __restrict__ out, int L, float scale) {
    extern __shared__ float p[];
    long long bh = blockIdx.x;
    const __half* Kb = K + bh * L * D;
    const __half* Vb = V + bh * L * D;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    float qv[4];
    for (int i = 0; i < 4; ++i) qv[i] = __half2float(q[bh * D + lane * 4 + i]);
    for (int l = warp; l < L; l += nw) {           // one warp per key: 256 contiguous bytes
        const __half* kr = Kb + (long long)l * D + lane * 4;
        float s = 0.0f;
        for (int i = 0; i < 4; ++i) s = fmaf(qv[i], __half2float(kr[i]), s);
        s = warp_sum(s);
        if (lane == 0) p[l] = s * scale;
    }
    __syncthreads();
    float m = NEG_INF;
    for (int l = threadIdx.x; l < L; l += blockDim.x) m = fmaxf(m, p[l]);
    m = block_reduce(m, true);
    float sum = 0.0f;
    for (int l = threadIdx.x; l < L; l += blockDim.x) { float e = __expf(p[l] - m); p[l] = e; sum += e; }
    sum = block_reduce(sum, false);                 // also a barrier: p is complete
    float acc = 0.0f;
    int d = threadIdx.x;
    for (int l = 0; l < L; ++l) acc = fmaf(p[l], __half2float(Vb[(long long)l * D + d]), acc);
    out[bh * D + d] = __float2half(acc / sum);
}
""", ("decode_attention",))
SOURCES = (SOURCE,)


def counts(batch: int, heads: int, length: int, dim: int = HEAD_DIM) -> tuple[int, int]:
    """q.K^T and P.V (2LD each) plus ~5L softmax per (sequence, head); K, V, q, out once in FP16."""
    bh = batch * heads
    return bh * (4 * length * dim + 5 * length), 2 * (2 * bh * length * dim + 2 * bh * dim)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """q: (..., D), k and v: (..., L, D) -> (..., D)."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = np.einsum("...d,...ld->...l", q, k) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("...l,...ld->...d", p / p.sum(axis=-1, keepdims=True), v)


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--batch", type=int, nargs="+", default=list(BATCHES))
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--length", type=int, default=4096, help="KV cache length L (<= 12288)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    kern, h, L = C.kernel(SOURCE), args.heads, args.length
    scale = cp.float32(1 / np.sqrt(HEAD_DIM))
    results = []
    for b in args.batch:
        q = C.randn((b, h, HEAD_DIM), "float16", seed=args.seed + b)
        k = C.randn((b, h, L, HEAD_DIM), "float16", seed=args.seed + 1000 + b)
        v = C.randn((b, h, L, HEAD_DIM), "float16", seed=args.seed + 2000 + b)
        out = cp.empty((b, h, HEAD_DIM), cp.float16)
        results.append(C.run(
            f"decode_attention_b{b:03d}",
            lambda q=q, k=k, v=v, out=out, b=b: kern((b * h,), (HEAD_DIM,),
                                                     (q, k, v, out, cp.int32(L), scale),
                                                     shared_mem=4 * L),
            counts(b, h, L), args,
            lambda q=q, k=k, v=v, out=out: C.close(out[0], reference(q[0].get(), k[0].get(), v[0].get()),
                                                   2e-2, 2e-3)))
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
