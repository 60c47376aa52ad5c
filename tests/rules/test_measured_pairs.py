"""Measured truth: kernels before and after a known change, both timed; the finding that names the
change must rank first for the kernel before it, and its stake must hold and be near the win.

Each pair names its cause (the ncu-roof rule whose fix is the change that was made) and where its
truth comes from. A stake is a promise ("fixing this wins at most this much"): at least 90% of the
measured win and at most twice it; where the measured win is within run-to-run noise (under 1% of
the time) the stake must be small too (under 5%). Nsight Compute's own estimate for the same cause
is set beside it (``ncu_rules``), and ncu-roof's must be the closer of the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import cached_diagnosis

NOISE = 0.01  # a measured win under this share of the time is run-to-run noise
SMALL = 0.05  # ...and a stake for it must stay under this share


@dataclass(frozen=True)
class Pair:
    name: str
    before: str  # report, relative to its folder (``ncu:`` Nsight Compute's examples, else ../shared/realdata)
    kernel: str
    after: str
    after_kernel: str
    cause: str  # the ncu-roof rule that names the change
    ncu_rule: str | None  # Nsight Compute's rule for the same cause
    truth: str  # where the change and both timings come from


PAIRS = (
    Pair("coalescing", "ncu:uncoalescedGlobalAccesses/addConstDouble3.ncu-rep", "addConstDouble3",
         "ncu:uncoalescedGlobalAccesses/addConstDouble.ncu-rep", "addConstDouble", "uncoalesced-access",
         "UncoalescedGlobalAccess", "README.TXT: addConstDouble treats the double3 array as doubles"),
    Pair("bank conflicts", "ncu:sharedBankConflicts/transposeCoalesced.ncu-rep", "transposeCoalesced",
         "ncu:sharedBankConflicts/transposeNoBankConflicts.ncu-rep", "transposeNoBankConflicts", "bank-conflicts",
         "UncoalescedSharedAccess", "README.TXT: the shared tile padded to TILE_DIM + 1 columns"),
    Pair("FP64 to FP32", "ncu:instructionMix/sobelDouble.ncu-rep", "Sobel", "ncu:instructionMix/sobelFloat.ncu-rep",
         "Sobel", "fp64-pipe", "SOLFPRoofline", "README.TXT: the float version of the Sobel kernel"),
    Pair("division to multiplication", "NCAR__GPU_workshop/MW_Baseline.ncu-rep", "compute_tendencies_x_279_gpu",
         "NCAR__GPU_workshop/MW_DivToMult.ncu-rep", "compute_tendencies_x_279_gpu", "fp64-pipe", "SOLFPRoofline",
         "NCAR GPU workshop, 10_HandsOnNsight: divisions replaced by multiplications by a reciprocal"),
    Pair("1D to 2D block tiling", "AveryClapp__ESMM-Research/profile_output.a62323b2dd.ncu-rep", "one_blocktiling",
         "AveryClapp__ESMM-Research/profile_output.a62323b2dd.ncu-rep", "two_blocktiling", "same-work-peer", None,
         "ESMM-Research SGEMM ladder (1024^3): each thread computes a 2D tile of C from registers"),
    Pair("coalescing, memory chart only", "Alaric617R__COALDA/uncoalesced_chart_unroll.ncu-rep",
         "rgb_increase_brightness_unroll", "Alaric617R__COALDA/coalesced_chart_unroll.ncu-rep",
         "rgb_increase_brightness_coalesced_unroll", "uncoalesced-access", None,
         "COALDA examples/rgb: 4 pixels a thread, stride-12 RGB triples -> block-strided (consecutive words)"),
)
# pairs ncu-roof does not get right yet (a speed-of-light-only report of the ladder): before the
# vectorized loads the peer finding bounds the rest of the ladder (warptiling, 74 us: 2.05x the next
# rung's 36 us); before the warp tiling the 64-block grid on 80 SMs (52 us) outranks the peer (38 us)
LADDER = "AveryClapp__ESMM-Research/profile_output.a62323b2dd.ncu-rep"
MISSED = (
    Pair("2D block tiling to vectorized loads", LADDER, "two_blocktiling", LADDER, "vectorized_blocktiling",
         "same-work-peer", None, "ESMM-Research SGEMM ladder: float4 loads from global and shared memory"),
    Pair("vectorized to warp tiling", LADDER, "vectorized_blocktiling", LADDER, "warptiling", "same-work-peer", None,
         "ESMM-Research SGEMM ladder: each warp computes a tile of C"),
)


def _path(where: str, realdata: Path, examples: Path) -> Path:
    return examples / where[4:] if where.startswith("ncu:") else realdata / where


def _time(d: Any, kernel: str) -> float:
    return float(d.placed.loc[d.placed["kernel"] == kernel, "time_s"].sum())


def measure(pair: Pair, realdata: Path, examples: Path) -> dict[str, Any]:
    """The pair's numbers: measured win, the first finding for the kernel before, its stake, ncu's estimate."""
    before = cached_diagnosis(_path(pair.before, realdata, examples))
    after = cached_diagnosis(_path(pair.after, realdata, examples))
    t0, t1 = _time(before, pair.kernel), _time(after, pair.after_kernel)
    mine = [f for f in before.findings if pair.kernel in f.kernels]
    cause = next((f for f in mine if f.rule == pair.cause), None)
    ncu = [r for r in before.ncu_rules if r["rule"] == pair.ncu_rule and pair.kernel in r["kernels"]]
    estimates = [e for r in ncu if (e := r["ncu_estimated_speedup_pct"]) is not None and e == e]
    return {"time_s": t0, "win_s": t0 - t1, "first": mine[0].rule if mine else None,
            "stake_s": cause.time_at_stake_s or 0.0 if cause else None,
            "ncu_pct": max(estimates) if estimates else None}


def _check(m: dict[str, Any], pair: Pair) -> None:
    assert m["first"] == pair.cause, m
    stake, win, t = m["stake_s"], m["win_s"], m["time_s"]
    if win < NOISE * t:
        assert stake < SMALL * t, m
        return
    assert 0.9 * win <= stake <= 2.0 * win, m
    if m["ncu_pct"] is not None:  # ncu-roof nearer the truth than Nsight Compute's own estimate
        assert abs(stake - win) <= abs(m["ncu_pct"] / 100 * t - win), m


@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_the_cause_ranks_first_and_its_stake_holds(pair: Pair, realdata: Path, ncu_examples: Path) -> None:
    _check(measure(pair, realdata, ncu_examples), pair)


@pytest.mark.parametrize("pair", MISSED, ids=[p.name for p in MISSED])
@pytest.mark.xfail(strict=True, reason="the stake bounds the rest of the ladder, or the grid finding outranks it")
def test_pairs_not_named_yet(pair: Pair, realdata: Path, ncu_examples: Path) -> None:
    _check(measure(pair, realdata, ncu_examples), pair)


def readme_row(pair: Pair, m: dict[str, Any]) -> str:
    """The pair's row of the table of measured pairs (docs/diagnosis.md)."""
    from ncu_roof.fmt import fmt_seconds

    ncu = f"{fmt_seconds(m['ncu_pct'] / 100 * m['time_s'])} ({m['ncu_pct']:.1f}%)" if m["ncu_pct"] else "-"
    stake = fmt_seconds(m["stake_s"]) if m["stake_s"] is not None else "-"
    return (f"| {pair.name} | `{pair.kernel}` | {fmt_seconds(m['time_s'])} | `{pair.cause}` | `{m['first']}` | "
            f"{stake} | {ncu} | {fmt_seconds(m['win_s'])} |")


def test_the_documented_table_is_the_measured_one(realdata: Path, ncu_examples: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    for pair in (*PAIRS, *MISSED):
        row = readme_row(pair, measure(pair, realdata, ncu_examples))
        assert row in readme, row
