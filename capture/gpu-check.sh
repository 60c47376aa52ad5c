#!/usr/bin/env bash
# One-command GPU check: capture every kernel in kernels/ with ncu-roof, measure the ceilings,
# assert what the seeds predict and print a predicted-vs-measured table.
# Needs a CUDA GPU, Nsight Compute (ncu) and CuPy. Options go to capture/gpu_check.py
# (--dry-run prints the commands, --budget-s caps the total time, --only picks kernels).
# Where $OUT names a folder (the device machine's result folder), the whole output folder
# fixtures/captured/ is also packed into $OUT/gpu-check.tar.gz, whatever the outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ] && [ -f .venv/bin/activate ]; then
    # shellcheck disable=SC1091
    . .venv/bin/activate
fi
PY="${PYTHON:-$(command -v python3 || command -v python)}"
pack() {
    if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ -d fixtures/captured ]; then
        tar czf "$OUT/gpu-check.tar.gz" fixtures/captured || true
    fi
}
trap pack EXIT
"$PY" capture/gpu_check.py "$@"
