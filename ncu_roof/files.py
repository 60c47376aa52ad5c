"""Output files: checked before any work is done, never overwritten without ``force``, and written
whole or not at all (a temporary file in the same folder, renamed over the target at the end)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ncu_roof.errors import InputError


def check_writable(path: Path, force: bool, suffixes: Sequence[str] | None = None, what: str = "file",
                   option: str = "-o") -> None:
    """Raise a one-line InputError unless ``path`` may be written (suffix, existing file, folder)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder: give {option} a file name in it")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        choices = ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}" if len(suffixes) > 1 else suffixes[0]
        raise InputError(f"cannot save a {what} as {path.name}: use {choices}")
    if is_device(path):  # /dev/null, /dev/stdout, a terminal: written as a stream, never replaced
        return
    if path.exists() and not path.is_file():
        raise InputError(f"cannot write {path}: it is not a regular file (a device or special file); "
                         f"give {option} a file path")
    if path.exists() and not force:
        raise InputError(f"{path} exists: choose another {option} path or pass --force to overwrite it")
    if not path.parent.exists():
        raise InputError(f"cannot write {path}: folder {path.parent} does not exist")
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: {path.parent} is not a folder")


def is_device(path: Path) -> bool:
    """A character device or a pipe (``/dev/null``, ``/dev/stdout``, a terminal, a FIFO): written as a
    stream, as POSIX tools write to it."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def check_distinct(*paths: Path | None) -> None:
    """Refuse one file named for two outputs (``-o x.json --chart x.json``)."""
    seen: dict[Path, Path] = {}
    for p in paths:
        if p is None:
            continue
        key = Path(os.path.abspath(p))  # noqa: PTH100 - resolve() would follow a link that may not exist yet
        if key in seen:
            raise InputError(f"{p} is named for two outputs: give each of -o and --chart its own file")
        seen[key] = p


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all: into a temporary file beside it, then renamed
    over it. Any failure (unwritable folder, full disk, a special file) is one InputError line and
    leaves nothing behind."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if is_device(path):  # a stream has no whole-or-nothing: written through
        try:
            with path.open("wb") as fh:
                fh.write(payload)
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
        return path
    if path.exists() and not path.is_file():
        raise InputError(f"cannot write {path}: it is not a regular file; give a file path")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():  # keep the permissions of a file overwritten with --force
            with contextlib.suppress(OSError):
                os.chmod(tmp, path.stat().st_mode & 0o7777)  # noqa: PTH101
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # noqa: PTH101
        Path(tmp).replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # noqa: PTH108
        raise InputError(f"cannot write {path}: {exc.strerror or exc} (nothing was written)") from None
    return path


def user_cache_dir() -> Path | None:
    """``$XDG_CACHE_HOME/ncu-roof`` (default ``~/.cache/ncu-roof``); None without a home folder."""
    try:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no HOME and no passwd entry
        return None
    return root / "ncu-roof"

