"""The GPU check: capture every kernel in kernels/, run ``ceilings``, assert the seeds' predictions.

Run on a machine with a CUDA GPU, Nsight Compute and CuPy (``capture/gpu-check.sh``). Reports go
to ``fixtures/captured/<gpu>/`` with a MANIFEST.md; the predicted-vs-measured table is printed
and saved as CHECK.md there. ``--dry-run`` only prints the commands. The whole check runs under
one time budget (``--budget-s``); steps that do not fit are reported as not run (a failure).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ONCE = ["--repeat", "1", "--warmup", "0"]  # under ncu: one launch per region, nothing else timed
# ncu options for every capture: leave the clocks alone (locking them fails or skews on some VMs).
CAPTURE_OPTS = ["--clock-control", "none"]

# (kernel script, arguments under ncu): sizes keep each capture to seconds on one H200.
CAPTURES: tuple[tuple[str, list[str]], ...] = (
    ("vecadd", ["--n", str(1 << 26)]),
    ("saxpy", ["--n", str(1 << 26)]),
    ("relu_fp16", ["--n", str(1 << 27)]),
    ("softmax", ["--rows", "16384", "--cols", "4096"]),
    ("layernorm", ["--rows", "16384", "--cols", "4096"]),
    ("layernorm_unfused", ["--rows", "16384", "--cols", "4096"]),
    ("gemv_fp16", ["--m", "16384", "--k", "8192"]),
    ("gemm", ["--n", "2048"]),
    ("gelu_epilogue", ["--n", "4096"]),  # C = 64 MB > L2: its round trip must reach DRAM
    ("dial", ["--n", str(1 << 25)]),
    ("tensor_peak", ["--blocks", "1056", "--iters", "1024"]),
    ("launch_overhead", ["--launches", "20"]),
    ("decode_linear", ["--k", "8192", "--n", "8192"]),
    ("decode_attention", ["--heads", "8", "--length", "4096"]),
    ("wave_quant", ["--iters", "2048"]),
    ("size_sweep", []),
)
# Plain runs (no profiler) for what ncu's serialized, clock-locked replay cannot show.
PLAIN: tuple[tuple[str, list[str]], ...] = (
    ("launch_overhead", ["--launches", "10000", "--repeat", "3", "--warmup", "1"]),
    ("size_sweep", ["--repeat", "50", "--warmup", "5", "--no-check"]),
    ("tensor_peak", ["--repeat", "5", "--warmup", "1", "--no-check"]),
    ("dial", ["--n", str(1 << 25), "--repeat", "5", "--warmup", "1", "--no-check"]),
)
STREAMING = ("vecadd", "saxpy", "relu_fp16", "softmax", "layernorm", "gemv_fp16")
TOLERANCE = 0.15


@dataclass
class Step:
    """One command of the check."""

    name: str
    argv: list[str]
    kind: str  # capture | ceilings | plain
    output: Path | None = None
    status: str = "not run"
    seconds: float = 0.0

    def shell(self) -> str:
        return shlex.join(self.argv)


@dataclass
class Check:
    """One row of the predicted-vs-measured table."""

    name: str
    predicted: str
    measured: str
    ok: bool | None  # None: reported, not asserted
    note: str = ""

    def __post_init__(self) -> None:
        if self.ok is not None:
            self.ok = bool(self.ok)  # numpy booleans from pandas arithmetic


@dataclass
class Plan:
    out: Path  # as written in the commands (relative to the repository root by default)
    steps: list[Step] = field(default_factory=list)

    @property
    def dir(self) -> Path:
        return ROOT / self.out

    def path(self, p: Path) -> Path:
        return ROOT / p


# --- environment ------------------------------------------------------------------------------


def _cmd_output(argv: Sequence[str]) -> str:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=60,
                              check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def ncu_path() -> str:
    """The ncu that ``ncu-roof capture`` will use (PATH, $NCU or the usual install folders)."""
    from ncu_roof.capture import find_ncu

    try:
        return str(find_ncu(None, os.environ))
    except Exception:  # noqa: BLE001
        return "ncu"


def gpu_info() -> tuple[str, str]:
    """(GPU name, driver version) from nvidia-smi; empty strings where it is absent."""
    line = _cmd_output(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    first = line.splitlines()[0] if line else ""
    name, _, driver = first.partition(",")
    return name.strip(), driver.strip()


def slug(gpu_name: str) -> str:
    """``NVIDIA H200`` -> ``h200``: the folder name under fixtures/captured/."""
    s = re.sub(r"^nvidia\s+", "", gpu_name.strip(), flags=re.I).lower()
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "unknown-gpu"


# --- the plan ---------------------------------------------------------------------------------


def make_plan(args: argparse.Namespace, gpu: str) -> Plan:
    out = Path(args.out) / gpu
    ncu_roof = shlex.split(args.ncu_roof)
    plan = Plan(out)
    only = set(args.only or [])
    for script, extra in CAPTURES:
        if only and script not in only:
            continue
        rep = out / f"{script}.ncu-rep"
        plan.steps.append(Step(script, [*ncu_roof, "capture", f"kernels/{script}.py", "-o", str(rep),
                                        "--force", "--no-diagnose", *CAPTURE_OPTS, "--", *extra, *ONCE],
                               "capture", rep))
    if not args.skip_ceilings:
        toml = out / "ceilings.toml"
        plan.steps.append(Step("ceilings", [*ncu_roof, "ceilings", "-o", str(toml), "--force"], "ceilings", toml))
    for script, extra in PLAIN:
        if only and script not in only:
            continue
        js = out / f"{script}.plain.json"
        plan.steps.append(Step(f"{script} (plain)",
                               [args.python, f"kernels/{script}.py", *extra, "--json", str(js)],
                               "plain", js))
    return plan


def _run_step(argv: list[str], timeout: float, log: Path) -> tuple[str, list[str]]:
    """Run one command in its own process group (so a timeout also stops ncu and the script it
    started); its whole output goes to ``log``. Returns (status, last lines of output)."""
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        status = "interrupted"
        try:
            code = proc.wait(timeout=timeout)
            status = "ok" if code == 0 else f"exit {code}"
        except subprocess.TimeoutExpired:
            status = f"timed out after {timeout:.0f} s"
        finally:
            if status != "ok" and not status.startswith("exit"):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the whole group: ncu and the script too
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
    return status, log.read_text(errors="replace").strip().splitlines()[-40:]


def run_plan(plan: Plan, budget_s: float, step_limit_s: float,
             after_step: Callable[[], object] = lambda: None) -> None:
    """Run the steps in order within the total budget; record status and seconds.

    Each step's old output is removed first (a failed step must not leave a stale report to
    analyse); ``after_step`` runs after every step (the manifest is rewritten there).
    """
    plan.dir.mkdir(parents=True, exist_ok=True)
    logs = plan.dir / "logs"
    logs.mkdir(exist_ok=True)
    deadline = time.monotonic() + budget_s
    for step in plan.steps:
        left = deadline - time.monotonic()
        if left < 5:
            step.status = "skipped: time budget spent"
            continue
        if step.output is not None:
            plan.path(step.output).unlink(missing_ok=True)
        print(f"$ {step.shell()}", flush=True)
        t0 = time.monotonic()
        log = logs / (re.sub(r"[^A-Za-z0-9_.-]+", "_", step.name).strip("_") + ".log")
        try:
            step.status, tail = _run_step(step.argv, min(left, step_limit_s), log)
            print("\n".join(f"  {line}" for line in tail), flush=True)
        except OSError as exc:
            step.status = f"failed to start: {exc}"
        step.seconds = time.monotonic() - t0
        print(f"  -> {step.status} in {step.seconds:.1f} s", flush=True)
        after_step()


def write_manifest(plan: Plan, gpu_name: str, driver: str, ncu_version: str) -> Path:
    lines = ["# Captured by capture/gpu-check.sh", "",
             f"- GPU: {gpu_name or 'unknown'}", f"- driver: {driver or 'unknown'}",
             f"- ncu: {ncu_version or 'unknown'}",
             f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
             f"- python: {sys.version.split()[0]}", "", "| step | status | seconds | command |",
             "|---|---|---|---|"]
    lines += [f"| {s.name} | {s.status} | {s.seconds:.1f} | `{s.shell()}` |" for s in plan.steps]
    path = plan.dir / "MANIFEST.md"
    path.write_text("\n".join(lines) + "\n")
    return path


# --- reading the reports ----------------------------------------------------------------------


def region_of(nvtx: Any) -> tuple[str, float, float] | None:
    """The innermost ncu-roof region of a launch's NVTX stacks: (name, flops, bytes)."""
    from ncu_roof.region import parse_range_message

    if not isinstance(nvtx, str):
        return None
    for part in reversed(nvtx.split(" | ")):
        for seg in reversed(part.split("/")):
            if "[ncu-roof" in seg:
                rc = parse_range_message(seg.split("@", 1)[-1] if "@" in seg.split("[")[0] else seg)
                return rc.name, rc.flops or 0.0, rc.bytes or 0.0
    return None


