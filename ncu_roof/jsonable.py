"""Plain, JSON-safe values from pandas/NumPy ones: unknown (NaN/NA/inf) becomes None, never 0.

:func:`json_num` cleans one value; :func:`json_nums` a whole column at once (the same values, built
from arrays), and :func:`json_num_texts` their JSON texts. :func:`json_text` writes one clean value
as ``json.dumps(..., indent=2)`` writes it at a given depth, so that a long list can be written from
its columns; :func:`clean_json_text` writes what ``json_text(clean(value), level)`` writes, long
lists of numbers or strings from arrays (no cleaned copy of the value is made).
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np
import pandas as pd

_EXACT = 2**53  # floats below this, whole, are written as ints


def num(value: Any) -> float | None:
    """A plain finite float, or None for unknown (None/NaN/NA/inf or not a number)."""
    if value is None or value is pd.NA:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def json_num(value: Any) -> float | int | None:
    """A JSON number (an int where the value is a whole number JSON can hold exactly), or None for unknown."""
    f = num(value)
    if f is None:
        return None
    return int(f) if f.is_integer() and abs(f) < _EXACT else f


def clean(value: Any) -> Any:
    """``value`` with dicts, lists and tuples walked: floats through :func:`json_num`, NumPy scalars unwrapped."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float):
        return json_num(value)
    if hasattr(value, "item"):  # numpy scalars
        return clean(value.item())
    return value


def _masks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``values`` as float64 (``float(v)`` of each, rounded as Python rounds), and where they are
    whole numbers JSON holds exactly (written as ints) and where other finite numbers."""
    floats = np.asarray(values).astype(np.float64)
    finite = np.isfinite(floats)
    with np.errstate(invalid="ignore"):
        whole = finite & (floats == np.trunc(floats)) & (np.abs(floats) < _EXACT)
    return floats, whole, finite & ~whole


def json_nums(values: np.ndarray) -> list[float | int | None]:
    """:func:`json_num` of each value of a NumPy number array (bool, int, uint or float), from the
    whole array: what ``[json_num(v) for v in values.tolist()]`` gives."""
    floats, whole, _ = _masks(values)
    out = floats.astype(object)
    out[whole] = floats[whole].astype(np.int64).astype(object)
    out[~np.isfinite(floats)] = None
    return out.tolist()  # type: ignore[no-any-return]


def json_num_texts(values: np.ndarray) -> list[str]:
    """The JSON text of :func:`json_num` of each value of a NumPy number array, from the whole array:
    what ``[json_text(v, 0) for v in json_nums(values)]`` gives."""
    floats, whole, fractional = _masks(values)
    out = np.full(len(floats), "null", dtype=object)
    out[whole] = np.array(list(map(int.__repr__, floats[whole].astype(np.int64).tolist())), dtype=object)
    out[fractional] = np.array(list(map(float.__repr__, floats[fractional].tolist())), dtype=object)
    return out.tolist()  # type: ignore[no-any-return]


def json_text(value: Any, level: int) -> str:
    """A clean value (None, bool, int, float, str, or lists and dicts of them) as
    ``json.dumps(..., indent=2)`` writes it ``level`` levels deep."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is str:
        return encode_basestring_ascii(value)
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is float:
        return float.__repr__(value)
    return json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n" + "  " * level)


_LONG_LIST = 8  # lists at least this long are written from arrays where their items allow
_NUMBERS = frozenset({float, np.float64, type(None)})  # items written as json_num's text, from a float array


def _item_texts(items: list[Any] | tuple[Any, ...], level: int) -> list[str]:
    """The text of each item of a list, ``level`` deep: a long list of numbers or strings from arrays."""
    kinds = set(map(type, items)) if len(items) >= _LONG_LIST else None
    if kinds is not None and kinds <= _NUMBERS:
        codes, uniques = pd.factorize(np.array(items, dtype=np.float64))  # NaN (and None): -1, the last text
        texts = np.array([*json_num_texts(uniques), "null"], dtype=object)
        return texts[codes].tolist()  # type: ignore[no-any-return]
    if kinds == {int}:
        return list(map(int.__repr__, items))
    if kinds == {str}:
        return list(map(encode_basestring_ascii, items))
    return [clean_json_text(item, level) for item in items]


def clean_json_text(value: Any, level: int) -> str:
    """What ``json_text(clean(value), level)`` writes (``json.dumps(clean(value), indent=2,
    allow_nan=False)`` at that depth), without the cleaned copy: long lists of numbers or strings
    are written from arrays; a value of any type but the plain ones, or a dict with a key not a
    str, is written by that very call."""
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if value is None or value is True or value is False:
        return json_text(value, level)
    if kind is float:
        return json_text(json_num(value), level)
    if kind is int:
        return int.__repr__(value)
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = "\n" + "  " * (level + 1)
        return "[" + inner + ("," + inner).join(_item_texts(value, level + 1)) + "\n" + "  " * level + "]"
    if kind is dict and all(type(key) is str for key in value):
        if not value:
            return "{}"
        inner = "\n" + "  " * (level + 1)
        return "{" + ",".join(inner + encode_basestring_ascii(key) + ": " + clean_json_text(item, level + 1)
                              for key, item in value.items()) + "\n" + "  " * level + "}"
    return json_text(clean(value), level)
