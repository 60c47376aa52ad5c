"""Kernel names for people: ncu's short function name, made unique where two kernels share it.

Enters: demangled signatures (and a table of launches); leaves: short names
(:func:`short_kernel_name`, as ncu's ``--print-kernel-base function``), the name a user knows
where ncu's is not it (:func:`display_name`: Numba's hashed ``[abi:...]`` tags dropped, a CUTLASS
wrapper named by its kernel), the table's ``kernel`` column made unique (:func:`disambiguate`),
the stem that stays when Julia rebuilds a kernel (:func:`stable_stem`), and the tensor-core instruction a
GEMM's name spells (:func:`mma_instruction_flops`).

ncu names every CUTLASS kernel ``Kernel`` and every instantiation of a template by its function
name, so different kernels would be added up as one. Where one short name stands for several
signatures in a table, each gets its first template argument (itself shortened) and, if that is
not enough, a number: ``Kernel<Gemm>``, ``Kernel<cutlass_70_tensorop_s884gemm_f16_128x128_nn>``,
``InitializeMatrix_kernel<__half>``.
"""

from __future__ import annotations

import re

import pandas as pd

# Numba's (NVVM's) ABI tags after a function name: ``f[abi:v1][abi:cw51c...]`` as c++filt
# prints them, ``f[v1,cw51c...]`` as some ncu versions do; the long tag hashes the signature.
_NUMBA_TAGS = re.compile(r"(?:\[abi:[^\[\]]*\])+|\[v\d+,[A-Za-z0-9_$]+\]")
# CUTLASS's kernel wrappers: ncu's function name is the wrapper, the kernel is its argument
CUTLASS_WRAPPERS = ("Kernel", "Kernel2", "device_kernel")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# CUDA.jl names a kernel julia_<function>_<counter>; the counter changes with every build
_JULIA_SUFFIX = re.compile(r"^(julia_\w+?)_\d+$")


def _matching_open(text: str, opening: str, closing: str) -> int | None:
    """Index of the ``opening`` that balances the ``closing`` ending ``text``."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {closing: 1, opening: -1}.get(text[i], 0)
        if depth == 0:
            return i
    return None


def short_kernel_name(name: str) -> str:
    """The function name of a demangled signature, like ncu's ``--print-kernel-base function``.

    >>> short_kernel_name("void ns::Kernel<float, (bool)1>(T1 *, int)")
    'Kernel'
    """
    text = _strip_trailing_group(name.strip(), "(", ")")
    text = _strip_templates(text)
    text = text.rsplit("::", 1)[-1].strip()
    return text.rsplit(" ", 1)[-1] or name


def display_name(short: str, demangled: str | None) -> str:
    """The name a user knows for a kernel whose short (ncu function) name is ``short``.

    Numba kernels lose their hashed ABI tags (ncu's function name of
    ``__main__::reconstruct_svd_cuda_1[abi:v1][abi:cw51c...](...)`` is the tag itself); a CUTLASS
    wrapper (``cutlass::Kernel2<cutlass_80_tensorop_i16832gemm_s8_...>``) takes the name of the
    kernel it wraps, or ``Kernel<Gemm>`` where that is a template. Other names stay.

    >>> display_name("cw51cX", "__main__::f_1[abi:v1][abi:cw51cX](Array<float, 2, C, mutable, aligned>)")
    'f_1'
    >>> display_name("Kernel2", "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_tn_align4>(T1::Params)")
    'cutlass_80_tensorop_s1688gemm_64x64_tn_align4'
    """
    if not isinstance(demangled, str) or not demangled:
        return short
    if _NUMBA_TAGS.search(demangled):
        return short_kernel_name(_NUMBA_TAGS.sub("", demangled))
    if short in CUTLASS_WRAPPERS and "cutlass" in demangled and (args := _template_args(demangled)):
        first = _first_argument(args)
        whole = args.split(",")[0].strip()
        if _IDENTIFIER.fullmatch(whole):
            return whole
        return f"{short}<{first}>"
    return short


def stable_stem(name: str) -> str:
    """``name`` without the counter CUDA.jl appends to a Julia kernel (``julia_runsteps_6563`` ->
    ``julia_runsteps``), which changes whenever the code is rebuilt; other names unchanged."""
    found = _JULIA_SUFFIX.match(name)
    return found.group(1) if found else name


def _strip_trailing_group(text: str, opening: str, closing: str) -> str:
    """Remove a balanced ``(...)`` group at the end of ``text`` (the argument list)."""
    if not text.endswith(closing) or (i := _matching_open(text, opening, closing)) is None:
        return text
    return text[:i].rstrip() or text


def _strip_templates(text: str) -> str:
    """Remove balanced ``<...>`` groups; a stray ``>`` (ncu drops ``<`` of ``<unnamed>``) stays."""
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _template_args(signature: str) -> str | None:
    """The function's own template arguments: the ``<...>`` ending the name, before ``(params)``."""
    text = signature.strip()
    if text.endswith(")") and (i := _matching_open(text, "(", ")")) is not None:
        text = text[:i].rstrip()
    if not text.endswith(">") or (i := _matching_open(text, "<", ">")) is None:
        return None
    return text[i + 1 : -1]


