"""Plain, JSON-safe values from pandas/NumPy ones: unknown (NaN/NA/inf) becomes None, never 0."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


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
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


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
