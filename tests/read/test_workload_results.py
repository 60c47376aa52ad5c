"""Range, application-range, command-list and graph results: one row each, named by ncu's name for
the kind and its NVTX ranges, no launch shape, the same from the native reader, ``ncu_report`` and
ncu's own CSV export of the same bytes; the kernels of the modules a range ran listed in a note."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ncu_roof.read import native
from ncu_roof.read.csv import load_csv
from ncu_roof.read.cubin import entry_functions, short_name
from ncu_roof.read.frame import workload_name
from tests.read.workload_reports import Result, write_workloads

pytest.importorskip("ncu_report")
from ncu_roof.read.ncu_rep import load_ncu_rep  # noqa: E402

TEMPLATE = "NCAR__GPU_workshop/MW_Baseline.ncu-rep"  # launch 0: set_halo_values_x_396_gpu
MW_KERNELS = ("reductions_872_gpu__red, reductions_872_gpu, set_halo_values_z_453_gpu, set_halo_values_x_419_gpu, "
              "set_halo_values_x_396_gpu, compute_tendencies_z_370_gpu, compute_tendencies_z_335_gpu, "
              "compute_tendencies_x_309_gpu and 2 more")


@pytest.fixture(scope="module")
def rg(reportgen_mod: Any) -> Any:
    return reportgen_mod


@pytest.fixture(scope="module")
def template(realdata: Path) -> Path:
    return realdata / TEMPLATE


@pytest.fixture(scope="module")
def template_time(template: Path) -> tuple[float, float]:
    """The template launch's duration (ns) and elapsed cycles, as stored."""
    raw = native.load_native(template)
    return raw.loc[0, "gpu__time_duration.sum"] * 1e9, raw.loc[0, "gpc__cycles_elapsed.max"]


def _times(template_time: tuple[float, float], k: float) -> dict[str, float]:
    """Metrics of a range ``k`` times as long as the template launch (duration and cycles agree)."""
    ns, cycles = template_time
    return {"gpu__time_duration.sum": ns * k, "gpc__cycles_elapsed.max": cycles * k}


@pytest.fixture(scope="module")
def ranges_report(rg: Any, template: Path, template_time: tuple[float, float],
                  tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Range replay: two ``step`` ranges (2 and 3 times the template launch), one ``train/fwd``, one
    with no NVTX."""
    dst = tmp_path_factory.mktemp("ranges") / "ranges.ncu-rep"
    write_workloads(rg, dst, [[
        Result("range", ("step",), _times(template_time, 2.0)),
        Result("range", ("train", "fwd"), _times(template_time, 0.5)),
        Result("range", ("step",), _times(template_time, 3.0)),
        Result("range"),
    ]], template)
    return dst


@pytest.fixture(scope="module")
def graphs_report(rg: Any, template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Graph profiling: a launch outside any graph, then a graph in a block of its own; a command list."""
    dst = tmp_path_factory.mktemp("graphs") / "graphs.ncu-rep"
    write_workloads(rg, dst, [[Result("kernel")], [Result("graph", ("decode",))], [Result("cmdlist", display="cl0")]],
                    template)
    return dst


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame, columns: list[str]) -> None:
    for col in columns:
        left, right = a[col].to_numpy(), b[col].to_numpy()
        if a[col].dtype.kind == "f":
            np.testing.assert_allclose(left.astype(float), right.astype(float), rtol=1e-12, equal_nan=True,
                                       err_msg=col)
        else:
            assert [None if pd.isna(x) else x for x in left] == [None if pd.isna(x) else x for x in right], col


def test_ranges_are_one_row_each_named_by_kind_and_nvtx(ranges_report: Path,
                                                        template_time: tuple[float, float]) -> None:
    raw = native.load_native(ranges_report)
    assert list(raw["kernel"]) == ["range step", "range train/fwd", "range step", "range"]
    assert list(raw["id"]) == [0, 1, 2, 3]
    t0 = template_time[0] * 1e-9
    assert raw["gpu__time_duration.sum"].tolist() == pytest.approx([2 * t0, 0.5 * t0, 3 * t0, t0], rel=1e-12)
    assert raw["grid_dim"].isna().all() and raw["block_dim"].isna().all() and raw["stream"].isna().all()
    assert not [c for c in raw.columns if c.startswith("launch__")]
    assert raw.attrs["notes"] == [
        "4 rows are a whole range each, not one launch (3 names): time, FLOPs and bytes are summed over the "
        "kernels in it, and rules about one launch's shape (grid, block, waves, occupancy limits) do not apply to "
        "ranges",
        f"range step (IDs 0, 2): the modules it ran hold the kernels {MW_KERNELS}",
        f"range train/fwd (ID 1): the modules it ran hold the kernels {MW_KERNELS}",
        f"range (ID 3): the modules it ran hold the kernels {MW_KERNELS}",
    ]


def test_ranges_read_the_same_with_ncu_report(ranges_report: Path, graphs_report: Path) -> None:
    for report in (ranges_report, graphs_report):
        ours, theirs = native.load_native(report), load_ncu_rep(report)
        assert list(ours.columns) == list(theirs.columns)
        _frames_equal(ours, theirs, [c for c in ours.columns if c != "process"])
        # ncu_report cannot list a module's kernels: the notes on what a row is, not those lists
        assert theirs.attrs["notes"] == [n for n in ours.attrs["notes"] if " not one launch " in n]


