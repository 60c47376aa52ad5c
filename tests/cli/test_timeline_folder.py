"""A folder (or glob) of traces reads what it can: a JSON file in it that is no trace, or a damaged
trace, is skipped with a note naming it and why; a file named on its own is still refused (issue 46,
item 8: the whole run stopped at the first such file)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import one_line_error, run

TRITON = "triton_example__triton_example.json.gz"


def test_a_folder_skips_what_is_no_trace_with_a_note(hta: Path, tmp_path: Path) -> None:
    (tmp_path / "a_rank0.json.gz").write_bytes((hta / TRITON).read_bytes())
    (tmp_path / "config.json").write_text('{"name": "config"}', encoding="utf-8")
    (tmp_path / "cut.json").write_text('{"traceEvents": [{"ph": "X"', encoding="utf-8")
    result = run("timeline", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [Path(t["trace"]).name for t in doc["traces"]] == ["a_rank0.json.gz"]
    assert doc["notes"] == [
        f"skipped {tmp_path / 'config.json'}: not a trace: no traceEvents list in this JSON object",
        f"skipped {tmp_path / 'cut.json'}: the trace is cut short at character 17 (expected an event): the file is "
        "truncated (was the profiler stopped while writing it?)"]


def test_a_file_named_alone_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"name": "config"}', encoding="utf-8")
    assert one_line_error(run("timeline", str(tmp_path / "config.json"))).endswith(
        "config.json: not a trace: no traceEvents list in this JSON object")
    (tmp_path / "other.json").write_text("[]", encoding="utf-8")
    assert "none of the 2 traces could be read" in one_line_error(run("timeline", str(tmp_path)))
