"""Reading: input paths in, the tidy per-launch table out.

Enters: paths of ``.ncu-rep`` reports and ncu CSV exports (``--csv --page raw`` or ``details``).
Each reader (``csv``, ``ncu_rep``, ``native``; run in parallel by ``parallel``) turns one file into
the *raw launch frame* (one row per launch, ncu metric names as columns, base units; the contract is
in ``frame``), with Nsight Compute's own rule results in ``attrs``. ``validate`` checks the raw
frame against the metric catalogue (``metrics``) and drops damaged values, ``normalize`` turns ncu
metrics into named quantities (time, FLOPs per precision, bytes per level), and ``table.load_table``
puts it together. Leaves: the *tidy table* (one row per launch, named quantities, notes in
``attrs``). A new CSV quirk goes in ``csv.py``; a new input kind is a reader module beside it.
"""
