"""ncu-roof: roofline diagnosis from NVIDIA Nsight Compute measurements.

Library entry points (heavy modules are imported on first use, so ``import ncu_roof`` is cheap):

- :func:`load` -- read ``.ncu-rep`` files and CSV exports into one tidy per-launch table;
- :class:`region` -- mark code with its algorithmic FLOPs and bytes (an NVTX range);
- :class:`profile` -- profile only inside (cudaProfilerStart/Stop): warm-up and autotuning left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncu_roof.region import profile, region

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load", "profile", "region", "__version__"]
__version__ = "0.1.0"


def load(paths: Any, device: str | None = None) -> pd.DataFrame:
    """Read reports and exports (a path or a list of paths) into the tidy per-launch table;
    ``device`` names the GPU for inputs that do not (CSV exports often carry only its CC)."""
    from ncu_roof.read.table import load_table

    return load_table(paths, device)
