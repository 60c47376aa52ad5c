"""Charts: a diagnosis (or comparison) in, Vega-Lite charts and their saved files out.

Enters: a :class:`~ncu_roof.diagnosis.Diagnosis`'s placed table (or a comparison). Leaves: charts,
Vega-Lite specs, and files (``.html``, ``.json``, ``.png``, ``.svg``). A diagnosis's charts are built
by :mod:`.vegalite` (Altair's API and specs, without Altair: the HTML report never imports it) and
made again in Altair where the API hands out a chart; the comparison and timeline charts are
Altair's, with Altair imported inside the functions so that ``ncu-roof --help`` stays fast.
"""
