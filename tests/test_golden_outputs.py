"""Golden outputs: every number the pipeline prints for the synthetic fixtures, compared exactly.

Per case, ``tests/golden/<case>.json`` holds the tidy table (``ncu_roof.read.normalize``), the columns
the placement adds (``ncu_roof.model.roofline``), the regions (``ncu_roof.model.algorithmic``) and the
findings of the rules (``ncu_roof.rules.checklist`` and ``ncu_roof.rules.traps``, message and
evidence), with floats rounded to 12 significant digits; ``tests/golden/<case>.md`` is the
Markdown summary. The cases are the loadable CSVs of ``fixtures/synthetic`` (read with their
units through ``ncu_roof.read.units``) and a "trap zoo": synthetic launches that fire every rule.

A changed number fails here and shows up in review: refresh on purpose with
``python -m pytest tests/test_golden_outputs.py --update-golden`` and commit the diff.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ncu_roof.diagnosis import Diagnosis, diagnose_paths, diagnose_table
from ncu_roof.model import (
    algorithmic,  # noqa: F401 - the modules these goldens pin
    roofline,  # noqa: F401 - the modules these goldens pin
)
from ncu_roof.read import (
    normalize,  # noqa: F401 - the modules these goldens pin
    units,  # noqa: F401 - the modules these goldens pin
)
from ncu_roof.read.frame import IDENTITY_COLUMNS
from ncu_roof.render.markdown import render_markdown
from ncu_roof.rules import checklist, traps  # noqa: F401 - the rule modules these goldens pin

ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC = ROOT / "fixtures" / "synthetic"
GOLDEN = Path(__file__).resolve().parent / "golden"
CARD = "NVIDIA GeForce RTX 5070"

FIXTURE_CASES: dict[str, tuple[str, str | None]] = {
    "synthetic_raw_units": ("synthetic_raw_units.csv", None),
    "synthetic_details_rules": ("synthetic_details_rules.csv", None),
    "synthetic_metrics_stdout": ("synthetic_metrics_stdout.csv", None),
    "synthetic_layernorm_unfused": ("synthetic_layernorm_unfused_rtx5070.csv", "synthetic_layernorm.toml"),
    "synthetic_layernorm_fused": ("synthetic_layernorm_fused_rtx5070.csv", "synthetic_layernorm.toml"),
}


def stable(value: Any) -> Any:
    """A JSON-ready value that prints the same everywhere: floats to 12 significant digits,
    NaN/NA as null, the repository path left out of strings."""
    if isinstance(value, dict):
        return {str(k): stable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [stable(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isnan(f):
            return None
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return float(f"{f:.12g}")
    if isinstance(value, str):
        return value.replace(str(ROOT) + "/", "").replace(str(ROOT), "")
    return stable(str(value))


def _records(frame: pd.DataFrame, columns: list[str]) -> list[dict[str, Any]]:
    return [stable({c: row[c] for c in columns}) for _, row in frame.iterrows()]


def outputs(d: Diagnosis, tidy_columns: list[str]) -> dict[str, Any]:
    placed_only = [c for c in d.placed.columns if c not in tidy_columns]
    regions = d.regions.copy()
    if "origin" in regions:  # the sidecar file's path (a temporary folder for the zoo): its name only
        regions["origin"] = regions["origin"].map(lambda p: Path(str(p)).name)
    return {
        "tidy": _records(d.placed, tidy_columns),
        "placed": _records(d.placed, ["id", "kernel", *placed_only]),
        "regions": _records(regions, list(regions.columns)) if len(regions) else [],
        "findings": [stable(f.as_dict()) for f in d.findings],
        "skipped": sorted(s.rule for s in d.skipped),
    }


def check_golden(request: pytest.FixtureRequest, case: str, d: Diagnosis, tidy_columns: list[str]) -> None:
    data = outputs(d, tidy_columns)
    text = json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n"
    markdown = stable(render_markdown(d))
    json_path, md_path = GOLDEN / f"{case}.json", GOLDEN / f"{case}.md"
    if request.config.getoption("--update-golden"):
        json_path.write_text(text, encoding="utf-8")
        md_path.write_text(markdown, encoding="utf-8")
        return
    assert json_path.is_file() and md_path.is_file(), f"no golden for {case}: run pytest --update-golden"
    expected = json.loads(json_path.read_text(encoding="utf-8"))
    for part in ("tidy", "placed", "regions", "findings", "skipped"):
        assert data[part] == expected[part], f"{case}: {part} changed; review, then pytest --update-golden"
    assert markdown == md_path.read_text(encoding="utf-8"), f"{case}: Markdown changed; review, then --update-golden"


@pytest.mark.parametrize("case", sorted(FIXTURE_CASES))
def test_synthetic_fixture_outputs_match_the_golden_files(request: pytest.FixtureRequest, case: str) -> None:
    csv, toml = FIXTURE_CASES[case]
    d = diagnose_paths(SYNTHETIC / csv, algorithmic=SYNTHETIC / toml if toml else None)
    tidy = normalize.normalize(pd.DataFrame({c: [] for c in IDENTITY_COLUMNS}))
    check_golden(request, case, d, [c for c in d.placed.columns if c in tidy.columns])


# --- the trap zoo: one kernel per rule, on the seeds' card (peaks from the device table) ---------
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"
DFMA = "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"
DADD = "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum"
DMUL = "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum"
HFMA = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"
HADD = "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum"
HMUL = "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum"


def _launch(kernel: str, time_s: float, **metrics: float) -> dict[str, Any]:
    row: dict[str, Any] = {c: pd.NA for c in IDENTITY_COLUMNS}
    row.update(report="zoo", kernel=kernel, kernel_demangled=f"void {kernel}(float *)", device=CARD, cc="12.0",
               **{"gpu__time_duration.sum": time_s, "device__attribute_multiprocessor_count": 48.0,
                  FFMA: 0.0, FADD: 0.0, FMUL: 0.0})
    row.update(metrics)
    return row


def _bytes(n: float) -> dict[str, float]:
    return {"dram__bytes_read.sum": 0.75 * n, "dram__bytes_write.sum": 0.25 * n}


# peaks per SM cycle at a 2 GHz SM clock: FP64 2 x 64, FP32 2 x 4096, FP16 4 x 4096 FLOPs per cycle
REPORT_PEAKS = {"sm__cycles_elapsed.avg.per_second": 2.0e9,
                "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained": 64.0,
                "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 4096.0,
                "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained": 4096.0}


def zoo_rows() -> list[dict[str, Any]]:
    rows = [
        # below its roof, no trap counter: below-roof
        _launch("slow_fma", 1e-3, **{FFMA: 0.5e9, **_bytes(1e7)}),
        # on its memory roof: at-roof
        _launch("stream", 1e-3, **{FADD: 1e8, **_bytes(0.95 * 591.36e6)}),
        # 300 blocks on 288 slots: wave-tail
        _launch("tail", 200e-6, **{FFMA: 1e6, **_bytes(2e7), "launch__grid_size": 300.0, "launch__block_size": 256.0,
                                   "launch__waves_per_multiprocessor": 300 / 288}),
        # 12 blocks for 48 SMs: grid-underfill
        _launch("tiny_grid", 300e-6, **{FFMA: 1e6, **_bytes(2e7), "launch__grid_size": 12.0,
                                        "launch__block_size": 128.0, "launch__waves_per_multiprocessor": 0.25}),
        # 3.2x the ideal sectors: uncoalesced-access (ideal-sector path)
        _launch("strided", 400e-6, **{FFMA: 1e6, **_bytes(1e8),
                                      "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 3.2e6,
                                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1e5,
                                      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 1e5,
                                      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": 1e5,
                                      "memory_l2_theoretical_sectors_global": 3.3e6,
                                      "memory_l2_theoretical_sectors_global_ideal": 1.03125e6}),
        # 24 sectors per store request and no ideal count: uncoalesced-access (sectors per request)
        _launch("scatter", 400e-6, **{FFMA: 1e6, **_bytes(1e8),
                                      "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 4e5,
                                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1e5,
                                      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 2.4e6,
                                      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": 1e5}),
        # 40% of shared wavefronts are conflicts: bank-conflicts
        _launch("transpose", 500e-6, **{FFMA: 1e6, **_bytes(1e8),
                                        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 3e5,
                                        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 1e5,
                                        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 6e5,
                                        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 4e5}),
        # 25% theoretical occupancy, limited by registers: low-occupancy
        _launch("fat_regs", 600e-6, **{FFMA: 1e6, **_bytes(1e8), "sm__maximum_warps_per_active_cycle_pct": 25.0,
                                       "sm__warps_active.avg.pct_of_peak_sustained_active": 20.0,
                                       "launch__occupancy_limit_registers": 2.0, "launch__occupancy_limit_warps": 6.0,
                                       "launch__occupancy_limit_shared_mem": 8.0, "launch__registers_per_thread": 128.0,
                                       "launch__grid_size": 4800.0}),
        # 12 of 32 lanes active: divergence
        _launch("branchy", 700e-6, **{FFMA: 1e6, **_bytes(1e8),
                                      "smsp__thread_inst_executed_per_inst_executed.ratio": 12.0}),
        # adds and multiplies in pairs, compute bound: no-fma-roof
        _launch("adds", 1e-3, **{FADD: 6e9, FMUL: 6e9, **_bytes(1e6)}),
        # FP64 on a 1/64-rate card (report peaks 256 GFLOP/s FP64, 16.4 TFLOP/s FP32): fp64-on-consumer-gpu
        _launch("doubles", 2e-3, **{DFMA: 2e8, DADD: 0.0, DMUL: 0.0, **_bytes(1e6), **REPORT_PEAKS}),
        # FP16 on the CUDA cores (report peak 32.8 TFLOP/s FP16): fp16-on-cuda-cores
        _launch("halves", 1e-3, **{HFMA: 4e9, HADD: 0.0, HMUL: 0.0, **_bytes(1e6), **REPORT_PEAKS}),
        # 2 GB in 1 ms: above-dram-roof
        _launch("cached", 1e-3, **{FFMA: 1e6, **_bytes(2e9), "lts__t_bytes.sum": 3e9,
                                   "lts__t_bytes.sum.peak_sustained": 2048.0,
                                   "lts__cycles_elapsed.avg.per_second": 2.0e9}),
        # three short launches that do not scale with grid size: overhead-regime
        *(_launch("small_step", t, **{FFMA: 1e3, **_bytes(1e4), "launch__grid_size": g})
          for t, g in ((5.0e-6, 10.0), (5.2e-6, 40.0), (5.5e-6, 160.0))),
        # below its roof with healthy counters: below-roof names what it checked
        _launch("clean_slow", 800e-6, **{FFMA: 1e6, **_bytes(1e8), "sm__maximum_warps_per_active_cycle_pct": 100.0,
                                         "sm__warps_active.avg.pct_of_peak_sustained_active": 90.0,
                                         "smsp__thread_inst_executed_per_inst_executed.ratio": 32.0,
                                         "launch__waves_per_multiprocessor": 4.0, "launch__grid_size": 1152.0}),
        # a copy on its DRAM roof (no FLOPs: the bandwidth basis) and a GEMM on its FP32 roof
        _launch("copy", 1e-3, **_bytes(0.9 * 591.36e6)),
        _launch("gemm", 1e-3, **{FFMA: 0.85 * 30.9e9 / 2, **_bytes(1e8)}),
        # no FLOP or byte counters, only ncu's speed-of-light %: speed-of-light-only
        {**_launch("opaque", 50e-6, **{"sm__throughput.avg.pct_of_peak_sustained_elapsed": 35.0,
                                        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 72.0}),
         FFMA: np.nan, FADD: np.nan, FMUL: np.nan},
    ]
    return rows


ZOO_ALGORITHMIC = """\
[[region]]
name = "streaming"
kernels = "^stream$"
bytes = 5.3e8
flops = 1.0e8

