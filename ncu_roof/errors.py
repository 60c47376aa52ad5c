"""Exceptions the library raises; the CLI turns each into one line on stderr and exit code 2."""

from __future__ import annotations


class NcuRoofError(Exception):
    """Base class: the message says what went wrong and what to do about it."""

    exit_code = 2


class InputError(NcuRoofError):
    """A file that is missing, empty, of the wrong kind or unreadable."""


class ReportLoadError(InputError):
    """A report or export that could not be read."""


class CaptureError(NcuRoofError):
    """Running ncu failed (not found, no GPU, no permission, no kernels)."""


def missing_dependency(exc: ModuleNotFoundError) -> str:
    """The one line for a Python without ncu-roof's dependencies (``python -m ncu_roof`` run by
    another interpreter than the one it was installed in, or an install that was cut short)."""
    return (f"ncu-roof: error: a dependency is missing ({exc}): run ncu-roof with the Python it was installed "
            "in (activate its virtual environment), or install it: pip install .")


def error_line(exc: BaseException) -> str:
    """The one line the CLI prints for a failure: a library error's own message, else what could not
    be processed (``NCU_ROOF_DEBUG=1`` shows the traceback). A stream's temporary copy is named as
    the stream."""
    from ncu_roof.stream_names import shown

    if isinstance(exc, NcuRoofError):
        return shown(f"ncu-roof: error: {exc}", message=True)
    first = shown((str(exc).strip().splitlines() or [""])[0][:200], message=True)
    return (f"ncu-roof: error: could not process the input ({type(exc).__name__}: {first}); check that "
            "it is an unmodified ncu report or export (NCU_ROOF_DEBUG=1 shows where this failed)")
