"""Shared fixtures: the real data in ../shared, a real ncu (Debian's 2024.1.1) and its examples."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from ncu_cache import NCU_CACHE, unpacked_ncu

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NCU_ROOF_SHARED", ROOT.parent / "shared"))
REALDATA = SHARED / "realdata"
FIXTURES = ROOT / "fixtures"

# Many tests start a fresh Python (the CLI as a real process, ncu_roof under `python -m`): let them
# reuse the package's compiled bytecode rather than compile ~90 modules each time (0.8 s -> 0.6 s a
# start) where the environment sets PYTHONDONTWRITEBYTECODE. The caches go to the ignored __pycache__.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# hypothesis: a few examples per property in the normal run ("default"); NCU_ROOF_HYPOTHESIS_PROFILE=long
# for many more. A test's own @settings may keep deadline=None but leaves max_examples to the profile.
settings.register_profile("default", max_examples=20, deadline=None)
settings.register_profile("long", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("NCU_ROOF_HYPOTHESIS_PROFILE", "default"))


# The longest test files, started first: xdist hands out whole files in collection order, so a long
# file collected last (test_charts.py takes ~45 s of one worker) would leave one worker idle.
LONGEST_FIRST = ("test_charts.py", "test_bad_inputs.py", "test_lint.py", "test_capture.py", "test_cli.py",
                 "test_kernels.py", "test_compare.py", "test_fuzz.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: LONGEST_FIRST.index(item.path.name) if item.path.name in LONGEST_FIRST
               else len(LONGEST_FIRST))  # stable: the order within a file, and of the rest, is kept
    if os.environ.get("NCU_ROOF_GPU") == "1":
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: set NCU_ROOF_GPU=1 on a GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def realdata() -> Path:
    """../shared/realdata (third-party reports); skip where it is absent."""
    if not (REALDATA / "MANIFEST.md").is_file():
        pytest.skip(f"real reports not available: {REALDATA} is absent (it lives beside the repo in ../shared)")
    return REALDATA


@pytest.fixture(scope="session")
def hta(realdata: Path) -> Path:
    """The PyTorch profiler traces of facebookresearch/HolisticTraceAnalysis in the real data."""
    folder = realdata / "facebookresearch__HolisticTraceAnalysis"
    if not folder.is_dir():
        pytest.skip(f"the HolisticTraceAnalysis traces are not in {realdata}")
    return folder


@pytest.fixture(scope="session")
def ncu_exe() -> Path:
    """A real ncu 2024.1.1 that runs without a GPU (unpacked by ../shared/tools/get-ncu.sh)."""
    exe = unpacked_ncu()
    if exe is None:
        pytest.skip("no ncu: ../shared/tools/get-ncu.sh could not unpack Debian's nsight-compute")
    return exe


@pytest.fixture(scope="session")
def ncu_examples(ncu_exe: Path) -> Path:
    """Nsight Compute's example reports (with a README.TXT each) that come with the ncu package."""
    root = NCU_CACHE / "root" / "usr" / "share" / "doc" / "nsight-compute" / "examples"
    if not root.is_dir():
        pytest.skip("Nsight Compute example reports were not unpacked with ncu")
    return root


def ncu_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running ncu here: a scratch HOME (ncu writes there) and the C locale."""
    env = dict(os.environ)
    env.update(HOME=str(tmp_path), LC_ALL="C", LANG="C")
    return env


# --- one read and one diagnosis per input and session -------------------------------------------
# Many tests read or diagnose the same real reports (some all of ../shared/realdata). Each input is
# read (and diagnosed, per set of options) once per pytest session and every caller gets a deep
# copy, so a test may change what it got without touching another test's. A refusal (an
# NcuRoofError) is kept and raised again each time. Only for tests that are not about reading or
# diagnosing one input afresh: they call the loaders themselves.
_TABLES: dict[tuple[Any, ...], Any] = {}
_DIAGNOSES: dict[tuple[Any, ...], Any] = {}


def _cached(cache: dict[tuple[Any, ...], Any], key: tuple[Any, ...], make: Any) -> Any:
    from ncu_roof.errors import NcuRoofError

    if key not in cache:
        try:
            cache[key] = make()
        except NcuRoofError as exc:
            cache[key] = exc
    value = cache[key]
    if isinstance(value, NcuRoofError):
        raise value
    return _deep_copy(value)


def _deep_copy(value: Any) -> Any:
    """A deep copy. pandas copies a frame's ``attrs`` only shallowly, and the package's RuleResults
    list is never deep-copied on purpose (see ncu_roof.read.ncu_rules), so both are copied here."""
    import pandas as pd

    def plain(v: Any) -> Any:
        return type(v)(copy.deepcopy(list(v))) if isinstance(v, list) else copy.deepcopy(v)

    out = copy.deepcopy(value)
    names = [] if isinstance(value, pd.DataFrame) else list(vars(value))
    for name in names:
        if isinstance(getattr(value, name), list):
            setattr(out, name, plain(getattr(value, name)))
    frames = [(value, out)] if isinstance(value, pd.DataFrame) else [
        (getattr(value, n), getattr(out, n)) for n in names if isinstance(getattr(value, n), pd.DataFrame)]
    for original, copied in frames:
        copied.attrs = {k: plain(v) for k, v in original.attrs.items()}
    return out


def cached_table(path: Path, device: str | None = None) -> Any:
    """``load_table(path, device)``, read once per session (a copy each call, ``attrs`` included)."""
    from ncu_roof.read.table import load_table

    return _cached(_TABLES, (str(Path(path).resolve()), device), lambda: load_table(path, device))


def cached_diagnosis(path: Path, **options: Any) -> Any:
    """``diagnose_paths(path, **options)``, once per session (a copy each call); options must be
    hashable (paths, strings, None). The table comes from :func:`cached_table`."""
    from ncu_roof.diagnosis import diagnose_table

    unknown = set(options) - {"algorithmic", "ceilings", "thresholds", "device"}
    assert not unknown, f"cached_diagnosis does not know {unknown}"
    device = options.get("device")
    key = _diagnosis_key((str(Path(path).resolve()),), *(
        "" if options.get(k) is None else str(Path(options[k]).resolve()) for k in ("algorithmic", "ceilings")),
        options.get("thresholds"), device)

    def make() -> Any:
        rest = {k: v for k, v in options.items() if k != "device"}
        return diagnose_table(cached_table(path, device), **rest)

    return _cached(_DIAGNOSES, key, make)


def roofless_diagnosis(path: Path) -> Any:
    """The diagnosis of an input whose GPU is left unnamed (its ``device`` cleared after reading, as if
    neither the input nor its measured clock named one): the paths taken where no roof is known."""
    from ncu_roof.diagnosis import diagnose_table

    def make() -> Any:
        table = cached_table(path)
        table["device"] = None
        return diagnose_table(table)

    return _cached(_DIAGNOSES, ("roofless", str(Path(path).resolve())), make)


def _diagnosis_key(paths: tuple[str, ...], algorithmic: str, ceilings: str, thresholds: Any,
                   device: str | None) -> tuple[Any, ...]:
    """One key for :func:`cached_diagnosis` and :func:`cached_diagnose_paths`: every input and option."""
    return (paths, algorithmic, ceilings, repr(thresholds), device)


# Inputs under these folders are never written by a test, so a read or diagnosis of them can be kept.
_READ_ONLY = (SHARED, FIXTURES, NCU_CACHE)


def _read_only(path: str | Path | None) -> str | None:
    """The resolved path (a glob pattern stays one) if it lies under a read-only folder, else None."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    if any(resolved.is_relative_to(root.resolve()) for root in _READ_ONLY):
        return str(resolved)
    return None


