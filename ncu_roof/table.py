"""``load_table``: paths in, tidy per-launch table out (load -> normalize)."""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ncu_roof.errors import InputError
from ncu_roof.normalize import normalize

REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz")
TEXT_SUFFIXES = (".csv", ".txt", ".log", ".out")


def _folder_inputs(folder: Path) -> list[Path]:
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(REPORT_SUFFIXES + (".csv",)))
    if not found:
        raise InputError(f"{folder} is a folder with no .ncu-rep or .csv files in it: pass report files")
    return found


def expand_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """Files, folders (their reports and CSVs) and glob patterns -> existing file paths."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise InputError("no input given: pass one or more .ncu-rep or CSV files")
    result: list[Path] = []
    for item in items:
        text = str(item)
        if any(ch in text for ch in "*?[") and not Path(text).exists():
            # a user's pattern may be absolute or climb with '..': Path.glob takes only relative ones
            matches = sorted(Path(m) for m in glob.glob(text))  # noqa: PTH207
            if not matches:
                raise InputError(f"no file matches {text}")
            result.extend(p for m in matches for p in (_folder_inputs(m) if m.is_dir() else [m]))
            continue
        path = Path(text)
        if path.is_dir():
            result.extend(_folder_inputs(path))
        elif not path.exists():
            raise InputError(f"no such file: {path}")
        else:
            result.append(path)
    return result


def _is_report(path: Path) -> bool:
    if path.name.endswith(REPORT_SUFFIXES):
        return True
    with path.open("rb") as fh:
        return fh.read(4) == b"NVR\x00"


def load_raw(path: Path) -> pd.DataFrame:
    """The raw launch frame of one input file, by its content."""
    if path.stat().st_size == 0:
        raise InputError(f"{path} is empty: pass a .ncu-rep report or an ncu CSV export")
    if _is_report(path):
        from ncu_roof.readers.ncu_rep import load_ncu_rep

        return load_ncu_rep(path)
    from ncu_roof.readers.csv import load_csv

    return load_csv(path)


def load_table(paths: str | Path | Iterable[str | Path]) -> pd.DataFrame:
    """Read every input into one tidy table; ``attrs["notes"]`` collects what was skipped."""
    frames = []
    notes: list[str] = []
    for path in expand_paths(paths):
        raw = load_raw(path)
        notes.extend(f"{path}: {n}" for n in raw.attrs.get("notes", []))
        frames.append(normalize(raw))
    table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    table.attrs = {"notes": notes, "inputs": [str(p) for p in expand_paths(paths)]}
    return table


def table_text(table: pd.DataFrame, fmt: str) -> str:
    """The tidy table as CSV (NaN as empty) or as JSON records (NaN as null)."""
    if fmt == "json":
        return table.to_json(orient="records", indent=1, double_precision=15) + "\n"
    return table.to_csv(index=False, float_format="%.17g")
