"""Kernel names for people: ncu's short function name, made unique where two kernels share it.

Enters: demangled signatures (and a table of launches); leaves: short names
(:func:`short_kernel_name`, as ncu's ``--print-kernel-base function``) and the table's ``kernel``
column made unique (:func:`disambiguate`).

ncu names every CUTLASS kernel ``Kernel`` and every instantiation of a template by its function
name, so different kernels would be added up as one. Where one short name stands for several
signatures in a table, each gets its first template argument (itself shortened) and, if that is
not enough, a number: ``Kernel<Gemm>``, ``Kernel<cutlass_70_tensorop_s884gemm_f16_128x128_nn>``,
``InitializeMatrix_kernel<__half>``.
"""

from __future__ import annotations

import pandas as pd


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


def disambiguate(table: pd.DataFrame) -> pd.Series:
    """``kernel`` with the names that stand for several signatures made unique (same index)."""
    names = table["kernel"].astype("object")
    signatures = table["kernel_demangled"].where(table["kernel_demangled"].notna(), names).astype(str)
    kinds = pd.DataFrame({"short": names.astype(str), "sig": signatures}).drop_duplicates()
    shared = kinds.groupby("short")["sig"].transform("nunique") > 1
    if not shared.any():
        return names
    renamed = {(str(r.short), str(r.sig)): _qualified(str(r.short), str(r.sig)) for r in kinds[shared].itertuples()}
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
