"""The Source Counters of a ``.ncu-rep``, read by ncu-roof's own reader: a report path and launch
ids in; out, each launch's per-PC counters as numpy arrays (:class:`Counters`, :func:`iter_counters`),
summed over launches where asked (:func:`summed`), and as per-instruction frames in the columns of
:mod:`ncu_roof.read.source` (:func:`iter_instructions`, :func:`frame`).

A launch stores each source counter as an instanced metric whose correlation IDs are the
instructions' addresses (PCs, as loaded on the GPU). Its module (``SourceData``, by reference in
the block, or inside the launch) holds the cubin, where each function was loaded
(``RelocationData``) and, with ``--import-source yes``, the source text. A PC's function is the
loaded function that spans it; its offset is the PC less the function's address; its file and
line come from the cubin's line table (:mod:`ncu_roof.read.cubin_lines`), looked up once per
module and set of PCs.

Launches are read one at a time (``os.pread``), so memory is one launch and its arrays; the
instances of all a launch's counters are decoded together (:mod:`ncu_roof.read.source.wire`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ncu_roof.read import metrics
from ncu_roof.read.cubin_lines import LineTable, read_line_table
from ncu_roof.read.native.blocks import FileBytes, index
from ncu_roof.read.native.wire import encode_varint, schema, text, varint
from ncu_roof.read.sass import function_codes, operation_names
from ncu_roof.read.source.wire import decode, instance_bytes

_FUNCTION = "\0function_pcs"  # the key of launch__function_pcs among a launch's counters
_CACHED = 64  # PC sets resolved per module, kept


@dataclass
class Resolved:
    """Where each PC of a set lies: its function (index into the module's names; -1 none), its
    offset in it (-1 unknown), its file (index into the line table's files; -1 none), its line (0 none)."""

    function: np.ndarray
    offset: np.ndarray
    file: np.ndarray
    line: np.ndarray
    operation: np.ndarray  # the SASS operation's name (None unknown), as objects


@dataclass
class Module:
    """One module of a report: its line table, where its functions were loaded, its source texts and
    the operation code of each of their instructions (:func:`ncu_roof.read.sass.function_codes`)."""

    table: LineTable
    starts: np.ndarray  # loaded addresses, ascending
    names: list[str]
    ends: np.ndarray
    texts: dict[str, str] = field(default_factory=dict)
    codes: dict[str, np.ndarray] = field(default_factory=dict)
    _resolved: dict[bytes, Resolved] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, source: Any) -> Module:
        table = read_line_table(source.Binary) if source.Binary else LineTable()
        loaded = sorted((f.Address, f.SymbolName) for f in source.RelocationData.Functions if f.Address)
        if not loaded:  # a linked image: its functions lie where its symbols say ($-names: labels inside one)
            loaded = sorted((a, n) for n, a in table.values.items() if a and not n.startswith("$"))
        starts = np.array([a for a, _ in loaded], dtype=np.uint64)
        names = [n for _, n in loaded]
        ends = np.array([a + max(table.sizes.get(n, 0), 0) for a, n in loaded], dtype=np.uint64)
        texts = {f.FileName: f.Content for f in source.SourceFiles.Files if f.Content}
        codes = function_codes(source.Binary, names) if source.Binary else {}
        return cls(table, starts, names, ends, texts, codes)

    def resolve(self, pcs: np.ndarray) -> Resolved:
        """Each PC's function, offset, file and line (cached per set of PCs: a kernel's launches share one)."""
        key = pcs.tobytes()
        got = self._resolved.get(key)
        if got is not None:
            return got
        function = np.full(len(pcs), -1, dtype=np.int64)
        offset = np.full(len(pcs), -1, dtype=np.int64)
        file = np.full(len(pcs), -1, dtype=np.int64)
        line = np.zeros(len(pcs), dtype=np.int64)
        operation = np.full(len(pcs), None, dtype=object)
        if len(self.starts) and len(pcs):
            at = np.searchsorted(self.starts, pcs, side="right") - 1
            inside = (at >= 0) & (pcs < self.ends[np.maximum(at, 0)])
            function[inside] = at[inside]
            offset[inside] = (pcs[inside] - self.starts[at[inside]]).astype(np.int64)
            for k in np.unique(at[inside]).tolist():
                mask = inside & (at == k)
                file[mask], line[mask] = self.table.lookup_indices(self.names[k], offset[mask])
                operation[mask] = self._operations(self.names[k], offset[mask])
        if len(self._resolved) >= _CACHED:
            self._resolved.clear()
        self._resolved[key] = got = Resolved(function, offset, file, line, operation)
        return got

    def _operations(self, function: str, offsets: np.ndarray) -> np.ndarray:
        """The SASS operation at each offset into ``function`` (None where not decoded)."""
        codes = self.codes.get(function)
        out = np.full(len(offsets), None, dtype=object)
        if codes is None:
            return out
        at = offsets // 16
        inside = (offsets % 16 == 0) & (at >= 0) & (at < len(codes))
        out[inside] = operation_names(codes[at[inside]])
        return out


@dataclass
class Counters:
    """One launch's Source Counters (or several launches' summed): the PCs, ascending, and each
    counter's values at them (NaN where it has none); where they lie, from the module."""

    id: int
    kernel: str
    pcs: np.ndarray
    values: dict[str, np.ndarray]
    function_pcs: np.ndarray
    module: Module | None
    launches: tuple[int, ...] = ()


def _wanted(table: list[str], columns: Collection[str] | None = None) -> dict[bytes, tuple[int, str]]:
    """A string table's source counters (those of ``columns``; None: all) by the bytes a metric
    element opens with (its ``NameId`` field) -> (precedence, column); newer names first."""
    out: dict[bytes, tuple[int, str]] = {}
    for nid, name in enumerate(table):
        if name in metrics.SOURCE_COUNTERS:
            hit = (0, metrics.SOURCE_COUNTERS[name])
        elif name in metrics.SOURCE_COUNTERS_OLD:
            hit = (1, metrics.SOURCE_COUNTERS_OLD[name])
        elif name == metrics.FUNCTION_PCS:
            hit = (0, _FUNCTION)
        else:
            continue
        if columns is None or hit[1] in columns or hit[1] == _FUNCTION:
            out[b"\x08" + encode_varint(nid)] = hit
    return out


def _counters(elems: Iterable[bytes], wanted: dict[bytes, tuple[int, str]]) -> tuple[dict[str, np.ndarray], ...]:
    """The launch's source counters as (PCs, values) by column (and its function addresses)."""
    parts: list[tuple[bytes, int]] = []
    columns: list[tuple[int, str]] = []
    for elem in elems:
        head = elem[:2] if elem[1:2] < b"\x80" else elem[:3]
        hit = wanted.get(head)
        if hit is not None:
            parts.append((elem, instance_bytes(elem, len(head))))
            columns.append(hit)
    pcs: dict[str, np.ndarray] = {}
    values: dict[str, np.ndarray] = {}
    ranked: dict[str, int] = {}
    for (rank, column), (p, v) in zip(columns, decode(parts), strict=True):
        if ranked.get(column, 2) > rank:
            ranked[column] = rank
            pcs[column], values[column] = p, v
    return pcs, values


def _aligned(pcs: dict[str, np.ndarray], values: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every PC any counter names, ascending, and each counter's values at them (NaN where none)."""
    named = {c: p for c, p in pcs.items() if c != _FUNCTION}
    if not named:
        return np.zeros(0, dtype=np.uint64), {}
    widest = max(named.values(), key=len)
    union = widest if np.all(widest[1:] > widest[:-1]) else np.unique(widest)
    distinct = {p.tobytes(): p for p in named.values()}  # counters of one section share their PCs
    outside = []
    for p in distinct.values():  # usually every counter's PCs are among the widest one's
        at = np.minimum(np.searchsorted(union, p), len(union) - 1)
        if not np.array_equal(union[at], p):
            outside.append(p)
    if outside:
        union = np.unique(np.concatenate([union, *outside]))
    places = {k: np.searchsorted(union, p) for k, p in distinct.items()}
    where = {c: places[p.tobytes()] for c, p in named.items()}
    out: dict[str, np.ndarray] = {}
    for column in metrics.SOURCE_COLUMNS:
        if column not in named:
            continue
        if len(named[column]) == len(union) and np.array_equal(named[column], union):
            out[column] = values[column]
        else:
            full = np.full(len(union), np.nan)
            full[where[column]] = values[column]
            out[column] = full
    return union, out


def _reference(buf: FileBytes, offset: int, size: int) -> int | None:
    """A SourceData's ``Reference`` (field 1, its first bytes) without reading its cubin."""
    head = buf[offset : offset + min(size, 16)]
    if head[:1] != b"\x08":
        return None
    return varint(head, 1)[0]


def iter_counters(path: str | Path, ids: Iterable[int] | None = None,
                  columns: Collection[str] | None = None) -> Iterator[Counters]:
    """For each wanted launch that has Source Counters, in file order, its :class:`Counters` (of the
    counters ``columns`` names; None: all). Launches without them are left out."""
    path = Path(path)
    pb = schema()
    wanted_ids = None if ids is None else set(ids)
    size = path.stat().st_size
    with path.open("rb") as fh:
        buf = FileBytes(fh.fileno(), size)
        found = index(buf, size, path)
        refs: dict[int | None, list[tuple[int, int]]] = {}
        for off, n in found.sources:
            refs.setdefault(_reference(buf, off, n), []).append((off, n))
        modules: dict[Any, Module | None] = {}
        names: dict[int, dict[bytes, tuple[int, str]]] = {}
        for launch_id, launch in enumerate(found.launches):
            if launch.kind != "kernel" or (wanted_ids is not None and launch_id not in wanted_ids):
                continue
            result = pb.SourceResult.FromString(os.pread(fh.fileno(), launch.size, launch.offset))
            if launch.table not in names:
                names[launch.table] = _wanted(found.tables[launch.table], columns)
            pcs, values = _counters(result.MetricResults, names[launch.table])
            union, aligned = _aligned(pcs, values)
            if not aligned:
                continue
            module = _module(result.Source, refs.get(result.Source.Reference, []), launch.offset, buf, modules)
            yield Counters(launch_id, text(result.KernelFunctionName or result.KernelMangledName), union, aligned,
                           np.sort(values.get(_FUNCTION, np.zeros(0)).astype(np.uint64)), module, (launch_id,))


def summed(launches: Iterable[Counters]) -> list[Counters]:
    """Launches of one kernel and module summed PC by PC (a counter NaN only where no launch has it),
    one :class:`Counters` per (kernel, module), its ``id`` the first launch's."""
    groups: dict[tuple[str, int], list[Counters]] = {}
    for c in launches:
        groups.setdefault((c.kernel, id(c.module)), []).append(c)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        values: dict[str, np.ndarray] = {}
        if all(np.array_equal(c.pcs, group[0].pcs) for c in group[1:]):  # one kernel's launches: the same PCs
            for column in metrics.SOURCE_COLUMNS:
                present = [c.values[column] for c in group if column in c.values]
                if present:
                    stacked = np.vstack(present)
                    known = ~np.isnan(stacked)
                    values[column] = np.where(known.any(axis=0), np.where(known, stacked, 0.0).sum(axis=0), np.nan)
            out.append(Counters(group[0].id, group[0].kernel, group[0].pcs, values,
                                np.unique(np.concatenate([c.function_pcs for c in group])), group[0].module,
                                tuple(i for c in group for i in c.launches)))
            continue
        pcs = np.concatenate([c.pcs for c in group])
        union, where = np.unique(pcs, return_inverse=True)
        for column in metrics.SOURCE_COLUMNS:
            parts = [(i, c.values[column]) for i, c in enumerate(group) if column in c.values]
            if not parts:
                continue
            v = np.full(len(pcs), np.nan)
            offsets = np.cumsum([0, *(len(c.pcs) for c in group)])
            for i, part in parts:
                v[offsets[i] : offsets[i + 1]] = part
            known = ~np.isnan(v)
            total = np.bincount(where, weights=np.where(known, v, 0.0), minlength=len(union))
            values[column] = np.where(np.bincount(where, weights=known, minlength=len(union)) > 0, total, np.nan)
        starts = np.unique(np.concatenate([c.function_pcs for c in group]))
        out.append(Counters(group[0].id, group[0].kernel, union, values, starts, group[0].module,
                            tuple(i for c in group for i in c.launches)))
    return out


def frame(c: Counters, report: str) -> Any:
    """The per-instruction frame of :class:`Counters` (the columns of :mod:`ncu_roof.read.source`)."""
    import pandas as pd

    from ncu_roof.read.source.frame import frame_columns

    n = len(c.pcs)
    offsets = np.full(n, -1, dtype=np.int64)
    lines = np.full(n, -1, dtype=np.int64)
    functions = np.full(n, None, dtype=object)
    files = np.full(n, None, dtype=object)
    operations = np.full(n, None, dtype=object)
    module = c.module
    if module is not None:
        r = module.resolve(c.pcs)
        operations = r.operation
        offsets = r.offset.copy()
        lines = np.where(r.line > 0, r.line, -1)
        named = r.function >= 0
        functions[named] = np.array(module.names, dtype=object)[r.function[named]]
        lined = (r.file >= 0) & (r.line > 0)
        if lined.any():
            files[lined] = np.array(module.table.files, dtype=object)[r.file[lined]]
    if len(c.function_pcs) and (offsets < 0).any():  # no module: offsets from the launch's function addresses
        at = np.searchsorted(c.function_pcs, c.pcs, side="right") - 1
        fill = (offsets < 0) & (at >= 0)
        offsets[fill] = (c.pcs[fill] - c.function_pcs[np.maximum(at, 0)][fill]).astype(np.int64)
    data: dict[str, Any] = {"report": np.full(n, report, dtype=object), "id": np.full(n, c.id, dtype=np.int64),
                            "kernel": np.full(n, c.kernel, dtype=object), "function": functions,
                            "pc": c.pcs.astype(np.int64), "offset": offsets, "file": files, "line": lines,
                            "sass": np.full(n, None, dtype=object), "operation": operations, **c.values}
    return frame_columns(pd.DataFrame(data, copy=False))


def iter_instructions(path: str | Path, ids: Iterable[int] | None = None,
                      report: str | None = None) -> Iterator[tuple[int, Any, dict[str, str]]]:
    """For each wanted launch that has Source Counters, in file order: its id, its per-instruction
    frame and the source texts its module carries. Launches without them are left out."""
    for c in iter_counters(path, ids):
        yield c.id, frame(c, report or str(path)), (c.module.texts if c.module else {})


def _module(source: Any, candidates: list[tuple[int, int]], at: int, buf: FileBytes,
            cache: dict[Any, Module | None]) -> Module | None:
    """A launch's module: inside the launch (one per distinct cubin), or the SourceData it refers
    to, the last one before it in the file (each block repeats its process's modules; some copies
    lack the cubin or the load addresses, which are taken from another copy of the same reference)."""
    if source.Binary:
        inside = ("inside", hash(source.Binary), len(source.Binary),
                  tuple((f.SymbolName, f.Address) for f in source.RelocationData.Functions))
        if inside not in cache:
            cache[inside] = Module.of(source)
        return cache[inside]
    if not candidates:
        return None
    before = [c for c in candidates if c[0] < at]
    key = before[-1] if before else candidates[0]
    if key not in cache:
        pb = schema()
        copies = {c: pb.SourceData.FromString(buf[c[0] : c[0] + c[1]]) for c in candidates}
        chosen = pb.SourceData()
        chosen.CopyFrom(copies[key])
        if not chosen.Binary:
            chosen.Binary = next((c.Binary for c in copies.values() if c.Binary), b"")
        named = {f.SymbolName for f in chosen.RelocationData.Functions}
        for copy in copies.values():  # each copy may name only the functions its process loaded
            for f in copy.RelocationData.Functions:
                if f.SymbolName not in named:
                    named.add(f.SymbolName)
                    chosen.RelocationData.Functions.add().CopyFrom(f)
        if not len(chosen.SourceFiles.Files):
            donor = next((c for c in copies.values() if len(c.SourceFiles.Files)), None)
            if donor is not None:
                chosen.SourceFiles.CopyFrom(donor.SourceFiles)
        cache[key] = Module.of(chosen)
    return cache[key]


def line_tables(path: str | Path) -> tuple[int, int]:
    """How many distinct cubins a report stores and how many of them carry a line table (the program
    was built with line information): the modules of its blocks, else those inside its launches."""
    path = Path(path)
    pb = schema()
    size = path.stat().st_size
    with path.open("rb") as fh:
        buf = FileBytes(fh.fileno(), size)
        found = index(buf, size, path)
        binaries = (pb.SourceData.FromString(buf[off : off + n]).Binary for off, n in found.sources)
        counted = _count_lined(binaries)
        if counted[0] == 0:
            inside = (pb.SourceResult.FromString(os.pread(fh.fileno(), launch.size, launch.offset)).Source.Binary
                      for launch in found.launches if launch.kind == "kernel")
            counted = _count_lined(inside)
    return counted


def _count_lined(binaries: Iterable[bytes]) -> tuple[int, int]:
    """The distinct cubins among ``binaries`` and how many of them have a line table."""
    seen: set[int] = set()
    lined = 0
    for binary in binaries:
        key = hash(binary)
        if not binary or key in seen:
            continue
        seen.add(key)
        lined += bool(read_line_table(binary).functions)
    return len(seen), lined
