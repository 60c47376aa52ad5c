"""The built-in device table (ncu_roof/data/devices.toml) and its lookups."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pandas as pd
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
    "mig_memory_slices", "mig_memory_gb", "memory_variants_share_compute", "tensor_kinds", "reported_as",
)
NUMERIC = [f.name for f in fields(DeviceSpec) if f.name not in NOT_PEAKS]
COMPUTE = [n for n in NUMERIC if n not in ("boost_clock_hz", "base_clock_hz", "l2_bytes", "dram_bytes_per_s")]
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
        "NVIDIA H20 MIG 1g.12gb",  # in the table, but its slice layout is not
        "NVIDIA GB300 MIG 1g.36gb",
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
    "sm_count": r"\bSMs?\b|sm_count|cores", "boost_clock_hz": r"MHz|GHz|clock", "base_clock_hz": r"base clock",
    "l2_bytes": r"\bL2\b",
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
    # its notes say how fp32, fp16, fp64, L2 and the base clock are had; without them those have no source
    assert _unsourced(replace(spec, notes="no tensor cores")) == [
        "base_clock_hz", "l2_bytes", "fp64_flops_per_s", "fp32_flops_per_s", "fp16_flops_per_s"]


# ---- consistency: figures against the architecture (catches typos) ----------------------------

FP64_PER_FP32 = {"6.0": 1 / 2, "6.1": 1 / 32, "7.0": 1 / 2, "7.5": 1 / 32, "8.0": 1 / 2, "8.6": 1 / 64,
                 "8.9": 1 / 64, "9.0": 1 / 2, "10.0": 1 / 2, "12.0": 1 / 64}
FP64_CUT = {"NVIDIA H800", "NVIDIA H800 PCIe", "NVIDIA H20", "NVIDIA B300 SXM6 AC"}  # export / Blackwell Ultra
FP16_PER_FP32 = {"6.0": 2, "7.0": 2, "7.2": 2, "7.5": 2, "8.0": 4, "8.6": 1, "8.9": 1, "9.0": 2, "12.0": 1}
# dense FP16 tensor FLOP (FP32 accumulate) per SM per clock; GeForce runs FP32 accumulate at half rate
TENSOR_FP16_PER_SM = {"7.0": (1024,), "7.2": (1024,), "7.5": (512, 1024), "8.0": (2048,), "8.6": (512, 1024),
                      "8.9": (512, 1024), "9.0": (4096,), "12.0": (512, 1024)}
_AMPERE = {"tf32", "bf16", "fp16", "int8"}
_BLACKWELL = {"tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8"}
# (kinds every part of the generation has, kinds it may have)
TENSOR_KINDS_BY_CC = {
    "7.0": ({"fp16"}, {"fp16"}), "7.2": ({"fp16", "int8"}, {"fp16", "int8"}),
    "7.5": ({"fp16", "int8"}, {"fp16", "int8", "int4"}),
    "8.0": (_AMPERE | {"fp64"}, _AMPERE | {"int4", "fp64"}), "8.6": (_AMPERE, _AMPERE | {"int4"}),
    "8.7": (_AMPERE, _AMPERE | {"int4"}), "8.9": (_AMPERE | {"fp8"}, _AMPERE | {"fp8", "int4"}),
    "9.0": (_AMPERE | {"fp8", "fp64"}, _AMPERE | {"fp8", "fp64"}),
    "10.0": (_BLACKWELL | {"fp64"}, _BLACKWELL | {"fp64"}), "10.3": (_BLACKWELL | {"fp64"}, _BLACKWELL | {"fp64"}),
    "11.0": (_BLACKWELL, _BLACKWELL), "12.0": (_BLACKWELL, _BLACKWELL),
}
PEAK_KIND = {"tensor_fp16_flops_per_s": "fp16", "tensor_fp16_acc16_flops_per_s": "fp16",
             "tensor_bf16_flops_per_s": "bf16", "tensor_tf32_flops_per_s": "tf32", "tensor_fp8_flops_per_s": "fp8",
             "tensor_int8_ops_per_s": "int8", "tensor_fp4_flops_per_s": "fp4", "tensor_fp64_flops_per_s": "fp64"}
# Turing TU116/TU117 parts: no tensor cores
NO_TENSOR_NAME = r"GTX 16\d\d|\bMX[45]50\b|\bT(400|500|550|600|1000|1200|2000)\b"
# the architecture a name belongs to, by its CC (first match wins)
CC_BY_NAME = [
    (r"V100|GV100|TITAN V$", "7.0"), (r"Xavier", "7.2"), (r"Orin", "8.7"), (r"Thor", "11.0"),
    (r"RTX 2050|MX570", "8.6"), (r"\bA100\b|\bA800\b|\bA30\b", "8.0"),
    (r"(?<!Quadro )RTX 40\d\d|Ada Generation|\bL(2|4|40S?|20)\b", "8.9"),
    (r"RTX 20\d\d|GTX 16\d\d|Quadro RTX|Quadro T|\bT4\b|\bT\d{3,4}\b|TITAN RTX|MX[45]50", "7.5"),
    (r"RTX 30\d\d|RTX A\d|\bA(2|10G?|16|40)\b", "8.6"),
    (r"H100|H200|H800|\bH20\b|GH200", "9.0"), (r"B300|GB300", "10.3"), (r"\bG?B[12]00\b", "10.0"),
    (r"RTX 50\d\d|Blackwell", "12.0"), (r"P100", "6.0"), (r"GTX 10\d\d|TITAN Xp|Tesla P40?$", "6.1"),
]


def _cc_from_name(name: str) -> str | None:
    import re

    return next((cc for pattern, cc in CC_BY_NAME if re.search(pattern, name)), None)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_cc_matches_the_architecture_of_the_name(spec: DeviceSpec) -> None:
    assert _cc_from_name(spec.name) == spec.cc


def test_cc_by_name_catches_a_wrong_cc() -> None:
    assert _cc_from_name("NVIDIA GeForce RTX 2050") == "8.6"  # GA107 despite the RTX 20 name
    assert _cc_from_name("NVIDIA GeForce GTX 1650 Ti") == "7.5"
    assert _cc_from_name("NVIDIA RTX 4000 SFF Ada Generation") == "8.9"
    assert _cc_from_name("NVIDIA RTX PRO 4000 Blackwell") == "12.0"


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_fp64_and_fp16_ratios_per_architecture(spec: DeviceSpec) -> None:
    fp32 = spec.fp32_flops_per_s
    if fp32 is None:
        return
    if spec.fp64_flops_per_s is not None and spec.name not in FP64_CUT:
        # within 15%: GB200's sheet gives 45 TF FP64 against 80 TF FP32
        assert spec.fp64_flops_per_s / fp32 == pytest.approx(FP64_PER_FP32[spec.cc], rel=0.15)
    if spec.fp16_flops_per_s is not None:
        assert spec.fp16_flops_per_s / fp32 == pytest.approx(FP16_PER_FP32[spec.cc], rel=0.02)


def test_fp64_cuts_are_real_cuts() -> None:
    for name in FP64_CUT:
        spec = DEVICES[name]
        assert spec.fp64_flops_per_s is not None and spec.fp32_flops_per_s is not None
        assert spec.fp64_flops_per_s / spec.fp32_flops_per_s < 1 / 40


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_tensor_fp16_per_sm_per_clock(spec: DeviceSpec) -> None:
    """Tensor FP16 = SMs x the architecture's per-SM rate x boost clock; a datasheet figure quoted at a
    lower sustained clock (Quadro GV100, H100) sits up to 12% below."""
    if spec.tensor_fp16_flops_per_s is None or not spec.sm_count or not spec.boost_clock_hz \
            or spec.cc not in TENSOR_FP16_PER_SM:
        return
    per_sm = spec.tensor_fp16_flops_per_s / spec.sm_count / spec.boost_clock_hz
    assert any(0.88 * rate <= per_sm <= 1.006 * rate for rate in TENSOR_FP16_PER_SM[spec.cc]), per_sm


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_tensor_kinds_per_generation(spec: DeviceSpec) -> None:
    import re

    kinds = set(spec.tensor_kinds) if spec.tensor_kinds is not None else None
    present = {PEAK_KIND[f] for f in PEAK_KIND if getattr(spec, f) is not None}
    if _cc(spec.cc) < (7, 0) or re.search(NO_TENSOR_NAME, spec.name):
        assert kinds == set() and not present, "no tensor cores"
        assert spec.has_tensor_cores is False
        return
    if kinds is None:
        assert "tensor_kinds omitted" in (spec.notes or "") and not present
        return
    must, may = TENSOR_KINDS_BY_CC[spec.cc]
    assert must <= kinds <= may, sorted(kinds)
    assert present <= kinds, sorted(present - kinds)
    assert spec.has_tensor_cores is True


def test_no_tensor_cores_on_tu116_tu117() -> None:
    for name in ("NVIDIA GeForce GTX 1660 SUPER", "NVIDIA GeForce GTX 1650", "NVIDIA GeForce MX450",
                 "NVIDIA T1000", "Quadro T2000", "NVIDIA GeForce GTX 1650 Ti with Max-Q Design"):
        spec = lookup(name)
        assert spec is not None and spec.tensor_kinds == () and spec.has_tensor_cores is False
    assert lookup("NVIDIA GeForce RTX 2060 with Max-Q Design").tensor_kinds == ("fp16", "int8", "int4")
    assert lookup("NVIDIA GeForce MX570").has_tensor_cores is None  # not published


def test_the_rules_ask_the_table_about_tensor_cores() -> None:
    from ncu_roof.rules.signals import has_tensor_cores

    assert not has_tensor_cores({"device": "NVIDIA GeForce GTX 1660 SUPER", "cc": "7.5"})
    assert has_tensor_cores({"device": "NVIDIA GeForce RTX 2060 with Max-Q Design", "cc": "7.5"})
    # no tensor peak in the table (clock unpublished), but the table says it has tensor cores
    assert has_tensor_cores({"device": "NVIDIA RTX A2000 Laptop GPU", "cc": "8.6"})
    assert has_tensor_cores({"device": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "cc": "12.0"})


# ---- new entries: exact figures ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "cc", "sms", "fp32", "dram", "tensor_fp16"),
    [
        ("Quadro GV100", "7.0", 80, 16.66e12, 870e9, 118.5e12),
        ("NVIDIA TITAN V", "7.0", 80, 14.9e12, 652.8e9, 110e12),
        ("NVIDIA Jetson AGX Xavier", "7.2", 8, 1.41e12, 136.5e9, 11.28e12),
        ("Quadro RTX 5000", "7.5", 48, 11.15e12, 448e9, 89.2e12),
        ("NVIDIA TITAN RTX", "7.5", 72, 16.31e12, 672e9, 130.5e12),
        ("NVIDIA GeForce RTX 2060 SUPER", "7.5", 34, 7.18e12, 448e9, 28.72e12),
        ("NVIDIA GeForce RTX 2070 with Max-Q Design", "7.5", 36, 5.46e12, 384e9, 21.84e12),
        ("NVIDIA T1000", "7.5", 14, 2.5e12, 160e9, None),
        ("NVIDIA GeForce GTX 1650 SUPER", "7.5", 20, 4.416e12, 192e9, None),
        ("NVIDIA A2", "8.6", 10, 4.53e12, 200e9, 18.12e12),
        ("NVIDIA RTX A5500", "8.6", 80, 34.1e12, 768e9, 136.4e12),
        ("NVIDIA GeForce RTX 3080 12GB", "8.6", 70, 30.64e12, 912e9, 61.28e12),
        ("NVIDIA GeForce RTX 3080 Ti Laptop GPU", "8.6", 58, 23.6e12, 512e9, 47.2e12),
        ("NVIDIA GeForce RTX 2050", "8.6", 16, 6.05e12, 112e9, 12.1e12),
        ("NVIDIA Jetson AGX Orin 64GB", "8.7", 16, 5.325e12, 204.8e9, None),
        ("NVIDIA RTX 5000 Ada Generation", "8.9", 100, 65.28e12, 576e9, 261.1e12),
        ("NVIDIA RTX 4000 SFF Ada Generation", "8.9", 48, 19.17e12, 280e9, 76.68e12),
        ("NVIDIA H20", "9.0", None, 44e12, 4.0e12, 148e12),
        ("NVIDIA GeForce RTX 5050", "12.0", 20, 13.16e12, 320e9, 26.3e12),
    ],
)
def test_new_entry_figures(name: str, cc: str, sms: int | None, fp32: float, dram: float,
                           tensor_fp16: float | None) -> None:
    spec = lookup(name)
    assert spec is not None and spec.name == name and spec.cc == cc and spec.sm_count == sms
    assert spec.fp32_flops_per_s == pytest.approx(fp32, rel=3e-3)
    assert spec.dram_bytes_per_s == pytest.approx(dram, rel=1e-3)
    assert spec.tensor_fp16_flops_per_s == (None if tensor_fp16 is None else pytest.approx(tensor_fp16, rel=3e-3))


def test_orin_int8_and_blackwell_fp4() -> None:
    orin = DEVICES["NVIDIA Jetson AGX Orin 64GB"]
    assert orin.tensor_int8_ops_per_s == pytest.approx(170e12 / 2, rel=3e-3)  # 170 sparse INT8 TOPS
    assert DEVICES["NVIDIA GeForce RTX 5050"].tensor_fp4_flops_per_s == pytest.approx(421e12 / 2, rel=3e-3)
    assert DEVICES["NVIDIA GB300"].tensor_fp4_flops_per_s == 15e15
    assert DEVICES["NVIDIA B100"].tensor_fp16_flops_per_s == 1.75e15


def test_laptop_entries_say_their_clock_is_an_upper_bound() -> None:
    for spec in SPECS:
        if ("Laptop" in spec.name or "Max-Q" in spec.name) and spec.boost_clock_hz is not None \
                and spec.name != "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition":
            assert "upper bound" in (spec.notes or ""), spec.name


# ---- every real report names its device from the table -----------------------------------------

def _real_inputs() -> list[Path | None]:
    from conftest import REALDATA

    found = sorted(p for p in REALDATA.glob("*/*") if p.suffix in (".csv", ".ncu-rep"))
    return list(found) or [None]  # None: the realdata fixture skips, saying why


@pytest.mark.parametrize("path", _real_inputs(), ids=lambda p: f"{p.parent.name}/{p.name}" if p else "absent")
def test_every_real_report_names_its_device_from_the_table(path: Path | None, realdata: Path) -> None:
    import ncu_roof
    from ncu_roof.devices import candidates
    from ncu_roof.errors import ReportLoadError

    assert path is not None
    try:
        table = ncu_roof.load(path)
    except ReportLoadError as exc:  # a failed run's export: no launches, nothing to name
        assert "no launches" in str(exc) or "error" in str(exc).lower()
        return
    for (name, cc, sms), _ in table.groupby(["device", "cc", "sm_count"], dropna=False):
        if isinstance(name, str):
            spec = lookup(name)
            assert spec is not None, f"{path.name}: {name!r} is not in the device table"
            assert spec.cc == cc
            if sms == sms and spec.sm_count is not None:  # noqa: PLR0124 (NaN check)
                assert spec.sm_count == int(sms)
        else:  # the export names no GPU: the table must hold the ones it can be
            assert candidates(cc, None if sms != sms else int(sms)), f"{path.name}: no entry of CC {cc}"  # noqa: PLR0124


def test_docs_count_the_table() -> None:
    text = (Path(__file__).parents[1] / "docs" / "model.md").read_text(encoding="utf-8")
    assert f"one\nentry per GPU model ({len(DEVICES)})" in text
    assert f"({len(CUDA_GPUS)} products," in text


def test_devices_command_shows_tensor_kinds() -> None:
    from ncu_roof.cli.devices import detail_lines

    lines = detail_lines(DEVICES["NVIDIA GeForce GTX 1660 SUPER"])
    assert "  tensor_kinds                   none (no tensor cores)" in lines
    lines = detail_lines(DEVICES["NVIDIA GeForce RTX 5050"])
    assert "  tensor_kinds                   tf32, bf16, fp16, fp8, fp6, fp4, int8" in lines


def test_candidates_put_the_gpu_at_its_base_clock_first() -> None:
    from ncu_roof.devices import candidates, runs_at_base_clock

    names = [s.name for s in candidates("7.5", 40)]
    assert names == ["NVIDIA GeForce RTX 2070 SUPER", "NVIDIA GeForce RTX 2070 SUPER with Max-Q Design",
                     "Quadro RTX 4000 with Max-Q Design", "Tesla T4"]
    assert [s.name for s in candidates("7.5", 40, 585e6)][0] == "Tesla T4"
    assert [s.name for s in candidates("7.5", 40, 1605e6)][0] == "NVIDIA GeForce RTX 2070 SUPER"
    assert [s.name for s in candidates("7.5", 40, 1100e6)] == names  # nobody's base clock: by name
    t4 = DEVICES["Tesla T4"]
    assert runs_at_base_clock(t4, 585e6 * 1.019) and not runs_at_base_clock(t4, 585e6 * 1.03)
    assert not runs_at_base_clock(t4, None) and not runs_at_base_clock(t4, float("nan"))
    assert [s.name for s in candidates("8.0", None, 765e6)][0] == "NVIDIA A100-PCIE-40GB"


def test_names_jetson_modules_share() -> None:
    from ncu_roof.devices import sharing

    assert [s.name for s in sharing("Orin", 16)] == ["NVIDIA Jetson AGX Orin 64GB"]
    assert [s.name for s in sharing("Orin", 14)] == ["NVIDIA Jetson AGX Orin 32GB"]
    assert [s.name for s in sharing("Orin", 4)] == ["NVIDIA Jetson Orin Nano 4GB"]
    assert len(sharing("Orin", 8)) == 3 and len(sharing("orin")) == 6
    assert [s.name for s in sharing("Xavier", 8)] == ["NVIDIA Jetson AGX Xavier"]
    assert sharing("NVIDIA A40") == [] and sharing(None) == [] and sharing("Orin", 99) == []
    assert lookup("Orin") is None  # never a lookup key: it names no one GPU
    assert lookup("NVIDIA Thor").name == "NVIDIA Jetson AGX Thor"


def test_common_pascal_parts() -> None:
    """Older reports come from Pascal GPUs too (CC 6.x: below the list, no tensor cores)."""
    for name, sms, fp32, dram in (("GeForce GTX 1080", 20, 8.873e12, 320e9), ("Tesla P40", 30, 11.76e12, 346e9),
                                  ("NVIDIA Tesla P4", 20, 5.443e12, 192e9), ("TITAN Xp", 30, 12.15e12, 547.7e9)):
        spec = lookup(name)
        assert spec is not None and spec.cc == "6.1" and spec.sm_count == sms
        assert spec.fp32_flops_per_s == pytest.approx(fp32, rel=2e-3) and spec.dram_bytes_per_s == dram
        assert spec.has_tensor_cores is False and spec.fp16_flops_per_s is None


# ---- a device without roofs: the notes say which, what the table knows and what to pass ----------

LAPTOP_AND_DESKTOP = [g for g in CUDA_GPUS if g["segment"] in ("geforce desktop", "geforce laptop", "workstation",
                                                               "workstation laptop")]


@pytest.mark.parametrize("gpu", LAPTOP_AND_DESKTOP, ids=[g["name"] for g in LAPTOP_AND_DESKTOP])
def test_every_laptop_and_desktop_part_is_recognised(gpu: dict) -> None:
    """Each name ncu prints for a laptop or desktop part of CC >= 7.0 finds its entry, with its CC;
    an entry without roofs says what is missing, and a report on it gets a note naming the device
    and what to pass."""
    from ncu_roof.diagnosis import _roofless_device_notes

    for name in gpu["devices"]:
        spec = lookup(name)
        assert spec is not None and spec.cc == gpu["cc"] and _cc(spec.cc) >= (7, 0), name
        if spec.dram_bytes_per_s is None or spec.fp32_flops_per_s is None:
            assert "omitted" in (spec.notes or ""), name
            placed = pd.DataFrame({"device": [name], "missing": ["roof"]})
            [note] = _roofless_device_notes(placed)
            assert note.startswith(f"{name} is in the device table (CC {spec.cc}")
            assert "--ceilings FILE" in note and "--device NAME" in note


def test_a_roofless_device_is_named_in_the_notes() -> None:
    """The RTX 5070 Laptop GPU (CC 12.0, 36 SMs; its clock range is not in the sources used): a report
    on it says so, and what to pass; a GPU the table lacks is named too."""
    from ncu_roof.diagnosis import diagnose_table
    from ncu_roof.read.table import load_table

    csv = Path(__file__).resolve().parents[1] / "fixtures/synthetic/synthetic_layernorm_unfused_rtx5070.csv"
    for name, start in (("NVIDIA GeForce RTX 5070 Laptop GPU",
                         "NVIDIA GeForce RTX 5070 Laptop GPU is in the device table (CC 12.0, 36 SMs) without its "
                         "DRAM bandwidth or FLOP/s peaks; a laptop part, whose maker sets the clock"),
                        ("NVIDIA GeForce RTX 9050 Laptop GPU",
                         "NVIDIA GeForce RTX 9050 Laptop GPU is not in the device table and the report holds no "
                         "peaks")):
        table = load_table(csv)
        table["device"] = name
        d = diagnose_table(table)
        [note] = [n for n in d.notes if n.startswith(name)]
        assert note.startswith(start), note
        assert note.endswith("pass measured roofs with --ceilings FILE (`ncu-roof ceilings` measures them on the "
                             "GPU), or --device NAME for a GPU of the same roofs (`ncu-roof devices` lists the table)")


def test_the_device_table_is_read_through_a_parsed_copy_that_equals_tomllib(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """ncu-roof's TOML data files are parsed once per version of the file: the JSON copy in the
    cache gives the same table as tomllib, an edited file is parsed anew, and a damaged copy or
    an unwritable cache only costs the parse."""
    from importlib import resources

    from ncu_roof.tomlfile import parsed_data_toml, tomllib

    raw = resources.files("ncu_roof").joinpath("data", "devices.toml").read_bytes()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    expected = tomllib.loads(raw.decode("utf-8"))
    assert parsed_data_toml(raw, "devices") == expected
    (copy,) = (tmp_path / "cache" / "ncu-roof").glob("devices-*.json")
    assert parsed_data_toml(raw, "devices") == expected  # from the copy
    edited = raw + b'\n[[device]]\nname = "Test GPU"\n'
    assert parsed_data_toml(edited, "devices")["device"][-1] == {"name": "Test GPU"}
    assert len(list(copy.parent.glob("devices-*.json"))) == 2
    copy.write_text('{"sha256": "0", "table": {}}')  # a copy that is not of this file
    assert parsed_data_toml(raw, "devices") == expected
    copy.write_text("{not json")
    assert parsed_data_toml(raw, "devices") == expected
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert parsed_data_toml(raw, "devices") == expected
    assert not list(tmp_path.glob("**/.devices-*.tmp"))


def test_the_rtx_5060_laptop_gpu_has_its_roofs(realdata: Path) -> None:
    """Abhishek7204's ray tracer on an RTX 5060 Laptop GPU (ncu 2026.2.1, basic set: no peaks in the
    report): the table's roofs hold it (they were all missing), and they agree with the report's
    own device attributes: 26 SMs, 32 MiB L2, a 128-bit bus at 12.001 GHz DDR = 384 GB/s."""
    import ncu_roof

    spec = lookup("NVIDIA GeForce RTX 5060 Laptop GPU")
    assert spec is not None and spec.fp32_flops_per_s == pytest.approx(2 * 3328 * 2.497e9, rel=1e-3)
    assert spec.dram_bytes_per_s == pytest.approx(128 / 8 * 2 * 12.001e9, rel=1e-3)
    assert spec.fp64_flops_per_s == pytest.approx(spec.fp32_flops_per_s / 64, rel=2e-3)  # 3 digits
    r = ncu_roof.diagnose(realdata / "Abhishek7204__raytracingCuda/profile.ncu-rep")
    row = r.launches.iloc[0]
    assert (row["sm_count"], row["device"]) == (26, "NVIDIA GeForce RTX 5060 Laptop GPU")
    assert row["dram_peak_bytes_per_s"] == 3.84e11 and row["dram_roof_src"].startswith("device table")
    assert not any("without its DRAM bandwidth" in n for n in r.notes)
