"""ncu_roof.read.csv: real exports, ncu's own exports of real reports, and synthetic quirks."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES, ncu_env

from ncu_roof.errors import InputError, ReportLoadError
from ncu_roof.read.csv import load_csv
from ncu_roof.read.frame import IDENTITY_COLUMNS

SYN = FIXTURES / "synthetic"
approx = pytest.approx


def _row(frame: pd.DataFrame, launch_id: int) -> pd.Series:
    return frame.set_index("id").loc[launch_id]


def _assert_contract(frame: pd.DataFrame) -> None:
    assert list(frame.columns[: len(IDENTITY_COLUMNS)]) == list(IDENTITY_COLUMNS)
    for col in frame.columns[len(IDENTITY_COLUMNS):]:
        assert frame[col].dtype == "float64", col
    assert frame["id"].dtype == "int64"
    assert isinstance(frame.attrs["notes"], list)


# --- real CSV files ------------------------------------------------------------------------
def test_olajide_saxpy_bom_crlf_rtx5070(realdata: Path) -> None:
    frame = load_csv(realdata / "Olajide-Badejo__GPU-Roofline-Profiler" / "saxpy.csv")
    _assert_contract(frame)
    assert len(frame) == 1
    r = _row(frame, 0)
    assert r["kernel"] == "saxpy_kernel"
    assert r["kernel_demangled"] == "unnamed>::saxpy_kernel(float, const float *, float *, int)"
    assert (r["cc"], r["process"], r["stream"]) == ("12.0", "roofline_profiler.exe", 7.0)
    assert (r["grid_dim"], r["block_dim"]) == ("(65536, 1, 1)", "(256, 1, 1)")
    assert r["dram__bytes_op_read.sum"] == 134_221_568
    assert r["dram__bytes_op_write.sum"] == 43_631_104
    assert r["gpu__time_duration.sum"] == approx(292_928e-9)
    assert r["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 4_194_304
    assert r["sm__warps_active.avg.pct_of_peak_sustained_active"] == approx(83.82)
    assert "lts__t_sector_hit_rate.pct" not in frame  # not needed by the catalogue
    assert pd.isna(r["device"])


def test_wangzy_v100_long_cutlass_names(realdata: Path) -> None:
    frame = load_csv(realdata / "wangzy0327__cuda-roofline" / "output.csv")
    _assert_contract(frame)
    assert list(frame["id"]) == list(range(11))
    r4 = _row(frame, 4)
    assert len(r4["kernel_demangled"]) == 4831
    assert r4["kernel_demangled"].startswith("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<")
    assert r4["kernel"] == "Kernel"
    assert r4["dram__bytes.sum"] == 205_394_417_472
    assert r4["sm__inst_executed_pipe_tensor.sum"] == 33_554_432_000
    assert r4["sm__cycles_elapsed.avg"] == approx(582_304_151.08)
    assert r4["sm__sass_thread_inst_executed_op_fadd_pred_on.sum"] == 2_126_643_200
    r10 = _row(frame, 10)
    assert r10["kernel_demangled"] == (
        "void cutlass::Kernel<cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8>(T1::Params)")
    assert (r10["grid_dim"], r10["cc"]) == ("(1280, 20, 1)", "7.0")
    assert r10["dram__bytes.sum"] == 25_174_959_968
    assert r10["sm__cycles_elapsed.avg.per_second"] == approx(1_236_080_147.79)
    r0 = _row(frame, 0)
    assert r0["kernel"] == "InitializeMatrix_kernel"
    assert r0["dram__bytes.sum"] == 837_859_712


def test_gardenia_sgemm_print_fp(realdata: Path) -> None:
    frame = load_csv(realdata / "Gardenia-Tian__LearningNote4Dev" / "sgemm.csv")
    _assert_contract(frame)
    assert list(frame["kernel"]) == ["randomInit", "randomInit", "gemm_v1"]
    r0, r2 = _row(frame, 0), _row(frame, 2)
    assert r0["l1tex__t_bytes.sum"] == 16_840_298_332_000.0
    assert r0["smsp__cycles_elapsed.avg"] == approx(5_145_083_088.72)
    assert r0["smsp__cycles_elapsed.avg.per_second"] == approx(764_999_991.90)
    assert r2["l1tex__t_bytes.sum"] == 38_708_392_755_200.0
    assert r2["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 34_359_738_368_000.0
    assert r2["smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"] == 2_149_161_369_600.0
    assert r2["smsp__inst_executed_pipe_tensor.sum"] == 67_161_292_800.0
    assert r2["grid_dim"] == "(1280, 1280, 1)"


def test_copy_blocked_details_with_rules(realdata: Path) -> None:
    frame = load_csv(realdata / "brycelelbach__nsightful" / "copy_blocked.csv")
    _assert_contract(frame)
    assert len(frame) == 1
    r = _row(frame, 0)
    assert r["kernel"].startswith("copy_blocked[v1,cw51c")
    assert "Array<long long, 1, C, mutable, aligned>" in r["kernel_demangled"]
    assert r["gpu__time_duration.sum"] == approx(0.021058944)  # "Duration","ns","21,058,944"
    assert r["dram__cycles_elapsed.avg.per_second"] == approx(4_963_609_951.19)
    assert r["sm__cycles_elapsed.avg.per_second"] == approx(584_998_877.44)
    assert r["sm__cycles_elapsed.max"] == 12_319_469
    # "Memory Throughput" is 61.84 % in SOL and 196,456,177,859.63 byte/s later: keep the %
    assert r["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == approx(61.84)
    assert r["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == approx(61.84)
    assert (r["launch__grid_size"], r["launch__block_size"]) == (1024, 256)
    assert r["launch__waves_per_multiprocessor"] == approx(6.40)
    assert r["device__attribute_multiprocessor_count"] == 40
    assert r["sm__warps_active.avg.pct_of_peak_sustained_active"] == approx(96.26)
    rules = frame.attrs["ncu_rule_results"]
    assert len(rules) == 11
    assert rules[0]["rule"] == "SOLBottleneck" and rules[0]["type"] == "OPT"
    assert rules[0]["section"] == "SpeedOfLight" and rules[0]["title"] is None
    assert math.isnan(rules[0]["speedup_pct"]) and rules[0]["speedup_type"] is None
    coalescing = [r for r in rules if r["rule"] == "UncoalescedGlobalAccess"]
    assert [(r["speedup_pct"], r["speedup_type"]) for r in coalescing] == [(74.14, "global")]


def test_meinie_b200_raw_page(realdata: Path) -> None:
    path = realdata / "meinie0826__Roofline-Analysis" / "torch_sdpa_flash__gqa_bf16_b32_ctx8k_p64.ncu.csv"
    frame = load_csv(path)
    _assert_contract(frame)
    assert list(frame["id"]) == list(range(16))
    assert set(frame["device"]) == {"NVIDIA B200"}
    assert set(frame["cc"]) == {"10.0"}
    assert set(frame["kernel"]) == {"flash_fwd_kernel"}
    assert set(frame["grid_dim"]) == {"(1, 32, 8)"} and set(frame["block_dim"]) == {"(128, 1, 1)"}
    assert _row(frame, 0)["gpu__time_duration.sum"] == approx(740_608e-9)
    assert _row(frame, 15)["gpu__time_duration.sum"] == approx(743_616e-9)
    r = _row(frame, 0)
    assert r["launch__grid_size"] == 256 and r["launch__shared_mem_per_block"] == 66_560
    assert r["launch__waves_per_multiprocessor"] == approx(0.86)
    assert r["device__attribute_multiprocessor_count"] == 148
    assert "launch__func_cache_config" not in frame and "c2clink__present" not in frame
    assert frame.shape[1] < 80  # 475 CSV columns, only identity + needed metrics kept (pipes, stalls among them)


def test_meinie_failed_run_error(realdata: Path) -> None:
    path = realdata / "meinie0826__Roofline-Analysis" / "flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv"
    with pytest.raises(ReportLoadError) as info:
        load_csv(path)
    assert str(info.value) == (
        f"{path} holds no CSV, only ncu log output ending in '==ERROR== The application returned "
        "an error code (1).': the profiled run failed; fix it and re-run ncu"
    )
    assert "\n" not in str(info.value)


# --- ncu's own exports of real reports (ncu 2024.1.1, no GPU needed) -----------------------
def _export(ncu: Path, report: Path, out: Path, *args: str) -> Path:
    result = subprocess.run([str(ncu), "--import", str(report), "--csv", *args], capture_output=True,
                            env=ncu_env(out.parent), timeout=120, check=False)
    if result.returncode != 0 or not result.stdout:
        pytest.skip(f"ncu could not export {report.name}: {result.stderr.decode()[:200]}")
    out.write_bytes(result.stdout)
    return out


def test_ncu_exports_agree_across_pages_and_units(ncu_exe: Path, realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    auto = load_csv(_export(ncu_exe, report, tmp_path / "auto.csv", "--page", "raw"))
    base = load_csv(_export(ncu_exe, report, tmp_path / "base.csv", "--page", "raw", "--print-units", "base"))
    details = load_csv(_export(ncu_exe, report, tmp_path / "details.csv", "--page", "details"))
    assert len(auto) == len(base) == len(details) == 5
    assert list(auto["kernel"]) == list(details["kernel"])
    assert auto["kernel"].iloc[0] == "set_halo_values_x_396_gpu"
    assert set(auto["device"]) == {"Tesla V100-SXM2-32GB"}
    # base units: 11360 nsecond, 1572992 byte; auto: 0.011360 msecond, 0.001573 Gbyte;
    # details: Duration 11.36 usecond
    assert base["gpu__time_duration.sum"].iloc[0] == approx(11_360e-9)
    assert base["dram__bytes_read.sum"].iloc[0] == 1_572_992
    assert auto["dram__bytes_read.sum"].iloc[0] == approx(1_573_000)
    for col in ("gpu__time_duration.sum", "dram__bytes_read.sum", "sm__cycles_elapsed.avg.per_second"):
        assert list(auto[col]) == approx(list(base[col]), rel=1e-3), col
    # the details page prints 3 significant digits ("3.63 msecond" for 3,625,056 ns)
    assert list(details["gpu__time_duration.sum"]) == approx(list(base["gpu__time_duration.sum"]), rel=5e-3)
    assert details["gpu__time_duration.sum"].iloc[3] == approx(3.63e-3)
    assert list(details["launch__grid_size"]) == list(base["launch__grid_size"])


def test_ncu_export_nvtx_stacks(ncu_exe: Path, realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NVIDIA__nsight-training" / "manual_nvtx.ncu-rep"
    for page in ("raw", "details"):
        frame = load_csv(_export(ncu_exe, report, tmp_path / f"{page}.csv", "--page", page))
        assert list(frame["nvtx"]) == ["run_test/init_data", "run_test/daxpy", "run_test/check_results"]
        assert list(frame["kernel"]) == ["init_data_kernel", "daxpy_kernel", "check_results_kernel"]


# --- synthetic fixtures --------------------------------------------------------------------
def test_synthetic_raw_units_row_and_scaling() -> None:
    frame = load_csv(SYN / "synthetic_raw_units.csv")
    _assert_contract(frame)
    r0, r1 = _row(frame, 0), _row(frame, 1)
    assert r0["kernel_demangled"] == 'void ns::scale<float, 4>(Pair<int, "a,b">, float *)'
    assert r0["kernel"] == "scale" and r1["kernel"] == "relu_kernel"
    assert r0["dram__bytes_read.sum"] == approx(1_536_250)
    assert r0["dram__bytes_write.sum"] == approx(512e6)
    assert r0["gpu__time_duration.sum"] == approx(12.5e-6)
    assert r0["sm__cycles_elapsed.avg.per_second"] == approx(1.41e9)
    assert r0["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"] == 3.5
    assert r0["launch__grid_size"] == 4096
    assert (r0["grid_dim"], r0["block_dim"], r0["stream"]) == ("(4096, 1, 1)", "(256, 1, 1)", 7.0)
    assert (r0["device"], r0["cc"], r0["process"]) == ("NVIDIA A10G", "8.6", "bench")
    assert math.isnan(r1["dram__bytes_read.sum"]) and math.isnan(r1["dram__bytes_write.sum"])
    assert r1["gpu__time_duration.sum"] == approx(7.5e-7)
    assert r1["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"] == 0.0
    assert (r1["launch__grid_size"], r1["stream"]) == (80, 14.0)
    assert "launch__func_cache_config" not in frame
    assert "sm__inst_executed.avg.per_cycle_active" not in frame
    assert frame.attrs["notes"] == []


def test_synthetic_details_labels_rules_short_rows() -> None:
    frame = load_csv(SYN / "synthetic_details_rules.csv")
    _assert_contract(frame)
    r0, r1 = _row(frame, 0), _row(frame, 1)
    assert r0["kernel"] == "copy" and r1["kernel"] == "zero"
    assert r0["gpu__time_duration.sum"] == approx(1.2345e-3)
    assert r0["dram__cycles_elapsed.avg.per_second"] == approx(6.25e9)
    assert r0["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == approx(80.5)
    assert r0["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == approx(75.25)
    assert (r0["launch__grid_size"], r0["launch__block_size"]) == (2048, 256)
    assert math.isnan(r0["sm__warps_active.avg.pct_of_peak_sustained_active"])
    assert r1["gpu__time_duration.sum"] == approx(9.8e-7)
    assert r1["dram__cycles_elapsed.avg.per_second"] == approx(6.25e9)
    assert r1["launch__grid_size"] == 40
    assert math.isnan(r1["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"])
    first, second = frame.attrs["ncu_rule_results"]
    assert first == {"id": 0, "rule": "SOLBottleneck", "section": "SpeedOfLight", "type": "OPT",
                     "title": None, "speedup_pct": 12.5, "speedup_type": "global",
                     "message": 'Memory is more heavily utilized than Compute, look at "Memory Workload".'}
    assert (second["id"], second["rule"], second["type"]) == (1, "LaunchConfiguration", "WRN")
    assert math.isnan(second["speedup_pct"]) and second["speedup_type"] is None
    assert second["message"] == "The grid is too small to fill the device."


def test_synthetic_metrics_stdout_bom_crlf_preamble() -> None:
    frame = load_csv(SYN / "synthetic_metrics_stdout.csv")
    _assert_contract(frame)
    r0, r1 = _row(frame, 0), _row(frame, 1)
    assert r0["kernel"] == "saxpy" and r0["process"] == "app.exe"
    assert (r0["device"], r0["cc"]) == ("NVIDIA GeForce RTX 5070", "12.0")
    assert r0["dram__bytes_op_read.sum"] == approx(8e6)
    assert r0["dram__bytes_op_write.sum"] == 4_000_000
    assert r0["gpu__time_duration.sum"] == approx(13.25e-6)
    assert r0["smsp__cycles_elapsed.avg.per_second"] == approx(2.5e9)
    assert r0["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 1_000_000
    assert r1["dram__bytes_op_read.sum"] == approx(512_000)
    assert r1["gpu__time_duration.sum"] == approx(6.4e-7)
    assert r1["grid_dim"] == "(2, 1, 1)"
    assert math.isnan(r1["smsp__cycles_elapsed.avg.per_second"])
    assert "lts__t_sector_hit_rate.pct" not in frame
    assert "device__attribute_display_name" not in frame


def test_synthetic_5kb_kernel_name(tmp_path: Path) -> None:
    name = "void k<" + ", ".join(f'T{i}<int, "x">' for i in range(400)) + ">(float *, int)"
    assert len(name) > 5000
    quoted = name.replace('"', '""')
    text = (SYN / "synthetic_raw_units.csv").read_text().replace(
        '"relu_kernel(float *, int)"', f'"{quoted}"')
    path = tmp_path / "long.csv"
    path.write_text(text)
    frame = load_csv(path)
    assert _row(frame, 1)["kernel_demangled"] == name
    assert _row(frame, 1)["kernel"] == "k"
    assert _row(frame, 1)["gpu__time_duration.sum"] == approx(7.5e-7)


@pytest.mark.parametrize("cut", ["relu_ker", '"0.75","CachePref', '"0.50","0'])
def test_truncated_last_row_is_skipped_with_note(tmp_path: Path, cut: str) -> None:
    text = (SYN / "synthetic_raw_units.csv").read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: text.index(cut) + len(cut)])
    frame = load_csv(path)
    assert list(frame["id"]) == [0]
    assert _row(frame, 0)["gpu__time_duration.sum"] == approx(12.5e-6)
    assert any("truncated" in note for note in frame.attrs["notes"])


def test_truncated_details_keeps_complete_rows(tmp_path: Path) -> None:
    text = (SYN / "synthetic_details_rules.csv").read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: text.index('"nsecond","9') + len('"nsecond","9')])
    frame = load_csv(path)
    assert list(frame["id"]) == [0, 1]
    assert _row(frame, 1)["dram__cycles_elapsed.avg.per_second"] == approx(6.25e9)
    assert math.isnan(_row(frame, 1)["gpu__time_duration.sum"])
    assert any("truncated" in note for note in frame.attrs["notes"])


def test_no_trailing_newline_is_not_truncation(tmp_path: Path) -> None:
    path = tmp_path / "nonl.csv"
    path.write_text((SYN / "synthetic_raw_units.csv").read_text().rstrip("\n"))
    frame = load_csv(path)
    assert list(frame["id"]) == [0, 1] and frame.attrs["notes"] == []


def test_nvtx_named_domains_and_ranges(tmp_path: Path) -> None:
    stack = ('5  ""<default domain>:outer:none:none:RGB:0xff:ASCII:outer""  '
             '""<default domain>:inner:none:none:RGB:0xff:ASCII:inner""  '
             '""torch:step:none:none:none:0x0:ASCII:step"" ')
    path = tmp_path / "nvtx.csv"
    path.write_text(
        '"ID","Process ID","Process Name","Host Name",'
        '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
        '"Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
        '"Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"\n'
        '"","","","","","","","","","","","","","nsecond"\n'
        f'"0","5","app","h","{stack}","","k(int)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1,000"\n'
        '"1","5","app","h","","","k(int)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","2000"\n')
    frame = load_csv(path)
    assert frame["nvtx"].iloc[0] == "outer/inner | torch@step"
    assert pd.isna(frame["nvtx"].iloc[1])
    assert list(frame["gpu__time_duration.sum"]) == approx([1e-6, 2e-6])


def test_header_only_and_no_units_row_notes(tmp_path: Path) -> None:
    header = '"ID","Process Name","Kernel Name","Stream","Block Size","Grid Size","CC","launch__grid_size"\n'
    path = tmp_path / "h.csv"
    path.write_text(header)
    frame = load_csv(path)
    assert frame.empty and "no kernel launches" in frame.attrs["notes"][-1]
    path.write_text(header + '"3","a","k()","7","(1, 1, 1)","(2, 1, 1)","8.0","2"\n')
    frame = load_csv(path)
    assert list(frame["id"]) == [3] and frame["launch__grid_size"].iloc[0] == 2
    assert any("no units row" in n for n in frame.attrs["notes"])


# --- bad input -----------------------------------------------------------------------------
def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_csv(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.csv").write_text("")
    assert "is empty" in _error(tmp_path / "empty.csv")


def test_only_prof_lines(tmp_path: Path) -> None:
    path = tmp_path / "prof.csv"
    path.write_text("==PROF== Connected to process 1 (/bin/true)\n==PROF== Disconnected from process 1\n")
    message = _error(path)
    assert "only ncu log lines" in message and "re-run ncu" in message


def test_other_tool_csv() -> None:
    message = _error(SYN / "synthetic_other_tool.csv")
    assert "is not an Nsight Compute CSV export" in message
    assert "ncu --import R.ncu-rep --csv --page raw > R.csv" in message


def test_missing_required_columns(tmp_path: Path) -> None:
    path = tmp_path / "missing.csv"
    path.write_text('"ID","Kernel Name","Section Name","Metric Name","Metric Value"\n'
                    '"0","k()","S","gpu__time_duration.sum","5"\n')
    assert "lacks required column(s) Metric Unit" in _error(path)
    path.write_text('"Kernel Name","Metric Name","Metric Unit","Metric Value"\n"k()","m","","5"\n')
    assert "lacks required column(s) ID" in _error(path)


def test_decimal_comma_raw() -> None:
    """A decimal-comma export says so itself ("12,5"): read in its convention, not refused."""
    frame = load_csv(SYN / "synthetic_decimal_comma.csv")
    assert frame["gpu__time_duration.sum"].iloc[0] == approx(12.5e-6)
    assert frame["dram__bytes_read.sum"].iloc[0] == approx(1536.0)
    assert frame["cc"].iloc[0] == "8.6"


def test_decimal_comma_details(tmp_path: Path) -> None:
    """One decimal comma among decimal points: the file mixes conventions and is refused."""
    text = (SYN / "synthetic_details_rules.csv").read_text().replace('"75.25"', '"12,34"')
    (tmp_path / "dc.csv").write_text(text)
    message = _error(tmp_path / "dc.csv")
    assert "mixes decimal marks" in message and "'12,34'" in message and "LC_ALL=C" in message


def test_missing_file(tmp_path: Path) -> None:
    assert "cannot read" in _error(tmp_path / "nope.csv")


# --- helpers -------------------------------------------------------------------------------
def test_duration_without_a_unit_is_ncu_nanoseconds(tmp_path: Path) -> None:
    """An empty units row (or none) must not turn 100,500 ns into 100,500 s."""
    header = '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum"\n'
    for name, body in (("empty_units.csv", header + '"","","",""\n"0","k","100500","4096"\n'),
                       ("no_units.csv", header + '"0","k","100500","4096"\n')):
        path = tmp_path / name
        path.write_text(body)
        frame = load_csv(path)
        assert frame.loc[0, "gpu__time_duration.sum"] == pytest.approx(100_500e-9)
        assert frame.loc[0, "dram__bytes_read.sum"] == 4096
        assert any("read as ncu's base unit, nsecond" in n for n in frame.attrs["notes"])
    long = tmp_path / "details.csv"
    long.write_text('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
                    '"0","k","S","gpu__time_duration.sum","","2500"\n')
    assert load_csv(long).loc[0, "gpu__time_duration.sum"] == pytest.approx(2500e-9)


def test_per_instance_lists_are_left_out_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "instances.csv"
    path.write_text('"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum"\n'
                    '"","","nsecond","byte"\n"0","k","100","0.5;0.25;0.25"\n')
    frame = load_csv(path)
    assert frame.loc[0, "gpu__time_duration.sum"] == pytest.approx(1e-7)
    assert frame["dram__bytes_read.sum"].isna().all()
    assert any("per-instance lists" in n for n in frame.attrs["notes"])


def test_a_damaged_metric_name_is_said_and_ncu_s_own_near_names_are_not(tmp_path: Path) -> None:
    from ncu_roof.read.metrics import damaged_name_notes

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"
    damaged = tmp_path / "damaged.csv"
    damaged.write_text(fixture.read_text().replace('"dram__bytes_op_read.sum"', '"dram__bytes_op_reXd.sum"', 1))
    notes = load_csv(damaged).attrs["notes"]
    assert notes == ["column dram__bytes_op_reXd.sum is not a metric ncu-roof reads; it looks like "
                     "dram__bytes_op_read.sum (a damaged name?), which the input lacks: what dram__bytes_op_read.sum "
                     "gives is unknown"]
    long = tmp_path / "damaged_long.csv"  # a --metrics listing (ncu's names in the Metric Name column)
    long.write_text('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
                    '"0","k","gpu__time_duration.sum","nsecond","100"\n"0","k","dram__bytes_reXd.sum","byte","64"\n')
    frame = load_csv(long)
    assert frame.loc[0, "gpu__time_duration.sum"] == pytest.approx(1e-7) and "dram__bytes_read.sum" not in frame
    assert frame.attrs["notes"] == ["metric dram__bytes_reXd.sum is not a metric ncu-roof reads; it looks like "
                                    "dram__bytes_read.sum (a damaged name?), which the input lacks: what "
                                    "dram__bytes_read.sum gives is unknown"]
    # real metrics one letter from the catalogue's (integer tensor ops beside Hopper's gmma) are ncu's own
    assert damaged_name_notes(["sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active"]) == []
