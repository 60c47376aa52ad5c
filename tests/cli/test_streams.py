"""Streams and special files as POSIX tools treat them (issue 46, item 5): a compressed report on
standard input, closed standard input, ``-o /dev/null`` and ``-o /dev/stdout``, ``lines -``, standard
input named ``-`` (``<stdin>`` in errors) and never by its temporary copy, FIFOs read once as streams
and refused when nobody writes them. Each in a real process, as a user runs it, where it can be."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERNORM = ROOT / "fixtures" / "synthetic" / "synthetic_layernorm_unfused_rtx5070.csv"


def ncu_roof(*args: str, stdin: object = subprocess.DEVNULL) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], stdin=stdin, capture_output=True,  # type: ignore[call-overload]
                          timeout=300, check=False, cwd=ROOT)


def test_a_gzip_compressed_report_on_standard_input_reads_as_the_file_does(realdata: Path, tmp_path: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    packed = tmp_path / "mw.ncu-repz"
    packed.write_bytes(gzip.compress(report.read_bytes()))
    with packed.open("rb") as fh:
        piped = ncu_roof("table", "-q", "-", stdin=fh)
    named = ncu_roof("table", "-q", str(packed))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.count(b"\n") == named.stdout.count(b"\n") == 6  # the header and 5 launches
    assert piped.stdout.split(b"\n")[1].split(b",")[1:] == named.stdout.split(b"\n")[1].split(b",")[1:]


def test_closed_standard_input_is_one_line() -> None:
    result = subprocess.run([sys.executable, "-c", "import os, sys; os.close(0); sys.stdin = None; "
                             "from ncu_roof.cli import main; sys.argv = ['ncu-roof', 'table', '-']; main()"],
                            capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.strip() == ("ncu-roof: error: standard input is closed: pipe in a .ncu-rep report or an "
                                     "ncu CSV export, or name a file")


def test_output_to_dev_null_and_dev_stdout() -> None:
    null = ncu_roof("diagnose", str(LAYERNORM), "-f", "json", "-o", "/dev/null")
    assert (null.returncode, null.stdout, null.stderr) == (0, b"", b"")
    out = ncu_roof("diagnose", str(LAYERNORM), "-f", "json", "-o", "/dev/stdout")
    assert out.returncode == 0 and out.stdout.startswith(b'{\n  "schema": "ncu-roof/diagnose/1"')


def test_lines_reads_a_report_from_standard_input(realdata: Path) -> None:
    report = realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep"
    with report.open("rb") as fh:
        piped = ncu_roof("lines", "-", "--kernel", "compute_tendencies_x_279", stdin=fh)
    named = ncu_roof("lines", str(report), "--kernel", "compute_tendencies_x_279")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout and b"miniWeather_mpi_openacc.F90:288" in piped.stdout


def _no_copy_named(*texts: bytes) -> None:
    for text in texts:
        assert b"ncu-roof-stdin" not in text and b"tmp_" not in text, text[:300]


def test_standard_input_is_named_dash_in_every_output_and_stdin_in_errors(realdata: Path, tmp_path: Path) -> None:
    """Each format as it writes the copy's path: plain, JSON's \\/, Markdown's \\_ (a temporary folder with
    an underscore, the Markdown output leaked it), HTML's &lt;."""
    report = (realdata / "NCAR__GPU_workshop" / "MW_Baseline.ncu-rep").read_bytes()
    temp = tmp_path / "tmp_a*b<c>"
    temp.mkdir()
    fmts = ("text", "markdown", "json", "html", "digest")
    outs = {fmt: _piped(["diagnose", "-", "-f", fmt], report, temp) for fmt in fmts}
    outs["table"] = _piped(["table", "-q", "-"], report, temp)
    outs["table-json"] = _piped(["table", "-q", "-f", "json", "-"], report, temp)
    for result in outs.values():
        assert result.returncode == 0, result.stderr
        _no_copy_named(result.stdout, result.stderr)
    doc = json.loads(outs["json"].stdout)
    assert doc["inputs"] == ["-"] and {k["report"] for k in doc["kernels"]} == {"-"}
    assert {r["report"] for r in json.loads(outs["table-json"].stdout)} == {"-"}
    assert [line.split(b",")[0] for line in outs["table"].stdout.splitlines()[1:]] == [b"-"] * 5
    assert b'<p class="inputs">Inputs: -</p>' in outs["html"].stdout
    cut = _piped(["diagnose", "-"], report[:5000])
    assert cut.returncode == 2 and cut.stderr.decode().startswith("ncu-roof: error: <stdin> is truncated or damaged")
    foreign = _piped(["table", "-"], b"a,b\n1,2\n")
    assert foreign.stderr.decode().startswith("ncu-roof: error: <stdin> is not an Nsight Compute CSV export")
    trace = _piped(["timeline", "-", "-f", "json"], b'{"traceEvents": 3}')
    assert trace.stderr.decode() == ("ncu-roof: error: <stdin>: not a trace: expected the traceEvents list at "
                                     "character 16, found '3'\n")


def _piped(args: list[str], data: bytes, temp: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TMPDIR": str(temp)} if temp else None
    return subprocess.run([sys.executable, "-m", "ncu_roof", *args], input=data, capture_output=True, timeout=300,
                          check=False, cwd=ROOT, env=env)


def _feed_later(fifo: Path, data: bytes, delay: float) -> threading.Thread:
    def feed() -> None:
        time.sleep(delay)
        with fifo.open("wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


def test_a_fifo_is_read_as_a_stream_and_named_by_its_path(tmp_path: Path) -> None:
    fifo = tmp_path / "exports"
    os.mkfifo(fifo)
    writer = _feed_later(fifo, LAYERNORM.read_bytes(), 1.5)  # after the reader opened it
    table = ncu_roof("table", "-q", str(fifo))
    writer.join(10)
    assert table.returncode == 0, table.stderr
    assert [line.split(b",")[:3] for line in table.stdout.splitlines()[1:3]] == [
        [str(fifo).encode(), b"0", b"ln_mean_kernel"], [str(fifo).encode(), b"1", b"ln_sub_kernel"]]
    writer = _feed_later(fifo, b"a,b\n1,2\n", 0)
    bad = ncu_roof("diagnose", str(fifo))
    assert bad.stderr.decode().startswith(f"ncu-roof: error: {fifo} is not an Nsight Compute CSV export")


@pytest.mark.parametrize("command", ["table", "diagnose", "lines", "timeline"])
def test_a_fifo_nobody_writes_is_refused_not_waited_on_for_ever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str], command: str
                                                               ) -> None:
    from ncu_roof.cli import main
    from ncu_roof.read import inputs

    fifo = tmp_path / "nobody.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(inputs, "FIFO_WAIT_S", 1.5)
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_:
        main([command, str(fifo)])
    assert exit_.value.code == 2 and time.monotonic() - started < 30
    assert capsys.readouterr().err.splitlines() == [
        f"ncu-roof: waiting for a program to write to {fifo} (a named pipe; at most 2 s)",
        f"ncu-roof: error: {fifo} is a named pipe (FIFO) that no program wrote to in 2 s: start the program that "
        f"writes it (ncu ... > {fifo}), or name a file"]


def test_a_pipe_whose_writer_is_gone_reads_as_empty_at_once(tmp_path: Path) -> None:
    result = subprocess.run(["bash", "-c", f"exec {sys.executable} -m ncu_roof table <(true)"], capture_output=True,
                            text=True, timeout=60, check=False, cwd=ROOT)
    assert result.returncode == 2
    assert result.stderr.endswith("is empty: pipe in a .ncu-rep report or an ncu CSV export\n")
