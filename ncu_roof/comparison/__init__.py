"""Comparison: two diagnoses in, a comparison (and, for ``check``, gate verdicts) out.

Enters: two :class:`~ncu_roof.diagnose.Diagnosis` (a baseline and a candidate) and an optional
rename mapping. ``match`` pairs their kernels (by name, renames, fusions) into a
:class:`~ncu_roof.comparison.match.Comparison` (time, bytes and bound per kernel, before and after);
``gate`` reads a rules file (limits on time, bytes, bound changes) and checks a comparison or a
single diagnosis against it. Leaves: plain data (``Comparison``, gate results); rendering is in
:mod:`ncu_roof.render`, exit codes in :mod:`ncu_roof.cli`.
"""