def region_table(frame: Any) -> Any:
    """Per (report, region): summed time, DRAM bytes, measured FLOPs, launches and the counts."""
    import pandas as pd

    if "nvtx" not in frame.columns:
        raise ValueError("the reports carry no NVTX ranges: capture with NVTX on (ncu --nvtx)")
    parsed = frame["nvtx"].map(region_of)
    frame = frame.assign(region=parsed.map(lambda r: r and r[0]),
                         algo_flops=parsed.map(lambda r: r and r[1]),
                         algo_bytes=parsed.map(lambda r: r and r[2]))
    frame = frame[frame["region"].notna()]
    sums = {c: "sum" for c in ("time_s", "dram_bytes", "flops_fp32", "flops_fp16", "flops_tensor")
            if c in frame.columns}
    grouped = frame.groupby("region").agg(**{c: (c, a) for c, a in sums.items()},
                                          launches=("time_s", "size"),
                                          algo_flops=("algo_flops", "first"),
                                          algo_bytes=("algo_bytes", "first"))
    return pd.DataFrame(grouped)


def load_regions(reports: Sequence[Path]) -> tuple[Any, list[Check]]:
    """The region table of all reports that load; a failing row for each one that does not."""
    import pandas as pd

    import ncu_roof

    frames, failed = [], []
    for p in reports:
        try:
            frames.append(ncu_roof.load([str(p)]))
        except Exception as exc:  # noqa: BLE001 - one broken report must not hide the others
            failed.append(Check(f"load {p.name}", "loads", f"error: {exc}".splitlines()[0], False))
    if not frames:
        return None, failed
    return region_table(pd.concat(frames, ignore_index=True)), failed


