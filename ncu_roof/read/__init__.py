"""Reading: input paths in, the tidy per-launch table out.

Enters: paths of ``.ncu-rep`` reports and ncu CSV exports (``--csv --page raw`` or ``details``).
Each reader (``csv``, ``ncu_rep``, ``native``; run in parallel by ``parallel``) turns one file into
the *raw launch frame* (one row per launch, ncu metric names as columns, base units; the contract is
in ``frame``), with Nsight Compute's own rule results in ``attrs``. ``validate`` checks the raw
frame against the metric catalogue (``metrics``) and drops damaged values, ``normalize`` turns ncu
metrics into named quantities (time, FLOPs per precision, bytes per level), and ``table.load_table``
puts it together. Leaves: the *tidy table* (one row per launch, named quantities, notes in
``attrs``). Readers are packages by input kind: ``native`` reads a report through ``native.blocks``
(the block walk), ``native.launch`` (one launch's row) and ``native.wire`` (the protobuf schema and
wire decoding); ``csv`` reads an export through ``csv.file`` (the file: encoding, header, cut rows),
``csv.columns`` (the columns kept), ``csv.numbers`` (decimal marks, units), ``csv.wide`` and
``csv.long`` (raw and details pages) and ``csv.identity`` (identity columns, NVTX). A new CSV quirk
goes in the one of these it concerns; a new input kind is a reader package beside ``csv``. Source
Counters (per-instruction counts) are read by ``source`` (from a report: ``source.native``,
``source.wire``; from ncu's source page: ``source.csv``; summed by line in ``source.sums``).
PyTorch profiler traces are read beside them, into frames of their own: ``trace`` (GPU activities,
runtime calls, CPU ops) from ``trace.kineto`` (the streaming JSON parser), linked by
``trace.links``; Nsight Systems SQLite exports by ``trace.nsys``.
"""
