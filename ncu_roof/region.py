"""``ncu_roof.region``: mark a stretch of work with its algorithmic FLOPs and bytes.

The region opens an NVTX push/pop range whose message carries the counts, for example
``layernorm [ncu-roof flops=536870912 bytes=536870912]``. Nsight Compute stores the NVTX
stack of every launch in the report (capture with ``--nvtx``), and the loader reads the counts
back from the range name. With no profiler attached, or without the ``nvtx`` package, the cost
is one function call; no GPU is needed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

DOMAIN = None  # the default NVTX domain, so `--nvtx-include "name/"` works as users expect
_TAG = re.compile(r"\s*\[ncu-roof(?P<body>[^\]]*)\]\s*$")
_FIELD = re.compile(r"(flops|bytes)=([0-9.eE+-]+)")


@dataclass(frozen=True)
class RegionCounts:
    """A region's name and algorithmic counts (None where not given)."""

    name: str
    flops: float | None
    bytes: float | None


def range_message(name: str, flops: float | None = None, bytes: float | None = None) -> str:
    """The NVTX message for a region: its name, then the counts in a bracketed tag."""
    fields = [f"{k}={int(v) if float(v).is_integer() else v!r}" for k, v in (("flops", flops), ("bytes", bytes))
              if v is not None]
    return f"{name} [ncu-roof {' '.join(fields)}]" if fields else name


def parse_range_message(message: str) -> RegionCounts:
    """Inverse of :func:`range_message`; a plain NVTX name gives counts of None."""
    m = _TAG.search(message)
    if not m:
        return RegionCounts(message, None, None)
    values = {k: float(v) for k, v in _FIELD.findall(m.group("body"))}
    return RegionCounts(message[: m.start()].strip(), values.get("flops"), values.get("bytes"))


def _push_pop() -> tuple[Callable[[str], Any], Callable[[], Any]]:
    try:
        import nvtx  # type: ignore[import-not-found]
    except ImportError:
        try:
            from cupy.cuda import nvtx as cupy_nvtx  # type: ignore[import-not-found]
        except ImportError:
            return (lambda _m: None), (lambda: None)
        return cupy_nvtx.RangePush, cupy_nvtx.RangePop
    return (lambda m: nvtx.push_range(m, domain=DOMAIN)), (lambda: nvtx.pop_range(domain=DOMAIN))


@functools.lru_cache(maxsize=1)
def _backend() -> tuple[Callable[[str], Any], Callable[[], Any]]:
    return _push_pop()


class region:  # noqa: N801 - used like a function: `with ncu_roof.region(...)`
    """Context manager and decorator: ``with region("softmax", flops=5*n, bytes=8*n): ...``."""

    def __init__(self, name: str, flops: float | None = None, bytes: float | None = None) -> None:
        if not name or "[" in name:
            raise ValueError("region name must be non-empty and must not contain '['")
        for label, v in (("flops", flops), ("bytes", bytes)):
            if v is not None and (v != v or v < 0):
                raise ValueError(f"region {label} must be a non-negative number, got {v!r}")
        self.counts = RegionCounts(name, None if flops is None else float(flops),
                                   None if bytes is None else float(bytes))
        self.message = range_message(name, flops, bytes)

    def __enter__(self) -> RegionCounts:
        _backend()[0](self.message)
        return self.counts

    def __exit__(self, *exc: object) -> None:
        _backend()[1]()

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

