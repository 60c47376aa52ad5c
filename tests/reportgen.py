"""Read and write Nsight Compute ``.ncu-rep`` files for tests, with the schemas ncu ships.

Nsight Compute describes its report format in protobuf schemas
(``usr/lib/nsight-compute/extras/FileFormat/*.proto``). They are NVIDIA's files, so nothing
generated from them is committed: :func:`proto_modules` runs ``grpc_tools.protoc`` on them at
test time into a git-ignored cache (``tests/_generated/<hash>/``) and imports the result.

File layout: ``b"NVR\\0"``; a uint32-LE length and a ``FileHeader``; then blocks, each a
length-prefixed ``BlockHeader`` followed by ``PayloadSize`` bytes holding ``NumSources``
``SourceData``, ``NumResults`` ``ProfileResult`` (one per launch), ``NumRangeResults``
``RangeResult``, ``NumCmdlistResults`` ``CmdlistResult`` and ``NumGraphResults`` ``GraphResult``
messages, each length-prefixed the same way. Metric names live in the string table of the
process's first result block; ``MetricResults`` refer to them by ``NameId``.

Builders:

- :func:`replicate` copies one launch of a real report *n* times (large reports for benchmarks);
- :func:`write_report` writes launches with chosen kernel names, metric values, device name and
  NVTX push/pop ranges on top of a real report's launch (small reports with known numbers).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

MAGIC = b"NVR\0"
PACKAGE = "_ncu_rep_pb"  # top-level package the generated modules live in
GENERATED = Path(__file__).resolve().parent / "_generated"
DEFAULT_DOMAIN = "<default domain>"
_LEN = struct.Struct("<I")
# folder of each schema that no other schema imports (the others' folders come from imports)
_ROOT_FOLDERS = {"ProfilerReport.proto": "ProfilerReport"}
_IMPORT = re.compile(r'^(\s*import\s+")([^"]+)(";)', re.MULTILINE)
_loaded: dict[str, SimpleNamespace] = {}

Message = Any  # a generated protobuf message (the classes exist only at run time)


@dataclass(frozen=True)
class Float32:
    """A metric value stored as ``FloatValue`` (single precision)."""

    value: float


@dataclass(frozen=True)
class Uint32:
    """A metric value stored as ``Uint32Value``."""

    value: int


@dataclass(frozen=True)
class Instanced:
    """A metric with per-instance values (``MetricValueList``) and, unless None, an aggregate."""

    value: float | int | str | Float32 | Uint32 | None
    instances: tuple[float | int | str, ...] = ()


Value = float | int | str | Float32 | Uint32 | Instanced


# --------------------------------------------------------------------------- schemas


def default_format_dir() -> Path:
    """``extras/FileFormat`` of the ncu ``tests/ncu_cache.py`` unpacks (``NCU_ROOF_NCU_DIR``), once
    the unpack is whole: it waits for another process that is unpacking it, or unpacks it."""
    from ncu_cache import FILE_FORMAT, unpacked_ncu

    unpacked_ncu()
    return FILE_FORMAT


def _proto_files(format_dir: Path) -> dict[str, Path]:
    """Schema files by their import path (``Nvtx/Nvtx.proto``), folders derived from imports."""
    files = sorted(format_dir.rglob("*.proto"))
    if not files:
        raise FileNotFoundError(f"no .proto files under {format_dir}")
    if any(f.parent != format_dir for f in files):  # already laid out in import folders
        return {f.relative_to(format_dir).as_posix(): f for f in files}
    folder = dict(_ROOT_FOLDERS)
    for f in files:
        for _, imp, _ in _IMPORT.findall(f.read_text()):
            parts = imp.split("/")
            folder[parts[-1]] = "/".join(parts[:-1])
    missing = [f.name for f in files if f.name not in folder]
    if missing:
        raise ValueError(f"cannot tell the import folder of {missing}")
    return {f"{folder[f.name]}/{f.name}": f for f in files}


def _build(files: dict[str, Path], out: Path) -> None:
    """Stage the schemas under ``PACKAGE/`` (imports prefixed to match) and run protoc."""
    stage = out.parent / (out.name + ".stage")
    for rel, src in files.items():
        dst = stage / PACKAGE / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(_IMPORT.sub(rf'\g<1>{PACKAGE}/\g<2>\g<3>', src.read_text()))
    if importlib.util.find_spec("grpc_tools") is None:
        raise ImportError("compiling ncu's schemas needs grpcio-tools: pip install grpcio-tools")
    out.mkdir(parents=True)
    cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{stage}", f"--python_out={out}"]
    cmd += [f"{PACKAGE}/{rel}" for rel in files]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"protoc failed on {stage}: {done.stderr.strip()}")
    shutil.rmtree(stage)


def proto_modules(format_dir: Path | None = None, cache: Path = GENERATED) -> SimpleNamespace:
    """Generate (once, cached by the schemas' hash) and import Python modules for the schemas.

    Returns a namespace with every message and enum by its short name (``pb.ProfileResult``,
    ``pb.NvtxState``...) and ``pb.modules`` (import path -> module). One schema set per process.
    """
    files = _proto_files(format_dir or default_format_dir())
    digest = hashlib.sha256(b"".join(k.encode() + p.read_bytes() for k, p in files.items()))
    key = digest.hexdigest()[:16]
    if key in _loaded:
        return _loaded[key]
    if _loaded:
        raise RuntimeError("another set of ncu schemas is already loaded in this process")
    root = cache / key
    if not root.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache))
        try:
            _build(files, tmp / "out")
            (tmp / "out").rename(root)
        except OSError:  # built concurrently by another process
            if not root.is_dir():
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.path.insert(0, str(root))
    ns = SimpleNamespace(modules={})
    for rel in files:
        name = f"{PACKAGE}.{rel[: -len('.proto')].replace('/', '.')}_pb2"
        mod = importlib.import_module(name)
        ns.modules[rel] = mod
        for short in (*mod.DESCRIPTOR.message_types_by_name, *mod.DESCRIPTOR.enum_types_by_name):
            setattr(ns, short, getattr(mod, short))
    _loaded[key] = ns
    return ns


# --------------------------------------------------------------------------- reading and writing

# payload sections of a block: (BlockHeader count field, message name, Block attribute)
_PAYLOAD = (
    ("NumSources", "SourceData", "sources"),
    ("NumResults", "ProfileResult", "results"),
    ("NumRangeResults", "RangeResult", "ranges"),
    ("NumCmdlistResults", "CmdlistResult", "cmdlists"),
    ("NumGraphResults", "GraphResult", "graphs"),
)


@dataclass
class Block:
    """One block: its header and the messages of its payload (messages or their bytes)."""

    header: Message
    sources: list[Message] = field(default_factory=list)
    results: list[Message] = field(default_factory=list)
    ranges: list[Message] = field(default_factory=list)
    cmdlists: list[Message] = field(default_factory=list)
    graphs: list[Message] = field(default_factory=list)


@dataclass
class Report:
    """A whole report: the ``FileHeader`` and the blocks in file order."""

    header: Message
    blocks: list[Block]

    def results(self) -> Iterator[Message]:
        """Every ``ProfileResult`` (one per launch) in file order."""
        for block in self.blocks:
            yield from block.results


def _parse(data: bytes, pos: int, cls: type) -> tuple[Message, int]:
    (n,) = _LEN.unpack_from(data, pos)
    end = pos + 4 + n
    if end > len(data):
        raise ValueError(f"truncated {cls.__name__} at byte {pos}")
    msg = cls()
    msg.ParseFromString(data[pos + 4 : end])
    return msg, end


def parse_report(data: bytes, pb: SimpleNamespace) -> Report:
    """Parse the bytes of a report; raise ``ValueError`` where they are not one."""
    if data[:4] != MAGIC:
        raise ValueError("not an ncu report: bad magic")
    header, pos = _parse(data, 4, pb.FileHeader)
    blocks = []
    while pos < len(data):
        bh, pos = _parse(data, pos, pb.BlockHeader)
        block, end = Block(bh), pos + bh.PayloadSize
        for count, cls, attr in _PAYLOAD:
            items = getattr(block, attr)
            for _ in range(getattr(bh, count)):
                msg, pos = _parse(data, pos, getattr(pb, cls))
                items.append(msg)
        if pos != end:
            raise ValueError(f"block payload ends at {pos}, header says {end}")
        blocks.append(block)
    return Report(header, blocks)


def read_report(path: Path, pb: SimpleNamespace | None = None) -> Report:
    """Read a ``.ncu-rep`` file."""
    return parse_report(Path(path).read_bytes(), pb or proto_modules())


def _framed(msg: Message | bytes) -> bytes:
    body = msg if isinstance(msg, bytes) else msg.SerializeToString()
    return _LEN.pack(len(body)) + body


def encode_block(block: Block) -> bytes:
    """A block as bytes; the header's counts and ``PayloadSize`` are set from the payload."""
    header, parts = block.header, []
    for count, _, attr in _PAYLOAD:
        items = getattr(block, attr)
        if items or header.HasField(count):
            setattr(header, count, len(items))
        parts.extend(_framed(m) for m in items)
    payload = b"".join(parts)
    header.PayloadSize = len(payload)
    return _framed(header) + payload


def write_blocks(out: IO[bytes], header: Message, blocks: Iterable[Block]) -> None:
    """Stream a report (file header, then blocks as they come) to a binary file."""
    out.write(MAGIC + _framed(header))
    for block in blocks:
        out.write(encode_block(block))


def encode_report(report: Report) -> bytes:
    """A report as bytes (``encode_report(parse_report(b)) == b`` for ncu's own files)."""
    return MAGIC + _framed(report.header) + b"".join(encode_block(b) for b in report.blocks)


def save_report(report: Report, dst: Path) -> None:
    """Write a report to ``dst``."""
    with Path(dst).open("wb") as out:
        write_blocks(out, report.header, report.blocks)


# --------------------------------------------------------------------------- builders


def _result_block(home: Block, pb: SimpleNamespace, result: Message) -> Block:
    """A block holding one launch, shaped like ncu's own (process, no string table)."""
    header = pb.BlockHeader(NumSources=0)
    if home.header.HasField("Process"):
        header.Process.CopyFrom(home.header.Process)
    return Block(header, results=[result])


def _process(block: Block) -> Message | None:
    return block.header.Process if block.header.HasField("Process") else None


def _pick(report: Report, index: int) -> tuple[Message, Block]:
    """Launch ``index`` and the block that will hold the first launch written: the first result
    block of the same process, which holds the process's string table in ncu's files."""
    seen = 0
    for block in report.blocks:
        if index < seen + len(block.results):
            home = next(b for b in report.blocks if b.results and _process(b) == _process(block))
            return block.results[index - seen], home
        seen += len(block.results)
    raise IndexError(f"report has {seen} launches, no launch {index}")


def _relaunch(report: Report, pb: SimpleNamespace, home: Block, launches: Iterable[Message]
              ) -> Iterator[Block]:
    """The report's blocks with all launches replaced by ``launches``.

    The first launch goes into ``home``; blocks left with nothing are dropped; the other
    launches follow at the end, one block each, as ncu writes them.
    """
    it = iter(launches)
    for block in report.blocks:
        if block is home:
            block.results = [next(it)]
        elif block.results:
            block.results = []
            h = block.header
            if not (block.sources or block.ranges or block.cmdlists or block.graphs
                    or h.HasField("SessionDetails") or h.HasField("StringTable")):
                continue
        yield block
    for result in it:
        yield _result_block(home, pb, result)


def _string_table(home: Block) -> Message:
    """The string table of the launches' block (metric names by ``NameId``)."""
    if not home.header.HasField("StringTable"):
        raise ValueError("the first result block of the template has no string table")
    return home.header.StringTable


def replicate(
    src: Path, dst: Path, n: int, *, index: int = 0, pb: SimpleNamespace | None = None
) -> None:
    """Write an ``n``-launch report: launch ``index`` of ``src`` copied ``n`` times.

    Copy *i* gets ``KernelID`` and ``APICallID`` of the original plus *i*; everything else
    (metrics, sections, NVTX, source) is the original's. Other launches of ``src`` are left out.
    Streams to disk, so memory stays at one launch whatever ``n``.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    pb = pb or proto_modules()
    report = read_report(src, pb)
    result, home = _pick(report, index)
    kernel_id, api_id = result.KernelID, result.APICallID

    def copies() -> Iterator[bytes]:
        for i in range(n):
            result.KernelID, result.APICallID = kernel_id + i, api_id + i
            yield result.SerializeToString()

    with Path(dst).open("wb") as out:
        write_blocks(out, report.header, _relaunch(report, pb, home, copies()))


@dataclass
class LaunchSpec:
    """One launch for :func:`write_report`.

    ``metrics`` set or override metrics by ncu name: ``float`` -> double, ``int`` -> uint64,
    ``str`` -> string, stored as given in the units ncu stores (ns for ``gpu__time_duration.sum``,
    bytes, counts). Metrics not named keep the template's values (including derived ones such as
    ``.per_second`` forms: nothing is recomputed).
    ``device`` sets ``device__attribute_display_name`` (and the session's device name where all
    launches agree); compute capability and the other device attributes stay the template's.
    ``nvtx_start_end`` gives nvtxRangeStart/End ranges open at the launch, by domain name.
    ``nvtx`` is the push/pop stack (outermost first) in the default domain; ``nvtx_domains``
    gives stacks in named domains.
    """

    kernel: str
    metrics: Mapping[str, Value] = field(default_factory=dict)
    nvtx: Sequence[str] = ()
    nvtx_domains: Mapping[str, Sequence[str]] = field(default_factory=dict)
    nvtx_start_end: Mapping[str, Sequence[str]] = field(default_factory=dict)
    device: str | None = None
    demangled: str | None = None
    mangled: str | None = None


class _Names:
    """Name -> ``NameId`` over a block string table, appending names it lacks."""

    def __init__(self, table: Message) -> None:
        self.table = table
        self.ids = {s: i for i, s in enumerate(table.Strings)}

    def __call__(self, name: str) -> int:
        if name not in self.ids:
            self.ids[name] = len(self.table.Strings)
            self.table.Strings.append(name)
        return self.ids[name]


def _set_value(value_msg: Message, value: Value) -> None:
    value_msg.Clear()
    if isinstance(value, Float32):
        value_msg.FloatValue = value.value
        return
    if isinstance(value, Uint32):
        value_msg.Uint32Value = value.value
        return
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"metric value must be float, int or str, not {type(value).__name__}")
    if isinstance(value, str):
        value_msg.StringValue = value
    elif isinstance(value, int):
        value_msg.Uint64Value = value
    else:
        value_msg.DoubleValue = value


def _set_metrics(result: Message, values: Mapping[str, Value], name_id: _Names) -> None:
    """Override or add metrics of a ``ProfileResult``."""
    by_id = {m.NameId: m for m in result.MetricResults}
    for name, value in values.items():
        nid = name_id(name)
        metric = by_id.get(nid)
        if metric is None:
            metric = result.MetricResults.add(NameId=nid)
        metric.ClearField("MetricValueList")
        if isinstance(value, Instanced):
            for instance in value.instances:
                _set_value(metric.MetricValueList.add().ElementValue, instance)
            if value.value is None:
                metric.ClearField("MetricValue")
            else:
                _set_value(metric.MetricValue, value.value)
            continue
        _set_value(metric.MetricValue, value)


def _nvtx_range(pb: SimpleNamespace, name: str, last_api_call: int) -> Message:
    """A push/pop range as ncu records it (ASCII message, ARGB colour, no payload)."""
    attrs = pb.NvtxEventAttributes(Version=2, Category=0)
    attrs.Color.ColorType = pb.NvtxColorType.NvtxColorTypeArgb
    attrs.Color.Color = 0xFF00FF00
    attrs.Payload.PayloadType = pb.NvtxPayloadType.NvtxPayloadTypeUnknown
    attrs.Message.MessageType = pb.NvtxMessageType.NvtxMessageTypeAscii
    attrs.Message.message = name
    return pb.NvtxPushPopRange(Name=name, Attributes=attrs, LastApiCallId=last_api_call)


def nvtx_state(
    pb: SimpleNamespace, tid: int, stacks: Mapping[str, Sequence[str]], api_call: int,
    start_end: Mapping[str, Sequence[str]] | None = None,
) -> Message:
    """An ``NvtxState`` with push/pop ``stacks`` and nvtxRangeStart/End ranges ``start_end`` by
    domain name (``DEFAULT_DOMAIN`` is id 0)."""
    start_end = start_end or {}
    names = [DEFAULT_DOMAIN] + sorted({*stacks, *start_end} - {DEFAULT_DOMAIN})
    state = pb.NvtxState(DefaultDomain=0)
    thread = state.Threads.add(TID=tid)
    for i, domain in enumerate(names):
        state.Domains.add(Id=i, Name=domain)
        ranges = stacks.get(domain, ())
        if ranges:
            stack = [_nvtx_range(pb, r, api_call - 1) for r in ranges]
            thread.PushPopDomains.add(Id=i, Stack=stack)
        domain_ranges = state.StartEndDomains.add(Id=i)
        for n, name in enumerate(start_end.get(domain, ())):
            attrs = _nvtx_range(pb, name, api_call - 1).Attributes
            domain_ranges.Ranges.add(Id=n + 1, Name=name, Attributes=attrs, LastApiCallId=api_call - 1,
                                     StartTID=tid)
    return state


def _launch(pb: SimpleNamespace, base: bytes, spec: LaunchSpec, i: int, names: _Names) -> Message:
    """The template launch (serialized ``base``) turned into ``spec`` as launch number ``i``."""
    result = pb.ProfileResult.FromString(base)
    result.KernelID += i
    result.APICallID += i
    result.KernelFunctionName = spec.kernel
    result.KernelMangledName = spec.kernel if spec.mangled is None else spec.mangled
    result.KernelDemangledName = spec.kernel if spec.demangled is None else spec.demangled
    values = dict(spec.metrics)
    if spec.device is not None:
        values["device__attribute_display_name"] = spec.device
    _set_metrics(result, values, names)
    stacks = {DEFAULT_DOMAIN: spec.nvtx, **spec.nvtx_domains}
    if any(stacks.values()) or any(spec.nvtx_start_end.values()):
        result.Nvtx.CopyFrom(nvtx_state(pb, result.ThreadID, stacks, result.APICallID, spec.nvtx_start_end))
    else:
        result.ClearField("Nvtx")
    return result


def _session_fixups(report: Report, launches: Sequence[LaunchSpec]) -> None:
    """Enable NVTX in the profiler settings if used; rename the device if all launches agree."""
    devices = {s.device for s in launches if s.device is not None}
    nvtx = any(s.nvtx or any(s.nvtx_domains.values()) or any(s.nvtx_start_end.values()) for s in launches)
    for block in report.blocks:
        if not block.header.HasField("SessionDetails"):
            continue
        details = block.header.SessionDetails
        if nvtx and details.HasField("ProfilerSettings"):
            details.ProfilerSettings.EnableNvtx = True
        if len(devices) == 1:
            for attrs in details.DeviceAttributes:
                attrs.Name = next(iter(devices))


def write_report(
    dst: Path,
    launches: Sequence[LaunchSpec],
    template: Path,
    *,
    index: int = 0,
    keep: Callable[[str], bool] | None = None,
    pb: SimpleNamespace | None = None,
) -> None:
    """Write a report of ``launches``, each built on launch ``index`` of ``template``.

    Each launch starts as a copy of the template launch (all its metrics, sections, device
    attributes), gets the spec's names, metrics and NVTX stacks, and ``KernelID``/``APICallID``
    of the template plus its position. ``keep`` (metric name -> bool) drops template metrics
    it rejects before the spec's metrics are applied. New metric names go into the string table.
    """
    if not launches:
        raise ValueError("at least one launch is needed")
    pb = pb or proto_modules()
    report = read_report(template, pb)
    base, home = _pick(report, index)
    names = _Names(_string_table(home))
    if keep is not None:
        kept = [m for m in base.MetricResults if keep(names.table.Strings[m.NameId])]
        del base.MetricResults[:]
        base.MetricResults.extend(kept)
    raw = base.SerializeToString()
    results = [_launch(pb, raw, spec, i, names) for i, spec in enumerate(launches)]
    _session_fixups(report, launches)
    with Path(dst).open("wb") as out:
        write_blocks(out, report.header, _relaunch(report, pb, home, results))
