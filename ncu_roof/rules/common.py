"""Helpers the rules share: grouping launches, evidence taken verbatim from the placed table, units.

Evidence convention: a key that names a placed-table column holds that column's value for the
finding's launches (a scalar for one launch, a list in ``Finding.ids`` order for several), so
every number can be traced back to the report. Derived numbers use keys that are not columns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import Any, TypeAlias, TypeVar, cast

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_si
from ncu_roof.gc_pause import paused_gc
from ncu_roof.jsonable import num
from ncu_roof.model.roofline import Thresholds, under
from ncu_roof.rules.base import Finding, Severity
from ncu_roof.rules.shapes import ask_by_shape, column_codes
from ncu_roof.sequences import MadeOnDemand

# A launch as the rules read it: a placed-table Series, or one of the plain dicts ``rows_of`` yields.
Row: TypeAlias = "pd.Series | Mapping[str, Any]"


def val(row: Row, column: str) -> float:
    """A row's value as float, NaN where the column is absent or unknown."""
    v = row.get(column)
    if type(v) is float:  # the common case, a float64 cell: NaN and infinities fail v - v == 0
        return v if v - v == 0.0 else np.nan
    f = num(v)
    return np.nan if f is None else f


S = TypeVar("S")


def per_launch(signal: Callable[[Row, Thresholds], S]) -> Callable[[Row, Thresholds], S]:
    """Remember a signal's answer for a launch of the placed table while the rules run
    (:func:`rows_cached`): several rules ask about each launch (``row_causes`` asks every signal),
    and there the row and the thresholds are fixed. Other rows are asked afresh each time. A launch
    the signal's screen (:func:`screened`) stops is answered None without running the signal."""
    name = signal.__name__

    @functools.wraps(signal)
    def remembered(row: Row, th: Thresholds) -> S:
        memo = row.get(MEMO) if type(row) is dict else None
        if memo is None:
            return signal(row, th)
        found = memo.get(name)
        if found is not None and (found[0] is th or found[0] == th):
            return cast("S", found[1])
        answers = answers_of(remembered, th)  # the first time: every held launch's answer, by shape
        if answers is not None:
            return cast("S", answers[memo[POSITION]])
        answer = signal(row, th)
        memo[name] = (th, answer)
        return answer

    remembered.remembers = True  # type: ignore[attr-defined]
    return remembered


F = TypeVar("F", bound=Callable[..., Any])


def screened(screen: Callable[[pd.DataFrame, Thresholds], np.ndarray]) -> Callable[[F], F]:
    """Give a per-launch signal its whole-column screen (:mod:`ncu_roof.rules.screens`): False
    where the signal cannot fire."""
    def attach(signal: F) -> F:
        signal.screen = screen  # type: ignore[attr-defined]
        return signal

    return attach


def screen_of(signal: Any, th: Thresholds) -> np.ndarray | None:
    """The signal's screen over the placed table :func:`rows_cached` holds (one bool per row, in
    its order), computed once per thresholds; None without a screen or a held table."""
    screen = getattr(signal, "screen", None)
    frame = _BLOCKS.get("frame")
    if screen is None or frame is None:
        return None
    key = ("screen", signal.__name__)
    found = _BLOCKS.get(key)
    if found is not None and (found[0] is th or found[0] == th):
        return cast("np.ndarray", found[1])
    mask = np.asarray(screen(frame, th), dtype=bool)
    _BLOCKS[key] = (th, mask)
    return mask


def answers_of(signal: Any, th: Thresholds) -> list[Any] | None:
    """The signal's answer for every launch of the placed table :func:`rows_cached` holds (in its
    order; None where its screen stops it), each distinct launch shape asked once
    (:func:`ncu_roof.rules.shapes.ask_by_shape`), computed once per thresholds and remembered in the
    held launches; None without a held table."""
    rows, frame = _BLOCKS.get("rows"), _BLOCKS.get("frame")
    if rows is None or frame is None:
        return None
    key = ("answers", signal)
    found = _BLOCKS.get(key)
    if found is not None and (found[0] is th or found[0] == th):
        return cast("list[Any]", found[1])
    mask = screen_of(signal, th)
    where = np.flatnonzero(mask) if mask is not None else np.arange(len(rows))
    said = ask_by_shape(getattr(signal, "__wrapped__", signal), th, rows, where,
                        lambda column: column_codes(frame, column, _plain, _BLOCKS))
    answers: list[Any] = [None] * len(rows)
    for i, answer in zip(where.tolist(), said, strict=True):
        answers[i] = answer
    _BLOCKS[key] = (th, answers)
    return answers


