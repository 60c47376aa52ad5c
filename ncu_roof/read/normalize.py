"""Raw launch frame -> tidy table: one row per launch, quantities in base units.

Each catalogue quantity is filled from the first source whose metrics a launch has
(vectorised over all launches); tracked quantities keep the label of the source used in a
``<name>_src`` column. FLOPs per precision are built from instruction counts with
``metrics.FLOP_WEIGHTS`` (FMA = 2 FLOPs); tensor FLOPs from ``sm__ops_path_tensor_*`` or, as a
labelled approximation, from tensor-pipe instructions. Unknown values stay NaN, never 0.
"""

from __future__ import annotations

import re
from typing import TypeAlias

import numpy as np
import pandas as pd

from ncu_roof.read import metrics
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.kernel_names import mma_instruction_flops

# The quantities whose absence a user should hear about, and what captures them.
KEY_QUANTITIES: dict[str, str] = {
    "time_s": "gpu__time_duration.sum",
    "dram_bytes": "dram__bytes_read.sum + dram__bytes_write.sum (or dram__bytes.sum.per_second)",
    "l2_bytes": "lts__t_bytes.sum (or lts__t_sectors.sum)",
    "l1_bytes": "l1tex__t_bytes.sum",
    "flops": "smsp__sass_thread_inst_executed_op_{d,f,h}{fma,add,mul}_pred_on.sum",
    "roof": "peaks: a report with the roofline sections, a device the table knows (--device NAME) or --ceilings FILE",
}
PRECISIONS = ("fp64", "fp32", "fp16")
TENSOR_DTYPES = ("fp16", "bf16", "tf32", "fp64", "fp8", "int8", "int4", "int1")


Columns: TypeAlias = "pd.DataFrame | dict[str, np.ndarray | pd.Series]"  # the table being built, or its columns so far


