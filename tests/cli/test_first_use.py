"""What a new user trips over (issue 14): help, the gate's typos, dry runs, the device table,
the benchmarks without real data. Each test failed on the code before its fix."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ncu_roof.cli.registry import COMMAND_NAMES
from tests.cli.test_cli import one_line_error, run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [("-h",), ("table", "-h"), ("diagnose", "-h"), ("devices", "-h")])
def test_dash_h_is_help(args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: ncu-roof")


def test_help_shows_no_python_types() -> None:
    text = run("diagnose", "--help").stdout
    assert "Usage: ncu-roof diagnose [OPTIONS] REPORT..." in text
    assert "-o, --output FILE" in text and "--device TEXT" in text
    assert "-f, --format [text|markdown|json|digest|html]" in text
    for raw in ("<list[Path]>", "{REPORT}", "<path>", "<str>"):
        assert raw not in text


def _options(help_text: str) -> dict[str, tuple[str, str]]:
    """Each option of a help page: its metavar ('' for a flag) and the first line of its help."""
    found = re.findall(r"^ {2}(?:-\w, )?(--[\w-]+)(?: ([^\s]+))?(?: {2,}(.*))?$", help_text, re.M)
    return {name: (metavar, text) for name, metavar, text in found}


@pytest.mark.parametrize("command", sorted(COMMAND_NAMES))
def test_every_commands_help_names_its_values_in_words(command: str) -> None:
    """``ncu-roof COMMAND --help`` for every command: no Python type (``LIST[STR]``, ``<str>``), a
    folder reads ``DIR`` (never ``FILE``), a repeatable option reads as one value (``NAME``, ``ARG``)."""
    result = run(command, "--help")
    assert result.returncode == 0 and result.stdout.startswith(f"Usage: ncu-roof {command}"), result.stderr
    for raw in ("LIST[", "[STR]", "<list", "<str>", "<path>", "{"):
        assert raw not in result.stdout, (command, raw)
    options = _options(result.stdout)
    assert "--help" in options, result.stdout
    for name, (metavar, text) in options.items():
        if "folder" in text.split("(")[0] and "file" not in text:
            assert metavar == "DIR", (command, name, metavar, text)
    expected = {"ingest": {"--store": "DIR", "--label": "KEY=VALUE"}, "trend": {"--store": "DIR"},
                "query": {"--store": "DIR"}, "capture": {"--region": "NAME", "--ncu-arg": "ARG"},
                "check": {"--baseline-store": "DIR"}}.get(command, {})
    assert {name: options[name][0] for name in expected} == expected


def _gate(tmp_path: Path, text: str) -> Path:
    rules = tmp_path / "gate.toml"
    rules.write_text(text)
    return rules


def test_check_fails_on_a_kernel_pattern_that_matches_nothing(realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    rules = _gate(tmp_path, '[[kernel]]\nmatch = "no_such_kernel"\nmin_pct_of_roof = 99\n')
    line = one_line_error(run("check", str(report), "--rules", str(rules)))
    assert "[[kernel]] #1 match = 'no_such_kernel' matches no kernel in the input" in line
    assert "compute_tendencies_x_279_gpu" in line  # what it could have matched


def test_check_typo_among_good_bounds_suggests_the_name(realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    rules = _gate(tmp_path, '[defaults]\nmin_pct_of_roof = 1\n[[kernel]]\nmatch = "compute_tendencies_x_297"\n'
                            'min_pct_of_roof = 99\n')
    result = run("check", str(report), "--rules", str(rules))
    line = one_line_error(result)
    assert "(did you mean 'compute_tendencies_x_279_gpu'?)" in line
    assert "5 kernels" in result.stdout  # the bounds that could be checked were


def test_check_region_pattern_without_regions(realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    rules = _gate(tmp_path, '[[region]]\nmatch = "no_such"\nmin_pct_of_ideal = 99\n')
    line = one_line_error(run("check", str(report), "--rules", str(rules)))
    assert line.endswith("[[region]] bounds need regions and the reports hold none: pass --algorithmic F.toml "
                         "(or wrap the work in ncu_roof.region)")


def test_check_unmatched_entry_passes_only_when_allowed(realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    rules = _gate(tmp_path, '[defaults]\nmin_pct_of_roof = 1\n[[kernel]]\nmatch = "nothing"\nskip = true\n')
    assert run("check", str(report), "--rules", str(rules), "--allow-unchecked").returncode == 0


def test_capture_dry_run_refuses_a_missing_script(tmp_path: Path) -> None:
    line = one_line_error(run("capture", str(tmp_path / "missing.py"), "--dry-run"))
    assert line == f"ncu-roof: error: script not found: {tmp_path / 'missing.py'}"


def test_devices_lists_the_table_with_sources() -> None:
    result = run("devices")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    from ncu_roof.devices import load_devices

    assert len(lines) == 1 + len(load_devices())
    h100 = next(ln for ln in lines if ln.startswith("NVIDIA H100 PCIe "))
    assert "2 TB/s" in h100 and "51.2 TFLOP/s" in h100 and "H100 PCIe datasheet" in h100


def test_devices_filter_one_device_shows_every_figure() -> None:
    text = run("devices", "H100 PCIe").stdout
    assert text.splitlines()[0] == "NVIDIA H100 PCIe"
    assert "fp64_flops_per_s               25.6 TFLOP/s (2.56e+13)" in text
    assert "source                         NVIDIA H100 whitepaper" in text


def test_devices_json_and_mig_slice() -> None:
    records = json.loads(run("devices", "A100-SXM4-40GB MIG 1g.5gb", "--format", "json").stdout)
    assert records[0]["mig"] == "1g.5gb"
    assert records[0]["dram_bytes_per_s"] == pytest.approx(1.555e12 / 8)


def test_devices_unknown_name_is_one_line() -> None:
    assert one_line_error(run("devices", "Voodoo 5")) == (
        "ncu-roof: error: no device in the table matches 'Voodoo 5': run `ncu-roof devices` for the list")


def test_csv_benchmark_runs_without_real_data(tmp_path: Path) -> None:
    env = dict(os.environ, NCU_ROOF_SHARED=str(tmp_path / "absent"))
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_csv.py"), "--launches", "3000"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert "synthetic_raw_units.csv" in result.stdout, result.stdout + result.stderr
    assert "frame (3000," in result.stdout


# --- one suffix rule for every command ----------------------------------------------------------
LAYERNORM = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"


def test_table_json_suffix_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    assert run("table", str(LAYERNORM), "-o", str(out)).returncode == 0
    records = json.loads(out.read_text())
    assert len(records) == 6 and records[0]["report"] == str(LAYERNORM)


def test_diagnose_html_suffix_writes_the_report_page(tmp_path: Path) -> None:
    """diagnose -o d.html writes the page `report` writes (it was refused); a suffix no format has
    is refused in one line."""
    assert run("diagnose", str(LAYERNORM), "-o", str(tmp_path / "d.html")).returncode == 0
    assert (tmp_path / "d.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    line = one_line_error(run("diagnose", str(LAYERNORM), "-o", str(tmp_path / "d.xlsx")))
    assert line == ("ncu-roof: error: diagnose cannot write d.xlsx: name the file .txt, .md, .json or .html, or "
                    "pass --format")


@pytest.mark.parametrize(("command", "name", "first"), [
    ("diagnose", "d.md", "# ncu-roof"), ("diagnose", "d.json", "{"), ("diagnose", "d.txt", "ncu-roof"),
    ("table", "t.csv", "report,"),
])
def test_suffix_picks_the_format(tmp_path: Path, command: str, name: str, first: str) -> None:
    out = tmp_path / name
    assert run(command, str(LAYERNORM), "-o", str(out)).returncode == 0
    assert out.read_text().startswith(first)


def test_table_refuses_a_markdown_suffix(tmp_path: Path) -> None:
    line = one_line_error(run("table", str(LAYERNORM), "-o", str(tmp_path / "t.md")))
    assert line == "ncu-roof: error: table cannot write t.md: name the file .csv or .json, or pass --format"


def test_format_wins_over_the_suffix(tmp_path: Path) -> None:
    out = tmp_path / "t.txt"
    assert run("table", str(LAYERNORM), "-o", str(out), "--format", "json").returncode == 0
    assert out.read_text().startswith("[")


# --- compare: what a speedup rests on -----------------------------------------------------------
def _kernel_move(before: list[float], after: list[float]) -> str:
    from ncu_roof.comparison.compare import compare
    from tests.comparison.test_compare import _diag, _raw

    mib = 2.0**20
    base = _diag([_raw("k", t, mib, mib, 0.0) for t in before])
    new = _diag([_raw("k", t, mib, mib, 0.0) for t in after])
    return str(compare(base, new).kernels.iloc[0]["direction"])


def test_single_launch_small_change_is_not_called_a_slowdown_without_a_caveat() -> None:
    move = _kernel_move([11.4e-6], [12.8e-6])
    assert move.startswith("1.12x slower (from 1 and 1 launches: too few to tell from run-to-run noise)")


def test_change_within_the_measured_spread_is_called_noise() -> None:
    # sample std 11.55 us both sides: cv 0.1155 (mean 100 us) and 0.1100 (mean 105 us);
    # 2 * sqrt(0.1155**2 / 4 + 0.1100**2 / 4) = 0.159, and the 5% change is inside it
    move = _kernel_move([90e-6, 110e-6, 90e-6, 110e-6], [95e-6, 115e-6, 95e-6, 115e-6])
    assert move.startswith("1.05x slower (within run-to-run noise: +/-16% from 4 and 4 launches)")


def test_change_beyond_the_spread_has_no_caveat() -> None:
    move = _kernel_move([100e-6, 101e-6, 99e-6], [120e-6, 121e-6, 119e-6])
    assert move.startswith("1.20x slower;") or move == "1.20x slower"


def test_large_single_launch_change_needs_no_caveat() -> None:
    assert _kernel_move([6.19e-3], [3.48e-3]).startswith("1.78x faster")
    assert "noise" not in _kernel_move([6.19e-3], [3.48e-3])


@pytest.mark.usefixtures("cache_diagnoses")  # the width of the text is tested here, not reading
def test_terminal_width_is_respected(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = run("diagnose", str(realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"))
    long = [ln for ln in result.stdout.splitlines() if len(ln) > 80]
    assert result.returncode == 0 and not long, long


def test_summary_words() -> None:
    result = run("diagnose", str(LAYERNORM))
    text = result.stdout
    assert text.startswith("ncu-roof: 6 launches, 6 kernels on")
    assert "extra bytes" not in text.split("Advice")[0].splitlines()[3]  # no column of '?' without counts
    assert "need algorithmic counts: pass --algorithmic FILE.toml" in " ".join(text.split())
    assert "fuse-extra-bytes, at-roof-stop: need algorithmic counts" in " ".join(text.split())


def test_markdown_keeps_the_roofs_line() -> None:
    text = run("diagnose", str(LAYERNORM), "--format", "markdown").stdout
    assert "Roofs on NVIDIA GeForce RTX 5070: " in text


@pytest.mark.usefixtures("cache_diagnoses")  # the width of the text is tested here, not reading
def test_compare_fits_80_columns(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mw = realdata / "NCAR__GPU_workshop"
    monkeypatch.setenv("COLUMNS", "80")
    result = run("compare", str(mw / "MW_Baseline.ncu-rep"), str(mw / "MW_DivToMult.ncu-rep"))
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and max(len(ln) for ln in lines) <= 80
    assert "(FLOPs, FLOP/B, bound left out to fit 80 columns: --format markdown or json has them)" in " ".join(
        result.stdout.split()).replace("( ", "(")
    # names cut to the width left; a value both sides share is shown once
    assert any(ln.startswith("compute_tendencies_x_279…  6.19 -> 3.48 ms  1.78x") for ln in lines)
    assert any(ln.startswith("compute_tendencies_x_309…  3.63 ms          1.00x") for ln in lines)


# --- above the roof: at the practical roof, or cache-resident -----------------------------------
def test_no_negative_headroom_or_stake_on_real_reports(realdata: Path) -> None:
    from conftest import cached_diagnosis

    above: set[str] = set()
    for path in sorted(realdata.glob("*/*.ncu-rep")):
        d = cached_diagnosis(path)
        assert not (d.placed["headroom_s"] < 0).any(), path
        assert all((f.time_at_stake_s or 0.0) >= 0 for f in d.findings), path
        flagged = d.placed[d.placed["above_practical_roof"]]
        assert (flagged["pct_of_roof"] > 100).all() and flagged["dram_roof_src"].str.contains("practical").all()
        assert (flagged["headroom_s"] == 0).all()
        # above the practical roof (88% of the spec), never above the spec sheet's bandwidth itself
        assert (flagged["pct_of_roof"] < 100 / 0.88).all(), (path, flagged["pct_of_roof"].tolist())
        above |= {f"{path.name}:{k}" for k in flagged["kernel"]}
    # the H100 SiLU's launches at 101.2-101.4%, the A40's julia__5_6739 at 108.7%
    assert {"2025-04-21-vector-based.ncu-rep:silu_kernel_vector", "profile.74de19f3d8.ncu-rep:julia__5_6739"} <= above


def test_above_the_practical_roof_reads_at_roof(realdata: Path) -> None:
    result = run("diagnose", str(realdata / "AlpriElse__cs599k" / "2025-04-21-vector-based.ncu-rep"))
    flat = " ".join(result.stdout.split())
    assert "at roof: 3 launches at 101.2-101.4% of the practical DRAM roof, which is an estimate" in flat
    assert "they are at their roof, with no time to win there" in flat
    assert "`ncu-roof ceilings` on the GPU measures the real roof" in flat
    table = result.stdout.split("Advice")[0]
    assert "101%" not in table and " at roof" in table


def test_cache_resident_region_is_not_told_to_stop(tmp_path: Path) -> None:
    from tests.rules.test_rules import FADD, by_rule, diagnose_rows, launch

    toml = tmp_path / "alg.toml"
    toml.write_text('[[region]]\nname = "hot"\nkernels = "^hot$"\nbytes = 16e6\nflops = 4e6\n')
    # 16 MB of work in 10 us: the ideal at the 591 GB/s practical roof is 27.1 us, 271% of the time;
    # DRAM saw 0.5 MB (0.03x the work's bytes): the data was in L2
    hot = launch("hot", 10e-6, **{FADD: 4e6, "dram__bytes_read.sum": 0.5e6, "dram__bytes_write.sum": 0.0,
                                  "lts__t_bytes.sum": 16e6})
    d = diagnose_rows([hot], algorithmic=toml)
    assert not by_rule(d, "at-roof-stop")
    region = [f for f in by_rule(d, "above-dram-roof") if f.region == "hot"]
    assert len(region) == 1
    assert "at 271% of its DRAM roof" in region[0].message
    assert "the DRAM roofline does not describe it" in region[0].message
    assert "16 MB" in region[0].message  # placed against L2
    assert d.regions.iloc[0]["time_at_stake_s"] == 0.0  # never negative


def test_no_algorithmic_hint_when_the_counts_were_given() -> None:
    toml = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm.toml"
    for fmt in ("text", "markdown"):
        text = run("diagnose", str(LAYERNORM), "--algorithmic", str(toml), "--format", fmt).stdout
        assert "pass --algorithmic" not in text and "5.0x" in text


def test_every_table_fits_100_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel and region tables of the README's quick start narrow their name columns to fit."""
    synthetic = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic"
    monkeypatch.setenv("COLUMNS", "100")
    result = run("diagnose", str(synthetic / "synthetic_layernorm_unfused_rtx5070.csv"), "--algorithmic",
                 str(synthetic / "synthetic_layernorm.toml"))
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and max(len(ln) for ln in lines) <= 100
    assert any(ln.startswith("region") and "intensity alg/achieved" in ln for ln in lines)


def test_every_real_input_diagnosed_at_once(realdata: Path) -> None:
    """The whole real-data folder in one call (reports and CSV exports of many GPUs, with and without
    each counter): one diagnosis, exit 0, no error line."""
    result = run("diagnose", str(realdata), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    failed_run = "flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv"  # ncu's log, not an export
    exports = [p for p in realdata.rglob("*.csv") if p.name != failed_run]
    assert len({k["report"] for k in doc["kernels"]}) == len(list(realdata.rglob("*.ncu-rep"))) + len(exports)