def _first_argument(args: str) -> str:
    depth, out = 0, []
    for ch in args:
        if ch == "," and depth == 0:
            break
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(ch, 0)
        out.append(ch)
    text = "".join(out).strip()
    plain, depth = [], 0
    for ch in text:  # drop nested template arguments, keep the outer name
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            plain.append(ch)
    return "".join(plain).rsplit("::", 1)[-1].strip() or text


def _qualified(short: str, signature: str) -> str:
    args = _template_args(signature)
    return f"{short}<{_first_argument(args)}>" if args else short


def display_names(table: pd.DataFrame) -> pd.Series:
    """The table's ``kernel`` as :func:`display_name` gives it (same index), one call per name."""
    names = table["kernel"].astype("object")
    if "kernel_demangled" not in table:
        return names
    cells = names.tolist()  # lists: a pandas string array yields its cells one call each
    keys = [(k if isinstance(k, str) else None, d if isinstance(d, str) else None)
            for k, d in zip(cells, table["kernel_demangled"].tolist(), strict=True)]
    shown = {key: display_name(*key) if key[0] is not None else None for key in set(keys)}  # type: ignore[arg-type]
    if all(name == key[0] for key, name in shown.items()):
        return names
    return pd.Series([shown[key] if key[0] is not None else name for key, name in zip(keys, cells, strict=True)],
                     index=table.index, dtype="object")


def disambiguate(table: pd.DataFrame) -> pd.Series:
    """``kernel`` with the names that stand for several signatures made unique (same index)."""
    names = table["kernel"].astype("object")
    signatures = table["kernel_demangled"].where(table["kernel_demangled"].notna(), names).astype(str)
    kinds = pd.DataFrame({"short": names.astype(str), "sig": signatures}).drop_duplicates()
    shared = kinds.groupby("short")["sig"].transform("nunique") > 1
    if not shared.any():
        return names
    renamed = {(str(r.short), str(r.sig)): str(r.short) if "<" in str(r.short) else _qualified(str(r.short), str(r.sig))
               for r in kinds[shared].itertuples()}
    counts: dict[str, int] = {}
    for name in renamed.values():
        counts[name] = counts.get(name, 0) + 1
    seen: dict[str, int] = {}
    for key, name in sorted(renamed.items()):
        if counts[name] > 1:
            seen[name] = seen.get(name, 0) + 1
            renamed[key] = f"{name} #{seen[name]}"
    keys = list(zip(names.astype(str), signatures, strict=True))
    return pd.Series([renamed.get(k, n) for k, n in zip(keys, names, strict=True)], index=table.index, dtype="object")


