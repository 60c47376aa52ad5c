"""``load_table``: paths in, tidy per-launch table out (load -> normalize)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from ncu_roof import devices
from ncu_roof.errors import InputError, ReportLoadError
from ncu_roof.read import validate
from ncu_roof.read.inputs import expand_inputs
from ncu_roof.read.kernel_names import disambiguate, display_names
from ncu_roof.read.ncu_rules import RuleResults
from ncu_roof.read.normalize import normalize


def prepare(raw: pd.DataFrame, device: str | None = None) -> tuple[dict[str, Any], pd.DataFrame]:
    """One input's raw frame -> (its attrs, its checked tidy table; empty when the input holds no
    launch). Runs in the process that read the input, so inputs are checked, normalized and their
    devices named (``device``: as :func:`name_devices`) in parallel too; ``attrs["notes"]`` gains
    the notes of those steps."""
    attrs = {str(k): v for k, v in raw.attrs.items()}
    if raw.empty:
        return attrs, raw
    # checked without the input's attrs (its rule results): pandas deep-copies a frame's attrs into
    # every frame and column made from it, hundreds of times here; they are the tidy table's again after
    tidy = normalize(validate.check_raw(pd.DataFrame(raw, copy=False)))
    checked = tidy.attrs.get("notes", [])
    tidy["kernel"] = display_names(tidy)  # Numba's hashed tags dropped, CUTLASS wrappers named by their kernel
    named = name_devices(tidy, attrs.get("device_hints", []), device)
    tidy = validate.check_tidy(tidy)
    kept: dict[Hashable, Any] = {}
    kept.update(attrs)
    kept.update(tidy.attrs)
    kept["notes"] = [*attrs.get("notes", []), *checked]
    tidy.attrs = kept
    attrs["notes"] = list(attrs.get("notes", [])) + named + validate.rebuilt_notes(tidy) + validate.file_notes(tidy)
    return attrs, tidy


def load_table(paths: str | Path | Iterable[str | Path], device: str | None = None, *,
               reader: str | None = None, jobs: int | None = None) -> pd.DataFrame:
    """Read every input into one tidy table; ``attrs["notes"]`` collects what was skipped and
    ``attrs["ncu_rule_results"]`` Nsight Compute's stored rule results (with a ``report`` key).

    Launches whose input names no device get ``device`` (``--device``), else a GPU name the
    profiled program printed before the CSV, else the one device-table entry with their compute
    capability and SM count; each such choice is noted. ``reader`` (``"native"``, the default,
    or ``"ncu_report"``) reads ``.ncu-rep`` files; inputs, and the launches of big reports, are
    read by ``jobs`` processes (default: the cores available). Both default to the read options
    (:func:`ncu_roof.read.parallel.set_options`, which the CLI's flags set).
    """
    inputs, results, notes = _read(paths, device, reader, jobs, partial(prepare, device=device))
    return _assemble(inputs, results, notes)


def load_table_csv(paths: str | Path | Iterable[str | Path], device: str | None = None, *,
                   reader: str | None = None, jobs: int | None = None) -> tuple[pd.DataFrame, str]:
    """:func:`load_table` and the table as CSV (``table_text(table, "csv")``, byte for byte).
    Each input's rows are formatted by the process that read it, so with several jobs the
    formatting, a large share of ``ncu-roof table``'s time, is shared out too; where the inputs'
    tables differ in columns or kernel names are changed to tell them apart, the whole table is
    formatted here instead."""
    inputs, results, notes = _read(paths, device, reader, jobs, partial(_prepare_with_csv, device=device))
    tidies = [tidy for _, tidy, _ in results]
    kernels = [t["kernel"].astype("object") for t in tidies if "kernel" in t]  # the names as formatted
    table = _assemble(inputs, [(attrs, tidy) for attrs, tidy, _ in results], notes)  # refuses an input without launches
    layout = [list(zip(t.columns, t.dtypes, strict=True)) for t in tidies]
    if all(cols == layout[0] for cols in layout) and table["kernel"].equals(pd.concat(kernels, ignore_index=True)):
        texts = [text for _, _, text in results]
        return table, texts[0] + "".join(text.split("\n", 1)[1] for text in texts[1:])
    return table, table_text(table, "csv")


def _prepare_with_csv(raw: pd.DataFrame, device: str | None = None) -> tuple[dict[str, Any], pd.DataFrame, str]:
    """:func:`prepare`, and the input's table as CSV (empty text for an input without launches)."""
    attrs, tidy = prepare(raw, device)
    return attrs, tidy, table_text(tidy, "csv") if not tidy.empty else ""


def _read(paths: str | Path | Iterable[str | Path], device: str | None, reader: str | None, jobs: int | None,
          post: Callable[[pd.DataFrame], Any]) -> tuple[list[Path], list[Any], list[str]]:
    """The inputs, ``post`` of each one's raw frame (in the process that read it), and the notes on
    the folders named."""
    from ncu_roof.read.parallel import options, read_inputs

    check_device(device)
    found, notes = expand_inputs(paths)
    inputs = _unique(found)
    opts = options()
    opts = replace(opts, reader=reader or opts.reader, jobs=jobs or opts.jobs)
    named = {p.resolve() for p in _named_files(paths)}
    found_in_folders = {p for p in inputs if p.resolve() not in named}
    while True:  # a file found in a folder that cannot be read is skipped with a note; one named is refused
        try:
            return inputs, read_inputs(inputs, opts, post=post), notes
        except InputError as exc:
            said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            bad = next((p for p in inputs if p in found_in_folders and str(p) in said), None)
            if bad is None or len(inputs) == 1:
                raise
            inputs = [p for p in inputs if p != bad]
            notes.append(f"skipped {bad}: {said}")


def _named_files(paths: str | Path | Iterable[str | Path]) -> set[Path]:
    """The inputs named one by one (not found in a folder or by a pattern)."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    return {Path(str(item)) for item in items if Path(str(item)).is_file()}


def check_device(device: str | None) -> None:
    """Refuse a ``--device`` the device table does not know."""
    if device is not None and devices.lookup(device) is None:
        raise InputError(f"--device {device!r} is not in the device table: give the name ncu prints "
                         "(e.g. 'NVIDIA A100-SXM4-40GB'), or measured roofs with --ceilings")


def _assemble(inputs: list[Path], prepared: list[tuple[dict[str, Any], pd.DataFrame]],
              folder_notes: list[str] | None = None) -> pd.DataFrame:
    """One table from each input's (attrs, tidy table), with the inputs' notes and rule results."""
    frames = []
    notes: list[str] = list(folder_notes or [])
    runs: list[dict[str, Any]] = []
    rule_results = []
    for path, (attrs, tidy) in zip(inputs, prepared, strict=True):
        if tidy.empty:
            raise ReportLoadError(f"{path} holds no kernel launches (a header only: cut after it, or nothing was "
                                  "profiled): re-export the complete report")
        records = attrs.get("ncu_rule_results", [])
        rule_results.append(records if isinstance(records, RuleResults) else RuleResults(records))
        notes.extend(f"{path}: {n}" for n in attrs.get("notes", []))
        if attrs.get("run"):
            runs.append({"report": str(path), **attrs["run"]})
        frames.append(tidy)
    table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    table["kernel"] = disambiguate(table)
    table.attrs = {"notes": notes, "inputs": [str(p) for p in inputs],
                   "ncu_rule_results": RuleResults.concat(rule_results, [str(p) for p in inputs]),
                   "runs": runs}
    return table


def _unique(paths: list[Path]) -> list[Path]:
    """Each file once, even when named twice or both directly and through its folder."""
    seen: set[Path] = set()
    out = []
    for p in paths:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def name_devices(tidy: pd.DataFrame, hints: list[str], device: str | None) -> list[str]:
    """Fill ``device`` where the input has none, or names it by a name several GPUs share (in place);
    return notes saying how."""
    shared, device_used = _resolve_shared_names(tidy, device)
    unnamed = tidy["device"].isna()
    if not unnamed.any():
        ignored = device and not device_used
        return shared + ([f"--device {device} ignored: the input names its device"] if ignored else [])
    if device is not None:
        name, how = devices.lookup(device).name, "named by --device"  # type: ignore[union-attr]
    else:
        known = [spec for h in hints if (spec := devices.lookup(h)) is not None]
        name, how = (known[0].name, "taken from the program's output") if known else (None, "")
    tidy["device"] = tidy["device"].astype("object")
    if name is not None:
        tidy.loc[unnamed, "device"] = name
        return [f"device {how}: {name}"]
    return _infer_devices(tidy, unnamed)


def _resolve_shared_names(tidy: pd.DataFrame, device: str | None) -> tuple[list[str], bool]:
    """Launches whose device name several table entries share (every Jetson Orin module reports
    "Orin"): the one with their SM count, or the ``--device`` entry that shares the name; else a note
    listing the entries. Returns the notes and whether ``--device`` was used."""
    names = tidy["device"].dropna()
    shared = [n for n in names.unique() if isinstance(n, str) and devices.lookup(n) is None and devices.sharing(n)]
    notes: list[str] = []
    used = False
    chosen = devices.lookup(device) if device else None
    for name in shared:
        rows = tidy["device"] == name
        if chosen is not None and chosen in devices.sharing(name):
            tidy.loc[rows, "device"] = chosen.name
            notes.append(f"device {name!r} named by --device: {chosen.name}")
            used = True
            continue
        counts = tidy.loc[rows, "sm_count"] if "sm_count" in tidy else pd.Series(float("nan"), index=tidy.index[rows])
        for sms, group in counts.groupby(counts.fillna(-1)):
            found = devices.sharing(name, int(sms) if sms >= 0 else None)
            what = f"{name!r}" + (f" with {int(sms)} SMs" if sms >= 0 else "")
            if len(found) == 1:
                tidy.loc[group.index, "device"] = found[0].name
                notes.append(f"device {what} is {found[0].name} (ncu gives several GPUs that name; pass "
                             "--device to change)")
            else:
                options = ", ".join(s.name for s in (found or devices.sharing(name)))
                notes.append(f"device {what} can be any of {options} (ncu gives them all that name): pass "
                             f"--device NAME for its roofs")
    return notes, used


def _infer_devices(tidy: pd.DataFrame, unnamed: pd.Series) -> list[str]:
    notes = []
    for (cc, sms), rows in tidy[unnamed].groupby(["cc", "sm_count"], dropna=True):
        count = int(float(str(sms)))
        spec = devices.lookup_by_cc_and_sms(str(cc), count)
        if spec is not None:
            tidy.loc[rows.index, "device"] = spec.name
            notes.append(f"device inferred from CC {cc} and {count} SMs: {spec.name} (pass --device to change)")
    for cc, rows in tidy[tidy["device"].isna()].groupby(tidy["cc"].astype(str), dropna=False):
        cc_text = cc if cc not in ("nan", "None", "<NA>") else None
        spec, clock = _at_base_clock(cc_text, rows)
        if spec is not None and clock is not None:
            tidy.loc[rows.index, "device"] = spec.name
            sms = f" with {spec.sm_count} SMs" if "sm_count" in rows and rows["sm_count"].notna().any() else ""
            notes.append(f"device inferred from CC {cc} and its SM clock, {clock / 1e6:.0f} MHz, the base clock "
                         f"(ncu's default clock control) of {spec.name} alone among the table's CC {cc} GPUs{sms} "
                         "(pass --device to change)")
            continue
        notes.append(_unnamed_note(cc_text, rows))
    return notes


def _at_base_clock(cc: str | None, rows: pd.DataFrame) -> tuple[devices.DeviceSpec | None, float | None]:
    """The one table entry of ``cc`` (and SM count, where known) whose base clock the launches' measured
    SM clock is, with that clock; (None, clock) where none or several are."""
    clock = _measured_sm_clock(rows)
    if cc is None or clock is None:
        return None, clock
    sms = {int(float(v)) for v in rows["sm_count"].dropna()} if "sm_count" in rows else set()
    found = devices.candidates(cc, next(iter(sms)) if len(sms) == 1 else None, clock)
    at_base = [s for s in found if devices.runs_at_base_clock(s, clock)]
    return (at_base[0] if len(at_base) == 1 else None), clock


SHOWN_CANDIDATES = 6


def _unnamed_note(cc: str | None, rows: pd.DataFrame) -> str:
    """The input does not name its GPU: which table entries it can be (by CC and SM count; those whose
    base clock the measured SM clock is come first), and how to say which."""
    sms = {int(float(v)) for v in rows["sm_count"].dropna()} if "sm_count" in rows else set()
    count = next(iter(sms)) if len(sms) == 1 else None
    clock = _measured_sm_clock(rows)
    found = devices.candidates(cc, count, clock) if cc else []
    what = f"CC {cc}" + (f", {count} SMs" if count else "") if cc else "no CC either"
    if not found:
        return f"the input does not name its GPU ({what}): roofs need --device NAME or --ceilings FILE"
    names = ", ".join(s.name for s in found[:SHOWN_CANDIDATES])
    left = len(found) - SHOWN_CANDIDATES
    more = f" and {left} more (ncu-roof devices lists them)" if left > 0 else ""
    at_base = [s.name for s in found if devices.runs_at_base_clock(s, clock)]
    base = (f"; its SM clock, {clock / 1e6:.0f} MHz, is the base clock (ncu's default clock control) of "
            f"{', '.join(at_base)}" if at_base and clock else "")
    return (f"the input does not name its GPU ({what}): it is one of {names}{more}{base}; pass --device NAME "
            f"(e.g. --device '{found[0].name}') or --ceilings FILE for roofs")


def _measured_sm_clock(rows: pd.DataFrame) -> float | None:
    for column in ("sm_clock_hz", "smsp_clock_hz"):
        if column in rows:
            values = pd.to_numeric(rows[column], errors="coerce").dropna()
            if len(values):
                return float(values.median())
    return None


def table_text(table: pd.DataFrame, fmt: str) -> str:
    """The tidy table as CSV (NaN as empty, floats as ``%.17g``; :func:`~ncu_roof.read.table.csv.csv_text`)
    or as JSON records (NaN as null)."""
    if fmt == "json":
        return table.to_json(orient="records", indent=1, double_precision=15) + "\n"
    from ncu_roof.read.table.csv import csv_text

    return csv_text(table)
