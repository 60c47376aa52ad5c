"""A cubin's line table: the ELF a report's ``SourceData`` stores in; out, for each function, which
source file and line each instruction offset came from (:class:`LineTable`), and the size of
each function (to tell which function a PC lies in).

A cubin built with line information (``nvcc -lineinfo``, ``-G``, or a compiler that adds it)
carries a DWARF ``.debug_line`` section: one line program per function, each starting with
``DW_LNE_set_address 0`` that a relocation (``.rel.debug_line``) points at the function's
symbol (a linked image, as CUDA.jl loads, has the symbol's address there instead: offsets are
from it). Rows apply from their address to the next row's (DWARF's rule); offsets past a
sequence's end have no line. Where several rows share an address (inlined code: NVIDIA's
extended opcode 0x90 marks the call site of each), the first one is the instruction's line, as
Nsight Compute shows it. DWARF versions 2 to 5 are read; a program this reader cannot
follow costs its function's lines, never the report (:attr:`LineTable.problems`).
"""

from __future__ import annotations

import posixpath
import struct
from dataclasses import dataclass, field

import numpy as np

from ncu_roof.read.native.wire import varint as uleb128  # DWARF's ULEB128 is protobuf's varint

_ELF64_LE = b"\x7fELF\x02\x01"
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym
_REL, _RELA = struct.Struct("<QQ"), struct.Struct("<QQq")
_SHT_SYMTAB, _SHT_RELA, _SHT_REL, _STT_FUNC = 2, 4, 9, 2


@dataclass
class FunctionLines:
    """One function's rows: ``offsets`` ascending, each row's file (index into the table's files)
    and line (0 where a sequence ends: no line)."""

    offsets: np.ndarray
    files: np.ndarray
    lines: np.ndarray


