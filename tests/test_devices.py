"""The built-in device table (ncu_roof/data/devices.toml) and its lookups."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import fields

import pytest

from ncu_roof.devices import (
    DeviceSpec,
    load_cuda_gpus,
    load_devices,
    lookup,
    lookup_by_cc_and_sms,
    normalize_name,
)

DEVICES = load_devices()
SPECS = list(DEVICES.values())
IDS = [s.name for s in SPECS]

NOT_PEAKS = (
    "name", "aliases", "cc", "source", "notes", "sm_count", "mig", "mig_compute_slices",
    "mig_memory_slices", "mig_memory_gb", "memory_variants_share_compute", "tensor_kinds",
)
NUMERIC = [f.name for f in fields(DeviceSpec) if f.name not in NOT_PEAKS]
COMPUTE = [n for n in NUMERIC if n not in ("boost_clock_hz", "l2_bytes", "dram_bytes_per_s")]
TENSOR = [n for n in NUMERIC if n.startswith("tensor_") and n != "tensor_fp64_flops_per_s"]


def test_table_is_big_enough() -> None:
    assert len(DEVICES) >= 185


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_required_fields(spec: DeviceSpec) -> None:
    assert spec.name
    assert spec.cc and len(spec.cc.split(".")) == 2
    assert spec.source and len(spec.source) > 10
    # a figure may be left out only where the entry says so (a laptop part's unpublished clock)
    for figure in (spec.dram_bytes_per_s, spec.fp32_flops_per_s):
        assert figure is not None or "omitted" in (spec.notes or ""), spec.name


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_numbers_positive_and_plausible(spec: DeviceSpec) -> None:
    for name in NUMERIC:
        value = getattr(spec, name)
        if value is not None:
            assert math.isfinite(value) and value > 0, name  # never 0: omit instead
    # bounds wide enough for a Jetson Xavier NX (6 SMs, 0.85 TFLOP/s, 60 GB/s) and a B200
    if spec.fp32_flops_per_s is not None:
        assert 5e11 <= spec.fp32_flops_per_s <= 2e14
    if spec.dram_bytes_per_s is not None:
        assert 3e10 <= spec.dram_bytes_per_s <= 1e13
    if spec.sm_count is not None:
        assert 4 <= spec.sm_count <= 200
    if spec.boost_clock_hz is not None:
        assert 0.6e9 <= spec.boost_clock_hz <= 3.2e9
    if spec.l2_bytes is not None:
        assert 256 << 10 <= spec.l2_bytes <= 256 << 20


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_peaks_ordered_against_fp32(spec: DeviceSpec) -> None:
    fp32 = spec.fp32_flops_per_s
    if spec.fp64_flops_per_s is not None and fp32 is not None:
        assert spec.fp64_flops_per_s <= fp32
    if spec.fp16_flops_per_s is not None:
        assert fp32 is not None and fp32 <= spec.fp16_flops_per_s <= 4 * fp32 * 1.01
    for name in TENSOR:
        value = getattr(spec, name)
        if value is not None:
            assert value >= (fp32 or 0) * 0.999, name
            assert value <= 2e16, name
    if spec.tensor_fp64_flops_per_s is not None:
        assert spec.fp64_flops_per_s is not None
        assert spec.tensor_fp64_flops_per_s >= spec.fp64_flops_per_s


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_tensor_rates_ordered(spec: DeviceSpec) -> None:
    """FP16-accumulate >= FP32-accumulate; TF32 <= FP16; FP8 and INT8 >= FP16."""
    fp16 = spec.tensor_fp16_flops_per_s
    if spec.tensor_fp16_acc16_flops_per_s is not None:
        assert fp16 is not None
        assert spec.tensor_fp16_acc16_flops_per_s in (pytest.approx(fp16, rel=5e-3),
                                                      pytest.approx(2 * fp16, rel=5e-3))
    if fp16 is None:
        return
    if spec.tensor_tf32_flops_per_s is not None:
        assert spec.tensor_tf32_flops_per_s <= fp16
    if spec.tensor_bf16_flops_per_s is not None:
        assert spec.tensor_bf16_flops_per_s == pytest.approx(fp16, rel=2e-3)
    for other in (spec.tensor_fp8_flops_per_s, spec.tensor_int8_ops_per_s):
        if other is not None:
            assert other >= fp16 * 0.999


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_derived_figures_are_explained(spec: DeviceSpec) -> None:
    """Where a peak is cores x clock rather than a spec-sheet figure, the entry says so."""
    if "product page" in (spec.source or "") or "Laptop" in spec.name:
        assert spec.notes and "derived" in spec.notes


def test_fp32_matches_sm_clock_where_both_given() -> None:
    """2 FLOP x 128 (64 on Pascal, Volta, Turing, GA100) FP32 lanes per SM x SMs x boost clock
    = fp32 peak (within rounding and the few sheets that quote a lower sustained clock)."""
    for spec in SPECS:
        if spec.sm_count is None or spec.boost_clock_hz is None:
            continue
        lanes = 64 if spec.cc in ("6.0", "7.0", "7.2", "7.5", "8.0") else 128
        expect = 2 * lanes * spec.sm_count * spec.boost_clock_hz
        assert spec.fp32_flops_per_s == pytest.approx(expect, rel=0.03), spec.name


def test_rtx_5070_exact() -> None:
    s = DEVICES["NVIDIA GeForce RTX 5070"]
    assert s.cc == "12.0"
    assert s.sm_count == 48
    assert s.fp32_flops_per_s == 30.9e12
    assert s.dram_bytes_per_s == 672e9
    assert s.l2_bytes == 48 * 1024 * 1024
    assert s.tensor_fp16_flops_per_s == 61.7e12
    assert s.tensor_fp16_acc16_flops_per_s == 123.5e12
    assert s.fp32_flops_per_s / s.dram_bytes_per_s == pytest.approx(46.0, abs=0.1)
    assert s.ridge_fp32 == pytest.approx(30.9e12 / 672e9)


@pytest.mark.parametrize(
    ("name", "fp32", "dram"),
    [
        ("Tesla V100-SXM2-32GB", 15.7e12, 900e9),
        ("Tesla T4", 8.1e12, 320e9),
        ("NVIDIA A100-SXM4-40GB", 19.5e12, 1555e9),
        ("NVIDIA A100-SXM4-80GB", 19.5e12, 2039e9),
        ("NVIDIA A10", 31.2e12, 600e9),
        ("NVIDIA A40", 37.4e12, 696e9),
        ("NVIDIA L4", 30.3e12, 300e9),
        ("NVIDIA L40S", 91.6e12, 864e9),
        ("NVIDIA GeForce RTX 3090", 35.6e12, 936e9),
        ("NVIDIA GeForce RTX 4090", 82.6e12, 1008e9),
        ("NVIDIA H100 80GB HBM3", 66.9e12, 3.35e12),
        ("NVIDIA H100 PCIe", 51.2e12, 2.0e12),
        ("NVIDIA H200", 66.9e12, 4.8e12),
        ("NVIDIA GeForce RTX 5090", 104.8e12, 1792e9),
    ],
)
def test_spec_sheet_headlines(name: str, fp32: float, dram: float) -> None:
    s = DEVICES[name]
    assert s.fp32_flops_per_s == pytest.approx(fp32, rel=5e-3)
    assert s.dram_bytes_per_s == pytest.approx(dram, rel=5e-3)


def test_dense_tensor_headlines() -> None:
    assert DEVICES["NVIDIA A100-SXM4-80GB"].tensor_fp16_flops_per_s == 312e12
    assert DEVICES["NVIDIA A100-SXM4-80GB"].tensor_tf32_flops_per_s == 156e12
    assert DEVICES["NVIDIA A100-SXM4-80GB"].tensor_fp64_flops_per_s == 19.5e12
    h100 = DEVICES["NVIDIA H100 80GB HBM3"]
    assert h100.tensor_fp16_flops_per_s == pytest.approx(989.4e12)
    assert h100.tensor_fp8_flops_per_s == pytest.approx(1978.9e12)
    assert DEVICES["Tesla V100-SXM2-32GB"].tensor_fp16_flops_per_s == 125e12
    assert DEVICES["Tesla T4"].tensor_fp16_flops_per_s == 65e12
    rtx4090 = DEVICES["NVIDIA GeForce RTX 4090"]
    assert rtx4090.tensor_fp16_flops_per_s == pytest.approx(165.2e12)
    assert rtx4090.tensor_fp16_acc16_flops_per_s == pytest.approx(330.3e12)
    assert DEVICES["NVIDIA B200"].tensor_fp16_flops_per_s == pytest.approx(2.25e15)


def test_non_tensor_fp16_per_architecture() -> None:
    ratio = {n: DEVICES[n].fp16_flops_per_s / DEVICES[n].fp32_flops_per_s for n in (
        "NVIDIA A100-PCIE-40GB", "NVIDIA H100 PCIe", "NVIDIA GeForce RTX 3070",
        "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 2080 Ti", "Tesla V100-SXM2-16GB")}
    assert ratio["NVIDIA A100-PCIE-40GB"] == pytest.approx(4, rel=0.01)
    assert ratio["NVIDIA H100 PCIe"] == pytest.approx(2, rel=0.01)
    assert ratio["NVIDIA GeForce RTX 3070"] == pytest.approx(1)
    assert ratio["NVIDIA GeForce RTX 4090"] == pytest.approx(1)
    assert ratio["NVIDIA GeForce RTX 2080 Ti"] == pytest.approx(2, rel=0.01)
    assert ratio["Tesla V100-SXM2-16GB"] == pytest.approx(2, rel=0.01)


# names exactly as real reports in ../shared/realdata spell them
REPORT_NAMES = [
    "Tesla V100-SXM2-32GB", "NVIDIA GeForce RTX 2080 Ti", "NVIDIA A10G", "NVIDIA A40",
    "NVIDIA A100-PCIE-40GB", "NVIDIA GeForce RTX 3050 Laptop GPU", "NVIDIA GeForce RTX 3070",
    "NVIDIA GeForce RTX 3070 Ti", "NVIDIA GeForce RTX 4070 Laptop GPU", "NVIDIA H100 PCIe",
    "NVIDIA GH200 480GB", "NVIDIA GeForce RTX 2070 SUPER", "NVIDIA B200", "Tesla T4",
    "NVIDIA GeForce RTX 5070", "Tesla V100-PCIE-32GB",
]


@pytest.mark.parametrize("name", REPORT_NAMES)
def test_lookup_report_names(name: str) -> None:
    spec = lookup(name)
    assert spec is not None
    assert spec.name == name


# (name, sm_count, l2_bytes) as the reports' device attributes give them
@pytest.mark.parametrize(
    ("name", "sms", "l2"),
    [
        ("NVIDIA H100 PCIe", 114, 52428800), ("NVIDIA GH200 480GB", 132, 62914560),
        ("NVIDIA A10G", 80, 6291456), ("NVIDIA GeForce RTX 3050 Laptop GPU", 16, 1572864),
        ("NVIDIA GeForce RTX 4070 Laptop GPU", 36, 33554432), ("Tesla V100-SXM2-32GB", 80, 6291456),
        ("NVIDIA GeForce RTX 3070", 46, 4194304), ("NVIDIA A100-PCIE-40GB", 108, 41943040),
        ("NVIDIA A40", 84, 6291456), ("NVIDIA GeForce RTX 2070 SUPER", 40, 4194304),
        ("NVIDIA GeForce RTX 2080 Ti", 68, 5767168), ("NVIDIA GeForce RTX 3070 Ti", 48, 4194304),
        ("NVIDIA B200", 148, 132644864),
    ],
)
def test_matches_report_device_attributes(name: str, sms: int, l2: int) -> None:
    spec = DEVICES[name]
    assert spec.sm_count == sms
    assert spec.l2_bytes == l2


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("NVIDIA Tesla V100-SXM2-32GB", "Tesla V100-SXM2-32GB"),
        ("tesla v100 sxm2 32gb", "Tesla V100-SXM2-32GB"),
        ("V100-SXM2-32GB", "Tesla V100-SXM2-32GB"),
        ("NVIDIA H100 SXM5 80GB", "NVIDIA H100 80GB HBM3"),
        ("  nvidia  geforce rtx 3070 ti ", "NVIDIA GeForce RTX 3070 Ti"),
        ("GeForce RTX 3070", "NVIDIA GeForce RTX 3070"),
        ("RTX 2070 Super", "NVIDIA GeForce RTX 2070 SUPER"),
        ("NVIDIA T4", "Tesla T4"),
        ("nvidia-a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB"),
        ("NVIDIA GeForce RTX 4070 Laptop GPU", "NVIDIA GeForce RTX 4070 Laptop GPU"),
        ("RTX A4500", "NVIDIA RTX A4500"),
        ("NVIDIA H800 80GB HBM3", "NVIDIA H800"),
        ("nvidia h800 pcie", "NVIDIA H800 PCIe"),
        ("A800-SXM4-80GB", "NVIDIA A800-SXM4-80GB"),
        ("NVIDIA B300", "NVIDIA B300 SXM6 AC"),
        ("GeForce RTX 4090 D", "NVIDIA GeForce RTX 4090 D"),
        ("NVIDIA Quadro RTX 8000", "Quadro RTX 8000"),
        ("GeForce GTX 1080 Ti", "NVIDIA GeForce GTX 1080 Ti"),
    ],
)
def test_lookup_normalised(spelling: str, expected: str) -> None:
    spec = lookup(spelling)
    assert spec is not None and spec.name == expected


@pytest.mark.parametrize(
    ("name", "not_this"),
    [
        ("NVIDIA GeForce RTX 3070", "NVIDIA GeForce RTX 3070 Ti"),
        ("NVIDIA GeForce RTX 3070 Ti", "NVIDIA GeForce RTX 3070"),
        ("NVIDIA GeForce RTX 4070", "NVIDIA GeForce RTX 4070 Laptop GPU"),
        ("NVIDIA GeForce RTX 4070 Laptop GPU", "NVIDIA GeForce RTX 4070"),
        ("NVIDIA GeForce RTX 4070 SUPER", "NVIDIA GeForce RTX 4070"),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", "NVIDIA GeForce RTX 4070 Ti"),
        ("NVIDIA GeForce RTX 3050", "NVIDIA GeForce RTX 3050 Laptop GPU"),
        ("NVIDIA GeForce RTX 2070", "NVIDIA GeForce RTX 2070 SUPER"),
        ("NVIDIA A10", "NVIDIA A10G"),
        ("NVIDIA H200", "NVIDIA H200 NVL"),
        ("NVIDIA L40", "NVIDIA L40S"),
    ],
)
def test_near_misses_stay_apart(name: str, not_this: str) -> None:
    spec = lookup(name)
    assert spec is not None
    assert spec.name == name and spec.name != not_this


@pytest.mark.parametrize(
    "name",
    [None, "", "   ", "NVIDIA", "NVIDIA GeForce RTX 3070 Mobile", "NVIDIA GeForce RTX 3075",
     "RTX 30", "NVIDIA GeForce RTX 4070 Laptop", "AMD Instinct MI300X",
     "NVIDIA GeForce RTX 4070 Ti Laptop GPU"],
)
def test_unknown_names(name: str | None) -> None:
    assert lookup(name) is None


def test_normalised_keys_are_unique() -> None:
    seen: dict[str, str] = {}
    for spec in SPECS:
        for spelling in (spec.name, *spec.aliases):
            key = normalize_name(spelling)
            assert seen.setdefault(key, spec.name) == spec.name, spelling


def test_every_alias_round_trips() -> None:
    for spec in SPECS:
        for alias in spec.aliases:
            assert lookup(alias) is spec


def test_lookup_by_cc_and_sms() -> None:
    assert lookup_by_cc_and_sms("7.5", 40) is None  # T4 and RTX 2070 SUPER
    assert lookup_by_cc_and_sms("8.9", 24) is None  # RTX 4060 and its laptop namesake
    assert lookup_by_cc_and_sms("12.0", 48).name == "NVIDIA GeForce RTX 5070"
    assert lookup_by_cc_and_sms(12.0, 48).name == "NVIDIA GeForce RTX 5070"
    assert lookup_by_cc_and_sms("120", 48).name == "NVIDIA GeForce RTX 5070"
    assert lookup_by_cc_and_sms("10.0", 148).name == "NVIDIA B200"
    assert lookup_by_cc_and_sms("9.0", 114) is None  # H100 PCIe and H800 PCIe
    assert lookup_by_cc_and_sms("6.1", 28).name == "NVIDIA GeForce GTX 1080 Ti"
    assert lookup_by_cc_and_sms("8.6", 80) is None  # A10G and RTX 3080 Ti
    assert lookup_by_cc_and_sms("7.5", 999) is None
    assert lookup_by_cc_and_sms("", 40) is None
    assert lookup_by_cc_and_sms("8.6", None) is None


def test_load_is_cached_and_copies() -> None:
    a = load_devices()
    a.clear()
    assert len(load_devices()) == len(DEVICES)
    assert lookup("NVIDIA B200") is lookup("NVIDIA B200")


def test_no_pandas_import() -> None:
    code = ("import sys, ncu_roof.devices as d; d.lookup('Tesla T4'); "
            "assert 'pandas' not in sys.modules, 'pandas imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- entries added for the review ------------------------------------------------------------

# (name as Nsight Compute / nvidia-smi spell it, cc, fp32, dram)
NEW_ENTRIES = [
    ("NVIDIA RTX A4500", "8.6", 23.7e12, 640e9),
    ("NVIDIA RTX A5000", "8.6", 27.8e12, 768e9),
    ("NVIDIA RTX A4000", "8.6", 19.2e12, 448e9),
    ("NVIDIA H800", "9.0", 66.9e12, 3.35e12),
    ("NVIDIA H800 PCIe", "9.0", 51.2e12, 2.0e12),
    ("NVIDIA A800-SXM4-80GB", "8.0", 19.5e12, 2039e9),
    ("NVIDIA A800 80GB PCIe", "8.0", 19.5e12, 1935e9),
    ("NVIDIA GB200", "10.0", 80.2e12, 8.0e12),
    ("NVIDIA B300 SXM6 AC", "10.3", 75e12, 8.0e12),
    ("NVIDIA GeForce RTX 4090 D", "8.9", 73.5e12, 1008e9),
    ("NVIDIA GeForce RTX 5080 Laptop GPU", "12.0", 35.1e12, 896e9),
    ("NVIDIA GeForce RTX 5090 Laptop GPU", "12.0", 45.3e12, 896e9),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0", 126e12, 1792e9),
    ("Quadro RTX 8000", "7.5", 16.3e12, 672e9),
    ("Quadro RTX 6000", "7.5", 16.3e12, 672e9),
    ("NVIDIA GeForce RTX 3050 6GB Laptop GPU", "8.6", 7.64e12, 144e9),
    ("NVIDIA L20", "8.9", 59.3e12, 864e9),
    ("NVIDIA L40", "8.9", 90.5e12, 864e9),
    ("NVIDIA GeForce GTX 1080 Ti", "6.1", 11.34e12, 484e9),
    ("Tesla P100-SXM2-16GB", "6.0", 10.6e12, 732e9),
]


@pytest.mark.parametrize(("name", "cc", "fp32", "dram"), NEW_ENTRIES)
def test_new_entries_lookup(name: str, cc: str, fp32: float, dram: float) -> None:
    spec = lookup(name)
    assert spec is not None and spec.name == name and spec.mig is None
    assert spec.cc == cc
    assert spec.fp32_flops_per_s == pytest.approx(fp32, rel=5e-3)
    assert spec.dram_bytes_per_s == pytest.approx(dram, rel=5e-3)


def test_new_entry_details() -> None:
    a4500 = DEVICES["NVIDIA RTX A4500"]
    assert a4500.sm_count == 56
    assert a4500.tensor_fp16_flops_per_s == pytest.approx(189.2e12 / 2, rel=2e-3)
    h800 = DEVICES["NVIDIA H800"]
    assert h800.fp64_flops_per_s == 1e12 and h800.tensor_fp64_flops_per_s == 1e12
    assert h800.tensor_fp16_flops_per_s == DEVICES["NVIDIA H100 80GB HBM3"].tensor_fp16_flops_per_s
    assert DEVICES["NVIDIA H800 PCIe"].fp64_flops_per_s == 0.8e12
    a800 = DEVICES["NVIDIA A800-SXM4-80GB"]
    a100 = DEVICES["NVIDIA A100-SXM4-80GB"]
    assert [getattr(a800, f) for f in COMPUTE] == [getattr(a100, f) for f in COMPUTE]
    gb200 = DEVICES["NVIDIA GB200"]
    assert gb200.tensor_fp16_flops_per_s == 2.5e15 and gb200.sm_count == 152
    b300 = DEVICES["NVIDIA B300 SXM6 AC"]
    assert b300.fp64_flops_per_s == 1.25e12 and b300.tensor_int8_ops_per_s is None
    assert DEVICES["NVIDIA GeForce GTX 1080 Ti"].fp16_flops_per_s is None  # 1/64 rate on GP102
    pro = DEVICES["NVIDIA RTX PRO 6000 Blackwell Workstation Edition"]
    assert pro.sm_count == 188 and pro.l2_bytes == 128 << 20
    assert pro.tensor_fp8_flops_per_s * 4 == pytest.approx(4000e12, rel=0.01)  # FP4 sparse


def test_unsourced_figures_left_out() -> None:
    # "Orin" (all Jetson Orin modules report it, with different peaks) names no one entry
    for name in ("Orin", "NVIDIA Jetson AGX Orin", "Xavier"):
        assert lookup(name) is None
    # the RTX PRO 6000 Server/Max-Q editions are in the table, but their clocks are not published:
    # no FP32 or tensor peak, only what their datasheets give (SMs, DRAM, L2)
    for name, dram in (("NVIDIA RTX PRO 6000 Blackwell Server Edition", 1597e9),
                       ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 1792e9)):
        spec = lookup(name)
        assert spec is not None and spec.sm_count == 188 and spec.dram_bytes_per_s == dram
        assert spec.fp32_flops_per_s is None and spec.tensor_fp16_flops_per_s is None
        assert spec.has_tensor_cores is True and "fp4" in (spec.tensor_kinds or ())
        assert spec.notes and "omitted" in spec.notes


def test_laptop_and_variant_entries_stay_apart() -> None:
    assert lookup("NVIDIA GeForce RTX 3050 6GB Laptop GPU").sm_count == 20
    assert lookup("NVIDIA GeForce RTX 3050 Laptop GPU").sm_count == 16
    assert lookup("NVIDIA GeForce RTX 4090 D").sm_count == 114
    assert lookup("NVIDIA GeForce RTX 4090").sm_count == 128
    assert lookup("NVIDIA GeForce RTX 5090 Laptop GPU").sm_count == 82


# ---- MIG --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "parent", "compute", "memory"),
    [
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "NVIDIA A100-SXM4-40GB", 1 / 7, 1 / 8),
        ("NVIDIA A100-SXM4-40GB MIG 2g.10gb", "NVIDIA A100-SXM4-40GB", 2 / 7, 2 / 8),
        ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "NVIDIA A100-SXM4-40GB", 3 / 7, 4 / 8),
        ("NVIDIA A100-SXM4-40GB MIG 4g.20gb", "NVIDIA A100-SXM4-40GB", 4 / 7, 4 / 8),
        ("NVIDIA A100-SXM4-40GB MIG 7g.40gb", "NVIDIA A100-SXM4-40GB", 1.0, 1.0),
        ("NVIDIA A100-SXM4-80GB MIG 1g.10gb", "NVIDIA A100-SXM4-80GB", 1 / 7, 1 / 8),
        ("NVIDIA A100-SXM4-80GB MIG 1g.10gb+me", "NVIDIA A100-SXM4-80GB", 1 / 7, 1 / 8),
        ("NVIDIA A100-SXM4-80GB MIG 1g.20gb", "NVIDIA A100-SXM4-80GB", 1 / 7, 2 / 8),
        ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", "NVIDIA H100 80GB HBM3", 3 / 7, 4 / 8),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA H100 80GB HBM3", 1 / 7, 1 / 8),
        ("NVIDIA H100 NVL MIG 1g.12gb", "NVIDIA H100 NVL", 1 / 7, 1 / 8),
        ("NVIDIA H200 MIG 3g.71gb", "NVIDIA H200", 3 / 7, 4 / 8),
        ("NVIDIA H800 MIG 2g.20gb", "NVIDIA H800", 2 / 7, 2 / 8),
        ("NVIDIA A30 MIG 2g.12gb", "NVIDIA A30", 2 / 4, 2 / 4),
        ("NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb", "NVIDIA A100-SXM4-40GB", 1 / 7, 4 / 8),
    ],
)
def test_mig_scaling(name: str, parent: str, compute: float, memory: float) -> None:
    full = DEVICES[parent]
    spec = lookup(name)
    assert spec is not None
    assert spec.name == name and spec.mig == name.split(" MIG ")[1].replace("+me", "")
    assert spec.cc == full.cc and spec.sm_count is None
    for f in COMPUTE:
        want = getattr(full, f)
        assert getattr(spec, f) == (None if want is None else pytest.approx(want * compute)), f
    assert spec.dram_bytes_per_s == pytest.approx(full.dram_bytes_per_s * memory)
    assert spec.l2_bytes == pytest.approx(full.l2_bytes * memory)
    assert spec.notes and "MIG" in spec.notes and "scaled" in spec.notes


def test_mig_exact_numbers() -> None:
    s = lookup("NVIDIA A100-SXM4-40GB MIG 1g.5gb")
    assert s.fp32_flops_per_s == pytest.approx(19.5e12 / 7)  # 2.786 TFLOP/s
    assert s.tensor_fp16_flops_per_s == pytest.approx(312e12 / 7)
    assert s.dram_bytes_per_s == pytest.approx(1555e9 / 8)  # 194.4 GB/s
    assert s.l2_bytes == pytest.approx(40 * 2**20 / 8)
    h = lookup("NVIDIA H100 80GB HBM3 MIG 3g.40gb")
    assert h.fp32_flops_per_s == pytest.approx(66.9e12 * 3 / 7)
    assert h.tensor_fp8_flops_per_s == pytest.approx(1978.9e12 * 3 / 7)
    assert h.dram_bytes_per_s == pytest.approx(3.35e12 / 2)
    assert h.ridge_fp32 == pytest.approx((66.9e12 * 3 / 7) / (3.35e12 / 2))
    assert DEVICES["NVIDIA A100-SXM4-40GB"].mig is None


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA B200 MIG 1g.23gb",  # Blackwell slice layout not in the table
        "NVIDIA GeForce RTX 4090 MIG 1g.6gb",  # not MIG-capable
        "NVIDIA A100-SXM4-40GB MIG 8g.40gb",  # more compute slices than the GPU has
        "NVIDIA A100-SXM4-40GB MIG 1g.15gb",  # 3 of 8 memory slices: no such profile
        "NVIDIA A100-SXM4-40GB MIG 2c.1g.5gb",  # compute instance bigger than its instance
        "NVIDIA A100-SXM4-40GB MIG",
        "NVIDIA Unknown GPU MIG 1g.5gb",
    ],
)
def test_mig_refused(name: str) -> None:
    assert lookup(name) is None  # never the full-GPU spec for a slice


# ---- memory-size fallback ---------------------------------------------------------------------

def test_memory_variant_fallback() -> None:
    spec = lookup("NVIDIA A100 PCIe 64GB")  # hypothetical memory size of a product in the table
    assert spec is not None
    base = DEVICES["NVIDIA A100-PCIE-40GB"]
    assert [getattr(spec, f) for f in COMPUTE] == [getattr(base, f) for f in COMPUTE]
    assert spec.dram_bytes_per_s is None  # that variant's bandwidth is not known
    assert spec.name == "NVIDIA A100 PCIe 64GB" and spec.notes and "memory-size" in spec.notes
    p100 = lookup("Tesla P100-PCIE-12GB")
    assert p100 is not None and p100.fp32_flops_per_s == 9.3e12 and p100.dram_bytes_per_s is None
    v100 = lookup("Tesla V100-SXM2-64GB")
    assert v100 is not None and v100.tensor_fp16_flops_per_s == 125e12


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce RTX 3060 8GB",  # product not marked as sharing compute
        "NVIDIA GeForce RTX 4060 Ti 16GB",
        "NVIDIA GeForce RTX 3050 4GB Laptop GPU",  # never a desktop or other laptop entry
        "NVIDIA GeForce RTX 4090 D 48GB",  # never between D and non-D
        "NVIDIA GeForce RTX 4070 Ti 16GB",  # never between Ti and SUPER
        "NVIDIA GeForce RTX 4080 16GB Laptop GPU",
        "NVIDIA A100-SXM4",  # no memory word: not a memory variant
        "NVIDIA GH200 96GB",  # GH200 entries are not marked as sharing compute
        "NVIDIA A100 64GB",  # neither SXM4 nor PCIe: differs by more than the memory size
    ],
)
def test_memory_variant_refused(name: str) -> None:
    assert lookup(name) is None


def test_derived_specs_are_stable() -> None:
    assert lookup("NVIDIA A100-SXM4-40GB MIG 1g.5gb") is lookup("NVIDIA A100-SXM4-40GB MIG 1g.5gb")
    assert lookup("NVIDIA A100 PCIe 64GB") is lookup("NVIDIA A100 PCIe 64GB")


def test_mig_field_rejected_in_table() -> None:
    from ncu_roof.devices import _spec_from_table

    with pytest.raises(ValueError):
        _spec_from_table({"name": "X", "mig": "1g.5gb"})
    with pytest.raises(ValueError):
        _spec_from_table({"name": "X", "memory_variants_share_compute": "yes"})


def test_the_gpus_real_reports_named_that_the_table_lacked() -> None:
    from ncu_roof import devices

    super_ = devices.lookup("NVIDIA GeForce GTX 1660 SUPER")
    assert super_ is not None and super_.sm_count == 22
    assert super_.fp32_flops_per_s == pytest.approx(2 * 1408 * 1.785e9, rel=1e-3)  # 1408 cores at 1785 MHz
    assert getattr(super_, "tensor_fp16_flops_per_s", None) is None  # TU116: no tensor cores
    maxq = devices.lookup("NVIDIA GeForce RTX 2060 with Max-Q Design")
    assert maxq is not None and maxq.dram_bytes_per_s == 11e9 * 192 / 8  # 11 Gbps GDDR6, 192-bit
    gh200 = devices.lookup("NVIDIA GH200 120GB")  # the 120 GB is the Grace memory: the GPU is the 96 GB one
    assert gh200 is not None and gh200.name == "NVIDIA GH200 480GB"


# ---- coverage of the CUDA GPU list (ncu_roof/data/cuda_gpus.toml) ------------------------------

CUDA_GPUS = load_cuda_gpus()


def _cc(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def test_the_gpu_list_is_the_cc_7_and_newer_one() -> None:
    assert len(CUDA_GPUS) >= 150
    names = [g["name"] for g in CUDA_GPUS]
    assert len(names) == len(set(names))
    for gpu in CUDA_GPUS:
        assert _cc(gpu["cc"]) >= (7, 0), gpu["name"]
        assert gpu["segment"] in ("datacenter", "workstation", "workstation laptop", "geforce desktop",
                                  "geforce laptop", "jetson"), gpu["name"]
        assert gpu["source"] and gpu["devices"], gpu["name"]
    # the GPUs the issue found missing, and one of each segment
    for name in ("NVIDIA GH200", "GeForce GTX 1660 SUPER", "GeForce RTX 2060 (laptop)", "NVIDIA A2",
                 "Quadro GV100", "NVIDIA RTX 4000 SFF Ada Generation", "GeForce MX450", "Jetson Orin Nano",
                 "NVIDIA RTX PRO 6000 Blackwell Server Edition", "GeForce RTX 5090 D", "Jetson AGX Thor"):
        assert name in names


@pytest.mark.parametrize("gpu", CUDA_GPUS, ids=[g["name"] for g in CUDA_GPUS])
def test_every_cuda_gpu_has_a_device_entry(gpu: dict) -> None:
    for name in gpu["devices"]:
        spec = lookup(name)
        assert spec is not None, f"{gpu['name']}: no device entry or alias {name!r}"
        assert spec.cc == gpu["cc"], f"{gpu['name']}: {name} is CC {spec.cc} in the table, {gpu['cc']} in the list"


def test_every_table_entry_of_cc_7_is_in_the_gpu_list() -> None:
    listed = {lookup(n).name for g in CUDA_GPUS for n in g["devices"]}  # type: ignore[union-attr]
    unlisted = [s.name for s in SPECS if _cc(s.cc) >= (7, 0) and s.name not in listed]
    assert not unlisted


def test_a_gpu_missing_from_the_table_is_caught() -> None:
    from ncu_roof import devices

    table = devices._load()
    spec = table.pop("NVIDIA GeForce GTX 1660 SUPER")
    devices._index.cache_clear()
    devices.lookup.cache_clear()
    try:
        assert lookup("NVIDIA GeForce GTX 1660 SUPER") is None
    finally:
        table["NVIDIA GeForce GTX 1660 SUPER"] = spec
        devices._index.cache_clear()
        devices.lookup.cache_clear()
    assert lookup("NVIDIA GeForce GTX 1660 SUPER") is spec


# ---- every figure names its source -------------------------------------------------------------

# each figure must be named in the entry's source or notes (where it comes from, or how it is derived)
FIGURE_WORDS = {
    "sm_count": r"\bSMs?\b|sm_count|cores", "boost_clock_hz": r"MHz|GHz|clock", "l2_bytes": r"\bL2\b",
    "dram_bytes_per_s": r"DRAM|[GT]B/s|Gbps|HBM|GDDR|LPDDR", "fp64_flops_per_s": r"fp64",
    "fp32_flops_per_s": r"fp32", "fp16_flops_per_s": r"fp16", "tensor_fp16_flops_per_s": r"tensor",
    "tensor_fp16_acc16_flops_per_s": r"fp16.acc16|FP16.accumulate",
    "tensor_bf16_flops_per_s": r"bf16", "tensor_tf32_flops_per_s": r"tf32", "tensor_fp8_flops_per_s": r"fp8",
    "tensor_int8_ops_per_s": r"int8", "tensor_fp4_flops_per_s": r"fp4", "tensor_fp64_flops_per_s": r"fp64",
}


def _unsourced(spec: DeviceSpec) -> list[str]:
    import re

    text = f"{spec.source or ''} {spec.notes or ''}"
    return [f for f, words in FIGURE_WORDS.items()
            if getattr(spec, f) is not None and not re.search(words, text, re.IGNORECASE)]


def test_figure_words_cover_every_figure() -> None:
    assert set(FIGURE_WORDS) == {*NUMERIC, "sm_count"}


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_figure_has_a_source(spec: DeviceSpec) -> None:
    assert spec.source and spec.source.strip()
    assert not _unsourced(spec), f"{spec.name}: no source or derivation named for {_unsourced(spec)}"


def test_a_figure_without_a_source_is_caught() -> None:
    from dataclasses import replace

    spec = DEVICES["NVIDIA GeForce GTX 1660 SUPER"]
    assert _unsourced(spec) == []
    # its notes say how fp32, fp16, fp64 and L2 are had; without them those four have no source
    assert _unsourced(replace(spec, notes="no tensor cores")) == [
        "l2_bytes", "fp64_flops_per_s", "fp32_flops_per_s", "fp16_flops_per_s"]
