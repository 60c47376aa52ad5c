"""Issue 12, trust: every case of the issue, with its exact outcome (a note naming the problem and
the damaged value made unknown, or one line on stderr and exit 2, or the right number).

Most cases mutate the synthetic six-kernel layernorm raw export (fixtures/synthetic), whose
numbers are hand-checked; the .ncu-rep cases write reports with tests/reportgen.py on a real
report's launch. The fuzz properties live in tests/test_fuzz.py.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ncu_roof.cli import main

ROOT = Path(__file__).resolve().parents[1]
SYN = ROOT / "fixtures" / "synthetic"
LAYERNORM = (SYN / "synthetic_layernorm_unfused_rtx5070.csv").read_text()
LINES = LAYERNORM.splitlines(keepends=True)
DETAILS = (SYN / "synthetic_details_rules.csv").read_text()


# --- helpers -----------------------------------------------------------------------------------
def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``ncu-roof`` in-process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


def error_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one stderr line of a run that must fail with exit 2."""
    code, _out, err = cli(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ncu-roof: error: ") and "could not process the input" not in lines[0], lines[0]
    return lines[0].removeprefix("ncu-roof: error: ")


def records(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> tuple[list[dict[str, Any]], str]:
    """``table --format json`` records and the notes printed on stderr."""
    code, out, err = cli(capsys, "table", str(path), "--format", "json", *extra)
    assert code == 0 and "Traceback" not in err, err
    return json.loads(out), err


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def cell(text: str, line: int, column: str, value: str) -> str:
    """``text`` with the field ``column`` of line ``line`` (0 = header) set to ``value``."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    rows[line][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue()


TIME = "gpu__time_duration.sum"
READ = "dram__bytes_op_read.sum"


# --- 1. physics and the report itself ----------------------------------------------------------
@pytest.mark.parametrize(("value", "shown"), [("-454975", "-0.000455"), ("0", "0"), ("1e308", "1e+299"),
                                               ("inf", "inf")])
def test_impossible_duration_is_unknown_with_a_note(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    value: str, shown: str) -> None:
    rows, err = records(capsys, write(tmp_path, "t.csv", cell(LAYERNORM, 2, TIME, value)))
    assert len(rows) == 6 and rows[0]["time_s"] is None
    assert rows[0]["notes"] == f"{TIME} = {shown} is not possible as a duration: unknown"
    assert f"launch 0 (ln_mean_kernel): {TIME} = {shown} is not possible as a duration: unknown" in err
    assert rows[1]["time_s"] == pytest.approx(909950e-9) and rows[1]["notes"] is None


def test_negative_bytes_are_unknown_with_a_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows, _ = records(capsys, write(tmp_path, "b.csv", cell(LAYERNORM, 2, READ, "-268435456")))
    assert rows[0]["dram_bytes"] is None
    assert rows[0]["notes"] == f"{READ} = -2.684e+08 is not possible as a value: unknown"


def test_thirty_digit_integer_is_flagged_not_a_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows, _ = records(capsys, write(tmp_path, "i.csv", cell(LAYERNORM, 2, READ, "1" * 30)))
    assert rows[0]["dram_bytes"] is None
    assert rows[0]["notes"] == f"{READ} = 1.111e+29 is not possible as a value: unknown"


def test_bandwidth_above_the_device_peak_is_damaged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """268 GB in 455 us on an RTX 5070 (672 GB/s): 878x its peak."""
    rows, _ = records(capsys, write(tmp_path, "p.csv", cell(LAYERNORM, 2, READ, "268435456000")))
    assert rows[0]["dram_bytes"] is None and rows[0]["time_s"] == pytest.approx(454975e-9)
    assert rows[0]["notes"] == ("achieved DRAM bandwidth is 878x the device's peak: dram_bytes is judged damaged "
                                "(unknown)")


def test_several_rates_above_peak_make_the_duration_unknown(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    text = cell(LAYERNORM, 2, TIME, "4")  # 4 ns instead of 454,975: DRAM and FP32 both impossible
    rows, _ = records(capsys, write(tmp_path, "s.csv", text))
    assert rows[0]["time_s"] is None and rows[0]["dram_bytes"] == 268435456
    assert rows[0]["notes"].startswith("achieved DRAM bandwidth, FP32 rate are all above the device's peaks")


CYCLES = ("gpc__cycles_elapsed.max", "gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg",
          "sm__cycles_elapsed.avg.per_second")


def _with_cycles(time_ns: str = "100000", gpc: str = "150000", sm: str = "150000") -> str:
    """Two launches of 100 us with gpc/sm cycles at 1.5 GHz (both agree with the duration)."""
    head = ('"ID","Kernel Name","Block Size","Grid Size","CC","gpu__time_duration.sum",'
            + ",".join(f'"{c}"' for c in CYCLES) + "\n")
    units = '"","","","","","nsecond","cycle","cycle/second","cycle","cycle/second"\n'
    row = '"{i}","k","(256, 1, 1)","(80, 1, 1)","8.6","{t}","{g}","1500000000","{s}","1500000000"\n'
    return (head + units + row.format(i=0, t=time_ns, g=gpc, s=sm)
            + row.format(i=1, t="100000", g="150000", s="150000"))


def test_duration_damaged_cycles_trusted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """84.48 us -> 84,480 s by a bit flip: two cycle/clock pairs agree on 100 us, so the time is
    taken from them (time_s_src says which)."""
    rows, _ = records(capsys, write(tmp_path, "c.csv", _with_cycles(time_ns="84480000000000")))
    assert rows[0]["time_s"] == pytest.approx(100e-6)
    assert rows[0]["time_s_src"] == "sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second (NERSC)"
    assert rows[0]["notes"] == ("duration 8.448e+04 s disagrees with elapsed cycles / clock = 0.0001 s: the cycles "
                                "and clock are trusted, the duration is taken from them")
    assert rows[1]["notes"] is None


def test_cycles_damaged_duration_trusted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows, _ = records(capsys, write(tmp_path, "c.csv", _with_cycles(sm="15000000")))
    assert rows[0]["time_s"] == pytest.approx(100e-6)
    assert rows[0]["sm_cycles"] == pytest.approx(150000)  # rebuilt as clock x the trusted duration
    assert rows[0]["notes"] == ("sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second disagrees with the "
                                "duration: sm__cycles_elapsed.avg is judged damaged (unknown)")


def test_one_estimate_against_the_duration_leaves_both_unknown(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    text = ('"ID","Kernel Name","gpu__time_duration.sum","gpc__cycles_elapsed.max",'
            '"gpc__cycles_elapsed.avg.per_second"\n"","","nsecond","cycle","cycle/second"\n'
            '"0","k","900000","150000","1500000000"\n"1","k","100000","150000","1500000000"\n')
    rows, _ = records(capsys, write(tmp_path, "c.csv", text))
    assert rows[0]["time_s"] is None and rows[1]["time_s"] == pytest.approx(100e-6)
    assert rows[0]["notes"] == ("duration 0.0009 s disagrees with gpc__cycles_elapsed.max / "
                                "gpc__cycles_elapsed.avg.per_second = 0.0001 s and nothing tells which is damaged: "
                                "both unknown")


@pytest.mark.parametrize(("column", "value", "note"), [
    ("Block Size", "(0, 1, 1)", "block size (0, 1, 1) is not possible: unknown"),
    ("Block Size", "(2048, 1, 1)", "block size (2048, 1, 1) is not possible: unknown"),
    ("Grid Size", "(16384, 70000, 1)", "grid size (16384, 70000, 1) is not possible: unknown"),
    ("CC", "0.8", "compute capability 0.8 is not possible for this launch: unknown"),
    ("CC", "8.6", "compute capability 8.6 is not possible for this launch: unknown"),  # the RTX 5070 is 12.0
    ("launch__block_size", "255", "launch__block_size = 255 is not possible or disagrees with the block "
                                  "dimensions: unknown"),
])
def test_impossible_launch_shape_and_cc(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        column: str, value: str, note: str) -> None:
    rows, _ = records(capsys, write(tmp_path, "x.csv", cell(LAYERNORM, 2, column, value)))
    assert rows[0]["notes"] == note
    key = {"Block Size": "block_dim", "Grid Size": "grid_dim", "CC": "cc", "launch__block_size": "block_size"}[column]
    if key != "block_size":
        assert rows[0][key] is None
    assert rows[0]["time_s"] == pytest.approx(454975e-9)


def test_impossible_sm_count(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = LAYERNORM.replace('"launch__waves_per_multiprocessor"',
                             '"launch__waves_per_multiprocessor","device__attribute_multiprocessor_count"')
    lines = text.splitlines()
    lines[1] += ',""'
    lines[2:] = [ln + (',"0"' if i == 0 else ',"48"') for i, ln in enumerate(lines[2:])]
    rows, _ = records(capsys, write(tmp_path, "sm.csv", "\n".join(lines) + "\n"))
    assert rows[0]["sm_count"] is None and rows[0]["notes"] == "SM count 0 is not possible: unknown"
    assert rows[1]["sm_count"] == 48


def test_conflicting_duplicate_metric_rows_keep_neither(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lines = DETAILS.splitlines(keepends=True)
    duration = next(ln for ln in lines if '"Duration"' in ln)
    text = DETAILS + duration.replace('"1,234.50"', '"12.34"')
    rows, _ = records(capsys, write(tmp_path, "d.csv", text))
    assert rows[0]["time_s"] is None
    assert rows[0]["notes"] == ("conflicting values for gpu__time_duration.sum (the row appears twice): kept "
                                "neither (unknown)")


def test_repeated_metric_row_with_the_same_value_is_read_once(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    duration = next(ln for ln in DETAILS.splitlines(keepends=True) if '"Duration"' in ln)
    rows, err = records(capsys, write(tmp_path, "d.csv", DETAILS + duration))
    assert rows[0]["time_s"] == pytest.approx(1234.5e-6) and rows[0]["notes"] is None
    assert "1 metric row(s) appear twice with the same value: read once" in err


def _dup_column(value_of_copy: str | None) -> str:
    lines = LAYERNORM.splitlines()
    out = []
    for i, line in enumerate(lines):
        fields = line.split('","')
        at = 13  # dram__bytes_op_read.sum
        copy = fields[at] if (i < 2 or value_of_copy is None or i != 2) else value_of_copy
        out.append('","'.join([*fields[:at + 1], copy, *fields[at + 1:]]))
    return "\n".join(out) + "\n"


def test_duplicated_metric_column(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows, _ = records(capsys, write(tmp_path, "same.csv", _dup_column(None)))
    assert [r["dram_bytes"] for r in rows[:2]] == [268435456, 536870912] and rows[0]["notes"] is None
    rows, _ = records(capsys, write(tmp_path, "diff.csv", _dup_column("2684354")))
    assert rows[0]["dram_bytes"] is None and rows[1]["dram_bytes"] == 536870912
    assert rows[0]["notes"] == f"conflicting values for {READ} in two columns: kept neither (unknown)"


def test_duplicated_launch_row_is_read_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows, _ = records(capsys, write(tmp_path, "dup.csv", LAYERNORM + LINES[3]))
    assert len(rows) == 6
    assert rows[1]["notes"] == ("this launch's row appears more than once in the input (a joined or edited "
                                "file?): read once")


def test_two_launches_with_one_id(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows, _ = records(capsys, write(tmp_path, "id.csv", LAYERNORM + LINES[3].replace('"909950"', '"909951"')))
    assert len(rows) == 7
    noted = [r for r in rows if r["notes"]]
    assert [r["id"] for r in noted] == [1, 1]
    assert noted[0]["notes"] == "launch ID 1 is used by more than one launch (a joined or edited file?)"


def test_raw_export_cut(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Cut inside a row: the half row is skipped with a note. Cut exactly at a line end: the file
    reads as a shorter export (README: it cannot be told apart)."""
    cut = LAYERNORM[: LAYERNORM.index(LINES[5]) + 40]
    rows, err = records(capsys, write(tmp_path, "mid.csv", cut))
    assert len(rows) == 3
    assert "the file ends in the middle of a row (truncated?); the incomplete last row was skipped" in err
    rows, _ = records(capsys, write(tmp_path, "end.csv", "".join(LINES[:5])))
    assert [r["id"] for r in rows] == [0, 1, 2]


def test_details_export_cut_inside_the_last_launch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lines = DETAILS.splitlines(keepends=True)
    launch = [ln for ln in lines[1:] if ln.startswith('"0"')]
    second = [ln.replace('"0","99"', '"7","99"', 1) for ln in launch]
    text = "".join(lines) + "".join(second[:2])  # launch 7 keeps only its first two metric rows
    rows, _ = records(capsys, write(tmp_path, "cut.csv", text))
    assert rows[-1]["id"] == 7 and all(r["notes"] is None for r in rows[:-1])
    rows = [rows[0], rows[-1]]
    assert rows[1]["notes"].startswith("has 2 of the ") and "(a cut or damaged file?): the rest is unknown" in \
        rows[1]["notes"]


def test_raw_and_details_concatenated_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "both.csv", LAYERNORM + DETAILS)
    assert error_line(capsys, "table", str(path)) == (
        f"{path} holds 2 CSV exports one after another (headers at lines 1, 9): split it into one file per export")


def test_header_only_csv(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "h.csv", "".join(LINES[:2]))
    expected = (f"{path} holds no kernel launches (a header only: cut after it, or nothing was profiled): "
                "re-export the complete report")
    assert error_line(capsys, "table", str(path)) == expected
    assert error_line(capsys, "diagnose", str(path)) == expected


def test_columns_in_another_order_read_the_same(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(LAYERNORM)))
    order = list(reversed(range(len(rows[0]))))
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([[r[i] for i in order] for r in rows])
    a, _ = records(capsys, write(tmp_path, "a.csv", LAYERNORM))
    b, _ = records(capsys, write(tmp_path, "b.csv", out.getvalue()))
    for x, y in zip(a, b, strict=True):
        x.pop("report"), y.pop("report")
        assert x == y


