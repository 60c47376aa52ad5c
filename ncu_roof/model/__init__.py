"""The model: the tidy table in, the placed table out.

Enters: the tidy table (from :mod:`ncu_roof.read`), a device (the built-in table :mod:`ncu_roof.devices`
reads from ``ncu_roof/data/devices.toml``, or a measured ``ceilings`` file) and optional algorithmic
regions (``algorithmic``: FLOPs and bytes a kernel should need, from ``ncu_roof.region`` NVTX ranges
or a TOML sidecar). ``roofline.place`` puts every launch under its roofs; ``kernels`` totals the
launches per kernel. Leaves: the *placed table* (the tidy table plus intensity, the memory and
compute roofs it sits under, attainable performance, and the bound: compute, memory or overhead),
its per-kernel totals, and ``Thresholds``, the numbers the rules judge by. Beside it, ``timeline``
measures a PyTorch profiler trace (busy, idle, streams, gaps by cause; unions in ``intervals``).
"""
