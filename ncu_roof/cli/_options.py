"""Options several commands share."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer


class SummaryFormat(str, Enum):
    """What ``diagnose`` and ``compare`` print."""

    text = "text"
    markdown = "markdown"
    json = "json"


Reports = Annotated[list[Path], typer.Argument(
    metavar="REPORT", help=".ncu-rep files, CSV exports, folders or globs")]
Device = Annotated[str | None, typer.Option(
    "--device", help="GPU for inputs that do not name one, as ncu spells it (e.g. 'Tesla V100-PCIE-32GB')")]


class ReaderChoice(str, Enum):
    native = "native"
    ncu_report = "ncu_report"


Reader = Annotated[ReaderChoice, typer.Option(
    "--reader", help=".ncu-rep reader: native (ncu-roof's own, streaming) or ncu_report (NVIDIA's module: "
                     "pip install ncu-report; for report formats the native reader does not know)")]
Jobs = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, help="processes reading inputs and the launches of big reports (default: the cores "
                                "available)")]
Scheduler = Annotated[str | None, typer.Option(
    "--scheduler", envvar="DASK_SCHEDULER_ADDRESS", metavar="ADDRESS",
    help="read and diagnose each input as a task on this Dask cluster (tcp://host:8786, or local:N for N "
         "worker processes here; pip install 'ncu-roof[dask]'); the inputs must be on storage every worker "
         "sees, at the same path")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar while reading big reports")]


def stdout_dash(value: Path | None) -> Path | None:
    """``-o -`` is standard output, as in every Unix tool (not a file named ``-``)."""
    return None if value is not None and str(value) == "-" else value


Output = Annotated[Path | None, typer.Option("--output", "-o", help="write here instead of stdout ('-': stdout)",
                                             callback=stdout_dash)]
Force = Annotated[bool, typer.Option("--force", help="overwrite an existing output file")]
ForceFiles = Annotated[bool, typer.Option("--force", help="overwrite existing output files")]
Algorithmic = Annotated[Path | None, typer.Option(help="TOML file of [[region]] algorithmic counts")]
Ceilings = Annotated[Path | None, typer.Option(help="measured roofs (from `ncu-roof ceilings`)")]


def use_read_options(reader: ReaderChoice, jobs: int | None, quiet: bool, scheduler: str | None = None) -> None:
    """Make ``--reader``, ``--jobs``, ``--quiet`` and ``--scheduler`` the options every read of this
    command uses."""
    from ncu_roof.read.parallel import set_options

    set_options(reader=reader.value, jobs=jobs, quiet=quiet, scheduler=scheduler or None)


@contextmanager
def reading_begun(inputs: Any) -> Iterator[None]:
    """The command's big reports already being read, in a pool, while the command imports what it
    needs (pandas, the model): :func:`ncu_roof.read.parallel.start_reading`; stopped on the way out if
    no read took it over (an error first)."""
    from ncu_roof.read.parallel import start_reading, stop_reading

    start_reading(inputs)
    try:
        yield
    finally:
        stop_reading()


EARLY_READS = frozenset({"diagnose", "report", "table"})  # commands whose big reports are read from the start
ONE_PASS = EARLY_READS | {"timeline"}  # commands that read, work, write and end (ncu_roof.cli.run)


def begin_reading(command: Any, name: str, args: list[str]) -> bool:
    """Begin reading the big reports ``args`` name for command ``name`` (:data:`EARLY_READS`) before
    typer converts the options (its converters take a tenth of a second to build): the arguments split
    by the command's own parser, the read options taken as given. Where they cannot be (help asked, a
    value typer would refuse or change, the scheduler from the environment), nothing is begun; the
    command's own read takes over a read begun with its options, and stops any other. Whether a read
    may have begun."""
    import os

    from ncu_roof.read.cluster import SCHEDULER_ENV
    from ncu_roof.read.parallel import ReadOptions, start_reading

    if name not in EARLY_READS or SCHEDULER_ENV in os.environ or {"-h", "--help"} & set(args):
        return False
    try:
        values = command.make_parser(typer.Context(command, info_name=name)).parse_args(list(args))[0]
        jobs = values.get("jobs")
        opts = ReadOptions(reader=values.get("reader") or "native", jobs=None if jobs is None else int(jobs),
                           quiet=bool(values.get("quiet")), scheduler=values.get("scheduler") or None)
        reports = list(values.get("reports") or ())
    except Exception:  # noqa: BLE001 - typer's own parse says what is wrong
        return False
    if (opts.jobs is not None and opts.jobs < 1) or opts.reader not in {c.value for c in ReaderChoice}:
        return False
    start_reading(reports, opts)
    return True


# --- options declared once, handed to a command as one request ------------------------------------
Command = Callable[..., None]
# What shapes a diagnosis, as every command that diagnoses takes it (DiagnoseRequest's fields)
DIAGNOSIS_OPTIONS: dict[str, Any] = {"algorithmic": Algorithmic, "ceilings": Ceilings, "device": Device}


def _parameters(body: Callable[..., Any]) -> list[inspect.Parameter]:
    """``body``'s parameters but ``asked``, annotated with types, not text (typer reads types; under
    ``from __future__ import annotations`` a function's own annotations are text)."""
    space = inspect.unwrap(body).__globals__
    return [p.replace(annotation=eval(p.annotation, space) if isinstance(p.annotation, str) else p.annotation)
            for p in inspect.signature(body).parameters.values() if p.name != "asked"]


def _command(body: Callable[..., Any], params: list[inspect.Parameter], call: Callable[[dict[str, Any]], None]
             ) -> Command:
    """A command typer reads as taking ``params`` (its help: ``body``'s docstring); ``call`` gets them."""

    @functools.wraps(body)
    def command(**given: Any) -> None:
        call(given)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def asks_diagnosis(inputs: str | None, declared: dict[str, Any] | None = None,
                   **after: str) -> Callable[[Command], Command]:
    """``--algorithmic``, ``--ceilings`` and ``--device`` (:data:`DIAGNOSIS_OPTIONS`, or ``declared``'s
    own help) added to the command: each after the parameter ``after`` names (where ``--help`` lists
    it). The command's body gets them as one ``asked``, the
    :class:`~ncu_roof.diagnosis.DiagnoseRequest` of the ``inputs`` parameter (None: no inputs yet)."""
    options = {**DIAGNOSIS_OPTIONS, **(declared or {})}

    def wrap(body: Command) -> Command:
        params = _parameters(body)
        for name, annotation in options.items():
            at = 1 + next(i for i, p in enumerate(params) if p.name == after[name])
            params.insert(at, inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                                annotation=annotation))

        def call(given: dict[str, Any]) -> None:
            from ncu_roof.request import DiagnoseRequest

            asked = DiagnoseRequest((), **{name: given.pop(name) for name in options})
            body(**given, asked=asked if inputs is None else asked.of(given[inputs]))

        return _command(body, params, call)

    return wrap


def fields_as_options(request: type) -> Callable[[Command], Command]:
    """The command's arguments and options are the fields of the dataclass ``request`` (each annotated
    with its typer argument or option and defaulted); its body gets them as one ``request``."""
    hints = typing.get_type_hints(request, include_extras=True)
    fields = dataclasses.fields(request)
    names = [f.name for f in fields]

    def wrap(body: Command) -> Command:
        params = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hints[f.name],
                                    default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
                  for f in fields]

        def call(given: dict[str, Any]) -> None:
            body(request(**{name: given.pop(name) for name in names}), **given)

        return _command(body, params, call)

    return wrap
