"""Read a user's TOML file, turning a missing or malformed one into a one-line :class:`InputError`;
read ncu-roof's own TOML data files through a parsed copy in the user's cache."""

from __future__ import annotations

import contextlib
import hashlib
import json
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


def parsed_data_toml(raw: bytes, label: str) -> dict[str, Any]:
    """One of ncu-roof's own TOML data files (``raw``, its bytes), parsed. Python's ``tomllib`` is
    pure Python (50 ms on the device table, each command), so the parse is kept as JSON (2 ms to
    read) in :func:`ncu_roof.files.user_cache_dir`, named by ``label`` and the file's SHA-256: an
    edited file is parsed anew. Written whole or not at all; where the cache cannot be read or
    written, or the table holds what JSON cannot (dates), the file is parsed each time."""
    from ncu_roof.files import user_cache_dir, write_atomic

    folder = user_cache_dir()
    digest = hashlib.sha256(raw).hexdigest()
    path = folder / f"{label}-{digest[:24]}.json" if folder is not None else None
    if path is not None:
        try:
            held = json.loads(path.read_bytes())
            if isinstance(held, dict) and held.get("sha256") == digest and isinstance(held.get("table"), dict):
                return held["table"]  # type: ignore[no-any-return]
        except (OSError, ValueError):
            pass
    table = tomllib.loads(raw.decode("utf-8"))
    if path is not None:
        with contextlib.suppress(InputError, OSError, TypeError, ValueError):
            text = json.dumps({"sha256": digest, "table": table})
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
    return table

