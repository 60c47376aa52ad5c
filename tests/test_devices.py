"""The built-in device table (ncu_roof/data/devices.toml) and its lookups."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import fields

import pytest

from ncu_roof.devices import (
    DeviceSpec,
    load_devices,
    lookup,
    lookup_by_cc_and_sms,
    normalize_name,
)

DEVICES = load_devices()
SPECS = list(DEVICES.values())
IDS = [s.name for s in SPECS]

NUMERIC = [
    f.name for f in fields(DeviceSpec)
    if f.name not in ("name", "aliases", "cc", "source", "notes", "sm_count")
]
TENSOR = [n for n in NUMERIC if n.startswith("tensor_") and n != "tensor_fp64_flops_per_s"]


def test_table_is_big_enough() -> None:
    assert len(DEVICES) >= 60


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_required_fields(spec: DeviceSpec) -> None:
    assert spec.name
    assert spec.cc and len(spec.cc.split(".")) == 2
    assert spec.dram_bytes_per_s is not None
    assert spec.fp32_flops_per_s is not None
    assert spec.source and len(spec.source) > 10


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_numbers_positive_and_plausible(spec: DeviceSpec) -> None:
    for name in NUMERIC:
        value = getattr(spec, name)
        if value is not None:
            assert math.isfinite(value) and value > 0, name  # never 0: omit instead
    assert 1e12 <= spec.fp32_flops_per_s <= 2e14
    assert 1e11 <= spec.dram_bytes_per_s <= 1e13
    if spec.sm_count is not None:
        assert 10 <= spec.sm_count <= 200
    if spec.boost_clock_hz is not None:
        assert 0.8e9 <= spec.boost_clock_hz <= 3.2e9
    if spec.l2_bytes is not None:
        assert 1 << 20 <= spec.l2_bytes <= 256 << 20
    if spec.fp64_flops_per_s is not None:
        assert spec.fp64_flops_per_s <= spec.fp32_flops_per_s
    if spec.fp16_flops_per_s is not None:
        assert spec.fp32_flops_per_s <= spec.fp16_flops_per_s <= 4 * spec.fp32_flops_per_s * 1.01
    for name in TENSOR:
        value = getattr(spec, name)
        if value is not None:
            assert value >= spec.fp32_flops_per_s * 0.999, name
            assert value <= 1e16, name
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
        lanes = 64 if spec.cc in ("6.0", "7.0", "7.5", "8.0") else 128
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
     "NVIDIA GeForce RTX 3070 Ti Laptop GPU"],
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
    assert lookup_by_cc_and_sms("9.0", 114).name == "NVIDIA H100 PCIe"
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
