"""``ncu-roof compare`` and ``ncu-roof check`` on real before/after pairs and a synthetic one.

Real numbers asserted here were read from the reports first (``ncu-roof table``):

- miniWeather on a Tesla V100 (NCAR GPU workshop), MW_Baseline vs MW_DivToMult:
  compute_tendencies_x_279_gpu 6.190944 ms -> 3.48224 ms (1.78x), FP64 FLOPs 22.8 G -> 9.33 G
  (each division is a DFMA Newton sequence), compute -> memory bound, 66% -> 93% of roof (of the
  V100's one roof per kind: the median of its launches');
  compute_tendencies_x_309_gpu and semi_discrete_step_232_gpu unchanged (3.625 ms, 5.6 ms);
  set_halo_values_x_396_gpu 11.36 us -> 12.77 us (noise on an 11 us launch);
  total 15.459 -> 12.719 ms.
- Unrelated reports: MW_Baseline (Tesla V100, 15.5 ms) against jonahshader's alife_cuda (RTX 2070
  SUPER, 143 launches, 6.5 ms, no FLOP or byte counters) match nothing; AlpriElse's SiLU report
  (GH200, 3 launches) records no time at all.
- Nsight Compute's examples on an RTX A4500: transposeCoalesced 1.421 ms ->
  transposeNoBankConflicts 0.998 ms (shared bytes -94%); addConstDouble3 89.86 us ->
  addConstDouble 89.73 us (L2 -30%, L1 -15%: coalescing saves cache traffic, time is at the
  DRAM roof either way); Sobel double 628.0 us -> float 31.9 us (19.7x).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import cached_diagnose_paths as diagnose_paths

from ncu_roof.comparison.compare import clocks_locked, compare
from ncu_roof.comparison.deltas import _noise_note, describe_move
from ncu_roof.comparison.gate import check
from ncu_roof.comparison.gate_file import Limits, read_rules
from ncu_roof.comparison.match import match_launches, read_mapping
from ncu_roof.diagnosis import diagnose_table
from ncu_roof.errors import InputError
from ncu_roof.read.normalize import normalize
from ncu_roof.render.charts.compare import compare_chart, save_compare_chart
from ncu_roof.render.compare import render_json, render_markdown, render_text

ROOT = Path(__file__).resolve().parents[2]
SYNTH = ROOT / "fixtures" / "synthetic"
# compare and check are tested here, not reading: each read-only input is diagnosed once (conftest)
pytestmark = pytest.mark.usefixtures("cache_diagnoses")
MW_KERNEL = "compute_tendencies_x_279_gpu"


@pytest.fixture(scope="module")
def mw(realdata: Path) -> tuple[Path, Path]:
    folder = realdata / "NCAR__GPU_workshop"
    return folder / "MW_Baseline.ncu-rep", folder / "MW_DivToMult.ncu-rep"


@pytest.fixture(scope="module")
def mw_cmp(mw: tuple[Path, Path]):
    return compare(diagnose_paths(mw[0]), diagnose_paths(mw[1]))


@pytest.fixture()
def rename_map(tmp_path: Path) -> Path:
    path = tmp_path / "map.toml"
    path.write_text(
        '[rename]\naddConstDouble3 = "addConstDouble"\n'
        'transposeCoalesced = "transposeNoBankConflicts"\n'
    )
    return path


def _kernel(cmp, name: str) -> pd.Series:
    rows = cmp.kernels[cmp.kernels["kernel"] == name]
    assert len(rows) == 1, f"{name} not matched: {cmp.kernels['kernel'].tolist()}"
    return rows.iloc[0]


# --- real pair: miniWeather before/after replacing divisions with multiplications --------------
def test_miniweather_divtomult(mw_cmp) -> None:
    assert len(mw_cmp.pairs) == 5 and set(mw_cmp.pairs["match"]) == {"exact"}
    assert mw_cmp.unmatched_base.empty and mw_cmp.unmatched_new.empty
    assert mw_cmp.total_before_s == pytest.approx(15.459328e-3)
    assert mw_cmp.total_after_s == pytest.approx(12.719232e-3)
    k = _kernel(mw_cmp, MW_KERNEL)
    assert k["time_s_before"] == pytest.approx(6.190944e-3)
    assert k["time_s_after"] == pytest.approx(3.48224e-3)
    assert k["speedup"] == pytest.approx(1.7779, rel=1e-3)
    assert k["flops_before"] == pytest.approx(22.80e9, rel=1e-3) and k[
        "flops_after"
    ] == pytest.approx(9.330e9, rel=1e-3)
    assert (k["bound_before"], k["bound_after"]) == ("compute", "memory")
    assert k["pct_of_roof_before"] == pytest.approx(65.6, abs=0.5)  # its FP64 FLOPs under the FP64 roof
    assert k["pct_of_roof_after"] == pytest.approx(92.9, abs=0.5)  # of the V100's one DRAM roof
    # fewer FLOPs for the same bytes: down-left on the roofline, yet closer to the (memory) roof
    assert (k["time_move"], k["intensity_move"], k["perf_move"], k["roof_move"]) == (
        "faster",
        "left",
        "down",
        "closer",
    )
    # the FP64 pipe limited it before; after, it is on its (memory) roof
    assert "fp64-pipe" in k["findings_disappeared"] and "at-roof" in k["findings_appeared"]
    for name in ("compute_tendencies_x_309_gpu", "semi_discrete_step_232_gpu"):
        assert _kernel(mw_cmp, name)["time_move"] == "same"
    halo = _kernel(mw_cmp, "set_halo_values_x_396_gpu")
    assert halo["time_s_before"] == pytest.approx(11.36e-6) and halo["time_move"] == "slower"


def test_miniweather_renderers(mw_cmp, tmp_path: Path) -> None:
    text = render_text(mw_cmp)
    assert (
        "6.19 -> 3.48 ms" in text
        and "1.78x faster" in text
        and "compute -> memory bound" in text
    )
    md = render_markdown(mw_cmp)
    assert (
        md.startswith("# ncu-roof compare")
        and f"| `{MW_KERNEL}` | 6.19 -> 3.48 ms | 1.78x |" in md
    )
    data = json.loads(render_json(mw_cmp))
    assert data["schema"] == "ncu-roof/compare/1" and data["matched_launches"] == 5
    first = data["kernels"][0]
    assert first["kernel"] == MW_KERNEL and first["before"]["bytes"]["dram"] == 2477022176
    assert first["intensity"] == "left" and first["speedup"] == pytest.approx(1.7779, rel=1e-3)
    chart = compare_chart(mw_cmp).to_dict()
    rows = [r for data in chart["datasets"].values() for r in data]
    arrow = next(r for r in rows if r.get("kernel") == MW_KERNEL)
    assert (
        arrow["intensity_after"] < arrow["intensity_before"] and -180 < arrow["angle"] < -90
    )  # down-left
    # one GPU, roofs within the clock spread: one roof (median of both sides), with value,
    # precision and source
    assert any(
        str(r.get("roof", "")).startswith(
            "before and after (Tesla V100-SXM2-32GB): fp64 FMA 6.55 TFLOP/s (report); DRAM 782 GB/s"
        )
        for r in rows
    )
    save_compare_chart(mw_cmp, tmp_path / "mw.html")
    assert "vega" in (tmp_path / "mw.html").read_text()
    with pytest.raises(InputError, match="exists"):
        save_compare_chart(mw_cmp, tmp_path / "mw.html")


def test_many_inputs_per_side(mw: tuple[Path, Path], tmp_path: Path) -> None:
    """A folder of per-rank reports against a glob of them: launches matched in order, summed."""
    for side, src in (("base", mw[0]), ("new", mw[1])):
        (tmp_path / side).mkdir()
        for rank in (0, 1):
            shutil.copy(src, tmp_path / side / f"rank{rank}.ncu-rep")
    cmp = compare(
        diagnose_paths(tmp_path / "base"), diagnose_paths(str(tmp_path / "new" / "rank*.ncu-rep"))
    )
    assert len(cmp.pairs) == 10
    k = _kernel(cmp, MW_KERNEL)
    assert k["launches_before"] == 2 and k["time_s_before"] == pytest.approx(2 * 6.190944e-3)
    assert k["speedup"] == pytest.approx(1.7779, rel=1e-3)


# --- Nsight Compute's example pairs -------------------------------------------------------------
def test_example_pairs(ncu_examples: Path, rename_map: Path) -> None:
    mapping = read_mapping(rename_map)
    bank = compare(
        diagnose_paths(ncu_examples / "sharedBankConflicts" / "transposeCoalesced.ncu-rep"),
        diagnose_paths(ncu_examples / "sharedBankConflicts" / "transposeNoBankConflicts.ncu-rep"),
        mapping,
    )
    k = _kernel(bank, "transposeCoalesced")
    assert k["kernel_new"] == "transposeNoBankConflicts" and k["match"] == "exact"
    assert k["time_s_before"] == pytest.approx(1.420832e-3) and k["time_s_after"] == pytest.approx(
        0.997632e-3
    )
    assert k["speedup"] == pytest.approx(1.4242, rel=1e-3) and k["roof_move"] == "closer"
    # shared bytes from load/store wavefronts only (b9b651d): 8.90 GB -> 537 MB
    assert k["shared_bytes_after"] / k["shared_bytes_before"] == pytest.approx(0.0603, abs=1e-3)
    assert "bank-conflicts" in k["findings_disappeared"]
    assert "shared -94%" in describe_move(k)

    coal = compare(
        diagnose_paths(ncu_examples / "uncoalescedGlobalAccesses" / "addConstDouble3.ncu-rep"),
        diagnose_paths(ncu_examples / "uncoalescedGlobalAccesses" / "addConstDouble.ncu-rep"),
        mapping,
    )
    k = _kernel(coal, "addConstDouble3")
    assert k["match"] == "shape changed"  # grid 4096 -> 12288 blocks: one thread per double
    assert k["time_move"] == "same" and k["time_s_before"] == pytest.approx(89.856e-6)
    assert "L2 -30%" in k["direction"] and "L1 -15%" in k["direction"]
    assert "uncoalesced-access" in k["findings_disappeared"]
    assert any("mapping names no base kernel: transposeCoalesced" in n for n in coal.notes)

    sobel = compare(
        diagnose_paths(ncu_examples / "instructionMix" / "sobelDouble.ncu-rep"),
        diagnose_paths(ncu_examples / "instructionMix" / "sobelFloat.ncu-rep"),
    )
    k = _kernel(sobel, "Sobel")
    assert k["speedup"] == pytest.approx(19.705, rel=1e-3)
    # both compute-bound: the FP64 pipe (85%) before, the issue slots (78%) after, not memory
    assert (k["bound_before"], k["bound_after"], k["perf_move"], k["intensity_move"]) == (
        "compute",
        "compute",
        "up",
        "left",
    )
    assert "fp64-pipe" in k["findings_disappeared"]


def test_example_names_differ_without_mapping(ncu_examples: Path) -> None:
    """Without the mapping nothing matches, and both kernels are listed, not dropped."""
    folder = ncu_examples / "sharedBankConflicts"
    cmp = compare(diagnose_paths(folder), diagnose_paths(str(folder / "*NoBank*.ncu-rep")))
    assert cmp.kernels["kernel"].tolist() == ["transposeNoBankConflicts"]  # the folder holds both
    assert cmp.unmatched_base["kernel"].tolist() == ["transposeCoalesced"]
    assert cmp.unmatched_new.empty
    assert "only in base: transposeCoalesced (1 launch, 1.42 ms)" in render_text(cmp)


# --- synthetic: unfused vs fused layernorm -----------------------------------------------------
def test_layernorm_fused_region() -> None:
    alg = SYNTH / "synthetic_layernorm.toml"
    cmp = compare(
        diagnose_paths(SYNTH / "synthetic_layernorm_unfused_rtx5070.csv", algorithmic=alg),
        diagnose_paths(SYNTH / "synthetic_layernorm_fused_rtx5070.csv", algorithmic=alg),
    )
    assert cmp.kernels.empty
    assert sorted(cmp.unmatched_base["kernel"]) == sorted(
        f"ln_{k}_kernel" for k in ("mean", "sub", "square", "var", "normalize", "affine")
    )
    assert cmp.unmatched_new["kernel"].tolist() == ["ln_fused_kernel"]
    r = cmp.regions.iloc[0]
    assert r["region"] == "layernorm" and r["speedup"] == pytest.approx(5.0)
    assert r["dram_bytes_before"] == 10 * 268435456 and r["dram_bytes_after"] == 2 * 268435456
    assert (r["extra_bytes_factor_before"], r["extra_bytes_factor_after"]) == (5.0, 1.0)
    assert (r["intensity_move"], r["perf_move"]) == ("right", "up")
    text = render_text(cmp)
    assert "extra bytes 5.00x -> 1.00x" in text and "only in new: ln_fused_kernel" in text


def _raw(
    kernel: str, time_s: float, read: float, write: float, ffma: float, grid: str = "(16384, 1, 1)"
) -> dict[str, object]:
    return {
        "report": "synthetic",
        "id": 0,
        "kernel": kernel,
        "kernel_demangled": kernel,
        "device": "NVIDIA GeForce RTX 5070",
        "cc": "12.0",
        "process": "python3",
        "stream": 7.0,
        "grid_dim": grid,
        "block_dim": "(256, 1, 1)",
        "nvtx": None,
        "gpu__time_duration.sum": time_s,
        "dram__bytes_op_read.sum": read,
        "dram__bytes_op_write.sum": write,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ffma,
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0.0,
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0.0,
    }


def _diag(rows: list[dict[str, object]]):
    raw = pd.DataFrame(rows)
    raw["id"] = range(len(raw))
    return diagnose_table(normalize(raw))


def test_synthetic_directions() -> None:
    """A layernorm fused into one pass (same name): 5x fewer bytes, same FLOPs -> right and up."""
    mib = 2.0**20
    base = _diag(
        [
            _raw("layernorm", 4.55e-3, 1536 * mib, 1024 * mib, 128 * mib),
            _raw("softmax", 1.0e-3, 256 * mib, 256 * mib, 64 * mib),
            _raw("gelu", 0.9e-3, 256 * mib, 256 * mib, 32 * mib),
        ]
    )
    new = _diag(
        [
            _raw("layernorm", 0.91e-3, 256 * mib, 256 * mib, 128 * mib),
            _raw("softmax", 1.0e-3, 256 * mib, 256 * mib, 64 * mib),
            _raw("gemm_gelu", 2.0e-3, 512 * mib, 256 * mib, 4096 * mib),
        ]
    )
    cmp = compare(base, new)
    ln = _kernel(cmp, "layernorm")
    assert ln["speedup"] == pytest.approx(5.0)
    assert ln["intensity_after"] / ln["intensity_before"] == pytest.approx(5.0)
    assert (ln["intensity_move"], ln["perf_move"]) == ("right", "up")
    assert "moved up-right on the roofline" in ln["direction"]
    assert _kernel(cmp, "softmax")["direction"] == "time unchanged"
    assert cmp.unmatched_base["kernel"].tolist() == ["gelu"]
    assert cmp.unmatched_new["kernel"].tolist() == ["gemm_gelu"]


def test_matching_in_order_and_by_shape() -> None:
    base = pd.DataFrame(
        {
            "kernel": ["k", "k", "k"],
            "kernel_demangled": ["k"] * 3,
            "nvtx": [None, None, "a"],
            "grid_dim": ["(1,1,1)", "(2,1,1)", "(1,1,1)"],
            "block_dim": ["(32,1,1)"] * 3,
        }
    )
    new = pd.DataFrame(
        {
            "kernel": ["k", "k", "k"],
            "kernel_demangled": ["k"] * 3,
            "nvtx": [None, "a", None],
            "grid_dim": ["(2,1,1)", "(1,1,1)", "(4,1,1)"],
            "block_dim": ["(32,1,1)"] * 3,
        }
    )
    pairs = match_launches(base, new)
    got = {
        (int(b), int(n), m)
        for b, n, m in pairs[["base_row", "new_row", "match"]].itertuples(index=False)
    }
    assert got == {(1, 0, "exact"), (2, 1, "exact"), (0, 2, "shape changed")}


def test_mapping_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[rename\n")
    with pytest.raises(InputError, match="not valid TOML"):
        read_mapping(bad)
    bad.write_text("[other]\nx = 1\n")
    with pytest.raises(InputError, match=r"\[rename\]"):
        read_mapping(bad)


# --- the gate ----------------------------------------------------------------------------------
def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from ncu_roof.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _rules(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def test_gate_fails_below_roof(
    mw: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = _rules(tmp_path, "[defaults]\nmin_pct_of_roof = 60\n")
    code, out, _ = _run(["check", str(mw[1]), "--rules", str(rules)], capsys)
    assert code == 1
    assert out.startswith("ncu-roof check: FAILED: 2 violations; 5 kernels, 0 regions checked")
    assert (
        "kernel set_halo_values_x_396_gpu: 28% of its roof (latency bound) "
        "is below min_pct_of_roof = 60" in out
    )
    assert "set_halo_values_x_419_gpu: 30% of its roof" in out


def test_gate_passes_with_override(
    mw: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = _rules(
        tmp_path,
        '[defaults]\nmin_pct_of_roof = 60\n[[kernel]]\nmatch = "^set_halo"\nmin_pct_of_roof = 20\n',
    )
    code, out, _ = _run(["check", str(mw[1]), "--rules", str(rules)], capsys)
    assert code == 0
    assert out.startswith("ncu-roof check: OK: 5 kernels, 0 regions checked")
    assert len(out.strip().splitlines()) == 1


def test_gate_baseline(
    mw: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Back from DivToMult to Baseline is a 1.78x regression; the way forward passes the band."""
    rules = _rules(tmp_path, "[defaults]\nmax_slowdown = 1.10\nmin_time_s = 100e-6\n")
    code, out, _ = _run(
        ["check", str(mw[0]), "--rules", str(rules), "--baseline", str(mw[1]), "--format", "json"],
        capsys,
    )
    data = json.loads(out)
    assert code == 1 and data["schema"] == "ncu-roof/check/1" and data["passed"] is False
    (v,) = data["violations"]
    assert (v["kernel"], v["rule"], v["limit"]) == (MW_KERNEL, "max_slowdown", 1.1)
    assert v["value"] == pytest.approx(1.7779, rel=1e-3)
    assert "6.19 ms vs 3.48 ms in the baseline = 1.78x slower" in v["message"]
    code, out, _ = _run(
        ["check", str(mw[1]), "--rules", str(rules), "--baseline", str(mw[0])], capsys
    )
    assert code == 0 and "OK" in out and "2 not checked" in out


