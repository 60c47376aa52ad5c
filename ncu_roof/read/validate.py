"""Validation: every launch checked against physics and against the report itself.

It runs between reading and the tidy table (:func:`ncu_roof.read.table.load_table`): :func:`check_raw`
on the raw launch frame of one input (any reader: see :mod:`ncu_roof.read.frame`), before
:func:`ncu_roof.read.normalize.normalize`, and :func:`check_tidy` on the tidy rows of that input, once
its device is named (achieved rates against the device's peaks). A value judged damaged becomes
NaN (unknown), never a number; each problem becomes a note on its launch (the ``notes`` column,
``"; "``-joined) and, through :func:`file_notes`, a line in every output's notes.

What is checked (the thresholds are the constants below):

- metric values that are infinite, negative, or larger than any GPU could produce; durations,
  clocks and elapsed cycles that are zero or outside what a GPU can do;
- the duration against elapsed cycles / clock (ncu derives its clocks from both, so they agree
  to 0.1% in real reports): the side that disagrees with the others is judged damaged;
- compute capability, SM count, grid and block sizes that no GPU allows, and a block or grid
  size that disagrees with its dimensions;
- the same launch ID used by two rows: read once where the rows are identical, noted where they
  differ; a launch with fewer metrics than the other launches of its kernel (a cut or damaged
  file), or a last launch with far fewer than every other one;
- after normalizing: achieved DRAM/L2/L1 bandwidth or FLOP rate above the device's peak by more
  than :data:`PEAK_MARGIN`.
"""

from __future__ import annotations

import re
from typing import cast

import numpy as np
import pandas as pd

from ncu_roof import devices
from ncu_roof.read import metrics as M
from ncu_roof.read.frame import IDENTITY_COLUMNS

NOTES = "notes"
# highest achieved/peak ratio seen in the 19 real reports of ../shared/realdata is 0.96 (DRAM);
# above this factor a byte or FLOP count (or the time) is damaged
PEAK_MARGIN = 1.5
TIME_TOLERANCE = 0.25      # duration vs cycles / clock: relative disagreement allowed
MAX_TIME_S = 86400.0       # one day
MIN_TIME_S = 1e-9          # one nanosecond: no kernel launch is shorter
MAX_COUNT = 1e21           # bytes, instructions, cycles: beyond any kernel
CLOCK_RANGE_HZ = (1e6, 5e10)  # DRAM clocks reach 10.8 GHz (GDDR6 of an RTX 2070 SUPER)
SM_RANGE = (1, 1024)
CC_MAJORS = range(1, 16)
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_THREADS_PER_BLOCK = 1024
MAX_SHOWN = 10             # launches listed by name in the file notes

_DIMS = re.compile(r"^\(\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\)$")


class _Notes:
    """Per-launch notes, collected as lists and joined at the end."""

    def __init__(self, index: pd.Index, existing: pd.Series | None) -> None:
        self.index = index
        self.items: dict[object, list[str]] = {}  # only the launches with a note
        if existing is not None:
            for i, text in existing[existing.notna()].items():
                if isinstance(text, str) and text:
                    self.items.setdefault(i, []).append(text)

    def note(self, label: object, text: str) -> None:
        self.items.setdefault(label, []).append(text)

    def add(self, mask: pd.Series, text: str | pd.Series) -> None:
        for i in mask.index[mask.to_numpy(dtype=bool)]:
            self.items.setdefault(i, []).append(text if isinstance(text, str) else str(text[i]))

    def column(self) -> pd.Series:
        if not self.index.is_unique:  # one entry per label, as a dict of every launch holds them
            every = {i: self.items.get(i) for i in self.index}
            return pd.Series({i: "; ".join(v) if v else np.nan for i, v in every.items()}, dtype=object)
        items = self.items
        return pd.Series(["; ".join(items[i]) if i in items else np.nan for i in self.index], index=self.index,
                         dtype=object)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _metric_columns(raw: pd.DataFrame) -> list[str]:
    dtypes = raw.dtypes.tolist() if raw.columns.is_unique else [raw[c].dtype for c in raw.columns]
    return [c for c, dtype in zip(raw.columns, dtypes, strict=True) if c not in IDENTITY_COLUMNS and c != NOTES
            and pd.api.types.is_float_dtype(dtype)]


