"""ncu-roof's own .ncu-rep reader against NVIDIA's ``ncu_report``: the same raw launch frame.

Every report here is read by both readers: the real reports in ../shared/realdata, Nsight
Compute's example reports, and reports written here (``reportgen``) with every value kind the
format stores, instanced metrics, NVTX push/pop stacks and start/end ranges in several domains,
and kernel names with and without a demangled form. Rows, columns, identity and NVTX must be the
same, integers to the last bit, floating point to 1e-12 relative; notes the same; rule results
the same as ``ncu_report``'s ``rule_results_as_dicts()``.
"""

from __future__ import annotations

import math
import struct
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ncu_roof.errors import ReportLoadError
from ncu_roof.read import native
from ncu_roof.read.native import blocks as native_index
from ncu_roof.read.parallel import Progress, ReadOptions, read_raw_frames, set_options

ncu_report = pytest.importorskip("ncu_report", reason="NVIDIA's ncu_report module is not installed")

from ncu_roof.read.ncu_rep import load_ncu_rep  # noqa: E402

RULE_KEYS = ("id", "rule", "section", "type", "title", "message", "speedup_pct", "speedup_type")
TEMPLATE = "NCAR__GPU_workshop/MW_Baseline.ncu-rep"


def _real_reports(realdata: Path | None, examples: Path | None) -> list[Path]:
    found: list[Path] = []
    if realdata is not None:
        found += sorted(realdata.glob("*/*.ncu-rep"))
    if examples is not None:
        found += sorted(examples.glob("*/*.ncu-rep"))
    return found


def reference_rule_results(path: Path) -> list[dict[str, Any]]:
    """Rule results as ``ncu_report`` gives them, in the ``ncu_rule_results`` schema."""
    types = {ncu_report.MsgType_OPTIMIZATION: "OPT", ncu_report.MsgType_WARNING: "WRN",
             ncu_report.MsgType_OK: "INF", ncu_report.MsgType_ERR: "ERR"}
    speedups = {ncu_report.SpeedupType_GLOBAL: "global", ncu_report.SpeedupType_LOCAL: "local"}
    out = []
    launch = 0
    ctx = ncu_report.load_report(str(path))
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            for d in rng.action_by_idx(a).rule_results_as_dicts():
                msg = d.get("rule_message") or {}
                speedup = d.get("speedup_estimation")
                kind = int(msg.get("type", 0))
                out.append({
                    "id": launch, "rule": d["rule_identifier"], "section": d.get("section_identifier") or None,
                    "type": types.get(kind, str(kind)), "title": msg.get("title") or None,
                    "message": msg.get("message", ""),
                    "speedup_pct": float(speedup["speedup"]) if speedup else math.nan,
                    "speedup_type": speedups.get(int(speedup["type"])) if speedup else None,
                })
            launch += 1
    return out


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if a == b:
            return True
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) and not (a.is_integer() and b.is_integer())
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return pd.isna(a) and pd.isna(b)
    return bool(a == b)


def assert_same_frames(ours: pd.DataFrame, theirs: pd.DataFrame, path: Path) -> None:
    assert list(ours.columns) == list(theirs.columns), path
    assert ours.dtypes.equals(theirs.dtypes), (path, ours.dtypes.compare(theirs.dtypes))
    assert len(ours) == len(theirs), path
    for col in ours.columns:
        for i, (a, b) in enumerate(zip(ours[col].tolist(), theirs[col].tolist(), strict=True)):
            assert _same_value(a, b), f"{path} launch {i} {col}: {a!r} != {b!r}"
    assert ours.attrs["notes"] == theirs.attrs["notes"], path
    rules = theirs.attrs.get("ncu_rule_results")
    expected = reference_rule_results(path) if rules is None else rules
    got = ours.attrs["ncu_rule_results"]
    assert len(got) == len(expected), path
    for a, b in zip(got, expected, strict=True):
        assert tuple(a) == RULE_KEYS, a
        for key in RULE_KEYS:
            assert _same_value(a[key], b[key]), f"{path} rule result {a}: {key} {a[key]!r} != {b[key]!r}"


@pytest.fixture(scope="module")
def real_reports(request: pytest.FixtureRequest) -> list[Path]:
    def optional(name: str) -> Path | None:
        try:
            return request.getfixturevalue(name)
        except pytest.skip.Exception:
            return None

    found = _real_reports(optional("realdata"), optional("ncu_examples"))
    if not found:
        pytest.skip("neither ../shared/realdata nor Nsight Compute's example reports are here")
    return found


