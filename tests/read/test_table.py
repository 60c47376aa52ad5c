"""The tidy table from real .ncu-rep files: values checked against ncu_report read independently."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import ncu_roof
from ncu_roof.errors import InputError
from ncu_roof.read.inputs import expand_inputs, expand_paths
from ncu_roof.read.ncu_rep import check_container
from ncu_roof.read.normalize import normalize

ncu_report = pytest.importorskip("ncu_report")

REQUIRED_COLUMNS = ("report", "id", "kernel", "kernel_demangled", "device", "cc", "grid_size", "block_size",
                    "time_s", "dram_bytes", "l2_bytes", "l1_bytes", "flops_fp64", "flops_fp32", "flops_fp16",
                    "flops_tensor", "nvtx", "waves", "achieved_occupancy_pct", "peak_fp32_flops_per_s")


def _metric(path: Path, index: int, name: str) -> float:
    """A metric of one launch, read straight from ncu_report (the independent computation)."""
    action = ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(index)
    return action.metric_by_name(name).as_double()


def _row(table: pd.DataFrame, kernel: str) -> pd.Series:
    rows = table[table["kernel"] == kernel]
    assert len(rows) == 1, f"{kernel}: {len(rows)} rows"
    return rows.iloc[0]


def test_every_real_report_loads_with_the_documented_columns(realdata: Path) -> None:
    reports = sorted(realdata.glob("*/*.ncu-rep"))
    assert reports
    for path in reports:
        table = ncu_roof.load(path)
        assert len(table) == check_container(path), path
        for column in REQUIRED_COLUMNS:
            assert column in table, (path, column)
        assert table["report"].eq(str(path)).all()


def test_miniweather_v100_counters(realdata: Path) -> None:
    path = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    row = _row(ncu_roof.load(path), "compute_tendencies_x_279_gpu")
    assert row["device"] == "Tesla V100-SXM2-32GB" and row["cc"] == "7.0"
    assert row["time_s"] == pytest.approx(6_190_944e-9, rel=1e-12)
    assert row["dram_bytes"] == 1_209_119_616 + 1_267_902_560
    assert row["dram_bytes_src"] == "dram__bytes_read.sum + dram__bytes_write.sum"
    assert row["l2_bytes"] == 32 * 83_126_662
    assert "lts__t_bytes" in row["l2_bytes_src"]
    # the V100 report stores FP64 work as per-cycle rates only: rebuilt as rate x elapsed cycles
    cycles = _metric(path, 2, "smsp__cycles_elapsed.avg.per_second") * 6_190_944e-9
    per_cycle = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
    expected = cycles * sum(w * _metric(path, 2, per_cycle.format(op))
                            for op, w in (("dfma", 2), ("dadd", 1), ("dmul", 1)))
    assert row["flops_fp64"] == pytest.approx(expected, rel=1e-9)
    assert row["flops_fp64"] == pytest.approx(2.137044e10, rel=1e-6)
    peak = 2 * 2560 * _metric(path, 2, "sm__cycles_elapsed.avg.per_second")
    assert row["peak_fp64_flops_per_s"] == pytest.approx(peak, rel=1e-12)


def test_h100_silu_fp32_flops_from_per_cycle_rates(realdata: Path) -> None:
    path = realdata / "AlpriElse__cs599k" / "2025-04-21-vector-based.ncu-rep"
    table = ncu_roof.load(path)
    row = table.iloc[0]
    assert row["kernel"] == "silu_kernel_vector" and row["device"] == "NVIDIA H100 PCIe"
    assert row["time_s"] == pytest.approx(284_704e-9)
    assert row["dram_bytes"] == 268_463_104 + 248_602_624
    assert row["flops_fp32"] == pytest.approx((2 * 2142.812707267493 + 214.2812707267493) * 313181.1929824561, rel=1e-9)
    assert row["flops_fp32_src"] == "2*ffma + 1*fadd + 1*fmul"
    assert row["flops_tensor"] == 0.0  # measured zero is zero; only unknown is NaN
    assert row["grid_dim"] == "(65536, 1, 1)" and row["grid_size"] == 65536


def test_a10g_rates_only_report_rebuilds_dram_bytes(realdata: Path) -> None:
    path = realdata / "AveryClapp__ESMM-Research" / "profile_output.a62323b2dd.ncu-rep"
    row = _row(ncu_roof.load(path), "one_blocktiling")
    seconds = 431_648e-9
    assert row["dram_bytes"] == pytest.approx(47_911_631_699.903625 * seconds, rel=1e-12)
    assert row["dram_bytes_src"] == "dram__bytes.sum.per_second x time"
    clock = 1_315_081_269.9236414
    assert row["flops_fp32"] == pytest.approx(2 * 1891.548775817305 * clock * seconds, rel=1e-9)
    assert row["grid_size"] == 256 and row["block_size"] == 512


def test_rtx2080ti_sgemm_counts_the_tiled_fmas(realdata: Path) -> None:
    row = ncu_roof.load(realdata / "tanvisharma__nsight-compute-files" / "3136_64_64_rtx2080ti_sgemm.ncu-rep").iloc[0]
    # M=3136 rounds up to 25 tiles of 128 rows: 3200 x 64 x 64 FMAs, 2 FLOPs each (+ a few adds)
    assert row["flops_fp32"] == pytest.approx(2 * 3200 * 64 * 64, rel=0.01)
    assert row["dram_bytes"] == 819_456
    # the report has both the lts__t_sectors.sum counter and the lts__t_bytes rate: the counter wins
    assert row["l2_bytes"] == 32 * 90_113 and row["l2_bytes_src"] == "32 x lts__t_sectors.sum [l2:lts__t_bytes]"


def test_basic_set_report_is_partial_not_zero(realdata: Path) -> None:
    row = ncu_roof.load(realdata / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep").iloc[0]
    assert row["kernel"] == "VecAdd_kernel"
    assert row["time_s"] == pytest.approx(_metric(realdata / "NVIDIA__nsight-training" / "CuVectorAddDrv.ncu-rep", 0,
                                                  "gpu__time_duration.sum") * 1e-9)
    for column in ("dram_bytes", "l2_bytes", "flops_fp32", "flops_tensor"):
        assert math.isnan(row[column]), column
    assert row["missing"] == "dram_bytes,l2_bytes,l1_bytes,flops"


def test_report_without_sections_has_no_time(realdata: Path) -> None:
    table = ncu_roof.load(realdata / "AlpriElse__cs599k" / "silu-2025-04-19-v1.ncu-rep")
    assert len(table) == 3 and table["device"].eq("NVIDIA GH200 480GB").all()
    assert table["time_s"].isna().all()
    assert table["missing"].str.startswith("time_s").all()


def test_nvtx_ranges_are_kept(realdata: Path) -> None:
    table = ncu_roof.load(realdata / "NVIDIA__nsight-training" / "manual_nvtx.ncu-rep")
    assert dict(zip(table["kernel"], table["nvtx"], strict=True)) == {
        "init_data_kernel": "run_test/init_data", "daxpy_kernel": "run_test/daxpy",
        "check_results_kernel": "run_test/check_results"}


def test_several_files_in_one_call_remember_their_source(realdata: Path) -> None:
    workshop = realdata / "NCAR__GPU_workshop"
    paths = [workshop / "MW_Baseline.ncu-rep", workshop / "MW_DivToMult.ncu-rep"]
    table = ncu_roof.load(paths)
    assert table.groupby("report").size().to_dict() == {str(paths[0]): 5, str(paths[1]): 5}
    assert expand_paths(realdata / "NCAR__GPU_workshop") == sorted(paths)


def test_normalize_prefers_direct_counters_over_rates() -> None:
    raw = pd.DataFrame({
        "report": ["r"], "id": [0], "kernel": ["k"],
        "gpu__time_duration.sum": [2e-3],
        "dram__bytes.sum.per_second": [1e11],
        "dram__bytes_read.sum": [1.5e8], "dram__bytes_write.sum": [0.5e8],
    })
    row = normalize(raw).iloc[0]
    assert row["dram_bytes"] == 2e8 and row["dram_bytes_src"] == "dram__bytes_read.sum + dram__bytes_write.sum"
    only_rate = normalize(raw.drop(columns=["dram__bytes_read.sum", "dram__bytes_write.sum"])).iloc[0]
    assert only_rate["dram_bytes"] == pytest.approx(2e8)
    assert only_rate["dram_bytes_src"] == "dram__bytes.sum.per_second x time"


def test_fma_counts_as_two_flops_and_fp16_uses_ncu_weights() -> None:
    names = {f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum": v for op, v in
             (("ffma", 10.0), ("fadd", 3.0), ("fmul", 4.0), ("hfma", 5.0), ("hadd", 1.0), ("hmul", 2.0))}
    raw = pd.DataFrame({"report": ["r"], "id": [0], "kernel": ["k"], **{k: [v] for k, v in names.items()}})
    row = normalize(raw).iloc[0]
    assert row["flops_fp32"] == 2 * 10 + 3 + 4
    assert row["flops_fp16"] == 4 * 5 + 2 * 1 + 2 * 2
    assert "[fp16:ncu]" in row["flops_fp16_src"]
    assert math.isnan(row["flops_fp64"])


@pytest.mark.parametrize("kind", ["gzip", "zip"])
def test_compressed_report_reads_like_the_plain_one(kind: str, realdata: Path, tmp_path: Path) -> None:
    import gzip
    import zipfile

    src = realdata / "NVIDIA__nsight-training" / "manual_nvtx.ncu-rep"
    packed = tmp_path / "manual_nvtx.ncu-repz"
    if kind == "gzip":
        packed.write_bytes(gzip.compress(src.read_bytes()))
    else:
        with zipfile.ZipFile(packed, "w") as archive:
            archive.write(src, "manual_nvtx.ncu-rep")
    plain, compressed = ncu_roof.load(src), ncu_roof.load(packed)
    assert compressed["report"].eq(str(packed)).all()
    cols = ["kernel", "time_s", "nvtx", "grid_size"]
    pd.testing.assert_frame_equal(plain[cols], compressed[cols])


def test_l2_bytes_come_with_the_roof_of_the_same_definition(realdata: Path) -> None:
    """H100 report: lts__t_sectors counts exist but only the lts2xbar roof: both use lts2xbar."""
    path = realdata / "AlpriElse__cs599k" / "2025-04-21-vector-based.ncu-rep"
    row = ncu_roof.load(path).iloc[0]
    assert row["l2_bytes_src"].endswith("[l2:lts2xbar]") and row["peak_l2_bytes_per_s_src"].endswith("[l2:lts2xbar]")
    rate = _metric(path, 0, "derived__lts__lts2xbar_bytes.sum.per_second")
    assert row["l2_bytes"] == pytest.approx(rate * 284_704e-9)
    peak = 32 * _metric(path, 0, "lts__lts2xbar_cycles_active.sum.peak_sustained") * _metric(
        path, 0, "lts__cycles_elapsed.avg.per_second")
    assert row["peak_l2_bytes_per_s"] == pytest.approx(peak)
    # A10G (ncu 2023.1.1): the xbar2l1tex definition, bytes and roof
    a10g = ncu_roof.load(realdata / "AveryClapp__ESMM-Research" / "profile_output.a62323b2dd.ncu-rep").iloc[0]
    assert a10g["peak_l2_bytes_per_s_src"].endswith("[l2:xbar2l1tex]") and a10g["peak_l2_bytes_per_s"] > 1e12


def test_shared_bytes_ignore_wavefronts_of_other_operations(ncu_examples: Path) -> None:
    """addConstDouble uses no shared memory: no phantom shared traffic from the unqualified counter."""
    report = next((ncu_examples / "uncoalescedGlobalAccesses").glob("*.ncu-rep"))
    table = ncu_roof.load(report)
    assert (table["shared_bytes"].fillna(0) == 0).all(), table[["kernel", "shared_bytes", "shared_bytes_src"]]


def test_kernels_sharing_a_short_name_are_kept_apart(realdata: Path) -> None:
    """wangzy: ncu calls both CUTLASS GEMMs `Kernel` (one is named by the kernel it wraps) and both
    matrix inits `InitializeMatrix_kernel`."""
    table = ncu_roof.load(realdata / "wangzy0327__cuda-roofline" / "output.csv")
    counts = table.groupby("kernel").size().to_dict()
    assert counts == {"Kernel<Gemm>": 6, "cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8": 1,
                      "InitializeMatrix_kernel<float>": 2, "InitializeMatrix_kernel<__half>": 2}
    assert table.groupby("kernel")["kernel_demangled"].nunique().eq(1).all()


def test_device_named_by_the_program_output_then_by_cc_and_sm_count(realdata: Path) -> None:
    wangzy = ncu_roof.load(realdata / "wangzy0327__cuda-roofline" / "output.csv")
    assert wangzy["device"].eq("Tesla V100-PCIE-32GB").all()
    assert any("device taken from the program's output: Tesla V100-PCIE-32GB" in n for n in wangzy.attrs["notes"])
    saxpy = ncu_roof.load(realdata / "Olajide-Badejo__GPU-Roofline-Profiler" / "saxpy.csv")
    assert saxpy["device"].eq("NVIDIA GeForce RTX 5070").all()
    # Gardenia's A100 (CC 8.0, no SM count in the export) could be any of eight CC 8.0 entries; its 765 MHz
    # SM clock (ncu locks the base clock) is the base clock of one only, the A100 PCIe 40GB: that one, said
    path = realdata / "Gardenia-Tian__LearningNote4Dev" / "sgemm.csv"
    gardenia = ncu_roof.load(path)
    assert gardenia["device"].eq("NVIDIA A100-PCIE-40GB").all()
    assert (f"{path}: device inferred from CC 8.0 and its SM clock, 765 MHz, the base clock (ncu's default clock "
            "control) of NVIDIA A100-PCIE-40GB alone among the table's CC 8.0 GPUs (pass --device to change)"
            ) in gardenia.attrs["notes"]
    # copy_blocked: CC 7.5 and 40 SMs leave four GPUs; 585 MHz is the T4's base clock
    copy = realdata / "brycelelbach__nsightful" / "copy_blocked.csv"
    assert (f"{copy}: device inferred from CC 7.5 and its SM clock, 585 MHz, the base clock (ncu's default clock "
            "control) of Tesla T4 alone among the table's CC 7.5 GPUs with 40 SMs (pass --device to change)"
            ) in ncu_roof.load(copy).attrs["notes"]
    # reduceInteger (CC 8.9, no SM count, no clock): one of 31; the note lists the first and says what to do
    reduce = realdata / "Lashi0812__CudaProgramming" / "ncu_reduceInteger.csv"
    assert ncu_roof.load(reduce)["device"].isna().all()
    assert any(n.startswith(f"{reduce}: the input does not name its GPU (CC 8.9): it is one of NVIDIA GeForce RTX "
                            "4050 Laptop GPU") and n.endswith("or --ceilings FILE for roofs")
               for n in ncu_roof.load(reduce).attrs["notes"])
    table = ncu_roof.load(path)
    table["device"] = None  # its clock not read: FLOPs and bytes, no roof
    from ncu_roof.diagnosis import diagnose_table
    from ncu_roof.render.text import render_text

    d = diagnose_table(table)
    assert any(line.startswith(
        "Cannot judge 100% of the time: the report does not name the GPU, so no roof is known (its FLOPs and "
        "bytes are there): pass --device NAME or --ceilings FILE") for line in render_text(d, width=1000).splitlines())
    named = ncu_roof.load(realdata / "Gardenia-Tian__LearningNote4Dev" / "sgemm.csv", device="NVIDIA A100-PCIE-40GB")
    assert named["device"].eq("NVIDIA A100-PCIE-40GB").all()


def test_unknown_device_name_is_refused(realdata: Path) -> None:
    from ncu_roof.errors import InputError

    with pytest.raises(InputError, match="--device 'NVIDIA Nonexistent' is not in the device table"):
        ncu_roof.load(realdata / "Gardenia-Tian__LearningNote4Dev" / "sgemm.csv", device="NVIDIA Nonexistent")


def test_same_file_twice_is_read_once(realdata: Path) -> None:
    path = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    assert len(ncu_roof.load([path, path, path.parent])) == 10  # MW_Baseline + MW_DivToMult, once each


def test_achieved_occupancy_from_the_warps_resident_where_its_percent_is_missing() -> None:
    from ncu_roof.read.frame import IDENTITY_COLUMNS

    base = {**{c: pd.NA for c in IDENTITY_COLUMNS}, "report": "r", "kernel": "k", "gpu__time_duration.sum": 1e-3,
            "sm__warps_active.avg.per_cycle_active": 24.0, "device__attribute_max_warps_per_multiprocessor": 48.0}
    pct = {"sm__warps_active.avg.pct_of_peak_sustained_active": 40.0}
    raw = pd.DataFrame([{**base, "id": 0}, {**base, "id": 1, **pct}])
    t = normalize(raw)
    assert list(t["achieved_occupancy_pct"]) == [50.0, 40.0]  # the percent, where captured, wins


def test_a_folder_is_read_to_any_depth_and_what_was_skipped_is_said(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
    (tmp_path / "run1" / "deep").mkdir(parents=True)
    (tmp_path / ".cache").mkdir()
    unfused = fixtures / "synthetic_layernorm_unfused_rtx5070.csv"
    (tmp_path / "run1" / "deep" / "ln.csv").write_bytes(unfused.read_bytes())
    (tmp_path / "run1" / "fused.csv").write_bytes((fixtures / "synthetic_layernorm_fused_rtx5070.csv").read_bytes())
    (tmp_path / ".cache" / "hidden.csv").write_bytes(unfused.read_bytes())  # hidden folders are not read
    (tmp_path / "run1" / "log.csv").write_text("==PROF== Connected to process 1\n==ERROR== failed\n")
    (tmp_path / "README.txt").write_text("notes\n")
    table = ncu_roof.load(tmp_path)
    run1 = tmp_path / "run1"
    assert sorted(set(table["report"])) == [str(run1 / "deep" / "ln.csv"), str(run1 / "fused.csv")]
    assert table.attrs["notes"][0] == (f"{tmp_path}: 0 reports and 2 CSV exports read; skipped 1 .txt, 1 CSV file "
                                       "that is not an Nsight Compute export (run1/log.csv)")
    (tmp_path / "run1" / "deep" / "ln.csv").unlink()
    (tmp_path / "run1" / "fused.csv").unlink()
    with pytest.raises(InputError, match=r"is a folder with no \.ncu-rep or Nsight Compute CSV files under it"):
        ncu_roof.load(tmp_path)


def test_the_real_data_folder_is_read_whole(realdata: Path) -> None:
    found, notes = expand_inputs(realdata)
    reports = sorted(realdata.rglob("*.ncu-rep"))
    not_exports = [realdata / "meinie0826__Roofline-Analysis" /
                   "flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv"]
    exports = sorted(set(realdata.rglob("*.csv")) - set(not_exports))  # ncu's log of a failed run is not one
    assert sorted(found) == sorted(reports + exports)  # every report and export, nothing else
    [note] = notes
    assert note.startswith(f"{realdata}: {len(reports)} reports and {len(exports)} CSV exports read; skipped ")
    assert note.endswith("1 CSV file that is not an Nsight Compute export (meinie0826__Roofline-Analysis/"
                         "flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv)")
    assert "1 .md" in note  # MANIFEST.md


def test_a_duration_or_dram_bytes_rebuilt_from_a_stand_in_is_said(realdata: Path) -> None:
    nersc = realdata / "wangzy0327__cuda-roofline" / "output.csv"  # NERSC's metric list: no gpu__time_duration
    notes = ncu_roof.load(nersc).attrs["notes"]
    assert (f"{nersc}: time_s of 11 of 11 launches rebuilt from sm__cycles_elapsed.avg / "
            "sm__cycles_elapsed.avg.per_second (NERSC): the input has no gpu__time_duration.sum for them (a derived "
            "figure: it can differ slightly from the counter)") in notes
    esmm = realdata / "AveryClapp__ESMM-Research" / "profile_output.a62323b2dd.ncu-rep"  # --set roofline: a rate
    assert (f"{esmm}: dram_bytes of 4 of 4 launches rebuilt from dram__bytes.sum.per_second x time: the input has "
            "no DRAM byte or sector counter for them (a derived figure: it can differ slightly from the counter)"
            ) in ncu_roof.load(esmm).attrs["notes"]
    direct = ncu_roof.load(realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep").attrs["notes"]
    assert not [n for n in direct if "rebuilt" in n]


def test_a_negative_launch_id_is_noted(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"
    lines = fixture.read_text().splitlines(keepends=True)
    assert lines[2].startswith('"0",')
    edited = tmp_path / "edited.csv"
    edited.write_text("".join([*lines[:2], '"-3",' + lines[2][4:], *lines[3:]]))
    notes = ncu_roof.load(edited).attrs["notes"]
    assert notes == [f"{edited}: launch -3 (ln_mean_kernel): launch ID -3 is negative (ncu numbers launches from 0): "
                     "an edited file?"]


def test_a_device_name_several_gpus_share_is_resolved_by_sm_count() -> None:
    """Every Jetson Orin module reports "Orin" (every Xavier "Xavier"): the SM count picks the entry
    where it is the only one with it; else the note lists them and --device picks."""
    from ncu_roof.read.table import name_devices

    tidy = pd.DataFrame({"device": ["Orin", "Orin", "Orin", "Xavier", "NVIDIA A40"],
                         "cc": ["8.7", "8.7", "8.7", "7.2", "8.6"], "sm_count": [16, 16, 8, 6, 84]})
    notes = name_devices(tidy, [], None)
    assert tidy["device"].tolist() == ["NVIDIA Jetson AGX Orin 64GB", "NVIDIA Jetson AGX Orin 64GB", "Orin",
                                       "NVIDIA Jetson Xavier NX", "NVIDIA A40"]
    assert notes == [
        "device 'Orin' with 8 SMs can be any of NVIDIA Jetson Orin NX 16GB, NVIDIA Jetson Orin NX 8GB, NVIDIA "
        "Jetson Orin Nano 8GB (ncu gives them all that name): pass --device NAME for its roofs",
        "device 'Orin' with 16 SMs is NVIDIA Jetson AGX Orin 64GB (ncu gives several GPUs that name; pass --device "
        "to change)",
        "device 'Xavier' with 6 SMs is NVIDIA Jetson Xavier NX (ncu gives several GPUs that name; pass --device to "
        "change)",
    ]
    tidy = pd.DataFrame({"device": ["Orin"], "cc": ["8.7"], "sm_count": [8]})
    assert name_devices(tidy, [], "NVIDIA Jetson Orin Nano 8GB") == [
        "device 'Orin' named by --device: NVIDIA Jetson Orin Nano 8GB"]
    assert tidy["device"].tolist() == ["NVIDIA Jetson Orin Nano 8GB"]
    tidy = pd.DataFrame({"device": ["NVIDIA A40"], "cc": ["8.6"], "sm_count": [84]})
    assert name_devices(tidy, [], "NVIDIA Jetson Orin Nano 8GB") == [
        "--device NVIDIA Jetson Orin Nano 8GB ignored: the input names its device"]
