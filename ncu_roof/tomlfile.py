"""Read a user's TOML file, turning a missing or malformed one into a one-line :class:`InputError`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ncu_roof.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def read_toml(path: Path, missing: str, invalid: str) -> dict[str, Any]:
    """The parsed file; ``missing`` and ``invalid`` are the error messages, templates with ``{path}``
    (and ``{exc}``, the parser's complaint, for ``invalid``)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(missing.format(path=path)) from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder: pass a TOML file") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(invalid.format(path=path, exc=first)) from None
