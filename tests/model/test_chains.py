"""Kernel sequences that look fusable, from sizes and order alone, and the [[region]] stanzas that check them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, cached_diagnosis

from ncu_roof.diagnosis import diagnose_paths
from ncu_roof.model.algorithmic import read_algorithmic
from ncu_roof.model.chains import find_chains, region_stanzas

UNFUSED = FIXTURES / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"
HAND_COUNTS = FIXTURES / "synthetic" / "synthetic_layernorm.toml"
LN = ("ln_mean_kernel", "ln_sub_kernel", "ln_square_kernel", "ln_var_kernel", "ln_normalize_kernel",
      "ln_affine_kernel")


def test_the_unfused_layernorm_is_one_chain_with_the_seeds_compulsory_bytes() -> None:
    d = diagnose_paths([UNFUSED])
    (chain,) = find_chains(d.placed)
    assert chain.kernels == LN and chain.occurrences == 1
    # x read by the first kernel (16384 x 4096 FP32) and y written by the last: the 2 x 268,435,456 bytes
    # the seeds count by hand (the fixture's sidecar), found without it
    assert chain.fused_bytes == 536_870_912 == read_algorithmic(HAND_COUNTS)[0].bytes
    assert chain.dram_bytes == 2_684_354_560
    assert chain.fused_floor_s == pytest.approx(536_870_912 / 591.36e9)  # at the practical DRAM roof
    (f,) = [f for f in d.findings if f.rule == "fusion-chain"]
    assert d.findings[0] is f  # every kernel is at its roof: nothing measured outranks it
    assert f.time_at_stake_s == pytest.approx(4.54975e-3 - 536_870_912 / 591.36e9)
    # the same stake as the hand-counted region's
    hand = diagnose_paths([UNFUSED], algorithmic=HAND_COUNTS)
    (fused,) = [g for g in hand.findings if g.rule == "fuse-extra-bytes"]
    assert fused.time_at_stake_s == pytest.approx(f.time_at_stake_s, rel=1e-12)
    assert not [g for g in hand.findings if g.rule == "fusion-chain"]  # the user's counts speak instead


def test_the_stanza_reads_back_as_a_region_of_the_chain(tmp_path: Path) -> None:
    d = diagnose_paths([UNFUSED])
    path = tmp_path / "suggested.toml"
    path.write_text(region_stanzas(find_chains(d.placed)))
    (spec,) = read_algorithmic(path)
    assert (spec.name, spec.flops, spec.bytes, spec.occurrences) == ("ln-fused", 469_762_048, 536_870_912, 1)
    again = diagnose_paths([UNFUSED], algorithmic=path)
    (region,) = [g for g in again.findings if g.rule == "fuse-extra-bytes"]
    assert region.region == "ln-fused" and "(5.0x extra bytes)" in region.message


def test_a_pipeline_is_priced_with_the_last_kernels_own_inputs_and_ranked_by_its_stake(realdata: Path) -> None:
    """MW_Baseline 309 -> 232: semi_discrete_step reads 2.46 GB, 1.20 GB of it what 309 wrote; the other
    1.26 GB are its own inputs, which a fused kernel reads too: 1.21 + 1.26 + 1.27 (its writes) = 3.73 GB,
    4.76 ms at the practical 784 GB/s, 4.48 ms below the pair's 9.24 ms. Ranked by that stake, with the
    other findings (a conditional finding is at most medium, never sent to the end)."""
    d = cached_diagnosis(realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep")
    [c] = find_chains(d.placed)
    assert c.fused_bytes == 1_211_155_072 + (2_456_896_000 - (2_412_998_400 - 1_211_155_072)) + (
        3_724_418_944 - 2_456_896_000) or c.fused_bytes == pytest.approx(3.7337e9, rel=1e-4)
    assert c.fused_bytes == pytest.approx(3.7337e9, rel=1e-4)
    (f,) = [f for f in d.findings if f.rule == "fusion-chain"]
    assert f.kernels == ("compute_tendencies_x_309_gpu", "semi_discrete_step_232_gpu")
    assert f.time_at_stake_s == pytest.approx(9.2439e-3 - 4.7643e-3, rel=1e-3)
    assert [g.rule for g in d.findings[:2]] == ["fusion-chain", "fp64-pipe"] and f.severity == "medium"


def test_gemms_of_one_size_in_a_row_are_alternatives_not_a_pipeline(realdata: Path) -> None:
    for name in ("profile.049ec61252.ncu-rep", "profile_output.a62323b2dd.ncu-rep"):
        d = cached_diagnosis(realdata / "AveryClapp__ESMM-Research" / name)
        assert find_chains(d.placed) == []
