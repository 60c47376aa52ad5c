"""Every benchmark in one command: each figure a ratio against its baseline measured in the same run,
with peak memory, written to ``benchmarks/results.json``; the README's table is made from that file
(``benchmarks/table.py``; ``--readme`` rewrites it, a test checks it matches the file).

Each figure times whole processes, its command (A) and its baseline (B) run in turn, A B A B ...,
and quotes medians: the wall seconds of each side, the median of the pair-by-pair ratios A/B (or
differences A - B), and the peak resident memory of the largest process of each side (what
``/usr/bin/time -v`` reports; ``all_mb`` sums the command's processes, sampled every 10 ms).

1. ``table`` on a 10,000-launch raw CSV (the real 475-column export's launch copied, as
   ``bench_csv.py`` builds it) against a bare ``pandas.read_csv`` of it: at most 1.0.
2. ``diagnose`` against ``table`` on that CSV: at most 1 s more.
3. ``diagnose`` on 100,000 launches against 10,000: at most 10x (linear in the launches).
4. Every CSV shape of an export (``bench_shapes.py``: raw pages in base and auto units, with and
   without thousands separators, the details page, ``--metrics`` output with long kernel names,
   per-instance lists, each made by ncu from a real ``--set full`` report and repeated to 10,000
   launches; the source page, 1,000 launches, read by ``lines``): ``table`` against a bare
   ``read_csv`` of the same file (at most 1.0), and ``diagnose`` in text, JSON and Markdown and
   ``report`` (HTML) against ``table`` (at most 0.5 s more each); ``diagnose -f json`` on 100,000
   launches of the base-unit raw page against 10,000 (at most 10x).
5. ``table`` on a 2,000-launch ``.ncu-rep`` (a real ``--set full`` launch copied, as
   ``bench_ncu_rep.py`` builds it) against ``--reader ncu_report``: peak memory at most 0.1 of it.
6. ``diagnose`` on that report against ``ncu --import --csv --page raw`` (where ncu is found:
   ``$NCU``, ``ncu`` on PATH, or /tmp/ncu): faster.
7. ``diagnose`` on a 10,000-launch (2 GB) report: peak memory at most 300 MB (all processes), and
   each output format (text, JSON, Markdown, HTML) in at most 1 s.
8. ``table`` on a small real report (1 MB) with the default jobs against ``--jobs 1``: at most 1.1.
9. ``timeline -f json`` on a 1,000,000-event PyTorch profiler trace (``bench_trace.py``) against
   ``json.load`` of the file: at most 2 s and 200 MB.

    python benchmarks/run.py [--quick] [--out FILE] [--readme]

``--quick`` is the smoke path: small inputs, one pair each, ncu and the 2 GB report left out, and
nothing written unless ``--out`` is given. The full run takes about 30 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import bench_csv  # noqa: E402
import bench_ncu_rep  # noqa: E402
import bench_shapes  # noqa: E402
import bench_trace  # noqa: E402
from table import update_readme  # noqa: E402

RESULTS = HERE / "results.json"
NCU = "ncu-roof"


@dataclass
class Run:
    wall: float
    cpu: float
    peak: int  # bytes, the largest process
    peak_all: int  # bytes, all processes of the command together


def run_once(argv: list[str]) -> Run:
    """One whole process: wall clock, CPU of it and its children, peak RSS (largest, all)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    peak_all = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak_all[0] = max(peak_all[0], sum(bench_ncu_rep._rss(p) for p in bench_ncu_rep._tree(proc.pid)))
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(argv)} failed: {err.decode(errors='replace')[-1500:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, peak_all[0])


def side(rs: list[Run]) -> dict[str, float]:
    """Medians of the runs of one command, and the largest peaks."""
    return {"wall_s": statistics.median(r.wall for r in rs), "cpu_s": statistics.median(r.cpu for r in rs),
            "peak_mb": max(r.peak for r in rs) / 1e6, "all_mb": max(r.peak_all for r in rs) / 1e6}


def alone(a: list[str], runs: int) -> dict[str, Any]:
    """A figure without a baseline (a bound in absolute terms): ``runs`` runs of A, after one
    unmeasured run (as :func:`paired` does)."""
    run_once(a)  # warm the page cache and the imports
    return {"a": side([run_once(a) for _ in range(runs)]), "b": None, "pairs": runs}


def paired(a: list[str], b: list[str], pairs: int) -> dict[str, Any]:
    """A and B in turn ``pairs`` times (after one unmeasured run of each): medians and pair ratios."""
    run_once(a), run_once(b)  # warm the page cache and the imports
    runs = [(run_once(a), run_once(b)) for _ in range(pairs)]
    return {"a": side([x for x, _ in runs]), "b": side([y for _, y in runs]), "pairs": pairs,
            "ratio": statistics.median(x.wall / y.wall for x, y in runs),
            "cpu_ratio": statistics.median(x.cpu / y.cpu for x, y in runs),
            "difference_s": statistics.median(x.wall - y.wall for x, y in runs),
            "cpu_difference_s": statistics.median(x.cpu - y.cpu for x, y in runs)}


def ours(*args: str) -> list[str]:
    return [sys.executable, "-m", "ncu_roof", *args]


def formats(tmp: Path, stem: str) -> list[tuple[str, list[str]]]:
    """The command (without its input) that writes each output format of a diagnosis."""
    return [(fmt, ["diagnose", "-q", "-f", fmt, "-o", str(tmp / f"{stem}.{fmt}"), "--force"])
            for fmt in ("text", "json", "markdown")] + [("html", ["report", "-q", "-o", str(tmp / f"{stem}.html"),
                                                                "--force"])]


SHAPE_BOUND_S = 0.5  # each output format's time over ``table``


def csv_shapes(tmp: Path, n: int, n_big: int, pairs: int, slow_pairs: int, ncu: str | None, note: Any) -> None:
    """Every CSV shape (:mod:`bench_shapes`): ``table`` against a bare ``read_csv``, each output
    format against ``table``; and the base-unit raw page at ``n_big`` launches against ``n``."""
    for shape in bench_shapes.available(ncu):
        launches = min(n, 1_000) if shape == "source" else n
        csv = tmp / f"{shape}.csv"
        what = bench_shapes.build(shape, csv, launches, ncu or "")
        print(f"{shape}: {launches:,} launches, {csv.stat().st_size / 1e6:.0f} MB, copying {what}", flush=True)
        command = bench_shapes.command(shape)
        out = tmp / f"{shape}.table.csv"
        reading = (ours("lines", "-k", bench_shapes.SOURCE_KERNEL, str(csv)) if command == "lines"
                   else ours("table", "-q", "-o", str(out), "--force", str(csv)))
        title = f"`{NCU} {command}`, {launches:,}-launch {bench_shapes.TITLES[shape]}"
        note(figure(f"{shape}-{command}", f"{title}, against a bare `pandas.read_csv`", command, "read_csv",
                    paired(reading, bench_shapes.baseline(shape, csv), pairs), "ratio", 1.0))
        if command == "table":
            for fmt, argv in formats(tmp, shape):
                note(figure(f"{shape}-{fmt}", f"`{NCU} {argv[0]}` ({fmt}) against `table`, {launches:,}-launch "
                            f"{bench_shapes.TITLES[shape]} (s more)", f"{argv[0]} {fmt}", "table",
                            paired(ours(*argv, str(csv)), reading, slow_pairs), "difference_s", SHAPE_BOUND_S))
        if shape == "raw-base" and n_big:
            big = tmp / f"full{n_big}.csv"
            bench_shapes.build(shape, big, n_big, ncu or "")
            diagnose = ours("diagnose", "-q", "-f", "json", "-o", str(tmp / "fd.json"), "--force")
            note(figure("full-scaling", f"`{NCU} diagnose -f json`, {n_big:,} against {n:,} launches, "
                        f"{bench_shapes.TITLES[shape]}", "diagnose 100k", "diagnose 10k",
                        paired(diagnose + [str(big)], diagnose + [str(csv)], slow_pairs), "ratio", n_big / n))
            big.unlink()
        csv.unlink()


def trace(tmp: Path, events: int, pairs: int, note: Any) -> None:
    """``timeline -f json`` on a PyTorch profiler trace against ``json.load`` of it: time and memory."""
    path = tmp / "trace.json.gz"
    written = bench_trace.build(path, events)
    timeline = ours("timeline", "-q", "-f", "json", "-o", str(tmp / "timeline.json"), "--force", str(path))
    measured = paired(timeline, [sys.executable, "-c", bench_trace.LOAD, str(path)], pairs)
    size = path.stat().st_size / 1e6
    what = f"`{NCU} timeline -f json`, a {written:,}-event PyTorch profiler trace ({size:.0f} MB gzip)"
    note(figure("trace-time", f"{what}, against `json.load` of it: time", "timeline", "json.load", measured,
                "wall_s", 2.0))
    note(figure("trace-memory", f"{what}, against `json.load` of it: peak memory", "timeline", "json.load",
                measured, "peak_mb", 200.0))
    path.unlink()


def find_ncu() -> str | None:
    for candidate in (os.environ.get("NCU"), shutil.which("ncu"), "/tmp/ncu/root/usr/lib/nsight-compute/ncu"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def figure(fid: str, what: str, a: str, b: str, measured: dict[str, Any], value: str, bound: float,
           better: str = "lower") -> dict[str, Any]:
    got = measured[value] if value in measured else measured["a"][value]
    met = got <= bound if better == "lower" else got >= bound
    return {"id": fid, "what": what, "command": a, "baseline": b, **measured, "value": value,
            "bound": bound, "better": better, "met": bool(met)}


def main() -> int:  # noqa: C901, PLR0915 - one linear script
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small inputs, one pair each; writes only with --out")
    parser.add_argument("--out", type=Path, default=None, help=f"the JSON to write (default {RESULTS.name})")
    parser.add_argument("--readme", action="store_true", help="rewrite README.md's table from the JSON written")
    args = parser.parse_args()
    out = args.out if args.out is not None or args.quick else RESULTS
    quick = args.quick
    n_csv, n_csv_big, n_rep, n_rep_big = (1_000, 0, 100, 0) if quick else (10_000, 100_000, 2_000, 10_000)
    n_events = 20_000 if quick else 1_000_000
    pairs, slow_pairs = (1, 1) if quick else (5, 3)
    figures: list[dict[str, Any]] = []
    skipped: list[str] = []
    started, load = time.perf_counter(), os.getloadavg()[0]

    def note(fig: dict[str, Any]) -> None:
        figures.append(fig)
        shown = fig[fig["value"]] if fig["value"] in fig else fig["a"][fig["value"]]
        base = f", B {fig['b']['wall_s']:.2f} s {fig['b']['peak_mb']:.0f} MB" if fig["b"] else ""
        print(f"{'ok  ' if fig['met'] else 'MISS'} {fig['id']}: {fig['value']} {shown:.3f} "
              f"(bound {fig['bound']}); A {fig['a']['wall_s']:.2f} s {fig['a']['peak_mb']:.0f} MB{base}", flush=True)

    with tempfile.TemporaryDirectory(prefix="ncu-roof-bench-") as tmp_name:
        tmp = Path(tmp_name)
        csv = tmp / f"launches{n_csv}.csv"
        bench_csv.build(csv, n_csv)
        table_csv = ours("table", "-q", "-o", str(tmp / "t.csv"), "--force", str(csv))
        diagnose_csv = ours("diagnose", "-q", "-o", str(tmp / "d.txt"), "--force", str(csv))
        bare = [sys.executable, "-c", "import sys, pandas; pandas.read_csv(sys.argv[1])", str(csv)]
        note(figure("csv-table", f"`{NCU} table`, {n_csv:,}-launch CSV, against a bare `pandas.read_csv`",
                    "table", "read_csv", paired(table_csv, bare, pairs), "ratio", 1.0))
        note(figure("csv-diagnose", f"`{NCU} diagnose` against `table`, {n_csv:,}-launch CSV (s more)",
                    "diagnose", "table", paired(diagnose_csv, table_csv, pairs), "difference_s", 1.0))
        if n_csv_big:
            big = tmp / f"launches{n_csv_big}.csv"
            bench_csv.build(big, n_csv_big)
            diagnose_big = ours("diagnose", "-q", "-o", str(tmp / "d100k.txt"), "--force", str(big))
            note(figure("csv-scaling", f"`{NCU} diagnose`, {n_csv_big:,} against {n_csv:,} launches",
                        "diagnose 100k", "diagnose 10k", paired(diagnose_big, diagnose_csv, slow_pairs), "ratio",
                        n_csv_big / n_csv))
            big.unlink()
        csv.unlink()
        csv_shapes(tmp, n_csv, n_csv_big, pairs, slow_pairs, None if quick else find_ncu(), note)
        trace(tmp, n_events, slow_pairs, note)

        build, source = bench_ncu_rep.builder(synthetic=False)
        print(f"reports copy {source}", flush=True)
        rep = tmp / f"launches{n_rep}.ncu-rep"
        build(rep, n_rep)
        table_rep = ours("table", "-q", "-o", str(tmp / "r.csv"), "--force", str(rep))
        theirs = ours("table", "-q", "-o", str(tmp / "r2.csv"), "--force", "--reader", "ncu_report", str(rep))
        try:
            import ncu_report  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            skipped.append("rep-memory: NVIDIA's ncu_report is not installed (pip install ncu-report)")
        else:
            measured = paired(table_rep, theirs, slow_pairs)
            measured["memory_ratio"] = measured["a"]["peak_mb"] / measured["b"]["peak_mb"]
            note(figure("rep-memory", f"`{NCU} table`, {n_rep:,}-launch `.ncu-rep`, peak memory against "
                        "`--reader ncu_report`", "table", "table --reader ncu_report", measured, "memory_ratio", 0.1))
        ncu = None if quick else find_ncu()
        if ncu is None:
            skipped.append("rep-ncu-import: no ncu found ($NCU, PATH, /tmp/ncu)" if not quick else
                           "rep-ncu-import: left out by --quick")
        else:
            diagnose_rep = ours("diagnose", "-q", "-o", str(tmp / "rd.txt"), "--force", str(rep))
            importing = ["sh", "-c", f'exec "{ncu}" --import "{rep}" --csv --page raw > "{tmp / "ncu.csv"}"']
            note(figure("rep-ncu-import", f"`{NCU} diagnose`, {n_rep:,}-launch `.ncu-rep`, against "
                        "`ncu --import --csv --page raw`", "diagnose", "ncu --import --csv",
                        paired(diagnose_rep, importing, slow_pairs), "ratio", 1.0))
        rep.unlink()
        if n_rep_big:
            big_rep = tmp / f"launches{n_rep_big}.ncu-rep"
            build(big_rep, n_rep_big)
            os.sync()  # the 2 GB just written reaches the disk now, not while the commands are timed
            size = f"({big_rep.stat().st_size / 1e9:.1f} GB)"
            diagnose_big_rep = ours("diagnose", "-q", "-o", str(tmp / "rbd.txt"), "--force", str(big_rep))
            measured = alone(diagnose_big_rep, slow_pairs)
            note(figure("rep-big-memory", f"`{NCU} diagnose`, {n_rep_big:,}-launch `.ncu-rep` {size}, peak "
                        "memory of all processes", "diagnose", "", measured, "all_mb", 300.0))
            note(figure("rep-big-text", f"`{NCU} diagnose`, {n_rep_big:,}-launch `.ncu-rep` {size}, text",
                        "diagnose", "", measured, "wall_s", 1.0))
            for fmt, argv in formats(tmp, "rb")[1:]:
                note(figure(f"rep-big-{fmt}", f"`{NCU} {argv[0]}`, {n_rep_big:,}-launch `.ncu-rep`, {fmt}",
                            argv[0], "", alone(ours(*argv, str(big_rep)), slow_pairs), "wall_s", 1.0))
            big_rep.unlink()
        small = bench_ncu_rep.SMALL
        if small.is_file():
            pooled = ours("table", "-q", "-o", str(tmp / "p.csv"), "--force", str(small))
            single = ours("table", "-q", "-j", "1", "-o", str(tmp / "p1.csv"), "--force", str(small))
            note(figure("small-report", f"`{NCU} table`, a 1 MB real report, default jobs against `--jobs 1`",
                        "table", "table --jobs 1", paired(pooled, single, pairs), "ratio", 1.1))
        else:
            skipped.append(f"small-report: {small} is absent")

    results = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "machine": {"cores": len(os.sched_getaffinity(0)), "memory_gib": round(_memory_gib(), 1),
                    "python": platform.python_version(), "system": platform.platform(terse=True),
                    "load_average_at_start": round(load, 1), "load_average_at_end": round(os.getloadavg()[0], 1)},
        "quick": quick, "seconds": round(time.perf_counter() - started, 1),
        "figures": figures, "skipped": skipped,
    }
    for line in skipped:
        print(f"skip {line}")
    if out is not None:
        tmp_out = out.with_suffix(".json.tmp")
        tmp_out.write_text(json.dumps(results, indent=1) + "\n")
        tmp_out.replace(out)
        print(f"wrote {out}")
        if args.readme:
            readme = ROOT / "README.md"
            readme.write_text(update_readme(readme.read_text(), results))
            print(f"rewrote the table in {readme}")
    return 0 if all(f["met"] for f in figures) else 1


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def _memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


if __name__ == "__main__":
    sys.exit(main())
