"""The native reader's shortcuts read what the protobuf package reads: block headers read by hand
(and a header repeated from the last block), and a gathered launch's bytes around its metrics read
in two parts (the tail decoded once for launches that end alike). Each shortcut is checked against
the decoding it stands in for, including the inputs where it must step aside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ncu_roof.read import native
from ncu_roof.read.native import blocks, values
from ncu_roof.read.native.launch import RuleColumns
from ncu_roof.read.native.wire import schema

TEMPLATE = "NCAR__GPU_workshop/MW_Baseline.ncu-rep"


def _header(**fields: Any) -> bytes:
    pb = schema()
    header = pb.BlockHeader(**{k: v for k, v in fields.items() if k != "Process"})
    if "Process" in fields:
        header.Process.CopyFrom(pb.ProcessInfo(**fields["Process"]))
    return header.SerializeToString()


def test_a_plain_header_reads_as_the_protobuf_package_reads_it() -> None:
    data = _header(NumSources=2, NumResults=3, PayloadSize=210_127, NumGraphResults=1,
                   Process={"ProcessID": 4242, "Hostname": "node7", "ProcessName": "/opt/app"})
    processes: dict[bytes, Any] = {}
    got = blocks._plain_header(data, processes)
    assert got == (2, 210_127, (4242, "node7", "/opt/app"), (3, 0, 0, 1), None, None)
    assert len(processes) == 1  # the process decoded once, for the next blocks
    again = blocks._plain_header(data, processes)
    assert again is not None and again[2] is got[2]
    assert blocks._plain_header(_header(NumResults=1, PayloadSize=9), {}) == (0, 9, None, (1, 0, 0, 0), None, None)


@pytest.mark.parametrize("data", [
    _header(NumResults=1, PayloadSize=10) + _header(NumResults=2),  # a field twice: the last wins, left to protobuf
    _header(NumResults=1, StringTable=schema().StringTable(Strings=["a__b"])),  # a string table
    _header(NumResults=1, SessionDetails=schema().SessionDetails(ProfilerCmdline="ncu x")),
    b"\x10\x81\x80\x80\x80\x80\x00",  # NumResults as a 7-byte varint (protobuf truncates or refuses it)
    b"\x10\x80\x80\x80\x80\x10",  # 2**32: not a uint32
    b"\x10",  # cut short
    b"\x58\x01",  # a field this reader does not name (11)
], ids=["twice", "strings", "session", "long-varint", "too-big", "cut", "unknown"])
def test_any_other_header_is_left_to_the_protobuf_package(data: bytes) -> None:
    assert blocks._plain_header(data, {}) is None


def test_the_walk_finds_what_the_protobuf_walk_finds(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every real report (blocks of many results, string tables, sessions) and a report of repeated
    blocks: the same launches, tables, counts and session as with every header decoded by protobuf."""
    reports = sorted(realdata.glob("*/*.ncu-rep"))[:25]
    assert len(reports) >= 10

    def walk(path: Path) -> Any:
        with path.open("rb") as fh:
            return blocks.index(blocks.FileBytes(fh.fileno(), path.stat().st_size), path.stat().st_size, path)

    fast = [walk(p) for p in reports]
    calls = []
    monkeypatch.setattr(blocks, "_plain_header", lambda data, processes: calls.append(data))
    slow = [walk(p) for p in reports]
    assert calls  # the shortcut was asked, and declined every header
    for path, a, b in zip(reports, fast, slow, strict=True):
        assert a.launches == b.launches and a.tables == b.tables, path
        assert (a.declared, a.left_out, a.sources, a.version) == (b.declared, b.left_out, b.sources, b.version), path
        assert a.session.SerializeToString() == b.session.SerializeToString(), path


def _reader() -> values.Reader:
    return values.Reader(-1, "r.ncu-rep", {}, RuleColumns())


def _result(**fields: Any) -> bytes:
    return schema().ProfileResult(**fields).SerializeToString()


def test_the_bytes_around_the_metrics_read_as_one_message() -> None:
    reader = _reader()
    rule = b"\x0a\x03abc"
    head = _result(ThreadID=7, KernelFunctionName="k", KernelMangledName="_Z1kv")
    tail = _result(RuleResults=[rule, rule + b"d"], Nvtx=b"\x22\x00")
    got = reader._rest(head, tail)
    assert got == (7, ("k", "_Z1kv", ""), b"\x22\x00", [rule, rule + b"d"])
    again = reader._rest(_result(ThreadID=8, KernelFunctionName="k2"), tail)  # the same tail: decoded once
    assert again is not None and again[:2] == (8, ("k2", "", "")) and again[3] is got[3]


