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

metrics: one float64 column per ncu metric name (exactly as ncu spells it), values already
converted to base units with :func:`ncu_roof.read.units.factor` (seconds, bytes, hertz, counts).

``frame.attrs["notes"]`` is a list of human-readable remarks about the input (what was skipped).

``frame.attrs["ncu_rule_results"]`` is the list of Nsight Compute's own rule results stored in
the input (``.ncu-rep``: ``IAction.rule_results_as_dicts()``; details CSV: the rule rows), in
input order, one dict per result with exactly these keys (build them with
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
table.load_table` gathers every file's list into ``table.attrs["ncu_rule_results"]``, adding a
``report`` key (the path, as in the ``report`` column).
Normalization into the tidy table happens in :mod:`ncu_roof.read.normalize`.
"""

from __future__ import annotations

from pathlib import Path

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
