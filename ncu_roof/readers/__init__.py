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
converted to base units with :func:`ncu_roof.units.factor` (seconds, bytes, hertz, counts).

``frame.attrs["notes"]`` is a list of human-readable remarks about the input (what was skipped).
``.ncu-rep`` frames from the native reader (:mod:`ncu_roof.readers.native`) also carry
``attrs["ncu_rule_results"]``: the rule results ncu stored, one dict per rule message (``id``,
``rule``, ``section``, ``type``, ``title``, ``message``, ``speedup_pct``, ``speedup_type``).
Normalization into the tidy table happens in :mod:`ncu_roof.normalize`.
"""

from __future__ import annotations

IDENTITY_COLUMNS = (
    "report", "id", "kernel", "kernel_demangled", "device", "cc", "process", "stream",
    "grid_dim", "block_dim", "nvtx",
)
