"""Pinned factors of ``ncu_roof.read.units``: every prefix, base word and time spelling, exactly."""

from __future__ import annotations

import pytest

from ncu_roof.read import units
from ncu_roof.read.units import UnknownUnit, factor

# every spelling of units._PREFIX, with its factor written out (decimal SI; Ki/Mi/Gi/Ti binary)
PREFIXES = {"": 1.0, "n": 1e-9, "u": 1e-6, "μ": 1e-6, "m": 1e-3, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9,
            "T": 1e12, "P": 1e15, "Ki": 1024.0, "Mi": 1048576.0, "Gi": 1073741824.0, "Ti": 1099511627776.0}
TIMES = {"second": 1.0, "s": 1.0, "nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3,
         "ms": 1e-3, "μs": 1e-6, "μsecond": 1e-6}
BASE_WORDS = ("byte", "hz", "inst", "sector", "cycle", "warp", "thread", "block", "request", "wavefront",
              "register", "transaction", "op", "flop", "B")


def test_the_tables_are_the_ones_pinned_here() -> None:
    assert units._PREFIX == PREFIXES
    assert {k: v for k, v in TIMES.items() if "μ" not in k} == units._TIME
    assert units._BASE_WORDS == BASE_WORDS


@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("base", ["byte", "B", "inst", "sector", "hz", "Hz", "op", "flop"])
def test_every_prefix_scales_every_base_word_exactly(prefix: str, base: str) -> None:
    assert factor(prefix + base) == PREFIXES[prefix], prefix + base


@pytest.mark.parametrize("unit", sorted(TIMES))
def test_every_time_spelling_exactly(unit: str) -> None:
    assert factor(unit) == TIMES[unit]


@pytest.mark.parametrize("unit, expected", [
    ("NSECOND", 1e-9), ("Nsecond", 1e-9), ("NS", 1e-9), ("USECOND", 1e-6), ("Usecond", 1e-6), ("US", 1e-6),
    ("Us", 1e-6), ("MSECOND", 1e-3), ("Ms", 1e-3), ("MS", 1e-3), ("SECOND", 1.0), ("Second", 1.0), ("S", 1.0),
])
def test_time_units_are_case_insensitive(unit: str, expected: float) -> None:
    assert factor(unit) == expected


@pytest.mark.parametrize("unit, expected", [
    ("BYTE", 1.0), ("Byte", 1.0), ("KBYTE", 1e3), ("KByte", 1e3), ("MHZ", 1e6), ("Mhz", 1e6), ("GHz", 1e9),
    ("KINST", 1e3), ("Gibyte", 1073741824.0), ("KiB", 1024.0), ("MiB", 1048576.0),
])
def test_base_words_are_case_insensitive(unit: str, expected: float) -> None:
    assert factor(unit) == expected


@pytest.mark.parametrize("unit, expected", [
    ("Gbyte/second", 1e9), ("Mbyte/second", 1e6), ("Tbyte/second", 1e12), ("byte/second", 1.0),
    ("cycle/nsecond", 1 / 1e-9), ("cycle/usecond", 1 / 1e-6), ("cycle/msecond", 1 / 1e-3), ("cycle/second", 1.0),
    ("inst/cycle", 1.0), ("Kbyte/usecond", 1e3 / 1e-6), ("byte/Kbyte", 1e-3), ("sector/request", 1.0),
    ("register/thread", 1.0), ("warp", 1.0), ("SM", 1.0), ("block", 1.0), ("%", 1.0), ("", 1.0), ("  ", 1.0),
    (None, 1.0), (" usecond ", 1e-6), ("Kwarp", 1e3), ("Mop", 1e6), ("Gflop", 1e9), ("Ktransaction", 1e3),
    ("Mwavefront", 1e6), ("Kthread", 1e3), ("Krequest", 1e3), ("Kcycle", 1e3), ("Kregister", 1e3), ("Kblock", 1e3),
])
def test_compound_and_plain_unit_words(unit: str | None, expected: float) -> None:
    assert factor(unit) == expected


@pytest.mark.parametrize("unit", ["1/s", "byte-per-second", "%/cycle2", "μ"])
def test_unknown_units_are_refused(unit: str) -> None:
    with pytest.raises(UnknownUnit):
        factor(unit)


def test_word_factor_directly() -> None:
    assert units._word_factor("%") == 1.0 and units._word_factor(" ") == 1.0
    assert units._word_factor("usecond") == 1e-6 and units._word_factor("Kbyte") == 1e3
    assert units._word_factor("nhz") == 1e-9 and units._word_factor("uhz") == 1e-6