def test_gate_noise_on_tiny_kernels(mw: tuple[Path, Path], tmp_path: Path) -> None:
    """Without min_time_s an 11 us halo launch 1.12x slower trips a 1.10 band."""
    rules = read_rules(_rules(tmp_path, "[defaults]\nmax_slowdown = 1.10\n"))
    result = check(diagnose_paths(mw[1]), rules, diagnose_paths(mw[0]))
    assert [v.kernel for v in result.violations] == ["set_halo_values_x_396_gpu"]
    assert result.violations[0].value == pytest.approx(1.124, abs=2e-3)


def test_gate_region_extra_bytes(tmp_path: Path) -> None:
    alg = SYNTH / "synthetic_layernorm.toml"
    rules = read_rules(_rules(tmp_path, "[defaults]\nmax_extra_bytes_factor = 2.0\n"))
    bad = check(diagnose_paths(SYNTH / "synthetic_layernorm_unfused_rtx5070.csv", algorithmic=alg), rules)
    assert [(v.kind, v.kernel, v.rule, v.value) for v in bad.violations] == [
        ("region", "layernorm", "max_extra_bytes_factor", 5.0)
    ]
    assert "moves 5.00x the algorithmic DRAM bytes" in bad.violations[0].message
    good = check(diagnose_paths(SYNTH / "synthetic_layernorm_fused_rtx5070.csv", algorithmic=alg), rules)
    assert good.passed and good.checked["regions"] == 1


