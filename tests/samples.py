"""Inputs several checks diagnose as a sample of everything ncu-roof reads: the synthetic fixtures
(``fixtures/synthetic``) and real reports and exports of many GPUs and ncu versions (relative to
``../shared/realdata``). The JSON-columns test and ``benchmarks/identity.py`` both use them."""

SYNTHETIC_FIXTURES = ["synthetic_raw_units.csv", "synthetic_details_rules.csv", "synthetic_metrics_stdout.csv",
                      "synthetic_decimal_comma.csv", "synthetic_layernorm_unfused_rtx5070.csv",
                      "synthetic_layernorm_fused_rtx5070.csv"]
REAL_SAMPLE = ["NCAR__GPU_workshop/MW_Baseline.ncu-rep", "flyinglandlord__sglang/profile.ncu-rep",
               "eschnett__IndexSpaces.jl/profile.7dc4fa58ec.ncu-rep", "AlpriElse__cs599k/silu-2025-04-18-v8.ncu-rep",
               "panjd123__cutlass/report-s4.ncu-rep",
               "meinie0826__Roofline-Analysis/torch_sdpa_flash__gqa_bf16_b32_ctx8k_p64.ncu.csv",
               "CodeGandee__accelsim-test/details.csv", "CodeGandee__accelsim-test/raw.csv",
               "wangzy0327__cuda-roofline/output.csv", "NVIDIA__nsight-training/manual_nvtx.ncu-rep"]
