"""Wave quantization: a grid-size sweep around one wave (SMs x resident blocks per SM).

Every block does the same fixed FMA work, paced by the SM clock (one step of 4 FMAs per
``--period`` cycles), so a block takes the same time alone on an SM as with a full SM: the time
follows the number of waves, ceil(grid / wave), and one block past a full wave costs a whole
extra wave. (Unpaced FMA loops are issue-bound at full occupancy, so a lone tail block would run
several times faster than a full wave and hide the effect.)
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math

import numpy as np

from kernels import _common as C

B, CS = 0.999, 0.001
PERIOD = 512  # SM cycles per loop trip: far above the trip's own issue time with a full SM
SOURCE = C.Source("wave_quant", r"""
extern "C" __global__ void busy_block(float* __restrict__ out, int iters, float b, float c,
                                      int period) {
    float a0 = threadIdx.x * 1e-3f, a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f;
    long long t = clock64();
    for (int it = 0; it < iters; ++it) {
        a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
        t += period;
        while (clock64() < t) { }  // pace: each step ends at a fixed SM-clock time
    }
    out[blockIdx.x * (long long)blockDim.x + threadIdx.x] = (a0 + a1) + (a2 + a3);
}
""", ("busy_block",))
SOURCES = (SOURCE,)
FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)  # of one wave; plus wave+1 and 2 waves+1


def counts(grid: int, block: int, iters: int) -> tuple[int, int]:
    """Per thread: 4 FMA chains of ``iters`` (8*iters FLOPs), 6 adds; one float stored."""
    threads = grid * block
    return threads * (8 * iters + 6), 4 * threads


def grids(wave: int) -> list[int]:
    """The swept grid sizes around one wave, including one block past one and two waves."""
    g = {max(1, round(f * wave)) for f in FRACTIONS} | {wave + 1, 2 * wave + 1}
    return sorted(g)


def predicted_waves(grid: int, wave: int) -> int:
    return math.ceil(grid / wave)


def reference(block: int, iters: int) -> np.ndarray:
    """One block's output (every block computes the same)."""
    t = np.arange(block, dtype=np.float64) * 1e-3
    acc = [t + k for k in range(4)]
    for _ in range(iters):
        acc = [a * B + CS for a in acc]
    return (acc[0] + acc[1]) + (acc[2] + acc[3])


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--block", type=int, default=256, help="threads per block")
    p.add_argument("--iters", type=int, default=4096, help="loop trips (4 FMAs each)")
    p.add_argument("--period", type=int, default=PERIOD, help="SM clock cycles per loop trip")
    p.add_argument("--blocks-per-sm", type=int, default=0,
                   help="resident blocks per SM (0: ask the occupancy calculator)")
    return p


def blocks_per_sm(cp: object, k: object, block: int) -> int:
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(  # type: ignore[attr-defined]
            k.kernel.ptr, block, 0))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - older CuPy: fall back to the thread limit
        return max(1, 2048 // block)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    k = C.kernel(SOURCE)
    sms = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["multiProcessorCount"]
    per_sm = args.blocks_per_sm or blocks_per_sm(cp, k, args.block)
    wave = sms * per_sm
    print(f"# {sms} SMs x {per_sm} blocks = {wave} blocks per wave")
    want = reference(args.block, args.iters)
    results = []
    for g in grids(wave):
        out = cp.empty(g * args.block, cp.float32)
        res = C.run(f"wave_g{g:05d}", lambda g=g, out=out: k(
            (g,), (args.block,), (out, cp.int32(args.iters), cp.float32(B), cp.float32(CS), cp.int32(args.period))),
            counts(g, args.block, args.iters), args,
            lambda out=out: C.close(out.reshape(-1, args.block)[[0, -1]], np.stack([want, want]),
                                    1e-3, 1e-4))
        res.name += f" ({g / wave:.2f} waves -> {predicted_waves(g, wave)})"
        results.append(res)
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
