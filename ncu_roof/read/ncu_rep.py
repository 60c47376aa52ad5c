"""Read ``.ncu-rep`` files with NVIDIA's ``ncu_report`` module into the raw launch frame.

Only the metrics the catalogue can use are read (``metrics.is_needed``), and each value is
scaled to base units once per metric name. ``ncu_report`` returns an empty or shortened report,
without complaint, for files that are not reports or are truncated; :func:`check_container`
walks the file's block structure first so that such files are reported, not half-read.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ncu_roof.errors import ReportLoadError
from ncu_roof.read import metrics
from ncu_roof.read.compressed import uncompressed
from ncu_roof.read.frame import WORKLOAD_KINDS, as_workload_row
from ncu_roof.read.native.wire import skip_field, varint
from ncu_roof.read.ncu_rules import RuleResults, from_rep_dict
from ncu_roof.read.units import UnknownUnit, factor

MAGIC = b"NVR\x00"


def _top_level_varints(msg: bytes) -> dict[int, int]:
    """Top-level varint fields of a protobuf message (enough to read a BlockHeader's sizes)."""
    fields: dict[int, int] = {}
    pos = 0
    try:
        while pos < len(msg):
            key, pos = varint(msg, pos)
            if key & 7 == 0:
                fields[key >> 3], pos = varint(msg, pos)
            else:
                pos = skip_field(msg, pos, key & 7)
    except IndexError:  # a varint running past the end
        raise ValueError("truncated varint") from None
    return fields


def check_container(path: Path) -> int:
    """Walk the report's blocks (headers only, seeking over payloads); return the launches it declares.

    Raises ReportLoadError for a file that is not a report or is cut short.
    """
    size = path.stat().st_size
    if size == 0:
        raise ReportLoadError(f"{path} is empty: re-export the report (ncu --export {path.stem} ...)")
    with path.open("rb") as fh:
        if fh.read(4) != MAGIC:
            raise ReportLoadError(
                f"{path} is not an Nsight Compute report (no NVR header): pass a .ncu-rep written by "
                "ncu --export, or a CSV export"
            )
        try:
            return _count_results(fh, size)
        except (ValueError, struct.error) as exc:
            raise ReportLoadError(
                f"{path} is truncated or damaged ({exc}): copy the complete file again or re-run ncu"
            ) from None


def _count_results(fh: BinaryIO, size: int) -> int:
    (header_len,) = struct.unpack("<I", fh.read(4))
    pos = 8 + header_len
    results = 0
    while pos < size:
        fh.seek(pos)
        (block_len,) = struct.unpack("<I", fh.read(4))
        header = fh.read(block_len)
        if len(header) < block_len:
            raise ValueError("block header cut short")
        fields = _top_level_varints(header)
        pos += 4 + block_len + fields.get(5, 0)
        if pos > size:
            raise ValueError("block payload cut short")
        results += fields.get(2, 0)
    return results


def _ncu_python_dirs() -> list[Path]:
    """``extras/python`` folders of the Nsight Compute installs here (they hold ``ncu_report``)."""
    import glob
    import os

    from ncu_roof.ncu_install import NCU_GLOBS, find_ncu

    roots: list[Path] = []
    try:
        roots.append(find_ncu(None, os.environ).resolve().parent)
    except Exception:  # noqa: BLE001 - no ncu here: try the usual folders
        pass
    for pattern in (*NCU_GLOBS, "/usr/local/cuda*/nsight-compute*/ncu", "/opt/nvidia/nsight-compute/*/ncu"):
        roots += [Path(hit).resolve().parent for hit in sorted(glob.glob(pattern), reverse=True)]  # noqa: PTH207
    found: list[Path] = []
    for root in roots:
        for cand in (root / "extras" / "python", root.parent / "extras" / "python"):
            if (cand / "ncu_report.py").is_file() and cand not in found:
                found.append(cand)
    return found


def _import_ncu_report() -> Any:
    try:
        import ncu_report  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        return ncu_report
    import sys

    for folder in _ncu_python_dirs():  # the copy that ships with ncu (GPU machines without the wheel)
        sys.path.insert(0, str(folder))
        try:
            import ncu_report
        except ImportError:
            sys.path.remove(str(folder))
            continue
        return ncu_report
    raise ReportLoadError(
        "reading .ncu-rep needs NVIDIA's ncu_report module: pip install ncu-report "
        "(or export a CSV with: ncu --import R.ncu-rep --csv --page raw > R.csv)"
    )


def _nvtx_path(action: Any) -> Any:
    """NVTX ranges around a launch: the push/pop stack ``outer/inner`` of each domain, then each
    start/end range on its own (they do not nest), all joined with ``" | "``."""
    state = action.nvtx_state()
    if state is None:
        return None
    parts = []
    for domain_id in state.domains():
        info = state.domain_by_id(domain_id)
        name = info.name()
        prefix = "" if not name or name == "<default domain>" else f"{name}@"
        stack = list(info.push_pop_ranges())
        if stack:
            parts.append(prefix + "/".join(stack))
        parts.extend(prefix + str(r) for r in info.start_end_ranges())
    return " | ".join(parts) if parts else None


def _wanted_names(action: Any) -> list[str]:
    return [n for n in action.metric_names() if metrics.is_needed(n) and n not in metrics.STRING_METRICS]


def _string(action: Any, name: str) -> str | None:
    m = action.metric_by_name(name)
    return None if m is None else m.as_string()


def _read_action(action: Any, names: list[str], scale: dict[str, float]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for name in names:
        m = action.metric_by_name(name)
        if m is None:
            continue
        f = scale.get(name)
        if f is None:
            try:
                f = scale[name] = factor(m.unit())
            except UnknownUnit:  # a unit we cannot scale: the value is unknown, never a base unit
                f = scale[name] = float("nan")
        row[name] = m.as_double() * f
    return row


def _opcode_counts(action: Any) -> dict[str, float]:
    """The per-opcode counts the catalogue names (``metric[opcode]``), 0 for an opcode the kernel
    never ran; nothing when the report has no per-opcode metric."""
    m = action.metric_by_name(metrics.OPCODE_METRIC)
    if m is None or not m.has_correlation_ids():
        return {}
    ids = m.correlation_ids()
    counts = {ids.as_string(i): m.as_double(i) for i in range(m.num_instances())}
    return {f"{metrics.OPCODE_METRIC}[{op}]": float(counts.get(op, 0.0)) for op in metrics.OPCODES.values()}


def _whole(value: Any) -> int | None:
    """A finite whole number as int (a damaged value, NaN or infinite, is None)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number == int(number) else None


def _workload_kind(action: Any, ncu_report: Any) -> str | None:
    """``range``, ``cmdlist`` or ``graph`` for a result that is not one launch, else None."""
    kinds = {getattr(ncu_report.IAction, f"WorkloadType_{k.upper()}", None): k for k in WORKLOAD_KINDS}
    kind_of = getattr(action, "workload_type", None)
    return kinds.get(kind_of()) if kind_of is not None else None


def _identity(action: Any, ncu_report: Any, row: dict[str, Any]) -> dict[str, Any]:
    major, minor = (_whole(row.get(m)) for m in (metrics.CC_MAJOR, metrics.CC_MINOR))
    dims = [_whole(row.get(m)) for m in (*metrics.GRID_DIMS, *metrics.BLOCK_DIMS)]

    def fmt(v: list[int | None]) -> str | None:
        return None if None in v else "(" + ", ".join(str(x) for x in v) + ")"

    return {
        "kernel": action.name(),
        "kernel_demangled": action.name(ncu_report.IAction.NameBase_DEMANGLED) or action.name(),
        "device": _string(action, metrics.DEVICE_NAME),
        "cc": f"{major}.{minor}" if major is not None and minor is not None else None,
        "stream": row.get("launch__stream_id"),
        "grid_dim": fmt(dims[:3]),
        "block_dim": fmt(dims[3:]),
        "nvtx": _nvtx_path(action),
    }


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 (where the ncu_report C++ library logs) to /dev/null meanwhile."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with Path(os.devnull).open("wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def read_ncu_rep(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Rows (identity + metrics in base units) for every launch of a report (``.ncu-repz``:
    gzip, zip or zstd compressed, read through a temporary uncompressed copy), the rule
    results stored with them (the schema in :mod:`ncu_roof.read.frame`) and notes on its metric
    names (damaged ones)."""
    with uncompressed(path) as plain, _quiet_stderr():  # ncu_report logs on stderr: ours is one line
        try:
            return _read_rows(plain, path)
        except ReportLoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - ncu_report's bindings raise anything on damaged data
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
            raise ReportLoadError(f"{path} is damaged ({type(exc).__name__} while reading it: {first}): copy it "
                                  "again or re-run ncu") from None


def _rule_results(action: Any, launch_id: int) -> list[dict[str, Any]]:
    """The action's stored rule results as records; none where this ncu_report cannot list them."""
    try:
        results = action.rule_results_as_dicts()
    except (AttributeError, RuntimeError):
        return []
    return [rec for r in results if (rec := from_rep_dict(launch_id, r)) is not None]


def _read_rows(plain: Path, path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    declared = check_container(plain)
    ncu_report = _import_ncu_report()
    try:
        ctx = ncu_report.load_report(str(plain))
    except Exception as exc:  # noqa: BLE001 - the module raises bare exceptions on damaged files
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ReportLoadError(f"{path} could not be read by ncu_report ({first}): it is damaged; copy it "
                              "again or re-run ncu") from None
    rows: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    names_by_kernel: dict[str, list[str]] = {}
    seen_names: dict[str, None] = {}
    scale: dict[str, float] = {}
    launch_id = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            kernel = action.name()
            names = names_by_kernel.get(kernel)
            if names is None:
                names = names_by_kernel[kernel] = _wanted_names(action)
                seen_names.update(dict.fromkeys(n for n in action.metric_names() if "__" in n))
            row = _read_action(action, names, scale)
            row.update(_opcode_counts(action))
            row.update(_identity(action, ncu_report, row), report=str(path), id=launch_id)
            kind = _workload_kind(action, ncu_report)
            if kind is not None:
                as_workload_row(row, row["kernel"], kind)
            rows.append(row)
            rules.extend(_rule_results(action, launch_id))
            launch_id += 1
    if not rows:
        raise ReportLoadError(f"{path} holds no kernel launches: check the ncu filters used for the capture")
    if declared and len(rows) < declared:
        raise ReportLoadError(f"{path} is truncated: {len(rows)} of {declared} launches readable; copy it again")
    return rows, rules, metrics.damaged_name_notes(list(seen_names), what="metric")


def load_ncu_rep(path: str | Path) -> Any:
    """The raw launch frame (see :mod:`ncu_roof.read.frame`) of one ``.ncu-rep`` file."""
    import pandas as pd

    from ncu_roof.read.frame import IDENTITY_COLUMNS, workload_notes

    rows, rules, notes = read_ncu_rep(Path(path))
    workloads = [(row.pop("_kind"), row["kernel"], row["id"], None) for row in rows if "_kind" in row]
    frame = pd.DataFrame.from_records(rows)
    for col in IDENTITY_COLUMNS:
        if col not in frame:
            frame[col] = None
    metric_cols = [c for c in frame.columns if c not in IDENTITY_COLUMNS]
    frame = frame[[*IDENTITY_COLUMNS, *metric_cols]]
    frame[metric_cols] = frame[metric_cols].astype("float64")
    frame.attrs["notes"] = [*notes, *workload_notes(workloads)]
    frame.attrs["kind"] = "ncu-rep"
    frame.attrs["ncu_rule_results"] = RuleResults(rules)
    return frame
