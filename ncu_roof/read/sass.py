"""SASS operations from a cubin: the ELF a report's ``SourceData`` stores, and the offsets of a
function's instructions, in; out, each instruction's operation as Nsight Compute names it in
``sass__inst_executed_per_opcode`` (``DFMA``, ``IMAD``; ``MUFU.RCP64H`` and ``HFMA2.MMA``, whose
modifier says what they do), None where this reader does not know it.

From Volta (sm_70) to Hopper (sm_90) an instruction is 128 bits; the low 9 bits name the operation
(bits 9 to 11 the operand form: register, immediate, constant, uniform) and bits 74 to 77 MUFU's
function. The table below is what Nsight Compute's disassembly (ncu 2024.1.1's source page for
sm_70, NVIDIA's ``ncu_report`` for the rest) says of each code, over the real reports of sm_70,
75, 80, 86, 89 and 90: no code was named two operations on any of them. Other architectures
(Maxwell and Pascal's 64-bit encoding, Blackwell's not yet seen) and other codes are left unknown.
"""

from __future__ import annotations

import struct

import numpy as np

_ELF64_LE = b"\x7fELF\x02\x01"
_ELFOSABI_CUDA, _OLD_ABI = 51, 7  # e_ident[7], e_ident[8]: the layout whose e_flags' low byte is the SM
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym
_SHT_SYMTAB, _STT_FUNC = 2, 2
# SM versions of the encoding read here: checked on 70, 75, 80, 86, 89, 90; 72 and 87 are
# Volta's and Ampere's embedded parts
DECODED_SM = frozenset({70, 72, 75, 80, 86, 87, 89, 90})

_MUFU = 0x108
_MUFU_FUNCTIONS = {0: "COS", 1: "SIN", 2: "EX2", 4: "RCP", 5: "RSQ", 6: "RCP64H"}
OPERATIONS: dict[int, str] = {
    0x002: "MOV", 0x003: "P2R", 0x004: "R2P", 0x005: "CS2R", 0x006: "VOTE", 0x007: "SEL", 0x008: "FSEL",
    0x00B: "FSETP", 0x00C: "ISETP", 0x010: "IADD3", 0x011: "LEA", 0x012: "LOP3", 0x013: "IABS", 0x016: "PRMT",
    0x017: "IMNMX", 0x019: "SHF", 0x01A: "SGXT", 0x01B: "BMSK", 0x01C: "PLOP3", 0x01F: "PLOP3", 0x020: "FMUL",
    0x021: "FADD", 0x023: "FFMA", 0x024: "IMAD", 0x025: "IMAD", 0x026: "IDP", 0x027: "IMAD", 0x028: "DMUL",
    0x029: "DADD", 0x02A: "DSETP", 0x02B: "DFMA", 0x030: "HADD2", 0x031: "HFMA2", 0x032: "HMUL2",
    0x035: "HFMA2.MMA", 0x036: "VIADD", 0x037: "IMMA", 0x039: "I2IP", 0x03B: "LDSM", 0x03C: "HMMA",
    0x03E: "F2FP", 0x045: "I2FP", 0x082: "UMOV", 0x086: "VOTEU", 0x087: "USEL", 0x08C: "UISETP",
    0x090: "UIADD3", 0x091: "ULEA", 0x092: "ULOP3", 0x096: "UPRMT", 0x099: "USHF", 0x0A4: "UIMAD", 0x0A5: "UIMAD",
    0x0B9: "ULDC", 0x100: "FLO", 0x101: "BREV", 0x102: "FCHK", 0x105: "F2I", 0x106: "I2F", 0x107: "FRND",
    0x108: "MUFU", 0x110: "F2F", 0x111: "F2I", 0x112: "I2F", 0x118: "NOP", 0x119: "S2R", 0x11A: "DEPBAR",
    0x11B: "ENDCOLLECTIVE", 0x11D: "BAR", 0x141: "BSYNC", 0x142: "BREAK", 0x143: "CALL", 0x144: "CALL",
    0x145: "BSSY", 0x146: "YIELD", 0x147: "BRA", 0x148: "WARPSYNC", 0x14D: "EXIT", 0x14E: "LEPC", 0x150: "RET",
    0x155: "BMOV", 0x156: "BMOV", 0x15C: "BPT", 0x15D: "NANOSLEEP", 0x180: "LD", 0x181: "LDG", 0x182: "LDC",
    0x183: "LDL", 0x184: "LDS", 0x185: "ST", 0x186: "STG", 0x187: "STL", 0x188: "STS", 0x189: "SHFL",
    0x18F: "CCTL", 0x192: "MEMBAR", 0x1A8: "ATOMG", 0x1AB: "ERRBAR", 0x1AE: "LDGSTS", 0x1AF: "LDGDEPBAR",
    0x1C2: "R2UR", 0x1C3: "S2UR", 0x1C4: "REDUX",
}


