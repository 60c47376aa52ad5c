"""A Chrome-trace JSON file (``torch.profiler``/Kineto), read as a stream of events.

Enters: a ``.json`` or gzip-compressed ``.json.gz`` path. Leaves: the top-level fields (everything
but ``traceEvents``: ``deviceProperties``, ``distributedInfo``, ...) and an iterator over the events
in batches, decoded from a buffer refilled in chunks: the whole events of a chunk in one call (by
msgspec into structs where it is installed, :mod:`ncu_roof.read.trace.fast`; else, or where it refuses
them, by the standard library's decoder), an event cut by the chunk's end alone, by the standard
library; memory holds one chunk and its events, never the file. A file that is not JSON, is cut
short or holds no ``traceEvents`` raises :class:`~ncu_roof.errors.InputError` with one line saying
where.

Numbers with a fraction stay text (``parse_float=str``): a timestamp in microseconds since the epoch
(``1712195495505543.2``) needs more digits than a float64 keeps; :func:`micros` splits it exactly.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any, Protocol, TextIO

from ncu_roof.errors import InputError
from ncu_roof.read.inputs import open_input
from ncu_roof.read.trace.fast import decode_events

CHUNK = 1 << 20  # characters read at a time
MAX_VALUE = 512 << 20  # one top-level value or event larger than this: not a trace
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_float=str)
_STRUCTURE = re.compile(r"[,:\]}]")  # after a token cut by the end of the file, none of these follows
_TAIL = 64  # an error this close to the buffer's end may be a value cut by the chunk: read more
_SHORT = 1 << 16  # a rest of the buffer this short is decoded as a copy (the event a chunk cuts)


def micros(value: Any, base: int) -> float:
    """A timestamp in microseconds (int, float or the text of a fraction) minus ``base``, exactly:
    the integer part is subtracted before the fraction is added."""
    if isinstance(value, int):
        return float(value - base)
    if isinstance(value, str):
        whole, dot, frac = value.partition(".")
        if dot and whole.lstrip("-").isdigit() and "e" not in frac.lower():
            sign = -1.0 if whole.startswith("-") else 1.0
            return float(int(whole) - base) + sign * float("0." + (frac or "0"))
        return float(value) - base
    return float(value) - base


def as_float(value: Any) -> float:
    """A number (or the text of one) as float; NaN for anything else (``true`` is no number)."""
    if type(value) is bool:
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


class Handover(Protocol):
    """Another process reading a trace's events from the start of an event found after character
    ``at`` (:mod:`ncu_roof.read.trace.halves`)."""

    at: int

    def boundary(self) -> int | None:
        """The character offset of that event's ``{``; None where it found none."""

    def accept(self) -> dict[str, Any] | None:
        """Its part read (this stream's events end at :meth:`boundary`): the fields after the events
        as it read them; None where it failed (this stream reads on alone)."""

    def cancel(self) -> None:
        """Its part not wanted: this stream reads on alone."""