# --- the assertions ---------------------------------------------------------------------------


def _fmt(x: float, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.3g}{unit}"


def _ai(row: Any) -> float:
    return row.algo_flops / row.dram_bytes if row.dram_bytes else float("nan")


def check_streaming(r: Any) -> list[Check]:
    out = []
    for name in STREAMING:
        if name not in r.index:
            out.append(Check(f"{name}: achieved intensity", "", "missing", False))
            continue
        row = r.loc[name]
        alg, ach = row.algo_flops / row.algo_bytes, _ai(row)
        out.append(Check(f"{name}: achieved vs algorithmic intensity", _fmt(alg, " FLOP/B"),
                         _fmt(ach, " FLOP/B"), abs(ach / alg - 1) <= TOLERANCE,
                         f"DRAM {row.dram_bytes / 1e6:.0f} MB vs {row.algo_bytes / 1e6:.0f} MB"))
    return out


def check_layernorm(r: Any) -> list[Check]:
    out = []
    if "layernorm_unfused" in r.index:
        row = r.loc["layernorm_unfused"]
        x = row.dram_bytes / row.algo_bytes
        out.append(Check("layernorm_unfused: DRAM bytes / algorithmic", "5x (10 passes / 2)",
                         f"{x:.2f}x over {int(row.launches)} launches", 4.0 <= x <= 6.0))
    if "layernorm" in r.index:
        row = r.loc["layernorm"]
        x = row.dram_bytes / row.algo_bytes
        out.append(Check("layernorm (fused): DRAM bytes / algorithmic", "1x", f"{x:.2f}x",
                         abs(x - 1) <= TOLERANCE))
    return out


def dial_rows(r: Any, chains: int) -> list[tuple[int, Any]]:
    rows = [(int(m.group(1)), r.loc[name]) for name in r.index
            if (m := re.fullmatch(rf"dial_c{chains}_f(\d+)", str(name)))]
    return sorted(rows, key=lambda t: t[0])


