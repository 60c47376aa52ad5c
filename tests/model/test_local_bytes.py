"""DRAM bytes less their local-memory part: one reading (the share of L2's bytes that missed L1 as
local sectors) for the roofline's headroom and the rules, on numbers and on columns alike."""

import math

import numpy as np
import pandas as pd
import pytest

from ncu_roof.model.roofline import dram_without_local


def test_dram_loses_the_share_of_l2_that_is_local() -> None:
    # 4 of 12 GiB through L2 are spills: DRAM keeps two thirds of its 10 GiB
    assert dram_without_local(10.0, 12.0, 4.0) == pytest.approx(10.0 * 2 / 3)
    assert dram_without_local(10.0, 12.0, 30.0) == 0.0  # more local than L2 counted: all of it
    assert dram_without_local(10.0, 0.0, 0.0) == 10.0  # nothing known to take: unchanged
    assert math.isnan(dram_without_local(np.nan, 12.0, 4.0))


def test_columns_keep_their_index_and_unknown_local_keeps_dram() -> None:
    dram = pd.Series([10.0, 10.0, 6.0], index=[3, 5, 7])
    got = dram_without_local(dram, pd.Series([12.0, 12.0, 6.0], index=[3, 5, 7]),
                             pd.Series([6.0, np.nan, 0.0], index=[3, 5, 7]))
    assert list(got.index) == [3, 5, 7] and got.tolist() == pytest.approx([5.0, 10.0, 6.0])