class _Stream:
    """JSON values decoded one at a time from a text file read in chunks."""

    def __init__(self, fh: TextIO, path: Path, fast: bool) -> None:
        self.fh, self.path, self.fast = fh, path, fast
        self.buf, self.pos, self.offset, self.eof = "", 0, 0, False
        self.refused = -1  # the end of the last text msgspec refused, from the start of the file
        self.split: Handover | None = None  # another process reading the events after ``stop``
        self.stop = -1  # where this stream's events end, once the other process has said (its '{')
        self.tail: dict[str, Any] | None = None  # the fields after the events, as the other process read them

    def more(self, size: int | None = None) -> bool:
        """More of the file in the buffer (``CHUNK`` characters, or ``size``); False at its end."""
        if self.eof:
            return False
        size = CHUNK if size is None else size
        if self.split is not None:
            size = self._room(size)
        chunk = self.fh.read(size)
        if not chunk:
            self.eof = True
            return False
        self.offset += self.pos
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def _room(self, size: int) -> int:
        """``size`` cut to read no further than the handover point (its ``{`` included); the other
        process dropped where this stream needs more than that."""
        split, read = self.split, self.offset + len(self.buf)
        assert split is not None
        if self.stop < 0:
            if read + size <= split.at:
                return size
            self.stop = stop if (stop := split.boundary()) is not None and stop >= read else -1
            if self.stop < 0:
                self.alone()
                return size
        room = self.stop + 1 - read
        if room > 0:
            return min(size, room)
        self.alone()
        return size

    def alone(self) -> None:
        """The other process's part not used: this stream reads every event."""
        if self.split is not None:
            self.split.cancel()
        self.split, self.stop = None, -1

    def held(self) -> bool:
        """Whether the buffer holds every character up to the handover point (no more is read before it)."""
        return self.stop >= 0 and self.offset + len(self.buf) == self.stop + 1

    def handed_over(self) -> bool:
        """Whether this stream's events end here: at the handover point, the other process's part read."""
        if self.stop < 0 or not self.peek() or self.offset + self.pos != self.stop:
            return False
        assert self.split is not None
        self.tail = self.split.accept()
        if self.tail is None:
            self.alone()
            return False
        return True

    def where(self) -> str:
        return f"character {self.offset + self.pos:,}"

    def peek(self) -> str:
        """The next character that is not whitespace ('' at the end of the file)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str, what: str) -> str:
        ch = self.peek()
        if not ch:
            raise self.cut(what)
        if ch not in chars:
            raise InputError(f"{self.path}: not a trace: expected {what} at {self.where()}, found {ch!r}")
        self.pos += 1
        return ch

    def cut(self, what: str) -> InputError:
        return InputError(f"{self.path}: the trace is cut short at {self.where()} (expected {what}): the file "
                          "is truncated (was the profiler stopped while writing it?)")

    def value(self, what: str) -> Any:
        """The next JSON value, reading more of the file while it is incomplete."""
        if not self.peek():
            raise self.cut(what)
        while True:
            start = self.pos if len(self.buf) - self.pos <= _SHORT else 0
            try:  # a short rest decoded as its own text: the error a cut value raises counts its lines
                value, end = _DECODER.raw_decode(self.buf[start:] if start else self.buf, self.pos - start)
            except json.JSONDecodeError as exc:
                at = exc.pos + start
                unterminated = exc.msg.startswith("Unterminated string")
                if unterminated or len(self.buf) - at <= _TAIL:  # perhaps cut by the chunk: read more
                    if len(self.buf) - self.pos > MAX_VALUE:
                        raise InputError(f"{self.path}: not a trace: one value over {MAX_VALUE >> 20} MiB at "
                                         f"{self.where()}") from None
                    if self.more(max(CHUNK, len(self.buf) - self.pos)):  # doubling: a long value costs O(n)
                        continue
                    if unterminated or not _STRUCTURE.search(self.buf, at):  # the file ends in a token
                        raise self.cut(what) from None
                self.pos = at
                raise InputError(f"{self.path}: not valid JSON at {self.where()}: {exc.msg}") from None
            end += start
            if end == len(self.buf) and self.more():  # a number may go on in the next chunk
                continue
            self.pos = end
            return value


def _open(path: Path) -> TextIO:
    """The file as text, gunzipped where it starts with gzip's magic; opened once, so that a pipe
    (``<(zcat t.json.gz)``, a FIFO) is read as the stream it is, not waited on a second time."""
    return io.TextIOWrapper(_binary(path), encoding="utf-8", errors="strict")


def _binary(path: Path) -> Any:
    """The file's bytes, gunzipped where it starts with gzip's magic."""
    fh = io.BufferedReader(open_input(path), CHUNK)
    try:
        magic = fh.peek(2)[:2]
    except OSError:
        fh.close()
        raise
    raw: Any = fh
    if magic == b"\x1f\x8b":
        raw = gzip.GzipFile(fileobj=fh, mode="rb")
        raw.myfileobj = fh  # closed with it, as when gzip opens the file itself
    return raw


_BOUNDARY = re.compile(r"[ \t\n\r]*,[ \t\n\r]*\{")  # after an event: a comma and the next event


def _whole_events(s: _Stream) -> list[Any]:
    """Every whole event in the buffer up to the last that a comma and another event follow,
    decoded as one JSON list in one call (msgspec's structs where it reads them, else the standard
    library's dicts, objects only; not one call an event); the stream moves past them. An event's
    own closing brace is the last ``}`` before ``, {``: a brace inside a string or a nested object
    leaves the list unclosed, so it does not decode and [] is returned (as where no such brace is
    found): the careful path then reads the events one at a time."""
    buf, pos = s.buf, s.pos
    end = len(buf)
    for _ in range(64):
        end = buf.rfind("}", pos, end)
        m = _BOUNDARY.match(buf, end + 1) if end >= 0 else None
        if m is not None or end < 0:
            break
    if m is None:
        return []
    text = "".join(("[", buf[pos : end + 1], "]"))  # two copies of the events' text, not three
    events = decode_events(text) if s.fast and s.offset + end > s.refused else None
    if events is None:
        if s.fast:  # the events up to this end are read without msgspec: not tried again on each one
            s.refused = max(s.refused, s.offset + end)
        try:
            events = _DECODER.decode(text)
        except (json.JSONDecodeError, RecursionError):
            return []
        if set(map(type, events)) != {dict}:  # objects only
            events = [e for e in events if type(e) is dict]
    s.pos = m.end() - 1
    return events


def _events(s: _Stream) -> Iterator[list[Any]]:
    """The events of the traceEvents list (objects only), a batch at a time: the whole events in
    the buffer at once, then (the file read to its end, or no whole event found) one read carefully
    (more of the file read while it is incomplete)."""
    s.expect("[", "the traceEvents list")
    if s.peek() == "]":
        s.pos += 1
        return
    yield from _event_loop(s)


def _event_loop(s: _Stream) -> Iterator[list[Any]]:
    """The events from an event's start (or whitespace before it) to the list's end, or to the
    handover point where another process reads the rest."""
    while True:
        if s.stop >= 0 and s.handed_over():
            return
        batch = _whole_events(s)
        if batch:
            yield batch
            if s.stop >= 0 and s.handed_over():
                return
            if not s.held() and s.more():  # the event the chunk's end cut: whole in the next batch
                continue
        event = s.value("an event")
        if isinstance(event, dict):
            yield [event]
        sep = s.expect(",]", "',' or ']' after an event")
        if sep == "]":
            return
        if s.peek() == "]":  # a trailing comma, as some writers leave
            s.pos += 1
            return


def read_trace_json(path: Path) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """:func:`read_trace_batches`, its events one at a time, each the dict the standard library decodes."""
    fields, batches = read_trace_batches(path, fast=False)
    return fields, chain.from_iterable(batches)


Split = Callable[[Path, bool, bool], "Handover | None"]  # (path, bare list, fast) -> a helper, where one starts


def read_trace_batches(path: Path, fast: bool = True, split: Split | None = None
                       ) -> tuple[dict[str, Any], Iterator[list[Any]]]:
    """The top-level fields met before ``traceEvents`` and an iterator over its events, in batches
    (lists of events, in file order: dicts, or with ``fast`` where msgspec is installed, the
    structs of :mod:`ncu_roof.read.trace.fast` for a chunk it decodes); fields after
    the events are added to the same dict once the iterator is exhausted. A bare list of events (the
    Chrome trace array form) has no fields. ``split``, called where the events begin, may give
    another process that reads the events after a point: the iterator then ends where they begin."""
    try:
        fh = _open(path)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    s = _Stream(fh, path, fast)
    fields: dict[str, Any] = {}
    try:
        first = s.peek()
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        fh.close()
        raise _unreadable(path, exc) from None
    if first == "[":
        s.split = split(path, True, fast) if split else None
        return fields, _guarded(fh, path, _events(s), s, fields, bare=True)
    if first != "{":
        fh.close()
        raise InputError(f"{path}: not a trace: a Chrome-trace JSON (torch.profiler's export_chrome_trace) "
                         "starts with '{' or '['" + (" and this file is empty" if not first else ""))
    s.pos += 1
    try:
        while True:
            if s.peek() == "}":
                fh.close()
                raise InputError(f"{path}: not a trace: no traceEvents list in this JSON object")
            key = s.value("a field name")
            if not isinstance(key, str):
                raise InputError(f"{path}: not valid JSON at {s.where()}: a field name is not a string")
            s.expect(":", "':'")
            if key == "traceEvents":
                s.split = split(path, False, fast) if split else None
                return fields, _guarded(fh, path, _events(s), s, fields, bare=False)
            fields[key] = s.value(f"the value of {key!r}")
            if s.expect(",}", "',' or '}'") == "}":
                fh.close()
                raise InputError(f"{path}: not a trace: no traceEvents list in this JSON object")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        fh.close()
        raise _unreadable(path, exc) from None
    except InputError:
        fh.close()
        raise


def _guarded(fh: TextIO, path: Path, events: Iterator[list[Any]], s: _Stream, fields: dict[str, Any],
             bare: bool) -> Iterator[list[Any]]:
    """``events``, then the fields after them; the file closed at the end, errors made one line."""
    try:
        yield from events
        if s.tail is not None:  # read by the other process
            fields.update(s.tail)
        elif not bare:
            while s.expect(",}", "',' or '}' after the traceEvents list") == ",":
                key = s.value("a field name")
                s.expect(":", "':'")
                fields[str(key)] = s.value(f"the value of {key!r}")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise _unreadable(path, exc) from None
    finally:
        fh.close()


_START = re.compile(r"}[ \t\n\r]*,[ \t\n\r]*\{")  # an event's end, a comma and the next event's start


def read_rest(path: Path, at: int, bare: bool, fast: bool
              ) -> tuple[int, Iterator[list[Any]], dict[str, Any]] | None:
    """For another process (:mod:`ncu_roof.read.trace.halves`): the offset of the first ``{`` after
    character ``at`` that follows a ``}`` and a comma (an event's start, unless inside a string: the
    reader of the part before checks it reaches an event's start there), the events from it in batches,
    and the dict that the fields after them fill once the iterator is exhausted. None where a character
    before ``at`` is not ASCII (``at`` is counted in bytes) or no such ``{`` follows soon after it."""
    raw = _binary(path)
    left = at
    while left > 0:
        data = raw.read(min(left, CHUNK))
        if not data or not data.isascii():
            raw.close()
            return None
        left -= len(data)
    fh = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    s = _Stream(fh, path, fast)
    s.offset = at
    while (m := _START.search(s.buf)) is None:
        if len(s.buf) > 4 * CHUNK or not s.more():
            fh.close()
            return None
    s.pos = m.end() - 1
    fields: dict[str, Any] = {}
    return at + s.pos, _guarded(fh, path, _event_loop(s), s, fields, bare), fields


def _unreadable(path: Path, exc: BaseException) -> InputError:
    if isinstance(exc, EOFError):
        return InputError(f"{path}: the compressed trace is cut short ({exc}): the file is truncated")
    if isinstance(exc, UnicodeDecodeError):
        return InputError(f"{path}: not a trace: not UTF-8 text ({exc.reason} at byte {exc.start:,})")
    return InputError(f"{path}: could not read the trace: {exc}")
