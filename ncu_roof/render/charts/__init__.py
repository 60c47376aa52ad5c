"""Charts: a diagnosis (or comparison) in, Altair charts and their saved files out.

Enters: a :class:`~ncu_roof.diagnosis.Diagnosis`'s placed table (or a comparison). Leaves: Altair
chart objects, Vega-Lite specs, and files (``.html``, ``.json``, ``.png``, ``.svg``). Altair is
imported inside the functions so that ``ncu-roof --help`` stays fast.
"""
