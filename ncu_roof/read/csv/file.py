"""The CSV export as a file: a path in; out, the body from the header line on (complete rows
only), the header's fields, notes on what was repaired, and the GPU names the program's own output
printed before the CSV.

Here live the quirks of the file as a whole: a byte-order mark, a file that is not UTF-8, a NUL
byte, program output and ``==PROF==`` lines before the header, two exports joined into one file, a
last row cut short; and the one-line errors for a file that holds no CSV export at all (empty, only
ncu log lines, ``;`` between fields, a header without ``ID``).
"""

from __future__ import annotations

import csv as _csv
import re
from collections.abc import Iterable
from pathlib import Path

from ncu_roof.errors import InputError, ReportLoadError

EXPORT_HINT = "make one with: ncu --import R.ncu-rep --csv --page raw > R.csv"

_LOOSE_HEADER_RE = re.compile(rb'^[^\r\n]*"?Kernel Name"?(?:,|\r?$)[^\r\n]*', re.MULTILINE)
_ERROR_RE = re.compile(rb"^==ERROR==[^\r\n]*", re.MULTILINE)
_LOG_LINE_RE = re.compile(rb"^==[A-Z]+==")
_DEVICE_LINE = re.compile(r"(?i)\b(?:gpu|device)\b[^:\n]{0,20}:\s*\"?([A-Za-z][^\n\"(,]{2,80})")


def device_hints(preamble: bytes) -> list[str]:
    """Candidate GPU names the profiled program printed before the CSV (``Detected GPU: X``,
    ``device: X (sm_120)``); the caller keeps only names the device table knows."""
    text = preamble.decode("utf-8", "replace")
    return [m.group(1).strip() for m in _DEVICE_LINE.finditer(text) if not m.group(0).startswith("==")]


_HEAD_BYTES = 1 << 20  # the header is looked for in the file's first MB; a longer preamble, in all of it


