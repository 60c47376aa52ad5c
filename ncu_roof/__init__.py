"""ncu-roof: roofline diagnosis from NVIDIA Nsight Compute measurements.

Library entry points (heavy modules are imported on first use, so ``import ncu_roof`` is cheap):

- :func:`load` -- read ``.ncu-rep`` files and CSV exports into one tidy per-launch table;
- :func:`diagnose` -- place every launch under its roofs and rank the advice: DataFrames, charts,
  every output, and a notebook view (:class:`ncu_roof.api.DiagnosisResult`);
- :func:`compare` -- two runs side by side per kernel and region (:class:`ncu_roof.api.ComparisonResult`);
- :func:`timeline` -- PyTorch profiler traces measured (busy, idle, why), beside a report if given
  (:class:`ncu_roof.api_timeline.TimelineResult`);
- :class:`region` -- mark code with its algorithmic FLOPs and bytes (an NVTX range);
- :class:`profile` -- profile only inside (cudaProfilerStart/Stop): warm-up and autotuning left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncu_roof.api import compare, diagnose  # light: the api imports what it needs when called
from ncu_roof.region import profile, region

if TYPE_CHECKING:
    import pandas as pd

    from ncu_roof.api_timeline import TimelineResult

__all__ = ["compare", "diagnose", "load", "profile", "region", "timeline", "__version__"]
__version__ = "0.1.0"


def load(paths: Any, device: str | None = None) -> pd.DataFrame:
    """Read reports and exports (a path or a list of paths) into the tidy per-launch table;
    ``device`` names the GPU for inputs that do not (CSV exports often carry only its CC)."""
    from ncu_roof.read.table import load_table

    return load_table(paths, device)


def timeline(paths: Any, report: Any = None, device: str | None = None) -> TimelineResult:
    """Measure PyTorch profiler traces (beside an Nsight Compute report): see :func:`ncu_roof.api_timeline.timeline`."""
    from ncu_roof.api_timeline import timeline as run

    return run(paths, report, device)
