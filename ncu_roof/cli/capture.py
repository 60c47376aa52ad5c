"""``ncu-roof capture SCRIPT.py``: run a script under ncu, write a report, diagnose it."""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ncu_roof import capture as cap
from ncu_roof.capture_timeline import (
    RECORDERS,
    TimelinePlan,
    check_timeline,
    find_nsys,
    next_command,
    plan_timeline,
    run_timeline,
    torch_importable,
)
from ncu_roof.cli._options import ReaderChoice, SummaryFormat, asks_diagnosis, fields_as_options, use_read_options
from ncu_roof.cli.diagnose import check_diagnosis_inputs, check_outputs, diagnose_and_write

if TYPE_CHECKING:
    from ncu_roof.diagnosis import DiagnoseRequest


def _dry_run_lines(opts: cap.CaptureOptions, ncu_found: bool, plan: TimelinePlan | None = None) -> list[str]:
    """What ``--dry-run`` prints: the command, the metric set and the rules it leaves out, the passes."""
    from ncu_roof.coverage import rules_left_out, rules_unable
    from ncu_roof.read.source import LINE_FLAGS

    mset = cap.metric_set(opts)
    lo, hi = cap.estimate_passes(mset.metrics)
    n_hw = len(cap.hardware_counters(mset.metrics))
    lines = [
        "ncu-roof capture: dry run, nothing was run",
        f"command: {shlex.join(cap.build_ncu_command(opts))}",
        "environment: LC_ALL=C PYTHONUNBUFFERED=1",
        f"report: {cap.export_name(opts)}",
        f"metric set: {mset.name}, {len(mset.metrics)} metrics ({n_hw} hardware counters)"
        + (f" and ncu's --set {mset.ncu_set}" if mset.ncu_set else ""),
        f"replay passes: not known without a GPU (ncu prints the real count per kernel); "
        f"rough estimate {lo}-{hi} per kernel",
    ]
    if opts.source:
        lines.append(f"source counters: {' '.join(cap.source_args(opts))} (each finding's source lines; "
                     f"lines need the program built with line information: {LINE_FLAGS})")
    else:
        lines.append("source counters: not collected (--no-source): findings name no source lines")
    unable, partial = rules_unable(mset.metrics), rules_left_out(mset.metrics)
    if unable:
        lines.append(f"rules this set cannot run: {', '.join(sorted(unable))} (--metric-set rules runs them all)")
    partial = {r: c for r, c in partial.items() if r not in unable}
    if partial:
        lines.append(f"rules that read less with this set: {', '.join(sorted(partial))}")
    if not unable and not partial:
        lines.append("rules: every rule's metrics are in the set")
    if opts.gated:
        lines.append("profiling: off until ncu_roof.profile() starts it (--profile-from-start off)")
    rank = cap.rank_variable(opts)
    if rank:
        lines.append(f"one report per rank: the rank from ${rank} in each report's name")
    if opts.program and not opts.kernel_name and not opts.include_comms:
        lines.append("note: NCCL kernels are left out (serialised by ncu they wait on peers and hang the run; "
                     "--include-comms profiles them)")
    if opts.replay_mode in ("range", "app-range") or opts.graph_profiling == "graph":
        lines.append("note: each range or graph is one row of the diagnosis (named by its NVTX ranges), its "
                     "kernels' time and bytes summed; launch-shape rules do not apply to it")
    if not ncu_found:
        lines.append("note: ncu was not found here; the command names plain `ncu`")
    if opts.cc is None:
        lines.append("note: GPU architecture unknown (no --cc, no nvidia-smi): common set without tensor-op counters")
    lines += [f"note: {n}" for n in mset.notes]
    if plan is not None:
        lines.append(f"timeline: {plan.words}")
        lines += [f"timeline command: {shlex.join(argv)}" for argv in plan.commands]
        ranks = cap.export_name(opts).replace(f"%q{{{cap.rank_variable(opts)}}}", "*")  # every rank's report
        lines.append(f"then: {next_command(plan, [Path(ranks)])}")
        lines += [f"note: {plan.note}"] if plan.note else []
    lines.append("metrics:")
    lines += [f"  {m}" for m in mset.metrics]
    return lines


