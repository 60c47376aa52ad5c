"""Reading: input paths in, the tidy per-launch table out.

Enters: paths of ``.ncu-rep`` reports and ncu CSV exports (``--csv --page raw`` or ``details``).
Each reader (``csv``, ``ncu_rep``, ``native``; run in parallel by ``parallel``) turns one file into
the *raw launch frame* (one row per launch, ncu metric names as columns, base units; the contract is
in ``frame``), with Nsight Compute's own rule results in ``attrs``. ``validate`` checks the raw
frame against the metric catalogue (``metrics``) and drops damaged values, ``normalize`` turns ncu
metrics into named quantities (time, FLOPs per precision, bytes per level), and ``table.load_table``
puts it together. Leaves: the *tidy table* (one row per launch, named quantities, notes in
``attrs``). ``native`` reads a report through ``native_index`` (the block walk), ``native_launch``
(one launch's row) and ``native_wire`` (the protobuf schema and wire decoding); ``csv`` reads an
export through ``csv_file`` (the file: encoding, header, cut rows), ``csv_columns`` (the columns
kept), ``csv_numbers`` (decimal marks, units), ``csv_wide`` and ``csv_long`` (raw and details
pages) and ``csv_identity`` (identity columns, NVTX). A new CSV quirk goes in the one of these it
concerns; a new input kind is a reader module beside ``csv``. PyTorch profiler traces are read
beside them, into frames of their own: ``trace`` (GPU activities, runtime calls, CPU ops) from
``trace_json`` (the streaming JSON parser), linked by ``trace_links``.
"""
