"""Pausing Python's cyclic garbage collector while a table of thousands of launches is worked on.

Placing launches and judging them makes many small containers (a dict per launch, per-launch
answers, frames) and no reference cycles worth collecting; each collector pass meanwhile walks
every container alive, so on 10,000 launches the passes took about a third of the diagnosis.
Reference counting still frees everything at once; the collector runs again afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector off inside the block (and back on after it where it was on)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