def test_dot_thousands_separator_read_as_thousands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """70.464 ns in a file whose other numbers group thousands with '.' (1.234.567) is 70,464 ns."""
    text = cell(cell(_relocale(LAYERNORM, ".", ","), 2, TIME, "70.464"), 2, READ, "1.000.000")
    assert '"268.435.456"' in text and '"56,8889"' in text
    rows, _ = records(capsys, write(tmp_path, "de.csv", text))
    assert rows[0]["time_s"] == pytest.approx(70464e-9) and rows[0]["notes"] is None
    assert rows[0]["dram_bytes"] == 1000000 and rows[1]["dram_bytes"] == 536870912


def test_ambiguous_decimal_mark_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = ('"ID","Kernel Name","gpu__time_duration.sum","launch__waves_per_multiprocessor"\n'
            '"","","usecond",""\n"0","k","70.464","1.5"\n').replace('"1.5"', '"2,125"')
    path = write(tmp_path, "amb.csv", text)
    assert error_line(capsys, "table", str(path)) == (
        f"{path} holds numbers such as '2,125' that read either as a decimal or with a thousands separator, and "
        "no number that tells which: re-export it with LC_ALL=C (LC_ALL=C ncu --import R.ncu-rep --csv --page raw "
        "> R.csv)")


