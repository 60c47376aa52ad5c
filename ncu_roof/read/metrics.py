"""The metric catalogue: the only module that spells Nsight Compute metric names.

Every tidy quantity (``dram_bytes``, ``flops_fp32``, ``peak_dram_bytes_per_s``...) is defined
as an ordered list of :class:`Source` alternatives. A source is a weighted sum of ncu metrics
and a *kind* saying how the sum becomes the quantity:

- ``count``: the metrics are totals already (``dram__bytes_read.sum``);
- ``per_second``: the metrics are rates; total = rate x kernel duration;
- ``per_cycle``: the metrics are ``.per_cycle_elapsed``; total = value x elapsed cycles of the
  unit named in ``cycles`` (itself a tidy quantity such as ``smsp_cycles``);
- ``peak``: a peak per cycle (``.peak_sustained``) x the unit's clock (cycles per second);
- ``value``: a plain value (launch attributes, percentages, ratios);
- ``ratio``: the first metric divided by the second (time = cycles / cycles per second).

Sources are tried in order per launch; the first whose metrics are all present wins, and the
label of the winner is kept beside the value (``<quantity>_src``). Where anchors define a
quantity differently (L2 and L1 bytes, FP16 weights, tensor FLOPs) the label says which
definition was used; see ``DEFINITIONS``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Literal

SourceKind = Literal["count", "per_second", "per_cycle", "peak", "value", "ratio", "max"]


@dataclass(frozen=True)
class Term:
    """One ncu metric in a source, with its weight (FMA counts twice, sectors are 32 bytes)."""

    metric: str
    weight: float = 1.0


@dataclass(frozen=True)
class Source:
    """One way to obtain a quantity from the metrics a report holds."""

    terms: tuple[Term, ...]
    kind: SourceKind
    label: str
    cycles: str | None = None  # tidy quantity giving elapsed cycles (per_cycle) or clock (peak)

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(t.metric for t in self.terms)


@dataclass(frozen=True)
class Quantity:
    """A tidy column and the ordered sources that can fill it."""

    name: str
    unit: str
    sources: tuple[Source, ...]
    doc: str
    tracked: bool = False  # keep a ``<name>_src`` column naming the source used


def _t(*pairs: str | tuple[str, float]) -> tuple[Term, ...]:
    return tuple(Term(p) if isinstance(p, str) else Term(p[0], p[1]) for p in pairs)


def _count(label: str, *terms: str | tuple[str, float]) -> Source:
    return Source(_t(*terms), "count", label)


def _rate(label: str, *terms: str | tuple[str, float]) -> Source:
    return Source(_t(*terms), "per_second", label)


def _per_cycle(label: str, cycles: str, *terms: str | tuple[str, float]) -> Source:
    return Source(_t(*terms), "per_cycle", label, cycles)


def _peak(label: str, clock: str, *terms: str | tuple[str, float]) -> Source:
    return Source(_t(*terms), "peak", label, clock)


def _value(label: str, metric: str) -> Source:
    return Source(_t(metric), "value", label)


# --- definitions that differ between anchors ------------------------------------------------
DEFINITIONS: dict[str, str] = {
    "dram": "bytes read from plus written to device memory (dram__bytes)",
    "l2:lts__t_bytes": "L2: all L2 tag traffic, lts__t_bytes (NERSC, older ncu hierarchical roofline)",
    "l2:lts2xbar": "L2: L2-to-SM return traffic, 32 x lts__lts2xbar_cycles_active "
    "(current ncu hierarchical roofline)",
    "l2:xbar2l1tex": "L2: bytes L1 read from L2 over the crossbar, l1tex__m_xbar2l1tex_read_bytes "
    "(ncu 2023.1 hierarchical roofline)",
    "l1:l1tex__t_bytes": "L1: all L1/TEX tag traffic, l1tex__t_bytes (NERSC)",
    "l1:lsu_writeback": "L1: 128 x l1tex__lsu_writeback_active_mem_lg(ds), bytes written back to "
    "registers (current ncu hierarchical roofline)",
    "fp16:ncu": "FP16 FLOPs with ncu's weights 4*hfma + 2*hadd + 2*hmul (packed half2)",
    "tensor:ops": "tensor FLOPs from sm__ops_path_tensor_* (ops counted by the hardware)",
    "tensor:inst": "tensor FLOPs as tensor-pipe instructions x FLOPs per instruction for the compute capability "
    "(512 on Volta as NERSC, 2,048 on Turing, 4,096 on Ampere/Ada; unknown on Hopper and later)",
}

# --- time, cycles and clocks ----------------------------------------------------------------
_TIME = Quantity(
    "time_s",
    "s",
    (
        _count("gpu__time_duration.sum", "gpu__time_duration.sum"),
        _count("gpu__time_duration.avg", "gpu__time_duration.avg"),
        *(Source(_t(f"{unit}__cycles_elapsed.avg", f"{unit}__cycles_elapsed.avg.per_second"), "ratio",
                 f"{unit}__cycles_elapsed.avg / {unit}__cycles_elapsed.avg.per_second (NERSC)")
          for unit in ("sm", "smsp", "gpc", "sys")),
        *(Source(_t(f"{unit}__cycles_elapsed.max", f"{unit}__cycles_elapsed.avg.per_second"), "ratio",
                 f"{unit}__cycles_elapsed.max / {unit}__cycles_elapsed.avg.per_second")
          for unit in ("gpc", "sm")),
    ),
    "kernel duration",
    tracked=True,
)


def _clock(unit: str) -> Quantity:
    return Quantity(
        f"{unit}_clock_hz",
        "Hz",
        (_count(f"{unit}__cycles_elapsed.avg.per_second", f"{unit}__cycles_elapsed.avg.per_second"),),
        f"{unit} clock (elapsed cycles per second, averaged over units)",
    )


def _cycles(unit: str) -> Quantity:
    # the SMs run on the GPC clock: gpc__cycles_elapsed stands in where the report has no sm__ one
    stand_ins = (unit, "gpc") if unit == "sm" else (unit,)
    return Quantity(
        f"{unit}_cycles",
        "cycle",
        (
            _count(f"{unit}__cycles_elapsed.avg", f"{unit}__cycles_elapsed.avg"),
            *(Source(_t(f"{u}__cycles_elapsed.avg.per_second"), "per_second",
                     f"{u}__cycles_elapsed.avg.per_second x time") for u in stand_ins),
        ),
        f"elapsed {unit} cycles per unit during the launch",
    )


_UNITS = ("sm", "smsp", "dram", "lts", "l1tex")
_CLOCKS = tuple(_clock(u) for u in _UNITS)
# ncu 2022-2024 details pages name "SM Frequency" gpc__cycles_elapsed.avg.per_second (same clock)
_CLOCKS = tuple(
    Quantity(q.name, q.unit, (*q.sources, _count("gpc__cycles_elapsed.avg.per_second",
                                                  "gpc__cycles_elapsed.avg.per_second")), q.doc)
    if q.name == "sm_clock_hz" else q
    for q in _CLOCKS
)
_CYCLES = tuple(_cycles(u) for u in ("sm", "smsp"))

# --- bytes per memory level -----------------------------------------------------------------
_DRAM = Quantity(
    "dram_bytes",
    "byte",
    (
        _count("dram__bytes.sum", "dram__bytes.sum"),
        _count("dram__bytes_read.sum + dram__bytes_write.sum", "dram__bytes_read.sum",
               "dram__bytes_write.sum"),
        _count("dram__bytes_op_read.sum + dram__bytes_op_write.sum", "dram__bytes_op_read.sum",
               "dram__bytes_op_write.sum"),
        _count("32 x (dram__sectors_read.sum + dram__sectors_write.sum)",
               ("dram__sectors_read.sum", 32.0), ("dram__sectors_write.sum", 32.0)),
        _rate("dram__bytes.sum.per_second x time", "dram__bytes.sum.per_second"),
        _rate("(dram__bytes_read + dram__bytes_write).sum.per_second x time",
              "dram__bytes_read.sum.per_second", "dram__bytes_write.sum.per_second"),
        _rate("(dram__bytes_op_read + dram__bytes_op_write).sum.per_second x time",
              "dram__bytes_op_read.sum.per_second", "dram__bytes_op_write.sum.per_second"),
    ),
    "bytes moved between device memory and L2",
    tracked=True,
)
_DRAM_READ = Quantity(
    "dram_read_bytes",
    "byte",
    (
        _count("dram__bytes_read.sum", "dram__bytes_read.sum"),
        _count("dram__bytes_op_read.sum", "dram__bytes_op_read.sum"),
        _rate("dram__bytes_read.sum.per_second x time", "dram__bytes_read.sum.per_second"),
        _rate("dram__bytes_op_read.sum.per_second x time", "dram__bytes_op_read.sum.per_second"),
    ),
    "bytes read from device memory",
)
_L2 = Quantity(
    "l2_bytes",
    "byte",
    (
        _count("lts__t_bytes.sum [l2:lts__t_bytes]", "lts__t_bytes.sum"),
        _count("32 x lts__t_sectors.sum [l2:lts__t_bytes]", ("lts__t_sectors.sum", 32.0)),
        _rate("lts__t_bytes.sum.per_second x time [l2:lts__t_bytes]", "lts__t_bytes.sum.per_second"),
        _rate("32 x lts__t_sectors.sum.per_second x time [l2:lts__t_bytes]",
              ("lts__t_sectors.sum.per_second", 32.0)),
        _count("derived__lts__lts2xbar_bytes.sum [l2:lts2xbar]", "derived__lts__lts2xbar_bytes.sum"),
        _count("32 x lts__lts2xbar_cycles_active.sum [l2:lts2xbar]",
               ("lts__lts2xbar_cycles_active.sum", 32.0)),
        _rate("derived__lts__lts2xbar_bytes.sum.per_second x time [l2:lts2xbar]",
              "derived__lts__lts2xbar_bytes.sum.per_second"),
        _rate("32 x lts__lts2xbar_cycles_active.sum.per_second x time [l2:lts2xbar]",
              ("lts__lts2xbar_cycles_active.sum.per_second", 32.0)),
        _count("l1tex__m_xbar2l1tex_read_bytes.sum [l2:xbar2l1tex]",
               "l1tex__m_xbar2l1tex_read_bytes.sum"),
        _rate("l1tex__m_xbar2l1tex_read_bytes.sum.per_second x time [l2:xbar2l1tex]",
              "l1tex__m_xbar2l1tex_read_bytes.sum.per_second"),
    ),
    "bytes through the L2 cache (definition in the source label)",
    tracked=True,
)
_L1 = Quantity(
    "l1_bytes",
    "byte",
    (
        _count("l1tex__t_bytes.sum [l1:l1tex__t_bytes]", "l1tex__t_bytes.sum"),
        _count("32 x l1tex__t_sectors.sum [l1:l1tex__t_bytes]", ("l1tex__t_sectors.sum", 32.0)),
        _rate("l1tex__t_bytes.sum.per_second x time [l1:l1tex__t_bytes]",
              "l1tex__t_bytes.sum.per_second"),
        _count("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum [l1:lsu_writeback]",
               "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum"),
        _count("derived__l1tex__lsu_writeback_bytes_mem_lg.sum [l1:lsu_writeback]",
               "derived__l1tex__lsu_writeback_bytes_mem_lg.sum"),
        _count("128 x l1tex__lsu_writeback_active_mem_lgds.sum [l1:lsu_writeback]",
               ("l1tex__lsu_writeback_active_mem_lgds.sum", 128.0)),
        _count("128 x l1tex__lsu_writeback_active_mem_lg.sum [l1:lsu_writeback]",
               ("l1tex__lsu_writeback_active_mem_lg.sum", 128.0)),
        _rate("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second x time [l1:lsu_writeback]",
              "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second"),
        _rate("derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second x time [l1:lsu_writeback]",
              "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second"),
        _rate("128 x l1tex__lsu_writeback_active_mem_lg.sum.per_second x time [l1:lsu_writeback]",
              ("l1tex__lsu_writeback_active_mem_lg.sum.per_second", 128.0)),
        _count("128 x l1tex__lsu_writeback_active.sum (CC <= 7.2) [l1:lsu_writeback]",
               ("l1tex__lsu_writeback_active.sum", 128.0)),
    ),
    "bytes through the L1/TEX cache (definition in the source label)",
    tracked=True,
)
_SHARED = Quantity(
    "shared_bytes",
    "byte",
    (
        _count("smsp__sass_data_bytes_mem_shared.sum", "smsp__sass_data_bytes_mem_shared.sum"),
        _count("smsp__sass_data_bytes_mem_shared_op_ld.sum + _op_st.sum",
               "smsp__sass_data_bytes_mem_shared_op_ld.sum",
               "smsp__sass_data_bytes_mem_shared_op_st.sum"),
        _count("128 x l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum (upper bound)",
               ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 128.0),
               ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 128.0)),
    ),
    "bytes through shared memory (not part of ncu's roofline; label says which counter)",
    tracked=True,
)

# --- FLOPs per precision --------------------------------------------------------------------
_OP = "sass_thread_inst_executed_op_{op}_pred_on"


def _inst(prefix: str, op: str, suffix: str) -> str:
    return f"{prefix}__{_OP.format(op=op)}.sum{suffix}"


def _inst_quantity(op: str) -> Quantity:
    """Thread instructions of one op (ffma, fadd, ...), from counters or per-cycle rates."""
    sources: list[Source] = []
    for prefix in ("smsp", "sm"):
        sources.append(_count(_inst(prefix, op, ""), _inst(prefix, op, "")))
    for prefix in ("smsp", "sm"):
        metric = _inst(prefix, op, ".per_cycle_elapsed")
        sources.append(_per_cycle(f"{metric} x {prefix} cycles", f"{prefix}_cycles", metric))
    return Quantity(f"inst_{op}", "inst", tuple(sources), f"thread {op.upper()} instructions executed")


_INST_OPS = ("dfma", "dadd", "dmul", "ffma", "fadd", "fmul", "hfma", "hadd", "hmul")
_INST = tuple(_inst_quantity(op) for op in _INST_OPS)

# derived "_x2" per-cycle forms (FMA already doubled) exist in reports without the plain ones.
_DERIVED_X = {
    "dfma": ("derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2", 2.0),
    "ffma": ("derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2", 2.0),
    "hfma": ("derived__smsp__sass_thread_inst_executed_op_hfma_pred_on_x4", 4.0),
    "hadd": ("derived__smsp__sass_thread_inst_executed_op_hadd_pred_on_x2", 2.0),
    "hmul": ("derived__smsp__sass_thread_inst_executed_op_hmul_pred_on_x2", 2.0),
}
_INST_DERIVED = tuple(
    Quantity(
        f"inst_{op}",
        "inst",
        (_per_cycle(f"{name} / {int(w)} x smsp cycles", "smsp_cycles", (name, 1.0 / w)),),
        f"thread {op.upper()} instructions (from ncu's derived x{int(w)} form)",
    )
    for op, (name, w) in _DERIVED_X.items()
)

# FLOP weights per instruction kind. FP16 uses ncu's weights (packed half2); NERSC uses 2/1/1.
FLOP_WEIGHTS: dict[str, dict[str, float]] = {
    "fp64": {"dfma": 2.0, "dadd": 1.0, "dmul": 1.0},
    "fp32": {"ffma": 2.0, "fadd": 1.0, "fmul": 1.0},
    "fp16": {"hfma": 4.0, "hadd": 2.0, "hmul": 2.0},
}

# --- tensor cores ---------------------------------------------------------------------------
TENSOR_OPS_PATTERN = re.compile(r"^sm__ops_path_tensor_[a-z0-9_]+\.sum(\.per_cycle_elapsed|\.peak_sustained)?$")
TENSOR_INST_METRICS = ("sm__inst_executed_pipe_tensor.sum", "smsp__inst_executed_pipe_tensor.sum")
# FLOPs per warp-level tensor instruction by compute capability, for reports that count only
# tensor-pipe instructions: NERSC's 512 for Volta's HMMA.884; Turing's HMMA.1688 (16x8x8) does
# 2,048 and Ampere/Ada's HMMA.16816 (16x8x16) 4,096. Hopper and later issue other shapes: unknown.
TENSOR_FLOPS_PER_INST = {"7.0": 512.0, "7.2": 512.0, "7.5": 2048.0, "8.0": 4096.0, "8.6": 4096.0,
                         "8.7": 4096.0, "8.9": 4096.0}


def tensor_variant(metric: str) -> str | None:
    """``sm__ops_path_tensor_src_fp16_dst_fp32.sum`` -> ``src_fp16_dst_fp32``."""
    m = re.match(r"^sm__ops_path_tensor_([a-z0-9_]+)\.sum", metric)
    return m.group(1) if m else None


def tensor_precision(variant: str) -> str:
    """The input data type of a tensor variant: fp16, bf16, tf32, fp64, fp8, fp4, int8, int4, int1."""
    for dtype in ("fp4_fp6_fp8", "fp16", "bf16", "tf32", "fp64", "fp8", "fp4", "int8", "int4", "int1"):
        if f"src_{dtype}" in variant:
            return "fp8" if dtype == "fp4_fp6_fp8" else dtype
    return "other"


# --- peaks the report holds -----------------------------------------------------------------
def _flop_peak(prec: str, op: str, weight: float) -> Quantity:
    sources = tuple(
        _peak(f"{weight:g} x {_inst(p, op, '.peak_sustained')} x {p} clock", f"{p}_clock_hz",
              (_inst(p, op, ".peak_sustained"), weight))
        for p in ("sm", "smsp")
    )
    return Quantity(f"peak_{prec}_flops_per_s", "FLOP/s", sources, f"{prec.upper()} FMA roof", tracked=True)


_PEAKS = (
    _flop_peak("fp64", "dfma", 2.0),
    _flop_peak("fp32", "ffma", 2.0),
    _flop_peak("fp16", "hfma", 4.0),
    Quantity(
        "peak_dram_bytes_per_s",
        "byte/s",
        (
            _peak("dram__bytes.sum.peak_sustained x dram clock", "dram_clock_hz", "dram__bytes.sum.peak_sustained"),
            _peak("dram__bytes_read.sum.peak_sustained x dram clock", "dram_clock_hz",
                  "dram__bytes_read.sum.peak_sustained"),
        ),
        "DRAM bandwidth roof at the measured memory clock",
        tracked=True,
    ),
    Quantity(
        "peak_l2_bytes_per_s",
        "byte/s",
        (
            _peak("lts__t_bytes.sum.peak_sustained x lts clock [l2:lts__t_bytes]", "lts_clock_hz",
                  "lts__t_bytes.sum.peak_sustained"),
            _peak("32 x lts__t_sectors.sum.peak_sustained x lts clock [l2:lts__t_bytes]", "lts_clock_hz",
                  ("lts__t_sectors.sum.peak_sustained", 32.0)),
            _peak("32 x lts__lts2xbar_cycles_active.sum.peak_sustained x lts clock [l2:lts2xbar]",
                  "lts_clock_hz", ("lts__lts2xbar_cycles_active.sum.peak_sustained", 32.0)),
            _peak("derived__lts__lts2xbar_bytes.sum.peak_sustained x lts clock [l2:lts2xbar]",
                  "lts_clock_hz", "derived__lts__lts2xbar_bytes.sum.peak_sustained"),
            _peak("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained x l1tex clock [l2:xbar2l1tex]",
                  "l1tex_clock_hz", "l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained"),
        ),
        "L2 bandwidth roof",
        tracked=True,
    ),
    Quantity(
        "peak_l1_bytes_per_s",
        "byte/s",
        (
            _peak("l1tex__t_bytes.sum.peak_sustained x l1tex clock [l1:l1tex__t_bytes]", "l1tex_clock_hz",
                  "l1tex__t_bytes.sum.peak_sustained"),
            _peak("128 x l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained x l1tex clock [l1:lsu_writeback]",
                  "l1tex_clock_hz", ("l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained", 128.0)),
            _peak("128 x l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained x l1tex clock [l1:lsu_writeback]",
                  "l1tex_clock_hz", ("l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained", 128.0)),
            _peak("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained x l1tex clock [l1:lsu_writeback]",
                  "l1tex_clock_hz", "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained"),
            _peak("derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained x l1tex clock [l1:lsu_writeback]",
                  "l1tex_clock_hz", "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.peak_sustained"),
            _peak("128 x l1tex__lsu_writeback_active.sum.peak_sustained x l1tex clock [l1:lsu_writeback]",
                  "l1tex_clock_hz", ("l1tex__lsu_writeback_active.sum.peak_sustained", 128.0)),
        ),
        "L1 bandwidth roof",
        tracked=True,
    ),
)

# --- launch, occupancy, access pattern ------------------------------------------------------
def _metric_value(name: str, unit: str, metric: str, doc: str) -> Quantity:
    """One metric read as it is, labelled with its own name."""
    return Quantity(name, unit, (_value(metric, metric),), doc)


_LAUNCH = (
    _metric_value("grid_size", "block", "launch__grid_size", "blocks in the grid"),
    _metric_value("block_size", "thread", "launch__block_size", "threads per block"),
    _metric_value("waves", "wave", "launch__waves_per_multiprocessor", "waves per SM (grid / blocks that fit at once)"),
    _metric_value("registers_per_thread", "register", "launch__registers_per_thread", "registers per thread"),
    _metric_value("shared_mem_per_block", "byte", "launch__shared_mem_per_block",
                  "shared memory per block (static + dynamic)"),
    _metric_value("occupancy_limit_blocks", "block", "launch__occupancy_limit_blocks",
                  "blocks per SM allowed by the block limit"),
    _metric_value("occupancy_limit_registers", "block", "launch__occupancy_limit_registers",
                  "blocks per SM allowed by registers"),
    _metric_value("occupancy_limit_shared_mem", "block", "launch__occupancy_limit_shared_mem",
                  "blocks per SM allowed by shared memory"),
    _metric_value("occupancy_limit_warps", "block", "launch__occupancy_limit_warps", "blocks per SM allowed by warps"),
    _metric_value("sm_count", "SM", "device__attribute_multiprocessor_count",
                  "streaming multiprocessors on the device"),
    Quantity("sm_clock_spec_hz", "Hz", (Source(_t(("device__attribute_clock_rate", 1e3)), "value",
                                                "device__attribute_clock_rate (kHz)"),),
             "rated SM clock from the device attributes"),
    _metric_value("achieved_occupancy_pct", "%", "sm__warps_active.avg.pct_of_peak_sustained_active",
                  "achieved occupancy"),
    _metric_value("theoretical_occupancy_pct", "%", "sm__maximum_warps_per_active_cycle_pct", "theoretical occupancy"),
    _metric_value("threads_per_inst", "thread", "smsp__thread_inst_executed_per_inst_executed.ratio",
                  "active threads per executed warp instruction (32 = no divergence)"),
    _metric_value("branch_uniform_pct", "%", "smsp__sass_average_branch_targets_threads_uniform.pct",
                  "branch targets every active thread of the warp took alike, % (100 = no branch diverges)"),
    _metric_value("sm_throughput_pct", "%", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                  "SM speed-of-light throughput"),
    _metric_value("memory_throughput_pct", "%", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                  "memory speed-of-light throughput"),
    Quantity("dram_throughput_pct", "%",
             (_value("dram__throughput.avg.pct_of_peak_sustained_elapsed",
                     "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
              # the id behind the "DRAM Throughput" label in ncu 2022-2024 section files
              _value("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                     "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")),
             "DRAM speed-of-light throughput"),
)


def _sum_value(name: str, unit: str, doc: str, *metrics: str) -> Quantity:
    return Quantity(name, unit, (_count(" + ".join(metrics), *metrics),), doc)


_ACCESS = (
    _sum_value("global_load_sectors", "sector", "global load sectors",
               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    _sum_value("global_load_requests", "request", "global load requests",
               "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    _sum_value("global_store_sectors", "sector", "global store sectors",
               "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
    _sum_value("global_store_requests", "request", "global store requests",
               "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
    # L1's traffic as L2 sees it (ncu's memory chart): what a chart-only report holds of the access pattern
    _sum_value("l2_write_sectors_from_l1", "sector", "L2 sectors written by L1 (global stores write through)",
               "lts__t_sectors_srcunit_tex_op_write.sum"),
    _sum_value("l2_read_sectors_from_l1", "sector", "L2 sectors read by L1 (its misses)",
               "lts__t_sectors_srcunit_tex_op_read.sum"),
    _sum_value("l2_missed_sectors_from_l1", "sector", "L2 sectors L1 asked for that missed L2 (with caches "
               "flushed: the distinct sectors touched, where L2 holds them)",
               "lts__t_sectors_srcunit_tex_lookup_miss.sum"),
    _sum_value("shared_bank_conflicts", "conflict", "shared-memory bank conflicts (ld + st)",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    _sum_value("shared_wavefronts", "wavefront", "shared-memory wavefronts (ld + st)",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
    _sum_value("shared_requests", "request", "shared-memory instructions (ld + st)",
               "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"),
    Quantity("global_load_inst", "inst", tuple(_count(m, m) for m in (
        "smsp__inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_ld.sum",
        "sm__sass_inst_executed_op_global_ld.sum")), "global load warp instructions"),
    Quantity("global_store_inst", "inst", tuple(_count(m, m) for m in (
        "smsp__inst_executed_op_global_st.sum", "smsp__sass_inst_executed_op_global_st.sum",
        "sm__sass_inst_executed_op_global_st.sum")), "global store warp instructions"),
    _sum_value("local_load_sectors", "sector", "local-memory load sectors (spills, arrays indexed at run time)",
               "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"),
    _sum_value("local_store_sectors", "sector", "local-memory store sectors",
               "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"),
    _sum_value("local_load_sectors_missed", "sector", "local-memory load sectors that miss L1 (read from L2)",
               "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum"),
    _sum_value("local_store_sectors_missed", "sector", "local-memory store sectors that miss L1 (sent to L2)",
               "l1tex__t_sectors_pipe_lsu_mem_local_op_st_lookup_miss.sum"),
    # a full set (ncu 2023 on) holds the last three, not the first: LDGSTS is split by cache policy there
    Quantity("async_copy_inst", "inst", (_count("sm__sass_inst_executed_op_ldgsts.sum",
                                                "sm__sass_inst_executed_op_ldgsts.sum"),
                                         _count("smsp__inst_executed_op_ldgsts.sum",
                                                "smsp__inst_executed_op_ldgsts.sum"),
                                         _count("sm__sass_inst_executed_op_ldgsts_cache_access.sum + "
                                                "sm__sass_inst_executed_op_ldgsts_cache_bypass.sum",
                                                "sm__sass_inst_executed_op_ldgsts_cache_access.sum",
                                                "sm__sass_inst_executed_op_ldgsts_cache_bypass.sum"),
                                         _count("l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
                                                "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum")),
             "asynchronous global-to-shared copy instructions (LDGSTS: cp.async)"),
    *(Quantity(f"local_{op}_inst", "inst",
               (_count(f"sm__sass_inst_executed_op_local_{ld}.sum", f"sm__sass_inst_executed_op_local_{ld}.sum"),
                _count(f"smsp__sass_inst_executed_op_local_{ld}.sum", f"smsp__sass_inst_executed_op_local_{ld}.sum"),
                _count(f"sass__inst_executed_local_{op}s", f"sass__inst_executed_local_{op}s")),
               f"local-memory {op} warp instructions") for op, ld in (("load", "ld"), ("store", "st"))),
    _sum_value("global_sectors_theoretical", "sector", "L2 sectors the global accesses ask for (SourceCounters)",
               "memory_l2_theoretical_sectors_global"),
    _sum_value("global_sectors_ideal", "sector", "L2 sectors the same accesses would need if coalesced",
               "memory_l2_theoretical_sectors_global_ideal"),
)

# --- below the roof: what names the limiter (occupancy, pipes, stalls, instruction mix) -------
_LIMITS = (
    _metric_value("max_warps_per_sm", "warp", "device__attribute_max_warps_per_multiprocessor",
                  "warps an SM can hold"),
    _metric_value("max_blocks_per_sm", "block", "device__attribute_max_blocks_per_multiprocessor",
                  "blocks an SM can hold"),
    _metric_value("max_registers_per_sm", "register", "device__attribute_max_registers_per_multiprocessor",
                  "registers per SM"),
    _metric_value("max_shared_mem_per_sm", "byte", "device__attribute_max_shared_memory_per_multiprocessor",
                  "shared memory per SM"),
    _metric_value("occupancy_limit_barriers", "block", "launch__occupancy_limit_barriers",
                  "blocks per SM allowed by barriers"),
    _metric_value("achieved_warps_per_sm", "warp", "sm__warps_active.avg.per_cycle_active",
                  "warps resident per SM per active cycle (achieved)"),
    _metric_value("theoretical_warps_per_sm", "warp", "sm__maximum_warps_avg_per_active_cycle",
                  "warps per SM the launch allows (theoretical)"),
    Quantity("issue_active", "fraction",
             (_value("smsp__issue_active.avg.per_cycle_active", "smsp__issue_active.avg.per_cycle_active"),
              Source(_t(("smsp__issue_active.avg.pct_of_peak_sustained_active", 0.01)), "value",
                     "smsp__issue_active.avg.pct_of_peak_sustained_active / 100"),
              Source(_t(("sm__inst_issued.avg.pct_of_peak_sustained_active", 0.01)), "value",
                     "sm__inst_issued.avg.pct_of_peak_sustained_active / 100 (Issue Slots Busy)"),
              # an SM's instructions issued per active cycle over its 4 schedulers (one issue each a cycle,
              # Volta on): what `ncu --metrics` CSVs that ask for sm__inst_issued per cycle hold
              Source(_t(("sm__inst_issued.avg.per_cycle_active", 0.25)), "value",
                     "sm__inst_issued.avg.per_cycle_active / 4 (an SM's 4 schedulers)")),
             "issue slots used per scheduler cycle (1 = an instruction every cycle)"),
    _metric_value("warps_eligible_per_scheduler", "warp", "smsp__warps_eligible.avg.per_cycle_active",
                  "warps ready to issue per scheduler cycle"),
    _metric_value("warps_active_per_scheduler", "warp", "smsp__warps_active.avg.per_cycle_active",
                  "warps resident per scheduler cycle"),
    _metric_value("warp_inst_executed", "inst", "smsp__inst_executed.sum", "warp instructions executed"),
)

# Pipe utilisation (% of peak over active cycles), first the instructions issued to the pipe, then its
# busy cycles; a pipe absent on a chip (fp64 on most consumer parts reports 0) stays as ncu says.
PIPES: dict[str, tuple[str, ...]] = {
    "fp64": ("sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
             "sm__inst_executed_pipe_fp64_op_fp64.avg.pct_of_peak_sustained_active",
             "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
             "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "fma": ("sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "fmaheavy": ("sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_elapsed",),
    "alu": ("sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
            "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "fp16": ("sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_active",
             "sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_active"),
    "lsu": ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed"),
    "xu": ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
           "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed"),
    "tensor": ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
               "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active"),
    "adu": ("sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active",),
    "cbu": ("sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_active",),
    "uniform": ("sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active",),
    "tex": ("sm__inst_executed_pipe_tex.avg.pct_of_peak_sustained_active",),
}
_PIPES = tuple(Quantity(f"pipe_{p}_pct", "%", tuple(_value(m, m) for m in names),
                        f"{p} pipe utilisation, % of peak over elapsed cycles") for p, names in PIPES.items())

# Which tensor path is busy (Hopper and Blackwell keep the Ampere-style HMMA path beside their own):
# ``hmma`` mma.sync/WMMA, ``gmma`` Hopper's warpgroup MMA (wgmma), ``tc`` Blackwell's tcgen05
# (its operands in tensor memory, TMEM), and the tensor memory accelerator (TMA) that feeds both.
TENSOR_PATHS: dict[str, tuple[str, ...]] = {
    "hmma": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
             "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
             "sm__pipe_tensor_subpipe_hmma_cycles_active.avg.pct_of_peak_sustained_active",
             "sm__inst_executed_pipe_tensor_subpipe_hmma.avg.pct_of_peak_sustained_active",
             "sm__pipe_tensor_subpipe_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "gmma": ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
             "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"),
    "tc": ("sm__pipe_tc_cycles_active.avg.pct_of_peak_sustained_active",
           "sm__inst_executed_pipe_tc.avg.pct_of_peak_sustained_active",
           "sm__pipe_tc_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "tmem": ("sm__inst_executed_pipe_tmem.avg.pct_of_peak_sustained_active",
             "sm__inst_executed_pipe_tmem.avg.pct_of_peak_sustained_elapsed"),
    "tma": ("sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_tma.avg.pct_of_peak_sustained_active",
            "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_elapsed"),
}
_TENSOR_PATHS = tuple(Quantity(f"tensor_path_{p}_pct", "%", tuple(_value(m, m) for m in names),
                               f"tensor path {p} utilisation, % of peak over elapsed cycles")
                      for p, names in TENSOR_PATHS.items())
# Busy shares a report may hold over the SMs' active cycles (``..._active``) or over elapsed cycles
# (``..._elapsed``): the tidy table keeps one basis, elapsed, as Nsight Compute's breakdown tables do
# (an active-cycle share is scaled by sm__cycles_active / elapsed cycles where both are known).
ELAPSED_BASIS = tuple(q.name for q in (*_PIPES, *_TENSOR_PATHS))
ACTIVE_SUFFIX = ".pct_of_peak_sustained_active"

# --- every unit's speed of light: the throughput breakdown ncu's SpeedOfLight section reads -------
# Busy shares of units the roofline does not draw (L1/TEX, L2 throughput, the shared-memory data
# pipe, the SMs' active cycles); a unit's time at its limit is its busy share x the duration.
# The items of ncu's "Memory Throughput Breakdown" for L1/TEX (the SpeedOfLight section), each % of
# its peak over elapsed cycles. ncu's L1/TEX headline is their maximum on most GPUs; on Turing it is
# twice the request-cycles item (alife render_kernel: 92.9% over active cycles, items at most 46.4%).
# A source of kind "max" needs its first two metrics; the others count where the report has them.
L1_BREAKDOWN = tuple(f"l1tex__{m}.avg.pct_of_peak_sustained_elapsed" for m in (
    "data_pipe_lsu_wavefronts", "m_l1tex2xbar_req_cycles_active", "lsuin_requests", "m_xbar2l1tex_read_sectors",
    "data_bank_reads", "data_bank_writes", "lsu_writeback_active", "data_pipe_tex_wavefronts", "f_wavefronts",
    "tex_writeback_active", "texin_sm2tex_req_cycles_active"))
_UNIT_SOL = (
    _metric_value("l1_throughput_pct", "%", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
                  "L1/TEX throughput, % of peak over elapsed cycles"),
    _metric_value("l1_throughput_active_pct", "%", "l1tex__throughput.avg.pct_of_peak_sustained_active",
                  "L1/TEX throughput, % of peak over the SMs' active cycles"),
    _metric_value("l1_requests_pct", "%", "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed",
                  "LSU requests into L1/TEX, % of peak (one per cycle) over elapsed cycles"),
    Quantity("l1_breakdown_pct", "%",
             (Source(_t(*L1_BREAKDOWN), "max", "the largest item of ncu's L1/TEX throughput breakdown"),),
             "L1/TEX busy share from ncu's own breakdown (its largest item, % of peak over elapsed cycles)"),
    _metric_value("l2_throughput_pct", "%", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
                  "L2 throughput, % of peak over elapsed cycles"),
    _metric_value("l1_xbar_req_pct", "%", "l1tex__m_l1tex2xbar_req_cycles_active.avg.pct_of_peak_sustained_elapsed",
                  "cycles L1/TEX sends requests to L2 (misses, stores, atomics), % of peak over elapsed cycles"),
    _metric_value("l1_data_pipe_pct", "%", "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
                  "L1 data-stage wavefronts (global, local and shared), % of peak"),
    _metric_value("shared_pipe_pct", "%",
                  "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
                  "shared-memory wavefronts in the L1 data stage, % of its peak"),
    _metric_value("sm_active_cycles", "cycle", "sm__cycles_active.avg", "cycles an SM was active (average over SMs)"),
    _metric_value("l2_fill_sysmem_pct", "%", "lts__d_sectors_fill_sysmem.avg.pct_of_peak_sustained_elapsed",
                  "L2 sectors filled from system (host) memory, % of L2's fill peak over elapsed cycles"),
    _metric_value("l2_fill_device_pct", "%", "lts__d_sectors_fill_device.avg.pct_of_peak_sustained_elapsed",
                  "L2 sectors filled from device memory (DRAM), % of L2's fill peak over elapsed cycles"),
    _metric_value("global_load_bytes_per_sector_pct", "%",
                  "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
                  "bytes used of each 32-byte sector a global load fetches, %"),
)

# Warp stall reasons: cycles a warp spends stalled per issued instruction (the WarpStateStats
# ratios), and, where only PC sampling was captured, the number of samples per reason.
STALL_REASONS = ("long_scoreboard", "short_scoreboard", "barrier", "membar", "math_pipe_throttle", "mio_throttle",
                 "lg_throttle", "tex_throttle", "wait", "not_selected", "selected", "dispatch_stall", "drain",
                 "branch_resolving", "no_instruction", "imc_miss", "sleeping", "misc")


def _per_reason(prefix: str, unit: str, metric: str, doc: str, spelled: dict[str, str] | None = None,
                ) -> tuple[Quantity, ...]:
    """A quantity per stall reason, ``{prefix}{reason}``, from ``metric`` with ``{r}`` the reason as ncu
    spells it there (``spelled``, else as named here), described by ``doc`` with ``{words}`` the reason."""
    names = {r: (spelled or {}).get(r, r) for r in STALL_REASONS}
    return tuple(Quantity(f"{prefix}{r}", unit, (_value(metric.format(r=names[r]), metric.format(r=names[r])),),
                          doc.format(words=r.replace("_", " ")))
                 for r in STALL_REASONS)


_STALLS = _per_reason("stall_", "cycle/inst", "smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio",
                      "cycles stalled on {words} per issued instruction")
# the nvprof-era spelling (ncu's migration of stall_sync, stall_memory_dependency, ...): the % of active warp
# cycles a warp spent stalled on each reason
_STALLS_ACTIVE = _per_reason("stall_active_", "%", "smsp__warp_issue_stalled_{r}_per_warp_active.pct",
                             "active warp cycles stalled on {words}, %")
# ncu spells the sampled reason "no_instructions"
_STALL_SAMPLES = _per_reason("stall_samples_", "sample", "smsp__pcsamp_warps_issue_stalled_{r}",
                             "PC samples of warps stalled on {words}", {"no_instruction": "no_instructions"})

# Per-opcode instruction counts are instanced metrics (one instance per SASS opcode); the readers
# turn the instances named here into ``metric[instance]`` columns (a missing instance = 0).
OPCODE_METRIC = "sass__inst_executed_per_opcode_with_modifier_all"
OPCODES = {"fp64_rcp": "MUFU.RCP64H", "fp32_rcp": "MUFU.RCP",
           # shared loads by width: 32-bit, 64-bit, 128-bit (".U": the same load on Volta and Turing)
           "lds_32": "LDS", "lds_u_32": "LDS.U", "lds_64": "LDS.64", "lds_u_64": "LDS.U.64",
           "lds_128": "LDS.128", "lds_u_128": "LDS.U.128",
           # register copies, and generic (unresolved address space) loads and stores: a debug build's marks
           "mov": "MOV", **{f"generic_{op.lower()}{w}": f"{op}.E{w}" for op in ("LD", "ST")
                            for w in ("", ".64", ".128", ".U8")}}
GENERIC_MEMORY_OPCODES = tuple(op for key, op in OPCODES.items() if key.startswith("generic_"))
_OPCODE_COUNTS = (
    _metric_value("inst_fp64_rcp", "inst", f"{OPCODE_METRIC}[MUFU.RCP64H]",
                  "FP64 reciprocals (MUFU.RCP64H: one per FP64 division or reciprocal)"),
    _metric_value("inst_fp32_rcp", "inst", f"{OPCODE_METRIC}[MUFU.RCP]",
                  "FP32 reciprocals (MUFU.RCP: FP32 divisions and reciprocals)"),
    _metric_value("inst_mov", "inst", f"{OPCODE_METRIC}[MOV]", "register copies (MOV)"),
    _sum_value("inst_generic_memory", "inst",
               "generic loads and stores (LD.E, ST.E: the address space left to run time)",
               *(f"{OPCODE_METRIC}[{op}]" for op in GENERIC_MEMORY_OPCODES)),
    *(_sum_value(f"inst_shared_load_{bits}", "inst", f"{bits}-bit shared loads (LDS{'' if bits == 32 else f'.{bits}'})",
                 f"{OPCODE_METRIC}[LDS{'' if bits == 32 else f'.{bits}'}]",
                 f"{OPCODE_METRIC}[LDS.U{'' if bits == 32 else f'.{bits}'}]") for bits in (32, 64, 128)),
)

# Ordered: clocks and cycles before what depends on them.
QUANTITIES: tuple[Quantity, ...] = (
    _TIME, *_CLOCKS, *_CYCLES, _DRAM, _DRAM_READ, _L2, _L1, _SHARED, *_INST, *_PEAKS, *_LAUNCH, *_ACCESS,
    *_LIMITS, *_PIPES, *_TENSOR_PATHS, *_UNIT_SOL, *_STALLS, *_STALLS_ACTIVE, *_STALL_SAMPLES, *_OPCODE_COUNTS,
)
# Derived x2/x4 forms are last-resort sources for the same instruction quantities.
EXTRA_SOURCES: dict[str, tuple[Source, ...]] = {q.name: q.sources for q in _INST_DERIVED}

# --- string attributes and CSV identity columns ---------------------------------------------
DEVICE_NAME = "device__attribute_display_name"
CC_MAJOR = "device__attribute_compute_capability_major"
CC_MINOR = "device__attribute_compute_capability_minor"
STRING_METRICS = (DEVICE_NAME,)
GRID_DIMS = ("launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z")
BLOCK_DIMS = ("launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z")
SM_COUNT = "device__attribute_multiprocessor_count"
GRID_SIZE, BLOCK_SIZE = "launch__grid_size", "launch__block_size"
TIME = "gpu__time_duration.sum"
# (elapsed cycles, clock) pairs whose ratio is an independent measure of a launch's duration
# (ncu derives the clock from those cycles and the duration: they agree to 0.1% in real reports)
TIME_CHECKS: tuple[tuple[str, str], ...] = tuple(
    (f"{unit}__cycles_elapsed.{stat}", f"{unit}__cycles_elapsed.avg.per_second")
    for unit, stat in (("gpc", "max"), ("sm", "max"), ("sm", "avg"), ("smsp", "avg"))
)
# metrics that are clocks (Hz) and durations, for the validation's plausibility ranges
CLOCK_SUFFIX = "__cycles_elapsed.avg.per_second"
EXTRA_VALUE_METRICS = (CC_MAJOR, CC_MINOR, *GRID_DIMS, *BLOCK_DIMS, "launch__stream_id",
                       "launch__context_id", "launch__device_id", "gpc__cycles_elapsed.max",
                       "sm__cycles_elapsed.max")

# ncu's own base unit for metrics whose value means nothing without one: a CSV with an empty
# or missing units row prints durations in nanoseconds, not seconds.
NCU_BASE_UNITS: dict[str, str] = {"gpu__time_duration": "nsecond"}


def ncu_base_unit(metric: str) -> str | None:
    """The unit ncu prints ``metric`` in under ``--print-units base`` where it matters (durations)."""
    return next((u for prefix, u in NCU_BASE_UNITS.items() if metric.startswith(prefix + ".")), None)


# Display labels used by `--page details` exports instead of metric names.
DETAILS_LABELS: dict[str, str] = {
    "Duration": "gpu__time_duration.sum",
    "Elapsed Cycles": "sm__cycles_elapsed.max",
    "SM Frequency": "sm__cycles_elapsed.avg.per_second",
    "DRAM Frequency": "dram__cycles_elapsed.avg.per_second",
    "DRAM Throughput": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "Memory Throughput": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "Compute (SM) Throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "Grid Size": "launch__grid_size",
    "Block Size": "launch__block_size",
    "Registers Per Thread": "launch__registers_per_thread",
    "Waves Per SM": "launch__waves_per_multiprocessor",
    "# SMs": "device__attribute_multiprocessor_count",
    "Achieved Occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "Theoretical Occupancy": "sm__maximum_warps_per_active_cycle_pct",
    "Block Limit Registers": "launch__occupancy_limit_registers",
    "Block Limit Shared Mem": "launch__occupancy_limit_shared_mem",
    "Block Limit Warps": "launch__occupancy_limit_warps",
    "Block Limit SM": "launch__occupancy_limit_blocks",
    "Dynamic Shared Memory Per Block": "launch__shared_mem_per_block_dynamic",
    # the speed-of-light breakdown and the scheduler, for the bottleneck model
    "L1/TEX Cache Throughput": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "L2 Cache Throughput": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "SM Active Cycles": "sm__cycles_active.avg",
    "Issue Slots Busy": "sm__inst_issued.avg.pct_of_peak_sustained_active",
    "Issued Warp Per Scheduler": "smsp__issue_active.avg.per_cycle_active",
    "Eligible Warps Per Scheduler": "smsp__warps_eligible.avg.per_cycle_active",
    "Active Warps Per Scheduler": "smsp__warps_active.avg.per_cycle_active",
    "Avg. Active Threads Per Warp": "smsp__thread_inst_executed_per_inst_executed.ratio",
    "Executed Instructions": "smsp__inst_executed.sum",
    "Static Shared Memory Per Block": "launch__shared_mem_per_block_static",
}


def quantity(name: str) -> Quantity:
    """The catalogue entry of a tidy quantity."""
    for q in QUANTITIES:
        if q.name == name:
            return q
    raise KeyError(name)


def sources_of(q: Quantity) -> tuple[Source, ...]:
    return q.sources + EXTRA_SOURCES.get(q.name, ())


def needed_metrics() -> list[str]:
    """Every ncu metric name the catalogue can use (what a loader should read), in a stable order."""
    names: dict[str, None] = {}
    for q in QUANTITIES:
        for s in sources_of(q):
            for m in s.metrics:
                names[m] = None
    for m in (*STRING_METRICS, *EXTRA_VALUE_METRICS, *TENSOR_INST_METRICS,
              *(f"{m}.per_cycle_elapsed" for m in TENSOR_INST_METRICS)):
        names[m] = None
    return list(names)


def is_needed(metric: str) -> bool:
    """True for metric names the normalizer uses, including the tensor-op family."""
    return metric in _NEEDED or bool(TENSOR_OPS_PATTERN.match(metric))


_NEEDED = frozenset(needed_metrics())


# --- the capture metric set -----------------------------------------------------------------
@dataclass(frozen=True)
class MetricSet:
    """Metrics ``ncu-roof capture`` asks ncu for, by architecture and tier; ``ncu_set`` a section
    set ncu collects besides them (``--set full``)."""

    name: str
    metrics: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    ncu_set: str | None = None


# The tiers: ``quick`` the roofline and every unit's speed of light (few passes); ``rules`` (the
# default) everything some rule reads; ``full`` that plus ncu's own ``--set full`` sections.
TIERS = ("quick", "rules", "full")


_CAPTURE_COMMON = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second",
    "smsp__cycles_elapsed.avg", "smsp__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second", "lts__cycles_elapsed.avg.per_second",
    "l1tex__cycles_elapsed.avg.per_second",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "dram__bytes.sum.peak_sustained",
    "lts__t_bytes.sum", "lts__t_bytes.sum.peak_sustained",
    "l1tex__t_bytes.sum", "l1tex__t_bytes.sum.peak_sustained",
    "smsp__sass_data_bytes_mem_shared.sum",
    *(_inst("smsp", op, "") for op in _INST_OPS),
    *(_inst("sm", op, ".peak_sustained") for op in ("dfma", "ffma", "hfma")),
    "sm__inst_executed_pipe_tensor.sum",
    "launch__grid_size", "launch__block_size", "launch__waves_per_multiprocessor",
    "launch__registers_per_thread", "launch__shared_mem_per_block",
    "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    # the bottleneck model's memory units and the SMs' active cycles
    "sm__cycles_active.avg",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    # where L2 fills from: system (host) memory or device memory
    "lts__d_sectors_fill_sysmem.avg.pct_of_peak_sustained_elapsed",
    "lts__d_sectors_fill_device.avg.pct_of_peak_sustained_elapsed",
    "device__attribute_display_name", "device__attribute_multiprocessor_count",
    "device__attribute_clock_rate",
)

# Tensor-op counters by compute capability (major, minor) -> variants; checked against
# `ncu --query-metrics --chip` of every chip ncu 2024.1.1 knows (tests/cli/test_capture.py).
# CC 7.5 has none: TU116/TU117 have no tensor cores, so sm__ops_path_tensor_* does not exist there
# (sm__inst_executed_pipe_tensor does, on every chip).
_TENSOR_BY_ARCH: dict[tuple[int, int], tuple[str, ...]] = {
    (7, 0): ("src_fp16_dst_fp32", "src_fp16_dst_fp16"),
    (7, 2): ("src_fp16_dst_fp32", "src_fp16_dst_fp16"),
    (7, 5): (),
    (8, 0): ("src_fp16_dst_fp32", "src_fp16_dst_fp16", "src_bf16_dst_fp32", "src_tf32_dst_fp32", "src_fp64"),
    (8, 6): ("src_fp16_dst_fp32", "src_fp16_dst_fp16", "src_bf16_dst_fp32", "src_tf32_dst_fp32"),
    (8, 7): ("src_fp16_dst_fp32", "src_fp16_dst_fp16", "src_bf16_dst_fp32", "src_tf32_dst_fp32"),
    (8, 9): ("src_fp16_dst_fp32", "src_fp16_dst_fp16", "src_bf16_dst_fp32", "src_tf32_dst_fp32", "src_fp8"),
    (9, 0): ("src_fp16", "src_bf16_dst_fp32", "src_tf32_dst_fp32", "src_fp64", "src_fp8"),
}
# Tegra GPUs (Xavier 7.2, Orin 8.7) share memory with the CPU and have no dram__ counters.
_NO_DRAM_COUNTERS = frozenset({(7, 2), (8, 7)})


# What the rules read beyond the quick tier: the issue slots and the pipes, the L1 data stage and
# its shared part, warp stalls, access-pattern sectors and wavefronts, occupancy, per-opcode counts.
_CAPTURE_RULES = (
    *L1_BREAKDOWN,  # the L1/TEX breakdown (its first item is the L1 data stage's wavefronts)
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__warps_eligible.avg.per_cycle_active",
    "smsp__warps_active.avg.per_cycle_active",
    "smsp__inst_executed.sum",
    *(f"sm__inst_executed_pipe_{p}.avg.pct_of_peak_sustained_active" for p in ("alu", "fma", "fp64", "lsu", "xu")),
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    *(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS),
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    # local memory (spills, arrays indexed at run time): its sectors at L1, those sent on to L2, its instructions
    *(f"l1tex__t_sectors_pipe_lsu_mem_local_op_{op}{hit}.sum" for op in ("ld", "st") for hit in ("", "_lookup_miss")),
    "sm__sass_inst_executed_op_local_ld.sum", "sm__sass_inst_executed_op_local_st.sum",
    "smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_global_st.sum",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    OPCODE_METRIC,
)
# What exists from Ampere (CC 8.0) on: asynchronous global-to-shared copies (cp.async, LDGSTS)
_CAPTURE_AMPERE = (
    "sm__sass_inst_executed_op_ldgsts.sum",
)
_QUICK_DROPS = ("l1tex__t_sectors_pipe", "l1tex__t_requests_pipe", "l1tex__data_bank_conflicts",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op", "sm__warps_active", "sm__maximum_warps",
                "smsp__thread_inst_executed_per_inst", "launch__occupancy_limit")
# Hopper's wgmma path and the TMA, per compute capability
_TENSOR_PATHS_BY_ARCH: dict[tuple[int, int], tuple[str, ...]] = {
    (9, 0): ("sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
             "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
             "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active"),
}


def capture_metrics(cc: tuple[int, int] | None, tier: str = "rules") -> MetricSet:
    """The metric set for a compute capability (None: the portable common set) and tier."""
    if tier not in TIERS:
        raise ValueError(f"unknown metric tier {tier!r}: use one of {', '.join(TIERS)}")
    metrics = list(_CAPTURE_COMMON)
    if tier == "quick":
        metrics = [m for m in metrics if not m.startswith(_QUICK_DROPS)]
    else:
        metrics += [*_CAPTURE_RULES, *_TENSOR_PATHS_BY_ARCH.get(cc or (0, 0), ())]
        if cc is not None and cc >= (8, 0):
            metrics += _CAPTURE_AMPERE
    notes: list[str] = []
    if cc is not None and cc[0] >= 12:
        metrics = [m.replace("dram__bytes_read.sum", "dram__bytes_op_read.sum")
                   .replace("dram__bytes_write.sum", "dram__bytes_op_write.sum") for m in metrics]
        notes.append("CC 12.x names DRAM traffic dram__bytes_op_read/_op_write")
    if cc in _NO_DRAM_COUNTERS:
        metrics = [m for m in metrics if not m.startswith("dram__")]
        notes.append(f"CC {cc[0]}.{cc[1]} (Tegra) has no dram__ counters: DRAM traffic is not measured")
    variants = _TENSOR_BY_ARCH.get(cc, ()) if cc is not None else ()
    if cc is not None and not variants:
        notes.append(f"no tensor-op counters for CC {cc[0]}.{cc[1]}: tensor work only as "
                     "sm__inst_executed_pipe_tensor instructions")
    for v in variants:
        metrics += [f"sm__ops_path_tensor_{v}.sum", f"sm__ops_path_tensor_{v}.sum.peak_sustained"]
    name = (f"{tier}-cc{cc[0]}{cc[1]}" if cc else f"{tier}-common")
    return MetricSet(name, tuple(dict.fromkeys(metrics)), tuple(notes), "full" if tier == "full" else None)


def _one_edit_apart(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by changing, adding or dropping one character."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k, (x, y) in enumerate(zip(short, long, strict=False)) if x != y), len(short))
    return short[i:] == long[i + 1:]


@functools.lru_cache(maxsize=1)
def _needed_by_unit() -> dict[str, list[str]]:
    """The catalogue's metric names by their unit prefix (``dram``, ``lts``, ...)."""
    out: dict[str, list[str]] = {}
    for name in sorted(needed_metrics()):
        out.setdefault(name.split("__", 1)[0], []).append(name)
    return out


