"""Every CSV shape an Nsight Compute export takes, each made from a real report by the real ncu and
repeated to N launches, with the bare ``pandas.read_csv`` each is timed against.

The report is ``eschnett__IndexSpaces.jl/profile.7dc4fa58ec.ncu-rep`` in
``$NCU_ROOF_SHARED/realdata`` (an A40, ``--set full``, 5 launches: 779 raw columns). The shapes:

- ``raw-base``, ``raw-auto``: ``--page raw --csv`` with ``--print-units base`` / ``auto``;
- ``raw-base-sep``, ``raw-auto-sep``: the same with thousands separators in the numbers, as ncu
  before 2024 wrote them (``"1,740,000"``; ncu 2024.1 writes none under the C locale);
- ``details``: ``--page details --csv`` (one row per launch and metric label, with rule rows);
- ``long``: ``ncu --csv --metrics ...`` standard output (one row per launch and metric name, the
  profiled program's output and ``==PROF==`` lines before it), from
  ``wangzy0327__cuda-roofline/output.csv``, a real export with separators;
- ``wide``: ``--page raw --csv --print-metric-instances values`` (per-instance lists in cells);
- ``source``: ``--page source --csv --print-source sass`` (a block per launch), read by ``lines``.

A launch's rows are repeated with the launch ID renumbered. ``build(shape, target, n)`` writes one;
``baseline(shape, path)`` is the argv of the bare read.

    python benchmarks/bench_shapes.py OUT_DIR [--launches N] [shape ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NCU_ROOF_SHARED", ROOT.parent / "shared"))
REPORT = SHARED / "realdata" / "eschnett__IndexSpaces.jl" / "profile.7dc4fa58ec.ncu-rep"
METRICS_STDOUT = SHARED / "realdata" / "wangzy0327__cuda-roofline" / "output.csv"
NCU_ARGS = {
    "raw-base": ["--page", "raw", "--print-units", "base"],
    "raw-base-sep": ["--page", "raw", "--print-units", "base"],
    "raw-auto": ["--page", "raw", "--print-units", "auto"],
    "raw-auto-sep": ["--page", "raw", "--print-units", "auto"],
    "details": ["--page", "details"],
    "wide": ["--page", "raw", "--print-metric-instances", "values"],
    "source": ["--page", "source", "--print-source", "sass"],
}
TITLES = {
    "raw-base": "raw page, base units (779 columns)",
    "raw-base-sep": "raw page, base units, thousands separators",
    "raw-auto": "raw page, auto units",
    "raw-auto-sep": "raw page, auto units, thousands separators",
    "details": "details page",
    "long": "`--metrics` output (5,000-character kernel names)",
    "wide": "raw page with per-instance values",
    "source": "source page (SASS), read by `lines`",
}
SOURCE_KERNEL = "julia_frb"  # the source page's kernel that `lines` sums
SHAPES = ("raw-base", "raw-base-sep", "raw-auto", "raw-auto-sep", "details", "long", "wide", "source")
_NUMBER = re.compile(r'"(-?)(\d{4,})((?:\.\d+)?)"')


def available(ncu: str | None) -> list[str]:
    """The shapes this machine can make: all with ncu and the report, else only ``long``."""
    made = [s for s in SHAPES if s != "long"] if ncu is not None and REPORT.is_file() else []
    return made + (["long"] if METRICS_STDOUT.is_file() else [])


def export(shape: str, ncu: str) -> str:
    """The real export of the report in ``shape`` (ncu's standard output)."""
    if shape == "long":
        return METRICS_STDOUT.read_text(encoding="utf-8-sig")
    out = subprocess.run([ncu, "--import", str(REPORT), "--csv", *NCU_ARGS[shape]], capture_output=True,
                         check=True, timeout=300, env=dict(os.environ, LC_ALL="C")).stdout.decode()
    return _separate(out) if shape.endswith("-sep") else out


def _separate(text: str) -> str:
    """Thousands separators in every quoted number of 4 or more integer digits."""
    return _NUMBER.sub(lambda m: f'"{m[1]}{int(m[2]):,}{m[3]}"', text)


def build(shape: str, target: Path, launches: int, ncu: str) -> str:
    """Write ``shape`` repeated to ``launches`` launches into ``target``; says what it copied."""
    text = export(shape, ncu)
    if shape == "source":
        blocks = re.split(r'(?m)^(?="Kernel Name",)', text)
        preamble, blocks = blocks[0], [b for b in blocks[1:] if b.strip()]
        with target.open("w", encoding="utf-8", newline="") as out:
            out.write(preamble)
            for i in range(launches):
                out.write(blocks[i % len(blocks)])
        return f"{len(blocks)} source blocks of {REPORT.name}"
    lines = text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    head = lines[: start + (2 if shape.startswith(("raw", "wide")) else 1)]
    launch_rows: dict[str, list[str]] = {}
    for line in lines[len(head):]:
        if line.startswith('"'):
            launch_id, rest = line.split(",", 1)
            launch_rows.setdefault(launch_id, []).append(rest)
    groups = list(launch_rows.values())
    with target.open("w", encoding="utf-8", newline="") as out:
        out.writelines(head)
        for i in range(launches):
            prefix = f'"{i}",'
            out.writelines(prefix + rest for rest in groups[i % len(groups)])
    source = METRICS_STDOUT if shape == "long" else REPORT
    return f"{len(groups)} launches of {source.parent.name}/{source.name}"


def baseline(shape: str, path: Path) -> list[str]:
    """A bare ``pandas.read_csv`` of the file as a whole process: the header found, the units row
    skipped, thousands separators read, one pass (``low_memory=False``)."""
    if shape == "source":  # blocks, each a header: the rows are read as one CSV of text
        code = ("import sys, pandas; pandas.read_csv(sys.argv[1], header=None, names=range(80), dtype=str, "
                "low_memory=False)")
        return [sys.executable, "-c", code, str(path)]
    skip = _header_line(path)
    units = [skip + 1] if shape.startswith(("raw", "wide")) else []
    code = (f"import sys, pandas; pandas.read_csv(sys.argv[1], skiprows=list(range({skip})) + {units}, "
            "thousands=',', low_memory=False)")
    return [sys.executable, "-c", code, str(path)]


def _header_line(path: Path) -> int:
    with path.open(encoding="utf-8-sig") as f:
        for i, line in enumerate(f):
            if line.startswith('"ID"'):
                return i
    raise ValueError(f"{path}: no header")


def command(shape: str) -> str:
    """The ncu-roof command that reads the shape into a table (``lines`` for the source page)."""
    return "lines" if shape == "source" else "table"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--launches", type=int, default=10_000)
    parser.add_argument("--ncu", default="/tmp/ncu/root/usr/lib/nsight-compute/ncu")
    parser.add_argument("shapes", nargs="*", default=list(SHAPES))
    args = parser.parse_intermixed_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for shape in args.shapes:
        target = args.out / f"{shape}.csv"
        what = build(shape, target, args.launches, args.ncu)
        print(f"{shape}: {target} ({target.stat().st_size / 1e6:.0f} MB) from {what}")
        print("  baseline:", " ".join(baseline(shape, target)[1:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
