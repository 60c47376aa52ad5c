"""The same kernel over the same threads in another block shape (``ncu_roof.model.block_shapes``): the
fastest shape's median time, given to every launch of a slower shape, each number worked by hand."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ncu_roof.model.block_shapes import block_shape_peers


def _launches(*shapes: tuple[str, float, float, list[float]], **extra: Any) -> pd.DataFrame:
    """(block_dim, block_size, grid_size, [times]) -> one launch per time, of kernel k."""
    rows = [{"report": "r", "device": "gpu", "kernel": "k", "block_dim": dim, "block_size": block,
             "grid_size": grid, "time_s": t, **extra}
            for dim, block, grid, times in shapes for t in times]
    return pd.DataFrame(rows)


def test_each_slower_shape_gets_the_fastest_shape_over_the_same_threads() -> None:
    # 1,048,576 threads in three shapes: medians 20, 50 and 65 us; 256 threads in a fourth, alone
    frame = _launches(("(16, 16, 1)", 256, 4096, [19e-6, 20e-6, 21e-6]), ("(32, 16, 1)", 512, 2048, [50e-6, 49e-6]),
                      ("(32, 32, 1)", 1024, 1024, [65e-6]), ("(256, 1, 1)", 256, 1, [3e-6]))
    out = block_shape_peers(frame)
    assert out["shape_peer_time_s"].iloc[3:6].tolist() == [20e-6, 20e-6, 20e-6]
    assert out["shape_peer_block"].iloc[3:6].tolist() == ["(16, 16, 1)"] * 3
    assert out["shape_peer_time_s"].iloc[[0, 1, 2, 6]].isna().all()  # the fastest, and a shape with no peer
    assert out["shape_peer_block"].iloc[[0, 1, 2, 6]].isna().all()


def test_no_peer_under_a_tenth_faster_or_doing_other_work() -> None:
    close = _launches(("(16, 16, 1)", 256, 4096, [20e-6]), ("(32, 8, 1)", 256, 4096, [22.1e-6]))
    assert block_shape_peers(close)["shape_peer_time_s"].isna().all()  # 20 / 22.1 = 0.905: under 10% faster
    apart = _launches(("(16, 16, 1)", 256, 4096, [20e-6]), ("(32, 8, 1)", 256, 4096, [22.3e-6]))
    assert block_shape_peers(apart)["shape_peer_time_s"].tolist()[1] == 20e-6  # 0.897: a peer
    # FLOPs counted on both and 2% apart: not the same work
    work = pd.concat([_launches(("(16, 16, 1)", 256, 4096, [20e-6]), flops=1.00e9),
                      _launches(("(32, 8, 1)", 256, 4096, [40e-6]), flops=1.02e9)], ignore_index=True)
    assert block_shape_peers(work)["shape_peer_time_s"].isna().all()
    # one shape only, or no block dimensions: nothing to compare
    one = _launches(("(16, 16, 1)", 256, 4096, [20e-6, 40e-6]))
    assert block_shape_peers(one)["shape_peer_time_s"].isna().all()
    out = block_shape_peers(apart.drop(columns="block_dim"))
    assert list(out.columns) == ["shape_peer_time_s", "shape_peer_block"] and math.isnan(out["shape_peer_time_s"][1])