def test_unknown_unit_is_refused_not_read_as_base_units(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows, err = records(capsys, write(tmp_path, "u.csv", LAYERNORM.replace('"nsecond"', '"furlong"')))
    assert all(r["time_s"] is None for r in rows)
    assert f"unknown unit 'furlong' for {TIME}: its values were dropped (unknown)" in err


def test_latin1_names_decoded_not_replaced(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = LAYERNORM.replace('"python3"', '"café_ü"').encode("latin-1")
    rows, err = records(capsys, write(tmp_path, "l1.csv", text))
    assert rows[0]["process"] == "café_ü" and "\ufffd" not in json.dumps(rows, ensure_ascii=False)
    assert "the file is not UTF-8 (byte 0xe9 at offset " in err and "read as Windows-1252" in err


def test_nul_in_header_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "nul.csv", LAYERNORM.replace('"Process Name"', '"Process\x00Name"'))
    assert error_line(capsys, "table", str(path)) == (
        f"{path} holds a NUL byte (line 1): it is damaged or not a text CSV export; copy it again or re-export "
        "it (make one with: ncu --import R.ncu-rep --csv --page raw > R.csv)")


def test_notes_reach_every_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "n.csv", cell(LAYERNORM, 2, TIME, "-1"))
    note = f"launch 0 (ln_mean_kernel): {TIME} = -1e-09 is not possible as a duration: unknown"
    code, out, _ = cli(capsys, "diagnose", str(path), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and any(n.endswith(note) for n in doc["notes"])
    assert doc["kernels"][0]["notes"] == [f"{TIME} = -1e-09 is not possible as a duration: unknown"]
    for fmt in ("text", "markdown"):
        code, out, _ = cli(capsys, "diagnose", str(path), "--format", fmt)
        assert code == 0 and note in " ".join(out.split())  # the text summary wraps long notes
    html = tmp_path / "r.html"
    code, _, err = cli(capsys, "report", str(path), "-o", str(html))
    assert code == 0, err
    assert "is not possible as a duration: unknown" in html.read_text()


# --- 2. entry points: sidecars -----------------------------------------------------------------
LN_TOML = (SYN / "synthetic_layernorm.toml").read_text()
LN_CSV = SYN / "synthetic_layernorm_unfused_rtx5070.csv"
REGION = '[[region]]\nname = "ln"\nkernels = "^ln_"\n'


@pytest.mark.usefixtures("cache_diagnoses")  # the sidecars are tested, not reading the CSV
@pytest.mark.parametrize(("body", "message"), [
    (REGION + "flops = nan\n", "[[region]] 'ln' flops = nan; give a finite number > 0"),
    (REGION + "bytes = inf\n", "[[region]] 'ln' bytes = inf; give a finite number > 0"),
    (REGION + "bytes = 0\n", "[[region]] 'ln' bytes = 0; give a finite number > 0"),
    (REGION + "flops = -5\n", "[[region]] 'ln' flops = -5; give a finite number > 0"),
    (REGION + 'bytes = "many"\n', "[[region]] 'ln' bytes = 'many' is not a number; give a finite number > 0"),
    (REGION + "bytes = 1\noccurrences = 0\n", "[[region]] 'ln' occurrences = 0; give a whole number >= 1"),
    (REGION + "bytes = 1\noccurrences = -2\n", "[[region]] 'ln' occurrences = -2; give a whole number >= 1"),
    (REGION + "bytes = 1\noccurrences = 1.5\n", "[[region]] 'ln' occurrences = 1.5; give a whole number >= 1"),
    (REGION + 'bytes = 1\noccurrences = "two"\n', "[[region]] 'ln' occurrences = 'two'; give a whole number >= 1"),
    (REGION + "byts = 1\n", "[[region]] #1 has unknown key 'byts' (did you mean 'bytes'?)"),
    ('[[region]]\nname = "ln"\nkernels = 5\nbytes = 1\n', "[[region]] 'ln' kernels = 5; give a non-empty string"),
    (REGION, "[[region]] 'ln' states neither flops nor bytes"),
    (REGION + "bytes = 1\n" + REGION + "bytes = 2\n", "two [[region]] entries are named 'ln'"),
    ('[[region]]\nname = "ln"\nkernels = "(a)\\\\1"\nbytes = 1\n', "is not a valid regex for RE2"),
    ('[[regoin]]\nname = "ln"\n', "the file has unknown key 'regoin' (did you mean 'region'?)"),
])
def test_algorithmic_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, message: str) -> None:
    toml = write(tmp_path, "alg.toml", body)
    line = error_line(capsys, "diagnose", str(LN_CSV), "--algorithmic", str(toml))
    assert line.startswith(f"{toml}: ") and message in line, line


