#!/usr/bin/env bash
# One-command GPU check: capture every kernel in kernels/ with ncu-roof, measure the ceilings,
# assert what the seeds predict and print a predicted-vs-measured table.
# Needs a CUDA GPU, Nsight Compute (ncu) and CuPy. Options go to scripts/gpu_check.py
# (--dry-run prints the commands, --budget-s caps the total time, --only picks kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ] && [ -f .venv/bin/activate ]; then
    # shellcheck disable=SC1091
    . .venv/bin/activate
fi
exec python scripts/gpu_check.py "$@"
