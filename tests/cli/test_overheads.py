"""What the program spends around a command's own work: option values converted without pydantic
(``ncu_roof.cli._coercion``: the same values and errors as typer's own adapters, and no pydantic
imported where typer's functions do the work), and no cyclic garbage collection nor OpenBLAS threads in
the commands that read, diagnose, write and end (``ncu_roof.cli.run``)."""

from __future__ import annotations

import os
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "fixtures" / "synthetic" / "synthetic_raw_units.csv"

typer_coercion = pytest.importorskip("typer._coercion", reason="typer before 0.29 has no adapters")


class Shade(str, Enum):
    light = "light"
    dark = "dark"


def _params() -> tuple[Any, list[tuple[Any, Any]]]:
    """A command's context, and (parameter, its typer descriptor) for a list of paths, an Enum option,
    a Path option and an int option."""
    import typer
    from typer.main import get_command

    app = typer.Typer(add_completion=False)

    @app.command()
    def command(paths: list[Path], shade: Shade = Shade.light, out: Path | None = None,
                jobs: int | None = None) -> None:
        """A command with one parameter of each kind."""

    cmd = get_command(app)
    return cmd.context_class(cmd, info_name="command"), [(p, p.type_descriptor) for p in cmd.params]  # type: ignore[attr-defined]


def test_direct_conversion_gives_typer_adapters_values_and_errors() -> None:
    from typer._coercion import build_runtime_param

    from ncu_roof.cli._coercion import direct_leaf, install

    install()
    ctx, params = _params()
    values: dict[str, list[Any]] = {"paths": [["a.ncu-rep", "", "-", "dir/../b.csv"], "one"],
                                    "shade": ["dark", "light", "Dark", "x"], "out": ["o.txt", "-", ""],
                                    "jobs": ["3", "0x1", "abc"]}
    for param, descriptor in params:
        given = values[param.name]
        assert (direct_leaf(descriptor) is None) == (param.name == "jobs")
        for value in given:
            results: list[tuple[Any, ...]] = []
            for typers in (False, True):
                param._runtime_param = None
                runtime = build_runtime_param(descriptor) if typers else param.get_runtime_param()
                assert typers or type(runtime).__name__ == "DirectParam"
                try:
                    results.append(("ok", runtime.coerce(value, param=param, ctx=ctx)))
                except Exception as exc:  # noqa: BLE001 - the error itself is compared
                    results.append(("error", type(exc).__name__, str(exc)))
            assert results[0] == results[1], (param.name, value)
            if results[0][0] == "ok":
                assert type(results[0][1]) is type(results[1][1])


def test_a_command_imports_no_pydantic() -> None:
    code = ("import sys\nfrom ncu_roof.cli import main\n"
            f"try:\n    main(['diagnose', '-q', '-f', 'json', {str(CSV)!r}])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pydantic', 'typer._adapters') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr


@pytest.mark.parametrize(("command", "given", "collecting", "threads"), [
    ("diagnose", None, False, "1"), ("table", None, False, "1"), ("diagnose", "4", False, "4"),
    ("devices", None, True, None)])
def test_commands_that_read_and_end_collect_no_garbage_and_start_no_blas_threads(
        command: str, given: str | None, collecting: bool, threads: str | None) -> None:
    """``ncu-roof diagnose``/``report``/``table`` run with Python's cyclic collector off (the process
    ends after the output) and NumPy's OpenBLAS on one thread unless the user set it; other commands
    keep both as they are."""
    code = ("import atexit, gc, os, sys\n"
            "atexit.register(lambda: print('collecting', gc.isenabled(), os.environ.get('OPENBLAS_NUM_THREADS'),"
            " file=sys.stderr))\n"
            f"sys.argv = ['ncu-roof', {command!r}] + ([{str(CSV)!r}] if {command!r} != 'devices' else [])\n"
            "from ncu_roof.cli import run\nrun()\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env.update(PYTHONPATH=str(ROOT), **({"OPENBLAS_NUM_THREADS": given} if given else {}))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == f"collecting {collecting} {threads}", out.stderr


def test_a_typer_whose_parameters_changed_shape_converts_as_typer_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where building the direct conversion fails (a later typer's descriptors or runtime parameters
    unlike 0.29's), the parameter gets typer's own conversion: the same values, no failure."""
    from ncu_roof.cli import _coercion

    _coercion.install()
    ctx, params = _params()

    def broken(descriptor: Any) -> Any:
        raise AttributeError("parameter_info")

    monkeypatch.setattr(_coercion, "direct_leaf", broken)
    for param, _ in params:
        param._runtime_param = None
        runtime = param.get_runtime_param()
        assert type(runtime).__name__ != "DirectParam"
    shade = next(p for p, _ in params if p.name == "shade")
    assert shade.get_runtime_param().coerce("dark", param=shade, ctx=ctx) is Shade.dark