@pytest.mark.usefixtures("cache_diagnoses")  # the sidecars are tested, not reading the CSV
def test_algorithmic_folder_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert error_line(capsys, "diagnose", str(LN_CSV), "--algorithmic", str(tmp_path)) == (
        f"{tmp_path} is a folder: pass a TOML file")


@pytest.mark.usefixtures("cache_diagnoses")  # the sidecars are tested, not reading the CSV
def test_region_matching_nothing_is_noted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    toml = write(tmp_path, "alg.toml", LN_TOML + '\n[[region]]\nname = "gone"\nkernels = "^nothing_"\nbytes = 1\n')
    code, out, err = cli(capsys, "diagnose", str(LN_CSV), "--algorithmic", str(toml), "--format", "json")
    assert code == 0, err
    assert f"{toml}: region 'gone' matches no launch (check its kernels regex)" in json.loads(out)["notes"]


@pytest.mark.parametrize("option", ["--algorithmic", "--rules"])
def test_catastrophic_regex_does_not_hang(capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str) -> None:
    name = "a" * 5000 + "!"
    csv_path = write(tmp_path, "long.csv", LAYERNORM.replace("ln_mean_kernel", name))
    start = time.monotonic()
    if option == "--algorithmic":
        toml = write(tmp_path, "alg.toml", '[[region]]\nname = "x"\nkernels = "^(a+)+$"\nbytes = 1\n')
        code, _, err = cli(capsys, "diagnose", str(csv_path), "--algorithmic", str(toml))
        assert code == 0, err
    else:
        # the entry also matches ln_sub_kernel (a pattern matching nothing is itself an error, exit 2);
        # the catastrophic branch still runs against the 5,000-character name
        toml = write(tmp_path, "rules.toml", '[defaults]\nmin_pct_of_roof = 1\n[[kernel]]\nmatch = "^(a+)+$|^ln_sub"\n'
                                             "min_pct_of_roof = 2\n")
        code, _, err = cli(capsys, "check", str(csv_path), "--rules", str(toml))
        assert code in (0, 1), err
    assert time.monotonic() - start < 30


