"""ncu_roof.read.kernel_names: short names as ncu's ``--print-kernel-base function`` prints them,
the names a user knows (Numba, CUTLASS), and the stem Julia keeps across builds.

Kernel strings are real: from the reports in ../shared/realdata (named per case), Compiler
Explorer's Numba test data (``[abi:...]`` tags as c++filt prints them) and the Triton and CUB
kernels of HolisticTraceAnalysis's traces."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cached_table

from ncu_roof.read.kernel_names import display_name, short_kernel_name, stable_stem

# brycelelbach/nsightful copy_blocked.csv (Numba, ncu's "[v1,<hash>]" form)
NUMBA_CSV = ("copy_blocked[v1,cw51cXTLSUwv1sDUaKthrqNgqqmjgOR3W3CwAkMXLaJtQYkOIgxJU0gCqOkEJoHkbttqdVhoqlspQGNFHSgJ5Bn"
             "XagIA](Array<long long, 1, C, mutable, aligned>, Array<long long, 1, C, mutable, aligned>, long long)")
# Numba as c++filt (and ncu on Linux) demangles it: one [abi:...] tag per ABI, the long one hashes
# the signature; ncu's function name of such a kernel is that hash
NUMBA_ABI = ("__main__::reconstruct_svd_cuda_1[abi:v1][abi:cw51cXTLSUwv1kAPW1tQPAP9CY9GJAHUqIFJIB"
             "C4AA_3d](Array<float, 2, C, mutable, aligned>, Array<float, 1, C, mutable, aligned>)")
NUMBA_CLOSURE = ("example::factory::_3clocals_3e::power[abi:v1][abi:c8tJTIcFKzyF2ILShI4CrgQElQb6HczSBAA_3d]"
                 "(double, double)")
# CodeGandee/accelsim-test profile.ncu-rep and raw.csv; HTA's trace_filter trace
CUTLASS_2 = "void cutlass::Kernel2<cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align4>(T1::Params)"
CUTLASS_2_CSV = "void Kernel2<cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align4>(Params)"
CUTLASS_1 = ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>"
             "(cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)")
# panjd123/cutlass report-s4.ncu-rep (start of it): the wrapper's argument is a template
CUTLASS_TEMPLATE = ("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaMultistage<"
                    "cutlass::gemm::GemmShape<(int)128, (int)96, (int)64>, int>, (bool)0>>(T1::Params)")
# jonahshader/alife_cuda (CUB through Thrust), HTA trace_filter (CUB), HTA triton_example (Triton)
CUB = ("void cub::CUB_200200_520_NS::DeviceReduceSingleTileKernel<cub::CUB_200200_520_NS::DeviceReducePolicy<"
       "float, unsigned int, thrust::plus<float>>::Policy600, float *, float *, int, thrust::plus<float>, float>"
       "(T2, T3, T4, T5, T6)")
CUB_SCAN = "void cub::DeviceScanInitKernel<cub::ScanTileState<int, true> >(cub::ScanTileState<int, true>, int)"
TRITON = "triton_poi_fused_add_cos_sin_0"


@pytest.mark.parametrize(("name", "short"), [
    ("void cub::X::DeviceReduceKernel<cub::P<float>::Policy600, float *>(T2, T3)", "DeviceReduceKernel"),
    ("unnamed>::gemm_tiled_kernel<32>(const float *, int)", "gemm_tiled_kernel"),
    ("void (anonymous namespace)::f<(bool)1>(int)", "f"),
    ("set_halo_values_x_396_gpu", "set_halo_values_x_396_gpu"),
    ("julia__5_6739", "julia__5_6739"),
])
def test_short_kernel_name(name: str, short: str) -> None:
    assert short_kernel_name(name) == short


@pytest.mark.parametrize(("short", "demangled", "shown"), [
    (short_kernel_name(NUMBA_CSV), NUMBA_CSV, "copy_blocked"),
    ("cw51cXTLSUwv1kAPW1tQPAP9CY9GJAHUqIFJIBC4AA_3d]", NUMBA_ABI, "reconstruct_svd_cuda_1"),
    (short_kernel_name(NUMBA_ABI), NUMBA_ABI, "reconstruct_svd_cuda_1"),
    ("c8tJTIcFKzyF2ILShI4CrgQElQb6HczSBAA_3d]", NUMBA_CLOSURE, "power"),
    ("Kernel2", CUTLASS_2, "cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align4"),
    ("Kernel2", CUTLASS_2_CSV, "cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align4"),
    ("Kernel", CUTLASS_1, "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4"),
    ("Kernel", CUTLASS_TEMPLATE, "Kernel<Gemm>"),
    ("DeviceReduceSingleTileKernel", CUB, "DeviceReduceSingleTileKernel"),
    ("DeviceScanInitKernel", CUB_SCAN, "DeviceScanInitKernel"),
    (TRITON, TRITON, TRITON),
    ("julia__5_6739", "julia__5_6739(CuKernelContext, CuDeviceArray<Int4x8, (int)1, (int)1>, Int4x8)", "julia__5_6739"),
    ("Kernel", "void Kernel<float>(float *)", "Kernel"),  # a user's own Kernel template is not CUTLASS
])
def test_display_name(short: str, demangled: str, shown: str) -> None:
    assert display_name(short, demangled) == shown


def test_three_numba_versions_stay_apart() -> None:
    names = {display_name("x", NUMBA_ABI.replace("cuda_1", f"cuda_{i}")) for i in (1, 2, 3)}
    assert names == {"reconstruct_svd_cuda_1", "reconstruct_svd_cuda_2", "reconstruct_svd_cuda_3"}


@pytest.mark.parametrize(("name", "stem"), [
    ("julia_runsteps_6563", "julia_runsteps"), ("julia_runsteps_6724", "julia_runsteps"),
    ("julia__5_6739", "julia__5"), ("julia_bb_4477", "julia_bb"),
    (TRITON, TRITON), ("compute_tendencies_x_279_gpu", "compute_tendencies_x_279_gpu"),
    ("reconstruct_svd_cuda_1", "reconstruct_svd_cuda_1"), ("julia", "julia"),
])
def test_stable_stem(name: str, stem: str) -> None:
    assert stable_stem(name) == stem


@pytest.mark.parametrize(("path", "names"), [
    ("brycelelbach__nsightful/copy_blocked.csv", {"copy_blocked"}),
    ("CodeGandee__accelsim-test/profile.ncu-rep", {"cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align4"}),
    ("CodeGandee__accelsim-test/details.csv",
     {"cutlass_80_wmma_tensorop_i161616gemm_s8_forwardCompat_128x128_32x2_tn_align4"}),
    ("panjd123__cutlass/report-s4.ncu-rep", {"Kernel<Gemm>", "ReferenceGemm_kernel"}),
    ("wangzy0327__cuda-roofline/output.csv", {"Kernel<Gemm>", "cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8",
                                              "InitializeMatrix_kernel<__half>", "InitializeMatrix_kernel<float>"}),
    ("eschnett__IndexSpaces.jl/profile.74de19f3d8.ncu-rep", {"julia__5_6739", "julia_bb_4477"}),
])
def test_real_reports_show_the_names_users_know(realdata: Path, path: str, names: set[str]) -> None:
    table = cached_table(realdata / path)
    assert set(table["kernel"]) == names
    assert not table["kernel"].str.contains("cw51c").any()


def test_mangled_function_names() -> None:
    from ncu_roof.read.kernel_names import mangled_function_name

    assert mangled_function_name("_Z10add_kernelPfPKfi") == "add_kernel"
    assert mangled_function_name("_ZL9my_kernelv") == "my_kernel"
    assert mangled_function_name("_ZN7cutlass6KernelINS_4gemm6kernel4GemmIfEEEEvNT_6ParamsE") == "Kernel"
    assert mangled_function_name(
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"
    ) == "vectorized_elementwise_kernel"
    assert mangled_function_name("triton_poi_fused_add_0") is None


def test_the_tensor_instruction_a_gemm_name_spells() -> None:
    """2 x M x N x K of the mma.sync shape: CUTLASS's InstructionShape (the smallest GemmShape of 16 rows or more),
    else the shape in cuBLAS/CUTLASS kernel names; None for SIMT kernels and Volta's quad-pair 8x8x4."""
    from ncu_roof.read.kernel_names import mma_instruction_flops as flops

    cutlass = ("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::GemmShape<(int)128, (int)128, "
               "(int)16>, cutlass::gemm::GemmShape<(int)64, (int)64, (int)16>, "
               "cutlass::gemm::GemmShape<(int)16, (int)8, (int)8>>>")
    assert flops(cutlass) == 2048.0
    assert flops("ampere_s16816gemm_fp16_256x128_ldg8_stages_64x3_nn") == 4096.0
    assert flops("cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align4") == 8192.0
    assert flops("turing_h1688gemm_128x128ldg8_nn") == 2048.0
    assert flops("cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8") is None
    assert flops("void cutlass::Kernel<GemmShape<(int)1, (int)1, (int)1>>") is None  # SIMT
    assert flops("volta_sgemm_32x128_nn") is None and flops(None) is None
