"""Benchmark: load_csv on a 100,000-launch raw-page CSV must take at most 2x a bare pd.read_csv.

The file is built in a temp dir by repeating the data rows of a real raw-page export
($NCU_ROOF_SHARED, default ../shared: realdata/meinie0826__Roofline-Analysis/
torch_sdpa_flash__gqa_bf16_b32_ctx8k_p64.ncu.csv, 475 columns) or, where that is absent, of
fixtures/synthetic/synthetic_raw_units.csv widened to the same 475 columns with metrics the
tool does not read (a real export holds hundreds of those: a 20-column file would time only the
fixed cost). Both are timed best-of-3 in the same run. Exit status 1 when the ratio exceeds 2.

    python benchmarks/bench_csv.py [--launches N] [--synthetic]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncu_roof.read.csv import load_csv  # noqa: E402

SHARED = Path(os.environ.get("NCU_ROOF_SHARED", ROOT.parent / "shared"))
REAL = SHARED / "realdata" / "meinie0826__Roofline-Analysis" / "torch_sdpa_flash__gqa_bf16_b32_ctx8k_p64.ncu.csv"
SYNTHETIC = ROOT / "fixtures" / "synthetic" / "synthetic_raw_units.csv"
WIDTH = 475  # columns of the real export
MAX_RATIO = 2.0
# The --set full input: a real A40 report (5 launches, ncu 2022.4) exported by ncu as a raw page
# in base units, 779 columns; where ncu or the report is absent, the synthetic file widened to 779.
FULL_REPORT = SHARED / "realdata" / "eschnett__IndexSpaces.jl" / "profile.7dc4fa58ec.ncu-rep"
FULL_WIDTH = 779


def export_full(target: Path, ncu: str | None) -> str:
    """The ``--set full`` raw-page export the full-set figures copy, written to ``target``; says
    what it is. Without ncu or the report: the synthetic file widened to ``FULL_WIDTH`` columns."""
    if ncu is not None and FULL_REPORT.is_file():
        with target.open("wb") as out:
            subprocess.run([ncu, "--import", str(FULL_REPORT), "--page", "raw", "--csv", "--print-units", "base"],
                           stdout=out, check=True, timeout=300)
        return f"{FULL_REPORT.relative_to(SHARED)} exported by ncu (--page raw --csv --print-units base)"
    lines = SYNTHETIC.read_text(encoding="utf-8-sig").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    header, units, rows = _widen(lines[start], lines[start + 1], [r for r in lines[start + 2:] if r.strip()],
                                 FULL_WIDTH)
    target.write_text("\n".join([header, units, *rows]) + "\n", encoding="utf-8")
    return f"{SYNTHETIC.name} widened to {FULL_WIDTH} columns (no ncu or no {FULL_REPORT.name})"


def _source(synthetic: bool = False) -> Path:
    return REAL if REAL.is_file() and not synthetic else SYNTHETIC


def _widen(header: str, units: str, rows: list[str], width: int = WIDTH) -> tuple[str, str, list[str]]:
    """Pad the synthetic file to ``width`` columns with counters the tool does not read."""
    extra = width - header.count(",") - 1
    names = ",".join(f'"sm__unread_counter_{i}.sum"' for i in range(extra))
    values = ",".join(f'"{(i * 7919) % 100000}"' for i in range(extra))
    return (f"{header},{names}", units + ',""' * extra, [f"{r},{values}" for r in rows])


def build(target: Path, launches: int, synthetic: bool = False, source: Path | None = None) -> None:
    """Header + units row + ``launches`` data rows (rows repeated, IDs renumbered), from ``source``
    (default: the real 475-column export, or the synthetic file widened to as many columns)."""
    source = source or _source(synthetic)
    lines = source.read_text(encoding="utf-8-sig").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    header, units, rows = lines[start], lines[start + 1], [r for r in lines[start + 2:] if r.strip()]
    if source == SYNTHETIC:
        header, units, rows = _widen(header, units, rows)
    rows = [r.split(",", 1)[1] for r in rows]
    with target.open("w", encoding="utf-8", newline="\n") as out:
        out.write(header + "\n" + units + "\n")
        for i in range(launches):
            out.write(f'"{i}",{rows[i % len(rows)]}\n')


def best_of(func: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    warnings.simplefilter("ignore", pd.errors.DtypeWarning)  # bare read_csv of mixed columns
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=100_000)
    parser.add_argument("--synthetic", action="store_true", help="use the synthetic file even where real data exists")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_raw.csv"
        build(path, args.launches, args.synthetic)
        size_mb = path.stat().st_size / 1e6
        frame = load_csv(path)
        assert len(frame) == args.launches, len(frame)
        bare = best_of(lambda: pd.read_csv(path))
        ours = best_of(lambda: load_csv(path))
    ratio = ours / bare
    print(f"source: {_source(args.synthetic)}")
    print(f"file: {args.launches} launches, {size_mb:.1f} MB; frame {frame.shape}")
    print(f"pd.read_csv: {bare:.3f} s   load_csv: {ours:.3f} s   ratio: {ratio:.2f} (max {MAX_RATIO})")
    return 1 if ratio > MAX_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
