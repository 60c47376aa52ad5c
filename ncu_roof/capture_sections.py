"""Which Nsight Compute section collects which metric: what a verify command (:mod:`ncu_roof.verify`)
asks ncu for, so that it re-collects just what a finding reads.

:data:`SECTION_METRICS` lists, per section identifier (``ncu --section ID``), the metrics of the
catalogue (:mod:`ncu_roof.read.metrics`) that ncu 2024.1.1 collects for that section
(``ncu --section ID --list-metrics``, which runs without a GPU; ``tests/mcp/test_agent_outputs.py`` checks the
table against it). :data:`BREAKDOWN` adds the items of the SpeedOfLight section's throughput
breakdowns (``breakdown:gpu__compute_memory_throughput...``), which ncu expands per chip. The sections
are in the order :func:`sections_for` prefers them. A metric in no section is asked for by name.
"""

from __future__ import annotations

from collections.abc import Iterable

from ncu_roof.read.metrics import L1_BREAKDOWN

# Always in a report whatever was collected: the device's attributes.
ALWAYS = ("device__attribute_",)

SECTION_METRICS: dict[str, tuple[str, ...]] = {
    "SpeedOfLight": (
        "gpu__time_duration.sum",
        "gpu__time_duration.avg",
        "gpc__cycles_elapsed.avg",
        "gpc__cycles_elapsed.avg.per_second",
        "gpc__cycles_elapsed.max",
        "dram__cycles_elapsed.avg.per_second",
        "launch__waves_per_multiprocessor",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__cycles_active.avg",
    ),
    "LaunchStats": (
        "launch__grid_size",
        "launch__block_size",
        "launch__waves_per_multiprocessor",
        "launch__registers_per_thread",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__maximum_warps_per_active_cycle_pct",
    ),
    "Occupancy": (
        "launch__block_size",
        "launch__registers_per_thread",
        "launch__shared_mem_per_block",
        "launch__occupancy_limit_blocks",
        "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem",
        "launch__occupancy_limit_warps",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__maximum_warps_per_active_cycle_pct",
        "sm__warps_active.avg.per_cycle_active",
        "sm__maximum_warps_avg_per_active_cycle",
    ),
    "ComputeWorkloadAnalysis": (
        "sm__inst_issued.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_fp64_op_fp64.avg.pct_of_peak_sustained_active",
        "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tex.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
        "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tma.avg.pct_of_peak_sustained_active",
    ),
    "MemoryWorkloadAnalysis": (
        "dram__bytes.sum.per_second",
    ),
    "MemoryWorkloadAnalysis_Tables": (
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "MemoryWorkloadAnalysis_Chart": (
        "dram__bytes.sum.per_second",
        "lts__t_sectors.sum",
    ),
    "SchedulerStats": (
        "smsp__issue_active.avg.per_cycle_active",
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "smsp__warps_eligible.avg.per_cycle_active",
        "smsp__warps_active.avg.per_cycle_active",
    ),
    "WarpStateStats": (
        "smsp__thread_inst_executed_per_inst_executed.ratio",
        "smsp__issue_active.avg.per_cycle_active",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio",
    ),
    "InstructionStats": (
        "smsp__inst_executed.sum",
    ),
    "SourceCounters": (
        "gpc__cycles_elapsed.avg",
        "gpc__cycles_elapsed.max",
        "memory_l2_theoretical_sectors_global",
        "memory_l2_theoretical_sectors_global_ideal",
        "smsp__inst_executed.sum",
        "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
        "smsp__pcsamp_warps_issue_stalled_short_scoreboard",
        "smsp__pcsamp_warps_issue_stalled_barrier",
        "smsp__pcsamp_warps_issue_stalled_membar",
        "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
        "smsp__pcsamp_warps_issue_stalled_mio_throttle",
        "smsp__pcsamp_warps_issue_stalled_lg_throttle",
        "smsp__pcsamp_warps_issue_stalled_tex_throttle",
        "smsp__pcsamp_warps_issue_stalled_wait",
        "smsp__pcsamp_warps_issue_stalled_not_selected",
        "smsp__pcsamp_warps_issue_stalled_selected",
        "smsp__pcsamp_warps_issue_stalled_dispatch_stall",
        "smsp__pcsamp_warps_issue_stalled_drain",
        "smsp__pcsamp_warps_issue_stalled_branch_resolving",
        "smsp__pcsamp_warps_issue_stalled_no_instructions",
        "smsp__pcsamp_warps_issue_stalled_imc_miss",
        "smsp__pcsamp_warps_issue_stalled_sleeping",
        "smsp__pcsamp_warps_issue_stalled_misc",
    ),
    "SpeedOfLight_RooflineChart": (
        "sm__cycles_elapsed.avg.per_second",
        "smsp__cycles_elapsed.avg.per_second",
        "dram__cycles_elapsed.avg.per_second",
        "dram__bytes.sum.per_second",
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed",
        "derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
        "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
        "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
        "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
        "dram__bytes.sum.peak_sustained",
    ),
    "SpeedOfLight_HierarchicalSingleRooflineChart": (
        "sm__cycles_elapsed.avg.per_second",
        "smsp__cycles_elapsed.avg.per_second",
        "dram__cycles_elapsed.avg.per_second",
        "lts__cycles_elapsed.avg.per_second",
        "l1tex__cycles_elapsed.avg.per_second",
        "dram__bytes.sum.per_second",
        "derived__lts__lts2xbar_bytes.sum.per_second",
        "lts__lts2xbar_cycles_active.sum.per_second",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second",
        "l1tex__lsu_writeback_active_mem_lg.sum.per_second",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
        "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
        "dram__bytes.sum.peak_sustained",
        "lts__lts2xbar_cycles_active.sum.peak_sustained",
        "derived__lts__lts2xbar_bytes.sum.peak_sustained",
        "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained",
        "l1tex__lsu_writeback_active.sum.peak_sustained",
    ),
    "SpeedOfLight_HierarchicalDoubleRooflineChart": (
        "sm__cycles_elapsed.avg.per_second",
        "smsp__cycles_elapsed.avg.per_second",
        "dram__cycles_elapsed.avg.per_second",
        "lts__cycles_elapsed.avg.per_second",
        "l1tex__cycles_elapsed.avg.per_second",
        "dram__bytes.sum.per_second",
        "derived__lts__lts2xbar_bytes.sum.per_second",
        "lts__lts2xbar_cycles_active.sum.per_second",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second",
        "l1tex__lsu_writeback_active_mem_lg.sum.per_second",
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed",
        "derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
        "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
        "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
        "dram__bytes.sum.peak_sustained",
        "lts__lts2xbar_cycles_active.sum.peak_sustained",
        "derived__lts__lts2xbar_bytes.sum.peak_sustained",
        "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained",
        "l1tex__lsu_writeback_active.sum.peak_sustained",
    ),
    "SpeedOfLight_HierarchicalHalfRooflineChart": (
        "sm__cycles_elapsed.avg.per_second",
        "smsp__cycles_elapsed.avg.per_second",
        "dram__cycles_elapsed.avg.per_second",
        "lts__cycles_elapsed.avg.per_second",
        "l1tex__cycles_elapsed.avg.per_second",
        "dram__bytes.sum.per_second",
        "derived__lts__lts2xbar_bytes.sum.per_second",
        "lts__lts2xbar_cycles_active.sum.per_second",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second",
        "l1tex__lsu_writeback_active_mem_lg.sum.per_second",
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed",
        "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed",
        "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed",
        "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained",
        "dram__bytes.sum.peak_sustained",
        "lts__lts2xbar_cycles_active.sum.peak_sustained",
        "derived__lts__lts2xbar_bytes.sum.peak_sustained",
        "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained",
        "l1tex__lsu_writeback_active.sum.peak_sustained",
    ),
    "SpeedOfLight_HierarchicalTensorRooflineChart": (
        "sm__cycles_elapsed.avg.per_second",
        "smsp__cycles_elapsed.avg.per_second",
        "dram__cycles_elapsed.avg.per_second",
        "lts__cycles_elapsed.avg.per_second",
        "l1tex__cycles_elapsed.avg.per_second",
        "dram__bytes.sum.per_second",
        "derived__lts__lts2xbar_bytes.sum.per_second",
        "lts__lts2xbar_cycles_active.sum.per_second",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second",
        "l1tex__lsu_writeback_active_mem_lg.sum.per_second",
        "dram__bytes.sum.peak_sustained",
        "lts__lts2xbar_cycles_active.sum.peak_sustained",
        "derived__lts__lts2xbar_bytes.sum.peak_sustained",
        "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained",
        "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained",
        "l1tex__lsu_writeback_active.sum.peak_sustained",
        "smsp__inst_executed_pipe_tensor.sum.per_cycle_elapsed",
    ),
    "WorkloadDistribution": (
        "sm__cycles_elapsed.avg",
        "smsp__cycles_elapsed.avg",
        "sm__cycles_elapsed.max",
        "sm__cycles_active.avg",
    ),
}
BREAKDOWN = (*L1_BREAKDOWN, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed")


def sections_of(metric: str) -> list[str]:
    """The sections that collect ``metric``, in preference order (["*"] for a device attribute)."""
    if metric.startswith(ALWAYS):
        return ["*"]
    found = [s for s, names in SECTION_METRICS.items() if metric in names]
    return found + (["SpeedOfLight"] if metric in BREAKDOWN and "SpeedOfLight" not in found else [])


def sections_for(metrics: Iterable[str], least: int = 2) -> tuple[list[str], list[str]]:
    """The sections that collect ``metrics`` and the metrics left to ask for by name, each in
    preference order: greedily, the section that collects most of the metrics not yet collected,
    while it collects at least ``least`` of them (a section for one metric costs more passes than
    the metric alone)."""
    wanted = [m for m in dict.fromkeys(metrics) if sections_of(m) != ["*"]]
    holders = {m: sections_of(m) for m in wanted}
    left = [m for m in wanted if holders[m]]
    chosen: list[str] = []
    while left:
        order = list(SECTION_METRICS)
        counts = {s: sum(s in holders[m] for m in left) for s in order}
        best = max(order, key=lambda s: (counts[s], -order.index(s)))
        if counts[best] < least:
            break
        chosen.append(best)
        left = [m for m in left if best not in holders[m]]
    return chosen, [m for m in wanted if m in left or not holders[m]]
