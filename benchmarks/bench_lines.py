"""Benchmark: the per-instruction data (Source Counters) of a 2,000-launch full-set report, read in
about the time and memory the launch table takes.

The report copies launch 2 of the real ``NCAR__GPU_workshop/MW_Baseline.ncu-rep``
(``compute_tendencies_x_279_gpu``, 650 KB with ~950 instructions of Source Counters; 1.3 GB for
2,000 copies) in ``$NCU_ROOF_SHARED/realdata`` (default ``../shared``), as ``tests/reportgen.py``
replicates it. As in ``run.py``, whole processes run in turn (A B A B ..., after one unmeasured run
of each), medians of wall and CPU seconds and the median of the pair-by-pair ratios, and the peak
resident memory of the largest process and of all together:

1. ``ncu-roof lines R --kernel compute_tendencies_x_279`` (every launch's counters, summed by line)
   against ``ncu-roof table R``: at most 1.5x the time, at most the table's peak memory.
2. ``ncu-roof diagnose R`` (its fp64-pipe finding names F90:288, read from the longest launches)
   against ``ncu-roof table R``: printed, no bound (the rules' own time is in it).

Not in ``run.py``'s table: the 1.3 GB report takes a minute to build and read on 2 cores. The
figures measured are in docs/benchmarks.md. Exit status 1 when a bound is missed.

    python benchmarks/bench_lines.py [--launches 2000] [--pairs 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

from bench_ncu_rep import SHARED  # noqa: E402
from run import ours, paired  # noqa: E402

SOURCE = SHARED / "realdata" / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
KERNEL = "compute_tendencies_x_279"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    if not SOURCE.is_file():
        print(f"skipped: {SOURCE} is absent (the real reports live in $NCU_ROOF_SHARED/realdata)")
        return 0
    import reportgen

    missed = []
    with tempfile.TemporaryDirectory(prefix="ncu-roof-bench-lines-") as tmp_name:
        tmp = Path(tmp_name)
        report = tmp / f"mw279x{args.launches}.ncu-rep"
        reportgen.replicate(SOURCE, report, args.launches, index=2)
        print(f"{report.name}: {args.launches} copies of {SOURCE.name} launch 2, {report.stat().st_size / 1e9:.2f} GB")
        table = ours("table", "-q", "-o", str(tmp / "t.csv"), "--force", str(report))
        lines = ours("lines", str(report), "--kernel", KERNEL, "--top", "5")
        diagnose = ours("diagnose", "-q", "-o", str(tmp / "d.txt"), "--force", str(report))
        for what, a, bound in (("lines", lines, 1.5), ("diagnose", diagnose, None)):
            m = paired(a, table, args.pairs)
            memory = m["a"]["peak_mb"] / m["b"]["peak_mb"]
            print(f"{what} against table: {m['ratio']:.2f}x wall (CPU {m['cpu_ratio']:.2f}x); "
                  f"A {m['a']['wall_s']:.2f} s {m['a']['peak_mb']:.0f} MB (all {m['a']['all_mb']:.0f} MB), "
                  f"B {m['b']['wall_s']:.2f} s {m['b']['peak_mb']:.0f} MB (all {m['b']['all_mb']:.0f} MB)")
            if bound is not None and (m["ratio"] > bound or memory > 1.0):
                missed.append(f"{what}: {m['ratio']:.2f}x (at most {bound}x), memory {memory:.2f} of the table's")
    for line in missed:
        print(f"MISS {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
