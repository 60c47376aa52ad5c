"""Each per-launch signal asked once per distinct launch *shape*: the values of the columns it reads.

A signal is a pure function of the launch's values and the thresholds. Asked about one launch
through a :class:`Recorder`, it tells which columns it read; two launches equal in those columns
take the same path through the signal and get the same answer. So the launches are grouped by the
values (bit for bit: floats by their bits, other cells by type and value) of the columns read so far,
the signal is asked about one launch of each group, and where that launch made it read another
column, the column joins the key and the grouping is redone, until no group's launch reads outside
it. Then every launch of a group gets its launch's answer: exactly what asking each launch gives.

A signal that reads the whole row (iterates it) or fails is asked launch by launch instead, and
so it is where the shapes are nearly as many as the launches (real counters that differ at every
launch): grouping would only add to the work. Launches that repeat (one kernel's launches with
the same grid, block and occupancy; a report of copied launches) are asked about once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

SMALL = 32  # fewer candidate launches than this: asked one by one
MOST_SHAPES = 0.5  # more shapes than this share of the launches: asked one by one


class _WholeRow(BaseException):
    """A signal iterated the row: the columns it depends on are not known (BaseException, so no
    ``except Exception`` in a signal swallows it)."""


class Recorder(Mapping[str, Any]):
    """A launch's row as a read-only mapping that notes each column read."""

    __slots__ = ("row", "seen")

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row
        self.seen: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.seen.add(key)
        return self.row[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add(key)
        return self.row.get(key, default)

    def __contains__(self, key: object) -> bool:
        self.seen.add(key)  # type: ignore[arg-type]
        return key in self.row

    def __iter__(self) -> Iterator[str]:
        raise _WholeRow

    def __len__(self) -> int:
        raise _WholeRow


def column_codes(frame: pd.DataFrame, column: str, cells: Callable[[pd.Series], list[Any]],
                 cache: dict[Any, Any]) -> np.ndarray | None:
    """One integer per launch, equal where the launches' cells are the same value (floats bit for
    bit, other cells by type and value); None where a cell cannot be compared (unhashable)."""
    key = ("codes", column)
    if key in cache:
        return cache[key]  # type: ignore[no-any-return]
    codes: np.ndarray | None
    if column not in frame:
        codes = np.zeros(len(frame), dtype=np.int64)
    else:
        series = frame[column]
        if series.dtype == np.float64:
            codes = pd.factorize(series.to_numpy().view(np.int64))[0]
        elif series.dtype.kind in "iub" and not isinstance(series.dtype, pd.api.extensions.ExtensionDtype):
            codes = pd.factorize(series.to_numpy())[0]
        elif isinstance(series.dtype, pd.StringDtype) or pd.api.types.infer_dtype(series, skipna=False) == "string":
            codes = pd.factorize(series, use_na_sentinel=False)[0]  # text (and one missing value): as the cells
        else:
            ids: dict[tuple[type, Any], int] = {}
            try:
                codes = np.array([ids.setdefault((type(v), v), len(ids)) for v in cells(series)], dtype=np.int64)
            except TypeError:
                codes = None
    cache[key] = codes
    return codes


def _groups(columns: Sequence[str], where: np.ndarray, codes_of: Callable[[str], np.ndarray | None]
            ) -> np.ndarray | None:
    """A group number per launch of ``where``, launches of a group equal in every one of ``columns``."""
    ids = np.zeros(len(where), dtype=np.int64)
    for column in columns:
        codes = codes_of(column)
        if codes is None:
            return None
        part = codes[where]
        ids = pd.factorize(ids * (int(part.max(initial=0)) + 1) + part)[0]
    return ids


def ask_by_shape(signal: Callable[[Any, Any], Any], th: Any, rows: Sequence[Mapping[str, Any]],
                 where: np.ndarray, codes_of: Callable[[str], np.ndarray | None]) -> list[Any]:
    """``signal(rows[i], th)`` for each position ``i`` of ``where``, each distinct shape asked once
    (see the module); launch by launch where that does not pay."""
    if len(where) < SMALL:
        return [signal(rows[i], th) for i in where.tolist()]
    read: set[str] = set()
    answers = _shapes(signal, th, rows, where, codes_of, read)
    if answers is None:
        return [signal(rows[i], th) for i in where.tolist()]
    return answers


def _shapes(signal: Callable[[Any, Any], Any], th: Any, rows: Sequence[Mapping[str, Any]], where: np.ndarray,
            codes_of: Callable[[str], np.ndarray | None], read: set[str]) -> list[Any] | None:
    """The answers by shape, or None where the launches are to be asked one by one."""
    try:
        first = Recorder(rows[int(where[0])])
        signal(first, th)
        read |= first.seen
        while True:
            ids = _groups(sorted(read), where, codes_of)
            if ids is None:
                return None
            uniques, firsts = np.unique(ids, return_index=True)
            if len(uniques) > MOST_SHAPES * len(where):
                return None
            said, grown = [], False
            for position in where[firsts].tolist():
                recorder = Recorder(rows[position])
                said.append(signal(recorder, th))
                if not recorder.seen <= read:
                    read |= recorder.seen
                    grown = True
                    break
            if not grown:
                return list(map(said.__getitem__, ids.tolist()))  # one answer object per shape: never changed
    except _WholeRow:
        return None
    except Exception:  # noqa: BLE001 - asked launch by launch, the launch that fails raises as before
        return None