def check_raw(raw: pd.DataFrame) -> pd.DataFrame:
    """The raw launch frame with damaged values made NaN and a ``notes`` column saying why."""
    raw = raw.reset_index(drop=True).copy()
    attrs = dict(raw.attrs)
    file_level: list[str] = []
    raw = _duplicate_rows(raw, file_level)
    notes = _Notes(raw.index, raw[NOTES] if NOTES in raw else None)
    cols = _metric_columns(raw)
    present = raw[cols].notna().sum(axis=1)  # 0 for every launch where there are no metric columns
    _values(raw, cols, notes)
    _time(raw, notes)
    _identity(raw, notes)
    _cut(raw, present, len(cols), notes)
    raw[NOTES] = notes.column()
    raw.attrs = attrs
    raw.attrs["notes"] = list(attrs.get("notes", [])) + file_level
    return raw


def _duplicate_rows(raw: pd.DataFrame, file_level: list[str]) -> pd.DataFrame:
    """Identical rows of one launch ID: read once; different rows sharing an ID: both kept, noted."""
    if "id" not in raw or not raw["id"].duplicated().any():
        return raw
    same = raw.astype(str).duplicated()
    if same.any():
        kept = raw.astype(str).duplicated(keep=False) & ~same
        raw = raw[~same].reset_index(drop=True)
        kept = kept[~same].reset_index(drop=True)
        once = "this launch's row appears more than once in the input (a joined or edited file?): read once"
        existing = raw[NOTES] if NOTES in raw else pd.Series(np.nan, index=raw.index, dtype=object)
        raw[NOTES] = existing.where(~kept, existing.map(lambda e: once if not isinstance(e, str) else f"{e}; {once}"))
    shared = raw["id"].duplicated(keep=False)
    if shared.any():
        used = raw["id"].map(lambda i: f"launch ID {i} is used by more than one launch (a joined or edited file?)")
        existing = raw[NOTES] if NOTES in raw else pd.Series(np.nan, index=raw.index, dtype=object)
        raw[NOTES] = existing.where(~shared, used.where(existing.isna(), existing.astype(str) + "; " + used))
    return raw


def _kind(metric: str) -> str:
    if metric.endswith(M.CLOCK_SUFFIX):
        return "clock"
    if metric.startswith("gpu__time_duration"):
        return "time"
    if "cycles_elapsed" in metric and not metric.endswith("per_second"):
        return "cycles"
    return "count"


def _values(raw: pd.DataFrame, cols: list[str], notes: _Notes) -> None:
    """Infinite, negative and absurd values -> NaN; zero durations, clocks and cycles -> NaN.
    Judged on all metric columns at once (a full-set report has hundreds)."""
    kinds = np.array([_kind(c) for c in cols], dtype=str)
    values = raw[cols].to_numpy(dtype="float64", na_value=np.nan)
    bad = np.zeros(values.shape, dtype=bool)
    judged = _suspect_columns(values, kinds)
    if judged.any():
        bad[:, judged] = _impossible(values[:, judged], kinds[judged])
    index = raw.index.tolist()
    for j in np.flatnonzero(bad.any(axis=0)):
        col, rows = cols[j], np.flatnonzero(bad[:, j])
        what = {"time": "a duration", "clock": "a clock", "cycles": "an elapsed-cycle count"}.get(kinds[j], "a value")
        for i in rows:
            notes.note(index[i], f"{col} = {_fmt(values[i, j])} is not possible as {what}: unknown")
        raw[col] = raw[col].where(~bad[:, j])


