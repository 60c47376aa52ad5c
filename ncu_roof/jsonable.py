"""Plain, JSON-safe values from pandas/NumPy ones: unknown (NaN/NA/inf) becomes None, never 0.

:func:`json_num` cleans one value; :func:`json_nums` a whole column at once (the same values, built
from arrays); :func:`json_text` writes one clean value as ``json.dumps(..., indent=2)`` writes it at
a given depth, so that a long list can be written from its columns.
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


def json_nums(values: np.ndarray) -> list[float | int | None]:
    """:func:`json_num` of each value of a NumPy number array (bool, int, uint or float), from the
    whole array: what ``[json_num(v) for v in values.tolist()]`` gives."""
    floats = np.asarray(values).astype(np.float64)  # float(v) of each, rounded as Python rounds
    out = floats.astype(object)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(floats) & (floats == np.trunc(floats)) & (np.abs(floats) < _EXACT)
    out[whole] = floats[whole].astype(np.int64).astype(object)
    out[~np.isfinite(floats)] = None
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
