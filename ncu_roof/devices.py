"""Built-in device table: spec-sheet roofs for reports that do not carry their own peaks.

The table lives in ``ncu_roof/data/devices.toml``: one ``[[device]]`` per GPU model, keyed by the
name Nsight Compute reports (``device__attribute_display_name``), with other spellings seen in the
wild as ``aliases``. Every number is a dense (no 2:4 sparsity) peak in base units: FLOP/s (an FMA
counts as 2), op/s, bytes/s, bytes, Hz. A field the table leaves out is ``None`` here.

``tensor_fp16_flops_per_s`` is FP16 inputs with FP32 accumulate; on GeForce parts that is half the
FP16-accumulate figure, which is kept separately as ``tensor_fp16_acc16_flops_per_s``.

No pandas here: this module is imported by cheap code paths.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["DeviceSpec", "load_devices", "lookup", "lookup_by_cc_and_sms", "normalize_name"]

_DATA_FILE = "devices.toml"


@dataclass(frozen=True)
class DeviceSpec:
    """Peak figures for one GPU model (dense, base units; ``None`` where not known)."""

    name: str
    aliases: tuple[str, ...] = ()
    cc: str | None = None
    sm_count: int | None = None
    boost_clock_hz: float | None = None
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
    source: str | None = None
    notes: str | None = None

    @property
    def ridge_fp32(self) -> float | None:
        """FP32 ridge point (FLOP/byte against DRAM), or ``None`` when a peak is missing."""
        if not self.fp32_flops_per_s or not self.dram_bytes_per_s:
            return None
        return self.fp32_flops_per_s / self.dram_bytes_per_s


_FIELDS = {f.name for f in fields(DeviceSpec)}
_STR_FIELDS = {"name", "cc", "source", "notes"}
_INT_FIELDS = {"sm_count"}


def _spec_from_table(entry: dict[str, Any]) -> DeviceSpec:
    unknown = set(entry) - _FIELDS
    if unknown:
        raise ValueError(
            f"devices.toml: unknown field(s) {sorted(unknown)} in {entry.get('name')!r}"
        )
    if not isinstance(entry.get("name"), str) or not entry["name"]:
        raise ValueError(f"devices.toml: entry without a name: {entry!r}")
    kw: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "aliases":
            kw[key] = tuple(str(a) for a in value)
        elif key in _STR_FIELDS:
            kw[key] = str(value)
        elif key in _INT_FIELDS:
            kw[key] = int(value)
        else:
            kw[key] = float(value)
    return DeviceSpec(**kw)


@lru_cache(maxsize=1)
def _load() -> dict[str, DeviceSpec]:
    raw = resources.files("ncu_roof").joinpath("data", _DATA_FILE).read_bytes()
    table = tomllib.loads(raw.decode("utf-8"))
    out: dict[str, DeviceSpec] = {}
    for entry in table.get("device", []):
        spec = _spec_from_table(entry)
        if spec.name in out:
            raise ValueError(f"devices.toml: duplicate device {spec.name!r}")
        out[spec.name] = spec
    return out


def load_devices() -> dict[str, DeviceSpec]:
    """All built-in devices, keyed by their Nsight Compute name (read once, then cached)."""
    return dict(_load())


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


def lookup(name: str | None) -> DeviceSpec | None:
    """The built-in entry for a device name as a report spells it, or ``None``.

    Tries the exact name or alias first, then the normalised form (see :func:`normalize_name`).
    Never matches a prefix or substring: an unknown variant gets ``None``, not a near neighbour.
    """
    if not name or not isinstance(name, str):
        return None
    exact, norm = _index()
    spec = exact.get(name) or exact.get(name.strip())
    if spec is not None:
        return spec
    key = normalize_name(name)
    return norm.get(key) if key else None


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
