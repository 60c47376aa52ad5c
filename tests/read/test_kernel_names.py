"""ncu_roof.read.kernel_names: short names as ncu's ``--print-kernel-base function`` prints them."""

from __future__ import annotations

import pytest

from ncu_roof.read.kernel_names import short_kernel_name


@pytest.mark.parametrize(("name", "short"), [
    ("void cub::X::DeviceReduceKernel<cub::P<float>::Policy600, float *>(T2, T3)", "DeviceReduceKernel"),
    ("unnamed>::gemm_tiled_kernel<32>(const float *, int)", "gemm_tiled_kernel"),
    ("void (anonymous namespace)::f<(bool)1>(int)", "f"),
    ("set_halo_values_x_396_gpu", "set_halo_values_x_396_gpu"),
    ("julia__5_6739", "julia__5_6739"),
])
def test_short_kernel_name(name: str, short: str) -> None:
    assert short_kernel_name(name) == short
