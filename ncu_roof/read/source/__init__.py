"""The per-instruction table (Nsight Compute's Source Counters): a report in;
out, one row per instruction of each launch: where it is and what it counted.

Columns: ``report``, ``id`` (the launch, as in the launch table), ``kernel``, ``function`` (the
kernel or the device function the instruction lies in; None where the report does not say),
``pc`` (its address as loaded), ``offset`` (from the function's start; -1 unknown), ``file`` and
``line`` (None and -1 without a line table), ``sass`` (the instruction where a disassembly is at
hand), ``operation`` (its SASS operation, ``DFMA``: from the disassembly, else from the cubin's
encoding, :mod:`ncu_roof.read.sass`; None unknown), then the counters of ``metrics.SOURCE_COLUMNS``
(counts; NaN where the launch lacks one).

Read only when asked, one launch at a time (:func:`iter_instructions`): reports without Source
Counters give no rows and lose nothing; a report whose source data cannot be read gives a note.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from ncu_roof.errors import ReportLoadError
from ncu_roof.read.source.frame import empty, frame_columns

READERS = ("native", "ncu_report")


def _is_csv(path: Path) -> bool:
    return path.suffix.lower() == ".csv"


def _guarded(path: Path, notes: list[str], read: Any) -> Iterator[Any]:
    """What ``read(plain_path)`` yields for a ``.ncu-rep`` (or ``.ncu-repz``, unpacked) or a source-page
    CSV export; what cannot be read is a note in ``notes`` (what was yielded before it stays), never
    an error."""
    from ncu_roof.read.compressed import uncompressed

    try:
        if _is_csv(path):
            yield from read(path)
            return
        if path.suffix.lower() not in (".ncu-rep", ".ncu-repz"):
            notes.append(f"source counters of {path.name} not read: they are read from .ncu-rep reports and "
                         "source-page CSV exports (ncu --import R --page source --csv --print-source sass) only")
            return
        with uncompressed(path) as plain:
            yield from read(plain)
    except ReportLoadError as exc:
        notes.append(f"source counters of {path.name} not read: {exc}")
    except (ValueError, IndexError, KeyError, OSError, UnicodeDecodeError) as exc:
        notes.append(f"source counters of {path.name} not read: they do not decode ({type(exc).__name__}: "
                     f"{str(exc)[:80]})")
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError, ncu_report's bindings
        notes.append(f"source counters of {path.name} not read ({type(exc).__name__})")


def iter_instructions(path: str | Path, ids: Iterable[int] | None = None, reader: str = "native",
                      notes: list[str] | None = None) -> Iterator[tuple[int, Any, dict[str, str]]]:
    """Each wanted launch's (id, per-instruction frame, source texts by file name), in file order.

    A ``.ncu-rep`` (or ``.ncu-repz``) is read by ``reader``, a source-page CSV export as such
    (:mod:`ncu_roof.read.source.csv`). What cannot be read is a note in ``notes`` (the launches read
    before it stay), never an error."""
    path = Path(path)

    def read(plain: Path) -> Iterator[tuple[int, Any, dict[str, str]]]:
        if _is_csv(path):
            from ncu_roof.read.source.csv import iter_instructions as by_module
        elif reader == "ncu_report":
            from ncu_roof.read.source.ncu_rep import iter_instructions as by_module
        else:
            from ncu_roof.read.source.native import iter_instructions as by_module
        yield from by_module(plain, ids, report=str(path))

    yield from _guarded(path, notes if notes is not None else [], read)


def sum_groups(path: str | Path, groups: dict[Any, Iterable[int] | None], reader: str = "native",
               notes: list[str] | None = None, jobs: int | None = None,
               columns: Collection[str] | None = None) -> dict[Any, Any]:
    """For each group of launches (its key -> launch ids; None: every launch), the per-instruction
    table of its launches summed instruction by instruction over the launches of each kernel: one
    row per kernel and PC, its ``id`` the first launch's (:mod:`ncu_roof.read.source.sums`). A group
    without rows is left out; ``attrs["launches"]`` of each frame: the launches summed per kernel,
    ``attrs["sources"]``: the source texts of their modules. ``jobs``: processes for a big read
    (default: the read options'); ``columns``: the counters wanted (None: all; ncu-roof's own
    reader decodes only those)."""
    from ncu_roof.read.parallel import available_cores, options
    from ncu_roof.read.source import sums as source_sums

    path = Path(path)
    wanted = source_sums.wanted_groups(groups)
    workers = jobs or options().jobs or available_cores()

    def read(plain: Path) -> Iterator[dict[Any, Any]]:
        if reader == "ncu_report" or _is_csv(path):
            yield source_sums.by_frames(plain, str(path), wanted, csv=_is_csv(path))
        else:
            yield source_sums.native(plain, str(path), wanted, workers, columns)

    found = list(_guarded(path, notes if notes is not None else [], read))
    return found[0] if found else {}


def sum_instructions(path: str | Path, ids: Iterable[int] | None = None, reader: str = "native",
                     columns: Collection[str] | None = None) -> Any:
    """The per-instruction table of the wanted launches (all without ``ids``) summed over the launches
    of each kernel (:func:`sum_groups`); ``attrs["notes"]`` says what could not be read."""
    notes: list[str] = []
    out = sum_groups(path, {0: ids}, reader, notes, columns=columns).get(0)
    if out is None:
        out = empty()
        out.attrs.update(sources={}, launches={})
    out.attrs["notes"] = notes
    return out


def load_instructions(path: str | Path, ids: Iterable[int] | None = None, reader: str = "native") -> Any:
    """The per-instruction table of a report's wanted launches (all of them without ``ids``);
    ``attrs["notes"]`` says what could not be read, ``attrs["sources"]`` the source texts."""
    import pandas as pd

    notes: list[str] = []
    texts: dict[str, str] = {}
    frames = []
    for _, frame, found in iter_instructions(path, ids, reader, notes):
        frames.append(frame)
        texts.update(found)
    out = frame_columns(pd.concat(frames, ignore_index=True)) if frames else empty()
    out.attrs["notes"] = notes
    out.attrs["sources"] = texts
    return out


def has_line_table(path: str | Path) -> bool | None:
    """Whether a report's cubins carry a line table (the program was built with line information):
    True where one does, False where none does, None where it stores no cubin or cannot be read."""
    from ncu_roof.read.compressed import uncompressed
    from ncu_roof.read.source.native import line_tables

    path = Path(path)
    try:
        with uncompressed(path) as plain:
            cubins, lined = line_tables(plain)
    except Exception:  # noqa: BLE001 - any report that does not decode: unknown, never an error
        return None
    return None if cubins == 0 else lined > 0


# the flag that puts line information in each compiler's cubins
LINE_FLAGS = ("nvcc -lineinfo; CuPy RawKernel/RawModule options=('-lineinfo',); Numba @cuda.jit(lineinfo=True); "
              "nvfortran -gpu=lineinfo; Triton keeps it unless TRITON_DISABLE_LINE_INFO=1")
NO_LINES_HINT = f"build with line information to see source lines: {LINE_FLAGS}"
