"""Launch overhead: empty kernels back to back, each followed by a synchronize, and from a CUDA graph.

Prints the host wall time per launch in microseconds for each mode (no FLOPs, no bytes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernels import _common as C

SOURCE = C.Source("empty", 'extern "C" __global__ void empty_kernel() {}\n', ("empty_kernel",))
SOURCES = (SOURCE,)
MODES = ("back_to_back", "sync", "graph")


def counts() -> tuple[int, int]:
    """An empty kernel does no arithmetic and moves no bytes."""
    return 0, 0


def reference() -> None:
    """Nothing to compute: the check is that every launch completed without error."""
    return None


def build_parser() -> C.argparse.ArgumentParser:
    p = C.parser(__doc__)
    p.add_argument("--launches", type=int, default=10000, help="kernel launches per mode")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cp = C.cupy()
    k, n = C.kernel(SOURCE), args.launches
    stream = cp.cuda.Stream(non_blocking=True)

    # RawKernel launches on the current stream: every mode runs inside `with stream:`.
    def back_to_back() -> None:
        for _ in range(n):
            k((1,), (1,), ())
        stream.synchronize()

    def sync() -> None:
        for _ in range(n):
            k((1,), (1,), ())
            stream.synchronize()

    with stream:  # load and run the kernel once before any capture (lazy module loading)
        k((1,), (1,), ())
        stream.synchronize()
    graph = None
    if "graph" in args.modes:
        with stream:
            stream.begin_capture()
            for _ in range(n):
                k((1,), (1,), ())
            graph = stream.end_capture()

    def from_graph() -> None:
        graph.launch(stream=stream)  # type: ignore[union-attr]
        stream.synchronize()

    work = {"back_to_back": back_to_back, "sync": sync, "graph": from_graph}
    results = []
    for mode in args.modes:
        with stream:
            for _ in range(args.warmup):
                work[mode]()
            t0 = time.perf_counter()
            for _ in range(max(args.repeat, 1)):
                with C.region(f"launch_{mode}", flops=0, bytes=0):
                    work[mode]()
        per_launch = (time.perf_counter() - t0) / (max(args.repeat, 1) * n)
        results.append(C.Result(f"launch_{mode}", per_launch, 0.0, 0.0, True))
        print(f"# {mode:<13s} {per_launch * 1e6:8.2f} us per launch")
    return C.finish(results, args)


if __name__ == "__main__":
    raise SystemExit(main())
