"""Helpers the rules share: grouping launches, evidence taken verbatim from the placed table, units.

Evidence convention: a key that names a placed-table column holds that column's value for the
finding's launches (a scalar for one launch, a list in ``Finding.ids`` order for several), so
every number can be traced back to the report. Derived numbers use keys that are not columns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeAlias, TypeVar

import numpy as np
import pandas as pd

from ncu_roof.fmt import fmt_si
from ncu_roof.jsonable import num
from ncu_roof.model.roofline import SECTOR_BYTES, Thresholds, under
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


F = TypeVar("F", bound=Callable[..., Any])


def screened(screen: Callable[[pd.DataFrame, Thresholds], np.ndarray]) -> Callable[[F], F]:
    """Give a per-launch signal its whole-column screen (:mod:`ncu_roof.rules.screens`): False
    where the signal cannot fire."""
    def attach(signal: F) -> F:
        signal.screen = screen  # type: ignore[attr-defined]
        return signal

    return attach


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


def evidence(rows: pd.DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    """Placed-table values of ``columns`` for ``rows`` (scalar for one launch, else a list)."""
    out: dict[str, Any] = {}
    for c in columns:
        if c not in rows:
            continue
        column = rows[c]
        if column.dtype == np.float64:  # plain floats, None for NaN and infinities
            values = column.tolist()
            finite = np.isfinite(column.to_numpy())
            if not finite.all():
                values = [v if ok else None for v, ok in zip(values, finite.tolist(), strict=True)]
        else:  # the column's cells as Python values (num makes any number a float)
            values = [v if isinstance(v, str) else num(v) for v in column.tolist()]
        out[c] = values[0] if len(values) == 1 else values
    return out


def total(rows: pd.DataFrame, column: str) -> float:
    return float(rows[column].sum(min_count=1)) if column in rows else np.nan


def name_of(kernel: object, width: int = 80) -> str:
    """A kernel name for a message, cut to ``width`` (the finding's ``kernels`` keep it whole)."""
    text = str(kernel)
    return text if len(text) <= width else text[: width - 1] + "…"


def known_sum(row: Row, *columns: str) -> float:
    """The sum of the ``columns`` the row knows (0 where it knows none)."""
    return float(sum(x for x in (val(row, c) for c in columns) if x == x))


def compute_capability(row: Row) -> tuple[int, int] | None:
    """The launch's compute capability as (major, minor); None where the row does not say."""
    try:
        major, minor = (int(x) for x in str(row.get("cc") or "").split(".")[:2])
    except ValueError:
        return None
    return major, minor


SHARED_RESERVED_BYTES = 1024.0  # shared memory per block the driver reserves (CC 8.0 on): not the kernel's tiles


def tiles_in_shared(row: Row) -> bool:
    """The kernel keeps tiles in shared memory: more per block than the driver reserves."""
    return bool(val(row, "shared_mem_per_block") > SHARED_RESERVED_BYTES)


def local_bytes_past_l1(row: Row) -> float:
    """Local-memory (spill, stack) bytes that missed L1: traffic to L2 that is not the kernel's data."""
    return known_sum(row, "local_load_sectors_missed", "local_store_sectors_missed") * SECTOR_BYTES


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


class HeldRows(MadeOnDemand[dict[str, Any]]):
    """A placed table's launches as dicts of plain values (as :func:`row_dicts` makes them), each
    made when first asked for: most launches are answered by shape or by whole-column tests and
    never become a dict."""

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
                self._values = [plain_cells(self._frame[c]) for c in self._frame.columns]
            if self._values is None:  # the first few: from the launch's own row of the table
                row = row_dicts(self._frame.iloc[[i]])[0]
            else:
                row = self._keys.copy()
                row.update(zip(self._columns, map(itemgetter(i), self._values), strict=True))
            self._rows[i] = row
        return row

    def made(self) -> int:
        """How many launches have become dicts."""
        return len(self._rows) - self._rows.count(None)


def row_dicts(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each row as a dict of plain Python values, as ``to_dict("records")`` gives them, built from
    whole columns (``tolist``) instead of boxing cell by cell: about 10x faster on wide tables.
    Each row starts as a copy of one dict holding every column (its keys laid out once)."""
    columns = [str(c) for c in frame.columns]
    if not columns:
        return [{} for _ in range(len(frame))]
    values = [plain_cells(frame[c]) for c in frame.columns]
    keys = dict.fromkeys(columns)
    out = []
    for row in zip(*values, strict=True):
        cells = keys.copy()
        cells.update(zip(columns, row, strict=True))
        out.append(cells)
    return out


def plain_cells(column: pd.Series) -> list[Any]:
    """A column's cells as ``to_dict`` boxes them (pandas' NA in an object column becomes None)."""
    cells = column.tolist()
    if column.dtype == object:
        na = pd.NA
        return [None if v is na else v for v in cells]
    return cells


# --- what the device and the kernel are: matrix math, tensor cores ----------------------------
def is_reduction(row: Row) -> bool:
    """Whether the kernel's name says it is a reduction (``reduce``, ``reduction``)."""
    return any(w in str(row.get("kernel") or "").lower() for w in ("reduce", "reduction"))


def is_matrix_kernel(row: Row) -> bool:
    """A matrix product or convolution, by its name (gemm, matmul, conv, wmma, ...)."""
    return matrix_name(str(row.get("kernel_demangled") or row.get("kernel") or ""))


def is_convolution(row: Row) -> bool:
    """A convolution by its name: cuDNN's (or CUTLASS's implicit GEMM) is its library, not cuBLAS."""
    return "conv" in str(row.get("kernel_demangled") or row.get("kernel") or "").lower()


def tensor_types(row: Row) -> str | None:
    """The tensor-core input types the device's generation offers (None without tensor cores)."""
    cc = compute_capability(row)
    if cc is None or not has_tensor_cores(row):
        return None
    major, minor = cc
    if major == 7:
        return "FP16" if minor < 5 else "FP16 or INT8"
    if major == 8:
        return "TF32, BF16 or FP16" + (" (FP8 from Ada)" if minor == 9 else "")
    return "TF32, BF16, FP16 or FP8" + (" (FP4/FP6 on Blackwell)" if major >= 10 else "")


def has_tensor_cores(row: Row) -> bool:
    """Whether the launch's GPU has tensor cores (by the device table, else its name and CC)."""
    cc = compute_capability(row)
    if cc is None:
        return False
    # Volta and later have tensor cores, except the TU116/TU117 Turing parts (no way to tell them
    # apart by CC: the device table's tensor peak decides where it knows the GPU)
    from ncu_roof import devices

    name = row.get("device") if isinstance(row.get("device"), str) else None
    spec = devices.lookup(name)
    if spec is not None and spec.has_tensor_cores is not None:
        return spec.has_tensor_cores
    if name and _NO_TENSOR_NAME.search(name):
        return False
    return cc >= (7, 0)


# Turing parts without tensor cores (TU116/TU117): GTX 16xx, and the MX450/MX550 laptop chips
_NO_TENSOR_NAME = re.compile(r"GTX\s*16\d\d|\bMX\s*[45]\d0\b|TU11[67]", re.IGNORECASE)