def no_lines_warning(reports: list[Path]) -> str | None:
    """One line for the reports whose cubins carry no line table (the program was built without line
    information: findings will point at instructions), naming the flag to add; None when all have one
    (or it cannot be told)."""
    from ncu_roof.read.source import NO_LINES_HINT, has_line_table

    bare = [r.name for r in reports if has_line_table(r) is False]
    if not bare:
        return None
    which = f"{bare[0]} has" if len(bare) == 1 else f"{', '.join(bare)} have"
    return (f"{which} no line information (no line table in the cubins): findings will point at instructions, "
            f"not source lines; {NO_LINES_HINT}")


def _progress(p: cap.CaptureProgress) -> None:
    passes = f", {p.last_passes} passes" if p.last_passes is not None else ""
    typer.echo(f"ncu-roof: {p.kernels} kernel(s) profiled (last: {p.last_kernel}{passes})", err=True)
    if p.slow and not getattr(p, "slow_told", False):
        object.__setattr__(p, "slow_told", True)
        typer.echo("ncu-roof: ncu says the run takes longer than expected: it serialises launches, so kernels "
                   "that wait on other processes (NCCL, spin-waits) wait for ever; filter them out "
                   "(--kernel-name) or capture one rank", err=True)


@dataclass(frozen=True)
class CaptureRequest:
    """What ``ncu-roof capture`` is asked: each field one of its arguments or options, declared here
    once (:func:`~ncu_roof.cli._options.fields_as_options` makes them the command's). :meth:`options`
    makes the capture stage's own request of it, a :class:`ncu_roof.capture.CaptureOptions`; the
    diagnosis's --algorithmic, --ceilings and --device come beside it, as a ``DiagnoseRequest``."""

    script: Annotated[str | None, typer.Argument(
        metavar="SCRIPT", help="the Python script to profile, or a command (torchrun, pytest, ...) after --"
    )] = None
    script_args: Annotated[list[str] | None, typer.Argument(
        metavar="ARGS", help="arguments for the script, module or command (after --)"
    )] = None
    module: Annotated[str | None, typer.Option("-m", "--module", help="run this module (python -m MODULE)")] = None
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="the report to write (.ncu-rep added if missing; default: SCRIPT.ncu-rep here)"
    )] = None
    ncu: Annotated[str | None, typer.Option(
        "--ncu", help="the ncu executable (default: $NCU, PATH, CUDA/Nsight Compute folders)"
    )] = None
    python: Annotated[Path | None, typer.Option(
        "--python", help="the Python that runs the script (default: this one)"
    )] = None
    metric_set: Annotated[str, typer.Option(
        "--metric-set", help="quick (roofline and speed of light), rules (every rule's metrics) or full (+ --set full)"
    )] = "rules"
    region: Annotated[list[str] | None, typer.Option(
        "--region", metavar="NAME", help="profile only inside this NVTX range (push/pop or start/end; repeatable)"
    )] = None
    kernel_name: Annotated[str | None, typer.Option(
        "--kernel-name", "-k", help="only kernels with this name (or regex:EXPR)"
    )] = None
    kernel_name_base: Annotated[str | None, typer.Option(
        "--kernel-name-base", help="what --kernel-name matches: function, demangled or mangled"
    )] = None
    kernel_id: Annotated[str | None, typer.Option(
        "--kernel-id", help="ncu's context:stream:name:invocation filter"
    )] = None
    launch_skip: Annotated[int | None, typer.Option(
        "--launch-skip", "-s", min=0, help="skip this many matching launches"
    )] = None
    launch_count: Annotated[int | None, typer.Option(
        "--launch-count", "-c", min=1, help="profile at most this many launches"
    )] = None
    gated: Annotated[bool | None, typer.Option(
        "--gated/--not-gated",
        help="profile only inside ncu_roof.profile() (default: when the script calls it)",
    )] = None
    replay_mode: Annotated[str, typer.Option(
        "--replay-mode", help="kernel, application, range or app-range"
    )] = "kernel"
    graph_profiling: Annotated[str, typer.Option(
        "--graph-profiling", help="node (each kernel of a CUDA graph) or graph (the graph as one result)"
    )] = "node"
    torch_ops: Annotated[bool, typer.Option(
        "--torch-ops", help="put every PyTorch op of SCRIPT in a region with its FLOPs and bytes (needs torch)"
    )] = False
    source: Annotated[bool, typer.Option(
        "--source/--no-source", help="collect the Source Counters with the source imported (each finding's lines)"
    )] = True
    timeline: Annotated[bool, typer.Option(
        "--timeline", help="also record a timeline beside the report in a separate run (not under ncu): a "
        "PyTorch profiler trace where torch is importable, else Nsight Systems (nsys)")] = False
    timeline_with: Annotated[str, typer.Option(
        "--timeline-with", help="the timeline's recorder: auto, torch or nsys")] = "auto"
    include_comms: Annotated[bool, typer.Option(
        "--include-comms", help="profile NCCL kernels under a launcher too (they can hang a serialised run)"
    )] = False
    cache_control: Annotated[str, typer.Option(
        "--cache-control", help="all (flush caches between passes) or none"
    )] = "all"
    clock_control: Annotated[str, typer.Option("--clock-control", help="base (lock clocks) or none")] = "base"
    cc: Annotated[str | None, typer.Option(
        "--cc", help="the metric set for this compute capability, e.g. 9.0 (default: ask nvidia-smi)"
    )] = None
    force: Annotated[bool, typer.Option(
        "--force", help="overwrite an existing report (and summary and chart)")] = False
    no_diagnose: Annotated[bool, typer.Option(
        "--no-diagnose", help="only write the report, do not diagnose it"
    )] = False
    fmt: Annotated[SummaryFormat | None, typer.Option(
        "--format", "-f", help="the diagnosis as text, markdown or json (default: from the --summary suffix, else text)"
    )] = None
    summary: Annotated[Path | None, typer.Option(
        "--summary", help="write the diagnosis here instead of stdout (-o names the report)"
    )] = None
    chart: Annotated[Path | None, typer.Option(
        help="also save the roofline chart (.html, .png, .svg, .json)")] = None
    reader: Annotated[ReaderChoice | None, typer.Option(
        "--reader", help="the .ncu-rep reader for the diagnosis (default: native)")] = None
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the ncu command and metrics; run nothing")] = False
    ncu_arg: Annotated[list[str] | None, typer.Option(
        "--ncu-arg", metavar="ARG", help="an extra ncu argument (repeatable), e.g. --ncu-arg=--print-summary=per-kernel"
    )] = None

    def options(self) -> tuple[cap.CaptureOptions, bool]:
        """The capture stage's options (each choice checked, the program and ncu found), and whether
        ncu was found (a dry run names plain ``ncu`` when it is not)."""
        self._check_choices()
        script_path, inner, program, args = self._program()
        name = (script_path or inner or Path(self.module.split(".")[-1] if self.module else program[0])).stem
        ncu_path, found = _locate_ncu(self.ncu, self.dry_run)
        return cap.CaptureOptions(
            script=script_path, report=self.output or Path(name + cap.REPORT_SUFFIX), ncu=ncu_path,
            python=self.python or Path(sys.executable), script_args=args, module=self.module,
            program=program, cc=cap.parse_cc(self.cc) if self.cc else cap.detect_cc(), tier=self.metric_set,
            kernel_name=self.kernel_name, kernel_name_base=self.kernel_name_base, kernel_id=self.kernel_id,
            regions=tuple(self.region or ()), launch_skip=self.launch_skip, launch_count=self.launch_count,
            gated=cap.uses_profile_gate(script_path or inner) if self.gated is None else self.gated,
            replay_mode=self.replay_mode, graph_profiling=self.graph_profiling,  # type: ignore[arg-type]
            include_comms=self.include_comms, cache_control=self.cache_control,  # type: ignore[arg-type]
            clock_control=self.clock_control, force=self.force,  # type: ignore[arg-type]
            ncu_args=tuple(self.ncu_arg or ()), torch_ops=self.torch_ops, source=self.source,
        ), found

    def _check_choices(self) -> None:
        from ncu_roof.read.metrics import TIERS

        _check_choice("--replay-mode", self.replay_mode, ("kernel", "application", "range", "app-range"))
        _check_choice("--graph-profiling", self.graph_profiling, ("node", "graph"))
        _check_choice("--metric-set", self.metric_set, TIERS)
        _check_choice("--cache-control", self.cache_control, ("all", "none"))
        _check_choice("--clock-control", self.clock_control, ("base", "none"))
        _check_choice("--timeline-with", self.timeline_with, RECORDERS)
        if self.kernel_name_base is not None:
            _check_choice("--kernel-name-base", self.kernel_name_base, ("function", "demangled", "mangled"))

    def _program(self) -> tuple[Path | None, Path | None, tuple[str, ...], tuple[str, ...]]:
        """What runs: the script's path (a SCRIPT.py), the script a launcher runs (torchrun train.py),
        the program (a command after --) and the arguments."""
        script, args = self.script, list(self.script_args or ())
        if self.module is not None and script is not None:  # -m MOD -- a b: every positional is the module's
            args.insert(0, script)
            script = None
        if self.module is None and script is None:
            raise typer.BadParameter("give a SCRIPT, -m MODULE, or a command after --", param_hint="SCRIPT")
        is_script = script is not None and script.endswith(".py")
        if self.torch_ops and not is_script:
            raise typer.BadParameter("--torch-ops runs a Python script (SCRIPT.py), not a module or command",
                                     param_hint="--torch-ops")
        program: tuple[str, ...] = (script,) if script is not None and not is_script else ()
        script_path = Path(script) if is_script and script is not None else None
        inner = next((Path(a) for a in args if a.endswith(".py")), None) if program else None  # torchrun train.py
        return script_path, inner, program, tuple(args)


