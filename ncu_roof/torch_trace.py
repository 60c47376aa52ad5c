"""``python -m ncu_roof.torch_trace OUT.json SCRIPT ARGS`` (or ``OUT.json -m MODULE ARGS``): run a
program under ``torch.profiler`` (CPU and, where there is one, CUDA activity; ``record_shapes`` and
``with_stack``) and write its Chrome trace to ``OUT.json`` for ``ncu-roof timeline``.

``ncu-roof capture --timeline`` runs it as a separate run of the program, not under ncu, whose
replay would stretch every gap. The trace is written even when the program exits with an error
code (its code is kept); PyTorch is the only requirement.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

USAGE = "usage: python -m ncu_roof.torch_trace OUT.json SCRIPT [ARGS] | OUT.json -m MODULE [ARGS]"


def _run(target: list[str]) -> int:
    """Run the script or module as ``__main__``; its exit code (0 when it returns)."""
    try:
        if target[0] == "-m":
            sys.argv = [target[1], *target[2:]]
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(target)
            sys.path.insert(0, str(Path(target[0]).resolve().parent))  # as `python SCRIPT` has it
            runpy.run_path(target[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or (args[1] == "-m" and len(args) < 3):
        print(USAGE, file=sys.stderr)
        return 2
    out, target = args[0], args[1:]
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("ncu_roof.torch_trace: torch is not importable by this Python (pip install torch)", file=sys.stderr)
        return 2
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities, record_shapes=True, with_stack=True) as prof:
        code = _run(target)
    prof.export_chrome_trace(out)
    print(f"ncu_roof.torch_trace: trace written: {out}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
