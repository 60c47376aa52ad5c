"""Readers: every input kind becomes the same *raw launch frame*.

The raw launch frame has one row per kernel launch and two groups of columns:

identity (strings unless noted; missing values are ``pd.NA``/NaN, never 0 or ""):
    ``report``           the source file, as given
    ``id``               launch ID within the report (int)
    ``kernel``           short function name (``VecAdd_kernel``)
    ``kernel_demangled`` full signature where the input has it, else the short name
    ``device``           device display name (``NVIDIA A10G``) where the input has it
    ``cc``               compute capability as ``"8.6"``
    ``process``          process name; ``stream`` (float); ``grid_dim``/``block_dim`` as ``"(x, y, z)"``
    ``nvtx``             NVTX push/pop stacks around the launch: ``"outer/inner"`` per domain,
                         ``domain@outer/inner`` for named domains, several joined with ``" | "``

Under range, application-range or graph profiling a row is a whole range, command list or CUDA
graph, not a launch: ``kernel`` (and ``kernel_demangled``) is :func:`workload_name` of it (``range
step``: ncu's name for the kind, then its NVTX ranges), ``grid_dim``/``block_dim`` and the
``launch__*`` metrics are missing.

metrics: one float64 column per ncu metric name (exactly as ncu spells it), values already
converted to base units with :func:`ncu_roof.read.units.factor` (seconds, bytes, hertz, counts).

``frame.attrs["notes"]`` is a list of human-readable remarks about the input (what was skipped).

``frame.attrs["ncu_rule_results"]`` holds Nsight Compute's own rule results stored in the input
(``.ncu-rep``: ``IAction.rule_results_as_dicts()``; details CSV: the rule rows), in input order:
a :class:`~ncu_roof.read.ncu_rules.RuleResults` (columns; it gives one dict per result) or a list
of those dicts, each with exactly these keys (build them with
:func:`ncu_roof.read.ncu_rules.rule_record`):

    ``id``            launch ID (int), as in the frame's ``id`` column
    ``rule``          ncu's rule identifier (``UncoalescedGlobalAccess``)
    ``section``       section identifier (``SourceCounters``) or None
    ``type``          ``"OPT"``, ``"WRN"``, ``"INF"``, ``"ERR"`` (ncu_report MsgType 2, 3, 1, 4), else the
                      number as text (``"0"``: NONE, an empty Rule Type in CSV)
    ``title``         the message title (``"Long Scoreboard Stalls"``) or None (CSV exports have none)
    ``message``       the message as the CSV export prints it: ``@section:Id:Name@`` -> ``Name``,
                      ``@url:Text:URL@`` -> ``Text (URL)``
    ``speedup_pct``   ncu's estimated speedup in % (float), NaN when absent
    ``speedup_type``  ``"global"`` (share of the kernel's time) or ``"local"`` (of one unit), or None

Results of type NONE with an empty message are dropped (CSV exports omit them). Both
``.ncu-rep`` readers (:mod:`ncu_roof.read.native`, the default, and ``ncu_report``) give the
same list. :func:`ncu_roof.
table.load_table` gathers every file's results into ``table.attrs["ncu_rule_results"]``, adding a
``report`` key (the path, as in the ``report`` column).
Normalization into the tidy table happens in :mod:`ncu_roof.read.normalize`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

IDENTITY_COLUMNS = (
    "report", "id", "kernel", "kernel_demangled", "device", "cc", "process", "stream",
    "grid_dim", "block_dim", "nvtx",
)

REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz")


def is_report(path: Path) -> bool:
    """A ``.ncu-rep`` report, by its name or its first bytes (else a CSV export)."""
    if path.name.endswith(REPORT_SUFFIXES):
        return True
    with path.open("rb") as fh:
        return fh.read(4) == b"NVR\x00"


WORKLOAD_KINDS = ("range", "cmdlist", "graph")  # results that are not one kernel launch
LAUNCH_METRIC_PREFIX = "launch__"  # a launch's shape: no range, command list or graph row keeps these


def launch_only(name: str) -> bool:
    """A metric of one launch's shape (grid, block, waves, occupancy limits): meaningless for a
    whole range, command list or graph, so their rows leave it out in every reader."""
    return name.startswith(LAUNCH_METRIC_PREFIX)


def workload_name(name: str, nvtx: object) -> str:
    """The ``kernel`` of a range, command-list or graph result: ncu's name for it (``range``,
    ``graph``, a command list's display name) and the NVTX ranges open at its start, so that ranges
    of different names stay apart (``range step``) and repeats of one range add up."""
    return f"{name} {nvtx}" if isinstance(nvtx, str) and nvtx else name



def as_workload_row(row: dict[str, Any], name: str, kind: str) -> None:
    """Make a reader's row (a dict) a range, command-list or graph row, in place: named
    :func:`workload_name` of ``name`` and its NVTX, no launch shape and no ``launch__*`` metrics,
    ``_kind`` for the report's notes (the reader takes it out)."""
    for metric in [m for m in row if launch_only(m)]:
        del row[metric]
    label = workload_name(name, row.get("nvtx"))
    row.update(kernel=label, kernel_demangled=label, stream=None, grid_dim=None, block_dim=None, _kind=kind)