def test_rules_file_errors(tmp_path: Path) -> None:
    cases = {
        "[defaults\n": "not valid TOML",
        "[defaults]\nmin_pct_roof = 5\n": "unknown key 'min_pct_roof'",
        "[defaults]\nmin_pct_of_roof = 'x'\n": "non-negative number",
        '[[kernel]]\nmatch = "("\nmin_pct_of_roof = 1\n': "not a valid regex",
        "[defaults]\nmin_time_s = 1\n": "states no bound",
    }
    for text, message in cases.items():
        with pytest.raises(InputError, match=message):
            read_rules(_rules(tmp_path, text))
    rules = read_rules(
        _rules(
            tmp_path,
            '[defaults]\nmin_pct_of_roof = 60\n[[kernel]]\nmatch = "a"\n'
            'min_pct_of_roof = 20\n[[kernel]]\nmatch = "ab"\nskip = true\n',
        )
    )
    assert rules.limits("xyz") == Limits(min_pct_of_roof=60)
    assert rules.limits("a1") == Limits(min_pct_of_roof=20)
    assert rules.limits("ab").skip


def test_cli_subprocess_exit_codes(
    mw: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The installed entry point: 2 on bad input (one line), compare writes a file once."""
    bad = _rules(tmp_path, "[defaults\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ncu_roof", "check", str(mw[1]), "--rules", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "is not valid TOML" in proc.stderr
    out = tmp_path / "cmp.md"
    args = ["compare", str(mw[0]), str(mw[1]), "-o", str(out)]
    assert _cli(*args).returncode == 0
    assert out.read_text().startswith("# ncu-roof compare")
    code, _, err = _run(args, capsys)
    assert code == 2 and "--force" in err


# --- review fixes: the gate fails closed, compare shows FLOPs and refuses unrelated totals ------
ALIFE = "jonahshader__alife_cuda/profile_output.ncu-rep"
SILU = "AlpriElse__cs599k/silu-2025-04-19-v1.ncu-rep"


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    """``ncu-roof ARGS`` run in this process (exit code, stdout, stderr as a process gives them)."""
    from tests.cli.test_cli import run

    return run(*map(str, args))


def test_gate_fails_closed_without_counters(realdata: Path, tmp_path: Path) -> None:
    """alife_cuda has no FLOP or DRAM byte counters: no kernel has a % of roof to hold."""
    from ncu_roof.model.kernels import kernel_summary

    report = realdata / ALIFE
    kernels = len(kernel_summary(diagnose_paths(report).placed))
    rules = _rules(tmp_path, "[defaults]\nmin_pct_of_roof = 50\n")
    proc = _cli("check", report, "--rules", rules)
    assert proc.returncode == 2
    assert proc.stdout == ""  # no "OK" over 0 kernels checked: one error line
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("ncu-roof: error: no kernel or region checked: min_pct_of_roof could not be "
                                  "checked on any kernel or region")
    assert f"lacks dram_bytes, flops ({kernels} kernels)" in proc.stderr
    assert "capture dram__bytes_read.sum + dram__bytes_write.sum" in proc.stderr
    assert "no roof" not in proc.stderr and "--allow-unchecked" in proc.stderr
    proc = _cli("check", report, "--rules", rules, "--allow-unchecked")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ncu-roof check: OK: 0 kernels, 0 regions checked")
    assert lines[1].startswith("note: min_pct_of_roof could not be checked on any kernel")


def test_gate_blames_missing_time_not_min_time(realdata: Path, tmp_path: Path) -> None:
    """The SiLU report records no duration: the reason is the missing time, not min_time_s."""
    report = realdata / SILU
    proc = _cli("check", report, "--rules", _rules(tmp_path, "[defaults]\nmin_pct_of_roof = 50\n"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "lacks time_s, dram_bytes, flops (2 kernels)" in proc.stderr
    assert "capture gpu__time_duration.sum" in proc.stderr and "min_time_s" not in proc.stderr
    result = check(diagnose_paths(report), read_rules(_rules(tmp_path, "[defaults]\nmax_slowdown = 1.1\n")))
    assert result.checked == {"kernels": 0, "regions": 0, "skipped": 0}
    assert result.unchecked == [
        "max_slowdown could not be checked on any kernel or region: no --baseline given "
        "(2 kernels); pass --baseline REPORT"
    ]


@pytest.mark.filterwarnings("ignore:All-NaN axis encountered")  # the unknown device's roofs
def test_gate_lists_kernels_it_could_not_check(tmp_path: Path) -> None:
    """Some kernels held, the rest listed with the real reason: counters, or an unknown device."""
    mib = 2.0**20
    nothing = _raw("no_counters", 1e-3, float("nan"), float("nan"), float("nan"))
    unknown = {**_raw("elsewhere", 1e-3, 256 * mib, 256 * mib, 0.0), "device": "Mystery GPU 9000"}
    d = _diag([_raw("layernorm", 0.91e-3, 256 * mib, 256 * mib, 128 * mib), nothing, unknown])
    unknown_row = d.placed[d.placed["kernel"] == "elsewhere"].iloc[0]
    assert unknown_row["peak_flops_per_s"] != unknown_row["peak_flops_per_s"]  # NaN: no roof
    assert unknown_row["dram_roof_bytes_per_s"] != unknown_row["dram_roof_bytes_per_s"]
    result = check(d, read_rules(_rules(tmp_path, "[defaults]\nmin_pct_of_roof = 10\n")))
    assert result.passed and result.unchecked == [] and result.checked["kernels"] == 1
    assert result.notes == [
        "min_pct_of_roof not checked on 2 of 3: lacks dram_bytes, flops (kernel no_counters); "
        "capture dram__bytes_read.sum + dram__bytes_write.sum (or dram__bytes.sum.per_second), "
        "smsp__sass_thread_inst_executed_op_{d,f,h}{fma,add,mul}_pred_on.sum; "
        "no roof: device unknown (kernel elsewhere); pass --ceilings FILE (from `ncu-roof ceilings`)"
    ]


def test_compare_shows_flops(mw_cmp) -> None:
    """The div->mult change is a FLOP change: 22.8 G -> 9.33 G FP64 (-59%) must be visible."""
    k = _kernel(mw_cmp, MW_KERNEL)
    assert (k["precision_before"], k["precision_after"]) == ("fp64", "fp64")
    assert "1.78x faster; FLOPs -59% (FP64 work -57%, FP32 work -84%); moved down-left" in k["direction"]
    assert "(down: work was removed, not time added)" in k["direction"]
    assert "binding unit FP64 pipe (70%) -> DRAM (93%)" in k["direction"]
    # the win beside the before-report's stake: 6.19 - 3.48 = 2.71 ms of its 3.03 ms
    assert "2.71 ms won, 89% of the 3.03 ms the before-report put at stake (fp64-pipe)" in k["direction"]
    text = render_text(mw_cmp)
    assert "FLOPs" in text.splitlines()[2] and "22.8 -> 9.33 G fp64" in text
    assert "FLOPs -59%" in text
    md = render_markdown(mw_cmp)
    assert "| kernel | time | speedup | FLOPs | DRAM bytes |" in md
    assert f"| `{MW_KERNEL}` | 6.19 -> 3.48 ms | 1.78x | 22.8 -> 9.33 G fp64 |" in md
    assert "FLOPs -59%" in md
    first = json.loads(render_json(mw_cmp))["kernels"][0]
    assert first["before"]["precision"] == "fp64" and first["after"]["flops"] == pytest.approx(9.33e9, rel=1e-3)
    # the halo kernels do no arithmetic: 0 -> 0, no precision and no FLOP move
    halo = _kernel(mw_cmp, "set_halo_values_x_396_gpu")
    assert "FLOPs" not in halo["direction"]


def test_compare_unrelated_reports(mw: tuple[Path, Path], realdata: Path) -> None:
    """Nothing matched between two different programs on two GPUs: no total speedup."""
    cmp = compare(diagnose_paths(mw[0]), diagnose_paths(realdata / ALIFE))
    assert len(cmp.pairs) == 0 and cmp.matched_share == (0.0, 0.0) and not cmp.comparable
    assert cmp.total_before_s == pytest.approx(15.459328e-3)
    text = render_text(cmp)
    headline = " ".join(text.split("\n\n")[0].split())  # the headline paragraph, wrapped to 100 columns
    assert headline.startswith("ncu-roof compare: 5 -> 143 launches, 0 matched;")
    assert "(not comparable: only 0% of the time matched)" in headline and "2.38x" not in text
    warning = (
        "warning: different devices: BASE ran on Tesla V100-SXM2-32GB, "
        "NEW on NVIDIA GeForce RTX 2070 SUPER"
    )
    assert f"- {warning}" in text and text.count("different devices") == 1
    data = json.loads(render_json(cmp))
    assert data["speedup"] is None and data["comparable"] is False and warning in data["notes"]
    # the real before/after pair: all time matched on the same GPU, total 15.46 -> 12.72 ms
    same = compare(diagnose_paths(mw[0]), diagnose_paths(mw[1]))
    assert same.matched_share == pytest.approx((1.0, 1.0)) and same.speedup == pytest.approx(1.2154, rel=1e-3)
    assert "(1.22x)" in render_text(same) and not any("devices" in n for n in same.notes)


def test_compare_partial_match_not_comparable(ncu_examples: Path) -> None:
    """A folder of both transposes against one: 0.998 of 2.42 ms matched (41%) on the base side."""
    folder = ncu_examples / "sharedBankConflicts"
    cmp = compare(diagnose_paths(folder), diagnose_paths(str(folder / "*NoBank*.ncu-rep")))
    assert cmp.matched_share[0] == pytest.approx(0.4125, abs=1e-3) and cmp.matched_share[1] == 1.0
    assert " ".join(render_text(cmp).split()).startswith(  # the headline, wrapped to 100 columns
        "ncu-roof compare: 2 -> 1 launch, 1 matched; total GPU time 2.42 ms -> 998 us "
        "(not comparable: only 41% of the time matched)"
    )


def test_output_paths_checked_before_any_work(tmp_path: Path) -> None:
    """A bad --chart or an existing -o fails first: the inputs (which do not exist) are never read."""
    missing = tmp_path / "no-such.ncu-rep"
    existing = tmp_path / "existing.html"
    existing.write_text("keep")
    existing_text = tmp_path / "existing.txt"
    existing_text.write_text("keep")
    cases = [
        (["compare", missing, missing, "--chart", tmp_path / "x.pdf"],
         "cannot save a chart as x.pdf: use .html, .json, .png or .svg"),
        (["compare", missing, missing, "--chart", existing], "choose another --chart path or pass --force"),
        (["compare", missing, missing, "-o", existing_text], "choose another -o path or pass --force"),
        (["compare", missing, missing, "-o", existing], "compare cannot write existing.html"),
        (
            ["check", missing, "--rules", tmp_path / "no-rules.toml", "-o", existing_text],
            "choose another -o path or pass --force",
        ),
    ]
    for args, message in cases:
        proc = _cli(*args)
        assert proc.returncode == 2 and proc.stdout == "", args
        assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert existing.read_text() == existing_text.read_text() == "keep"


def test_plurals(mw: tuple[Path, Path], tmp_path: Path) -> None:
    from ncu_roof.render.gate import render_text as gate_text

    rules = read_rules(_rules(tmp_path, "[defaults]\nmax_slowdown = 1.10\n"))
    text = gate_text(check(diagnose_paths(mw[1]), rules, diagnose_paths(mw[0])))
    assert text.startswith("ncu-roof check: FAILED: 1 violation; 5 kernels, 0 regions checked")
    rules = read_rules(
        _rules(tmp_path, '[defaults]\nmin_pct_of_roof = 10\n[[kernel]]\nmatch = "^(set|semi)"\nskip = true\n')
    )
    text = gate_text(check(diagnose_paths(mw[1]), rules))
    assert text.startswith("ncu-roof check: OK: 2 kernels, 0 regions") and "(3 not checked" in text
    skip = '[[kernel]]\nmatch = "^(set|semi|compute_tendencies_x_3)"\nskip = true\n'
    rules = read_rules(_rules(tmp_path, "[defaults]\nmin_pct_of_roof = 10\n" + skip))
    assert gate_text(check(diagnose_paths(mw[1]), rules)).startswith("ncu-roof check: OK: 1 kernel, 0 regions")


# --- review 2: region arrows on the compare chart, suggested renames, % of ideal, gate output --
def _layernorm_cmp():
    alg = SYNTH / "synthetic_layernorm.toml"
    return compare(
        diagnose_paths(SYNTH / "synthetic_layernorm_unfused_rtx5070.csv", algorithmic=alg),
        diagnose_paths(SYNTH / "synthetic_layernorm_fused_rtx5070.csv", algorithmic=alg),
    )


def test_compare_chart_draws_region_moves(tmp_path: Path) -> None:
    """No kernel matches across a fusion, but the layernorm region's move is drawn."""
    from ncu_roof.render.charts.compare import _arrow_data

    cmp = _layernorm_cmp()
    arrows = _arrow_data(cmp)
    assert arrows["label"].tolist() == ["region layernorm"]
    a = arrows.iloc[0]
    # intensity = FLOPs / DRAM bytes, FLOP/s = FLOPs / time
    assert a["intensity_before"] == pytest.approx(469762048 / 2684354560)  # 0.175
    assert a["intensity_after"] == pytest.approx(1.0)
    assert a["flops_per_s_before"] == pytest.approx(469762048 / 4.54975e-3)  # 103 GFLOP/s
    assert a["flops_per_s_after"] == pytest.approx(590.0e9, rel=1e-3)
    chart = compare_chart(cmp).to_dict()
    rows = [r for data in chart["datasets"].values() for r in data]
    rows += [r for ly in chart["layer"] for r in ly.get("data", {}).get("values", [])]  # labels
    texts = [r["text"] for r in rows if "text" in r]
    assert "before (NVIDIA GeForce RTX 5070): fp32 FMA 30.9 TFLOP/s (device table)" in texts
    assert "DRAM 591 GB/s (device table ×88%, practical)" in texts  # one slope: both sides agree
    axes = [
        ly["encoding"]["x"]["axis"]["values"]
        for ly in chart["layer"]
        if "axis" in ly.get("encoding", {}).get("x", {})
    ]
    assert axes[0] == [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]  # decades, up to the 52 FLOP/B ridge
    alg = SYNTH / "synthetic_layernorm.toml"
    base, new = (SYNTH / f"synthetic_layernorm_{k}_rtx5070.csv" for k in ("unfused", "fused"))
    out = tmp_path / "cmp.json"
    proc = _cli("compare", base, new, "--algorithmic", alg, "--chart", out)
    assert proc.returncode == 0 and out.exists() and "layernorm" in proc.stdout
    # without --algorithmic there is nothing at all to draw: fail before any output
    proc = _cli("compare", base, new, "--chart", tmp_path / "none.json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no matched kernel or region" in proc.stderr and not (tmp_path / "none.json").exists()


def test_compare_pairs_single_kernels_and_suggests_renames(
    ncu_examples: Path, tmp_path: Path
) -> None:
    folder = ncu_examples / "uncoalescedGlobalAccesses"
    base, new = (
        diagnose_paths(folder / f"{k}.ncu-rep") for k in ("addConstDouble3", "addConstDouble")
    )
    cmp = compare(base, new)  # one kernel on each side: paired, with a note
    k = _kernel(cmp, "addConstDouble3")
    assert k["kernel_new"] == "addConstDouble" and k["match"] == "shape changed"
    assert k["time_s_before"] == pytest.approx(89.856e-6) and cmp.comparable
    assert cmp.notes[0].startswith(
        "paired the only kernel of each side: addConstDouble3 -> addConstDouble"
    )
    loose = compare(base, new, auto_pair=False)
    assert loose.pairs.empty and loose.suggested_renames == [("addConstDouble3", "addConstDouble")]
    text = render_text(loose)
    assert '[rename]\n"addConstDouble3" = "addConstDouble"\n' in text
    assert "paired by launch order" in " ".join(text.split())
    # the printed lines are a valid --map file that matches the launches
    lines = text.split("[rename]", 1)[1].splitlines()
    path = tmp_path / "map.toml"
    path.write_text("[rename]\n" + "\n".join(x for x in lines if x.startswith('"')) + "\n")
    assert len(compare(base, new, read_mapping(path), auto_pair=False).pairs) == 1
    assert json.loads(render_json(loose))["suggested_renames"] == {
        "addConstDouble3": "addConstDouble"
    }
    # two kernels each side: paired by launch order
    mib = 2.0**20
    two = compare(
        _diag([_raw("a_v1", 1e-3, mib, mib, mib), _raw("b_v1", 2e-3, mib, mib, mib)]),
        _diag([_raw("a_v2", 1e-3, mib, mib, mib), _raw("b_v2", 2e-3, mib, mib, mib)]),
    )
    assert two.suggested_renames == [("a_v1", "a_v2"), ("b_v1", "b_v2")]
    # a fusion (6 kernels -> 1) is not a rename: no pair is guessed, every kernel is listed
    ln = _layernorm_cmp()
    assert ln.suggestion_basis == "fusion or split"
    assert ln.suggested_renames == []
    assert len(ln.left_over["base"]) == 6 and ln.left_over["new"] == ["ln_fused_kernel"]
    text = render_text(ln)
    assert "BASE runs 6 kernels where NEW runs 1: a fusion or a split, not a rename" in text
    assert "ln_fused_kernel" not in text.split("NEW:")[0]  # never offered as a rename of a base kernel


def test_region_pct_of_ideal_everywhere(tmp_path: Path) -> None:
    cmp = _layernorm_cmp()
    data = json.loads(render_json(cmp))
    region = data["regions"][0]
    # ideal 0.908 ms over 4.55 ms, then over 0.91 ms
    assert region["before"]["pct_of_ideal"] == pytest.approx(19.954, abs=1e-3)
    assert region["after"]["pct_of_ideal"] == pytest.approx(99.770, abs=1e-3)
    assert "pct_of_roof" not in region["before"] and region["ideal"] == "closer"
    text = render_text(cmp)
    assert "% of ideal" in text and "closer to its ideal time (20% -> 100% of ideal)" in " ".join(text.split())
    assert "| region | time | speedup | FLOPs | DRAM bytes | FLOP/B | % of ideal |" in (
        render_markdown(cmp)
    )
    d = diagnose_paths(
        SYNTH / "synthetic_layernorm_unfused_rtx5070.csv", algorithmic=SYNTH / "synthetic_layernorm.toml"
    )
    result = check(d, read_rules(_rules(tmp_path, "[defaults]\nmin_pct_of_ideal = 50\n")))
    (v,) = result.violations
    assert (v.kernel, v.rule, v.limit) == ("layernorm", "min_pct_of_ideal", 50.0)
    assert v.value == pytest.approx(19.954, abs=1e-3)
    assert v.message == (
        "region layernorm: 20% of ideal (ideal time / time) is below min_pct_of_ideal = 50"
    )
    alias = _rules(
        tmp_path, '[defaults]\nmin_pct_of_ideal = 10\n[[region]]\nmatch = "layernorm"\n'
        "min_pct_of_roof = 50\n"
    )
    result = check(d, read_rules(alias))
    assert [x.rule for x in result.violations] == ["min_pct_of_ideal"]
    assert "[[region]] #1 min_pct_of_roof read as min_pct_of_ideal" in result.notes[0]
    # kernels inside a region are held through it; others: no algorithmic entry covers them
    extra = "[defaults]\nmax_extra_bytes_factor = 2\n"
    assert check(d, read_rules(_rules(tmp_path, extra))).notes == []
    mib = 2.0**20
    raw = pd.DataFrame([_raw("outside", 1e-3, mib, mib, mib)]).assign(id=[0])
    loose_alg = diagnose_table(normalize(raw), SYNTH / "synthetic_layernorm.toml")
    note = " ".join(check(loose_alg, read_rules(_rules(tmp_path, extra))).unchecked)
    assert "no algorithmic entry covers these kernels" in note
    assert "pass --algorithmic" not in note


def test_check_prints_checked_bounds_before_unchecked_error(
    mw: tuple[Path, Path], tmp_path: Path
) -> None:
    """A violation wins over an unchecked bound (exit 1); else the unchecked bound exits 2."""
    failing = _rules(tmp_path, "[defaults]\nmin_pct_of_roof = 60\nmax_slowdown = 1.1\n")
    proc = _cli("check", mw[1], "--rules", failing)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ncu-roof check: FAILED: 2 violations; 5 kernels")
    assert "set_halo_values_x_396_gpu: 28% of its roof" in proc.stdout
    assert proc.stderr.startswith("ncu-roof: error: max_slowdown could not be checked")
    passing = _rules(tmp_path, "[defaults]\nmin_pct_of_roof = 10\nmax_slowdown = 1.1\n")
    proc = _cli("check", mw[1], "--rules", passing)
    assert proc.returncode == 2
    assert proc.stdout.startswith(
        "ncu-roof check: OK on the bounds that could be checked: 5 kernels, 0 regions"
    )
    assert "no --baseline given (5 kernels)" in proc.stderr and "note:" not in proc.stdout


def test_sobel_compare_says_the_roof_and_the_binding_unit_changed(ncu_examples: Path) -> None:
    """sobelDouble -> sobelFloat, 19.7x: FP64 work gone, the roof FP64 -> FP32, the FP64 pipe no longer binds."""
    sobel = compare(
        diagnose_paths(ncu_examples / "instructionMix" / "sobelDouble.ncu-rep"),
        diagnose_paths(ncu_examples / "instructionMix" / "sobelFloat.ncu-rep"),
    )
    k = _kernel(sobel, "Sobel")
    assert "FP64 work gone" in k["direction"]
    assert "the roof changed: fp64 mixed (79% of FMA rate) -> fp32 mixed (77% of FMA rate)" in k["direction"]
    assert "binding unit FP64 pipe (85%) -> issue slots (78%)" in k["direction"]
    assert "596 us won, 99% of the 600 us the before-report put at stake (fp64-pipe)" in k["direction"]


def test_compare_chart_arrows_carry_their_speedups(ncu_examples: Path) -> None:
    from ncu_roof.render.charts.compare import compare_chart

    cmp = compare(
        diagnose_paths(ncu_examples / "instructionMix" / "sobelDouble.ncu-rep"),
        diagnose_paths(ncu_examples / "instructionMix" / "sobelFloat.ncu-rep"),
    )
    spec = compare_chart(cmp).to_dict()
    texts = [lay for lay in spec["layer"] if lay.get("mark", {}).get("type") == "text"
             and lay.get("encoding", {}).get("text", {}).get("field") == "speedup_text"]
    assert texts and "'speedup_text': '19.70x'" in str(spec)


def test_names_that_cut_alike_keep_their_distinguishing_ends() -> None:
    from ncu_roof.fmt import unique_short_names

    names = ["compute_tendencies_x_279_gpu", "compute_tendencies_x_309_gpu", "semi_discrete_step_232_gpu"]
    assert unique_short_names(names, 19) == ["compute_t…x_279_gpu", "compute_t…x_309_gpu", "semi_discrete_step…"]
    assert unique_short_names(["a", "b"], 19) == ["a", "b"]


def test_julia_kernels_pair_by_their_stable_stem(realdata: Path) -> None:
    """eschnett/IndexSpaces.jl, two builds on an A40: CUDA.jl's counter changed (julia__5_6739 ->
    julia__5_11155, same launch shape), so the name alone matches nothing; the stem pairs them."""
    folder = realdata / "eschnett__IndexSpaces.jl"
    cmp = compare(diagnose_paths(folder / "profile.74de19f3d8.ncu-rep"),
                  diagnose_paths(folder / "profile.7dc4fa58ec.ncu-rep"))
    stem = cmp.pairs[cmp.pairs["match"] == "build suffix changed"]
    assert stem[["kernel", "kernel_new"]].drop_duplicates().values.tolist() == [["julia__5_6739", "julia__5_11155"]]
    assert ("paired by the stem Julia keeps across builds (its numeric suffix changed): julia__5_6739 -> julia__5_11155"
            in cmp.notes)
    row = cmp.kernels.set_index("kernel").loc["julia__5_6739"]
    assert row["time_s_before"] == pytest.approx(459.456e-6)
    assert row["time_s_after"] == pytest.approx(70.464e-6)
    # julia_bb_4477 and julia_frb_5885 are different functions: never paired by stem
    assert "julia_bb_4477" not in set(cmp.pairs["kernel"])


def test_a_kernel_without_flops_moves_against_the_dram_roof(realdata: Path) -> None:
    """julia__5 (integer work, no FLOPs counted): its % of roof is a share of the DRAM roof, which
    need not be what limits it: the move names that roof, never 'the roof'."""
    folder = realdata / "eschnett__IndexSpaces.jl"
    cmp = compare(diagnose_paths(folder / "profile.74de19f3d8.ncu-rep"),
                  diagnose_paths(folder / "profile.7dc4fa58ec.ncu-rep"))
    row = cmp.kernels.set_index("kernel").loc["julia__5_6739"]
    assert (row["pct_basis_before"], row["pct_basis_after"]) == ("dram bandwidth", "dram bandwidth")
    assert row["roof_move"] == "further" and "from the roof" not in row["direction"]
    assert ("further from the DRAM roof (108% -> 103%; no FLOPs counted: the only roof known, which need not be "
            "what limits it)" in row["direction"])
    mw = compare(diagnose_paths(realdata / "NCAR__GPU_workshop/MW_Baseline.ncu-rep"),
                 diagnose_paths(realdata / "NCAR__GPU_workshop/MW_DivToMult.ncu-rep"))
    assert "closer to the roof (66% -> 93%)" in mw.kernels.set_index("kernel").loc[MW_KERNEL, "direction"]


def test_a_win_is_credited_to_the_finding_whose_evidence_moved(realdata: Path) -> None:
    """COALDA: coalescing halved the L2 bytes and won 3.39 us of 17.5. The before-report's block-size
    (1,024-thread blocks: 32 of 48 warps) and wave-tail (64 such blocks on 20 SMs: 3.2 waves) are in the
    after-report with the same evidence: once credited with 97% of the win, they are kept; the win goes to
    uncoalesced-access (L1 wrote each L2 sector 3 times; once after), whose 8.7 us promise held."""
    folder = realdata / "Alaric617R__COALDA"
    cmp = compare(diagnose_paths(folder / "uncoalesced_chart.ncu-rep"),
                  diagnose_paths(folder / "coalesced_chart.ncu-rep"))
    row = cmp.kernels.iloc[0]
    assert row["predicted_rule"] == "uncoalesced-access" and row["kept_rule"] == "block-size"
    assert row["predicted_stake_s"] == pytest.approx(8.696e-6, rel=1e-3)
    assert row["direction"] == (
        "1.24x faster; bytes L2 -50%; closer to the DRAM roof (27% -> 33%; no FLOPs counted: the only roof "
        "known, which need not be what limits it); 3.39 us won, 39% of the 8.7 us the before-report put at "
        "stake (uncoalesced-access)")


def test_when_only_times_differ_the_binding_unit_s_work_is_said(realdata: Path) -> None:
    """ZSL98 sgemm -> replace_mul_with_add (no FLOP or byte counters): 17.1 -> 33.3 ms a launch, the
    FMA pipe 94.9% -> 97.4% busy: its busy time 0.949 x 188 ms -> 0.974 x 367 ms, +100%. It said
    only '1.95x slower', every other column '- -> -'."""
    folder = realdata / "ZSL98__bitwise_spgemm"
    cmp = compare(diagnose_paths(folder / "sgemm.ncu-rep"),
                  diagnose_paths(folder / "replace_mul_with_add_result.ncu-rep"))
    row = cmp.kernels.iloc[0]
    assert row["binding_unit_busy_s_after"] / row["binding_unit_busy_s_before"] == pytest.approx(
        (0.97406 * 0.033329) / (0.94933 * 0.017119), rel=2e-3)
    assert row["direction"] == ("1.95x slower; FMA pipe busy time +100% (95% -> 97% busy): its work grew, "
                                "not its rate")
    text = render_text(cmp)
    assert "- -> -" not in text and "compute -> compute" not in text  # one value where both sides agree
    assert max(len(line) for line in text.splitlines()) <= 100


def test_a_clock_locked_move_of_two_ms_is_not_called_noise(realdata: Path) -> None:
    """GPUIndexSpaces on an A40 (ncu 2022.1 keeps no launch settings; the SM clock 1,305 MHz in
    both, the spec 1,740: locked to base): 16.7 -> 14.7 ms in one launch each is a 1.14x win, not
    'too few to tell from run-to-run noise'; a 2% move of such launches is within what they vary by."""
    folder = realdata / "eschnett__GPUIndexSpaces"
    base, new = (diagnose_paths(folder / f"profile.{h}.ncu-rep") for h in ("db02bc1e7d", "616e8b4c09"))
    assert clocks_locked(base, new)
    row = compare(base, new).kernels.iloc[0]
    assert row["direction"].startswith("1.14x faster; bytes DRAM -53%")
    assert "noise" not in row["direction"]
    close = {**row.to_dict(), "speedup": 1.02}
    assert _noise_note(close) == " (within the 3% clock-locked launches vary by)"
    assert _noise_note({**close, "clocks_locked": False}) == (
        " (from 1 and 1 launches: too few to tell from run-to-run noise)")


def test_the_compare_chart_dashes_only_regions(mw_cmp) -> None:
    """Its legend says dashed = region: the roofs are solid gray, not dashed too."""
    chart = compare_chart(mw_cmp).to_dict()
    marks = [layer.get("mark") for layer in chart["layer"]]
    roofs = [m for m in marks if isinstance(m, dict) and m.get("type") == "line"]
    assert roofs and all("strokeDash" not in m for m in roofs)
