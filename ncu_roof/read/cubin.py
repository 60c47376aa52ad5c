"""The kernels a CUDA module holds: a cubin (the ELF that a report's ``SourceData`` stores) in; out,
its entry functions' names, mangled and as ncu's short function name.

A range, command-list or graph result does not say which kernels ran in it, only which modules
its work came from (``References``); the entry functions of those modules are what the tool can
list. In a cubin an entry function is an ``STT_FUNC`` symbol with ``STO_CUDA_ENTRY`` (0x10) in
``st_other``; device functions and helpers lack it.
"""

from __future__ import annotations

import struct

_ELF64_LE = b"\x7fELF\x02\x01"
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym
_SHT_SYMTAB, _STT_FUNC, _STO_CUDA_ENTRY = 2, 2, 0x10


def _cstr(elf: bytes, at: int) -> str:
    end = elf.find(b"\0", at)
    return elf[at : end if end >= 0 else len(elf)].decode("utf-8", "replace")


def entry_functions(elf: bytes) -> list[str]:
    """The mangled names of a cubin's kernels, in symbol-table order; [] for anything that is not
    a little-endian ELF64 (a compressed or foreign binary) or is cut short."""
    if not elf.startswith(_ELF64_LE) or len(elf) < 0x40:
        return []
    try:
        (shoff,) = struct.unpack_from("<Q", elf, 0x28)
        entsize, count = struct.unpack_from("<HH", elf, 0x3A)
        sections = [_SECTION.unpack_from(elf, shoff + i * entsize) for i in range(count)]
        names: list[str] = []
        for sec in sections:
            if sec[1] != _SHT_SYMTAB or not sec[9] or sec[6] >= len(sections):
                continue
            strings = sections[sec[6]][4]
            for k in range(sec[5] // sec[9]):
                name, info, other, _, _, _ = _SYMBOL.unpack_from(elf, sec[4] + k * sec[9])
                if info & 0xF == _STT_FUNC and other & _STO_CUDA_ENTRY:
                    names.append(_cstr(elf, strings + name))
        return names
    except struct.error:
        return []


def _source_name(text: str, pos: int) -> tuple[str, int] | None:
    digits = pos
    while digits < len(text) and text[digits].isdigit():
        digits += 1
    if digits == pos:
        return None
    n = int(text[pos:digits])
    return text[digits : digits + n], digits + n


def short_name(mangled: str) -> str:
    """ncu's short function name of an Itanium-mangled kernel (``_Z5SobelIfEvP6uchar4S1_ii`` ->
    ``Sobel``, ``_ZN4cute6kernelEv`` -> ``kernel``); the name itself where it is not mangled."""
    if not mangled.startswith("_Z"):
        return mangled
    pos = 2 + (mangled[2:3] == "N")
    last = None
    while pos < len(mangled):
        if mangled.startswith(("L", "K"), pos):  # internal linkage, const member
            pos += 1
            continue
        part = _source_name(mangled, pos)
        if part is None:
            break
        last, pos = part
    return last or mangled