def mangled_function_name(symbol: str) -> str | None:
    """The function name of an Itanium-mangled symbol (as CUPTI and PyTorch traces sometimes give a
    kernel), the same name :func:`short_kernel_name` takes from the demangled signature; None where
    ``symbol`` is not mangled.

    >>> mangled_function_name("_Z10add_kernelPfPKfi")
    'add_kernel'
    >>> mangled_function_name("_ZN2at6native18elementwise_kernelILi128ELi4EEEviT1_")
    'elementwise_kernel'
    """
    if not symbol.startswith("_Z"):
        return None
    i = 3 if symbol.startswith("_ZL") else 2
    nested = symbol.startswith("N", i)
    i += nested
    while i < len(symbol) and symbol[i] in "rVK":  # cv-qualifiers of a nested name
        i += 1
    last = None
    while i < len(symbol):
        ch = symbol[i]
        if ch.isdigit():
            last, i = _source_name(symbol, i)
            if not nested:
                break
        elif ch == "I":  # template arguments: skipped, balanced
            i = _skip_group(symbol, i)
        elif symbol.startswith("St", i):
            i += 2
        elif ch == "S":  # a substitution, S_ or S<seq-id>_
            end = symbol.find("_", i)
            i = end + 1 if end > 0 else len(symbol)
        else:
            break
    return last or None


def _source_name(symbol: str, i: int) -> tuple[str, int]:
    """The length-prefixed name at ``i`` and the index after it."""
    j = i
    while j < len(symbol) and symbol[j].isdigit():
        j += 1
    n = int(symbol[i:j])
    return symbol[j : j + n], j + n


def _skip_group(symbol: str, i: int) -> int:
    """The index after the ``I...E`` group opening at ``i`` (nested groups and names skipped whole)."""
    depth = 0
    while i < len(symbol):
        ch = symbol[i]
        if ch.isdigit():
            i = _source_name(symbol, i)[1]
            continue
        if ch in "INLX":
            depth += 1
        elif ch == "E":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


# A tensor-core instruction shape as CUTLASS's template spells it (the smallest GemmShape, its InstructionShape)
_GEMM_SHAPE = re.compile(r"GemmShape<\(?(?:int)?\)?\s*(\d+),\s*\(?(?:int)?\)?\s*(\d+),\s*\(?(?:int)?\)?\s*(\d+)>")
# ... and as cuBLAS's and CUTLASS's kernel names do: ampere_s16816gemm, cutlass_80_tensorop_i16832gemm, h1688gemm
_NAMED_SHAPE = re.compile(r"(?:^|_)[a-z]*?(16816|1688|16832|16864)gemm")
_NAMED = {"1688": (16, 8, 8), "16816": (16, 8, 16), "16832": (16, 8, 32), "16864": (16, 8, 64)}
MMA_MAX = 16 * 8 * 64  # a warp's mma.sync covers at most this M x N x K (m16n8k64, 4-bit)


def mma_instruction_flops(name: object) -> float | None:
    """FLOPs (or integer operations) of one warp-level tensor instruction, 2 x M x N x K of the mma.sync shape
    a GEMM kernel's name spells: CUTLASS's InstructionShape (``GemmShape<16, 8, 8>``: 2,048, the Turing shape an
    A100 also runs) or cuBLAS's ``s16816gemm`` (4,096); None where the name spells none (Volta's 8x8x4 is issued
    per quad pair: its count is the compute capability's)."""
    text = str(name) if isinstance(name, str) else ""
    shapes = [tuple(int(x) for x in m.groups()) for m in _GEMM_SHAPE.finditer(text)]
    mma = [s for s in shapes if s[0] * s[1] * s[2] <= MMA_MAX and s[0] >= 16]
    if mma:
        m, n, k = min(mma, key=lambda s: s[0] * s[1] * s[2])
        return 2.0 * m * n * k
    named = _NAMED_SHAPE.search(text)
    if named:
        m, n, k = _NAMED[named.group(1)]
        return 2.0 * m * n * k
    return None