# ncu's metric names: lower-case words joined by "__", then ".rollup" parts
METRIC_NAME = re.compile(r"[a-z0-9_]+(?:__[a-z0-9_]+)+(?:\.[a-z0-9_]+)*")


def damaged_name_notes(columns: list[str], what: str = "column") -> list[str]:
    """A note for each column that is not a well-formed metric name but is one edit away from a
    name the catalogue reads and the input lacks (``dram__bytes_reXd.sum``): its quantity is
    unknown, and why. Well-formed names the catalogue does not read are ncu's own metrics, some one
    letter from the catalogue's (``..._imma_...`` beside ``..._gmma_...``), and are left alone.
    ``what`` names where the name stands (a CSV ``column``, a report's ``metric``)."""
    have = set(columns)
    by_unit = _needed_by_unit()
    notes = []
    for name in columns:
        if "__" not in name or is_needed(name) or METRIC_NAME.fullmatch(name):
            continue
        known = next((k for k in by_unit.get(name.split("__", 1)[0], ()) if k not in have and _one_edit_apart(name, k)),
                     None)
        if known is not None:
            notes.append(f"{what} {name} is not a metric ncu-roof reads; it looks like {known} (a damaged name?), "
                         f"which the input lacks: what {known} gives is unknown")
    return notes


