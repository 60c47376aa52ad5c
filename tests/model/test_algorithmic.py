"""Pinned numbers of ``ncu_roof.model.algorithmic``: region counts, occurrences, ideal time and stake,
per-launch algorithmic counts, and which launches a region's kernel regex or NVTX range takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ncu_roof.errors import InputError
from ncu_roof.model import algorithmic
from ncu_roof.model.algorithmic import (
    RegionSpec,
    attach_kernel_algorithmic,
    occurrences,
    read_algorithmic,
    region_mask,
    regions_from_nvtx,
    summarize_regions,
)


def launches(*rows: dict[str, Any]) -> pd.DataFrame:
    """A placed-like table (the columns the region arithmetic reads)."""
    out = []
    for i, r in enumerate(rows):
        row: dict[str, Any] = {"report": "r", "id": i, "kernel": f"k{i}", "kernel_demangled": None, "nvtx": None,
                               "time_s": 1e-3, "flops": 1e6, "dram_bytes": 1e6, "l2_bytes": 2e6, "l1_bytes": 3e6,
                               "peak_flops_per_s": 1e13, "dram_roof_bytes_per_s": 1e12}
        row.update(r)
        out.append(row)
    return pd.DataFrame(out)


def test_region_counts_times_occurrences_ideal_time_and_stake() -> None:
    # one occurrence = launches of a then b; run twice: a b a b
    t = launches({"kernel": "a", "time_s": 1e-3, "dram_bytes": 4e9, "flops": 1e9},
                 {"kernel": "b", "time_s": 3e-3, "dram_bytes": 2e9, "flops": 3e9, "peak_flops_per_s": 2e13,
                  "dram_roof_bytes_per_s": 2e12},
                 {"kernel": "a", "time_s": 1e-3, "dram_bytes": 4e9, "flops": 1e9},
                 {"kernel": "b", "time_s": 3e-3, "dram_bytes": 2e9, "flops": 3e9, "peak_flops_per_s": 2e13,
                  "dram_roof_bytes_per_s": 2e12})
    spec = RegionSpec("ab", flops=5e9, bytes=3e9, kernels="^(a|b)$")
    r = summarize_regions(t, [spec]).iloc[0]
    assert r["launches"] == 4 and r["occurrences"] == 2 and r["kernels"] == ["a", "b"] and r["ids"] == [0, 1, 2, 3]
    assert r["alg_flops"] == 1e10 and r["alg_bytes"] == 6e9
    assert r["time_s"] == pytest.approx(8e-3) and r["dram_bytes"] == 12e9 and r["flops"] == 8e9
    assert r["l2_bytes"] == 8e6 and r["l1_bytes"] == 12e6
    # roofs weighted by time: (1 x 1e13 + 3 x 2e13) / 4 and (1 x 1e12 + 3 x 2e12) / 4
    assert r["peak_flops_per_s"] == pytest.approx(1.75e13) and r["dram_roof_bytes_per_s"] == pytest.approx(1.75e12)
    ideal = max(1e10 / 1.75e13, 6e9 / 1.75e12)  # 571 us vs 3.43 ms: bytes bind
    assert r["ideal_time_s"] == pytest.approx(ideal)
    assert r["time_at_stake_s"] == pytest.approx(8e-3 - ideal)
    assert r["extra_bytes_factor"] == pytest.approx(12e9 / 6e9)
    assert r["alg_intensity"] == pytest.approx(1e10 / 6e9)
    assert r["achieved_intensity"] == pytest.approx(8e9 / 12e9)
    flops_bound = summarize_regions(t, [RegionSpec("ab", flops=1e12, bytes=3e9, kernels="^(a|b)$")]).iloc[0]
    assert flops_bound["ideal_time_s"] == pytest.approx(2e12 / 1.75e13)  # FLOPs bind


def test_region_with_flops_only_or_bytes_only() -> None:
    t = launches({"kernel": "a"})
    flops_only = summarize_regions(t, [RegionSpec("f", flops=2e9, bytes=None, kernels="a")]).iloc[0]
    assert flops_only["ideal_time_s"] == pytest.approx(2e9 / 1e13)
    assert np.isnan(flops_only["alg_bytes"]) and np.isnan(flops_only["extra_bytes_factor"])
    assert np.isnan(flops_only["alg_intensity"])
    bytes_only = summarize_regions(t, [RegionSpec("b", flops=None, bytes=5e8, kernels="a")]).iloc[0]
    assert bytes_only["ideal_time_s"] == pytest.approx(5e8 / 1e12)
    assert bytes_only["extra_bytes_factor"] == pytest.approx(1e6 / 5e8)
    none = summarize_regions(t, [RegionSpec("n", flops=None, bytes=None, kernels="a")]).iloc[0]
    assert np.isnan(none["ideal_time_s"]) and np.isnan(none["time_at_stake_s"])


def test_region_dram_bytes_unknown_when_any_launch_lacks_them() -> None:
    t = launches({"kernel": "a"}, {"kernel": "a", "dram_bytes": np.nan})
    r = summarize_regions(t, [RegionSpec("a", flops=1.0, bytes=1.0, kernels="a")]).iloc[0]
    assert np.isnan(r["dram_bytes"]) and np.isnan(r["achieved_intensity"]) and np.isnan(r["extra_bytes_factor"])
    empty = summarize_regions(t, [RegionSpec("z", flops=1.0, bytes=1.0, kernels="^zzz$")]).iloc[0]
    assert empty["launches"] == 0 and empty["kernels"] == []


def test_occurrences_from_the_file_or_the_first_kernel() -> None:
    t = launches({"kernel": "b", "id": 5}, {"kernel": "a", "id": 1}, {"kernel": "b", "id": 2}, {"kernel": "a", "id": 3})
    assert occurrences(t, RegionSpec("x", 1.0, 1.0, kernels=".")) == 2  # first launch (id 1) is a: 2 of them
    assert occurrences(t, RegionSpec("x", 1.0, 1.0, kernels=".", occurrences=7)) == 7
    t2 = launches({"kernel": "a", "id": 0}, {"kernel": "b", "id": 1}, {"kernel": "b", "id": 2})
    assert occurrences(t2, RegionSpec("x", 1.0, 1.0, kernels=".")) == 1


def test_time_weighted_roof_without_times_is_the_plain_mean() -> None:
    t = launches({"time_s": np.nan, "peak_flops_per_s": 1e13}, {"time_s": np.nan, "peak_flops_per_s": 3e13})
    assert algorithmic._time_weighted(t, "peak_flops_per_s") == pytest.approx(2e13)
    t2 = launches({"time_s": 1.0, "peak_flops_per_s": 1e13}, {"time_s": 0.0, "peak_flops_per_s": 3e13})
    assert algorithmic._time_weighted(t2, "peak_flops_per_s") == pytest.approx(1e13)
    assert np.isnan(algorithmic._time_weighted(launches({"peak_flops_per_s": np.nan}), "peak_flops_per_s"))


def test_per_launch_algorithmic_counts_only_when_each_occurrence_is_one_launch() -> None:
    t = launches({"kernel": "one"}, {"kernel": "one"}, {"kernel": "one"},
                 {"kernel": "x"}, {"kernel": "y"}, {"kernel": "x"}, {"kernel": "y"})
    specs = [RegionSpec("single", flops=2e6, bytes=8e6, kernels="^one$"),
             RegionSpec("pair", flops=3e6, bytes=6e6, kernels="^(x|y)$")]
    out = attach_kernel_algorithmic(t, specs)
    assert list(out["alg_bytes"][:3]) == [8e6] * 3 and list(out["alg_flops"][:3]) == [2e6] * 3
    assert list(out["alg_intensity"][:3]) == [0.25] * 3
    # x y x y is 2 occurrences of 2 launches: the counts are per occurrence, not per launch
    assert out["alg_bytes"][3:].isna().all() and out["alg_intensity"][3:].isna().all()
    r = summarize_regions(out, specs).set_index("name")
    assert r.loc["pair", "occurrences"] == 2 and r.loc["pair", "alg_bytes"] == 12e6
    assert r.loc["single", "occurrences"] == 3 and r.loc["single", "alg_bytes"] == 24e6
    bytes_only = attach_kernel_algorithmic(t, [RegionSpec("b", flops=None, bytes=4e6, kernels="^one$")])
    assert bytes_only["alg_flops"].isna().all() and list(bytes_only["alg_bytes"][:3]) == [4e6] * 3
    zero = attach_kernel_algorithmic(t, [RegionSpec("z", flops=1e6, bytes=0.0, kernels="^one$")])
    assert zero["alg_intensity"].isna().all()


def test_kernel_regex_matches_mangled_and_demangled_names() -> None:
    t = launches({"kernel": "_Z6scaleIfEvPT_", "kernel_demangled": "void scale<float>(float *)"},
                 {"kernel": "relu", "kernel_demangled": None},
                 {"kernel": "scale2", "kernel_demangled": "void scale2(int)"})
    assert list(region_mask(t, RegionSpec("m", 1.0, 1.0, kernels="^_Z6scale"))) == [True, False, False]
    assert list(region_mask(t, RegionSpec("d", 1.0, 1.0, kernels=r"scale<float>"))) == [True, False, False]
    assert list(region_mask(t, RegionSpec("r", 1.0, 1.0, kernels="^relu$"))) == [False, True, False]
    assert list(region_mask(t, RegionSpec("v", 1.0, 1.0, kernels="^void scale"))) == [True, False, True]
    assert list(region_mask(t, RegionSpec("n", 1.0, 1.0, kernels="^nothing$"))) == [False, False, False]


def test_nvtx_levels_and_regions_from_nvtx() -> None:
    assert algorithmic._levels("outer/inner") == ["outer", "inner"]
    assert algorithmic._levels("dom@outer/inner | start_end") == ["outer", "inner", "start_end"]
    assert algorithmic._levels("a/b@c") == ["a", "b@c"]
    assert algorithmic._levels("") == [] and algorithmic._levels(None) == []
    t = launches({"nvtx": "step/ln [ncu-roof flops=100 bytes=200]"}, {"nvtx": "step"},
                 {"nvtx": "ncu_roof@sm [ncu-roof bytes=50]"}, {"nvtx": "step/ln [ncu-roof flops=100 bytes=200]"})
    specs = sorted(regions_from_nvtx(t), key=lambda s: s.name)
    assert [(s.name, s.flops, s.bytes, s.nvtx) for s in specs] == [("ln", 100.0, 200.0, "ln"), ("sm", None, 50.0, "sm")]
    assert list(region_mask(t, specs[0])) == [True, False, False, True]
    assert list(region_mask(t, RegionSpec("s", 1.0, 1.0, nvtx="step"))) == [True, True, False, True]
    both = RegionSpec("s", 1.0, 1.0, nvtx="step", kernels="^k0$")
    assert list(region_mask(t, both)) == [True, False, False, False]


def test_sidecar_numbers_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "alg.toml"
    path.write_text('[[region]]\nname = "a"\nkernels = "k"\nflops = 10\nbytes = 2.5e3\noccurrences = 4\n')
    [spec] = read_algorithmic(path)
    assert (spec.flops, spec.bytes, spec.occurrences, spec.origin) == (10.0, 2500.0, 4, str(path))
    # since the sidecar schemas (ncu_roof/schema.py, README "sidecars"): counts are finite and > 0,
    # so a stated zero is refused like a negative one (state only the count that applies instead)
    for bad in ("flops = 0", "bytes = 0", "flops = -1", "bytes = true", "bytes = 'many'", "flops = nan"):
        path.write_text(f'[[region]]\nname = "a"\nkernels = "k"\n{bad}\n')
        with pytest.raises(InputError, match="give a finite number > 0"):
            read_algorithmic(path)
    path.write_text('[[region]]\nname = "a"\nkernels = "k"\nflops = 1e-300\n')
    [tiny] = read_algorithmic(path)
    assert tiny.flops == 1e-300 and tiny.bytes is None and tiny.occurrences is None
    path.write_text('[[region]]\nname = "a"\nkernels = "k("\n')
    with pytest.raises(InputError, match="is not a valid regex for RE2"):  # the schema's wording
        read_algorithmic(path)
    path.write_text('title = "x"\n')  # the schema refuses an unknown top-level key before anything else
    with pytest.raises(InputError, match="unknown key 'title' \\(valid keys: region\\)"):
        read_algorithmic(path)
    path.write_text("")
    with pytest.raises(InputError, match="no \\[\\[region\\]\\] entries"):
        read_algorithmic(path)


def test_region_with_zero_compulsory_bytes_has_no_intensity_or_extra_factor() -> None:
    t = launches({"kernel": "a"})
    r = summarize_regions(t, [RegionSpec("compute", flops=2e9, bytes=0.0, kernels="a")]).iloc[0]
    assert r["alg_bytes"] == 0.0 and np.isnan(r["alg_intensity"]) and np.isnan(r["extra_bytes_factor"])
    assert r["ideal_time_s"] == pytest.approx(2e9 / 1e13)
    no_dram = summarize_regions(launches({"kernel": "a", "dram_bytes": 0.0}),
                                [RegionSpec("c", flops=1.0, bytes=1.0, kernels="a")]).iloc[0]
    assert np.isnan(no_dram["achieved_intensity"])


def test_region_of_one_byte_has_an_intensity() -> None:
    """The smallest positive counts still divide: 64 FLOPs over 1 DRAM byte, 32 over 1 compulsory."""
    r = summarize_regions(launches({"kernel": "a", "dram_bytes": 1.0, "flops": 64.0}),
                          [RegionSpec("c", flops=32.0, bytes=1.0, kernels="a")]).iloc[0]
    assert (r["achieved_intensity"], r["alg_intensity"], r["extra_bytes_factor"]) == (64.0, 32.0, 1.0)