@pytest.mark.parametrize(("head", "tail"), [
    (_result(KernelFunctionName="first"), _result(KernelFunctionName="last", RuleResults=[b"\x0a\x01x"])),
    (_result(ThreadID=1, RuleResults=[b"\x0a\x01a"]), _result(RuleResults=[b"\x0a\x01b"], ThreadID=2)),
    (_result(Nvtx=b"\x22\x00"), _result(KernelMangledName="m")),
], ids=["name-in-tail", "rules-both-sides", "nvtx-in-head"])
def test_a_field_on_both_sides_reads_as_the_whole_message_reads(head: bytes, tail: bytes) -> None:
    whole = schema().ProfileResult.FromString(head + tail)
    got = _reader()._rest(head, tail)
    assert got == (whole.ThreadID, (whole.KernelFunctionName, whole.KernelMangledName, whole.KernelDemangledName),
                   whole.Nvtx if whole.HasField("Nvtx") else None, list(whole.RuleResults))


def test_metrics_beside_the_run_or_damage_are_not_gathered() -> None:
    metric = schema().ProfileResult(MetricResults=[b"\x08\x01"]).SerializeToString()
    assert _reader()._rest(b"", metric) is None
    assert _reader()._rest(metric, b"") is None
    assert _reader()._rest(b"\x0a\xff", b"") is None  # a name running past the end


def test_rule_results_of_a_repeated_list_are_counted_per_launch() -> None:
    rules = RuleColumns()
    pb = schema()
    body = pb.RuleResultBody(Items=[pb.RuleResultBodyItem(Message=pb.RuleResultMessage(Message="m", Type=4))])
    encoded = [pb.RuleResult(Identifier="R", Body=body).SerializeToString()]
    for launch_id in (3, 4, 5):
        rules.add(launch_id, encoded)  # the same list object each time
    got = rules.results()
    assert list(got.ids) == [3, 4, 5] and list(got.which) == [0, 0, 0] and len(got.distinct) == 1


def test_copies_of_a_launch_read_as_launches_decoded_alone(reportgen_mod: Any, realdata: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's report in small: every launch's tail repeats, every block header repeats."""
    dst = tmp_path / "copies.ncu-rep"
    reportgen_mod.replicate(realdata / TEMPLATE, dst, 40, index=3)
    ours = native.load_native(dst)
    with monkeypatch.context() as m:
        m.setattr(values, "plan", lambda *args: None)
        m.setattr(blocks, "_plain_header", lambda data, processes: None)
        alone = native.load_native(dst)
    assert len(ours) == 40 and ours["id"].tolist() == list(range(40))
    assert ours.equals(alone) and list(ours.columns) == list(alone.columns)
    assert repr(list(ours.attrs["ncu_rule_results"])) == repr(list(alone.attrs["ncu_rule_results"]))
    assert len(list(ours.attrs["ncu_rule_results"])) > 40


def test_a_block_of_one_launch_is_found_as_the_walk_finds_it(reportgen_mod: Any, realdata: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks that repeat the last header and hold one launch are taken at once (``_one_launch``):
    the same launches, tables and counts as walking them, and the same error where the file ends
    inside a block, its header, a launch's length or the launch itself, or where a launch's length
    runs past its block."""
    dst = tmp_path / "copies.ncu-rep"
    reportgen_mod.replicate(realdata / TEMPLATE, dst, 12, index=3)
    whole = dst.read_bytes()

    def walk(path: Path) -> Any:
        try:
            with path.open("rb") as fh:
                found = blocks.index(blocks.FileBytes(fh.fileno(), path.stat().st_size), path.stat().st_size, path)
        except Exception as exc:  # noqa: BLE001 - the error itself is compared
            return type(exc).__name__, str(exc)
        return found.launches, found.tables, found.declared, found.left_out, found.sources, found.version

    taken = []
    original = blocks._one_launch
    monkeypatch.setattr(blocks, "_one_launch", lambda *args: taken.append(original(*args)) or taken[-1])
    last = walk(dst)[0][-1]
    cuts = [len(whole), last.offset + last.size - 1, last.offset - 2, last.offset - 6, last.offset - 40]
    variants = [whole[:cut] for cut in cuts]
    for grown in (1, 1000):  # a launch's length past its block's end, the file whole
        length = (last.size + grown).to_bytes(4, "little")
        variants.append(whole[: last.offset - 4] + length + whole[last.offset :])
    fast = []
    for i, data in enumerate(variants):
        (tmp_path / f"cut{i}.ncu-rep").write_bytes(data)
        fast.append(walk(tmp_path / f"cut{i}.ncu-rep"))
    assert sum(t is not None for t in taken) >= 10  # the repeated blocks were taken at once
    monkeypatch.setattr(blocks, "_one_launch", lambda *args: None)
    for i, got in enumerate(fast):
        assert got == walk(tmp_path / f"cut{i}.ncu-rep"), i
