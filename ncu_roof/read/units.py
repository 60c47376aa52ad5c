"""Unit strings as Nsight Compute prints them, and their factors to base units.

Base units: seconds, bytes, hertz, counts (inst, sector, cycle...), percent. ncu prints either
base units (``--print-units base``: ``nsecond``, ``byte``, ``byte/second``) or auto-scaled ones
(``usecond``, ``Kbyte``, ``Gbyte/second``, ``Mhz``, ``cycle/nsecond``). Prefixes are decimal
(ncu's ``Kbyte`` is 1000 bytes); ``Ki``/``Mi``/``Gi`` are binary.
"""

from __future__ import annotations

from functools import lru_cache

_PREFIX = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "P": 1e15, "μ": 1e-6, "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4,
}
_TIME = {"second": 1.0, "s": 1.0, "nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6,
         "msecond": 1e-3, "ms": 1e-3}
_BASE_WORDS = ("byte", "hz", "inst", "sector", "cycle", "warp", "thread", "block", "request",
               "wavefront", "register", "transaction", "op", "flop", "B")


_COUNT_WORDS = frozenset({
    "sm", "warp", "thread", "block", "request", "wavefront", "register", "transaction", "op", "flop",
    "inst", "sector", "cycle", "byte", "bit", "branche", "branch", "cluster", "pass", "sample", "wave",
    "context", "device", "instance", "kernel", "launch", "element", "lane", "unit", "event", "value",
    "tpc", "gpc", "fbpa", "ltc", "slice", "partition", "channel", "frame", "packet", "message", "call",
})


class UnknownUnit(ValueError):
    """A unit string this module does not know how to scale."""


def _word_factor(word: str) -> float:
    word = word.strip()
    if word in ("", "%"):
        return 1.0
    if word in _TIME:
        return _TIME[word]
    lower = word.lower()
    if lower in _TIME:
        return _TIME[lower]
    for base in _BASE_WORDS:
        if word == base or lower == base.lower():
            return 1.0
    for prefix in sorted(_PREFIX, key=len, reverse=True):  # "Kinst" is K + inst, "Kibyte" Ki + byte
        if not prefix or not word.startswith(prefix):
            continue
        rest = word[len(prefix):]
        if rest.lower() == "hz" or rest in _BASE_WORDS or rest.lower() in _BASE_WORDS:
            return _PREFIX[prefix]
        if rest in ("second", "s") and prefix in ("n", "u", "μ", "m"):  # "μs", "μsecond" (ncu prints "usecond")
            return _PREFIX[prefix]
    # Count words ncu prints that need no scaling (e.g. "register/thread", "block", "warp", "SM")
    # keep factor 1; any other word ("furlong") is refused rather than read as a base unit.
    if lower in _COUNT_WORDS or lower.rstrip("s") in _COUNT_WORDS:
        return 1.0
    raise UnknownUnit(word)


@lru_cache(maxsize=512)
def factor(unit: str | None) -> float:
    """Multiplier that turns a value printed in ``unit`` into base units.

    >>> factor("usecond"), factor("Gbyte/second"), factor("cycle/nsecond")
    (1e-06, 1000000000.0, 1000000000.0)
    """
    if unit is None:
        return 1.0
    unit = unit.strip()
    if not unit or unit == "%":
        return 1.0
    parts = unit.split("/")
    value = _word_factor(parts[0])
    for denominator in parts[1:]:
        value /= _word_factor(denominator)
    return value