def held_any(signals: Sequence[Any], th: Thresholds) -> np.ndarray | None:
    """Per launch of the placed table :func:`rows_cached` holds, whether any of ``signals`` fires
    there (from :func:`answers_of`, remembered per thresholds); None without a held table."""
    key = ("any", *signals)
    found = _BLOCKS.get(key)
    if found is not None and (found[0] is th or found[0] == th):
        return cast("np.ndarray", found[1])
    rows = _BLOCKS.get("rows")
    if rows is None:
        return None
    mask = np.zeros(len(rows), dtype=bool)
    for signal in signals:
        answers = answers_of(signal, th)
        if answers is None:
            return None
        mask |= np.fromiter((a is not None for a in answers), dtype=bool, count=len(answers))
    _BLOCKS[key] = (th, mask)
    return mask


def launches_where(rows: pd.DataFrame, one: Callable[[Row], bool],
                   whole: Callable[[pd.DataFrame, Thresholds], np.ndarray], th: Thresholds) -> list[bool]:
    """``one(row)`` for each launch of ``rows``: from ``whole(placed, th)``, the same test over the
    whole placed table :func:`rows_cached` holds (computed once per thresholds), when ``rows`` are
    its launches; else launch by launch."""
    positions = _BLOCKS.get("positions")
    if positions is None or not all(map(positions.__contains__, rows.index)):
        return [one(row) for _, row in rows_of(rows)]
    key = ("mask", whole)
    found = _BLOCKS.get(key)
    if found is None or not (found[0] is th or found[0] == th):
        found = _BLOCKS[key] = (th, np.asarray(whole(_BLOCKS["frame"], th), dtype=bool))
    return cast("list[bool]", found[1][[positions[i] for i in rows.index]].tolist())


def held_position(row: Row) -> int | None:
    """A launch's position in the placed table :func:`rows_cached` holds (None for another row)."""
    memo = row.get(MEMO) if type(row) is dict else None
    return None if memo is None else cast(int, memo[POSITION])


