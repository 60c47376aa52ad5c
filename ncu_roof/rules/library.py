"""Kernels the user did not write: libraries and code generators, recognised by name (one table).

Advice about a library kernel's source (``__launch_bounds__``, padding an array, another thread
mapping) is advice nobody can take; for these kernels the rules give advice about the call: the
problem's shapes and layouts, another algorithm or library, the data types it runs on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ncu_roof.rules.common import Row, is_matrix_kernel, tensor_types


@dataclass(frozen=True)
class Library:
    name: str
    pattern: re.Pattern[str]
    advice: str  # what the user controls instead of the source


_CALL = "shapes, layouts, batching, {types}"
LIBRARIES: tuple[Library, ...] = (
    # cuBLAS names its kernels by architecture (ampere_sgemm_128x64_nn, volta_sgemm_32x128_nn,
    # sm80_xmma_gemm_...); a plain sgemm_* may be the user's own, so it is not matched
    Library("cuBLAS", re.compile(r"^(?:void )?(?:ampere|volta|turing|maxwell|hopper|blackwell|sm\d+)_\w*gemm|"
                                 r"cublas|gemv2[NT]_kernel|gemmk1_kernel|gemmSN_\w+_kernel|splitKreduce_kernel|"
                                 r"\bxmma_gemm", re.IGNORECASE),
            f"{_CALL}, another algorithm (cublasLt)"),
    Library("cuDNN", re.compile(r"cudnn|implicit_convolve|xmma_(?:fprop|dgrad|wgrad)|_fprop_\w*_kernel|"
                                r"winograd\w*_kernel", re.IGNORECASE),
            "shapes, the NHWC layout, {types}, the cuDNN algorithm"),
    Library("CUTLASS", re.compile(r"cutlass|^Kernel<|device_kernel<", re.IGNORECASE),
            "its template: tile shape, stages, alignment, layouts"),
    Library("cuSPARSE", re.compile(r"cusparse|csrmv|csrmm|spmv|spmm|bsrmv", re.IGNORECASE),
            "the sparse format, the algorithm, or a dense call at high fill"),
    Library("cuFFT", re.compile(r"cufft|regular_fft|vector_fft|fft_\w*radix", re.IGNORECASE),
            "sizes of small primes, batching"),
    Library("NCCL", re.compile(r"nccl", re.IGNORECASE), "message sizes, NCCL_ALGO/NCCL_PROTO, overlap with compute"),
    Library("CUB/Thrust", re.compile(r"cub::|thrust::|\bcub_|DeviceReduce|DeviceScan|DeviceRadixSort|"
                                     r"DeviceSelect|_kernel_agent<|RadixSort|DeviceSegmented", re.IGNORECASE),
            "fewer, larger (batched or segmented) calls, key and value types"),
    Library("Triton", re.compile(r"^triton_|^triton__|_triton_", re.IGNORECASE),
            "its autotune configs: BLOCK sizes, num_warps, num_stages"),
    Library("PyTorch ATen", re.compile(r"at::native|vectorized_elementwise_kernel|unrolled_elementwise_kernel|"
                                       r"elementwise_kernel<|reduce_kernel<\d|index_elementwise_kernel|"
                                       r"CatArrayBatchedCopy|distribution_elementwise", re.IGNORECASE),
            "fewer, fused operations (torch.compile), contiguous tensors, {types}"),
    # FlashInfer's kernels by their own names too: a CSV export's function name drops the namespace
    Library("FlashAttention/FlashInfer", re.compile(r"flash_fwd|flash_bwd|flashinfer|fmha_|"
                                                    r"(?:Batch|Single)(?:Decode|Prefill)With\w*KVCache\w*Kernel|"
                                                    r"MergeStates\w*Kernel", re.IGNORECASE),
            "the attention backend for this GPU, head dimensions, the batch layout"),
)


def library_of(row: Row) -> Library | None:
    """The library a kernel comes from, by its (demangled) name; None for the user's own code."""
    for name in (row.get("kernel_demangled"), row.get("kernel")):
        text = str(name or "")
        for lib in LIBRARIES:
            if text and lib.pattern.search(text):
                return lib
    return None


# A library's own test harness: reference implementations that check results, and the kernels
# that fill its test matrices (CUTLASS's examples and profiler run them beside the kernel measured)
HARNESS = re.compile(r"^Reference\w*_kernel|cutlass::reference::|InitializeMatrix_kernel|BlockFillRandom|"
                     r"TensorFillRandom", re.IGNORECASE)


# PyTorch's random-number kernels (torch.rand, randn, uniform_, normal_, dropout's masks)
RANDOM = re.compile(r"distribution_elementwise_grid_stride_kernel|distribution_nullary_kernel")


def is_harness(kernel: object) -> bool:
    """A test-harness kernel (a library's reference or initialization kernel), by its name."""
    return bool(HARNESS.search(str(kernel or "")))


def single_tile_pass(row: Row) -> bool:
    """A library pass that runs one block by design (CUB's single-tile reduction or scan pass)."""
    name = f"{row.get('kernel_demangled') or ''} {row.get('kernel') or ''}"
    lib = library_of(row)
    return "SingleTile" in name or (lib is not None and lib.name == "CUB/Thrust" and row.get("grid_size") == 1)


def _random_kernel(row: Row, lib: Library) -> bool:
    """A PyTorch random-number kernel (torch.rand, dropout)."""
    return lib.name == "PyTorch ATen" and bool(RANDOM.search(f"{row.get('kernel_demangled') or ''} "
                                                             f"{row.get('kernel') or ''}"))


def fix_text(row: Row, source_advice: str) -> str:
    """The fix a message gives: the source-level advice for the user's own kernel; for a library
    kernel, what can be changed about the call instead."""
    lib = library_of(row)
    if lib is None:
        return source_advice

    if _random_kernel(row, lib):
        return ("A PyTorch random-number kernel (torch.rand, dropout): if it only makes a benchmark's inputs, "
                "profile without it.")
    types = tensor_types(row) if is_matrix_kernel(row) else ""  # tensor-core types only for matrix math
    advice = lib.advice.format(types=f"types ({types.split(' (')[0]} tensor cores)" if types else "narrower types")
    return f"A {lib.name} kernel: change the call ({advice})."


def launch_bound_text(row: Row) -> str | None:
    """What shortens a launch-bound library kernel: nothing can be fused into it, so fewer, larger calls
    (None for the user's own kernel; a PyTorch random-number kernel gets its own text)."""
    lib = library_of(row)
    if lib is None:
        return None
    if _random_kernel(row, lib):
        return fix_text(row, "")
    return f"A {lib.name} kernel: fewer, larger calls (batched, or one fused library call), not fusion into it."
