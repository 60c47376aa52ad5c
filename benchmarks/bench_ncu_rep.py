"""Benchmark: load_ncu_rep on a 10,000-launch report must take at most 1.5x a bare ncu_report loop.

The report is built in a temp dir by ``tests/reportgen.replicate``: one launch of a real
``--set full`` report (../shared/realdata/NCAR__GPU_workshop/MW_Baseline.ncu-rep; by default its
smallest launch) copied N times. The baseline is ``ncu_report.load_report`` plus, per action,
``name()`` and ``metric_by_name`` for every metric the loader reads (``needed_metrics()`` and the
tensor-op names ``is_needed`` accepts), ``as_double()`` of those present, into a list of dicts.
Both are timed best-of-3 in the same run, each pass in a fresh worker process (timed inside
it, after imports): ``ncu_report`` keeps about 13x the file size in memory per full pass and never
gives it back, so passes in one process would run out of memory and slow each other down.
Exit status 1 when the ratio exceeds 1.5.

    python benchmarks/bench_ncu_rep.py [--launches N] [--index I] [--source REPORT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import reportgen  # noqa: E402

from ncu_roof import metrics  # noqa: E402

SOURCE = ROOT.parent / "shared" / "realdata" / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
MAX_RATIO = 1.5


def smallest_launch(path: Path) -> int:
    """Index of the launch with the fewest bytes (keeps the 10,000-launch file smaller)."""
    sizes = [r.ByteSize() for r in reportgen.read_report(path).results()]
    return sizes.index(min(sizes))


def metric_names(ncu_report: Any, path: Path) -> list[str]:
    """What the loader reads: the catalogue's names plus tensor-op names the report has."""
    action = ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(0)
    extra = [n for n in action.metric_names() if metrics.is_needed(n)]
    return list(dict.fromkeys([*metrics.needed_metrics(), *extra]))


def bare_loop(ncu_report: Any, path: Path, names: list[str]) -> list[dict[str, Any]]:
    """The baseline: every action's name and the needed metrics' values, no pandas."""
    rows = []
    ctx = ncu_report.load_report(str(path))
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            row: dict[str, Any] = {"kernel": action.name()}
            for name in names:
                m = action.metric_by_name(name)
                if m is not None:
                    row[name] = m.as_double()
            rows.append(row)
    return rows


def timed_pass(kind: str, path: Path, names_file: Path) -> tuple[float, int]:
    """One pass in a worker process: (seconds, launches read)."""
    cmd = [sys.executable, __file__, "--worker", kind, str(path), str(names_file)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["seconds"], result["launches"]


def worker(kind: str, path: Path, names_file: Path) -> None:
    """Run one pass and print its time and launch count as JSON."""
    import ncu_report  # type: ignore[import-not-found]

    from ncu_roof.readers.ncu_rep import load_ncu_rep

    names = json.loads(names_file.read_text())
    t0 = time.perf_counter()
    n = len(bare_loop(ncu_report, path, names) if kind == "bare" else load_ncu_rep(path))
    print(json.dumps({"seconds": time.perf_counter() - t0, "launches": n}))


def measure(path: Path, names_file: Path, launches: int, repeat: int = 3) -> tuple[float, float]:
    """Best-of-``repeat`` seconds of the bare loop and of load_ncu_rep, interleaved."""
    best = {"bare": float("inf"), "ours": float("inf")}
    for _ in range(repeat):
        for kind in best:
            seconds, n = timed_pass(kind, path, names_file)
            assert n == launches, (kind, n, launches)
            best[kind] = min(best[kind], seconds)
    return best["bare"], best["ours"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10_000)
    parser.add_argument("--index", type=int, help="launch to copy (default: the smallest)")
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--worker", nargs=3, metavar=("KIND", "REPORT", "NAMES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], Path(args.worker[1]), Path(args.worker[2]))
        return 0
    if not args.source.is_file():
        print(f"skipped: source report {args.source} is absent (it lives in ../shared/realdata)")
        return 0
    try:
        reportgen.proto_modules()
        import ncu_report  # type: ignore[import-not-found]
    except (ImportError, FileNotFoundError) as exc:
        print(f"skipped: {exc} (needs ncu_report, grpcio-tools and ncu's schemas: "
              "../shared/tools/get-ncu.sh)")
        return 0

    index = smallest_launch(args.source) if args.index is None else args.index
    with tempfile.TemporaryDirectory() as tmp:
        path, names_file = Path(tmp) / "bench.ncu-rep", Path(tmp) / "names.json"
        t0 = time.perf_counter()
        reportgen.replicate(args.source, path, args.launches, index=index)
        built = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
        names = metric_names(ncu_report, path)
        names_file.write_text(json.dumps(names))
        bare, ours = measure(path, names_file, args.launches)
    ratio = ours / bare
    print(f"source: {args.source} launch {index}, {len(names)} metric names asked for")
    print(f"file: {args.launches} launches, {size_mb:.1f} MB, built in {built:.1f} s")
    print(f"bare ncu_report: {bare:.3f} s   load_ncu_rep: {ours:.3f} s   ratio: {ratio:.2f} "
          f"(max {MAX_RATIO})")
    return 1 if ratio > MAX_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
