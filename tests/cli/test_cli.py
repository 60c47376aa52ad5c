"""The command line: bad input is one line and exit 2; outputs; help stays fast and true."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "fixtures" / "synthetic"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``ncu-roof ARGS`` as a command sees it (exit code, stdout, stderr), run in this process:
    ``main()`` with sys.stdout/sys.stderr and the file descriptors 1 and 2 captured (a native
    library's own writes are caught too) and an escaping exception printed as Python would print
    it (exit code 1). Saves a Python start per call; :func:`run_process` starts a real process,
    for the tests about that process."""
    from ncu_roof.cli import main

    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryFile() as fd_out, tempfile.TemporaryFile() as fd_err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved, here = (os.dup(1), os.dup(2)), Path.cwd()
        os.dup2(fd_out.fileno(), 1)
        os.dup2(fd_err.fileno(), 2)
        try:
            os.chdir(cwd or ROOT)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    main(list(args))
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                    if isinstance(exc.code, str):
                        print(exc.code, file=sys.stderr)
                except Exception:  # noqa: BLE001 - what an uncaught exception does to a process
                    traceback.print_exc()
                    code = 1
        finally:
            os.chdir(here)
            for fd, copy in zip((1, 2), saved, strict=True):
                os.dup2(copy, fd)
                os.close(copy)
        fd_out.seek(0)
        fd_err.seek(0)
        stdout = out.getvalue() + fd_out.read().decode(errors="replace")
        stderr = err.getvalue() + fd_err.read().decode(errors="replace")
    return subprocess.CompletedProcess([sys.executable, "-m", "ncu_roof", *args], code, stdout, stderr)


def run_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m ncu_roof ARGS`` in a new process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=120)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("ncu-roof: error: ")
    return lines[0]


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ncu-rep"
    assert one_line_error(run_process("table", str(missing))).endswith(f"no such file: {missing}")


def test_folder_without_reports(tmp_path: Path) -> None:
    line = one_line_error(run("diagnose", str(tmp_path)))
    assert "is a folder with no .ncu-rep or Nsight Compute CSV files under it" in line


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(b"")
    assert "is empty" in one_line_error(run("table", str(empty)))