@pytest.mark.usefixtures("cache_diagnoses")  # the sidecars are tested, not reading the CSV
@pytest.mark.parametrize(("body", "message"), [
    ("[defaults]\nmin_pct_of_roof = nan\n", "[defaults] min_pct_of_roof = nan; give a finite non-negative number"),
    ("[defaults]\nmax_slowdown = inf\n", "[defaults] max_slowdown = inf; give a finite number > 0"),
    ("[defaults]\nmin_pct_of_rof = 5\n",
     "[defaults] has unknown key 'min_pct_of_rof' (did you mean 'min_pct_of_roof'?)"),
    ('[[kernel]]\nmatch = "(?<=x)y"\nmin_pct_of_roof = 5\n', "is not a valid regex for RE2"),
])
def test_rules_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, message: str) -> None:
    toml = write(tmp_path, "rules.toml", body)
    line = error_line(capsys, "check", str(LN_CSV), "--rules", str(toml))
    assert line.startswith(f"{toml}: ") and message in line, line


@pytest.mark.usefixtures("cache_diagnoses")  # the sidecars are tested, not reading the CSV
def test_region_bound_without_regions_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    toml = write(tmp_path, "rules.toml", '[[region]]\nmatch = "ln"\nmin_pct_of_ideal = 50\n')
    assert error_line(capsys, "check", str(LN_CSV), "--rules", str(toml)) == (
        f"{toml}: [[region]] bounds need regions and the reports hold none: pass --algorithmic F.toml (or wrap "
        "the work in ncu_roof.region)")


@pytest.mark.usefixtures("cache_diagnoses")  # the sidecars are tested, not reading the CSV
@pytest.mark.parametrize(("body", "message"), [
    ("[ceilings]\ndram_bytes_per_s = nan\n", "dram_bytes_per_s = nan must be a positive number in byte/s"),
    ("[ceilings]\ndram_byte_per_s = 1e12\n", "did you mean 'dram_bytes_per_s'?)"),
])
def test_ceilings_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, message: str) -> None:
    toml = write(tmp_path, "c.toml", body)
    line = error_line(capsys, "diagnose", str(LN_CSV), "--ceilings", str(toml))
    assert message in line, line