_MATRIX_NAME = re.compile(r"gemm|matmul|mm_|conv|hgemm|sgemm|dgemm|wmma", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def matrix_name(name: str) -> bool:
    """A kernel name that says matrix math (gemm, matmul, conv, wmma, ...): searched once per name."""
    return bool(_MATRIX_NAME.search(name))


def ratio(a: float, b: float) -> float:
    """a / b, NaN where b is 0 or unknown."""
    return a / b if b == b and b != 0 and a == a else np.nan


def ratios(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`ratio` of each pair of two arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((b == b) & (b != 0) & (a == a), a / b, np.nan)  # type: ignore[no-any-return]


def kernel_groups(placed: pd.DataFrame, extra: Sequence[str] = ()) -> Iterator[pd.DataFrame]:
    """Launches of one kernel (per report and device; plus ``extra`` keys), in launch order."""
    keys = ["report", "device", "kernel", *extra]
    held = placed is _BLOCKS.get("frame")  # the groups of the table the rules run on: found once
    groups = _BLOCKS.get(("groups", *keys)) if held else None
    if groups is None:
        frame = placed.assign(**{k: placed[k].astype(str) for k in keys if k in placed})
        groups = [placed.loc[group.index].sort_values("id")
                  for _, group in frame.groupby(keys, sort=False, dropna=False)]
        if held:  # the same frames for every rule (copy-on-write: a rule's change copies its own)
            _BLOCKS[("groups", *keys)] = groups
    yield from groups


def evidence(rows: pd.DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    """Placed-table values of ``columns`` for ``rows`` (scalar for one launch, else a list)."""
    out: dict[str, Any] = {}
    for c in columns:
        if c not in rows:
            continue
        column = rows[c]
        if column.dtype == np.float64:  # plain floats, None for NaN and infinities
            values = [v if v - v == 0.0 else None for v in column.tolist()]
        else:
            values = [v if isinstance(v, str) else num(v) for v in column]
        out[c] = values[0] if len(values) == 1 else values
    return out


def total(rows: pd.DataFrame, column: str) -> float:
    return float(rows[column].sum(min_count=1)) if column in rows else np.nan


def make(rule: str, rows: pd.DataFrame, message: str, stake: float | None, ev: dict[str, Any],
         *, note: bool = False) -> Finding:
    """A finding about the launches in ``rows`` (one kernel of one report). Its severity is set by
    :func:`ncu_roof.rules.base.evaluate` from the run's time; ``note`` marks an "info" finding."""
    reports = rows["report"].dropna().astype(str).unique()
    kernels = tuple(dict.fromkeys(rows["kernel"].astype(str)))
    severity: Severity = "info" if note else "low"
    return Finding(rule, kernels, None, severity, message, num(stake), ev,
                   tuple(int(i) for i in rows["id"]), str(reports[0]) if len(reports) == 1 else None)


def name_of(kernel: object, width: int = 80) -> str:
    """A kernel name for a message, cut to ``width`` (the finding's ``kernels`` keep it whole)."""
    text = str(kernel)
    return text if len(text) <= width else text[: width - 1] + "…"


def known(x: float | None) -> bool:
    """A number that is not None or NaN."""
    return x is not None and x == x


def fmt_count(x: float) -> str:
    """A count with an SI prefix and no unit: ``41.9M``."""
    return fmt_si(x, "").replace(" ", "")


def launches_text(rows: pd.DataFrame) -> str:
    n = len(rows)
    return "1 launch" if n == 1 else f"{n} launches"


def headroom(row: Row) -> float:
    """Measured time above the roofline bound, never negative (0 when unknown)."""
    h = val(row, "headroom_s")
    return max(h, 0.0) if h == h else 0.0


def below_roof(row: Row, at_roof_pct: float) -> bool:
    """A placed launch (memory, compute or latency bound) under ``at_roof_pct`` of its binding
    unit's limit: the busiest unit of the bottleneck model, the roofline's roofs among them."""
    share = val(row, "binding_unit_share")
    pct = share * 100.0 if known(share) else val(row, "pct_of_roof")
    return row.get("bound") in ("memory", "compute", "latency") and under(pct, at_roof_pct)


def limiter_row(row: Row, at_roof_pct: float) -> bool:
    """A launch whose limiter is worth naming: below its binding unit's limit, or without a verdict
    (a launch-statistics-only capture, or no unit near its limit with DRAM unmeasured), but not
    launch-bound."""
    if below_roof(row, at_roof_pct):
        return True
    share, pct = val(row, "binding_unit_share"), val(row, "pct_of_roof")
    if row.get("bound") == "unknown":  # some units measured, none near its limit, DRAM not measured
        return not known(pct) and (not known(share) or under(share * 100.0, at_roof_pct))
    return row.get("bound") == "latency" and not known(share) and not known(pct)


MEMO = "__signals__"  # the key of a held row's remembered signal answers
POSITION = "#"  # ...and in those, the row's position in the placed table


class HeldRows(MadeOnDemand[dict[str, Any]]):
    """The held placed table's launches as dicts of plain values (as :func:`row_dicts` makes them,
    with :data:`MEMO`), each made when first asked for: most launches are answered by shape or by
    whole-column tests and never become a dict."""

    ONE_BY_ONE = 16  # launches made from their own row; then every column is converted at once

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._columns = [str(c) for c in frame.columns]
        self._keys = dict.fromkeys(self._columns)
        self._values: list[list[Any]] | None = None
        self._rows: list[dict[str, Any] | None] = [None] * len(frame)

    def __len__(self) -> int:
        return len(self._rows)

    def _item(self, i: int) -> dict[str, Any]:
        row = self._rows[i]
        if row is None:
            if self._values is None and self.made() >= self.ONE_BY_ONE:
                self._values = [_plain(self._frame[c]) for c in self._frame.columns]
            if self._values is None:  # the first few: from the launch's own row of the table
                row = row_dicts(self._frame.iloc[[i]])[0]
            else:
                row = self._keys.copy()
                row.update(zip(self._columns, map(itemgetter(i), self._values), strict=True))
            row[MEMO] = {POSITION: i}
            self._rows[i] = row
        return row

    def made(self) -> int:
        """How many launches have become dicts."""
        return len(self._rows) - self._rows.count(None)


@contextmanager
def rows_cached(placed: pd.DataFrame) -> Iterator[None]:
    """Hold the placed table while the rules run, its launches as dicts made once each when first
    asked for (:class:`HeldRows`; rules look at launches many times). Python's cyclic garbage
    collector is paused meanwhile (:func:`ncu_roof.gc_pause.paused_gc`): with a dict per launch
    alive each of its passes would walk them all (0.7 s of the rules' 1.9 s on 10,000 launches)."""
    with paused_gc():
        yield from _rows_cached(placed)


def _rows_cached(placed: pd.DataFrame) -> Iterator[None]:
    _BLOCKS.clear()
    if placed.index.is_unique:
        _BLOCKS["frame"] = placed
        _BLOCKS["rows"] = HeldRows(placed)
        _BLOCKS["positions"] = {label: i for i, label in enumerate(placed.index)}
    try:
        yield
    finally:
        _BLOCKS.clear()


_BLOCKS: dict[Any, Any] = {}  # the placed table and its columns as arrays, while evaluate() runs


def column_block(labels: Sequence[Any], columns: tuple[str, ...]) -> np.ndarray | None:
    """The placed table's ``columns`` (float, NaN where absent) for the launches ``labels``, while
    :func:`rows_cached` holds it; None otherwise."""
    positions = _BLOCKS.get("positions")
    if positions is None or any(label not in positions for label in labels):
        return None
    if columns not in _BLOCKS:
        frame = _BLOCKS["frame"]
        _BLOCKS[columns] = np.column_stack([
            pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float) if c in frame
            else np.full(len(frame), np.nan) for c in columns]) if columns else np.empty((len(frame), 0))
    return cast("np.ndarray", _BLOCKS[columns][[positions[label] for label in labels]])


def row_dicts(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each row as a dict of plain Python values, as ``to_dict("records")`` gives them, built from
    whole columns (``tolist``) instead of boxing cell by cell: about 10x faster on wide tables.
    Each row starts as a copy of one dict holding every column (its keys laid out once)."""
    columns = [str(c) for c in frame.columns]
    if not columns:
        return [{} for _ in range(len(frame))]
    values = [_plain(frame[c]) for c in frame.columns]
    keys = dict.fromkeys(columns)
    out = []
    for row in zip(*values, strict=True):
        cells = keys.copy()
        cells.update(zip(columns, row, strict=True))
        out.append(cells)
    return out


def _plain(column: pd.Series) -> list[Any]:
    """A column's cells as ``to_dict`` boxes them (pandas' NA in an object column becomes None)."""
    cells = column.tolist()
    if column.dtype == object:
        na = pd.NA
        return [None if v is na else v for v in cells]
    return cells


def rows_of(frame: pd.DataFrame) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(index, row as a dict) pairs: what ``iterrows`` gives, without building a Series per row."""
    positions, rows = _BLOCKS.get("positions"), _BLOCKS.get("rows")
    if positions is not None and rows is not None and all(map(positions.__contains__, frame.index)):
        return ((i, rows[positions[i]]) for i in frame.index)
    return zip(frame.index, row_dicts(frame), strict=True)


def any_screened(rows: pd.DataFrame, signals: Sequence[Any], th: Thresholds) -> np.ndarray:
    """Per row of ``rows``, whether any of ``signals`` can fire there (its screen lets it through,
    or it has no screen, or no placed table is held)."""
    positions = _BLOCKS.get("positions")
    masks = [screen_of(signal, th) for signal in signals]
    if positions is None or any(m is None for m in masks) or any(i not in positions for i in rows.index):
        return np.ones(len(rows), dtype=bool)
    where = [positions[i] for i in rows.index]
    return np.logical_or.reduce([cast("np.ndarray", m)[where] for m in masks]) if masks else np.zeros(len(rows), bool)


def flagged(group: pd.DataFrame, th: Thresholds, signal: Any) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The rows of ``group`` for which ``signal(row, th)`` fires, and each row's signal; only the
    rows the signal's screen lets through are asked."""
    positions = _BLOCKS.get("positions")
    if positions is not None and all(map(positions.__contains__, group.index)):
        answers = answers_of(signal, th)
        if answers is not None:
            hits = [(i, s) for i in group.index if (s := answers[positions[i]]) is not None]
            return group.loc[[i for i, _ in hits]], [s for _, s in hits]
    hits = [(i, s) for i, row in rows_of(group) if (s := signal(row, th)) is not None]
    return group.loc[[i for i, _ in hits]], [s for _, s in hits]
