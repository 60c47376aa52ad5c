"""PyTorch ops as regions with their ideal points: ``with ncu_roof.torch.op_regions(): model(x)``.

Every aten op that does work (views are skipped: they move no bytes and launch nothing) runs inside
an NVTX range carrying its algorithmic counts, like :class:`ncu_roof.region`:

- FLOPs from PyTorch's own formulas (``torch.utils.flop_counter``: 2·M·N·K for a matmul, the
  convolution and attention formulas), for the ops it knows; one FLOP per output element for the
  arithmetic pointwise ops (add, sub, mul, div and their in-place forms) and one per input element
  for sum and mean; unknown otherwise (the range then carries bytes only);
- compulsory bytes: each distinct input tensor read once and each output written once (an op that
  reads a tensor twice, or a fused op, still counts it once). Output sizes come from running the op
  on PyTorch's ``meta`` device (shapes only, no data).

The range is named after the op and its shapes (``aten.addmm 64x128,128x256``), so the launches of
one op on one shape form one region; ``diagnose`` then gives each its ideal point, extra bytes and
fusion advice with no hand counts. ``ncu-roof capture --torch-ops SCRIPT`` runs a script under
:func:`op_regions` (``python -m ncu_roof.torch SCRIPT ARGS``). PyTorch is an optional extra.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ncu_roof.region import RegionCounts, region

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map
    from torch.utils.flop_counter import flop_registry
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError("ncu_roof.torch needs PyTorch: pip install 'ncu-roof[torch]' (or torch itself)") from exc


def _tensors(values: Any) -> list[torch.Tensor]:
    flat, _ = tree_flatten(values)
    return [v for v in flat if isinstance(v, torch.Tensor)]


def tensor_bytes(tensors: list[torch.Tensor]) -> int:
    """The bytes of distinct tensors, each once (same data, shape and strides: the same tensor)."""
    seen: set[tuple[int, tuple[int, ...], tuple[int, ...]]] = set()
    total = 0
    for t in tensors:
        key = (t.data_ptr() if t.device.type != "meta" else id(t), tuple(t.shape), tuple(t.stride()))
        if key not in seen:
            seen.add(key)
            total += t.numel() * t.element_size()
    return total


def _shapes(tensors: list[torch.Tensor]) -> str:
    return ",".join("x".join(str(d) for d in t.shape) or "scalar" for t in tensors)


def _meta(value: Any) -> Any:
    return value.to("meta") if isinstance(value, torch.Tensor) else value


def op_counts(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> RegionCounts:
    """The region of one aten op call: its name with shapes, FLOPs (None where torch has no formula)
    and compulsory bytes (inputs once, outputs once; outputs from a run on the meta device)."""
    inputs = _tensors((args, kwargs))
    try:
        out = func(*tree_map(_meta, args), **tree_map(_meta, kwargs))
        outputs = _tensors(out)
    except Exception:  # noqa: BLE001 - an op without a meta kernel: its outputs are not counted
        out, outputs = None, []
    flops = None
    per_element = outputs[:1] if func._overloadpacket in _POINTWISE else inputs[:1] if (
        func._overloadpacket in _REDUCTIONS) else []
    if per_element:
        return RegionCounts(_name(func, inputs), float(per_element[0].numel()),
                            float(tensor_bytes(inputs) + tensor_bytes(outputs)))
    formula = flop_registry.get(func._overloadpacket)
    if formula is not None:
        try:
            flops = float(formula(*args, **kwargs, out_val=out))
        except Exception:  # noqa: BLE001 - a formula that does not fit this overload
            flops = None
    return RegionCounts(_name(func, inputs), flops, float(tensor_bytes(inputs) + tensor_bytes(outputs)))


def _name(func: Any, inputs: list[torch.Tensor]) -> str:
    """``aten.addmm 256,32x128,128x256``: the op and its input shapes (no '[': regions refuse it)."""
    return f"{func._overloadpacket} {_shapes(inputs)}".strip().replace("[", "(").replace("]", ")")


class _OpRegions(TorchDispatchMode):
    """Each working aten op inside a region with its counts; the counts kept in ``seen``."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[RegionCounts] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "is_view", False) or func._overloadpacket in _FREE:
            return func(*args, **kwargs)
        counts = op_counts(func, args, kwargs)
        self.seen.append(counts)
        with region(counts.name, flops=counts.flops, bytes=counts.bytes):
            return func(*args, **kwargs)


_aten = torch.ops.aten
# arithmetic pointwise ops: one FLOP per output element
_POINTWISE = {_aten.add, _aten.sub, _aten.mul, _aten.div, _aten.add_, _aten.sub_, _aten.mul_, _aten.div_}
# reductions: one FLOP per input element
_REDUCTIONS = {_aten.sum, _aten.mean}
# ops that move no data or only metadata
_FREE = {torch.ops.aten.detach, torch.ops.aten.alias, torch.ops.aten.lift_fresh, torch.ops.aten.empty,
         torch.ops.aten.empty_strided, torch.ops.aten.empty_like}


@contextmanager
def op_regions() -> Iterator[list[RegionCounts]]:
    """Every aten op inside runs in a region with its FLOPs and compulsory bytes; yields the list of
    the regions opened (name, flops, bytes), in order."""
    mode = _OpRegions()
    with mode:
        yield mode.seen


def main(argv: list[str] | None = None) -> int:
    """``python -m ncu_roof.torch SCRIPT ARGS``: run a script with every op in its region."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m ncu_roof.torch SCRIPT [ARGS]", file=sys.stderr)
        return 2
    sys.argv = args
    with op_regions():
        runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
