"""scripts/mutation_test.py stays usable: it lists mutants, they compile, the equivalent list is current."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("mutation_test", ROOT / "scripts" / "mutation_test.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_test"] = module
    spec.loader.exec_module(module)
    return module


def test_units_mutants_are_listed_and_compile() -> None:
    tool = _tool()
    mutants = tool.mutants_of("ncu_roof/read/units.py")
    texts = {m.text for m in mutants}
    assert "constant 1e-06 -> 0.0" in texts and "`/=` -> `*=`" in texts and "condition negated" in texts
    for m in mutants:
        source = tool.mutated_source(m)
        compile(source, m.module, "exec")
        assert source != (ROOT / m.module).read_text(encoding="utf-8")


def test_every_listed_equivalent_mutant_still_exists() -> None:
    tool = _tool()
    existing = {(m.module, m.source_line, m.text) for module in tool.TESTS for m in tool.mutants_of(module)}
    stale = [key for key in tool.read_equivalent() if key not in existing]
    assert not stale, f"scripts/mutation_equivalent.txt lists mutants that no longer exist: {stale}"


def test_every_mapped_test_file_exists() -> None:
    tool = _tool()
    missing = [f for files in tool.TESTS.values() for f in files if not (ROOT / f).is_file()]
    assert not missing
