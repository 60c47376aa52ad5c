"""Rendering: a diagnosis (or a comparison, or a gate result) in, text, Markdown, JSON, HTML or a chart out.

Enters: a :class:`~ncu_roof.diagnosis.Diagnosis`, a :class:`~ncu_roof.comparison.compare.Comparison`
or a :class:`~ncu_roof.comparison.gate.GateResult`. ``renderers`` maps a format name to a renderer
of a diagnosis (``text``, ``markdown``, JSON); ``summary`` holds the cells and lines they share (the
per-kernel table is :mod:`ncu_roof.model.kernels`); ``html`` is the self-contained report;
``compare`` renders a comparison; ``gate`` renders a gate result (``check``: text, JSON);
``formats`` picks a format from a name or a file suffix; ``charts/`` holds the charts (roofline,
label placement, other views, compare chart, save; a diagnosis's charts built without Altair by
``charts/vegalite``). Leaves: strings and chart specs;
writing files is left to the caller (the CLI), except ``charts`` saving a chart. Nothing here
imports Altair at import time, so ``ncu-roof --help`` stays fast.
"""
