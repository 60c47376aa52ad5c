"""The ideal point without a sidecar: a faster kernel doing the same work, and matrix math re-reading
its operands (``ncu_roof.rules.reference``), on real reports and on a hand GEMM beside cuBLAS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import cached_diagnosis
from stake_oracle import priced as stake

from ncu_roof.diagnosis import Diagnosis, diagnose_table
from ncu_roof.errors import NcuRoofError
from ncu_roof.model.roofline import Thresholds
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.read.normalize import normalize
from ncu_roof.rules.reference import FLOP_TOLERANCE, matrix_signal, peer_of

FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
ZERO_ADD_MUL = {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0.0,
                "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0.0}


def _launch(i: int, kernel: str, time_s: float, flops: float, dram: float, l1: float, grid: float) -> dict[str, Any]:
    row: dict[str, Any] = {c: pd.NA for c in IDENTITY_COLUMNS}
    row.update(report="synthetic_gemm_beside_cublas", id=i, kernel=kernel, kernel_demangled=kernel,
               device="NVIDIA A10G", cc="8.6",
               **{"gpu__time_duration.sum": time_s, FFMA: flops / 2, **ZERO_ADD_MUL, "dram__bytes_read.sum": dram,
                  "dram__bytes_write.sum": 0.0, "l1tex__t_bytes.sum": l1, "launch__grid_size": grid,
                  "launch__block_size": 256.0, "device__attribute_multiprocessor_count": 80.0})
    return row


def _hand_gemm_beside_cublas() -> Diagnosis:
    """The numbers of a hand SGEMM beside cuBLAS in one report (N = 766): 0.90 and 0.97 GFLOP."""
    rows = [_launch(0, "gemm", 8.85e-3, 0.90e9, 5.18e9, 2.1e10, 2304.0),
            _launch(1, "ampere_sgemm_128x64_nn", 77e-6, 0.97e9, 16e6, 1.2e8, 48.0)]
    return diagnose_table(normalize(pd.DataFrame(rows)))


def test_a_hand_gemm_beside_cublas_is_told_to_reuse_its_operands() -> None:
    d = _hand_gemm_beside_cublas()
    mine = [f for f in d.findings if f.kernels == ("gemm",)]
    assert mine[0].rule in ("same-work-peer", "matrix-reuse")
    peer = next(f for f in mine if f.rule == "same-work-peer")
    # cuBLAS does the same work (7% fewer FLOPs) in 77 us, scaled to 0.90 GFLOP: 71.4 us
    assert peer.evidence["peer"] == "ampere_sgemm_128x64_nn"
    assert peer.time_at_stake_s == pytest.approx(8.85e-3 - 77e-6 * 0.90 / 0.97, rel=1e-6)
    assert "does the same 900 MFLOP (fp32) in 77 us, this in 8.85 ms: up to 8.78 ms at stake" in peer.message
    # 5.18 GB against 16 MB x 0.90 / 0.97
    assert "It moves 349x its DRAM" in peer.message and "tiles in shared memory and registers" in peer.message
    # matrix-reuse advises the same change (tiling) at a larger price: one price per fix, the smaller speaks
    assert not [f for f in mine if f.rule == "matrix-reuse"] and peer.evidence["also"] == ["matrix-reuse"]
    row = d.placed[d.placed["kernel"] == "gemm"].iloc[0]
    matrix = matrix_signal(row, Thresholds())
    assert matrix is not None and matrix["n"] == pytest.approx(766.3, abs=0.1)
    assert matrix["tiled_bytes"] == pytest.approx(13 * 766.31 ** 2 * 4, rel=1e-3)  # (2 x 6 + 1) N^2 x 4 B
    # the tiled kernel's time: its 30.5 MB at the practical DRAM roof (the FLOPs need less): the rest at stake
    assert matrix["tiled_s"] == pytest.approx(matrix["tiled_bytes"] / row["dram_roof_bytes_per_s"], rel=1e-12)
    assert matrix["tiled_s"] > matrix["flops_s"] and matrix["relief"].rewrite_s == matrix["tiled_s"]
    assert stake(row, matrix["relief"]) == pytest.approx(8.85e-3 - matrix["tiled_s"], rel=1e-9)
    assert stake(row, matrix["relief"]) > peer.time_at_stake_s
    assert not [f for f in d.findings if f.kernels == ("ampere_sgemm_128x64_nn",) and f.rule == "same-work-peer"]


def test_kernels_of_different_work_or_precision_are_never_peers() -> None:
    rows = [_launch(0, "slow", 1e-3, 1.0e9, 1e9, 4e9, 1024.0), _launch(1, "other", 1e-4, 0.89e9, 1e7, 1e8, 1024.0)]
    assert not [f for f in diagnose_table(normalize(pd.DataFrame(rows))).findings if f.rule == "same-work-peer"]
    rows[1] = _launch(1, "other", 1e-4, 0.91e9, 1e7, 1e8, 1024.0)  # within 10%: the same work
    assert [f for f in diagnose_table(normalize(pd.DataFrame(rows))).findings if f.rule == "same-work-peer"]


def _real_inputs(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".ncu-rep", ".csv"))


def test_no_peer_of_other_work_precision_or_device_in_any_real_report(realdata: Path, ncu_examples: Path) -> None:
    pairs = 0
    for path in [*_real_inputs(realdata), *sorted(ncu_examples.glob("*/*.ncu-rep"))]:
        try:
            d = cached_diagnosis(path)
        except NcuRoofError:
            continue
        for i, j in peer_of(d.placed).items():
            a, b = d.placed.loc[i], d.placed.loc[j]
            assert abs(a["flops"] - b["flops"]) <= FLOP_TOLERANCE * max(a["flops"], b["flops"]) * (1 + 1e-12)
            assert (a["compute_precision"], a["device"]) == (b["compute_precision"], b["device"])
            assert a["kernel"] != b["kernel"] and b["time_s"] / b["flops"] < a["time_s"] / a["flops"]
            pairs += 1
    assert pairs >= 9  # the ESMM tiling ladder (3) and the CUTLASS GEMMs (6)


def test_the_esmm_ladder_names_the_fastest_rung_as_the_reference(realdata: Path) -> None:
    d = cached_diagnosis(realdata / "AveryClapp__ESMM-Research" / "profile_output.a62323b2dd.ncu-rep")
    peers = {f.kernels[0]: f for f in d.findings if f.rule == "same-work-peer"}
    assert set(peers) == {"one_blocktiling", "two_blocktiling", "vectorized_blocktiling"}
    assert {f.evidence["peer"] for f in peers.values()} == {"warptiling"}
    one = peers["one_blocktiling"]  # 432 us where warptiling takes 222 us: 209 us
    assert one.time_at_stake_s == pytest.approx(431.648e-6 - 222.464e-6, rel=1e-4)
    # LSU and L1/TEX both at 64.8% of elapsed cycles here (280 us); warptiling's LSU pipe 39 us, L1/TEX 71 us
    assert "the gap is in LSU pipe (280 us here, 39 us there)" in one.message


def test_matrix_reuse_on_a_kernel_that_tiles_already_asks_for_larger_tiles(realdata: Path) -> None:
    """princ0301 matMulShared (32 x 32 shared tiles, 12x the DRAM bytes a square matmul needs): not
    'tile in shared memory' again but larger block tiles with register tiles inside; Syswea's WMMA GEMM:
    more MMA fragments per warp; Swagatam's untiled convolution: its input tile and halo, and cuDNN rather than
    cuBLAS."""
    shared = cached_diagnosis(realdata / "princ0301__cuda_gpu_kernel" / "matmul_shared_32.ncu-rep")
    [f] = [f for f in shared.findings if f.rule == "matrix-reuse"]
    assert f.message.endswith("Larger shared tiles with register tiles inside, or call cuBLAS/CUTLASS.")
    wmma = cached_diagnosis(realdata / "Syswea__cuda-fused-linear-layer" / "profile_report (4).ncu-rep")
    [w] = [f for f in wmma.findings if f.rule == "matrix-reuse"]
    assert w.message.endswith("Larger shared tiles with more MMA fragments per warp, or call cuBLAS/CUTLASS.")
    conv = cached_diagnosis(realdata / "Swagatam1812__hpca-gpu-memory-profiling" / "variant1.ncu-rep")
    [c] = [f for f in conv.findings if f.rule == "matrix-reuse"]
    assert c.message.endswith("Tile in shared memory (a block's input with its halo, and the filter), or cuDNN.")


def test_peer_reliefs_on_arrays_are_peer_signal_s_on_every_real_peer(realdata: Path, ncu_examples: Path) -> None:
    """same-work-peer prices on arrays (10,000 copied launches: 0.78 -> 0.27 s of rules); each relief is
    the one :func:`peer_signal` gives its launch and peer, to the bit, and copies share one object."""
    from ncu_roof.model.roofline import Thresholds
    from ncu_roof.rules.reference import peer_reliefs, peer_signal
    from ncu_roof.rules.run import RuleRun

    pairs = 0
    for path in sorted({*realdata.rglob("*.ncu-rep"), *realdata.rglob("*.csv"), *ncu_examples.rglob("*.ncu-rep")}):
        try:
            placed = cached_diagnosis(path).placed
        except NcuRoofError:
            continue
        peers = peer_of(placed)
        if not peers:
            continue
        run = RuleRun(placed, Thresholds())
        labels = list(peers)
        at, peer_at = run.positions(pd.Index(labels)), run.positions(pd.Index([peers[x] for x in labels]))
        reliefs = peer_reliefs(run, at, peer_at)
        for i, (a, b) in enumerate(zip(at.tolist(), peer_at.tolist(), strict=True)):
            assert reliefs[i] == peer_signal(run.rows[a], run.rows[b])["relief"], (path.name, labels[i])
        doubled = peer_reliefs(run, at.repeat(2), peer_at.repeat(2))
        assert all(doubled[2 * i] is doubled[2 * i + 1] for i in range(len(at)))
        pairs += len(at)
    assert pairs >= 10


def test_a_peer_gap_that_is_spills_points_at_local_memory(realdata: Path) -> None:
    """AshunFeiyu gemm_v9 (expert read): 'tiles in shared memory and registers' beside cuBLAS, while its
    register tile lives in local memory (5.68 GB past L1, 91% of L2's bytes): the advice says so."""
    d = cached_diagnosis(realdata / "AshunFeiyu__Cuda_Gemm_Practice" / "gemm_v9.ncu-rep")
    [f] = [f for f in d.findings if f.rule == "same-work-peer" and f.kernels == ("gemm",)]
    assert f.time_at_stake_s == pytest.approx(8.781e-3, rel=1e-3) and d.findings[0] is f
    assert f.message.endswith("Most of its traffic is local memory (5.68 GB past L1: see local-memory): keep its "
                              "tiles in registers (constant indices), then reuse as the library call does.")
    assert any(g.rule == "local-memory" and g.kernels == ("gemm",) for g in d.findings)


def test_a_gpu_named_by_its_base_clock_gets_the_matrix_reuse_finding(realdata: Path) -> None:
    """Gardenia's share_tile export names no GPU (CC 8.0, no SM count); its 765 MHz SM clock is the base
    clock of the A100 PCIe 40GB alone among the CC 8.0 entries, so its roofs apply: the naive GEMM gemm_v0
    (36.6 s) re-reads its operands, 33.0 s at stake (expert read 6, M1: it had no roof and no finding)."""
    d = cached_diagnosis(realdata / "Gardenia-Tian__LearningNote4Dev" / "share_tile.csv")
    assert d.placed["device"].eq("NVIDIA A100-PCIE-40GB").all()
    [f] = [f for f in d.findings if f.rule == "matrix-reuse"]
    assert f.kernels == ("gemm_v0",) and f.time_at_stake_s == pytest.approx(33.048, rel=1e-3)
    assert d.findings[0] is f
