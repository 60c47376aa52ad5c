"""The Source Counters of a ``.ncu-rep``, read by ncu-roof's own reader: a report path and launch
ids in; out, one per-instruction frame per launch (:func:`iter_instructions`), in the columns of
:mod:`ncu_roof.read.source`.

A launch stores each source counter as an instanced metric whose correlation IDs are the
instructions' addresses (PCs, as loaded on the GPU). Its module (``SourceData``, by reference in
the block, or inside the launch) holds the cubin, where each function was loaded
(``RelocationData``) and, with ``--import-source yes``, the source text. A PC's function is the
loaded function that spans it; its offset is the PC less the function's address; its file and
line come from the cubin's line table (:mod:`ncu_roof.read.cubin_lines`).

Launches are read one at a time (``os.pread``), so memory is one launch and its frame. The
instances are decoded with one regular expression per metric over the usual encoding
(``1a L 0a L 28 <pc> 12 L 28 <count>``), checked to tile the list exactly, and by hand otherwise.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ncu_roof.read import metrics
from ncu_roof.read.cubin_lines import LineTable, read_line_table
from ncu_roof.read.native_index import FileBytes, index
from ncu_roof.read.native_wire import F64, schema, skip_field, varint

_ELEMENT = re.compile(rb"\x1a[\x00-\x7f]\x0a[\x00-\x7f]\x28([\x80-\xff]{0,9}[\x00-\x7f])"
                      rb"\x12[\x00-\x7f]\x28([\x80-\xff]{0,9}[\x00-\x7f])", re.DOTALL)
_F32 = struct.Struct("<f")


@dataclass
class Module:
    """One module of a report: its line table, where its functions were loaded, its source texts."""

    table: LineTable
    starts: np.ndarray  # loaded addresses, ascending
    names: list[str]
    ends: np.ndarray
    texts: dict[str, str] = field(default_factory=dict)

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
        return cls(table, starts, names, ends, texts)


def _varints(parts: list[bytes]) -> np.ndarray:
    """Decode varints (each a bytes object) at once."""
    if not parts:
        return np.zeros(0, dtype=np.uint64)
    raw = np.frombuffer(b"".join(parts), dtype=np.uint8)
    lens = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    starts = np.zeros(len(parts), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    within = (np.arange(len(raw)) - np.repeat(starts, lens)).astype(np.uint64)
    return np.add.reduceat((raw & 0x7F).astype(np.uint64) << (np.uint64(7) * within), starts)


def _value(buf: bytes, pos: int, end: int) -> tuple[int | None, float | None]:
    """A ``ProfileMetricValue`` as (integer, number): the integer where it holds one."""
    whole: int | None = None
    number: float | None = None
    while pos < end:
        key, pos = varint(buf, pos)
        if key in (0x28, 0x20):
            whole, pos = varint(buf, pos)
            number = float(whole)
        elif key == 0x19:
            number = F64.unpack_from(buf, pos)[0]
            pos += 8
        elif key == 0x15:
            number = _F32.unpack_from(buf, pos)[0]
            pos += 4
        else:
            pos = skip_field(buf, pos, key & 7)
    return whole, number


def _slow(elem: bytes, pos: int) -> tuple[np.ndarray, np.ndarray]:
    """The instances of an encoding the fast path does not take, element by element."""
    pcs: list[int] = []
    values: list[float] = []
    end = len(elem)
    while pos < end:
        key, pos = varint(elem, pos)
        if key != 0x1A:
            pos = skip_field(elem, pos, key & 7)
            continue
        n, pos = varint(elem, pos)
        stop, pc, value = pos + n, None, None
        while pos < stop:
            sub, pos = varint(elem, pos)
            if sub & 7 != 2:
                pos = skip_field(elem, pos, sub & 7)
                continue
            length, pos = varint(elem, pos)
            if sub == 0x0A:
                pc = _value(elem, pos, pos + length)[0]
            elif sub == 0x12:
                value = _value(elem, pos, pos + length)[1]
            pos += length
        if pc is not None:
            pcs.append(pc)
            values.append(np.nan if value is None else value)
    return np.array(pcs, dtype=np.uint64), np.array(values, dtype=np.float64)


def instances(elem: bytes, start: int) -> tuple[np.ndarray, np.ndarray]:
    """An instanced metric's (PCs, values) from its encoding after the ``NameId``."""
    pos = start
    if elem[pos : pos + 1] == b"\x12":  # the aggregate value
        n, pos = varint(elem, pos + 1)
        pos += n
    found = _ELEMENT.findall(elem, pos)
    if found:
        pcs, values = zip(*found, strict=True)
        if sum(map(len, pcs)) + sum(map(len, values)) + 8 * len(found) == len(elem) - pos:
            return _varints(list(pcs)), _varints(list(values)).astype(np.float64)
    return _slow(elem, pos)


