#!/usr/bin/env bash
# Quick start 1: build gpuvs (Release; CUDA when nvcc is on PATH) and run the main
# job, `gpuvs run`. Extra arguments go to `gpuvs run` (e.g. --gpu 0 --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
preset="${GPUVS_PRESET:-default}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target gpuvs
exec "build/$preset/src/gpuvs" run "$@"
