#!/usr/bin/env bash
# Quick start 2: build everything and run every test: formatting check, the whole
# CTest suite (labels cpu and gpu; GPU tests skip with a reason without a GPU), the
# CPU-only build and its tests, and the fuzzers of the loaders for
# GPUVS_FUZZ_SECONDS each (default 30; the reference-tensor reader gets half).
# GPUVS_PRESET picks the configure preset (default: "default"; CI uses "ci").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
preset="${GPUVS_PRESET:-default}"
fuzz_seconds="${GPUVS_FUZZ_SECONDS:-30}"
jobs="$(nproc)"

echo "== format (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
mapfile -t sources < <(git ls-files -- '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null ||
                       find src tests fuzz dev -name '*.h' -o -name '*.cpp' -o -name '*.cu')
clang-format --dry-run -Werror "${sources[@]}"

echo "== build ($preset)"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"

echo "== tests"
ctest --preset "$preset" -j "$jobs"

echo "== CPU-only build (GPUVS_CUDA=OFF): compare, specs, advise and report must work there"
cmake --preset cpu >/dev/null
cmake --build --preset cpu -j "$jobs"
ctest --preset cpu -j "$jobs"

echo "== fuzz run-file loader (${fuzz_seconds} s)"
cmake --preset fuzz >/dev/null
# The fuzzers and what they link, not the whole tree a third time.
cmake --build --preset fuzz -j "$jobs" --target fuzz_run_file fuzz_loaders fuzz_tensor_file \
  fuzz_import
corpus_work="build/fuzz/corpus-work"
mkdir -p "$corpus_work"
build/fuzz/fuzz/fuzz_run_file -max_total_time="$fuzz_seconds" -max_len=65536 \
  -print_final_stats=1 "$corpus_work" fuzz/corpus 2>&1 | tail -n 12
echo "fuzz: run files, no crash in ${fuzz_seconds} s"
echo "== fuzz claims, catalogue and prices loaders (${fuzz_seconds} s)"
mkdir -p "$corpus_work-loaders"
build/fuzz/fuzz/fuzz_loaders -max_total_time="$fuzz_seconds" -max_len=65536 \
  -print_final_stats=1 "$corpus_work-loaders" fuzz/corpus-loaders 2>&1 | tail -n 12
echo "fuzz: loaders, no crash in ${fuzz_seconds} s"
echo "== fuzz gpuvs import: nccl-tests logs, nvbench and nvbandwidth JSON (${fuzz_seconds} s)"
mkdir -p "$corpus_work-import"
build/fuzz/fuzz/fuzz_import -max_total_time="$fuzz_seconds" -max_len=65536 \
  -print_final_stats=1 "$corpus_work-import" fuzz/corpus-import 2>&1 | tail -n 12
echo "fuzz: import, no crash in ${fuzz_seconds} s"
# The reference-tensor reader is small (one header, fixed depth): half the budget.
tensor_seconds=$(( fuzz_seconds > 1 ? fuzz_seconds / 2 : 1 ))
echo "== fuzz reference-tensor reader (${tensor_seconds} s)"
mkdir -p "$corpus_work-tensor-file"
build/fuzz/fuzz/fuzz_tensor_file -max_total_time="$tensor_seconds" -max_len=65536 \
  -print_final_stats=1 "$corpus_work-tensor-file" fuzz/corpus-tensor-file 2>&1 | tail -n 12
echo "fuzz: reference-tensor reader, no crash in ${tensor_seconds} s"
