"""The ``ncu-roof`` command line: a thin typer layer over the library.

Enters: the command line (paths, options). Each command is a module of :mod:`ncu_roof.cli`
(listed in ``registry.COMMANDS``; shared options in ``_options``, writing in ``_output``) and makes
one library call and one render. Leaves: text on stdout, files, and the exit code.
Library errors (:class:`ncu_roof.errors.NcuRoofError`) become one line on stderr and exit 2, and
so does any other failure (``NCU_ROOF_DEBUG=1`` shows its traceback instead).
Nothing heavy (pandas, altair) is imported until a command runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import atexit
import gc
import os
import re
import sys
from typing import Annotated

import typer

from ncu_roof.cli._coercion import install as install_direct_coercion
from ncu_roof.cli.registry import COMMAND_NAMES, register


def _plain_help() -> None:
    """Help in click's classic words: ``REPORT...`` and ``-o FILE``, not typer's ``{REPORT}...``,
    ``<list[Path]>`` and ``<str>`` (typer >= 0.20 prints Python types; a test pins the text)."""
    from typer.core import TyperArgument, TyperOption

    words = {"path": "FILE", "str": "TEXT", "int": "N", "int range": "N", "float": "NUMBER"}

    def usage_name(self: TyperArgument) -> str:
        name = self.metavar or (self.name or "").upper()
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def option_metavar(self: TyperOption, ctx: object) -> str | None:
        if self.metavar is not None:
            return self.metavar
        shown = self.display_type(ctx)  # type: ignore[arg-type]
        inner = shown.strip("<>") if shown else ""
        inner = re.sub(r"^list\[(.*)\]$", r"\1", inner)  # a repeatable option reads as one value
        return words.get(inner, f"[{inner}]" if "|" in inner else inner.upper()) or None

    TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]
    TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
    TyperOption.display_type_rich = option_metavar  # type: ignore[method-assign]


_plain_help()
install_direct_coercion()


def _version(value: bool) -> None:
    if value:
        from ncu_roof import __version__

        typer.echo(f"ncu-roof {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Roofline diagnosis from NVIDIA Nsight Compute reports (.ncu-rep) and CSV exports."""


def new_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or only the command named ``only`` (what ``main`` runs
    when the command line names one: the other commands' modules are then not imported, nor their
    options built)."""
    built = typer.Typer(
        name="ncu-roof",
        help="Roofline diagnosis from NVIDIA Nsight Compute reports (.ncu-rep) and CSV exports.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    built.callback()(_root)
    register(built, only)
    return built


def __getattr__(name: str) -> typer.Typer:
    """``app``, the app with every command, built on first use."""
    if name == "app":
        globals()["app"] = made = new_app()
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; report library errors as one line and exit code 2."""
    from ncu_roof.errors import NcuRoofError, error_line

    # click's UsageError and ClickException, whether typer vendors click or uses it
    usage_error: type[Exception] = typer.BadParameter.__mro__[1]
    click_exception: type[Exception] = typer.BadParameter.__mro__[2]
    args = list(sys.argv[1:] if argv is None else argv)
    named = args[0] if args and args[0] in COMMAND_NAMES else None
    app = new_app(named)
    begun = named is not None and _begin_reading(app, named, args[1:])
    try:
        code = app(args=args, prog_name="ncu-roof", standalone_mode=False)
    except usage_error as exc:  # a bad option or argument: one line, the command's help named
        if type(exc).__name__ == "NoArgsIsHelpError":  # `ncu-roof` alone: the help itself
            print(exc.format_message(), file=sys.stderr)  # type: ignore[attr-defined]
            raise SystemExit(2) from None
        ctx = getattr(exc, "ctx", None)
        where = f"ncu-roof {ctx.info_name} -h" if ctx is not None and ctx.parent is not None else "ncu-roof -h"
        message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
        print(f"ncu-roof: error: {message} (see {where})", file=sys.stderr)
        raise SystemExit(2) from None
    except click_exception as exc:
        print(f"ncu-roof: error: {' '.join(exc.format_message().split())}", file=sys.stderr)  # type: ignore[attr-defined]
        raise SystemExit(getattr(exc, "exit_code", 2)) from None
    except typer.Abort:
        print("ncu-roof: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except NcuRoofError as exc:
        print(error_line(exc), file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        print("ncu-roof: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except (SystemExit, typer.Exit):
        raise
    except ModuleNotFoundError as exc:  # pandas or numpy absent: imported when a command runs
        from ncu_roof.errors import missing_dependency

        print(missing_dependency(exc), file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("NCU_ROOF_DEBUG") == "1":
            raise
        print(error_line(exc), file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        if begun:  # a read begun before the options were converted and not taken over (an error first)
            from ncu_roof.read.parallel import stop_reading

            stop_reading()
    # as click's standalone mode ends: an exit code always (typer.Exit(code) comes back as the value)
    raise SystemExit(code if isinstance(code, int) else 0)


def _begin_reading(app: typer.Typer, named: str, args: list[str]) -> bool:
    """:func:`ncu_roof.cli._options.begin_reading` for the command ``named`` of ``app``."""
    from ncu_roof.cli._options import EARLY_READS, begin_reading

    if named not in EARLY_READS:
        return False
    group = typer.main.get_command(app)
    return begin_reading(group.commands[named], named, args)  # type: ignore[attr-defined]


def run() -> None:
    """The ``ncu-roof`` program: :func:`main`, then the process ends without tearing the
    interpreter down (freeing a diagnosis of thousands of launches object by object took a
    quarter of a second); the exit handlers run and standard output and error are flushed first
    (the commands close their files themselves).

    For ``diagnose``, ``report``, ``table`` and ``timeline`` (``_options.ONE_PASS``) Python's cyclic garbage
    collector is off for the whole process: they read, diagnose or measure, write and end. Its passes
    walked every object the imports made, pandas' and numpy's included: 0.1-0.3 s of a 10,000-launch
    report's diagnosis, about 0.1 s of the imports before a trace is read, a full pass after the pool's
    objects were unfrozen (:func:`ncu_roof.read.cluster.process_pool`) and one over everything made
    meanwhile where a pause ended. Reference counting frees what it freed before; the few reference
    cycles left are freed when the process ends. Other commands (a server, a capture) collect as usual.

    Those commands also load NumPy with one OpenBLAS thread (``OPENBLAS_NUM_THREADS=1`` unless set):
    they multiply no matrices, and the threads OpenBLAS starts when NumPy is imported spin for a while
    (0.06-0.1 s of CPU) just as the pool's workers (or a trace's second reader) begin reading on the
    same two cores."""
    from ncu_roof.cli._options import ONE_PASS

    if sys.argv[1:2] and sys.argv[1] in ONE_PASS:
        gc.disable()
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy is imported (the read's plan)
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    atexit._run_exitfuncs()  # what was registered to run at exit (the stdin copy's folder removed)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            code = code or 1
    os._exit(code)