@asks_diagnosis(None, algorithmic="no_diagnose", ceilings="algorithmic", device="ceilings")
@fields_as_options(CaptureRequest)
def command(given: CaptureRequest, *, asked: DiagnoseRequest) -> None:
    """Run SCRIPT (or -m MODULE, or any command after --) under Nsight Compute with the metrics every
    rule reads, then diagnose the report."""
    opts, found = given.options()
    plan = _timeline_plan(opts, given.timeline_with, given.dry_run) if given.timeline else None
    prepared = None if given.no_diagnose else _prepare_diagnosis(given, asked)
    if given.dry_run:
        typer.echo("\n".join(_dry_run(opts, found, plan)))
        return
    if plan is not None:  # what the real run refuses, before the timeline's own refusals
        cap.check_inputs(opts)
        check_timeline(plan, given.force)
    reports = _capture(opts, plan)
    if prepared is not None:
        diagnose_and_write(asked.of(reports), prepared)
    if plan is not None:
        typer.echo(f"ncu-roof: next: {next_command(plan, reports)}", err=True)


def _prepare_diagnosis(given: CaptureRequest, asked: DiagnoseRequest) -> tuple[str, Path | None, Path | None, bool]:
    """The diagnosis's outputs, files and device checked before anything is profiled (a typo does not
    cost a capture), and its reader chosen; what :func:`diagnose_and_write` takes."""
    prepared = check_outputs(given.fmt, given.summary, given.chart, given.force)
    check_diagnosis_inputs(asked)
    use_read_options(given.reader or ReaderChoice.native, None, False)
    return prepared


