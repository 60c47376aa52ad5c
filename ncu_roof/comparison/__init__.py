"""Comparison: two diagnoses in, a comparison (and, for ``check``, gate verdicts) out.

Enters: two :class:`~ncu_roof.diagnosis.Diagnosis` (a baseline and a candidate) and an optional
rename mapping; for the gate, a diagnosis (and a baseline) and a rules file. ``match`` pairs their
launches (name, shape, NVTX path; the ``--map`` file; rename suggestions), ``deltas`` totals each
side and describes each move, ``compare`` builds the
:class:`~ncu_roof.comparison.compare.Comparison` (time, bytes and bound per kernel and region,
before and after). ``gate_file`` reads the rules file into bounds, ``gate`` holds kernels and
regions to them and ``gate_coverage`` says which bounds could not be checked, and why. Leaves:
plain data (``Comparison``, ``GateResult``); rendering is in :mod:`ncu_roof.render`, exit codes in
:mod:`ncu_roof.cli`.
"""
