"""PyTorch ops as regions: FLOPs from torch's formulas, compulsory bytes, the NVTX messages they open."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install 'ncu-roof[torch]')")

from ncu_roof.region import parse_range_message  # noqa: E402
from ncu_roof.torch import main, op_regions, tensor_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
region_mod = importlib.import_module("ncu_roof.region")


@pytest.fixture
def messages(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The NVTX messages pushed, through a recording backend."""
    pushed: list[str] = []
    monkeypatch.setattr(region_mod, "_FOUND", [(pushed.append, lambda: None)])
    return pushed


def test_a_linear_layer_is_two_m_n_k_flops_and_each_tensor_once(messages: list[str]) -> None:
    lin = torch.nn.Linear(128, 256)
    x = torch.randn(32, 128)
    with op_regions() as seen:
        lin(x)
    (addmm,) = seen
    assert addmm.name == "aten.addmm 256,32x128,128x256"
    assert addmm.flops == 2 * 32 * 128 * 256 == 2_097_152
    # bias 256, input 32x128, weight 128x256, output 32x256, float32
    assert addmm.bytes == 4 * (256 + 32 * 128 + 128 * 256 + 32 * 256) == 181_248
    assert [parse_range_message(m) for m in messages] == [addmm]


def test_a_tensor_read_twice_is_counted_once_and_pointwise_ops_are_one_flop_per_element(
        messages: list[str]) -> None:
    y = torch.randn(32, 256)
    with op_regions() as seen:
        y * y
        y.add_(1.0)
    mul, add_ = seen
    assert (mul.flops, mul.bytes) == (32 * 256, 2 * 32 * 256 * 4)
    assert (add_.flops, add_.bytes) == (32 * 256, 2 * 32 * 256 * 4)  # read and written in place


def test_ops_without_a_formula_carry_bytes_only_and_views_open_no_region(messages: list[str]) -> None:
    z = torch.randn(32, 256)
    with op_regions() as seen:
        z.view(256, 32).t()
        torch.nn.functional.layer_norm(z, (256,))
    (ln,) = seen
    assert ln.name == "aten.native_layer_norm 32x256"
    assert ln.flops is None
    assert ln.bytes == 4 * (32 * 256 + 32 * 256 + 32 + 32)  # input, output, mean and rstd


def test_a_convolution_uses_torch_s_formula(messages: list[str]) -> None:
    x, w = torch.randn(1, 3, 16, 16), torch.randn(8, 3, 3, 3)
    with op_regions() as seen:
        torch.nn.functional.conv2d(x, w)
    (conv,) = seen
    out = 1 * 8 * 14 * 14
    assert conv.flops == 2 * out * 3 * 3 * 3 == 84_672
    assert conv.bytes == 4 * (x.numel() + w.numel() + out) == 10_208


def test_the_same_storage_with_another_shape_is_another_tensor() -> None:
    a = torch.zeros(4, 8)
    assert tensor_bytes([a, a, a.view(8, 4)]) == 2 * 4 * 8 * 4


def test_a_script_runs_with_its_ops_in_regions(tmp_path: Path, messages: list[str]) -> None:
    script = tmp_path / "mm.py"
    script.write_text("import sys, torch\nn = int(sys.argv[1])\ntorch.ones(n, n) @ torch.ones(n, n)\n")
    assert main([str(script), "16"]) == 0
    names = [parse_range_message(m) for m in messages]
    assert [(r.name, r.flops) for r in names if r.name.startswith("aten.mm")] == [("aten.mm 16x16,16x16", 2 * 16 ** 3)]


def test_the_module_without_a_script_says_how_to_call_it() -> None:
    res = subprocess.run([sys.executable, "-m", "ncu_roof.torch"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2
    assert res.stderr.strip() == "usage: python -m ncu_roof.torch SCRIPT [ARGS]"


def test_a_hand_written_layernorm_is_one_region_per_op_with_its_own_counts(messages: list[str]) -> None:
    x, w, b = torch.randn(32, 256), torch.randn(256), torch.randn(256)
    with op_regions() as seen:
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdim=True)
        xc * torch.rsqrt(var + 1e-5) * w + b
    row, col, n = 32 * 4, 256 * 4, 32 * 256 * 4  # bytes of a 32x1 column, a 256 row, the 32x256 tensor
    assert [(r.name, r.flops, r.bytes) for r in seen] == [
        ("aten.mean 32x256", 32 * 256, n + row),
        ("aten.sub 32x256,32x1", 32 * 256, n + row + n),
        ("aten.mul 32x256,32x256", 32 * 256, n + n),  # xc * xc reads xc once
        ("aten.mean 32x256", 32 * 256, n + row),
        ("aten.add 32x1", 32, row + row),
        ("aten.rsqrt 32x1", None, row + row),
        ("aten.mul 32x256,32x1", 32 * 256, n + row + n),
        ("aten.mul 32x256,256", 32 * 256, n + col + n),
        ("aten.add 32x256,256", 32 * 256, n + col + n),
    ]
    # nine passes over the data where a fused layernorm reads x, w, b once and writes y once
    assert sum(r.bytes or 0 for r in seen) == 396_288 > n + col + col + n == 67_584
