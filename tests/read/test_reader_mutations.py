"""Mutation harness over the newer readers (issue 46, item 6): real PyTorch profiler traces and real
source-page exports (made by ncu 2024.1.1 from real reports), changed as damage and tools change
files: one field of one event (or a top-level field) made text, negative, NaN, null, a list, an
object, huge or missing; the text cut or bit-flipped; the gzip stream cut or flipped; a source
page's cell made a wrong value, a row doubled or dropped. Each run, in-process as a user runs the
CLI, gives the right kind of number or one line naming the file: exit 0 or 2, never a traceback
and never the catch-all "could not process the input".

The contract with exit 0: every figure finite (or null), idle at most the span, no more kernels
than the trace holds plus the one a mutation may double; ``lines`` shows no ``nan`` and no negative
offset. The derandomized profile runs the same :data:`EXAMPLES` examples each time (a few seconds);
``NCU_ROOF_FUZZ_EXAMPLES=500`` runs more.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import REALDATA, ncu_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncu_roof.cli import main

HTA = REALDATA / "facebookresearch__HolisticTraceAnalysis"
TRACES = ["critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
          "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
          "trace_filter__sampled_rank-1.json.gz", "triton_example__triton_example.json.gz"]
PAGES = {"NVIDIA__nsight-training/manual_nvtx.ncu-rep": "daxpy_kernel",
         "HadiKhansaa__BBAStar/profile_output.ncu-rep": None}
EXAMPLES = int(os.environ.get("NCU_ROOF_FUZZ_EXAMPLES", "12"))
HARNESS = settings(max_examples=EXAMPLES, deadline=None, derandomize="NCU_ROOF_FUZZ_SEED" not in os.environ,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
DELETE = "<delete>"
BAD_VALUES = ["abc", -5, math.nan, None, [1], {"a": 1}, True, 1e300, -1e300, "@1e400", 2**70, "", DELETE]
EVENT_FIELDS = ["ts", "dur", "ph", "cat", "name", "pid", "tid", "id", "args"]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


def refused_in_one_line(code: int, err: str, path: Path) -> bool:
    """Whether a run was refused as the contract says (True), or ran (False); fails otherwise."""
    assert "Traceback" not in err and "could not process the input" not in err, err
    assert code in (0, 2), (code, err)
    if code == 0:
        return False
    lines = [line for line in err.splitlines() if line.startswith("ncu-roof: error: ")]
    assert len(lines) == 1 and len(err.strip().splitlines()) == 1, err
    assert path.name in lines[0], lines[0]  # names the file
    return True


@cache
def trace_doc(name: str) -> tuple[bytes, dict[str, Any]]:
    raw = gzip.decompress((HTA / name).read_bytes())
    return raw, json.loads(raw)


@cache
def kernels_in(name: str) -> int:
    return sum(1 for e in trace_doc(name)[1]["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X")


def _changed(value: Any, container: dict[str, Any], key: str) -> None:
    if value == DELETE:
        container.pop(key, None)
    else:
        container[key] = value


def trace_mutant(data: st.DataObject, name: str, out: Path) -> Path:
    """One mutation of a real trace, drawn: its file (a ``.json`` or ``.json.gz``)."""
    raw, doc = trace_doc(name)
    kind = data.draw(st.sampled_from(["field", "arg", "top", "cut", "flip", "gzip cut", "gzip flip"]), label="kind")
    if kind in ("field", "arg", "top"):
        value = data.draw(st.sampled_from(BAD_VALUES), label="value")
        events = list(doc["traceEvents"])
        changed = {**doc, "traceEvents": events}
        if kind == "top":
            _changed(value, changed, data.draw(st.sampled_from(["deviceProperties", "distributedInfo", "traceEvents"])))
        else:
            i = data.draw(st.integers(0, len(events) - 1), label="event")
            events[i] = event = dict(events[i])
            if kind == "arg" and isinstance(event.get("args"), dict) and event["args"]:
                event["args"] = dict(event["args"])
                _changed(value, event["args"], data.draw(st.sampled_from(sorted(event["args"])), label="arg"))
            else:
                _changed(value, event, data.draw(st.sampled_from(EVENT_FIELDS), label="field"))
        text = json.dumps(changed).replace('"@1e400"', "1e400")
        path = out / "synthetic_trace_mutant.json"
        path.write_text(text, encoding="utf-8")
        return path
    body = raw if kind in ("cut", "flip") else (HTA / name).read_bytes()
    b = bytearray(body)
    if kind.endswith("cut"):
        b = b[: data.draw(st.integers(0, len(b) - 1), label="cut at")]
    else:
        for at in data.draw(st.lists(st.integers(0, len(b) - 1), min_size=1, max_size=8), label="flipped"):
            b[at] ^= 1 << data.draw(st.integers(0, 7))
    path = out / ("synthetic_trace_mutant.json" if kind in ("cut", "flip") else "synthetic_trace_mutant.json.gz")
    path.write_bytes(bytes(b))
    return path


@HARNESS
@given(data=st.data())
def test_a_mutated_real_trace_reads_right_or_is_refused_naming_it(hta: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(TRACES), label="trace")
    path = trace_mutant(data, name, tmp_path)
    code, out, err = cli(capsys, "timeline", str(path), "-f", "json")
    if refused_in_one_line(code, err, path):
        return
    for doc in json.loads(out)["traces"]:
        t = doc["timeline"]
        span, busy, idle = t["span_s"], t["gpu_busy_s"], t["gpu_idle_s"]
        for v in (span, busy, idle):
            assert v is None or (math.isfinite(v) and v >= 0), t
        if span is not None and idle is not None:
            assert idle <= span + 1e-9 and (busy is None or busy <= span + 1e-9), t
        assert t["launches"] <= kernels_in(name) + 1  # a doubled event is counted once; one may be added
        steps = [step["gpu_idle_s"] for step in t["steps"] if step["gpu_idle_s"] is not None]
        assert sum(steps) <= (idle or 0) + 1e-9, t["steps"]


@pytest.fixture(scope="module")
def source_pages(ncu_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, str | None]]:
    """The real source pages (``--page source --csv --print-source sass``) of :data:`PAGES`."""
    folder = tmp_path_factory.mktemp("pages")
    pages = {}
    for report, kernel in PAGES.items():
        done = subprocess.run([str(ncu_exe), "--import", str(REALDATA / report), "--page", "source", "--csv",
                               "--print-source", "sass"], capture_output=True, env=ncu_env(folder), timeout=300,
                              check=False)
        if done.returncode == 0 and done.stdout.strip():
            pages[report] = (done.stdout, kernel)
    if not pages:
        pytest.skip("ncu could not export a source page here")
    return pages


CELLS = ["abc", "-5", "nan", "inf", "1e400", "", "1,5", "99999999999999999999999", "0x", "zz", "-0x10", "0x-1"]


@HARNESS
@given(data=st.data())
def test_a_mutated_real_source_page_reads_right_or_is_refused_naming_it(
        source_pages: dict[str, tuple[bytes, str | None]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        data: st.DataObject) -> None:
    raw, kernel = source_pages[data.draw(st.sampled_from(sorted(source_pages)), label="page")]
    lines = raw.decode("utf-8").split("\n")
    kind = data.draw(st.sampled_from(["cell", "cut", "flip", "row twice", "row dropped"]), label="kind")
    if kind == "cell":
        i = data.draw(st.integers(0, len(lines) - 1), label="row")
        cells = lines[i].split('","')
        cells[data.draw(st.integers(0, len(cells) - 1), label="cell")] = data.draw(st.sampled_from(CELLS))
        lines[i] = '","'.join(cells)
    elif kind in ("row twice", "row dropped"):
        i = data.draw(st.integers(0, len(lines) - 1), label="row")
        lines[i:i + 1] = [lines[i]] * 2 if kind == "row twice" else []
    body = "\n".join(lines).encode("utf-8")
    if kind == "cut":
        body = body[: data.draw(st.integers(0, len(body) - 1), label="cut at")]
    elif kind == "flip":
        b = bytearray(body)
        for at in data.draw(st.lists(st.integers(0, len(b) - 1), min_size=1, max_size=8), label="flipped"):
            b[at] ^= 1 << data.draw(st.integers(0, 7))
        body = bytes(b)
    path = tmp_path / "synthetic_source_mutant.csv"
    path.write_bytes(body)
    code, out, err = cli(capsys, "lines", str(path), *(["--kernel", kernel] if kernel else []))
    if refused_in_one_line(code, err, path):
        return
    rows = out.splitlines()[2:]
    assert rows, out
    assert not any("nan" in r.split()[0].lower() or "0x-" in r for r in rows), out