_KIND_WORDS = {"range": ("range", "ranges"), "cmdlist": ("command list", "command lists"),
               "graph": ("CUDA graph", "CUDA graphs")}
_LISTED = 8  # names of kernels (and of ranges) a note lists before "and N more"


def _listing(names: list[str]) -> str:
    more = len(names) - _LISTED
    return ", ".join(names[:_LISTED]) + (f" and {more} more" if more > 0 else "")


Workload = tuple[str, str, int, "tuple[str, ...] | None"]  # kind, kernel, id, its modules' kernels


def workload_notes(results: Sequence[Workload]) -> list[str]:
    """The notes of a report's range, command-list and graph rows, each given as (kind, kernel,
    id, the kernels of the modules it references, None where the reader cannot tell): what such a
    row is, and per name its IDs and kernels."""
    notes = []
    for kind, (one, many) in _KIND_WORDS.items():
        mine = [r for r in results if r[0] == kind]
        if not mine:
            continue
        names: dict[str, list[tuple[int, tuple[str, ...] | None]]] = {}
        for _, name, launch_id, kernels in mine:
            names.setdefault(name, []).append((launch_id, kernels))
        rows = (f"{len(mine)} rows are a whole {one} each" if len(mine) > 1 else f"1 row is a whole {one}")
        notes.append(f"{rows}, not one launch ({len(names)} name{'s' * (len(names) > 1)}): time, FLOPs and bytes are "
                     f"summed over the kernels in it, and rules about one launch's shape (grid, block, waves, "
                     f"occupancy limits) do not apply to {many}")
        if all(ks is None for _, _, _, ks in mine):
            continue  # this reader cannot tell which kernels a row's modules hold
        for name, items in list(names.items())[:_LISTED]:
            ids = _listing([str(i) for i, _ in items])
            held_kernels = list(dict.fromkeys(k for _, ks in items for k in ks or ()))
            held = (f"the modules it ran hold the kernels {_listing(held_kernels)}" if held_kernels
                    else "the report does not say which kernels ran in it")
            notes.append(f"{name} (ID{'s' * (len(items) > 1)} {ids}): {held}")
        if len(names) > _LISTED:
            notes.append(f"and {len(names) - _LISTED} more {one} names")
    return notes


def name_csv_workloads(frame: Any) -> list[str]:
    """Range and graph rows of a CSV export (ncu names them ``range`` and ``graph`` and gives them
    no grid or block) made as :func:`workload_name` says, in place, their ``launch__*`` values
    dropped; the notes about them."""
    if frame.empty or "kernel" not in frame:
        return []
    kinds = frame["kernel"].where(frame["kernel"].isin(WORKLOAD_KINDS) & frame["grid_dim"].isna()
                                  & frame["block_dim"].isna())
    mask = kinds.notna().to_numpy()
    if not mask.any():
        return []
    names = [workload_name(k, n) for k, n in zip(frame.loc[mask, "kernel"], frame.loc[mask, "nvtx"], strict=True)]
    frame.loc[mask, "kernel"] = names
    frame.loc[mask, "kernel_demangled"] = names
    frame.loc[mask, "stream"] = float("nan")
    for col in [c for c in frame.columns if launch_only(str(c))]:
        frame.loc[mask, col] = float("nan")
    return workload_notes([(str(k), name, int(i), None)
                           for k, name, i in zip(kinds[mask], names, frame.loc[mask, "id"], strict=True)])