def read_export(path: Path, notes: list[str]) -> tuple[bytes, bytes]:
    """The file's preamble (what the program printed before the CSV) and its body (the header line
    on), for :func:`header_offset`'s header, as :func:`decode_text` reads the file. The body is read
    from the file at the header, not cut from the whole: a second export joined after the first is
    not looked for here (:func:`check_one_export`, where the rows say there may be one)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
            skip = 3 if head.startswith(b"\xef\xbb\xbf") else 0
            start = _first_header(head[skip:])
            if start is not None:
                fh.seek(skip + start)
                preamble, body = head[skip: skip + start], fh.read()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if start is None or not _plain_text(preamble) or not _plain_text(body):
        data = decode_text(read_bytes(path), path, notes)
        at = header_offset(data, path)
        return data[:at], data[at:]
    return preamble, body


def _first_header(data: bytes) -> int | None:
    """Where the first header line starts, if it ends in ``data``."""
    for at, line in _lines_with(data, b"Kernel Name"):
        if at + len(line) < len(data) and _is_header(line):
            return at
    return None


def _plain_text(data: bytes) -> bool:
    """UTF-8 without a NUL byte (else :func:`decode_text` says what it is)."""
    return b"\x00" not in data and is_utf8(data)


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` decodes as UTF-8 (ASCII answered without decoding)."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def check_one_export(preamble: bytes, body: bytes, path: Path) -> None:
    """Refuse a file holding two exports one after another (:func:`header_offset`)."""
    if body.find(b"Kernel Name", body.find(b"\n") + 1) >= 0:
        header_offset(preamble + body, path)


def read_bytes(path: Path) -> bytes:
    """The file's bytes without a UTF-8 byte-order mark; one line of error when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def decode_text(data: bytes, path: Path, notes: list[str]) -> bytes:
    """UTF-8 bytes of the file: NUL bytes refused (a damaged or binary file), a file that is not
    UTF-8 read as Windows-1252 (else Latin-1) with a note, never with U+FFFD in its names."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ReportLoadError(
            f"{path} holds a NUL byte (line {line}): it is damaged or not a text CSV export; copy it "
            f"again or re-export it ({EXPORT_HINT})"
        )
    try:
        if not data.isascii():  # ASCII is UTF-8: the common case, checked without decoding
            data.decode("utf-8")
    except UnicodeDecodeError as exc:
        try:
            text, codec = data.decode("cp1252"), "Windows-1252"
        except UnicodeDecodeError:
            text, codec = data.decode("latin-1"), "Latin-1"
        notes.append(f"the file is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}): "
                     f"read as {codec}")
        return text.encode("utf-8")
    return data


def _lines_with(data: bytes, needle: bytes) -> list[tuple[int, bytes]]:
    """(offset, line) of every line holding ``needle`` (bytes.find: C speed on large files)."""
    found = []
    pos = data.find(needle)
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        found.append((start, data[start:end]))
        pos = data.find(needle, end)
    return found


def _is_header(line: bytes) -> bool:
    fields = next(_csv.reader([line.decode("utf-8", "replace").rstrip("\r")]), [])
    return "ID" in fields and "Kernel Name" in fields


def header_offset(data: bytes, path: Path) -> int:
    """Byte offset of the CSV header line (everything before it is preamble): the first line with
    both an ``ID`` and a ``Kernel Name`` field, in any order. A second such line means two exports
    were joined into one file: refused."""
    starts = [start for start, line in _lines_with(data, b"Kernel Name") if _is_header(line)]
    if not starts:
        raise _no_header_error(data, path)
    if len(starts) > 1:
        lines = [data.count(b"\n", 0, s) + 1 for s in starts[:3]]
        raise ReportLoadError(
            f"{path} holds {len(starts)} CSV exports one after another (headers at lines "
            f"{', '.join(map(str, lines))}): split it into one file per export"
        )
    return starts[0]


def _no_header_error(data: bytes, path: Path) -> ReportLoadError:
    if not data.strip():
        return ReportLoadError(f"{path} is empty; export a report into it ({EXPORT_HINT})")
    error = _ERROR_RE.search(data)
    if error is not None:
        line = error.group(0).decode("utf-8", "replace").strip()
        return ReportLoadError(
            f"{path} holds no CSV, only ncu log output ending in '{line}': the profiled run "
            "failed; fix it and re-run ncu"
        )
    lines = [ln for ln in data[: 1 << 20].splitlines() if ln.strip()]
    if all(_LOG_LINE_RE.match(ln) for ln in lines):
        return ReportLoadError(
            f"{path} holds only ncu log lines and no CSV: no kernel was profiled; re-run ncu "
            "on a program that launches kernels"
        )
    if re.search(rb'(?m)^\W{0,4}"?ID"?\s*[;\t]\s*"?Process ID', data[: 1 << 20]):
        return ReportLoadError(
            f"{path} uses ';' or tabs between fields, not the commas ncu writes: re-export it with "
            f"ncu --csv (and LC_ALL=C), or convert it back to commas; {EXPORT_HINT}"
        )
    loose = _LOOSE_HEADER_RE.search(data)
    if loose is not None:
        fields = next(_csv.reader([loose.group(0).decode("utf-8", "replace")]))
        return missing_columns_error(path, ["ID"], fields)
    return ReportLoadError(
        f"{path} is not an Nsight Compute CSV export (no header with ID and Kernel Name); "
        f"{EXPORT_HINT}"
    )


def missing_columns_error(
    path: Path, missing: Iterable[str], header: list[str]
) -> ReportLoadError:
    """The one-line error for a header without the columns a reader needs."""
    names = ", ".join(missing)
    return ReportLoadError(
        f"{path} lacks required column(s) {names} (has {len(header)} columns); re-export it "
        f"unmodified with ncu --csv ({EXPORT_HINT})"
    )


def complete_rows(body: bytes) -> tuple[bytes, list[str]]:
    """Drop a last line that was cut short (truncated file); say so in the notes."""
    if body.endswith(b"\n"):
        return body, []
    cut = body.rfind(b"\n")
    if cut < 0:
        return body, []
    last = body[cut + 1:].rstrip(b"\r")
    if not last.strip() or _looks_complete(body, last):
        return body, []
    note = "the file ends in the middle of a row (truncated?); the incomplete last row was skipped"
    return body[: cut + 1], [note]


def _looks_complete(body: bytes, last: bytes) -> bool:
    if last.count(b'"') % 2 or not last.endswith((b'"', b",")):
        return False
    header = parse_header(body)
    fields = next(_csv.reader([last.decode("utf-8", "replace")]), [])
    if "Metric Value" in header:
        return len(fields) > header.index("Metric Value")
    return len(fields) >= len(header)


def parse_header(body: bytes) -> list[str]:
    """The fields of the body's first line (the header)."""
    end = body.find(b"\n")
    line = (body if end < 0 else body[:end]).decode("utf-8", "replace").rstrip("\r")
    return next(_csv.reader([line]))
