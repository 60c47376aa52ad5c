"""The gate's rules file: a TOML path in, :class:`GateRules` (the bounds per kernel and region) out.

Rules file (TOML)::

    [defaults]
    min_pct_of_roof = 50          # % of its roof each kernel must reach
    min_pct_of_ideal = 30         # % of ideal (ideal time / time) each region must reach
    max_extra_bytes_factor = 2.0  # DRAM bytes / algorithmic bytes (needs --algorithmic counts)
    max_slowdown = 1.10           # time / baseline time (needs --baseline)
    min_time_s = 20e-6            # kernels/regions shorter than this (both runs) are not checked

    [[kernel]]                    # overrides for kernels whose name matches (RE2 search);
    match = "set_halo"            # later entries win over earlier ones
    min_pct_of_roof = 20

    [[region]]                    # the same for regions, by region name
    match = "layernorm"
    skip = true                   # not checked at all

``min_pct_of_roof`` holds kernels only; on a ``[[region]]`` entry it is read as
``min_pct_of_ideal`` (with a note). Any problem with the file is one InputError line.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ncu_roof import schema
from ncu_roof.errors import InputError
from ncu_roof.tomlfile import read_toml

BOUNDS = ("min_pct_of_roof", "min_pct_of_ideal", "max_extra_bytes_factor", "max_slowdown")


@dataclass(frozen=True)
class Limits:
    """The bounds one kernel or region is held to; None leaves a bound unchecked."""

    min_pct_of_roof: float | None = None  # kernels: % of roof
    min_pct_of_ideal: float | None = None  # regions: ideal time / time, in %
    max_extra_bytes_factor: float | None = None
    max_slowdown: float | None = None
    min_time_s: float = 0.0
    skip: bool = False


LIMIT_KEYS = {f.name for f in fields(Limits)}


@dataclass(frozen=True)
class GateRules:
    """Defaults plus ordered (pattern, overrides) entries for kernels and for regions."""

    defaults: Limits
    kernels: tuple[tuple[schema.Pattern, dict[str, Any]], ...] = ()
    regions: tuple[tuple[schema.Pattern, dict[str, Any]], ...] = ()
    source: str = "rules"
    notes: tuple[str, ...] = ()  # how the file was read (aliases)

    def limits(self, name: str, kind: str = "kernel") -> Limits:
        """Limits for a kernel (or region) name: defaults, then each matching override in order."""
        limits = self.defaults
        for pattern, overrides in self.kernels if kind == "kernel" else self.regions:
            if pattern.search(name):
                limits = replace(limits, **overrides)
        return limits


def _entry(
    raw: dict[str, Any], where: str, path: Path, notes: list[str] | None = None
) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InputError(f"{path}: {where} must be a table of bounds")
    schema.check_keys(raw, sorted(LIMIT_KEYS) + ([] if where == "[defaults]" else ["match"]), where, path)
    raw = dict(raw)
    if where.startswith("[[kernel]]") and "min_pct_of_ideal" in raw:
        raise InputError(
            f"{path}: {where} min_pct_of_ideal holds regions (ideal time / time); "
            "use min_pct_of_roof for kernels"
        )
    if where.startswith("[[region]]") and "min_pct_of_roof" in raw:
        if "min_pct_of_ideal" in raw:
            raise InputError(
                f"{path}: {where} states both min_pct_of_roof and min_pct_of_ideal; "
                "a region's bound is min_pct_of_ideal"
            )
        raw["min_pct_of_ideal"] = raw.pop("min_pct_of_roof")
        if notes is not None:
            notes.append(
                f"{path}: {where} min_pct_of_roof read as min_pct_of_ideal (a region's percent "
                "is ideal time / time); write min_pct_of_ideal"
            )
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "match":
            continue
        if key == "skip":
            if not isinstance(value, bool):
                raise InputError(f"{path}: {where} skip must be true or false")
        else:
            value = schema.positive_number(value, key, where, path, zero=key in ("min_time_s", "min_pct_of_roof",
                                                                                  "min_pct_of_ideal"))
        out[key] = value
    return out


def _overrides(
    entries: Any, section: str, path: Path, notes: list[str] | None = None
) -> tuple[tuple[schema.Pattern, dict[str, Any]], ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise InputError(f'{path}: write [[{section}]] tables (with match = "regex")')
    out = []
    for i, raw in enumerate(entries, 1):
        where = f"[[{section}]] #{i}"
        if not isinstance(raw, dict) or not isinstance(raw.get("match"), str):
            raise InputError(f'{path}: {where} needs match = "regex" (a {section} name pattern)')
        pattern = schema.compile_regex(raw["match"], "match", where, path)
        out.append((pattern, _entry(raw, where, path, notes)))
    return tuple(out)


def parse_rules(data: dict[str, Any], path: Path) -> GateRules:
    """Gate rules from parsed TOML (see the module docstring)."""
    unknown = sorted(set(data) - {"defaults", "kernel", "region"})
    if unknown:
        raise InputError(
            f"{path}: unknown section [{unknown[0]}]; use [defaults], [[kernel]], [[region]]"
        )
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise InputError(f"{path}: [defaults] must be a table")
    notes: list[str] = []
    rules = GateRules(
        Limits(**_entry(defaults, "[defaults]", path)),
        _overrides(data.get("kernel"), "kernel", path),
        _overrides(data.get("region"), "region", path, notes),
        str(path),
        tuple(notes),
    )
    stated = [getattr(rules.defaults, k) for k in BOUNDS] + [
        o.get(k) for _, o in rules.kernels + rules.regions for k in BOUNDS
    ]
    if all(v is None for v in stated):
        raise InputError(
            f"{path}: states no bound; set min_pct_of_roof, min_pct_of_ideal, "
            "max_extra_bytes_factor or max_slowdown"
        )
    return rules


def read_rules(path: str | Path) -> GateRules:
    """Read and validate a rules TOML file; any problem is one InputError line."""
    path = Path(path)
    data = read_toml(path, "no such rules file: {path}", "{path} is not valid TOML: {exc}")
    return parse_rules(data, path)