def test_every_real_report_reads_the_same(real_reports: list[Path]) -> None:
    for path in real_reports:
        assert_same_frames(native.load_native(path), load_ncu_rep(path), path)


def test_real_reports_hold_rule_results_and_nvtx(realdata: Path, real_reports: list[Path]) -> None:
    """The comparison above is not vacuous: rule results and NVTX are there to compare (NVTX only
    in ../shared/realdata: without it this test skips, where Nsight Compute's examples still run)."""
    frames = [native.load_native(p) for p in real_reports]
    assert sum(len(f.attrs["ncu_rule_results"]) for f in frames) > 100
    assert any(f["nvtx"].notna().any() for f in frames)
    types = {r["type"] for f in frames for r in f.attrs["ncu_rule_results"]}
    assert {"OPT", "INF"} <= types
    assert any(r["speedup_type"] == "global" for f in frames for r in f.attrs["ncu_rule_results"])


# --------------------------------------------------------------------------- written reports


@pytest.fixture(scope="module")
def template(realdata: Path) -> Path:
    return realdata / TEMPLATE


@pytest.fixture(scope="module")
def kinds_report(reportgen_mod: Any, template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Launches with every value kind, instanced metrics, NVTX and odd kernel names."""
    rg = reportgen_mod
    big = 2**53 + 1  # not a double: as_double() rounds it
    launches = [
        rg.LaunchSpec("double", metrics={"gpu__time_duration.sum": 1234.5678, "dram__bytes_read.sum": 1e9 / 3},
                      nvtx=["outer", "inner"]),
        rg.LaunchSpec("uint64", metrics={"dram__bytes_read.sum": big, "dram__bytes_write.sum": 2**64 - 1,
                                         "gpu__time_duration.sum": 7},
                      nvtx_domains={"mylib": ["io", "read"]}, nvtx=["step"]),
        rg.LaunchSpec("float32", metrics={"gpu__time_duration.sum": rg.Float32(0.1),
                                          "dram__bytes_read.sum": rg.Float32(3.5e9)},
                      nvtx_start_end={rg.DEFAULT_DOMAIN: ["epoch 1", "warmup"], "lib": ["load"]}),
        rg.LaunchSpec("uint32", metrics={"launch__grid_size": rg.Uint32(4_000_000_000),
                                         "dram__bytes_read.sum": rg.Uint32(17)}, device="NVIDIA H100 PCIe"),
        rg.LaunchSpec("strings", metrics={"dram__bytes_read.sum": "not a number",
                                          "device__attribute_display_name": "Some GPU"}),
        rg.LaunchSpec("instanced", metrics={
            "dram__bytes_read.sum": rg.Instanced(None, (1.0, 2.0, 3.0)),
            "dram__bytes_write.sum": rg.Instanced(6.0, (1.0, 5.0)),
            "lts__t_bytes.sum": rg.Instanced(rg.Uint32(9), (4, 5)),
            "gpu__time_duration.sum": rg.Instanced(-0.0, ("a", "b")),
        }),
        rg.LaunchSpec("no_demangled", demangled="", mangled="_Z12no_demangledv",
                      metrics={"gpu__time_duration.sum": math.inf, "dram__bytes_write.sum": math.nan}),
        rg.LaunchSpec("void templ<float>(float*)", demangled="void templ<float>(float *)",
                      mangled="_Z5templIfEvPT_", metrics={"gpu__time_duration.sum": 5e-324}),
    ]
    dst = tmp_path_factory.mktemp("kinds") / "kinds.ncu-rep"
    rg.write_report(dst, launches, template, index=0)
    return dst


def test_every_value_kind_reads_the_same(kinds_report: Path) -> None:
    ours, theirs = native.load_native(kinds_report), load_ncu_rep(kinds_report)
    assert_same_frames(ours, theirs, kinds_report)
    by_kernel = ours.set_index("kernel")
    assert by_kernel.loc["uint64", "dram__bytes_read.sum"] == float(2**53 + 1)
    assert by_kernel.loc["uint32", "launch__grid_size"] == 4_000_000_000.0
    assert by_kernel.loc["float32", "gpu__time_duration.sum"] == struct.unpack("<f", struct.pack("<f", 0.1))[0] * 1e-9
    assert by_kernel.loc["strings", "dram__bytes_read.sum"] == 0.0  # as_double() of a string
    assert by_kernel.loc["strings", "device"] == "Some GPU"
    assert by_kernel.loc["instanced", "dram__bytes_read.sum"] == 0.0  # instances only: no value
    assert by_kernel.loc["instanced", "dram__bytes_write.sum"] == 6.0
    assert by_kernel.loc["uint64", "nvtx"] == "step | mylib@io/read"
    assert by_kernel.loc["float32", "nvtx"] == "epoch 1 | warmup | lib@load"


def test_launches_of_one_layout_encoded_otherwise_read_the_same(reportgen_mod: Any, realdata: Path,
                                                                tmp_path: Path) -> None:
    """The reader learns a layout's encodings from its first launch and reads later launches of
    that layout in bulk; a later launch whose values are encoded otherwise (an integer, a float,
    a two-byte integer where the first had a double or a one-byte integer) is read metric by metric."""
    rg = reportgen_mod
    names = ("gpu__time_duration.sum", "dram__bytes_read.sum", "launch__grid_size")
    values = [(1234.5, 1e9 / 3, 7), (99, rg.Float32(3.5e9), 300), (rg.Uint32(5), 2.0**60, 127)]
    launches = [rg.LaunchSpec(f"k{i}", metrics=dict(zip(names, v, strict=True))) for i, v in enumerate(values)]
    dst = tmp_path / "layouts.ncu-rep"
    rg.write_report(dst, launches, realdata / TEMPLATE, index=0)
    ours = native.load_native(dst)
    assert_same_frames(ours, load_ncu_rep(dst), dst)
    assert ours["gpu__time_duration.sum"].tolist() == pytest.approx([1234.5e-9, 99e-9, 5e-9], rel=1e-15)
    assert ours["dram__bytes_read.sum"].tolist() == [1e9 / 3, 3.5e9, 2.0**60]
    assert ours["launch__grid_size"].tolist() == [7.0, 300.0, 127.0]


def test_repeated_rule_results_get_their_own_records(realdata: Path, tmp_path: Path, reportgen_mod: Any) -> None:
    """Rule results repeated byte for byte are decoded and kept once, but every launch has its own records."""
    dst = tmp_path / "copies.ncu-rep"
    reportgen_mod.replicate(realdata / TEMPLATE, dst, 3, index=3)
    rules = native.load_native(dst).attrs["ncu_rule_results"]
    by_launch = {i: [r for r in rules if r["id"] == i] for i in range(3)}
    assert len(by_launch[0]) == 12 and len(rules) == 36
    assert [{**r, "id": 0} for r in by_launch[2]] == by_launch[0]
    assert len(rules.distinct) == 12
    by_launch[0][0]["message"] = "changed"  # a record handed out is the caller's own
    assert rules[0]["message"] != "changed"


def test_replicated_report_reads_the_same(reportgen_mod: Any, realdata: Path, tmp_path: Path) -> None:
    """Many copies of a full-set launch (with rule results), as the benchmark builds them."""
    src = realdata / "tkhenry-uofa__mixes-reconstruction/full_profile.ncu-rep"
    dst = tmp_path / "many.ncu-rep"
    reportgen_mod.replicate(src, dst, 20, index=1)
    assert_same_frames(native.load_native(dst), load_ncu_rep(dst), dst)


# --------------------------------------------------------------------------- parallel, progress, errors


def test_jobs_give_the_same_frames(kinds_report: Path, realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ncu_roof.read import parallel

    inputs = [kinds_report, realdata / "jonahshader__alife_cuda/profile_output.ncu-rep",
              realdata / "brycelelbach__nsightful/copy_blocked.csv", realdata / TEMPLATE]
    one = read_raw_frames(inputs, ReadOptions(jobs=1, quiet=True))
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_MIN_BYTES", 64 << 10)  # the 143-launch report in several chunks
    for jobs in (2, 3):
        many = read_raw_frames(inputs, ReadOptions(jobs=jobs, quiet=True))
        for a, b in zip(one, many, strict=True):
            pd.testing.assert_frame_equal(a, b)
            assert a.attrs["notes"] == b.attrs["notes"]
            ra, rb = a.attrs.get("ncu_rule_results", []), b.attrs.get("ncu_rule_results", [])
            assert len(ra) == len(rb)
            assert all(_same_value(x[k], y[k]) for x, y in zip(ra, rb, strict=True) for k in RULE_KEYS)


def test_the_table_is_the_same_with_either_reader(realdata: Path) -> None:
    from ncu_roof.read.table import load_table, table_text

    paths = [realdata / TEMPLATE, realdata / "NVIDIA__nsight-training/manual_nvtx.ncu-rep"]
    ours = table_text(load_table(paths, jobs=1), "csv")
    theirs = table_text(load_table(paths, reader="ncu_report", jobs=1), "csv")
    assert ours == theirs


def test_the_table_is_the_same_whatever_the_jobs(realdata: Path, kinds_report: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs normalized in the workers that read them give the table of one process."""
    from ncu_roof.read import parallel
    from ncu_roof.read.table import load_table, table_text

    paths = [realdata / TEMPLATE, kinds_report, realdata / "jonahshader__alife_cuda/profile_output.ncu-rep",
             realdata / "brycelelbach__nsightful/copy_blocked.csv", realdata / "NVIDIA__nsight-training"]
    one = load_table(paths, jobs=1)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    for jobs in (2, 4):
        many = load_table(paths, jobs=jobs)
        assert table_text(many, "csv") == table_text(one, "csv")
        assert repr(many.attrs) == repr(one.attrs)  # NaN speedups compare unequal; their repr does not


def _formatting_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row counts of the tables ``table_text`` formats from now on (reads in this process)."""
    from ncu_roof.read import table as table_module

    sizes: list[int] = []
    real = table_module.table_text

    def spy(table: pd.DataFrame, fmt: str) -> str:
        sizes.append(len(table))
        return real(table, fmt)

    monkeypatch.setattr(table_module, "table_text", spy)
    return sizes


def test_csv_formatted_per_input_is_the_whole_tables_csv(realdata: Path, kinds_report: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_table_csv`` (``ncu-roof table``'s CSV: each input's rows formatted where it was read,
    the texts joined) gives ``table_text(load_table(...))`` byte for byte, with any jobs; inputs that
    differ in columns, or kernels renamed after joining, make the parent format the whole table."""
    from ncu_roof.read import parallel
    from ncu_roof.read.table import load_table, load_table_csv, table_text

    alike = [tmp_path / "a.ncu-rep", tmp_path / "b.ncu-rep"]  # one layout: the texts are joined
    for copy in alike:
        copy.write_bytes((realdata / TEMPLATE).read_bytes())
    fused = Path(__file__).parents[2] / "fixtures" / "synthetic" / "synthetic_layernorm_fused_rtx5070.csv"
    for name, signature in (("f.csv", "void ln_fused_kernel<float>(float*)"),
                            ("d.csv", "void ln_fused_kernel<double>(double*)")):
        (tmp_path / name).write_text(fused.read_text().replace('"ln_fused_kernel"', f'"{signature}"'))
    renamed = [tmp_path / "f.csv", tmp_path / "d.csv"]  # one short name, two signatures: renamed after joining
    mixed = [realdata / TEMPLATE, kinds_report, realdata / "brycelelbach__nsightful/copy_blocked.csv"]
    for paths, joined in ((alike, True), (renamed, False), (mixed, False)):
        expected = table_text(load_table(paths, jobs=1), "csv")
        sizes = _formatting_spy(monkeypatch)
        table, text = load_table_csv(paths, jobs=1)
        assert text == expected
        assert (len(table) not in sizes) == joined, (paths, sizes)  # the whole table formatted only when needed
        monkeypatch.undo()
    assert "ln_fused_kernel<float>" in load_table_csv(renamed, jobs=1)[1]
    header_only = tmp_path / "h.csv"
    header_only.write_text('"ID","Kernel Name","gpu__time_duration.sum"\n')
    with pytest.raises(ReportLoadError, match=f"^{header_only} holds no kernel launches"):
        load_table_csv([realdata / TEMPLATE, header_only], jobs=1)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    for paths in (alike, renamed, mixed):
        assert load_table_csv(paths, jobs=2)[1] == table_text(load_table(paths, jobs=1), "csv")


def test_reads_without_ncu_report(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import ncu_report now fails
    frame = read_raw_frames([realdata / TEMPLATE], ReadOptions(jobs=1))[0]
    assert len(frame) == 5


class _Tty:
    def __init__(self, tty: bool) -> None:
        self.text, self.tty = "", tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


def test_progress_bar_only_on_a_terminal_after_a_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Progress, "DELAY", 0.0)
    monkeypatch.setattr(Progress, "EVERY", 0.0)
    tty = _Tty(True)
    bar = Progress(200_000_000, "reading big.ncu-rep", stream=tty)  # type: ignore[arg-type]
    bar.advance(50_000_000)
    assert "reading big.ncu-rep" in tty.text and "50/200 MB (25%)" in tty.text
    bar.close()
    assert tty.text.endswith("\r\033[K")
    for stream, enabled in ((_Tty(False), True), (_Tty(True), False)):
        quiet = Progress(100, "x", stream=stream, enabled=enabled)  # type: ignore[arg-type]
        quiet.advance(50)
        quiet.close()
        assert stream.text == ""
    monkeypatch.setattr(Progress, "DELAY", 60.0)
    late = _Tty(True)
    fast = Progress(100, "x", stream=late)  # type: ignore[arg-type]
    fast.advance(100)
    fast.close()
    assert late.text == ""  # reads that finish quickly draw nothing


def _rewrite(src: Path, dst: Path, change: Any) -> None:
    data = bytearray(src.read_bytes())
    change(data)
    dst.write_bytes(bytes(data))


def test_a_damaged_metric_name_in_a_report_is_said(realdata: Path, tmp_path: Path) -> None:
    """A name in the report's string table one edit from one the catalogue reads (same length, so
    the file stays valid): the quantity is unknown, and a note says the report lacks the metric."""
    src, dst = realdata / TEMPLATE, tmp_path / "damaged.ncu-rep"

    def damage(data: bytearray) -> None:
        at = data.index(b"dram__bytes_read.sum")
        data[at : at + 20] = b"dram__bytes_reXd.sum"

    _rewrite(src, dst, damage)
    raw = native.load_native(dst)
    assert "dram__bytes_read.sum" not in raw
    assert native.load_native(src)["dram__bytes_read.sum"].notna().all()
    assert raw.attrs["notes"] == ["metric dram__bytes_reXd.sum is not a metric ncu-roof reads; it looks like "
                                  "dram__bytes_read.sum (a damaged name?), which the input lacks: what "
                                  "dram__bytes_read.sum gives is unknown"]
    assert load_ncu_rep(dst).attrs["notes"] == raw.attrs["notes"]


def test_newer_format_version_is_read_with_a_note(realdata: Path, tmp_path: Path) -> None:
    src, dst = realdata / "NVIDIA__nsight-training/CuVectorAddDrv.ncu-rep", tmp_path / "v9.ncu-rep"

    def bump(data: bytearray) -> None:
        assert data[8:10] == b"\x08\x07"  # FileHeader { Version: 7 }
        data[9] = 9

    _rewrite(src, dst, bump)
    frame = native.load_native(dst)
    assert len(frame) == 1
    (note,) = frame.attrs["notes"]
    assert "format version 9 is newer" in note and "--reader ncu_report" in note


def test_undecodable_launch_names_the_other_reader(realdata: Path, tmp_path: Path) -> None:
    src, dst = realdata / "NVIDIA__nsight-training/CuVectorAddDrv.ncu-rep", tmp_path / "bad.ncu-rep"
    (launch,) = native_index.index(src.read_bytes(), src.stat().st_size, src).launches

    def garble(data: bytearray) -> None:
        data[launch.offset : launch.offset + 16] = b"\xff" * 16  # not protobuf

    _rewrite(src, dst, garble)
    with pytest.raises(ReportLoadError, match="--reader ncu_report"):
        native.load_native(dst)


def test_cli_undecodable_is_one_line_and_exit_2(realdata: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from ncu_roof.cli import main

    src, dst = realdata / "NVIDIA__nsight-training/CuVectorAddDrv.ncu-rep", tmp_path / "bad.ncu-rep"
    (launch,) = native_index.index(src.read_bytes(), src.stat().st_size, src).launches
    _rewrite(src, dst, lambda d: d.__setitem__(slice(launch.offset, launch.offset + 16), b"\xff" * 16))
    with pytest.raises(SystemExit) as exit_info:
        main(["table", str(dst), "--quiet"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reader ncu_report" in err[0]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main(["table", str(src), "--reader", "ncu_report", "-j", "1"])
        assert exit_info.value.code == 0
    finally:
        set_options(reader="native", jobs=None, quiet=False)
    assert "VecAdd_kernel" in capsys.readouterr().out


@pytest.mark.parametrize("cut", [3, 100, -7])
def test_truncated_reports_are_refused(realdata: Path, tmp_path: Path, cut: int) -> None:
    src = realdata / "NVIDIA__nsight-training/manual_nvtx.ncu-rep"
    dst = tmp_path / "cut.ncu-rep"
    data = src.read_bytes()
    dst.write_bytes(data[:cut])
    with pytest.raises(ReportLoadError, match="truncated|not an Nsight Compute report"):
        read_raw_frames([dst], ReadOptions(jobs=1))
