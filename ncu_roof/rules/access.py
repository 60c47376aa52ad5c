"""How far a launch's global accesses are from the sectors their data needs: from L1's sector counts
(the Source Counters' ideal, ncu's bytes used per sector, sectors per request) or, in a report that holds
only ncu's memory chart, from L2's side: the sectors L1 writes against the distinct sectors it touches."""

from __future__ import annotations

from typing import Any

from ncu_roof.model.roofline import EPS, SECTOR_BYTES, Thresholds, reaches
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
    worst = 0.0
    for op in ("load", "store"):
        sectors, requests = val(row, f"global_{op}_sectors"), val(row, f"global_{op}_requests")
        if requests > 0 and sectors == sectors:
            worst = max(worst, sectors / requests)
    if worst > th.uncoalesced_sectors_per_request * (1 + EPS):
        return worst / th.uncoalesced_sectors_per_request
    return None


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
