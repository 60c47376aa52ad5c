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
