"""Built-in device table: spec-sheet roofs for reports that do not carry their own peaks.

The table lives in ``ncu_roof/data/devices.toml``: one ``[[device]]`` per GPU model, keyed by the
name Nsight Compute reports (``device__attribute_display_name``), with other spellings seen in the
wild as ``aliases``. Every number is a dense (no 2:4 sparsity) peak in base units: FLOP/s (an FMA
counts as 2), op/s, bytes/s, bytes, Hz. A field the table leaves out is ``None`` here.

``tensor_fp16_flops_per_s`` is FP16 inputs with FP32 accumulate; on GeForce parts that is half the
FP16-accumulate figure, which is kept separately as ``tensor_fp16_acc16_flops_per_s``.

Two derived lookups sit on top of the table (see :func:`lookup`):

* **MIG slices** ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "... MIG 1c.3g.20gb"): the parent GPU's
  entry scaled to the slice -- compute by ``g / mig_compute_slices`` (7 on A100/H100, 4 on A30),
  DRAM bandwidth and L2 by the slice's share of the memory slices (``size / mig_memory_gb``,
  rounded to whole memory slices, e.g. A100-40GB: 1g.5gb = 1/8, 3g.20gb = 4/8). The result has
  ``mig`` set to the profile and ``sm_count`` ``None`` (the real SM count of a slice is not g/7 of
  the GPU's: an A100 1g slice has 14 of 108 SMs, so the g/7 compute roof is ~10% high; a report's
  own SM count is better where it has one). Parents without ``mig_*`` figures (Blackwell, whose
  slice layout is not in the table) and profiles that do not map onto whole slices give ``None``.
* **Memory-size variants** ("NVIDIA A100 PCIe 64GB"): a name missing from the table whose key
  differs from table entries only by a memory-size word matches them only when every such entry is
  marked ``memory_variants_share_compute`` and their compute figures agree. The result carries those
  compute figures but no DRAM bandwidth (the variant's is not known). Laptop, Ti, SUPER and D words
  are never dropped, so they never fall back to another product.

No pandas here: this module is imported by cheap code paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from ncu_roof.tomlfile import parsed_data_toml

__all__ = [
    "TENSOR_KINDS", "DeviceSpec", "find_devices", "load_cuda_gpus", "load_devices", "lookup",
    "lookup_by_cc_and_sms", "normalize_name", "runs_at_base_clock", "sharing",
]

_DATA_FILE = "devices.toml"
_GPU_LIST_FILE = "cuda_gpus.toml"


@dataclass(frozen=True)
class DeviceSpec:
    """Peak figures for one GPU model (dense, base units; ``None`` where not known)."""

    name: str
    aliases: tuple[str, ...] = ()
    # names ncu reports for this GPU that other entries share (every Jetson Orin module is "Orin"):
    # never a lookup key, resolved by SM count (:func:`sharing`)
    reported_as: tuple[str, ...] = ()
    cc: str | None = None
    sm_count: int | None = None
    boost_clock_hz: float | None = None
    base_clock_hz: float | None = None
    l2_bytes: float | None = None
    dram_bytes_per_s: float | None = None
    fp64_flops_per_s: float | None = None
    fp32_flops_per_s: float | None = None
    fp16_flops_per_s: float | None = None
    tensor_fp16_flops_per_s: float | None = None
    tensor_fp16_acc16_flops_per_s: float | None = None
    tensor_bf16_flops_per_s: float | None = None
    tensor_tf32_flops_per_s: float | None = None
    tensor_fp8_flops_per_s: float | None = None
    tensor_int8_ops_per_s: float | None = None
    tensor_fp64_flops_per_s: float | None = None
    tensor_fp4_flops_per_s: float | None = None
    # the tensor-core input kinds the GPU has ("fp16", "int8", "tf32", "bf16", "fp8", "fp6", "fp4",
    # "int4", "fp64"); () = no tensor cores; None = not recorded
    tensor_kinds: tuple[str, ...] | None = None
    source: str | None = None
    notes: str | None = None
    # MIG: the profile ("1g.5gb") when this spec is a MIG slice scaled from its parent, else None
    mig: str | None = None
    # on a MIG-capable parent: compute slices (g of "7g"), memory slices, memory size of the
    # full-GPU profile in GB as profile names count it (A100-40GB: 7, 8, 40)
    mig_compute_slices: int | None = None
    mig_memory_slices: int | None = None
    mig_memory_gb: float | None = None
    # other memory sizes of this product (same name but the "NNGB" word) have identical compute
    memory_variants_share_compute: bool = False

    @property
    def has_tensor_cores(self) -> bool | None:
        """Whether the GPU has tensor cores: its recorded kinds, else a tensor peak; ``None``
        when the table says neither."""
        if self.tensor_kinds is not None:
            return bool(self.tensor_kinds)
        return True if self.tensor_fp16_flops_per_s else None

    @property
    def ridge_fp32(self) -> float | None:
        """FP32 ridge point (FLOP/byte against DRAM), or ``None`` when a peak is missing."""
        if not self.fp32_flops_per_s or not self.dram_bytes_per_s:
            return None
        return self.fp32_flops_per_s / self.dram_bytes_per_s


_FIELDS = {f.name for f in fields(DeviceSpec)}
_STR_FIELDS = {"name", "cc", "source", "notes"}
_INT_FIELDS = {"sm_count", "mig_compute_slices", "mig_memory_slices"}
_BOOL_FIELDS = {"memory_variants_share_compute"}
_DERIVED_ONLY = {"mig"}  # set by lookup() on a scaled MIG slice, never in the table
_COMPUTE_FIELDS = (
    "fp64_flops_per_s", "fp32_flops_per_s", "fp16_flops_per_s", "tensor_fp16_flops_per_s",
    "tensor_fp16_acc16_flops_per_s", "tensor_bf16_flops_per_s", "tensor_tf32_flops_per_s",
    "tensor_fp8_flops_per_s", "tensor_int8_ops_per_s", "tensor_fp64_flops_per_s",
    "tensor_fp4_flops_per_s",
)
TENSOR_KINDS = ("fp16", "int8", "int4", "tf32", "bf16", "fp8", "fp6", "fp4", "fp64")


def _spec_from_table(entry: dict[str, Any]) -> DeviceSpec:
    unknown = (set(entry) - _FIELDS) | (set(entry) & _DERIVED_ONLY)
    if unknown:
        raise ValueError(
            f"devices.toml: unknown field(s) {sorted(unknown)} in {entry.get('name')!r}"
        )
    if not isinstance(entry.get("name"), str) or not entry["name"]:
        raise ValueError(f"devices.toml: entry without a name: {entry!r}")
    kw: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ("aliases", "reported_as"):
            kw[key] = tuple(str(a) for a in value)
        elif key == "tensor_kinds":
            bad = [k for k in value if k not in TENSOR_KINDS]
            if bad:
                raise ValueError(f"devices.toml: tensor kind(s) {bad} of {entry['name']!r} not in {TENSOR_KINDS}")
            kw[key] = tuple(value)
        elif key in _STR_FIELDS:
            kw[key] = str(value)
        elif key in _INT_FIELDS:
            kw[key] = int(value)
        elif key in _BOOL_FIELDS:
            if not isinstance(value, bool):
                raise ValueError(f"devices.toml: {key} of {entry['name']!r} must be true/false")
            kw[key] = value
        else:
            kw[key] = float(value)
    return DeviceSpec(**kw)


@lru_cache(maxsize=1)
def _load() -> dict[str, DeviceSpec]:
    raw = resources.files("ncu_roof").joinpath("data", _DATA_FILE).read_bytes()
    table = parsed_data_toml(raw, "devices")
    out: dict[str, DeviceSpec] = {}
    for entry in table.get("device", []):
        spec = _spec_from_table(entry)
        if spec.name in out:
            raise ValueError(f"devices.toml: duplicate device {spec.name!r}")
        out[spec.name] = spec
    return out


@lru_cache(maxsize=1)
def _load_cuda_gpus() -> tuple[dict[str, Any], ...]:
    raw = resources.files("ncu_roof").joinpath("data", _GPU_LIST_FILE).read_bytes()
    return tuple(parsed_data_toml(raw, "cuda-gpus").get("gpu", []))


def load_cuda_gpus() -> list[dict[str, Any]]:
    """NVIDIA's CUDA GPUs of CC 7.0 and newer (``data/cuda_gpus.toml``): per product its ``name``,
    ``cc``, ``segment``, ``chip``, ``source`` and the table ``devices`` that cover it."""
    return [dict(g) for g in _load_cuda_gpus()]


def load_devices() -> dict[str, DeviceSpec]:
    """All built-in devices, keyed by their Nsight Compute name (read once, then cached)."""
    return dict(_load())


def find_devices(text: str | None = None) -> list[DeviceSpec]:
    """Table entries whose name or an alias contains ``text`` (case and separators ignored),
    in table order; a MIG slice or memory variant that :func:`lookup` derives is included
    when ``text`` names one exactly. No ``text``: every entry."""
    specs = list(_load().values())
    if not text:
        return specs
    key = normalize_name(text)
    found = [s for s in specs if any(key in normalize_name(n) for n in (s.name, *s.aliases))]
    derived = lookup(text)
    if derived is not None and all(derived is not s for s in found):
        found.insert(0, derived)
    return found


_LEADING = ("nvidia", "tesla", "geforce")
_SEP = re.compile(r"[\s\-_]+")


def normalize_name(name: str) -> str:
    """A lookup key: case-folded, hyphens/underscores/spaces collapsed to one space, a leading
    ``NVIDIA``/``Tesla``/``GeForce`` dropped. Every remaining word counts, so "RTX 3070" and
    "RTX 3070 Ti", or a "Laptop GPU" and its desktop namesake, stay distinct."""
    cleaned = name.replace("\u00ae", " ").replace("\u2122", " ")  # (R), (TM)
    words = _SEP.sub(" ", cleaned).strip().casefold().split()
    while words and words[0] in _LEADING:
        words.pop(0)
    return " ".join(words)


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, DeviceSpec], dict[str, DeviceSpec]]:
    exact: dict[str, DeviceSpec] = {}
    norm: dict[str, DeviceSpec] = {}
    for spec in _load().values():
        for spelling in (spec.name, *spec.aliases):
            exact.setdefault(spelling, spec)
            key = normalize_name(spelling)
            other = norm.get(key)
            if other is not None and other is not spec:
                raise ValueError(
                    f"devices.toml: {spelling!r} of {spec.name!r} collides with {other.name!r}"
                )
            norm[key] = spec
    return exact, norm


def _lookup_table(name: str) -> DeviceSpec | None:
    exact, norm = _index()
    spec = exact.get(name) or exact.get(name.strip())
    if spec is not None:
        return spec
    key = normalize_name(name)
    return norm.get(key) if key else None


@lru_cache(maxsize=1024)  # the table is fixed data; the rules ask for the same few names per launch
def lookup(name: str | None) -> DeviceSpec | None:
    """The built-in entry for a device name as a report spells it, or ``None``.

    Tries the exact name or alias first, then the normalised form (see :func:`normalize_name`).
    Never matches a prefix or substring: an unknown variant gets ``None``, not a near neighbour.
    Two exceptions, both derived from table entries (module docstring): a MIG slice name gets its
    parent scaled to the slice (``mig`` set), or ``None`` where the slice cannot be scaled
    reliably; a memory-size variant of a product whose memory variants share compute gets that
    product's compute figures without a DRAM bandwidth.
    """
    if not name or not isinstance(name, str):
        return None
    if _MIG_WORD.search(name):
        return _mig_spec(name.strip())
    spec = _lookup_table(name)
    if spec is not None:
        return spec
    return _memory_variant(name.strip())


# ---- MIG slices ----------------------------------------------------------------------------

_MIG_WORD = re.compile(r"\bMIG\b", re.IGNORECASE)
_MIG_NAME = re.compile(
    r"^(?P<parent>.+?)\s+MIG\s+(?:(?P<c>\d+)c\.)?(?P<g>\d+)g\.(?P<mem>\d+(?:\.\d+)?)gb"
    r"(?:\+me)?$",
    re.IGNORECASE,
)
_SLICE_TOLERANCE = 0.15  # memory slices from size/total must be this close to a whole count


def _fmt(x: float) -> str:
    return f"{x:g}"


@lru_cache(maxsize=256)
def _mig_spec(name: str) -> DeviceSpec | None:
    m = _MIG_NAME.match(name)
    if m is None:
        return None
    parent = _lookup_table(m["parent"])
    if parent is None or parent.mig_compute_slices is None or parent.mig_memory_slices is None \
            or parent.mig_memory_gb is None:
        return None  # not MIG-capable in the table, or its slice layout is not recorded
    n_c, n_m = parent.mig_compute_slices, parent.mig_memory_slices
    g = int(m["g"])
    c = int(m["c"]) if m["c"] else g
    mem_gb = float(m["mem"])
    if not 1 <= g <= n_c or not 1 <= c <= g:
        return None
    exact_slices = mem_gb / parent.mig_memory_gb * n_m
    mem_slices = round(exact_slices)
    if mem_slices < 1 or mem_slices > n_m or n_m % mem_slices \
            or abs(exact_slices - mem_slices) > _SLICE_TOLERANCE:
        return None  # e.g. a profile size that is no whole power-of-two share of the memory
    compute_frac = c / n_c
    mem_frac = mem_slices / n_m
    profile = f"{m['c'] + 'c.' if m['c'] else ''}{g}g.{m['mem']}gb"
    scaled: dict[str, Any] = {
        f: getattr(parent, f) * compute_frac
        for f in _COMPUTE_FIELDS if getattr(parent, f) is not None
    }
    if parent.dram_bytes_per_s is not None:
        scaled["dram_bytes_per_s"] = parent.dram_bytes_per_s * mem_frac
    if parent.l2_bytes is not None:
        scaled["l2_bytes"] = parent.l2_bytes * mem_frac
    slices = (f"a compute instance of {c} of the {g} compute slices of a {g}g instance, of {n_c}"
              if m["c"] else f"{g} of {n_c} compute slices")
    how = (
        f"MIG slice {profile} of {parent.name}: scaled from the full-GPU entry -- compute x "
        f"{c}/{n_c} ({slices}; approximate: a slice's real SM count is usually a little below "
        f"{c}/{n_c} of the GPU's), DRAM bandwidth and L2 x {mem_slices}/{n_m} ({_fmt(mem_gb)} of "
        f"{_fmt(parent.mig_memory_gb)} GB = {mem_slices} of {n_m} memory slices); sm_count unknown"
    )
    return replace(
        parent, name=name, aliases=(), reported_as=(), sm_count=None, mig=profile, mig_compute_slices=None,
        mig_memory_slices=None, mig_memory_gb=None, memory_variants_share_compute=False,
        notes=f"{how}. Parent: {parent.notes}" if parent.notes else how, **scaled,
    )


# ---- memory-size variants ------------------------------------------------------------------

_MEM_WORD = re.compile(r"^\d+(?:\.\d+)?(?:gb|gib|g)$")


def _strip_memory(key: str) -> tuple[str, bool]:
    words = key.split()
    kept = [w for w in words if not _MEM_WORD.match(w)]
    return " ".join(kept), len(kept) != len(words)


@lru_cache(maxsize=1)
def _memory_index() -> dict[str, tuple[DeviceSpec, ...]]:
    out: dict[str, list[DeviceSpec]] = {}
    for spec in _load().values():
        for spelling in (spec.name, *spec.aliases):
            stripped, _ = _strip_memory(normalize_name(spelling))
            bucket = out.setdefault(stripped, [])
            if stripped and spec not in bucket:
                bucket.append(spec)
    return {k: tuple(v) for k, v in out.items() if k}


def _compute_signature(spec: DeviceSpec) -> tuple[Any, ...]:
    return (spec.cc, spec.sm_count, spec.boost_clock_hz,
            *(getattr(spec, f) for f in _COMPUTE_FIELDS))


@lru_cache(maxsize=256)
def _memory_variant(name: str) -> DeviceSpec | None:
    stripped, had_memory_word = _strip_memory(normalize_name(name))
    if not had_memory_word or not stripped:
        return None
    candidates = _memory_index().get(stripped, ())
    if not candidates or not all(c.memory_variants_share_compute for c in candidates):
        return None  # e.g. "RTX 3080 12GB" (70 SMs, not the 68 of the RTX 3080): no match
    if len({_compute_signature(c) for c in candidates}) != 1:
        return None
    base = candidates[0]
    others = ", ".join(c.name for c in candidates)
    note = (
        f"memory-size variant not in the table: compute figures from {others} (the table marks "
        "this product's memory variants as sharing compute); DRAM bandwidth of this variant is "
        "not known, omitted"
    )
    return replace(
        base, name=name, aliases=(), reported_as=(), dram_bytes_per_s=None, mig_compute_slices=None,
        mig_memory_slices=None, mig_memory_gb=None, memory_variants_share_compute=False,
        notes=note,
    )


def _norm_cc(cc: str | float | int | None) -> str | None:
    if cc is None:
        return None
    text = str(cc).strip()
    if not text:
        return None
    if "." not in text:
        # "86" -> "8.6", "100" -> "10.0", "120" -> "12.0"; a bare "9" -> "9.0"
        if not text.isdigit():
            return None
        text = f"{text[:-1]}.{text[-1]}" if len(text) >= 2 else f"{text}.0"
    major, _, minor = text.partition(".")
    try:
        return f"{int(major)}.{int(minor or 0)}"
    except ValueError:
        return None


_BASE_CLOCK_TOLERANCE = 0.02


def runs_at_base_clock(spec: DeviceSpec, sm_clock_hz: float | None) -> bool:
    """Whether a measured SM clock is this GPU's base clock (ncu locks the clock to base by
    default), within 2%."""
    if not spec.base_clock_hz or not sm_clock_hz or sm_clock_hz != sm_clock_hz:  # noqa: PLR0124 (NaN)
        return False
    return abs(sm_clock_hz - spec.base_clock_hz) <= _BASE_CLOCK_TOLERANCE * spec.base_clock_hz


def candidates(cc: str | float | None, sm_count: int | None = None,
               sm_clock_hz: float | None = None) -> list[DeviceSpec]:
    """The table's entries with this compute capability (and SM count, where given), by name; with
    a measured SM clock, the entries whose base clock it is come first."""
    want_cc = _norm_cc(cc)
    if want_cc is None:
        return []
    found = sorted((s for s in _load().values() if s.cc is not None and _norm_cc(s.cc) == want_cc
                    and (sm_count is None or s.sm_count == sm_count)), key=lambda s: s.name)
    return sorted(found, key=lambda s: not runs_at_base_clock(s, sm_clock_hz))


def sharing(name: str | None, sm_count: int | None = None) -> list[DeviceSpec]:
    """The entries ncu reports under this shared name (``reported_as``; e.g. "Orin" for every
    Jetson Orin module), with this SM count where given, by name."""
    key = normalize_name(name) if isinstance(name, str) else ""
    if not key:
        return []
    return sorted((s for s in _load().values() if key in {normalize_name(n) for n in s.reported_as}
                   and (sm_count is None or s.sm_count == sm_count)), key=lambda s: s.name)


def lookup_by_cc_and_sms(cc: str | float | None, sm_count: int | None) -> DeviceSpec | None:
    """Fallback for exports that carry no device name: the one entry with this compute capability
    and SM count, or ``None`` when there is none or more than one (e.g. CC 7.5 with 40 SMs is both
    the T4 and the RTX 2070 SUPER)."""
    want_cc = _norm_cc(cc)
    if want_cc is None or sm_count is None:
        return None
    try:
        want_sms = int(sm_count)
    except (TypeError, ValueError):
        return None
    hits = [
        s for s in _load().values() if s.cc is not None and _norm_cc(s.cc) == want_cc
        and s.sm_count == want_sms
    ]
    return hits[0] if len(hits) == 1 else None
