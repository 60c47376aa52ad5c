"""``lines --top 0`` is refused with one line (issue 46, item 3: it failed with "max() arg is an empty
sequence")."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import one_line_error, run


def test_lines_top_zero_is_one_line(tmp_path: Path) -> None:
    report = tmp_path / "synthetic_any.ncu-rep"
    report.write_bytes(b"")
    assert one_line_error(run("lines", str(report), "--top", "0")) == (
        "ncu-roof: error: Invalid value for '--top': Input should be greater than or equal to 1 (see ncu-roof "
        "lines -h)")
