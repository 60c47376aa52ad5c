"""Small CuPy programs with known algorithmic FLOPs and bytes: ncu-roof's demos and ground truth.

Each module is a runnable script (``python kernels/vecadd.py --help``) and, without a GPU, an
importable description of its kernel: ``counts(...)``, ``reference(...)`` in NumPy and ``SOURCES``.
"""

SCRIPTS = (
    "vecadd", "saxpy", "relu_fp16", "softmax", "layernorm", "layernorm_unfused", "gemv_fp16",
    "gemm", "gelu_epilogue", "dial", "tensor_peak", "launch_overhead", "decode_linear",
    "decode_attention", "wave_quant", "size_sweep",
)
