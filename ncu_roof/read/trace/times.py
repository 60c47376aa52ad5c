"""A batch's event times in seconds at once, exactly as :func:`~ncu_roof.read.trace.kineto.micros`
reads each one.

Enters: the ``ts`` of a batch of events: the values as decoded (an int, or the text of a number with
a fraction: ``parse_float=str``), or their JSON text (msgspec's ``Raw``, as
:mod:`ncu_roof.read.trace.fast` keeps it: no Python object a number). Leaves: seconds since the
trace's base time (float64), or None where a time is of another kind, written otherwise than the
rest or out of range (the reader then reads the batch one event at a time); and, from JSON texts,
the values the standard library decodes from them.

A batch of texts all written alike (digits, or digits, a point and digits in the same places) is
read as one array of bytes, digit by digit: the whole part an int64, the fraction an integer over a
power of ten (both exact below 2**53, so rounded once, as ``float('0.' + f)`` rounds it).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

_STDLIB = json.JSONDecoder(parse_float=str)
_PLAIN_INTS = re.compile(rb"(?:\d+,)*\d+")  # texts joined by ',' (no JSON number holds one)
_PLAIN_FRACTIONS = re.compile(rb"(?:\d+\.\d+,)*\d+\.\d+")
_POINT, _ZERO = ord("."), ord("0")


def plain_fraction(text: Any) -> bool:
    """Whether ``text`` is ``digits.digits`` (ASCII, a whole part under 19 digits)."""
    whole, dot, frac = text.partition(".") if type(text) is str else ("", "", "")
    return bool(dot) and whole.isascii() and whole.isdigit() and frac.isascii() and frac.isdigit() and len(whole) < 19


def base_of(first: Any) -> int | None:
    """The trace's base time that its first kept event's ``ts`` gives where it is a plain number."""
    if type(first) is int and first >= 0:
        return first
    return int(float(str(first))) if plain_fraction(first) else None


def starts(ts: list[Any], base: int | None) -> np.ndarray | None:
    """Seconds since ``base`` of each time (microseconds: an int, or the text of a fraction), exactly
    as ``micros`` reads them; None when one is of another kind or out of range."""
    if base is None:
        return None
    kinds = set(map(type, ts))
    if kinds == {int}:
        try:
            whole = np.array(ts, dtype=np.int64)
        except OverflowError:
            return None
        if (whole < 0).any():
            return None
        return (whole - base).astype(np.float64) * 1e-6
    if kinds == {str}:
        parsed = _fractions(ts)
        if parsed is None:
            return None
        whole, frac = parsed
        return ((whole - base).astype(np.float64) + frac) * 1e-6
    return None


def _fractions(texts: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """Each text ``digits.digits`` as its whole part (int64) and its fraction; None unless all are
    written alike (the same length, the point in the same place, digits only)."""
    arr = np.array(texts)
    width = arr.dtype.itemsize // 4
    point = texts[0].find(".")
    if width == 0 or point < 1 or width - point - 1 > 15 or point > 18 or width - point - 1 < 1:
        return None
    chars = arr.view(np.uint32).reshape(len(texts), width)
    if not (chars[:, point] == _POINT).all():
        return None
    return _digits(chars, point)


def _digits(chars: np.ndarray, point: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows of character codes, digits but for a point at ``point`` (or none: ``point`` is the width),
    as whole parts and fractions; None where another character is found (a shorter text's NUL)."""
    digits = chars.astype(np.int64) - _ZERO
    whole_digits, frac_digits = digits[:, :point], digits[:, point + 1 :]
    for part in (whole_digits, frac_digits):
        if not ((part >= 0) & (part <= 9)).all():
            return None
    whole = whole_digits @ (10 ** np.arange(point - 1, -1, -1, dtype=np.int64))
    places = frac_digits.shape[1]
    if not places:
        return whole, np.zeros(len(whole))
    frac = (frac_digits @ (10 ** np.arange(places - 1, -1, -1, dtype=np.int64))) / float(10**places)
    return whole, frac


def raw_starts(texts: list[Any], base: int | None) -> np.ndarray | None:
    """:func:`starts` of times given as their JSON texts (``Raw`` or bytes; empty: missing)."""
    if base is None or not texts:
        return None
    width = len(texts[0])
    joined = b",".join(texts) + b","
    if not width or len(joined) != len(texts) * (width + 1):
        return starts(raw_values(texts), base)
    rows = np.frombuffer(joined, dtype=np.uint8).reshape(len(texts), width + 1)
    chars = rows[:, :width]
    point = joined.find(b".", 0, width)
    point = width if point < 0 else point
    places = width - point - 1
    plain = (rows[:, width] == ord(",")).all() and point >= 1 and point <= 18 and (
        places == -1 or 1 <= places <= 15 and bool((chars[:, point] == _POINT).all()))
    parsed = _digits(chars, point) if plain else None
    if parsed is None:  # written otherwise: read as the values they are
        return starts(raw_values(texts), base)
    whole, frac = parsed
    if places == -1:
        return (whole - base).astype(np.float64) * 1e-6
    return ((whole - base).astype(np.float64) + frac) * 1e-6


def raw_values(texts: list[Any]) -> list[Any]:
    """Each JSON text (``Raw`` or bytes) as the standard library decodes it (a number with a fraction
    as its text); an empty text (the field missing) as None."""
    joined = b",".join(texts)
    if _PLAIN_FRACTIONS.fullmatch(joined):
        return joined.decode().split(",")
    if _PLAIN_INTS.fullmatch(joined):
        return list(map(int, joined.split(b",")))
    return [_STDLIB.decode(bytes(t).decode()) if len(t) else None for t in texts]