def test_graph_beside_a_launch_and_a_command_list(graphs_report: Path) -> None:
    raw = native.load_native(graphs_report)
    assert list(raw["kernel"]) == ["set_halo_values_x_396_gpu", "graph decode", "cl0"]
    assert raw["grid_dim"].notna().tolist() == [True, False, False]
    assert raw.loc[0, "launch__grid_size"] > 0 and np.isnan(raw.loc[1, "launch__grid_size"])
    notes = raw.attrs["notes"]
    assert notes[0].startswith("1 row is a whole command list, not one launch (1 name)")
    assert notes[1] == f"cl0 (ID 2): the modules it ran hold the kernels {MW_KERNELS}"
    assert notes[2].startswith("1 row is a whole CUDA graph, not one launch (1 name)")
    assert notes[3] == f"graph decode (ID 1): the modules it ran hold the kernels {MW_KERNELS}"


def test_csv_export_of_ranges_reads_the_same(ranges_report: Path, ncu_exe: Path, tmp_path: Path) -> None:
    csv = tmp_path / "ranges.csv"
    out = subprocess.run([str(ncu_exe), "--import", str(ranges_report), "--csv", "--page", "raw"],
                         capture_output=True, text=True, check=True).stdout
    csv.write_text(out)
    ours, theirs = native.load_native(ranges_report), load_csv(csv)
    assert list(theirs["kernel"]) == list(ours["kernel"])
    for col in ("gpu__time_duration.sum", "gpc__cycles_elapsed.max", "dram__bytes_read.sum",
                "dram__bytes_write.sum", "sm__cycles_elapsed.avg.per_second"):  # ncu prints them rounded
        np.testing.assert_allclose(theirs[col].to_numpy(float), ours[col].to_numpy(float), rtol=1e-6, err_msg=col)
    assert not [c for c in theirs.columns if c.startswith("launch__") and theirs[c].notna().any()]
    assert theirs.attrs["notes"][0] == ours.attrs["notes"][0]


def test_a_block_of_two_kinds_reads_only_the_first_as_ncu_does(rg: Any, template: Path, tmp_path: Path,
                                                                ncu_exe: Path) -> None:
    dst = tmp_path / "two_kinds.ncu-rep"
    write_workloads(rg, dst, [[Result("kernel"), Result("range", ("step",)), Result("graph", ("g",))]], template)
    raw = native.load_native(dst)
    assert list(raw["kernel"]) == ["set_halo_values_x_396_gpu"]
    assert raw.attrs["notes"] == ["1 range result and 1 graph result stored in blocks beside results of another "
                                  "kind were left out, as Nsight Compute leaves them out"]
    shown = subprocess.run([str(ncu_exe), "--import", str(dst), "--csv", "--page", "raw"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert len(shown) == 3  # header, units, the one launch


def test_diagnosis_of_ranges_adds_repeats_and_skips_launch_rules(
        rg: Any, template: Path, ranges_report: Path, template_time: tuple[float, float], tmp_path: Path) -> None:
    import ncu_roof

    d = ncu_roof.diagnose(ranges_report)
    kernels = d.kernels.set_index("kernel")
    assert kernels.loc["range step", "launches"] == 2
    assert kernels.loc["range step", "time_s"] == pytest.approx(5 * template_time[0] * 1e-9, rel=1e-12)
    assert not [n for n in d.diagnosis.notes if "disagrees" in n or "lack" in n]
    launch_rules = {"grid-underfill", "wave-tail", "block-size"}
    alone = tmp_path / "launch.ncu-rep"  # the template launch the ranges are built on, as a launch
    write_workloads(rg, alone, [[Result("kernel")]], template)
    assert {f.rule for f in ncu_roof.diagnose(alone).diagnosis.findings} & launch_rules == {"grid-underfill"}
    rules = {f.rule for f in d.diagnosis.findings}
    assert rules and not rules & launch_rules


def test_workload_names() -> None:
    assert workload_name("range", "step") == "range step"
    assert workload_name("range", None) == "range"
    assert workload_name("cuGraphLaunch", float("nan")) == "cuGraphLaunch"


def test_cubin_entry_functions(template: Path, rg: Any) -> None:
    report = rg.read_report(template)
    binaries = [s.Binary for b in report.blocks for s in b.sources]
    names = [short_name(m) for m in entry_functions(binaries[0])]
    assert names[-2:] == ["compute_tendencies_x_279_gpu", "semi_discrete_step_232_gpu"] and len(names) == 10
    assert entry_functions(b"not an elf") == [] and entry_functions(binaries[0][:200]) == []
    assert short_name("_Z5SobelIfEvP6uchar4S1_ii") == "Sobel"
    assert short_name("_ZN7cutlass6KernelINS_4gemmEEEvNT_6ParamsE") == "Kernel"
    assert short_name("_ZN4cute6kernelEv") == "kernel"
    assert short_name("set_halo_values_x_396_gpu") == "set_halo_values_x_396_gpu"
