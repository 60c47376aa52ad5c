"""``ncu-roof capture SCRIPT.py``: run a script under ncu, write a report, diagnose it."""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from ncu_roof import capture as cap


def _dry_run_lines(opts: cap.CaptureOptions, ncu_found: bool) -> list[str]:
    """What ``--dry-run`` prints: the command, the metric set, the pass estimate."""
    mset = cap.metric_set(opts)
    lo, hi = cap.estimate_passes(mset.metrics)
    n_hw = len(cap.hardware_counters(mset.metrics))
    lines = [
        "ncu-roof capture: dry run, nothing was run",
        f"command: {shlex.join(cap.build_ncu_command(opts))}",
        "environment: LC_ALL=C PYTHONUNBUFFERED=1",
        f"report: {cap.report_path(opts.report)}",
        f"metric set: {mset.name}, {len(mset.metrics)} metrics ({n_hw} hardware counters)",
        f"replay passes: not known without a GPU (ncu prints the real count per kernel); "
        f"rough estimate {lo}-{hi} per kernel",
    ]
    if not ncu_found:
        lines.append("note: ncu was not found here; the command names plain `ncu`")
    if opts.cc is None:
        lines.append("note: GPU architecture unknown (no --cc, no nvidia-smi): common set without tensor-op counters")
    lines += [f"note: {n}" for n in mset.notes]
    lines.append("metrics:")
    lines += [f"  {m}" for m in mset.metrics]
    return lines


def _diagnose_and_print(report: Path) -> None:
    """Diagnose the new report and print the text summary (the one place that calls diagnose)."""
    from ncu_roof import diagnose
    from ncu_roof.fmt import terminal_width
    from ncu_roof.render import renderers as render

    result = diagnose.diagnose_paths([report])
    typer.echo(render.render_text(result, width=terminal_width()))


def _progress(p: cap.CaptureProgress) -> None:
    passes = f", {p.last_passes} passes" if p.last_passes is not None else ""
    typer.echo(f"ncu-roof: {p.kernels} kernel(s) profiled (last: {p.last_kernel}{passes})", err=True)


def command(
    script: Annotated[Path, typer.Argument(metavar="SCRIPT", help="the Python script to profile")],
    script_args: Annotated[list[str] | None, typer.Argument(
        metavar="ARGS", help="arguments for the script (after --)"
    )] = None,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="the report to write (.ncu-rep added if missing; default: SCRIPT.ncu-rep here)"
    )] = None,
    ncu: Annotated[str | None, typer.Option(
        "--ncu", help="the ncu executable (default: $NCU, PATH, CUDA/Nsight Compute folders)"
    )] = None,
    python: Annotated[Path | None, typer.Option(
        "--python", help="the Python that runs the script (default: this one)"
    )] = None,
    kernel_name: Annotated[str | None, typer.Option(
        "--kernel-name", "-k", help="only kernels with this name (or regex:EXPR)"
    )] = None,
    launch_skip: Annotated[int | None, typer.Option(
        "--launch-skip", "-s", min=0, help="skip this many matching launches"
    )] = None,
    launch_count: Annotated[int | None, typer.Option(
        "--launch-count", "-c", min=1, help="profile at most this many launches"
    )] = None,
    replay_mode: Annotated[str, typer.Option("--replay-mode", help="kernel, application or range")] = "kernel",
    cache_control: Annotated[str, typer.Option(
        "--cache-control", help="all (flush caches between passes) or none"
    )] = "all",
    clock_control: Annotated[str, typer.Option("--clock-control", help="base (lock clocks) or none")] = "base",
    cc: Annotated[str | None, typer.Option(
        "--cc", help="the metric set for this compute capability, e.g. 9.0 (default: ask nvidia-smi)"
    )] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing report")] = False,
    no_diagnose: Annotated[bool, typer.Option(
        "--no-diagnose", help="only write the report, do not diagnose it"
    )] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the ncu command and metrics; run nothing")] = False,
    ncu_arg: Annotated[list[str] | None, typer.Option(
        "--ncu-arg", help="an extra ncu argument (repeatable), e.g. --ncu-arg=--set=full"
    )] = None,
) -> None:
    """Run SCRIPT under Nsight Compute with the roofline metrics, then diagnose the report."""
    _check_choice("--replay-mode", replay_mode, ("kernel", "application", "range"))
    _check_choice("--cache-control", cache_control, ("all", "none"))
    _check_choice("--clock-control", clock_control, ("base", "none"))
    ncu_path, found = _locate_ncu(ncu, dry_run)
    opts = cap.CaptureOptions(
        script=script, report=output or cap.default_report(script), ncu=ncu_path,
        python=python or Path(sys.executable), script_args=tuple(script_args or ()),
        cc=cap.parse_cc(cc) if cc else cap.detect_cc(), kernel_name=kernel_name,
        launch_skip=launch_skip, launch_count=launch_count, replay_mode=replay_mode,  # type: ignore[arg-type]
        cache_control=cache_control, clock_control=clock_control, force=force,  # type: ignore[arg-type]
        ncu_args=tuple(ncu_arg or ()),
    )
    if dry_run:
        cap.check_inputs(replace(opts, force=True))  # a dry run refuses what the real run would
        typer.echo("\n".join(_dry_run_lines(opts, found)))
        return
    report = cap.run_capture(opts, on_line=typer.echo, on_progress=_progress)
    typer.echo(f"ncu-roof: report written: {report}", err=True)
    if not no_diagnose:
        _diagnose_and_print(report)


def _check_choice(option: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}", param_hint=option)


def _locate_ncu(explicit: str | None, dry_run: bool) -> tuple[Path, bool]:
    """ncu's path; a dry run falls back to plain ``ncu`` instead of failing."""
    try:
        return cap.find_ncu(explicit, os.environ), True
    except cap.NcuNotFoundError:
        if dry_run and explicit is None:
            return Path("ncu"), False
        raise