def _dry_run(opts: cap.CaptureOptions, found: bool, plan: TimelinePlan | None) -> list[str]:
    """What a dry run prints. It refuses what the real run would, but a command this machine lacks
    (torchrun on a laptop) only gets a note: the command is for the GPU machine."""
    cap.check_inputs(replace(opts, force=True), find_program=False)
    lines = _dry_run_lines(opts, found, plan)
    if opts.program and not cap.command_found(opts.program[0]):
        at = -1 - len(cap.metric_set(opts).metrics)
        lines.insert(at, f"note: {opts.program[0]} is not on this machine's PATH")
    return lines


def _capture(opts: cap.CaptureOptions, plan: TimelinePlan | None) -> list[Path]:
    """Run ncu (then the timeline's own run); the reports written, a report without line
    information warned about."""
    reports = cap.rank_reports(cap.run_capture(opts, on_line=typer.echo, on_progress=_progress))
    typer.echo(f"ncu-roof: report{'s' if len(reports) > 1 else ''} written: {', '.join(map(str, reports))}", err=True)
    warning = no_lines_warning(reports) if opts.source else None
    if warning:
        typer.echo(f"ncu-roof: warning: {warning}", err=True)
    if plan is not None:
        trace = run_timeline(plan, opts, on_line=typer.echo)
        typer.echo(f"ncu-roof: timeline written: {trace}", err=True)
    return reports


def _timeline_plan(opts: cap.CaptureOptions, choice: str, dry_run: bool) -> TimelinePlan:
    """How ``--timeline`` records: torch is looked for only where it could be used."""
    wants_torch = choice in ("auto", "torch") and not opts.program
    return plan_timeline(opts, choice, torch_importable(opts.python) if wants_torch else False,
                         find_nsys(os.environ), dry_run)


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