def test_garbage_report(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.ncu-rep"
    garbage.write_bytes(b"hello world" * 20)
    assert "is not an Nsight Compute report (no NVR header)" in one_line_error(run("diagnose", str(garbage)))


def test_truncated_report_is_detected_not_half_read(realdata: Path, tmp_path: Path) -> None:
    data = (realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep").read_bytes()
    for fraction in (0.5, 0.99):
        cut = tmp_path / f"cut{fraction}.ncu-rep"
        cut.write_bytes(data[: int(len(data) * fraction)])
        assert "is truncated or damaged" in one_line_error(run("table", str(cut)))


def test_failed_run_csv(realdata: Path) -> None:
    failed = realdata / "meinie0826__Roofline-Analysis" / "flashinfer_paged_decode__gqa_bf16_b128_ctx8k_p64.ncu.csv"
    line = one_line_error(run("diagnose", str(failed)))
    assert "==ERROR== The application returned an error code (1)." in line


def test_bad_algorithmic_and_ceilings_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("not = [toml\n")
    csv = str(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv")
    assert "is not valid TOML" in one_line_error(run("diagnose", csv, "--algorithmic", str(bad)))
    assert one_line_error(run("diagnose", csv, "--ceilings", str(bad)))


def test_never_overwrites_without_force(tmp_path: Path) -> None:
    out = tmp_path / "table.csv"
    out.write_text("mine")
    csv = str(SYNTHETIC / "synthetic_layernorm_fused_rtx5070.csv")
    assert "exists: choose another -o path or pass --force" in one_line_error(run("table", csv, "-o", str(out)))
    assert out.read_text() == "mine"
    assert run("table", csv, "-o", str(out), "--force").returncode == 0
    assert out.read_text().startswith("report,id,kernel")


def test_table_json_records_with_base_units() -> None:
    result = run("table", str(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv"), "--format", "json")
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)
    assert [r["kernel"] for r in records][:2] == ["ln_mean_kernel", "ln_sub_kernel"]
    assert records[1]["time_s"] == pytest.approx(909_950e-9)
    assert records[1]["dram_bytes"] == 2 * 268_435_456
    assert records[1]["l2_bytes"] is None  # unknown is null, never 0
    assert records[5]["flops_fp32"] == 2 * 67_108_864


def test_diagnose_json_and_markdown(tmp_path: Path) -> None:
    csv = str(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv")
    alg = str(SYNTHETIC / "synthetic_layernorm.toml")
    out = tmp_path / "d.json"
    assert run("diagnose", csv, "--algorithmic", alg, "-o", str(out)).returncode == 0
    data = json.loads(out.read_text())
    assert data["schema"] == "ncu-roof/diagnose/1"
    assert data["regions"][0]["extra_bytes_factor"] == pytest.approx(5.0)
    assert data["kernels"][0]["roof"]["dram_source"] == "device table x 88% (practical, not measured)"
    md = run("diagnose", csv, "--algorithmic", alg, "--format", "markdown")
    assert md.stdout.startswith("# ncu-roof diagnosis") and "| `ln_sub_kernel` |" in md.stdout


def test_help_is_fast_and_imports_no_pandas() -> None:
    code = ("import sys; from ncu_roof.cli import app; "
            "print(sorted(m for m in ('pandas', 'altair', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.strip() == "[]", out.stderr
    result = run("--help")
    assert result.returncode == 0
    for command in ("table", "diagnose", "report", "compare", "check", "capture", "ceilings"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.M), command


def test_readme_documents_every_command_and_its_quick_start_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    for command in ("table", "diagnose", "report", "compare", "check", "capture", "ceilings"):
        assert f"`ncu-roof {command}" in readme, command
    quick = re.search(r"```sh\n(pip install \. && ncu-roof diagnose [^\n]+)\n```", readme)
    assert quick, "README quick start missing"
    args = quick.group(1).split("ncu-roof ", 1)[1].split()
    result = run_process(*args)
    assert result.returncode == 0, result.stderr
    assert "layernorm" in result.stdout
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = re.search(r"```sh\n(pip install -e '\.\[test\]' && python -m pytest)\n```", readme)
    assert test_command and test_command.group(1) in ci


def test_bad_chart_path_fails_before_any_output(tmp_path: Path) -> None:
    csv = str(SYNTHETIC / "synthetic_layernorm_fused_rtx5070.csv")
    out = tmp_path / "d.txt"
    result = run("diagnose", csv, "-o", str(out), "--chart", str(tmp_path / "x.pdf"))
    assert "cannot save a chart as x.pdf: use .html, .json, .png or .svg" in one_line_error(result)
    assert result.stdout == "" and not out.exists()


def test_device_option_gives_roofs_to_an_unnamed_gpu(realdata: Path) -> None:
    """reduceInteger names no GPU and holds no clock: no roof without --device. Gardenia's export names none
    either, but its 765 MHz SM clock is the base clock of one CC 8.0 entry (the A100 PCIe 40GB): that one, and
    --device still says which."""
    csv = str(realdata / "Lashi0812__CudaProgramming" / "ncu_reduceInteger.csv")
    plain = json.loads(run("diagnose", csv, "-f", "json").stdout)
    assert all(k["roof"]["dram_bytes_per_s"] is None and "roof" in k["missing"] for k in plain["kernels"])
    named = json.loads(run("diagnose", csv, "-f", "json", "--device", "NVIDIA GeForce RTX 4090").stdout)
    assert all(k["device"] == "NVIDIA GeForce RTX 4090" for k in named["kernels"])
    assert named["kernels"][0]["roof"]["dram_source"] == "device table x 88% (practical, not measured)"
    assert named["kernels"][0]["roof"]["dram_bytes_per_s"] == pytest.approx(0.88 * 1008e9, rel=0.01)
    gardenia = str(realdata / "Gardenia-Tian__LearningNote4Dev" / "sgemm.csv")
    inferred = json.loads(run("diagnose", gardenia, "-f", "json").stdout)
    assert all(k["device"] == "NVIDIA A100-PCIE-40GB" for k in inferred["kernels"])
    assert inferred["kernels"][0]["roof"]["dram_bytes_per_s"] == pytest.approx(0.88 * 1555e9, rel=0.01)
    other = json.loads(run("diagnose", gardenia, "-f", "json", "--device", "NVIDIA A100-SXM4-80GB").stdout)
    assert all(k["device"] == "NVIDIA A100-SXM4-80GB" for k in other["kernels"])


def test_version() -> None:
    from ncu_roof import __version__

    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"ncu-roof {__version__}"
    short = run("-V")  # as pip, git and python spell it
    assert short.returncode == 0 and short.stdout == result.stdout


def test_top_level_help_gives_each_command_a_whole_first_sentence() -> None:
    """query's summary was cut at its 'e.g.' ('... 'ncu-roof[store]'): e.g.')."""
    lines = {line.split()[0]: line for line in run("-h").stdout.splitlines() if line.startswith("  ")}
    assert lines["query"].split(None, 1)[1] == "Run SQL on a store of runs."


def test_every_read_command_takes_quiet() -> None:
    for name in ("diagnose", "report", "compare", "check", "timeline"):
        assert "-q, --quiet" in run(name, "-h").stdout, name


def test_diagnose_writes_the_report_page_as_html(tmp_path: Path) -> None:
    """diagnose -f html (or -o x.html) writes the page `report` writes, as timeline -f html does;
    it was refused with a raw validator message."""
    csv = str(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv")
    page = tmp_path / "x.html"
    assert run("diagnose", csv, "-o", str(page)).returncode == 0
    assert run("report", csv, "-o", str(tmp_path / "r.html")).returncode == 0
    assert page.read_text(encoding="utf-8") == (tmp_path / "r.html").read_text(encoding="utf-8")
    shown = run("diagnose", csv, "-f", "html")
    assert shown.returncode == 0 and shown.stdout.startswith("<!DOCTYPE html>")
    refused = run("diagnose", csv, "-o", str(tmp_path / "x.csv"))
    assert refused.returncode == 2 and refused.stderr == (
        "ncu-roof: error: diagnose cannot write x.csv: name the file .txt, .md, .json or .html, or pass --format\n")


def test_semicolon_csv_is_refused_with_the_reason(tmp_path: Path) -> None:
    semi = tmp_path / "semi.csv"
    semi.write_text('"ID";"Process ID";"Process Name";"Host Name";"Kernel Name";"Context";"Stream"\n'
                    '"0";"1";"p";"h";"k";"1";"7"\n')
    assert "uses ';' or tabs between fields, not the commas ncu writes" in one_line_error(run("table", str(semi)))


def test_the_docs_document_every_table_column(realdata: Path) -> None:
    from conftest import cached_table

    readme = (ROOT / "docs" / "inputs.md").read_text()
    inputs = [*sorted(realdata.glob("*/*.ncu-rep")), *sorted(SYNTHETIC.glob("synthetic_layernorm*.csv"))]
    columns = set().union(*(cached_table(p).columns for p in inputs))
    undocumented = sorted(c for c in columns if f"`{c}`" not in readme)
    assert not undocumented, undocumented


@pytest.mark.parametrize("command", ["table", "diagnose"])
@pytest.mark.parametrize(("name", "content", "expected"), [
    ("empty.csv", b"", "is empty"),
    ("header_only.csv", b'"ID","Kernel Name","gpu__time_duration.sum"\n', "holds no kernel launches"),
    ("junk.ncu-rep", bytes(range(256)) * 2, "is not an Nsight Compute report (no NVR header)"),
])
def test_bad_files_are_one_line_and_exit_2(tmp_path: Path, command: str, name: str, content: bytes,
                                           expected: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert expected in one_line_error(run_process(command, str(path)))  # a real process, as a user runs it


def test_a_python_without_the_dependencies_gets_one_line(tmp_path: Path) -> None:
    """``python -m ncu_roof`` by an interpreter without typer (-S: no site-packages)."""
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    result = subprocess.run([sys.executable, "-S", "-m", "ncu_roof", "table", str(empty)], capture_output=True,
                            text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert one_line_error(result) == (
        "ncu-roof: error: a dependency is missing (No module named 'typer'): run ncu-roof with the Python it was "
        "installed in (activate its virtual environment), or install it: pip install .")


def test_a_dependency_missing_when_a_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ncu_roof.read import table

    def no_pandas(*args: object, **kwargs: object) -> None:
        raise ModuleNotFoundError("No module named 'pandas'", name="pandas")

    monkeypatch.setattr(table, "load_table_csv", no_pandas)  # what `table` calls for its CSV
    line = one_line_error(run("table", str(tmp_path / "r.csv")))
    assert line.startswith("ncu-roof: error: a dependency is missing (No module named 'pandas')")


def test_suggest_regions_writes_the_stanzas_once_and_they_read_back(tmp_path: Path) -> None:
    unfused = SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv"
    out = tmp_path / "regions.toml"
    res = run("diagnose", str(unfused), "--suggest-regions", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == (f"ncu-roof: 1 [[region]] stanza(s) written to {out}: check the counts, then pass "
                                  f"--algorithmic {out}")
    assert 'name = "ln-fused"' in out.read_text() and "bytes = 536870912" in out.read_text()
    again = run("diagnose", str(unfused), "--suggest-regions", str(out))
    assert again.returncode == 2
    assert again.stderr.strip() == (f"ncu-roof: error: {out} exists: choose another --suggest-regions path or "
                                    "pass --force to overwrite it")
    judged = run("diagnose", str(unfused), "--algorithmic", str(out), "-f", "json")
    assert [f["rule"] for f in json.loads(judged.stdout)["findings"]][0] == "fuse-extra-bytes"


def test_a_bad_option_is_one_line_naming_the_command_s_help() -> None:
    res = run("diagnose", str(SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv"), "--format", "bogus")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == ["ncu-roof: error: Invalid value for '--format' / '-f': Value error, 'bogus' is "
                                       "not one of 'text', 'markdown', 'json', 'digest', 'html'. "
                                       "(see ncu-roof diagnose -h)"]
    missing = run("diagnose")
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == ["ncu-roof: error: Missing argument 'REPORT'. (see ncu-roof diagnose -h)"]
    unknown = run("bogus")
    assert unknown.returncode == 2 and unknown.stderr.splitlines() == ["ncu-roof: error: No such command 'bogus'. "
                                                                      "(see ncu-roof -h)"]


# --- '-' as standard output and standard input ---------------------------------------------------
LAYERNORM = SYNTHETIC / "synthetic_layernorm_unfused_rtx5070.csv"
HEADLINE = "ncu-roof: 6 launches, 6 kernels on NVIDIA GeForce RTX 5070; total GPU time 4.55 ms"


def _piped(args: list[str], stdin: bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], input=stdin, capture_output=True, cwd=cwd,
                          env=env, timeout=120)


def test_dash_output_is_standard_output(tmp_path: Path) -> None:
    """`-o -` prints (for diagnose, table and report), and writes no file named '-'."""
    result = run("diagnose", str(LAYERNORM), "-o", "-", cwd=tmp_path)
    assert result.returncode == 0 and " ".join(result.stdout.split()).startswith(HEADLINE)
    table = run("table", str(LAYERNORM), "-o", "-", cwd=tmp_path)
    assert table.returncode == 0 and table.stdout.startswith("report,id,kernel")
    report = run("report", str(LAYERNORM), "-o", "-", cwd=tmp_path)
    assert report.returncode == 0 and report.stdout.startswith("<!DOCTYPE html>") and "wrote" not in report.stderr
    assert not (tmp_path / "-").exists() and not list(tmp_path.iterdir())


def test_dash_and_a_piped_dev_stdin_read_standard_input(tmp_path: Path, realdata: Path) -> None:
    """`ncu-roof diagnose -` and `diagnose /dev/stdin` read a piped CSV export or .ncu-rep report."""
    csv = _piped(["diagnose", "-"], LAYERNORM.read_bytes(), tmp_path)
    assert csv.returncode == 0, csv.stderr
    assert " ".join(csv.stdout.decode().split()).startswith(HEADLINE)
    rep = _piped(["diagnose", "/dev/stdin"], (realdata / "NCAR__GPU_workshop/MW_Baseline.ncu-rep").read_bytes(),
                 tmp_path)
    assert rep.returncode == 0, rep.stderr
    assert " ".join(rep.stdout.decode().split()).startswith(
        "ncu-roof: 5 launches, 5 kernels on Tesla V100-SXM2-32GB; total GPU time 15.5 ms")


def test_empty_standard_input_is_one_line(tmp_path: Path) -> None:
    result = _piped(["diagnose", "-"], b"", tmp_path)
    assert result.returncode == 2 and result.stderr.decode().strip() == (
        "ncu-roof: error: standard input is empty: pipe in a .ncu-rep report or an ncu CSV export")


def test_the_program_flushes_cleans_up_and_keeps_exit_codes_without_teardown(tmp_path: Path) -> None:
    """``ncu-roof`` ends with ``os._exit`` (no interpreter teardown): what it printed to a pipe
    still arrives whole, what it registered to run at exit runs (the stdin copy is removed), and
    the exit codes are the CLI's."""
    fixture = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    piped = subprocess.run([sys.executable, "-m", "ncu_roof", "diagnose", "-f", "json", "-"],
                           input=fixture.read_bytes(), capture_output=True, env=env, cwd=ROOT, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["inputs"]  # the whole document arrived
    assert not list(tmp_path.glob("ncu-roof-stdin-*"))
    bad = subprocess.run([sys.executable, "-m", "ncu_roof", "diagnose", str(tmp_path / "absent.ncu-rep")],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert (bad.returncode, bad.stderr.count("\n")) == (2, 1)
    assert subprocess.run([sys.executable, "-m", "ncu_roof", "--version"], capture_output=True, env=env,
                          cwd=ROOT, timeout=120).returncode == 0