def cached_diagnose_paths(paths: Any, algorithmic: Any = None, ceilings: Any = None, thresholds: Any = None,
                          device: str | None = None, lines: bool = True) -> Any:
    """A stand-in for ``ncu_roof.diagnosis.diagnose_paths`` (same signature, same result) that diagnoses
    read-only inputs (../shared, fixtures/, ncu's examples) once per session and returns a copy; any
    other input (a test's tmp_path) is read and diagnosed afresh, and read-only inputs with a sidecar
    of the test's own (algorithmic, ceilings) are read once and diagnosed afresh.
    See :func:`cache_diagnoses`."""
    from ncu_roof.diagnosis import diagnose_table
    from ncu_roof.read.table import load_table

    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    keys = [_read_only(p) for p in items]
    if None in keys:
        return diagnose_table(load_table(paths, device), algorithmic, ceilings, thresholds, lines)

    def make() -> Any:
        table = _cached(_TABLES, (keys[0] if len(keys) == 1 else tuple(keys), device),
                        lambda: load_table(paths, device))
        return diagnose_table(table, algorithmic, ceilings, thresholds, lines)

    options = [_read_only(algorithmic) if algorithmic is not None else "",
               _read_only(ceilings) if ceilings is not None else ""]
    if None in options:  # a sidecar of the test's own: the inputs' table is kept, the diagnosis made afresh
        return make()
    key = _diagnosis_key(tuple(keys), *options, thresholds, device)  # shared with cached_diagnosis
    return _cached(_DIAGNOSES, key if lines else (key, "no lines"), make)


@pytest.fixture()
def cache_diagnoses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every diagnosis the package asks for (compare, check, diagnose, report: ``diagnose_request``
    and ``diagnose_paths``) goes through :func:`cached_diagnose_paths` during the test: for tests of
    what is done with a diagnosis, not of reading or diagnosing itself."""
    import ncu_roof.comparison.compare
    import ncu_roof.comparison.gate
    import ncu_roof.diagnosis

    def cached_request(request: Any) -> Any:
        return cached_diagnose_paths(request.inputs, algorithmic=request.algorithmic, ceilings=request.ceilings,
                                     thresholds=request.thresholds, device=request.device, lines=request.lines)

    monkeypatch.setattr(ncu_roof.diagnosis, "diagnose_paths", cached_diagnose_paths)
    for module in (ncu_roof.diagnosis, ncu_roof.comparison.compare, ncu_roof.comparison.gate):
        monkeypatch.setattr(module, "diagnose_request", cached_request)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--update-golden``: rewrite tests/golden/ (the chart specs ``*.vl.json``; the tables, findings
    ``*.json`` and Markdown ``*.md`` of the synthetic fixtures) from the current code, on purpose."""
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ (chart specs, tables, findings, Markdown) "
                          "instead of comparing; review the diff before committing")


@pytest.fixture(scope="module")
def reportgen_mod() -> Any:
    """``tests/reportgen.py`` with ncu's schemas compiled (skip where they cannot be)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import reportgen

    try:
        reportgen.proto_modules()
    except (ImportError, FileNotFoundError) as exc:
        pytest.skip(f"cannot compile ncu's schemas: {exc}")
    return reportgen
