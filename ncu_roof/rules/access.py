"""How far a launch's global accesses are from the sectors their data needs: from L1's sector counts
(the Source Counters' ideal, ncu's bytes used per sector, sectors per request) or, in a report that holds
only ncu's memory chart, from L2's side: the sectors L1 writes against the distinct sectors it touches; and
how L1/TEX serves them, from ncu's throughput breakdown (wavefronts per request, the rows of a block a warp
spans, shared memory's part of the data stage, requests out to L2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ncu_roof.model.roofline import EPS, SECTOR_BYTES, Thresholds, reaches
from ncu_roof.read.validate import parse_dims
from ncu_roof.rules.common import Row, known, val


def sector_excess(row: Row, th: Thresholds) -> float | None:
    """Sectors fetched over sectors needed, from the SourceCounters' ideal count, ncu's bytes used
    per sector, or (least exact) sectors per request above what 16-byte accesses need."""
    theo, ideal = val(row, "global_sectors_theoretical"), val(row, "global_sectors_ideal")
    if theo > 0 and ideal > 0:
        excess = theo / ideal
        return excess if reaches(excess, th.uncoalesced_excess) else None
    used = val(row, "global_load_bytes_per_sector_pct")
    if used > 0:
        excess = 100.0 / used
        return excess if reaches(excess, th.uncoalesced_excess) else None
    spr = []
    for op in ("load", "store"):
        sectors, requests = val(row, f"global_{op}_sectors"), val(row, f"global_{op}_requests")
        if requests > 0 and sectors == sectors:
            spr.append(sectors / requests)
    worst, limit = max(spr, default=0.0), th.uncoalesced_sectors_per_request
    if worst > limit * (1 + EPS):
        return worst / needed_sectors_per_request(spr, limit)
    return None


def needed_sectors_per_request(spr: list[float], limit: float) -> float:
    """The sectors a request needs, from the narrower side's sectors a request (a transpose reads and writes
    one type: loads at 4 sectors a request are 4-byte elements, so stores at 32 are 8x, not the 2x 16-byte
    accesses would give); at most ``limit``, what 16-byte accesses need, where no side is narrower."""
    return min(limit, max(min(spr), 1.0))


def l2_rewrites(row: Row, th: Thresholds) -> dict[str, Any] | None:
    """Where L1's sector counts are missing: L2 sectors written by L1 over the distinct sectors L1
    touched (its L2 misses, the caches flushed before the launch), at ``l2_rewrites_per_sector`` or
    more: each sector written several times, by stores split across instructions (strided, a field at
    a time) or by rewrites of the same data. What an access touching each sector once would remove:
    per direction, the sectors beyond the distinct ones, as a share of L2's sectors."""
    if known(val(row, "global_store_sectors")):
        return None  # L1 counts the stores' sectors itself: the uncoalesced signal reads those
    written, read = val(row, "l2_write_sectors_from_l1"), val(row, "l2_read_sectors_from_l1")
    touched, l2_bytes = val(row, "l2_missed_sectors_from_l1"), val(row, "l2_bytes")
    if not (touched > 0 and written > 0 and l2_bytes > 0) or not reaches(written / touched, th.l2_rewrites_per_sector):
        return None
    extra = written - touched + (max(read - touched, 0.0) if read == read else 0.0)
    return {"excess": written / touched, "written": written, "read": read, "touched": touched,
            "l2_share": min(extra * SECTOR_BYTES / l2_bytes, 1.0)}


def warp_rows(row: Row) -> int:
    """How many rows of its block one warp spans: 32 / blockDim.x where a block 2 to 31 threads wide has
    more rows (an (8, 32, 1) block: 4), else 1 (also where the launch shape is unknown; a block one thread
    wide is a column whose threads run along y)."""
    dims = parse_dims(row.get("block_dim"))
    if dims is None or not 1 < dims[0] < 32 or dims[1] * dims[2] < 2:
        return 1
    return min(math.ceil(32 / dims[0]), dims[1] * dims[2])


def shared_part(row: Row) -> float:
    """The share of L1's data-stage wavefronts that are shared memory's (ncu's breakdown, both over
    elapsed cycles); NaN where either is unknown."""
    shared, data = val(row, "shared_pipe_pct"), val(row, "l1_data_pipe_pct")
    return min(shared / data, 1.0) if shared >= 0 and data > 0 else np.nan


def l2_request_path_binds(row: Row) -> bool:
    """Whether L1/TEX's busiest stage is its request path to L2 (misses, stores and atomics going out),
    not its data stage: that item at least :data:`REQUEST_PATH_SHARE` of ncu's L1 breakdown, and at least
    twice the data stage's wavefronts and the LSU requests (render_kernel, alife on Turing: 46.4% against
    5.2% and 4.3%)."""
    path, most = val(row, "l1_xbar_req_pct"), val(row, "l1_breakdown_pct")
    inside = max((v for v in (val(row, "l1_data_pipe_pct"), val(row, "l1_requests_pct")) if known(v)), default=np.nan)
    return bool(path > 0 and known(most) and path >= REQUEST_PATH_SHARE * most and known(inside)
                and path >= 2.0 * inside)


REQUEST_PATH_SHARE = 0.9  # of ncu's largest L1 breakdown item: the request path to L2 is the busiest stage


def wavefronts_per_request(row: Row) -> float:
    """L1 data-stage wavefronts per LSU request, from ncu's breakdown (both items at one per cycle
    peak, over elapsed cycles): 1 for a coalesced 4-byte access of a warp; NaN where unknown."""
    wavefronts, requests = val(row, "l1_data_pipe_pct"), val(row, "l1_requests_pct")
    return wavefronts / requests if requests > 0 and known(wavefronts) else np.nan
