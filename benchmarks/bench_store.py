"""Benchmark: a store of many reports against one CSV of the same reports, in the same run.

N reports are put in a temp folder: distinct ones written by the tests' report writer
(``tests/reportgen.py``, five launches built on MW_Baseline's, each report its own kernel times)
and byte-for-byte copies of the real inputs (``$NCU_ROOF_SHARED/realdata``, default ``../shared``;
about a tenth of N; ingest keeps each real report once, by its sha256, the table reads every copy).
Then, each a whole ``python -m ncu_roof`` process, timed by wall clock, its memory the peak resident
set of its largest process and of all its processes together (sampled every 10 ms from /proc):

1. ``table`` of the N reports into one CSV (the baseline);
2. ``ingest`` of the N reports into a new store, and ``ingest`` of a tenth of them into another:
   the ingesting process holds a few reports' rows at a time, so its peak does not grow with N;
3. ``trend`` over the store, and a ``query``.

Ratios are against the ``table`` of the same run.

    python benchmarks/bench_store.py [--reports 1000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_ncu_rep import Run, mb, run  # noqa: E402

SHARED = Path(os.environ.get("NCU_ROOF_SHARED", ROOT.parent / "shared"))
REAL = SHARED / "realdata"
TEMPLATE = REAL / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
UNREADABLE = {"flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv"}
KERNELS = ("compute_tendencies_x", "compute_tendencies_z", "semi_discrete_step", "set_halo_values_x",
           "set_halo_values_z")


def build(folder: Path, count: int) -> tuple[int, int]:
    """``count`` reports in ``folder``: (generated, copies of real ones)."""
    import reportgen

    real = sorted(p for p in REAL.glob("*/*") if p.suffix in (".ncu-rep", ".csv") and p.name not in UNREADABLE)
    copies = min(len(real) * max(1, count // (10 * len(real))), count // 10) if real else 0
    for i in range(copies):
        src = real[i % len(real)]
        shutil.copyfile(src, folder / f"real_{i:05d}{''.join(src.suffixes[-1:])}")
    pb = reportgen.proto_modules()
    for i in range(count - copies):
        specs = []
        for k, name in enumerate(KERNELS):
            us = 100.0 * (k + 1) * (1.0 + 0.01 * ((i * 7 + k) % 13)) + 0.001 * i  # each report its own bytes
            metrics = {"gpu__time_duration.sum": int(us * 1000), "gpc__cycles_elapsed.max": us * 1500.0,
                       "gpc__cycles_elapsed.avg.per_second": 1.5e9}
            specs.append(reportgen.LaunchSpec(kernel=name, metrics=metrics))
        reportgen.write_report(folder / f"gen_{i:05d}.ncu-rep", specs, TEMPLATE, pb=pb)
    return count - copies, copies


def line(what: str, r: Run, base: Run | None = None) -> str:
    text = f"{what:<46} {r.seconds:8.1f} s   peak {mb(r.max_rss):>8} (all processes {mb(r.sum_rss):>8})"
    if base is not None:
        text += f"   x{r.seconds / base.seconds:.2f} time, x{r.max_rss / base.max_rss:.2f} peak of table"
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reports", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    if not TEMPLATE.is_file():
        print(f"needs the real reports: {TEMPLATE} is absent (set NCU_ROOF_SHARED)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ncu-roof-bench-store-") as tmp:
        folder = Path(tmp) / "reports"
        folder.mkdir()
        generated, copies = build(folder, args.reports)
        paths = sorted(str(f) for f in folder.iterdir())
        tenth = paths[: max(1, len(paths) // 10)]
        size = sum(Path(f).stat().st_size for f in paths)
        print(f"{len(paths)} reports ({generated} generated, {copies} copies of real ones), {mb(size)}; "
              f"--jobs {args.jobs}, {os.cpu_count()} cores")
        for f in paths:  # warm the page cache
            Path(f).read_bytes()
        jobs = ["--jobs", str(args.jobs), "--quiet"]
        table = run(["table", str(folder), "-o", str(Path(tmp) / "all.csv"), *jobs])
        print(line("ncu-roof table -o all.csv", table))
        store = Path(tmp) / "store"
        ingest = run(["ingest", str(folder), "--store", str(store), *jobs])
        print(line("ncu-roof ingest --store", ingest, table))
        small = run(["ingest", *tenth, "--store", str(Path(tmp) / "small"), *jobs])
        print(line(f"ncu-roof ingest --store ({len(tenth)} reports)", small, table))
        trend = run(["trend", "--store", str(store), "--kernel", "compute_tendencies_x", "-f", "json"])
        print(line("ncu-roof trend --store --kernel ...", trend, table))
        query = run(["query", "--store", str(store), "SELECT kernel, count(*), median(time_s) FROM kernels "
                                                     "GROUP BY kernel ORDER BY 3 DESC LIMIT 5"])
        print(line("ncu-roof query (median time per kernel)", query, table))
        runs = run(["query", "--store", str(store), "-f", "csv", "SELECT count(*) AS n FROM runs"])
        print(f"runs in the store: {runs.out.decode().split()[-1]} ({generated} generated + the distinct real ones)")
        files = sum(1 for _ in store.rglob("*.parquet"))
        store_size = sum(f.stat().st_size for f in store.rglob("*.parquet"))
        print(f"store: {files} Parquet files, {mb(store_size)}; all.csv: {mb((Path(tmp) / 'all.csv').stat().st_size)}")
        print(f"ingest peak, {len(paths)} vs {len(tenth)} reports: x{ingest.max_rss / small.max_rss:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