[[region]]
name = "reuse"
kernels = "^slow_fma$"
bytes = 2.0e6
flops = 1.0e9
"""


def diagnose_zoo(tmp_path: Path) -> Diagnosis:
    raw = pd.DataFrame(zoo_rows())
    raw["id"] = range(len(raw))
    toml = tmp_path / "zoo.toml"
    toml.write_text(ZOO_ALGORITHMIC, encoding="utf-8")
    return diagnose_table(normalize.normalize(raw), algorithmic=toml)


def test_trap_zoo_outputs_match_the_golden_files(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    d = diagnose_zoo(tmp_path)
    fired = {f.rule for f in d.findings}
    assert fired >= {"below-roof", "at-roof", "wave-tail", "grid-underfill", "uncoalesced-access", "bank-conflicts",
                     "low-occupancy", "divergence", "no-fma-roof", "fp16-on-cuda-cores", "above-dram-roof",
                     "overhead-regime", "speed-of-light-only", "fuse-extra-bytes", "at-roof-stop"}
    assert any(r.startswith("fp64") for r in fired)  # fp64-on-consumer-gpu (to be renamed fp64-pipe)
    tidy = normalize.normalize(pd.DataFrame({c: [] for c in IDENTITY_COLUMNS}))
    check_golden(request, "synthetic_trap_zoo", d, [c for c in d.placed.columns if c in tidy.columns])