def _impossible(values: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Where ``values`` (launches x metrics of the ``kinds``) are not possible: see :func:`_values`."""
    time, clock, cycles = (kinds == k for k in ("time", "clock", "cycles"))
    bad = np.isinf(values) | (values < 0) | (values > np.where(time, MAX_TIME_S, MAX_COUNT))
    bad |= np.where(time, values < MIN_TIME_S,  # no counter, rate or percent of ncu's is this small and not zero
                    (values > 0) & (values < 1e-12))
    bad |= cycles & (values == 0)
    bad |= clock & ((values < CLOCK_RANGE_HZ[0]) | (values > CLOCK_RANGE_HZ[1]))
    return bad


def _suspect_columns(values: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """The metrics whose smallest or largest value could be one :func:`_impossible` finds (a
    superset: zero counts are judged in full); every value of the others lies between bounds that
    are possible, so judging only these finds the same values (a whole full-set report's matrix
    cost ten times more)."""
    if not len(values):
        return np.zeros(values.shape[1], dtype=bool)
    time, clock = kinds == "time", kinds == "clock"
    lo, hi = np.fmin.reduce(values, axis=0), np.fmax.reduce(values, axis=0)  # NaN only where all are NaN
    suspect = np.isinf(lo) | np.isinf(hi) | (lo < np.where(time, MIN_TIME_S, 1e-12))
    suspect |= hi > np.where(time, MAX_TIME_S, MAX_COUNT)
    suspect |= clock & ((lo < CLOCK_RANGE_HZ[0]) | (hi > CLOCK_RANGE_HZ[1]))
    return suspect


def _time(raw: pd.DataFrame, notes: _Notes) -> None:
    """The duration against each (elapsed cycles / clock) the launch has. Where some estimate
    agrees with the duration, the duration is trusted and the cycle counts that disagree are
    damaged; where none does but two or more agree among themselves, the duration is damaged
    (the cycles and clocks are trusted, and the tidy table takes the time from them); where one
    estimate alone disagrees, nothing tells which side is damaged and both become unknown."""
    if M.TIME not in raw:
        return
    pairs = [(c, k) for c, k in M.TIME_CHECKS if c in raw and k in raw]
    if not pairs:
        return
    time = raw[M.TIME]
    est = pd.DataFrame({c: raw[c] / raw[k] for c, k in pairs}, index=raw.index)
    count = est.notna().sum(axis=1)
    ref = est.median(axis=1)
    consistent = ((est.sub(ref, axis=0).abs().le(TIME_TOLERANCE * ref, axis=0)) | est.isna()).all(axis=1)
    agree = est.sub(time, axis=0).abs().le(TIME_TOLERANCE * time, axis=0)
    any_agree = agree.any(axis=1)
    judged = time.notna() & (count > 0)
    time_bad = judged & ~any_agree & consistent & (count >= 2)
    unclear = judged & ~any_agree & ~time_bad
    names = {c: f"{c} / {k}" for c, k in pairs}
    if time_bad.any():
        notes.add(time_bad, pd.Series(
            [f"duration {_fmt(t)} s disagrees with elapsed cycles / clock = {_fmt(r)} s: the cycles and clock "
             "are trusted, the duration is taken from them" for t, r in zip(time, ref, strict=True)], index=raw.index))
    if unclear.any():
        notes.add(unclear, pd.Series(
            [f"duration {_fmt(t)} s disagrees with {' and '.join(names.values())} = {_fmt(r)} s and nothing tells "
             "which is damaged: both unknown" for t, r in zip(time, ref, strict=True)], index=raw.index))
    raw[M.TIME] = time.where(~(time_bad | unclear))
    for c, _k in pairs:
        wrong = (judged & any_agree & est[c].notna() & ~agree[c]) | (unclear & est[c].notna())
        notes.add(wrong & ~unclear, f"{names[c]} disagrees with the duration: {c} is judged damaged (unknown)")
        raw[c] = raw[c].where(~wrong)


def parse_dims(text: object) -> tuple[int, int, int] | None:
    """``(x, y, z)`` of a grid or block text ``"(8, 32, 1)"``; None where it is not one."""
    match = _DIMS.match(text.strip()) if isinstance(text, str) else None
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _dims_ok(dims: tuple[int, int, int], limits: tuple[int, int, int], total: int | None) -> bool:
    within = all(1 <= d <= m for d, m in zip(dims, limits, strict=True))
    return within and (total is None or dims[0] * dims[1] * dims[2] <= total)


def _identity(raw: pd.DataFrame, notes: _Notes) -> None:
    _cc(raw, notes)
    if "id" in raw:  # ncu numbers launches from 0
        negative = pd.to_numeric(raw["id"], errors="coerce") < 0
        if negative.any():
            notes.add(negative, raw["id"][negative].map(
                lambda i: f"launch ID {i} is negative (ncu numbers launches from 0): an edited file?"))
    if M.SM_COUNT in raw:
        sms = raw[M.SM_COUNT]
        bad = sms.notna() & ((sms < SM_RANGE[0]) | (sms > SM_RANGE[1]) | (sms != sms.round()))
        notes.add(bad, sms[bad].map(lambda v: f"SM count {_fmt(v)} is not possible: unknown"))
        raw[M.SM_COUNT] = sms.where(~bad)
    for label, column, parts, size, limits, total in (
        ("block", "block_dim", M.BLOCK_DIMS, M.BLOCK_SIZE, MAX_BLOCK, MAX_THREADS_PER_BLOCK),
        ("grid", "grid_dim", M.GRID_DIMS, M.GRID_SIZE, MAX_GRID, None),
    ):
        _launch_shape(raw, notes, label, column, parts, size, limits, total)


def _cc(raw: pd.DataFrame, notes: _Notes) -> None:
    def valid(cc: object) -> bool | None:
        if not isinstance(cc, str) or not cc.strip():
            return None
        match = re.fullmatch(r"(\d+)\.(\d)", cc.strip())
        return bool(match) and int(match[1]) in CC_MAJORS  # type: ignore[index]

    if "cc" not in raw:
        return
    ok = raw["cc"].map({c: valid(c) for c in raw["cc"].unique()})
    bad = ok.eq(False)
    major, minor = raw.get(M.CC_MAJOR), raw.get(M.CC_MINOR)
    if major is not None and minor is not None:
        bad_metric = (major.notna() & ~major.isin(list(CC_MAJORS))) | (minor.notna() & ((minor < 0) | (minor > 9)))
        bad |= bad_metric
    if "device" in raw:  # a CC the named device does not have
        known = {d: getattr(devices.lookup(d), "cc", None)
                 for d in raw["device"].dropna().unique() if isinstance(d, str)}
        spec_cc = raw["device"].map(known)
        bad |= ok.eq(True) & spec_cc.notna() & (spec_cc != raw["cc"])
    if bad.any():
        notes.add(bad, raw["cc"][bad].map(lambda c: f"compute capability {c} is not possible for this launch: unknown"))
        raw["cc"] = raw["cc"].where(~bad)
        for col in (M.CC_MAJOR, M.CC_MINOR):
            if col in raw:
                raw[col] = raw[col].where(~bad)


def _launch_shape(raw: pd.DataFrame, notes: _Notes, label: str, column: str, parts: tuple[str, ...],
                  size: str, limits: tuple[int, int, int], total: int | None) -> None:
    has_text, has_parts = column in raw, all(p in raw for p in parts)
    keys = ([raw[column]] if has_text else []) + ([raw[p] for p in parts] if has_parts else [])
    inverse, first = _combinations(keys, len(raw))
    shapes = np.empty(len(first), dtype=object)  # each distinct launch shape read and judged once
    for k, i in enumerate(first.tolist()):  # one by one: numpy would take a list of 3-tuples for a 2-D array
        shapes[k] = _shape_of([key.iat[i] for key in keys], has_text, has_parts)
    judged = [(d is not None and not _dims_ok(d, limits, total), float(np.prod(d)) if d is not None else np.nan)
              for d in shapes]
    dims = pd.Series(shapes[inverse], index=raw.index, dtype=object)
    bad_dims = pd.Series(np.array([bad for bad, _ in judged], dtype=bool)[inverse], index=raw.index, dtype=bool)
    if bad_dims.any():
        notes.add(bad_dims, dims[bad_dims].map(lambda d: f"{label} size {d} is not possible: unknown"))
        if column in raw:
            raw[column] = raw[column].where(~bad_dims)
        for p in parts:
            if p in raw:
                raw[p] = raw[p].where(~bad_dims)
    if size in raw:
        product = pd.Series(np.array([n for _, n in judged], dtype=float)[inverse], index=raw.index,
                            dtype=float).where(~bad_dims)
        count = raw[size]
        limit = (total or float(np.prod(limits)))
        wrong = count.notna() & ((count < 1) | (count > limit) | (product.notna() & (count != product)))
        if wrong.any():
            notes.add(wrong, count[wrong].map(lambda v: f"{size} = {_fmt(v)} is not possible or disagrees with the "
                                                         f"{label} dimensions: unknown"))
            raw[size] = count.where(~wrong)


def _combinations(columns: list[pd.Series], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's number among the distinct combinations of ``columns``' values (NaN a value too),
    and the first row of each combination; one combination of no values where there are no columns."""
    if not columns or not rows:
        return np.zeros(rows, dtype=np.intp), np.zeros(min(rows, 1), dtype=np.intp)
    combined = np.zeros(rows, dtype=np.int64)
    for column in columns:
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        combined = combined * (len(uniques) + 1) + codes
        combined = pd.factorize(combined)[0].astype(np.int64)  # renumbered: the products stay small
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return inverse.reshape(-1), first


def _shape_of(values: list[object], has_text: bool, has_parts: bool) -> tuple[int, int, int] | None:
    """A launch's grid or block shape: from its text (``"(8, 32, 1)"``), else from its three
    dimension metrics where it has all of them."""
    dims = parse_dims(values[0]) if has_text else None
    if dims is None and has_parts:
        parts = values[1:] if has_text else values
        if not all(x == x for x in parts):  # a dimension NaN
            return None
        x, y, z = (int(cast(float, v)) for v in parts)  # metric columns hold floats
        return x, y, z
    return dims


def _cut(raw: pd.DataFrame, present: pd.Series, total: int, notes: _Notes) -> None:
    """Launches with fewer metrics than the other launches of their kernel (or, for the last one,
    than every other launch): a file cut short or damaged."""
    if len(raw) < 2 or total == 0:
        return
    kernel = raw["kernel"].fillna("") if "kernel" in raw else pd.Series("", index=raw.index)
    most = present.groupby(kernel).transform("max")
    fewer = present < most
    last = raw.index[-1]
    others = present.drop(last)
    # a report's own container check catches its truncation; launches of different kernels may
    # hold different sections there, so only a CSV's last launch is held to every other one
    export = not str(raw["report"].iloc[-1]).endswith((".ncu-rep", ".ncu-repz")) if "report" in raw else True
    if export and present[last] < 0.75 * others.min():
        fewer[last] = True
        most[last] = max(most[last], others.min())
    if fewer.any():
        text = pd.Series([f"has {n} of the {m} metrics other launches have (a cut or damaged file?): "
                          "the rest is unknown" for n, m in zip(present, most, strict=True)], index=raw.index)
        notes.add(fewer, text)


# --- after normalizing: rates against the device's peaks --------------------------------------
_RATES = (
    ("dram_bytes", "peak_dram_bytes_per_s", "dram_bytes_per_s", "DRAM bandwidth"),
    ("l2_bytes", "peak_l2_bytes_per_s", None, "L2 bandwidth"),
    ("l1_bytes", "peak_l1_bytes_per_s", None, "L1 bandwidth"),
    ("flops_fp64", "peak_fp64_flops_per_s", "fp64_flops_per_s", "FP64 rate"),
    ("flops_fp32", "peak_fp32_flops_per_s", "fp32_flops_per_s", "FP32 rate"),
    ("flops_fp16", "peak_fp16_flops_per_s", "fp16_flops_per_s", "FP16 rate"),
)


def check_tidy(tidy: pd.DataFrame) -> pd.DataFrame:
    """Achieved rates above the device's peak by more than :data:`PEAK_MARGIN`: the count (or,
    where several are, the duration) is judged damaged and becomes unknown."""
    if tidy.empty:
        return tidy
    notes = _Notes(tidy.index, tidy[NOTES] if NOTES in tidy else None)
    known = {d: devices.lookup(d) for d in tidy["device"].dropna().unique() if isinstance(d, str)}
    over: dict[str, pd.Series] = {}
    ratios: dict[str, pd.Series] = {}
    for count, peak_col, spec_attr, _what in _RATES:
        if count not in tidy:
            continue
        peak = tidy[peak_col] if peak_col in tidy else pd.Series(np.nan, index=tidy.index)
        if spec_attr is not None:
            by_device = {d: getattr(spec, spec_attr, None) for d, spec in known.items()}  # once per device
            peak = peak.fillna(tidy["device"].map(by_device).astype("float64"))
        ratio = tidy[count] / tidy["time_s"] / peak.where(peak > 0)
        ratios[count] = ratio
        over[count] = ratio > PEAK_MARGIN
    if not over:
        return tidy
    table = pd.DataFrame(over).fillna(False).astype(bool)
    several = table.sum(axis=1) > 1
    if several.any():
        over_names = table.apply(lambda row: ", ".join(w for c, _, _, w in _RATES if row.get(c, False)), axis=1)
        notes.add(several, over_names.map(lambda w: f"achieved {w} are all above the device's peaks by more than "
                                              f"{PEAK_MARGIN}x: the duration is judged damaged (unknown)"))
        tidy["time_s"] = tidy["time_s"].where(~several)
    for count, _peak, _spec, what in _RATES:
        if count not in over:
            continue
        one = table[count] & ~several
        if one.any():
            notes.add(one, ratios[count].map(
                lambda r, c=count, w=what: f"achieved {w} is {_fmt(r)}x the device's peak: {c} is judged damaged "
                                           "(unknown)"))
            tidy[count] = tidy[count].where(~one)
    _refresh(tidy)
    tidy[NOTES] = notes.column()
    return tidy


def _refresh(tidy: pd.DataFrame) -> None:
    from ncu_roof.read.normalize import PRECISIONS, missing_column

    tidy["flops"] = tidy[[f"flops_{p}" for p in (*PRECISIONS, "tensor")]].sum(axis=1, min_count=1)
    tidy["missing"] = missing_column(tidy)


def file_notes(table: pd.DataFrame) -> list[str]:
    """One line per launch with notes (the first :data:`MAX_SHOWN`), then how many more."""
    if NOTES not in table or table.empty:
        return []
    noted = table[table[NOTES].notna() & (table[NOTES].astype(str) != "")]
    lines = [f"launch {row['id']} ({row['kernel']}): {row[NOTES]}" for _, row in noted.head(MAX_SHOWN).iterrows()]
    if len(noted) > MAX_SHOWN:
        lines.append(f"{len(noted) - MAX_SHOWN} more launch(es) have notes: see the notes column of "
                     "`ncu-roof table`")
    return lines


# quantities whose stand-in sources (a ratio or a rate instead of the direct counter) are said
REBUILT = {"time_s": "gpu__time_duration.sum", "dram_bytes": "DRAM byte or sector counter"}


def rebuilt_notes(table: pd.DataFrame) -> list[str]:
    """A note per quantity that some launches got from a stand-in (duration from cycles and clock,
    bytes from a rate times the duration) because the input lacks the direct counter."""
    from ncu_roof.read.metrics import quantity, sources_of

    notes = []
    for name, direct in REBUILT.items():
        src = f"{name}_src"
        if src not in table:
            continue
        kinds = {s.label: s.kind for s in sources_of(quantity(name))}
        stand_in = table[src].astype(str).map(kinds).isin(("ratio", "per_second"))
        if not stand_in.any():
            continue
        labels = sorted({str(v) for v in table.loc[stand_in, src]})
        notes.append(f"{name} of {int(stand_in.sum())} of {len(table)} launches rebuilt from {' or '.join(labels)}: "
                     f"the input has no {direct} for them (a derived figure: it can differ slightly from the counter)")
    return notes

