"""The same kernel over the same threads in another block shape: what the fastest shape measured.

A program that sweeps block shapes (a tutorial's (16, 16), (32, 16) and (32, 32) over one matrix)
measures what each shape costs: one kernel, the same grid x block threads, the same work. For each
launch of a slower shape, :func:`block_shape_peers` gives the fastest shape's median time and its
block dimensions: a measured time the launch can reach by its shape alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SHAPE_MIN_GAIN = 0.1  # a shape this much faster than another (of its median time) is a peer
FLOPS_TOLERANCE = 0.01  # FLOPs, where both shapes count them, within this share: the same work
_KEYS = ["report", "device", "kernel", "_threads"]


def block_shape_peers(placed: pd.DataFrame) -> pd.DataFrame:
    """``shape_peer_time_s`` (the fastest other block shape's median time over the same threads) and
    ``shape_peer_block`` (its block dimensions) for each launch whose own shape's median time is at
    least ``SHAPE_MIN_GAIN`` slower; NaN and None elsewhere."""
    out = pd.DataFrame({"shape_peer_time_s": np.nan, "shape_peer_block": None}, index=placed.index)
    needed = ("report", "device", "kernel", "block_dim", "grid_size", "block_size", "time_s")
    if any(c not in placed for c in needed) or placed["block_dim"].nunique() < 2:
        return out
    threads = placed["grid_size"] * placed["block_size"]
    ok = (placed["time_s"] > 0) & (threads > 0) & placed["block_dim"].notna()
    if not ok.any():
        return out
    frame = placed.loc[ok, ["report", "device", "kernel", "block_dim", "time_s"]].astype(
        {"report": str, "device": str, "kernel": str, "block_dim": str})
    frame["_threads"] = threads[ok]
    frame["_flops"] = placed.loc[ok, "flops"] if "flops" in placed else np.nan
    shapes = frame.groupby([*_KEYS, "block_dim"], sort=False).agg(time=("time_s", "median"),
                                                                   flops=("_flops", "median")).reset_index()
    best = shapes.sort_values("time", kind="stable").drop_duplicates(_KEYS)
    shapes = shapes.merge(best, on=_KEYS, suffixes=("", "_best"))
    flops_differ = (shapes["flops"] - shapes["flops_best"]).abs() > FLOPS_TOLERANCE * shapes["flops_best"]
    slower = (shapes["block_dim"] != shapes["block_dim_best"]) & ~flops_differ & (
        shapes["time_best"] <= shapes["time"] * (1.0 - SHAPE_MIN_GAIN))
    peers = shapes.loc[slower, [*_KEYS, "block_dim", "time_best", "block_dim_best"]]
    if peers.empty:
        return out
    matched = frame.reset_index().merge(peers, on=[*_KEYS, "block_dim"]).set_index("index")
    out.loc[matched.index, "shape_peer_time_s"] = matched["time_best"].astype(float)
    out.loc[matched.index, "shape_peer_block"] = matched["block_dim_best"]
    return out
