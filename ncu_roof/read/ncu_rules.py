"""Nsight Compute's own rule results, as one record shape whatever the input (see :mod:`ncu_roof.read.frame`).

A ``.ncu-rep`` stores each rule result with numeric enums and markup in its message
(``@section:Id:Name@``, ``@url:Text:https://...@``); a details CSV export prints the same result
with names (``OPT``, ``global``) and the markup rendered as text. :func:`rule_record` builds the
record from either, so the two give identical lists (checked against ``ncu --import --page
details --csv`` in tests/read/test_ncu_rules.py).
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ncu_roof.sequences import MadeOnDemand

# ncu_report's MsgType_* (0 = NONE: CSV exports print an empty Rule Type) and SpeedupType_*.
MESSAGE_TYPES = {1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
SPEEDUP_TYPES = {1: "local", 2: "global"}
ACTIONABLE = ("OPT", "WRN")

class RuleResults(MadeOnDemand[dict[str, Any]]):
    """Rule-result records as columns: the distinct records (without ``id`` and ``report``: a
    kernel's launches repeat the same results) and, per result, its launch ID, which distinct
    record it is and which report (-1: none). Indexing and iterating give each result as a new
    dict (``id``, the record's keys, then ``report`` where one is set); the columns are for code
    that reads many results. Built once and not changed; pandas does not deep-copy it with a
    frame's ``attrs``."""

    def __init__(self, records: Iterable[Mapping[str, Any]] = ()) -> None:
        ids: list[int] = []
        reports: dict[str, int] = {}
        report_of: list[int] = []
        distinct = []
        for r in records:
            ids.append(int(r["id"]))
            distinct.append({k: v for k, v in r.items() if k != "id" and k != "report"})
            report_of.append(reports.setdefault(str(r["report"]), len(reports)) if "report" in r else -1)
        self.distinct: Sequence[Mapping[str, Any]] = distinct
        self.ids = np.array(ids, dtype=np.int64)
        self.which = np.arange(len(ids), dtype=np.int64)
        self.report_of = np.array(report_of, dtype=np.int64)
        self.reports = list(reports)

    @classmethod
    def of_columns(cls, distinct: Sequence[Mapping[str, Any]], ids: Any, which: Any) -> RuleResults:
        """Results ``distinct[which[n]]`` of launch ``ids[n]``, without a report."""
        out = cls()
        out.distinct = distinct
        out.ids = np.asarray(ids, dtype=np.int64)
        out.which = np.asarray(which, dtype=np.int64)
        out.report_of = np.full(len(out.ids), -1, dtype=np.int64)
        return out

    @classmethod
    def concat(cls, parts: Sequence[RuleResults], reports: Sequence[str | None] | None = None) -> RuleResults:
        """The results of ``parts`` in order; ``reports``: the report each part's results are of
        (None: as the part says)."""
        out = cls()
        if not parts:
            return out
        offsets = np.cumsum([0] + [len(p.distinct) for p in parts])
        out.distinct = [r for p in parts for r in p.distinct]
        out.ids = np.concatenate([p.ids for p in parts])
        out.which = np.concatenate([p.which + o for p, o in zip(parts, offsets[:-1], strict=True)])
        codes: dict[str, int] = {}
        report_of = []
        for n, p in enumerate(parts):
            named = reports[n] if reports is not None else None
            if named is not None:
                report_of.append(np.full(len(p.ids), codes.setdefault(named, len(codes)), dtype=np.int64))
                continue
            renumber = np.array([codes.setdefault(r, len(codes)) for r in p.reports] + [-1], dtype=np.int64)
            report_of.append(renumber[p.report_of])
        out.report_of = np.concatenate(report_of)
        out.reports = list(codes)
        return out

    def _make(self, launch: int, which: int, report: int) -> dict[str, Any]:
        out = {"id": launch, **self.distinct[which]}
        if report >= 0:
            out["report"] = self.reports[report]
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def _item(self, n: int) -> dict[str, Any]:
        return self._make(int(self.ids[n]), int(self.which[n]), int(self.report_of[n]))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return map(self._make, self.ids.tolist(), self.which.tolist(), self.report_of.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RuleResults, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RuleResults({list(self)!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> RuleResults:
        return self


_URL = re.compile(r"@url:([^@]*?):((?:https?|file|ftp)://[^@]*)@")
_LINK = re.compile(r"@(?:section|source|sectionlink):[^:@]*:([^@]*)@")


@functools.lru_cache(maxsize=4096)
def plain_message(text: str) -> str:
    """ncu's message markup rendered as the CSV export prints it. Cached: a report repeats a few
    messages for every launch, and one string object per message keeps the records small to
    pass between processes (pickle writes a repeated object once).

    >>> plain_message("See the @section:Occupancy:Occupancy@ section and the @url:Guide:https://x.y/z@.")
    'See the Occupancy section and the Guide (https://x.y/z).'
    """
    return _LINK.sub(r"\1", _URL.sub(r"\1 (\2)", text))


def type_name(value: object) -> str:
    """``2`` or ``"OPT"`` -> ``"OPT"``; 0 or empty (ncu's NONE) -> ``"0"``; other numbers as text."""
    if isinstance(value, str):
        text = value.strip()
        return text.upper() if text else "0"
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return MESSAGE_TYPES.get(int(value), str(int(value)))
    return "0"


def speedup_type_name(value: object) -> str | None:
    """``2``/``"global"`` -> ``"global"``, ``1``/``"local"`` -> ``"local"``; unknown or absent -> None."""
    if isinstance(value, str):
        return value.strip().lower() or None
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return SPEEDUP_TYPES.get(int(value))
    return None


def rule_record(launch_id: int, rule: str, section: str | None, kind: object, title: str | None,
                message: str, speedup_pct: float | None, speedup_type: object) -> dict[str, Any] | None:
    """One rule result in the shared schema; None for an empty NONE result (CSV exports omit those)."""
    name = type_name(kind)
    text = plain_message(message or "")
    if name == "0" and not text:
        return None
    pct = float(speedup_pct) if speedup_pct is not None else math.nan
    return {"id": int(launch_id), "rule": sys.intern(str(rule)), "section": _shared(section) or None, "type": name,
            "title": _shared(title) or None, "message": text, "speedup_pct": pct,
            "speedup_type": speedup_type_name(speedup_type) if not math.isnan(pct) else None}


def from_rep_dict(launch_id: int, result: dict[str, Any]) -> dict[str, Any] | None:
    """A record from one ``IAction.rule_results_as_dicts()`` entry."""
    message = result.get("rule_message") or {}
    speedup = result.get("speedup_estimation") or {}
    return rule_record(launch_id, result.get("rule_identifier") or result.get("name") or "?",
                       result.get("section_identifier"), message.get("type"), message.get("title"),
                       message.get("message") or "", speedup.get("speedup"), speedup.get("type"))


def _shared(text: Any) -> Any:
    """One object for every copy of a text (names repeat for every launch); anything else as it is."""
    return sys.intern(text) if isinstance(text, str) else text