def check_dial(r: Any, ceilings: dict[str, float]) -> list[Check]:
    rows = dial_rows(r, 4)
    if not rows:
        return [Check("dial", "", "missing", False)]
    gbs = {f: row.algo_bytes / row.time_s / 1e9 for f, row in rows}
    gfs = {f: row.algo_flops / row.time_s / 1e9 for f, row in rows}
    low = [gbs[f] for f in gbs if f <= 8]
    flat_bw = sorted(low)[len(low) // 2]
    top = max(gfs.values())
    ridge = top / flat_bw
    out = [Check("dial: GB/s flat for F <= 8", "flat (spread <= 20%)",
                 f"{min(low):.0f}-{max(low):.0f} GB/s", max(low) / min(low) <= 1.2),
           Check("dial: GFLOP/s flat at F = 1024, 2048", "ratio ~1",
                 f"{gfs.get(1024, float('nan')):.0f} -> {gfs.get(2048, float('nan')):.0f} GFLOP/s",
                 1024 in gfs and 2048 in gfs and abs(gfs[2048] / gfs[1024] - 1) <= 0.15)]
    pred = (ceilings.get("fp32_flops_per_s", float("nan")) /
            ceilings.get("dram_bytes_per_s", float("nan")))
    out.append(Check("dial: ridge (FLOP/B) and F at the ridge", _fmt(pred, " FLOP/B (ceilings)"),
                     f"{ridge:.1f} FLOP/B, F ~ {4 * ridge:.0f}", None))
    f_top = max(gfs)
    row = dict(rows)[f_top]
    if "flops_fp32" in row and row.flops_fp32 == row.flops_fp32:
        out.append(Check(f"dial F={f_top}: measured FP32 FLOPs = algorithmic", _fmt(row.algo_flops),
                         _fmt(row.flops_fp32), abs(row.flops_fp32 / row.algo_flops - 1) <= 0.02))
    one = dict(dial_rows(r, 1))
    if f_top in one:
        ratio = gfs[f_top] / (one[f_top].algo_flops / one[f_top].time_s / 1e9)
        out.append(Check("dial: 4-chain / 1-chain plateau", "~FMA latency in cycles (~4)",
                         f"{ratio:.1f}x", None))
    return out


def _series(r: Any, prefix: str) -> list[tuple[int, Any]]:
    rows = [(int(m.group(1)), r.loc[name]) for name in r.index
            if (m := re.fullmatch(rf"{prefix}(\d+)", str(name)))]
    return sorted(rows, key=lambda t: t[0])


def check_decode(r: Any) -> list[Check]:
    out = []
    lin = _series(r, "decode_linear_b")
    if lin:
        ai = [(b, _ai(row), row.algo_flops / row.algo_bytes) for b, row in lin]
        rising = all(b2 >= 0.9 * b1 for (_, b1, _), (_, b2, _) in itertools.pairwise(ai))
        out.append(Check("decode_linear: intensity rising with batch",
                         ", ".join(f"B={b}:{p:.3g}" for b, _, p in ai),
                         ", ".join(f"B={b}:{a:.3g}" for b, a, _ in ai),
                         rising and ai[-1][1] >= 0.25 * ai[-1][0] * ai[0][1]))
    att = _series(r, "decode_attention_b")
    if att:
        ai = [(b, _ai(row)) for b, row in att]
        out.append(Check("decode_attention: intensity ~1 at every batch", "~1.0",
                         ", ".join(f"B={b}:{a:.2f}" for b, a in ai),
                         all(0.7 <= a <= 1.4 for _, a in ai)))
    return out


def check_launch(r: Any, plain: dict[str, list[dict[str, Any]]],
                 ceilings: dict[str, float] | None = None) -> list[Check]:
    out = []
    ceil = ceilings or {}
    if "launch_overhead_s" in ceil:
        out.append(Check("launch overhead (ncu-roof ceilings): back-to-back / sync / graph",
                         "a few us each", " / ".join(f"{ceil.get(k, float('nan')) * 1e6:.2f}" for k in
                                                     ("launch_overhead_s", "launch_sync_s",
                                                      "launch_graph_s")) + " us", None))
    rows = [r.loc[n] for n in r.index if str(n).startswith("launch_")]
    if rows:
        per = sum(row.time_s for row in rows) / sum(row.launches for row in rows)
        out.append(Check("empty kernel: GPU duration (ncu)", "a few us", f"{per * 1e6:.2f} us", None))
    res = {d["name"]: d["time_s"] for d in plain.get("launch_overhead", [])}
    if res:
        out.append(Check("launch overhead per launch (back-to-back / sync / graph)", "a few us each",
                         " / ".join(f"{res.get(f'launch_{m}', float('nan')) * 1e6:.2f}"
                                    for m in ("back_to_back", "sync", "graph")) + " us",
                         all(v < 100e-6 for v in res.values())
                         and res.get("launch_graph", 0) <= res.get("launch_sync", 1)))
    return out


def check_waves(r: Any) -> list[Check]:
    rows = dict(_series(r, "wave_g"))
    grids = sorted(rows)
    wave = next((g for g in grids if g + 1 in rows and 2 * g + 1 in rows), None)
    if wave is None:
        return [Check("wave quantization", "", "missing", False)]
    t = {g: rows[g].time_s for g in grids}
    x = t[wave + 1] / t[wave]
    return [Check(f"wave quantization: time(wave+1 block) / time(wave), wave={wave}", "~2x",
                  f"{x:.2f}x", x >= 1.5),
            Check("wave quantization: time(2 waves) / time(1 wave)", "~2x",
                  f"{t.get(2 * wave, float('nan')) / t[wave]:.2f}x", None)]


def check_size_sweep(r: Any, plain: dict[str, list[dict[str, Any]]]) -> list[Check]:
    rows = _series(r, "size_sweep_n")
    out = []
    if len(rows) >= 3:
        (n0, r0), (n1, r1) = rows[0], rows[1]
        (m0, s0), (m1, s1) = rows[-2], rows[-1]
        out.append(Check(f"size sweep: time({n1}) / time({n0}) (overhead regime)",
                         f"~1 (work x{n1 // n0})", f"{r1.time_s / r0.time_s:.2f}x",
                         r1.time_s / r0.time_s < 1.5))
        out.append(Check(f"size sweep: time({m1}) / time({m0}) (bandwidth regime)",
                         f"~{m1 // m0}", f"{s1.time_s / s0.time_s:.2f}x",
                         0.75 * (m1 / m0) <= s1.time_s / s0.time_s <= 1.25 * (m1 / m0)))
    pl = plain.get("size_sweep", [])
    if pl:
        out.append(Check("size sweep (plain): smallest / largest GB/s", "collapses at small sizes",
                         f"{pl[0]['bytes'] / pl[0]['time_s'] / 1e9:.1f} / "
                         f"{pl[-1]['bytes'] / pl[-1]['time_s'] / 1e9:.0f} GB/s, "
                         f"{pl[0]['time_s'] * 1e6:.1f} us at n={pl[0]['bytes'] // 12:.0f}", None))
    return out


def check_tensor_gemm(r: Any, plain: dict[str, list[dict[str, Any]]],
                      ceilings: dict[str, float] | None = None) -> list[Check]:
    ceilings = ceilings or {}
    out = []
    tflops = {}
    for acc in ("f32acc", "f16acc"):
        name = f"tensor_peak_{acc}"
        if name in r.index:
            row = r.loc[name]
            tflops[acc] = row.algo_flops / row.time_s / 1e12
            if "flops_tensor" in row and row.flops_tensor == row.flops_tensor:
                out.append(Check(f"{name}: measured tensor FLOPs = algorithmic", _fmt(row.algo_flops),
                                 _fmt(row.flops_tensor),
                                 abs(row.flops_tensor / row.algo_flops - 1) <= 0.05))
    pl = {d["name"]: d["flops"] / d["time_s"] / 1e12 for d in plain.get("tensor_peak", [])}
    if tflops:
        out.append(Check("tensor peak FP32-acc / FP16-acc (TFLOP/s, ncu | plain)",
                         "datacenter: ratio ~1; GeForce: FP32-acc at half rate"
                         + (f"; ceilings fp16 tensor {ceilings['fp16_tensor_flops_per_s'] / 1e12:.0f}"
                            if "fp16_tensor_flops_per_s" in ceilings else ""),
                         " / ".join(f"{tflops.get(a, float('nan')):.0f}" for a in ("f32acc", "f16acc"))
                         + " | " + " / ".join(f"{pl.get(f'tensor_peak_{a}', float('nan')):.0f}"
                                              for a in ("f32acc", "f16acc")), None))
    for dtype, div in (("fp32", 6), ("fp16", 3)):
        impls = {i: r.loc[f"gemm_{dtype}_{i}"] for i in ("naive", "tiled", "cublas")
                 if f"gemm_{dtype}_{i}" in r.index}
        if len(impls) == 3:
            n_cubed = impls["naive"].algo_flops / 2
            n = round(n_cubed ** (1 / 3))
            out.append(Check(f"gemm {dtype}: achieved intensity naive / tiled / cuBLAS",
                             f"<= N/{div} = {n / div:.0f}",
                             " / ".join(f"{_ai(impls[i]):.0f}" for i in ("naive", "tiled", "cublas")),
                             impls["cublas"].time_s < impls["naive"].time_s))
    if "gelu_unfused" in r.index and "gelu_fused" in r.index:
        u, f = r.loc["gelu_unfused"], r.loc["gelu_fused"]
        n2 = u.algo_bytes / 12
        out.append(Check("GELU epilogue: unfused - fused DRAM bytes", f"{8 * n2 / 1e6:.0f} MB (8 N^2)",
                         f"{(u.dram_bytes - f.dram_bytes) / 1e6:.0f} MB",
                         u.dram_bytes - f.dram_bytes >= 0.4 * 8 * n2,
                         "the read-back of C is 4 N^2; writes still in L2 when a kernel ends are not counted"))
    return out


def read_ceilings(path: Path) -> dict[str, float]:
    """Flat numeric values of ceilings.toml (any nesting), by key name."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    if not path.is_file():
        return {}
    flat: dict[str, float] = {}

    def walk(d: dict[str, Any]) -> None:
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v)
            elif isinstance(v, (int, float)):
                flat.setdefault(k, float(v))

    walk(tomllib.loads(path.read_text()))
    return flat


def analyse(plan: Plan) -> list[Check]:
    reports = [plan.path(s.output) for s in plan.steps
               if s.kind == "capture" and s.output and plan.path(s.output).is_file()]
    plain = {}
    for s in plan.steps:
        if s.kind == "plain" and s.output and plan.path(s.output).is_file():
            plain[s.name.split()[0]] = json.loads(plan.path(s.output).read_text())
    checks = [Check(f"step {s.name}", "ok", s.status, False) for s in plan.steps if s.status != "ok"]
    if not reports:
        return [*checks, Check("reports", "captured", "none", False)]
    r, failed = load_regions(reports)
    checks += failed
    if r is None:
        return checks
    ceilings = read_ceilings(plan.dir / "ceilings.toml")
    parts: list[Callable[[], list[Check]]] = [
        lambda: check_streaming(r), lambda: check_layernorm(r), lambda: check_dial(r, ceilings),
        lambda: check_decode(r), lambda: check_launch(r, plain, ceilings), lambda: check_waves(r),
        lambda: check_size_sweep(r, plain), lambda: check_tensor_gemm(r, plain, ceilings)]
    for part in parts:
        try:
            checks += part()
        except Exception as exc:  # noqa: BLE001 - one broken analysis must not hide the others
            checks.append(Check(getattr(part, "__name__", "analysis"), "", f"error: {exc!r}", False))
    return checks


def table(checks: Sequence[Check]) -> str:
    mark = {True: "pass", False: "FAIL", None: "info"}
    lines = ["| check | predicted | measured | result | note |", "|---|---|---|---|---|"]
    lines += [f"| {c.name} | {c.predicted} | {c.measured} | {mark[c.ok]} | {c.note} |" for c in checks]
    return "\n".join(lines)


# --- main -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    p.add_argument("--gpu", default=None, help="folder name under --out (default: from nvidia-smi)")
    p.add_argument("--out", default="fixtures/captured", help="relative to the repository root")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="time budget for all the steps (analysis comes after it)")
    p.add_argument("--step-limit-s", type=float, default=150.0, help="time limit for one step")
    p.add_argument("--only", nargs="+", default=None, help="only these kernel scripts")
    p.add_argument("--skip-ceilings", action="store_true")
    p.add_argument("--analyse-only", action="store_true", help="use the reports already captured")
    p.add_argument("--ncu-roof", default=f"{shlex.quote(sys.executable)} -m ncu_roof",
                   help="the ncu-roof command")
    p.add_argument("--python", default=sys.executable, help="python for the plain runs")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    gpu_name, driver = ("", "") if args.dry_run and args.gpu else gpu_info()
    plan = make_plan(args, args.gpu or slug(gpu_name))
    if args.dry_run:
        print(f"# reports and MANIFEST.md under {plan.out} (commands run in {ROOT})")
        for s in plan.steps:
            print(s.shell())
        return 0
    if not args.analyse_only:
        ncu_version = " ".join(_cmd_output([ncu_path(), "--version"]).splitlines()[-1:])
        run_plan(plan, args.budget_s, args.step_limit_s,
                 after_step=lambda: write_manifest(plan, gpu_name, driver, ncu_version))
        print(f"wrote {write_manifest(plan, gpu_name, driver, ncu_version)}")
    else:
        for s in plan.steps:
            s.status = "ok"
    checks = analyse(plan)
    text = table(checks)
    (plan.dir / "CHECK.md").write_text(f"# Predicted vs measured on {gpu_name or plan.out.name}\n\n"
                                       f"{text}\n")
    print(text)
    failed = [c.name for c in checks if c.ok is False]
    print(f"\n{len(checks) - len(failed)} of {len(checks)} rows pass or are informational"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