class _RawMetrics:
    """The raw frame's metric columns as float64 arrays, converted once each when first asked for
    (quantities are resolved on plain arrays: a pandas operation per source costs more than the data)."""

    def __init__(self, raw: pd.DataFrame) -> None:
        self.raw, self.index = raw, raw.index
        self._arrays: dict[str, np.ndarray] = {}

    def __contains__(self, metric: str) -> bool:
        return metric in self.raw.columns

    def __getitem__(self, metric: str) -> np.ndarray:
        if metric not in self._arrays:
            column = self.raw[metric]
            try:
                self._arrays[metric] = column.to_numpy(dtype="float64", na_value=np.nan)
            except (TypeError, ValueError):  # text where a number belongs: unknown
                self._arrays[metric] = pd.to_numeric(column, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        return self._arrays[metric]


def _column(out: Columns, name: str) -> np.ndarray:
    return np.asarray(out[name], dtype="float64")


def _source_values(raw: _RawMetrics, out: Columns, src: metrics.Source) -> np.ndarray | None:
    if src.kind == "max":  # the largest of the terms the report has, given its first two
        if any(t.metric not in raw for t in src.terms[:2]):
            return None
        present = np.vstack([raw[t.metric] * t.weight for t in src.terms if t.metric in raw])
        with np.errstate(invalid="ignore"):
            return np.where(np.isnan(present).all(axis=0), np.nan,
                            np.nanmax(np.where(np.isnan(present), -np.inf, present), axis=0))
    if any(t.metric not in raw for t in src.terms):
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        if src.kind == "ratio":
            numerator, denominator = (raw[t.metric] * t.weight for t in src.terms)
            return numerator / np.where(denominator > 0, denominator, np.nan)
        total = sum(raw[t.metric] * t.weight for t in src.terms)
        assert isinstance(total, np.ndarray)
        if src.kind == "per_second":
            return total * _column(out, "time_s")
        if src.kind in ("per_cycle", "peak"):
            assert src.cycles is not None
            return total * _column(out, src.cycles) if src.cycles in out else None
        return total


def _resolve(raw: _RawMetrics, out: Columns, q: metrics.Quantity,
             active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A quantity's values and source labels (pd.NA where unknown): each launch from the first
    source it has; ``active`` (where given) marks the launches whose source is read over the SMs'
    active cycles (its label ends with :data:`~ncu_roof.read.metrics.ACTIVE_SUFFIX`)."""
    value = np.full(len(raw.index), np.nan)
    label = np.full(len(raw.index), pd.NA, dtype=object)
    for src in metrics.sources_of(q):
        candidate = _source_values(raw, out, src)
        if candidate is None:
            continue
        fill = np.isnan(value) & ~np.isnan(candidate)
        if fill.any():
            value = np.where(fill, candidate, value)
            label[fill] = src.label
            if active is not None and src.label.endswith(metrics.ACTIVE_SUFFIX):
                active |= fill  # each launch is filled once: from its first source
        if not np.isnan(value).any():
            break
    return value, label


def definition_tag(label: object) -> str | None:
    """``"... [l2:lts2xbar]"`` -> ``"l2:lts2xbar"``: the definition a source label names."""
    text = str(label) if isinstance(label, str) else ""
    return text.rsplit("[", 1)[1].rstrip("]") if text.endswith("]") and "[" in text else None


def _by_definition(raw: _RawMetrics, out: pd.DataFrame, name: str) -> dict[str, tuple[pd.Series, pd.Series]]:
    """Per definition tag, the first available value (and its source label) of a quantity."""
    found: dict[str, tuple[pd.Series, pd.Series]] = {}
    for src in metrics.sources_of(metrics.quantity(name)):
        tag, candidate = definition_tag(src.label), _source_values(raw, out, src)
        if tag is None or candidate is None:
            continue
        value, label = found.get(tag, (pd.Series(np.nan, index=out.index, dtype="float64"),
                                       pd.Series(pd.NA, index=out.index, dtype="object")))
        fill = value.isna() & ~np.isnan(candidate)
        found[tag] = (value.where(~fill, pd.Series(candidate, index=out.index)), label.where(~fill, src.label))
    return found


_PAIRED = frozenset(kind for level in ("l2", "l1")
                     for kind in (f"{level}_bytes", f"peak_{level}_bytes_per_s"))


def _pair_level_with_roof(raw: _RawMetrics, out: pd.DataFrame, level: str) -> None:
    """L2/L1 bytes and their roof from the same definition: the first definition the launch has
    both for, else the first it has bytes for (and no roof). Mixing lts__t_bytes traffic with an
    lts2xbar roof would misplace the point."""
    data, roofs = _by_definition(raw, out, f"{level}_bytes"), _by_definition(raw, out, f"peak_{level}_bytes_per_s")
    if not data:  # no traffic counter of this level: keep whichever roof the report holds
        name = f"peak_{level}_bytes_per_s"
        peak, source = _resolve(raw, out, metrics.quantity(name))
        out[name], out[f"{name}_src"] = peak, pd.Series(source, index=out.index, dtype="object")
        return
    nan = pd.Series(np.nan, index=out.index, dtype="float64")
    none = pd.Series(pd.NA, index=out.index, dtype="object")
    chosen = pd.Series(False, index=out.index)
    cols = {k: (nan.copy(), none.copy()) for k in ("bytes", "roof")}
    for paired in (True, False):
        for tag, (value, label) in data.items():
            roof, roof_label = roofs.get(tag, (nan, none))
            take = ~chosen & value.notna() & (roof.notna() if paired else True)
            for key, (v, lab) in (("bytes", (value, label)), ("roof", (roof, roof_label))):
                cols[key] = (cols[key][0].where(~take, v), cols[key][1].where(~take, lab))
            chosen |= take
    out[f"{level}_bytes"], out[f"{level}_bytes_src"] = cols["bytes"]
    out[f"peak_{level}_bytes_per_s"], out[f"peak_{level}_bytes_per_s_src"] = cols["roof"]


def _flops(out: pd.DataFrame, precision: str) -> tuple[pd.Series, pd.Series]:
    weights = metrics.FLOP_WEIGHTS[precision]
    total = sum(out[f"inst_{op}"] * w for op, w in weights.items())
    assert isinstance(total, pd.Series)
    terms = " + ".join(f"{w:g}*{op}" for op, w in weights.items())
    label = f"{terms} [fp16:ncu]" if precision == "fp16" else terms
    # numpy's stubs do not take None as a scalar choice in np.where (it is fine at run time)
    labels = np.where(total.notna(), label, None)  # type: ignore[call-overload]
    return total, pd.Series(labels, index=out.index, dtype="object")


def _tensor_variants(columns: pd.Index) -> list[str]:
    """Tensor-op variants to sum, without double counting aggregates and their breakdowns."""
    variants = sorted({v for c in columns if (v := metrics.tensor_variant(c)) is not None})
    aggregates = [v for v in variants if v.startswith("src_")] or variants
    return [v for v in aggregates if not any(v != o and v.startswith(o + "_") for o in aggregates)]


def _tensor(raw: pd.DataFrame, out: pd.DataFrame) -> None:
    variants = _tensor_variants(raw.columns)
    ops_by_variant: dict[str, pd.Series] = {}
    for v in variants:
        base = f"sm__ops_path_tensor_{v}.sum"
        if base in raw:
            ops_by_variant[v] = raw[base]
        elif f"{base}.per_cycle_elapsed" in raw:
            ops_by_variant[v] = raw[f"{base}.per_cycle_elapsed"] * out["sm_cycles"]
    flops = pd.Series(np.nan, index=raw.index, dtype="float64")
    label = pd.Series(pd.NA, index=raw.index, dtype="object")
    if ops_by_variant:
        frame = pd.DataFrame(ops_by_variant)
        flops = frame.sum(axis=1, min_count=1)
        label = label.where(flops.isna(), "sum of sm__ops_path_tensor_* [tensor:ops]")
        dominant = frame.fillna(-1).idxmax(axis=1).where(flops > 0)
        out["tensor_precision"] = dominant.map(lambda v: metrics.tensor_precision(v) if isinstance(v, str) else None)
    per_inst = out["cc"].map(lambda cc: metrics.TENSOR_FLOPS_PER_INST.get(str(cc), np.nan)).astype("float64")
    basis = pd.Series("per CC", index=raw.index, dtype="object")
    if "kernel_demangled" in raw:  # the instruction shape a GEMM's name spells (CUTLASS's 16x8x8 on an A100),
        # from Turing on, where one mma.sync is one tensor instruction (Volta's is issued per quad pair)
        named = raw["kernel_demangled"].map({n: mma_instruction_flops(n) for n in raw["kernel_demangled"].unique()})
        named = named.astype("float64").where(pd.to_numeric(out["cc"].astype("object"), errors="coerce") >= 7.5)
        per_inst = named.where(named.notna(), per_inst)
        basis = basis.where(named.isna(), "the instruction shape in the kernel's name")
    for inst in metrics.TENSOR_INST_METRICS:
        if inst in raw:
            fill = flops.isna() & raw[inst].notna() & per_inst.notna()
            flops = flops.where(~fill, raw[inst] * per_inst)
            texts = [f"{n:g} x {inst} ({b}) [tensor:inst]"
                     for n, b in zip(per_inst.tolist(), basis.tolist(), strict=True)]
            label = label.where(~fill, pd.Series(texts, index=raw.index, dtype="object"))
    out["flops_tensor"], out["flops_tensor_src"] = flops, label
    _tensor_peaks(raw, out, variants)


def _tensor_peaks(raw: pd.DataFrame, out: pd.DataFrame, variants: list[str]) -> None:
    """Dense tensor roofs per input data type: peak ops per cycle x SM clock."""
    for dtype in TENSOR_DTYPES:
        cols = [f"sm__ops_path_tensor_{v}.sum.peak_sustained" for v in variants
                if metrics.tensor_precision(v) == dtype and "sparsity_on" not in v]
        cols = [c for c in cols if c in raw]
        if cols and "sm_clock_hz" in out:
            out[f"peak_tensor_{dtype}_flops_per_s"] = raw[cols].max(axis=1) * out["sm_clock_hz"]


_DIMS = re.compile(r"-?\d+")


def _dims_product(dims: pd.Series) -> pd.Series:
    def product(text: object) -> float:
        if not isinstance(text, str):
            return np.nan
        numbers = [int(x) for x in _DIMS.findall(text)]
        return float(np.prod(numbers)) if numbers else np.nan

    return dims.map({u: product(u) for u in dims.unique()}).astype("float64")  # each distinct shape once


def _missing(out: pd.DataFrame) -> pd.Series:
    flops_known = out[[f"flops_{p}" for p in PRECISIONS]].notna().any(axis=1) | out["flops_tensor"].notna()
    known = {
        "time_s": out["time_s"].notna(),
        "dram_bytes": out["dram_bytes"].notna(),
        "l2_bytes": out["l2_bytes"].notna(),
        "l1_bytes": out["l1_bytes"].notna(),
        "flops": flops_known,
    }
    names = list(known)
    lacking = np.column_stack([~v.to_numpy(dtype=bool) for v in known.values()])
    codes = lacking @ (1 << np.arange(len(names)))  # each combination of lacks once
    text = {int(c): ",".join(n for i, n in enumerate(names) if int(c) >> i & 1) for c in np.unique(codes)}
    return pd.Series([text[int(c)] for c in codes], index=out.index, dtype="object")


def _to_elapsed_basis(cols: dict[str, np.ndarray | pd.Series], on_active: dict[str, np.ndarray]) -> None:
    """Busy shares read over the SMs' active cycles (``on_active``: the launches whose source reads
    them so, by quantity), scaled to elapsed cycles (the SMs' active share of them) where both cycle
    counts are known; shares read over elapsed cycles stay as they are."""
    active, elapsed = (np.asarray(cols[c], dtype="float64") for c in ("sm_active_cycles", "sm_cycles"))
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.clip(active / np.where(elapsed > 0, elapsed, np.nan), 0.0, 1.0)
    for name, on in on_active.items():
        scale = np.where(on & ~np.isnan(fraction), fraction, 1.0)
        cols[name] = np.asarray(cols[name], dtype="float64") * scale


def missing_column(out: pd.DataFrame) -> pd.Series:
    """The ``missing`` column: the key quantities each launch lacks."""
    return _missing(out) if len(out) else pd.Series(dtype="object")


def normalize(raw: pd.DataFrame) -> pd.DataFrame:
    """The tidy table (columns documented in the README) from a raw launch frame."""
    raw = raw.reset_index(drop=True)
    out = pd.DataFrame({c: raw[c] if c in raw else pd.Series(pd.NA, index=raw.index, dtype="object")
                        for c in IDENTITY_COLUMNS})
    cols: dict[str, np.ndarray | pd.Series] = {}  # built apart and joined once (a column at a time fragments the frame)
    raw_metrics = _RawMetrics(raw)
    on_active: dict[str, np.ndarray] = {}  # by quantity read over elapsed cycles: its launches read over active ones
    for q in metrics.QUANTITIES:
        active = np.zeros(len(raw), dtype=bool) if q.name in metrics.ELAPSED_BASIS else None
        if q.name in _PAIRED:  # filled once, per definition, by _pair_level_with_roof below
            value, label = np.full(len(raw), np.nan), np.full(len(raw), pd.NA, dtype=object)
        else:
            value, label = _resolve(raw_metrics, cols, q, active)
        cols[q.name] = value
        if active is not None:
            on_active[q.name] = active
        if q.tracked:  # labels stay object columns (pandas would make text arrays its string dtype)
            cols[f"{q.name}_src"] = pd.Series(label, index=raw.index, dtype="object")
    _to_elapsed_basis(cols, on_active)
    out = pd.concat([out, pd.DataFrame(cols, index=raw.index)], axis=1)
    for level in ("l2", "l1"):
        _pair_level_with_roof(raw_metrics, out, level)
    for column, dims in (("grid_size", "grid_dim"), ("block_size", "block_dim")):
        out[column] = out[column].fillna(_dims_product(out[dims]))
    # achieved occupancy from the warps resident per active cycle, where its percent was not captured
    warps = out["achieved_warps_per_sm"] / out["max_warps_per_sm"].where(out["max_warps_per_sm"] > 0)
    out["achieved_occupancy_pct"] = out["achieved_occupancy_pct"].fillna(100.0 * warps)
    for precision in PRECISIONS:
        out[f"flops_{precision}"], out[f"flops_{precision}_src"] = _flops(out, precision)
    out["tensor_precision"] = pd.Series(pd.NA, index=raw.index, dtype="object")
    _tensor(raw, out)
    out["flops"] = out[[f"flops_{p}" for p in (*PRECISIONS, "tensor")]].sum(axis=1, min_count=1)
    out["peak_fp32_nofma_flops_per_s"] = out["peak_fp32_flops_per_s"] / 2.0
    out["missing"] = missing_column(out)
    if "notes" in raw:  # what validation (ncu_roof.read.validate) found wrong with each launch
        out["notes"] = raw["notes"].astype(object)
    out.attrs.update(raw.attrs)
    return out
