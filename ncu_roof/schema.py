"""Checks shared by the TOML sidecars (``--algorithmic``, ``--ceilings``, ``--rules``, ``--map``).

Every check raises a one-line :class:`ncu_roof.errors.InputError` that names the file, the entry
and the key. User regexes are compiled with Google's RE2 (``google-re2``): matching takes time
linear in the name, so no pattern can hang a run (``^(a+)+$`` against a long name included).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from ncu_roof.errors import InputError


class Pattern(Protocol):
    pattern: str

    def search(self, text: str) -> Any: ...


def nearest(key: str, valid: Iterable[str]) -> str | None:
    """The valid key closest to a misspelt one (``byts`` -> ``bytes``), if any is close."""
    found = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.6)
    return found[0] if found else None


def check_keys(entry: Mapping[str, Any], valid: Iterable[str], where: str, path: Path) -> None:
    """Refuse a key not in ``valid``, naming the nearest valid one."""
    valid = list(valid)
    for key in entry:
        if key not in valid:
            guess = nearest(str(key), valid)
            hint = f"did you mean {guess!r}?" if guess else f"valid keys: {', '.join(valid)}"
            raise InputError(f"{path}: {where} has unknown key {key!r} ({hint})")


def positive_number(value: object, key: str, where: str, path: Path, zero: bool = False) -> float:
    """A finite number > 0 (>= 0 with ``zero``); booleans, strings, NaN and infinities refused."""
    need = "a finite non-negative number" if zero else "a finite number > 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{path}: {where} {key} = {value!r} is not a number; give {need}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not zero):
        raise InputError(f"{path}: {where} {key} = {value!r}; give {need}")
    return v


def positive_int(value: object, key: str, where: str, path: Path) -> int:
    """A whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{path}: {where} {key} = {value!r}; give a whole number >= 1")
    return value


def text(value: object, key: str, where: str, path: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{path}: {where} {key} = {value!r}; give a non-empty string in quotes")
    return value


def compile_regex(pattern: object, key: str, where: str, path: Path) -> Pattern:
    """A user's regex, compiled with RE2 (linear time: no pattern can hang a run)."""
    source = text(pattern, key, where, path)
    try:
        import re2
    except ImportError:  # pragma: no cover - a core dependency
        raise InputError("regexes from sidecar files need google-re2: pip install google-re2") from None
    options = re2.Options()
    options.log_errors = False  # RE2 would print its complaint on stderr: ours is one line
    try:
        compiled = re2.compile(source, options)
    except Exception as exc:  # noqa: BLE001 - re2.error, and TypeError for odd input
        message = exc.args[0] if exc.args else exc
        message = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
        first = (message.strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{path}: {where} {key} {source!r} is not a valid regex for RE2 ({first}); "
                         "backreferences and lookarounds are not supported") from None
    return compiled  # type: ignore[no-any-return]
