"""Benchmark: ``ncu-roof timeline`` on a 1,000,000-event PyTorch profiler trace, against decoding the
same file whole with ``json.load`` (what a reader without streaming does first).

The trace is written to a temp folder, gzip-compressed, shaped as Kineto writes one: per kernel a
CPU op, its ``cudaLaunchKernel``, the ``ac2g`` flow's two ends and the kernel (long ATen template
names, grid, block, registers), a ``ProfilerStep#N`` every 1,000 kernels and a
``cudaStreamSynchronize`` every 100, fractional microsecond timestamps. Each side is a whole
process, timed by wall clock, its memory the peak resident set (sampled every 10 ms from /proc).

    python benchmarks/bench_trace.py [--events 1000000] [--pairs 3]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
          "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")
BASE = 1712195495500000
LOAD = "import gzip, json, sys; json.load(gzip.open(sys.argv[1], 'rt'))"


def build(target: Path, events: int) -> int:
    """A gzip trace of about ``events`` events; returns the number written."""
    written = 0
    t = 0.0
    gpu_end = 0.0
    kernel = 0
    with gzip.open(target, "wt", encoding="utf-8", compresslevel=1) as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], '
                  '"distributedInfo": {"rank": 0}, "traceEvents": [\n')
        first = True
        while written < events:
            rows = []
            if kernel % 1000 == 0:
                rows.append(f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{kernel // 1000}", '
                            f'"pid": 1, "tid": 1, "ts": {BASE + t:.3f}, "dur": 11990}}')
            dur = 2 + (kernel * 7919) % 40
            start = max(t + 8, gpu_end + 1)
            gpu_end = start + dur
            corr = kernel + 1
            rows += [
                f'{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": {BASE + t:.3f}, '
                f'"dur": 10, "args": {{"External id": {corr}, "Input Dims": [[256, 1024], [256, 1024], []]}}}}',
                f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
                f'"ts": {BASE + t + 3:.3f}, "dur": 4, "args": {{"cbid": 211, "correlation": {corr}}}}}',
                f'{{"ph": "s", "id": {corr}, "pid": 1, "tid": 1, "ts": {BASE + t + 3:.3f}, "cat": "ac2g", '
                '"name": "ac2g"}',
                f'{{"ph": "X", "cat": "kernel", "name": "{KERNEL}", "pid": 0, "tid": 7, "ts": {BASE + start:.3f}, '
                f'"dur": {dur}, "args": {{"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {corr}, '
                '"registers per thread": 16, "shared memory": 0, "blocks per SM": 1.5, "warps per SM": 12, '
                '"grid": [1024, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 19}}',
                f'{{"ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {BASE + start:.3f}, "cat": "ac2g", '
                '"name": "ac2g", "bp": "e"}',
            ]
            t += 12
            if kernel % 100 == 99:
                rows.append(f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, '
                            f'"tid": 1, "ts": {BASE + t:.3f}, "dur": {max(gpu_end - t, 1):.3f}, '
                            f'"args": {{"cbid": 131, "correlation": {10**9 + kernel}}}}}')
                t = max(t, gpu_end) + 5
            out.write(("" if first else ",\n") + ",\n".join(rows))
            first = False
            written += len(rows)
            kernel += 1
        out.write("\n]}\n")
    return written


def main() -> int:
    from run import Run, run_once  # here, not at the top: run.py imports this module

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "synthetic_trace.json.gz"
        n = build(trace, args.events)
        print(f"{n:,} events, {trace.stat().st_size / 1e6:.1f} MB gzip")
        ours: list[Run] = []
        whole: list[Run] = []
        for _ in range(args.pairs):
            ours.append(run_once([sys.executable, "-m", "ncu_roof", "timeline", str(trace), "-f", "json",
                                  "-o", str(Path(tmp) / f"out{len(ours)}.json")]))
            whole.append(run_once([sys.executable, "-c", LOAD, str(trace)]))
        for name, runs in (("ncu-roof timeline", ours), ("json.load of the whole file", whole)):
            print(f"{name}: {statistics.median(r.wall for r in runs):.2f} s wall, "
                  f"{statistics.median(r.cpu for r in runs):.2f} s CPU, peak {max(r.peak for r in runs) / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