@dataclass
class LineTable:
    """A cubin's functions (name -> size in bytes) and, where it has line information, their lines."""

    sizes: dict[str, int] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)  # a function's symbol value: 0 until linked
    files: list[str] = field(default_factory=list)
    functions: dict[str, FunctionLines] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def lookup_indices(self, function: str, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The file (index into ``files``; -1 none) and line (0: none) of each offset into ``function``."""
        rows = self.functions.get(function)
        if rows is None or not len(rows.offsets):
            return np.full(len(offsets), -1, dtype=np.int64), np.zeros(len(offsets), dtype=np.int64)
        at = np.searchsorted(rows.offsets, offsets, side="right") - 1
        ok = at >= 0
        line = np.where(ok, rows.lines[np.maximum(at, 0)], 0).astype(np.int64)
        fidx = np.where(ok & (line > 0), rows.files[np.maximum(at, 0)], -1).astype(np.int64)
        fidx[(fidx >= len(self.files)) | (fidx < 0)] = -1
        return fidx, line


def _cstr(data: bytes, at: int) -> tuple[str, int]:
    end = data.find(b"\0", at)
    end = len(data) if end < 0 else end
    return data[at:end].decode("utf-8", "replace"), end + 1


def _sleb(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (value - (1 << shift) if b & 0x40 else value), pos


def read_line_table(elf: bytes) -> LineTable:
    """The functions and line table of a cubin; an empty table for anything that is not a
    little-endian ELF64, with a problem said where the file is cut or damaged."""
    out = LineTable()
    if not elf.startswith(_ELF64_LE) or len(elf) < 0x40:
        return out
    try:
        (shoff,) = struct.unpack_from("<Q", elf, 0x28)
        entsize, count, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
        sections = [_SECTION.unpack_from(elf, shoff + i * entsize) for i in range(count)]
        names = [_cstr(elf, sections[shstrndx][4] + s[0])[0] if shstrndx < count else "" for s in sections]
        symbols: list[str] = []
        for sec in sections:
            if sec[1] != _SHT_SYMTAB or not sec[9] or sec[6] >= count:
                continue
            strings = sections[sec[6]][4]
            for k in range(sec[5] // sec[9]):
                name, info, _, _, value, size = _SYMBOL.unpack_from(elf, sec[4] + k * sec[9])
                text = _cstr(elf, strings + name)[0]
                symbols.append(text)
                if info & 0xF == _STT_FUNC:
                    out.sizes[text] = int(size)
                    out.values[text] = int(value)
            break
        if ".debug_line" in names:
            k = names.index(".debug_line")
            sec = sections[k]
            relocs = _relocations(elf, sections, k, symbols)
            _programs(elf[sec[4] : sec[4] + sec[5]], relocs, out,
                      _section(elf, sections, names, ".debug_line_str"), _section(elf, sections, names, ".debug_str"))
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        out.problems.append(f"the cubin's line table does not decode ({type(exc).__name__})")
    return out


def _section(elf: bytes, sections: list[tuple[int, ...]], names: list[str], name: str) -> bytes:
    if name not in names:
        return b""
    sec = sections[names.index(name)]
    return elf[sec[4] : sec[4] + sec[5]]


def _relocations(elf: bytes, sections: list[tuple[int, ...]], target: int, symbols: list[str]) -> dict[int, str]:
    """Offset in section ``target`` -> the symbol a relocation there names."""
    out: dict[int, str] = {}
    for sec in sections:
        if sec[1] not in (_SHT_REL, _SHT_RELA) or sec[7] != target:
            continue
        shape = _REL if sec[1] == _SHT_REL else _RELA
        for k in range(sec[5] // shape.size):
            entry = shape.unpack_from(elf, sec[4] + k * shape.size)
            index = entry[1] >> 32
            if 0 <= index < len(symbols):
                out[entry[0]] = symbols[index]
    return out


def _v5_entries(data: bytes, pos: int, line_str: bytes, strs: bytes,
                offset64: bool) -> tuple[list[dict[int, object]], int]:
    """A DWARF 5 directory or file-name table: entries of (content type -> value)."""
    count = data[pos]
    pos += 1
    formats = []
    for _ in range(count):
        kind, pos = uleb128(data, pos)
        form, pos = uleb128(data, pos)
        formats.append((kind, form))
    n, pos = uleb128(data, pos)
    entries = []
    for _ in range(n):
        entry: dict[int, object] = {}
        for kind, form in formats:
            value: object
            if form == 0x08:  # string
                value, pos = _cstr(data, pos)
            elif form in (0x1F, 0x0E):  # line_strp, strp
                width = 8 if offset64 else 4
                (at,) = struct.unpack_from("<Q" if offset64 else "<I", data, pos)
                pos += width
                value = _cstr(line_str if form == 0x1F else strs, at)[0]
            elif form == 0x0F:  # udata
                value, pos = uleb128(data, pos)
            elif form in (0x0B, 0x05, 0x06, 0x07, 0x1E):  # data1, data2, data4, data8, data16
                width = {0x0B: 1, 0x05: 2, 0x06: 4, 0x07: 8, 0x1E: 16}[form]
                value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
            elif form == 0x09:  # block
                size, pos = uleb128(data, pos)
                value, pos = None, pos + size
            else:
                raise ValueError(f"DWARF form {form:#x}")
            entry[kind] = value
        entries.append(entry)
    return entries, pos


def _programs(data: bytes, relocs: dict[int, str], out: LineTable, line_str: bytes, strs: bytes) -> None:
    """Run every line program of a ``.debug_line`` section into ``out``."""
    pos = 0
    rows: Rows = {}
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from("<I", data, pos)
        pos += 4
        offset64 = length == 0xFFFFFFFF
        if offset64:
            (length,) = struct.unpack_from("<Q", data, pos)
            pos += 8
        end = pos + length
        version = struct.unpack_from("<H", data, pos)[0]
        pos += 2
        if version >= 5:
            pos += 2  # address_size, segment_selector_size
        header_len = struct.unpack_from("<Q" if offset64 else "<I", data, pos)[0]
        pos += 8 if offset64 else 4
        program = pos + header_len
        if version < 2 or version > 5:
            out.problems.append(f"a line program of DWARF version {version} was skipped")
            pos = end
            continue
        min_inst = data[pos]
        pos += 1
        if version >= 4:
            pos += 1  # maximum_operations_per_instruction
        pos += 1  # default_is_stmt
        line_base = struct.unpack_from("<b", data, pos)[0]
        line_range, opcode_base = data[pos + 1], data[pos + 2]
        lengths = list(data[pos + 3 : pos + 3 + opcode_base - 1])
        pos += 3 + opcode_base - 1
        files = _file_names(data, pos, version, line_str, strs, offset64)
        base = len(out.files)
        out.files += files
        machine = _Machine(relocs, out.values, rows, base, 0 if version >= 5 else 1)
        _run(data, program, end, machine, (min_inst, line_base, line_range, opcode_base, lengths))
        pos = end
    for name, found in rows.items():
        found.sort(key=lambda r: r[0])  # stable: rows at one address stay in program order
        arr = np.array(found, dtype=np.int64).reshape(-1, 3)
        first = np.ones(len(arr), dtype=bool)
        first[1:] = arr[1:, 0] != arr[:-1, 0]
        arr = arr[first]
        out.functions[name] = FunctionLines(arr[:, 0], arr[:, 1], arr[:, 2])


def _file_names(data: bytes, pos: int, version: int, line_str: bytes, strs: bytes, offset64: bool) -> list[str]:
    """The program's file names, each joined to its directory (index 0 first in DWARF 5, 1 before)."""
    if version >= 5:
        dirs, pos = _v5_entries(data, pos, line_str, strs, offset64)
        entries, _ = _v5_entries(data, pos, line_str, strs, offset64)
        dir_names = [str(d.get(1, "")) for d in dirs]
        found = [(str(e.get(1, "")), int(str(e.get(2, 0) or 0))) for e in entries]  # DW_LNCT_path, directory_index
        return [_join(dir_names[d] if d < len(dir_names) else "", n) for n, d in found]
    dir_names = [""]
    while data[pos]:
        name, pos = _cstr(data, pos)
        dir_names.append(name)
    pos += 1
    names = [""]  # DWARF < 5 counts files from 1
    while data[pos]:
        name, pos = _cstr(data, pos)
        d, pos = uleb128(data, pos)
        _, pos = uleb128(data, pos)
        _, pos = uleb128(data, pos)
        names.append(_join(dir_names[d] if d < len(dir_names) else "", name))
    return names


def _join(folder: str, name: str) -> str:
    """A file's path as Nsight Compute shows it: joined to its folder unless absolute, with forward
    slashes, ``.`` and doubled separators gone."""
    absolute = name.startswith(("/", "\\")) or name[1:2] == ":"
    path = name if not folder or absolute else f"{folder}/{name}"
    clean = posixpath.normpath(path.replace("\\", "/"))
    return clean[1:] if clean.startswith("//") else clean


Rows = dict[str, list[tuple[int, int, int]]]


@dataclass
class _Machine:
    """The line-program state machine's registers and the rows of the sequence being run."""

    relocs: dict[int, str]
    values: dict[str, int]
    rows: Rows
    base: int
    first_file: int
    address: int = 0
    file: int = 0
    line: int = 1
    function: str | None = None
    seq: list[tuple[int, int, int]] = field(default_factory=list)

    def emit(self, at_end: bool = False) -> None:
        self.seq.append((self.address, self.base + self.file, 0 if at_end else self.line))

    def extended(self, data: bytes, pos: int, size: int) -> None:
        """end_sequence (the rows go to the function) and set_address (whose operand a relocation
        points at the function's symbol); other extended opcodes are skipped."""
        sub = data[pos]
        if sub == 1:
            self.emit(at_end=True)
            if self.function is not None:
                self.rows.setdefault(self.function, []).extend(self.seq)
            self.seq, self.function = [], None
            self.address, self.file, self.line = 0, self.first_file, 1
        elif sub == 2:
            self.function = self.relocs.get(pos + 1)
            operand = int.from_bytes(data[pos + 1 : pos + size], "little")
            self.address = operand - self.values.get(self.function or "", 0)


def _run(data: bytes, pos: int, end: int, m: _Machine, params: tuple[int, int, int, int, list[int]]) -> None:
    """Run one line program: rows of (address, file, line) per function into ``m.rows``."""
    min_inst, line_base, line_range, opcode_base, lengths = params
    m.file = m.first_file
    while pos < end:
        op = data[pos]
        pos += 1
        if op >= opcode_base:
            adj = op - opcode_base
            m.address += (adj // line_range) * min_inst
            m.line += line_base + adj % line_range
            m.emit()
        elif op == 0:
            size, pos = uleb128(data, pos)
            m.extended(data, pos, size)
            pos += size
        elif op == 1:
            m.emit()
        elif op == 2:
            adv, pos = uleb128(data, pos)
            m.address += adv * min_inst
        elif op == 3:
            adv, pos = _sleb(data, pos)
            m.line += adv
        elif op == 4:
            m.file, pos = uleb128(data, pos)
        elif op == 8:
            m.address += ((255 - opcode_base) // line_range) * min_inst
        elif op == 9:
            m.address += struct.unpack_from("<H", data, pos)[0]
            pos += 2
        else:  # set_column, negate_stmt, ... or an opcode this reader does not know: skip its operands
            for _ in range(lengths[op - 1] if op - 1 < len(lengths) else 0):
                _, pos = uleb128(data, pos)