def _counters(elems: Iterable[bytes], table: list[str]) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """The launch's source counters by column (newer names first) and its function addresses."""
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    old: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    function_pcs = np.zeros(0, dtype=np.uint64)
    for elem in elems:
        nid, pos = varint(elem, 1)
        name = table[nid] if nid < len(table) else ""
        column = metrics.SOURCE_COUNTERS.get(name)
        if column is not None:
            found[column] = instances(elem, pos)
        elif name in metrics.SOURCE_COUNTERS_OLD:
            old[metrics.SOURCE_COUNTERS_OLD[name]] = instances(elem, pos)
        elif name == metrics.FUNCTION_PCS:
            function_pcs = np.sort(instances(elem, pos)[1].astype(np.uint64))
    for column, pair in old.items():
        found.setdefault(column, pair)
    return found, function_pcs


def _frame(counters: dict[str, tuple[np.ndarray, np.ndarray]], function_pcs: np.ndarray, module: Module | None,
           identity: dict[str, Any]) -> Any:
    """The per-instruction frame of one launch: every PC any counter names, in address order."""
    import pandas as pd

    from ncu_roof.read.source_frame import frame_columns

    pcs = np.unique(np.concatenate([p for p, _ in counters.values()])) if counters else np.zeros(0, np.uint64)
    functions: list[str | None] = [None] * len(pcs)
    offsets = np.full(len(pcs), -1, dtype=np.int64)
    files: list[str | None] = [None] * len(pcs)
    lines = np.zeros(len(pcs), dtype=np.int64)
    if module is not None and len(module.starts) and len(pcs):
        at = np.searchsorted(module.starts, pcs, side="right") - 1
        inside = (at >= 0) & (pcs < module.ends[np.maximum(at, 0)])
        for k in np.unique(at[inside]):
            mask = inside & (at == k)
            name = module.names[k]
            offs = (pcs[mask] - module.starts[k]).astype(np.int64)
            offsets[mask] = offs
            where = np.flatnonzero(mask)
            names, found = module.table.lookup(name, offs)
            lines[mask] = found
            for i, w in enumerate(where):
                functions[w] = name
                files[w] = names[i]
    if len(function_pcs) and (offsets < 0).any():  # no module: offsets from the launch's function addresses
        at = np.searchsorted(function_pcs, pcs, side="right") - 1
        fill = (offsets < 0) & (at >= 0)
        offsets[fill] = (pcs[fill] - function_pcs[np.maximum(at, 0)][fill]).astype(np.int64)
    data: dict[str, Any] = {**{k: [v] * len(pcs) for k, v in identity.items()}, "function": functions,
                            "pc": pcs.astype(np.int64), "offset": np.where(offsets >= 0, offsets, -1),
                            "file": files, "line": np.where(lines > 0, lines, -1), "sass": [None] * len(pcs)}
    for column in metrics.SOURCE_COLUMNS:
        if column not in counters:
            continue
        p, v = counters[column]
        full = np.full(len(pcs), np.nan)
        full[np.searchsorted(pcs, p)] = v
        data[column] = full
    return frame_columns(pd.DataFrame(data))


def _reference(buf: FileBytes, offset: int, size: int) -> int | None:
    """A SourceData's ``Reference`` (field 1, its first bytes) without reading its cubin."""
    head = buf[offset : offset + min(size, 16)]
    if head[:1] != b"\x08":
        return None
    return varint(head, 1)[0]


def iter_instructions(path: str | Path, ids: Iterable[int] | None = None,
                      report: str | None = None) -> Iterator[tuple[int, Any, dict[str, str]]]:
    """For each wanted launch that has Source Counters, in file order: its id, its per-instruction
    frame and the source texts its module carries. Launches without them are left out."""
    path = Path(path)
    pb = schema()
    wanted = None if ids is None else set(ids)
    size = path.stat().st_size
    with path.open("rb") as fh:
        buf = FileBytes(fh.fileno(), size)
        found = index(buf, size, path)
        refs: dict[int | None, list[tuple[int, int]]] = {}
        for off, n in found.sources:
            refs.setdefault(_reference(buf, off, n), []).append((off, n))
        modules: dict[tuple[int, int], Module | None] = {}
        for launch_id, launch in enumerate(found.launches):
            if launch.kind != "kernel" or (wanted is not None and launch_id not in wanted):
                continue
            result = pb.SourceResult.FromString(os.pread(fh.fileno(), launch.size, launch.offset))
            counters, function_pcs = _counters(result.MetricResults, found.tables[launch.table])
            if not counters:
                continue
            module = _module(result.Source, refs.get(result.Source.Reference, []), launch.offset, buf, modules)
            identity = {"report": report or str(path), "id": launch_id,
                        "kernel": result.KernelFunctionName or result.KernelMangledName}
            yield launch_id, _frame(counters, function_pcs, module, identity), (module.texts if module else {})


def _module(source: Any, candidates: list[tuple[int, int]], at: int, buf: FileBytes,
            cache: dict[tuple[int, int], Module | None]) -> Module | None:
    """A launch's module: inside the launch, or the SourceData it refers to, the last one before
    it in the file (each block repeats its process's modules; some copies lack the cubin or the
    load addresses, which are taken from another copy of the same reference)."""
    if source.Binary:
        return Module.of(source)
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