# --- Source Counters: per-instruction metrics (one instance per PC) ------------------------------
# ncu's SourceCounters section and warp-state sampling store these with the instruction's address
# as correlation ID. ncu name -> the per-instruction table's column (counts, already base units).
# Older ncu (2020.x) name a few differently; they fill the same column where the newer is absent.
SOURCE_COUNTERS: dict[str, str] = {
    "inst_executed": "inst_executed",
    "thread_inst_executed": "thread_inst_executed",
    "thread_inst_executed_true": "thread_inst_executed_pred_on",
    "smsp__branch_targets_threads_divergent": "divergent_branches",
    "memory_l1_tag_requests_global": "l1_tag_requests_global",
    "memory_l2_theoretical_sectors_global": "l2_sectors_global",
    "memory_l2_theoretical_sectors_global_ideal": "l2_sectors_global_ideal",
    "derived__memory_l2_theoretical_sectors_global_excessive": "l2_sectors_global_excessive",
    "memory_l2_theoretical_sectors_local": "l2_sectors_local",
    "memory_l1_wavefronts_shared": "shared_wavefronts",
    "memory_l1_wavefronts_shared_ideal": "shared_wavefronts_ideal",
    "derived__memory_l1_wavefronts_shared_excessive": "shared_wavefronts_excessive",
    "smsp__pcsamp_sample_count": "samples",
    **{f"smsp__pcsamp_warps_issue_stalled_{'no_instructions' if r == 'no_instruction' else r}": f"samples_{r}"
       for r in STALL_REASONS},
}
# the 2020.x spellings (sectors where later versions count theoretical sectors and wavefronts)
SOURCE_COUNTERS_OLD: dict[str, str] = {
    "memory_l2_sectors_global": "l2_sectors_global",
    "memory_l2_sectors_global_ideal": "l2_sectors_global_ideal",
    "derived__memory_l2_sectors_global_excessive": "l2_sectors_global_excessive",
    "memory_l1_sectors_shared": "shared_wavefronts",
    "memory_l1_sectors_shared_ideal": "shared_wavefronts_ideal",
    "derived__memory_l1_sectors_shared_excessive": "shared_wavefronts_excessive",
}
SOURCE_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(SOURCE_COUNTERS.values()))
# the function-start addresses of a launch (instances: the kernel and the device functions it calls)
FUNCTION_PCS = "launch__function_pcs"
# ``ncu --import R --page source --csv`` column headers -> the per-instruction table's columns
SOURCE_PAGE_COLUMNS: dict[str, str] = {
    "Instructions Executed": "inst_executed",
    "inst_executed": "inst_executed",
    "Thread Instructions Executed": "thread_inst_executed",
    "Predicated-On Thread Instructions Executed": "thread_inst_executed_pred_on",
    "Divergent Branches": "divergent_branches",
    "L1 Tag Requests Global": "l1_tag_requests_global",
    "L2 Theoretical Sectors Global": "l2_sectors_global",
    "L2 Theoretical Sectors Global Ideal": "l2_sectors_global_ideal",
    "L2 Theoretical Sectors Global Excessive": "l2_sectors_global_excessive",
    "L2 Theoretical Sectors Local": "l2_sectors_local",
    "L1 Wavefronts Shared": "shared_wavefronts",
    "L1 Wavefronts Shared Ideal": "shared_wavefronts_ideal",
    "L1 Wavefronts Shared Excessive": "shared_wavefronts_excessive",
    "Warp Stall Sampling (All Cycles)": "samples",
    "Sampling Data (All)": "samples",
    "Warp Stall Sampling (All Samples)": "samples",
    "smsp__pcsamp_sample_count": "samples",
}