@pytest.mark.usefixtures("cache_diagnoses")  # the sidecars are tested, not reading the CSV
@pytest.mark.parametrize(("body", "message"), [
    ('[rename]\nold = 5\n', "[rename] old must be a kernel name in quotes"),
    ('[rename]\nold = "new"\n[renmae]\nx = "y"\n', "the --map file has unknown key 'renmae' (did you mean 'rename'?)"),
])
def test_map_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, message: str) -> None:
    toml = write(tmp_path, "m.toml", body)
    line = error_line(capsys, "compare", str(LN_CSV), str(LN_CSV), "--map", str(toml))
    assert message in line, line


# --- 2. entry points: outputs ------------------------------------------------------------------
def test_output_is_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert error_line(capsys, "diagnose", str(LN_CSV), "-o", str(tmp_path)) == (
        f"{tmp_path} is a folder: give -o a file name in it")


def test_output_to_a_device_is_written_as_a_stream(capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/null takes the output as POSIX tools give it; /dev/full's failure is one line."""
    assert error_line(capsys, "table", str(LN_CSV), "-o", "/dev/full") == (
        "cannot write /dev/full: No space left on device")
    code, out, err = cli(capsys, "table", str(LN_CSV), "-o", "/dev/null")
    assert (code, out, err) == (0, "", "")


def test_output_under_proc(capsys: pytest.CaptureFixture[str]) -> None:
    line = error_line(capsys, "table", str(LN_CSV), "-o", "/proc/ncu-roof-out.csv")
    assert line.startswith("cannot write /proc/ncu-roof-out.csv: ")


def test_same_file_for_two_outputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    assert error_line(capsys, "diagnose", str(LN_CSV), "-o", str(out), "--chart", str(out)) == (
        f"{out} is named for two outputs: give each of -o and --chart its own file")
    assert not out.exists()


def test_full_disk_leaves_nothing_half_written(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "t.csv"
    out.write_text("precious\n")

    def full(_fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    assert error_line(capsys, "table", str(LN_CSV), "-o", str(out), "--force") == (
        f"cannot write {out}: No space left on device (nothing was written)")
    assert out.read_text() == "precious\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_unwritable_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    line = error_line(capsys, "table", str(LN_CSV), "-o", str(folder / "t.csv"))
    assert line.startswith(f"cannot write {folder / 't.csv'}: ")


# --- .ncu-rep ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rep(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Write reports on the first launch of a real V100 report (MW_Baseline, --set full)."""
    from conftest import REALDATA

    template = REALDATA / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    if not template.is_file():
        pytest.skip(f"real reports not available: {template} is absent")
    reportgen = pytest.importorskip("reportgen", reason="tests/reportgen.py needs grpcio-tools and protobuf")
    pytest.importorskip("ncu_report", reason="NVIDIA's ncu_report module is not installed")
    try:
        pb = reportgen.proto_modules()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"cannot build the .ncu-rep protobuf modules: {exc}")
    folder = tmp_path_factory.mktemp("trust_rep")

    def write_rep(name: str, metrics: list[dict[str, Any]]) -> Path:
        path = folder / f"{name}.ncu-rep"
        specs = [reportgen.LaunchSpec(kernel="k", metrics=m) for m in metrics]
        reportgen.write_report(path, specs, template, pb=pb)
        return path

    write_rep.pb = pb  # type: ignore[attr-defined]
    write_rep.reportgen = reportgen  # type: ignore[attr-defined]
    return write_rep


def _good_rep_metrics() -> dict[str, Any]:
    """84.48 us at 1.5 GHz with both cycle counts: every check has its evidence."""
    return {"gpu__time_duration.sum": 84480, "gpc__cycles_elapsed.max": 126720.0,
            "gpc__cycles_elapsed.avg.per_second": 1.5e9, "sm__cycles_elapsed.avg": 126720.0,
            "sm__cycles_elapsed.avg.per_second": 1.5e9}


def test_rep_bit_flipped_duration(capsys: pytest.CaptureFixture[str], rep: Any) -> None:
    bad = {**_good_rep_metrics(), "gpu__time_duration.sum": 84480 * 10**9}
    rows, _ = records(capsys, rep("flip_time", [_good_rep_metrics(), bad]))
    assert rows[0]["time_s"] == pytest.approx(84.48e-6) and rows[0]["notes"] is None
    assert rows[1]["time_s"] == pytest.approx(84.48e-6)
    assert rows[1]["notes"] == ("duration 8.448e+04 s disagrees with elapsed cycles / clock = 8.448e-05 s: the cycles "
                                "and clock are trusted, the duration is taken from them")


def test_rep_bit_flipped_block_and_cc(capsys: pytest.CaptureFixture[str], rep: Any) -> None:
    block = {**_good_rep_metrics(), "launch__block_dim_x": 0}
    cc = {**_good_rep_metrics(), "device__attribute_compute_capability_major": 0,
          "device__attribute_compute_capability_minor": 8}
    rows, _ = records(capsys, rep("flip_shape", [_good_rep_metrics(), block, cc]))
    assert rows[1]["block_dim"] is None and "block size (0, 1, 1) is not possible: unknown" in rows[1]["notes"]
    assert rows[2]["cc"] is None
    assert rows[2]["notes"] == "compute capability 0.8 is not possible for this launch: unknown"


def test_rep_launch_with_every_metric_emptied(capsys: pytest.CaptureFixture[str], rep: Any, tmp_path: Path) -> None:
    reportgen, pb = rep.reportgen, rep.pb
    path = rep("emptied", [_good_rep_metrics(), _good_rep_metrics(), _good_rep_metrics()])
    report = reportgen.read_report(path, pb)
    results = [r for b in report.blocks for r in getattr(b, "results", [])]
    if not results:
        pytest.skip("reportgen's Report exposes no results to edit")
    del results[1].MetricResults[:]
    damaged = tmp_path / "emptied.ncu-rep"
    reportgen.save_report(report, damaged)
    rows, _ = records(capsys, damaged)
    assert len(rows) == 3 and rows[1]["time_s"] is None
    assert rows[1]["notes"].startswith("has 0 of the ") and "(a cut or damaged file?)" in rows[1]["notes"]


def test_truncated_gzip_report(capsys: pytest.CaptureFixture[str], rep: Any, tmp_path: Path) -> None:
    data = gzip.compress(rep("gz", [_good_rep_metrics()]).read_bytes())
    path = write(tmp_path, "cut.ncu-repz", data[: len(data) // 2])
    line = error_line(capsys, "table", str(path))
    assert line.startswith(f"{path} is a damaged or truncated gzip archive (")
    assert line.endswith("): copy it again, or decompress it yourself and pass the .ncu-rep")


# --- 3. locales --------------------------------------------------------------------------------
def _relocale(text: str, group: str, decimal: str) -> str:
    """Rewrite every number of a C-locale export the way ncu writes it under another locale:
    thousands grouped with ``group``, ``decimal`` as the decimal mark (identity fields too)."""
    import csv
    import io
    import re

    number = re.compile(r"^-?\d+(\.\d+)?$")

    def convert(value: str) -> str:
        if not number.match(value):
            return value
        whole, _, frac = value.lstrip("-").partition(".")
        groups = f"{int(whole):,}".replace(",", group)
        return ("-" if value.startswith("-") else "") + groups + (decimal + frac if frac else "")

    rows = list(csv.reader(io.StringIO(text)))
    head = rows[0]
    skip = {head.index(c) for c in ("ID", "Process ID", "Context", "Stream", "Device") if c in head}
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(head)
    for row in rows[1:]:
        writer.writerow([v if i in skip else convert(v) for i, v in enumerate(row)])
    return out.getvalue()


@pytest.fixture(scope="module")
def c_exports(ncu_exe: Path, realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from conftest import ncu_env

    folder = tmp_path_factory.mktemp("locale")
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    out = {}
    for page in ("raw", "details"):
        result = subprocess.run([str(ncu_exe), "--import", str(report), "--csv", "--page", page],
                                capture_output=True, text=True, env=ncu_env(folder), timeout=300, check=True)
        out[page] = result.stdout
    return out


@pytest.mark.parametrize("page", ["raw", "details"])
def test_locales_give_one_table(capsys: pytest.CaptureFixture[str], c_exports: dict[str, str], tmp_path: Path,
                                page: str) -> None:
    """Exports of one report under C, en_US, de_DE and fr_FR give one table.

    The unpacked ncu 2024.1.1 cannot be asked for de_DE here: this machine has only the C and
    POSIX locales (``locale -a``), and glibc falls back to C for any other LC_ALL. So the test
    makes the other exports from ncu's real C-locale export by rewriting every number the way a
    locale-aware ncu prints it: en_US groups thousands with ',' ("1,234.5"), de_DE with '.' and a
    decimal comma ("1.234,5", CC "7,0"), fr_FR with U+202F and a decimal comma ("1 234,5").
    """
    c_text = c_exports[page]
    variants = {"C": c_text, "en_US": _relocale(c_text, ",", "."), "de_DE": _relocale(c_text, ".", ","),
                "fr_FR": _relocale(c_text, "\u202f", ",")}
    assert "," in variants["de_DE"] and variants["de_DE"] != c_text
    tables = {}
    for name, text in variants.items():
        rows, _ = records(capsys, write(tmp_path, f"{name}.csv", text))
        for r in rows:
            r.pop("report")
        tables[name] = rows
    for name in ("en_US", "de_DE", "fr_FR"):
        for a, b in zip(tables["C"], tables[name], strict=True):
            for key, value in a.items():
                if isinstance(value, float):
                    assert b[key] == pytest.approx(value, rel=1e-12), (name, key)
                else:
                    assert b[key] == value, (name, key)
    assert tables["C"][0]["time_s"] == pytest.approx(11.36e-6)
    assert all(not math.isnan(r["time_s"]) for r in tables["de_DE"])


# --- a few real subprocess checks of the one-line / exit-2 contract ----------------------------
def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], capture_output=True, text=True, env=env,
                          timeout=180)


def test_subprocess_contract(tmp_path: Path) -> None:
    cases = [
        ("table", str(write(tmp_path, "h.csv", "".join(LINES[:2])))),
        ("diagnose", str(LN_CSV), "-o", str(tmp_path)),
        ("diagnose", str(LN_CSV), "--algorithmic", str(write(tmp_path, "a.toml", REGION + "byts = 1\n"))),
    ]
    for args in cases:
        result = _run(*args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ncu-roof: error: ") and "Traceback" not in result.stderr


def test_subprocess_damaged_report_stderr_is_one_line(rep: Any, tmp_path: Path) -> None:
    """ncu_report's own log lines do not leak: a damaged report gives our line only."""
    data = bytearray(rep("leak", [_good_rep_metrics()]).read_bytes())
    for pos in range(200, len(data), max(1, len(data) // 7)):
        data[pos] ^= 0xFF
    path = write(tmp_path, "leak.ncu-rep", bytes(data))
    result = _run("table", str(path))
    assert result.returncode in (0, 2) and "Traceback" not in result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert all(ln.startswith("ncu-roof: ") for ln in lines), result.stderr
    if result.returncode == 2:
        assert len(lines) == 1


def test_a_one_thread_block_is_possible(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The smallest launch shape (one thread, block size 1 = 1 x 1 x 1) is kept, not judged damaged."""
    text = cell(cell(LAYERNORM, 2, "Block Size", "(1, 1, 1)"), 2, "launch__block_size", "1")
    rows, _ = records(capsys, write(tmp_path, "one.csv", text))
    assert rows[0]["block_dim"] == "(1, 1, 1)" and rows[0]["block_size"] == 1
    assert "block" not in str(rows[0].get("notes") or "")


def test_a_1024_thread_block_is_possible(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The largest block (1024 threads = MAX_THREADS_PER_BLOCK, launch__block_size 1024) is kept."""
    text = cell(cell(LAYERNORM, 2, "Block Size", "(1024, 1, 1)"), 2, "launch__block_size", "1024")
    rows, _ = records(capsys, write(tmp_path, "big.csv", text))
    assert rows[0]["block_dim"] == "(1024, 1, 1)" and rows[0]["block_size"] == 1024
    assert "block" not in str(rows[0].get("notes") or "")


def test_a_captured_duration_with_unusable_values_is_not_asked_to_be_captured(tmp_path: Path) -> None:
    import csv

    from ncu_roof.diagnosis import diagnose_paths

    fixture = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"
    rows = list(csv.reader(fixture.read_text().splitlines()))
    rows[2][rows[0].index("gpu__time_duration.sum")] = "nan"  # the first launch's duration
    edited = tmp_path / "nan_time.csv"
    with edited.open("w", newline="") as out:
        csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    notes = diagnose_paths([edited]).notes
    assert "1 of 6 launches lack time_s (the input has gpu__time_duration.sum, but its values for them are unknown: " \
           "see the notes above)" in notes
    assert not [n for n in notes if "capture gpu__time_duration.sum" in n]


def test_a_launch_with_no_measurement_gets_one_note_not_one_per_quantity(tmp_path: Path) -> None:
    """A launch ncu listed with every metric n/a and no launch shape (an empty grid, a failed replay)
    is said once; the other launches' lacks are counted without it."""
    import csv

    from ncu_roof.diagnosis import diagnose_paths

    fixture = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"
    rows = list(csv.reader(fixture.read_text().splitlines()))
    header = rows[0]
    keep = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Device", "CC"}
    rows[2] = [v if name in keep or name.startswith("device__") else "n/a"
               for name, v in zip(header, rows[2], strict=True)]
    edited = tmp_path / "blank_launch.csv"
    with edited.open("w", newline="") as out:
        csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    notes = diagnose_paths([edited]).notes
    kernel = rows[2][header.index("Kernel Name")].split("(")[0]
    blank = [n for n in notes if "hold no measurement" in n]
    assert blank == [f"1 of 6 launches hold no measurement ({kernel}): no time, counters or launch shape, as ncu "
                     "lists a launch it could not profile (an empty grid, a failed launch or replay)"]
    assert not [n for n in notes if "launches lack time_s" in n]


def test_the_empty_flash_attention_launch_of_a_real_report_is_one_note(realdata: Path) -> None:
    """flyinglandlord's sglang report: flash_fwd_kernel ran as (0, 0, 0)x(0, 0, 0), all metrics nan."""
    from ncu_roof.diagnosis import diagnose_paths

    notes = diagnose_paths([realdata / "flyinglandlord__sglang" / "profile.ncu-rep"]).notes
    assert "1 of 5 launches hold no measurement (flash_fwd_kernel): no time, counters or launch shape, as ncu lists " \
           "a launch it could not profile (an empty grid, a failed launch or replay)" in notes
    assert not [n for n in notes if " lack " in n]
