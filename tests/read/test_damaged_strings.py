"""A report whose string table or rule message holds a byte that is not UTF-8 (a bit flip) reads: the
name or message keeps U+FFFD where it is damaged (issue 46, item 7: protobuf gave such strings as
bytes, and the reader failed with the generic "could not process the input (TypeError: ...)")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli import run

REPORT = "2388612861__GPU-DEMO/ncu_report_optimized.ncu-rep"


@pytest.mark.parametrize("needle", [b"sm__throughput", b"This kernel"])  # a metric name; a rule's message
def test_a_string_that_is_not_utf8_reads(realdata: Path, tmp_path: Path, needle: bytes) -> None:
    data = (realdata / REPORT).read_bytes()
    at = data.index(needle) + 1
    damaged = tmp_path / "synthetic_not_utf8.ncu-rep"
    damaged.write_bytes(data[:at] + b"\xff" + data[at + 1:])
    for command in ("table", "diagnose"):
        result = run(command, str(damaged))
        assert (result.returncode, result.stderr) == (0, ""), command
    got = run("table", str(damaged)).stdout.replace(str(damaged), "R").splitlines()
    want = run("table", str(realdata / REPORT)).stdout.replace(str(realdata / REPORT), "R").splitlines()
    assert len(got) == len(want) == 5  # the header and the four launches
    if needle == b"This kernel":  # a rule message is no table column: the table is the same
        assert got == want