def sm_version(elf: bytes) -> int | None:
    """The SM a cubin was built for (86 for sm_86), where its header says it in the layout read here."""
    if not elf.startswith(_ELF64_LE) or len(elf) < 0x40 or elf[7] != _ELFOSABI_CUDA or elf[8] != _OLD_ABI:
        return None
    (flags,) = struct.unpack_from("<I", elf, 0x30)
    return flags & 0xFF


def _function_code(elf: bytes) -> dict[str, bytes]:
    """Each function symbol's code: its bytes in its section (a relocatable cubin's symbol value is
    the offset there; a linked image's is the loaded address of its section, which it opens)."""
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    entsize, count = struct.unpack_from("<HH", elf, 0x3A)
    sections = [_SECTION.unpack_from(elf, shoff + i * entsize) for i in range(count)]
    found: list[tuple[str, int, int, int]] = []  # name, section, value, size
    for sec in sections:
        if sec[1] != _SHT_SYMTAB or not sec[9] or sec[6] >= count:
            continue
        strings = sections[sec[6]][4]
        for k in range(sec[5] // sec[9]):
            name, info, _, shndx, value, size = _SYMBOL.unpack_from(elf, sec[4] + k * sec[9])
            if info & 0xF == _STT_FUNC and 0 < shndx < count and size:
                end = elf.find(b"\0", strings + name)
                found.append((elf[strings + name : end].decode("utf-8", "replace"), shndx, value, size))
        break
    out = {}
    for name, shndx, value, size in found:
        _, _, _, addr, offset, sec_size, *_ = sections[shndx]
        start = value - addr if addr <= value < addr + sec_size else 0
        if 0 <= start and start + size <= sec_size:
            out[name] = elf[offset + start : offset + start + size]
    return out


def function_codes(elf: bytes, names: list[str]) -> dict[str, np.ndarray]:
    """The operation code of each instruction of the named functions, one per 16 bytes: the low 9
    bits, and MUFU's function above them (bit 9 on); {} where the encoding is not one read here or
    the cubin does not decode."""
    if sm_version(elf) not in DECODED_SM:
        return {}
    try:
        code = _function_code(elf)
    except (struct.error, IndexError, ValueError):
        return {}
    out = {}
    for name in names:
        body = code.get(name)
        if body is None or len(body) < 16:
            continue
        words = np.frombuffer(body[: len(body) // 16 * 16], dtype="<u8").reshape(-1, 2)
        op = (words[:, 0] & 0x1FF).astype(np.uint16)
        mufu = op == _MUFU
        op[mufu] |= (((words[mufu, 1] >> 10) & 0xF).astype(np.uint16) << 10) | 0x200
        out[name] = op
    return out


def _name(code: int) -> str | None:
    if code & 0x200:
        function = _MUFU_FUNCTIONS.get(code >> 10)
        return f"MUFU.{function}" if function else "MUFU"
    return OPERATIONS.get(code)


_NAMES = np.array([_name(code) for code in range(1 << 14)], dtype=object)  # every code function_codes gives


def operation_names(codes: np.ndarray) -> np.ndarray:
    """Each code of :func:`function_codes` as an operation's name (None unknown), as objects."""
    return _NAMES[codes.astype(np.intp)]


def operation_of_text(sass: str | None) -> str | None:
    """The operation of a disassembled instruction (``@!P0 DFMA R2, ...`` -> ``DFMA``;
    ``MUFU.RCP64H R3, R5`` -> ``MUFU.RCP64H``), named as :func:`operation_names` names it."""
    if not sass:
        return None
    words = [w for w in sass.split() if not w.startswith("@")]
    if not words:
        return None
    parts = words[0].rstrip(",;").split(".")
    if parts[0] == "MUFU" or parts[:2] == ["HFMA2", "MMA"]:
        return ".".join(parts[:2])
    return parts[0]
