#!/usr/bin/env bash
# The GPU tests as a user with an NVIDIA GPU runs them: configure and build, write the
# PyTorch references of the model checks, run every GPU test against them, list the
# tests that skipped and why; with --out also the reference runs of data/reference/.
# `--help` says the rest (docs/model-checks.md, "Running the checks").
set -euo pipefail

usage() {
  cat << 'EOF'
Usage: scripts/gpu-check.sh [OPTIONS]

Run from the repository root on a machine with an NVIDIA GPU. Configures and builds
gpuvs, writes the PyTorch references of the model checks (ResNet-50, BERT-large, the
Llama decoder) into the build folder when python3 can import torch (+ torchvision, +
transformers), runs every GPU test (ctest -L gpu) against them, then lists the tests
that skipped and why.
Exits 1 when the build, a reference dump, a test or a reference run fails.

Options:
  --build-dir DIR     build folder (default build/default, configured by the preset
                      "default"); an existing one keeps its configuration, a new one
                      is configured as the preset does (Ninja, Release)
  -j, --jobs N        build jobs (default: nproc, the processors available)
  -R, --tests REGEX   only the GPU tests whose names match (ctest -R)
  --no-tests          build, write the references, run no test
  --no-references     do not write the references (the model checks then skip)
  --force-references  rewrite the references even when they are up to date
  --out DIR           also write the reference runs (the runs data/reference/ holds)
                      into DIR, one folder per run; docs/model-checks.md lists them
  --runs LIST         with --out: which groups, comma-separated (default all):
                        run          gpuvs run
                        compute      gpuvs bench compute
                        memory       gpuvs bench memory host launch, one GPU visible
                        peer         gpuvs bench peer (2 GPUs)
                        collectives  NCCL sweeps, algorithm study, file, NCCL_COMM_ID
                                     and (with mpirun) MPI launches (2 GPUs)
                        models       ResNet-50 and BERT-large throughput and profiles
                        tune         gpuvs tune --model all on a cache of its own,
                                     again from the cache, detect, the result in
                                     each --emit form; model --batch max end to end
                        monitor      gpuvs monitor over PyTorch workloads (torch)
                        llama        gpuvs model llama --mode infer: 8B at batch 1
                                     (with --profile) and 64 in bf16 and fp8, with the
                                     fp8 KV cache, at --batch max; 1B at batch 1;
                                     beside them transformers' generate (needs
                                     transformers)
                        llama-train  gpuvs model llama --mode train, 1B at seq 2048,
                                     batch 8: bf16 and fp8 (with --profile), bf16
                                     with gpuvs's attention kernels (--attention
                                     gpuvs, with --profile) and with --recompute
                                     selective and full, bf16 at
                                     --batch max; beside
                                     them transformers' training, eager and compiled,
                                     and PyTorch's fused attention backends (cuDNN's
                                     SDPA among them) at the same shape
                        check        gpuvs check --level 1, 2, and 3 for 120 s
                                     against the level-2 run as its baseline
  --nccl-tests DIR    nccl-tests' build folder: the collectives sweeps run beside it
  -h, --help          this text

Environment:
  GPUVS_PYTHON        the Python with PyTorch (default python3 on PATH)
  NCCL_*              kept as set and recorded in the run files. Some hosted H200
                      machines need NCCL_NVLS_ENABLE=0 (NVLink multicast, NCCL's
                      NVLS algorithms, is not allowed there): set it yourself
                      there; this script never sets or unsets an NCCL_* variable.
  CUDA_VISIBLE_DEVICES  the GPUs the tests and runs see
EOF
}

# One line on stderr, exit 2: every usage error.
die_usage() {
  echo "gpu-check.sh: $*; see scripts/gpu-check.sh --help" >&2
  exit 2
}

all_runs="run compute memory peer collectives models llama llama-train tune monitor check"
build_dir=""
jobs=""
tests_regex=""
run_tests=1
references=1
force_references=0
out_dir=""
runs="$all_runs"
nccl_tests=""
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --build-dir | -j | --jobs | -R | --tests | --out | --runs | --nccl-tests)
      [[ $# -ge 2 && -n $2 ]] || die_usage "$1 needs a value"
      case $1 in
        --build-dir) build_dir=$2 ;;
        -j | --jobs) jobs=$2 ;;
        -R | --tests) tests_regex=$2 ;;
        --out) out_dir=$2 ;;
        --runs) runs=${2//,/ } ;;
        --nccl-tests) nccl_tests=$2 ;;
      esac
      shift 2
      ;;
    --no-tests)
      run_tests=0
      shift
      ;;
    --no-references)
      references=0
      shift
      ;;
    --force-references)
      force_references=1
      shift
      ;;
    *) die_usage "unknown option '$1'" ;;
  esac
done
if [[ -n $jobs && ! $jobs =~ ^[1-9][0-9]*$ ]]; then
  die_usage "--jobs takes a whole number of 1 or more, got '$jobs'"
fi
for r in $runs; do
  [[ " $all_runs " == *" $r "* ]] || die_usage "--runs: unknown group '$r' (${all_runs// /, })"
done
if [[ -z $out_dir && ( $runs != "$all_runs" || -n $nccl_tests ) ]]; then
  die_usage "--runs and --nccl-tests go with --out DIR"
fi
[[ -z $nccl_tests || -d $nccl_tests ]] || die_usage "--nccl-tests: no folder '$nccl_tests'"
[[ -f CMakePresets.json && -f scripts/gpu-check.sh ]] ||
  die_usage "run it from the repository root (no scripts/gpu-check.sh here)"
jobs=${jobs:-$(nproc)}

status=0
note() { echo "gpu-check: $*"; }
fail() {
  echo "gpu-check: FAILED: $*"
  status=1
}

# ---- build --------------------------------------------------------------------------
if [[ -z $build_dir ]]; then
  build_dir=build/default
  note "configure: cmake --preset default"
  cmake --preset default
elif [[ -f $build_dir/CMakeCache.txt ]]; then
  note "configure: $build_dir as it is configured"
  cmake -S . -B "$build_dir"
else
  note "configure: $build_dir (Ninja, Release, as the preset default)"
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
note "build: cmake --build $build_dir -j $jobs"
cmake --build "$build_dir" -j "$jobs"
if ! grep -q '^GPUVS_CUDA:BOOL=ON' "$build_dir/CMakeCache.txt"; then
  echo "gpu-check: $build_dir is built without CUDA (GPUVS_CUDA is off, or nvcc was not" \
    "found when it was configured): it has no GPU test" >&2
  exit 1
fi
gpuvs=$build_dir/src/gpuvs
if [[ -n ${CUDA_VISIBLE_DEVICES+set} ]]; then
  gpus=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .) || gpus=0
elif command -v nvidia-smi > /dev/null; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ') || gpus=0
else
  gpus=0
fi
nccl_env=$(env | grep '^NCCL_' | tr '\n' ' ' || true)
note "GPUs visible: $gpus; NCCL environment: ${nccl_env:-none set}"

# ---- the PyTorch references (the same files the CTest fixture writes) -----------------
declare -A ref_file=([resnet50]=$build_dir/ref/resnet50.safetensors
  [bert]=$build_dir/ref/bert.safetensors [llama]=$build_dir/ref/llama.safetensors)
declare -A ref_state
force=()
[[ $force_references == 0 ]] || force=(--force)
if [[ $references == 1 ]]; then
  for model in resnet50 bert llama; do
    note "reference $model: scripts/models/write_reference.sh $model ${ref_file[$model]}"
    log=$build_dir/ref/$model.log
    mkdir -p "$build_dir/ref"
    rc=0
    scripts/models/write_reference.sh "$model" "${ref_file[$model]}" "${force[@]}" 2>&1 |
      tee "$log" || rc=${PIPESTATUS[0]}
    if [[ $rc == 0 ]] && grep -q 'is up to date' "$log"; then
      ref_state[$model]="up to date: ${ref_file[$model]}"
    elif [[ $rc == 0 ]]; then
      ref_state[$model]="wrote ${ref_file[$model]}"
    elif [[ $rc == 77 ]]; then
      ref_state[$model]="not written: $(grep -m1 -o 'not written: .*' "$log" | cut -c14-)"
    else
      ref_state[$model]="FAILED (exit $rc; $log)"
      status=1
    fi
  done
else
  ref_state=([resnet50]="not written (--no-references)" [bert]="not written (--no-references)"
    [llama]="not written (--no-references)")
fi
# Builds configured with -DGPUVS_MODEL_REFERENCES=OFF have no fixture: the tests read these.
export GPUVS_MODEL_REF=${ref_file[resnet50]} GPUVS_BERT_REF=${ref_file[bert]} \
  GPUVS_LLAMA_REF=${ref_file[llama]}

# ---- the GPU tests --------------------------------------------------------------------
# The reason a test skipped: GoogleTest's skip message ("file:line: Skipped" and the
# lines after it), else the test's last line of output; from CTest's log of the run.
skip_reason() {
  awk -v name="$1" '
    /^[0-9]+\/[0-9]+ Test: / { t = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", t); mine = (t == name)
                               out = 0; next }
    mine && /^Output:$/ { out = 1; getline; next }
    mine && out && $0 == "<end of output>" { out = 0; mine = 0; next }
    mine && out { line[++n] = $0 }
    END {
      for (i = 1; i <= n; ++i) {
        if (line[i] ~ /: Skipped$/) {
          for (j = i + 1; j <= n && line[j] != "" && line[j] !~ /^\[  SKIPPED/; ++j)
            why = why (why == "" ? "" : " ") line[j]
          if (why != "") { print why; exit }
        }
      }
      for (i = n; i >= 1; --i) if (line[i] != "") { print line[i]; exit }
    }' "$build_dir/Testing/Temporary/LastTest.log"
}

if [[ $run_tests == 1 ]]; then
  ctest_log=$build_dir/gpu-check-ctest.log
  # The references' setup tests are left out: this script has just done their work and
  # said how it went. One test at a time: the GPU tests time kernels and the model
  # tests take most of a GPU's memory.
  args=(--test-dir "$build_dir" -L gpu --output-on-failure -E '^gpuvs_reference_'
    -FS '^gpuvs_reference_')
  [[ -z $tests_regex ]] || args+=(-R "$tests_regex")
  note "tests: ctest ${args[*]}"
  rc=0
  ctest "${args[@]}" 2>&1 | tee "$ctest_log" || rc=${PIPESTATUS[0]}
  [[ $rc == 0 ]] || fail "GPU tests: ctest exited $rc (see the failures above, $ctest_log)"
  mapfile -t not_run < <(awk '/^The following tests did not run:/ { on = 1; next }
    on && /^[ \t]+[0-9]+ - / { sub(/^[ \t]+[0-9]+ - /, ""); print; next } on { on = 0 }' \
    "$ctest_log")
  note "${#not_run[@]} GPU tests did not run or skipped"
  for entry in "${not_run[@]}"; do
    name=${entry% (*}
    echo "  $name (${entry##* (}: $(skip_reason "$name")"
  done
fi

# ---- the reference runs (--out) -------------------------------------------------------
declare -a run_summary=()
selected() { [[ " $runs " == *" $1 "* ]]; }
# Status of a finished run: gpuvs exits 4 when it finished but some results are invalid
# or throttled (recorded in the run file), a finished run all the same.
record() {  # NAME RC DIR
  local state="ok"
  case $2 in
    0) ;;
    4) state="finished, exit 4: ${exit4_means:-invalid or throttled results (in the run file)}" ;;
    *)
      state="FAILED, exit $2 ($3/gpuvs.log)"
      status=1
      ;;
  esac
  run_summary+=("$1: $state")
  note "$1: $state"
}
not_here() {  # NAME WHY
  run_summary+=("$1: not run: $2")
  note "$1: not run: $2"
}

# reference NAME MIN_GPUS [VAR=VALUE...] -- GPUVS_ARGS...: gpuvs --out OUT/NAME ARGS...
reference() {
  local name=$1 min=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  if ((gpus < min)); then
    not_here "$name" "needs $min GPU$( ((min == 1)) || echo s), $gpus visible"
    return
  fi
  local dir=$out_dir/$name rc=0
  mkdir -p "$dir"
  note "$name: ${envs[*]} gpuvs --out $dir $*"
  env "${envs[@]}" "$gpuvs" --out "$dir" "$@" > "$dir/gpuvs.log" 2>&1 || rc=$?
  tail -n 5 "$dir/gpuvs.log"
  record "$name" "$rc" "$dir"
}

# two_ranks NAME file|comm-id ARGS...: ranks 0 and 1 as two processes that meet through
# a rendezvous file or NCCL_COMM_ID; rank 0's run file is the reference.
two_ranks() {
  local name=$1 how=$2
  shift 2
  if ((gpus < 2)); then
    not_here "$name" "needs 2 GPUs, $gpus visible"
    return
  fi
  local dir=$out_dir/$name rc0=0 rc1=0 meet=() envs=()
  mkdir -p "$dir/rank1"
  if [[ $how == file ]]; then
    rm -f "$dir/rendezvous"
    meet=(--rendezvous "file:$dir/rendezvous")
  else
    envs=("NCCL_COMM_ID=${NCCL_COMM_ID:-127.0.0.1:29517}")
  fi
  note "$name: ${envs[*]} gpuvs --out $dir $* --rank 0|1 --ranks 2 ${meet[*]}"
  env "${envs[@]}" "$gpuvs" --out "$dir" "$@" --rank 0 --ranks 2 "${meet[@]}" \
    > "$dir/gpuvs.log" 2>&1 &
  local rank0=$!
  env "${envs[@]}" "$gpuvs" --out "$dir/rank1" "$@" --rank 1 --ranks 2 "${meet[@]}" \
    > "$dir/rank1/gpuvs.log" 2>&1 || rc1=$?
  wait "$rank0" || rc0=$?
  tail -n 5 "$dir/gpuvs.log"
  record "$name" "$((rc0 != 0 ? rc0 : rc1))" "$dir"
}

# The PyTorch workloads gpuvs monitor watches (data/reference/h200-monitor-*.json): a
# BF16 GEMM loop that keeps the tensor cores busy, and one thread of one block
# spinning, which NVML's "GPU utilization" counts as 100 % busy and GPM does not.
gemm_loop='import sys, time, torch
n = 8192; a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
torch.cuda.synchronize(); t0 = time.time()
while time.time() - t0 < float(sys.argv[1]):
    for _ in range(20): c = a @ b
    torch.cuda.synchronize()'
one_block='import sys, time, torch
t0 = time.time()
while time.time() - t0 < float(sys.argv[1]):
    torch.cuda._sleep(100_000_000); torch.cuda.synchronize()'

monitor() {  # NAME WORKLOAD SECONDS
  local dir=$out_dir/monitor rc=0
  mkdir -p "$dir"
  note "monitor-$1: gpuvs monitor --out $dir/$1.json -- python3 (PyTorch $1) $3"
  "$gpuvs" --out "$dir" monitor --out "$dir/$1.json" -- "${GPUVS_PYTHON:-python3}" -c "$2" "$3" \
    > "$dir/$1.log" 2>&1 || rc=$?
  tail -n 5 "$dir/$1.log"
  record "monitor-$1" "$rc" "$dir"
}

# timed NAME OUTFILE -- GPUVS_ARGS...: gpuvs ARGS > OUTFILE (stderr beside it, .log),
# recorded with its wall time.
timed() {
  local name=$1 outfile=$2 rc=0 t0 t1
  shift 3
  mkdir -p "$(dirname "$outfile")"
  note "$name: gpuvs $* > $outfile"
  t0=$(date +%s.%N)
  "$gpuvs" "$@" > "$outfile" 2> "${outfile%.*}.log" || rc=$?
  t1=$(date +%s.%N)
  tail -n 3 "${outfile%.*}.log"
  record "$name ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f s", b - a }'))" "$rc" \
    "$(dirname "$outfile")"
}

if [[ -n $out_dir ]]; then
  mkdir -p "$out_dir"
  note "reference runs into $out_dir: ${runs// /, }"
  first_gpu=${CUDA_VISIBLE_DEVICES:-0}
  first_gpu=${first_gpu%%,*}
  beside=()
  [[ -z $nccl_tests ]] || beside=(--nccl-tests "$nccl_tests")
  if selected run; then reference run 1 -- run; fi
  if selected compute; then reference bench-compute 1 -- bench compute; fi
  if selected memory; then
    reference bench-memory-1gpu 1 "CUDA_VISIBLE_DEVICES=$first_gpu" -- \
      bench memory host launch --time-cap 0.5
  fi
  if selected peer; then reference bench-peer 2 -- bench peer; fi
  if selected collectives; then
    reference collectives 2 -- bench collectives.nccl --time-cap 0.5 "${beside[@]}"
    reference collectives-allreduce 2 -- bench collectives.nccl --ops all_reduce "${beside[@]}"
    reference collectives-allreduce-ncclmemalloc 2 -- \
      bench collectives.nccl --ops all_reduce --buffers ncclMemAlloc "${beside[@]}"
    reference collectives-study 2 -- bench collectives.algorithms
    two_ranks collectives-file file bench collectives.nccl --ops all_reduce,sendrecv \
      --sizes 8:1G:32
    two_ranks collectives-nccl-comm-id comm-id bench collectives.nccl --ops broadcast \
      --sizes 8:1G:64
    if ((gpus < 2)); then
      not_here collectives-mpi "needs 2 GPUs, $gpus visible"
    elif ! command -v mpirun > /dev/null; then
      not_here collectives-mpi "no mpirun on PATH"
    else
      dir=$out_dir/collectives-mpi
      mkdir -p "$dir"
      mpi=(mpirun -np 2)
      [[ $(id -u) != 0 ]] || mpi+=(--allow-run-as-root)
      for v in $(env | grep -o '^NCCL_[A-Za-z0-9_]*' || true); do mpi+=(-x "$v"); done
      note "collectives-mpi: ${mpi[*]} gpuvs --out $dir bench collectives.nccl ..."
      rc=0
      "${mpi[@]}" "$gpuvs" --out "$dir" bench collectives.nccl --ops all_reduce,alltoall \
        --sizes 8:1G:32 > "$dir/gpuvs.log" 2>&1 || rc=$?
      record collectives-mpi "$rc" "$dir"
    fi
  fi
  if selected models; then
    m=(--gpu 0)
    reference models/resnet50-bf16-train 1 -- model resnet50 --mode train --precision bf16 \
      --batch 256 "${m[@]}"
    reference models/resnet50-bf16-infer 1 -- model resnet50 --mode infer --precision bf16 \
      --batch 256 "${m[@]}"
    reference models/resnet50-tf32-train 1 -- model resnet50 --mode train --precision tf32 \
      --batch 256 "${m[@]}"
    reference models/resnet50-fp32-train 1 -- model resnet50 --mode train --precision fp32 \
      --batch 256 --steps 10 "${m[@]}"
    reference models/resnet50-bf16-profile 1 -- model resnet50 --mode train --precision bf16 \
      --batch 256 --profile --steps 20 "${m[@]}"
    reference models/resnet50-fp32-profile 1 -- model resnet50 --mode train --precision fp32 \
      --batch 256 --profile --steps 4 "${m[@]}"
    bert=(model bert-large --seq 128)
    reference models/bert-large-seq128-train 1 -- "${bert[@]}" --mode train --precision bf16 \
      --batch 64 "${m[@]}"
    reference models/bert-large-seq128-infer 1 -- "${bert[@]}" --mode infer --precision bf16 \
      --batch 64 "${m[@]}"
    reference models/bert-large-seq128-train-fp8 1 -- "${bert[@]}" --mode train \
      --precision fp8 --batch 64 "${m[@]}"
    reference models/bert-large-seq128-profile 1 -- "${bert[@]}" --mode train \
      --precision bf16 --batch 64 --profile --steps 10 "${m[@]}"
    reference models/bert-large-seq128-fp8-profile 1 -- "${bert[@]}" --mode train \
      --precision fp8 --batch 64 --profile --steps 10 "${m[@]}"
    reference models/bert-large-seq128-train-batch-max 1 -- "${bert[@]}" --mode train \
      --precision bf16 --batch max "${m[@]}"
    bert=(model bert-large --seq 512 --mode train --precision bf16 --batch 16)
    reference models/bert-large-seq512-train 1 -- "${bert[@]}" "${m[@]}"
    reference models/bert-large-seq512-profile 1 -- "${bert[@]}" --profile --steps 10 "${m[@]}"
    reference models/bert-large-seq512-train-fused-attention 1 -- "${bert[@]}" \
      --attention fused "${m[@]}"
    reference models/quick-pass 1 -- bench model --quick "${m[@]}"
  fi
  # llama_peer NAME SCRIPT ARGS...: scripts/peers/SCRIPT ARGS > peers/NAME.json, where
  # Python has torch and transformers.
  llama_peer() {
    local name=$1 script=$2 py=${GPUVS_PYTHON:-python3} rc=0
    shift 2
    if ((gpus < 1)); then
      not_here "llama-peer $name" "needs a GPU, none visible"
      return
    elif ! "$py" -c 'import torch, transformers' > /dev/null 2>&1; then
      not_here "llama-peer $name" "$py cannot import torch and transformers"
      return
    fi
    mkdir -p "$out_dir/peers"
    note "llama-peer $name: $py scripts/peers/$script $*"
    "$py" "$(dirname "$0")/peers/$script" "$@" > "$out_dir/peers/$name.json" \
      2> "$out_dir/peers/$name.log" || rc=$?
    cat "$out_dir/peers/$name.json"
    record "llama-peer $name" "$rc" "$out_dir/peers"
  }
  if selected llama; then
    l=(model llama --mode infer --precision bf16 --prompt 128 --gpu 0)
    reference models/llama-8b-bf16-infer-batch1 1 -- "${l[@]}" --size 8b --batch 1 --generate 256 \
      --profile
    reference models/llama-8b-bf16-infer-batch64 1 -- "${l[@]}" --size 8b --batch 64 --generate 128
    reference models/llama-1b-bf16-infer-batch1 1 -- "${l[@]}" --size 1b --batch 1 --generate 256
    l=(model llama --mode infer --precision fp8 --prompt 128 --gpu 0)
    reference models/llama-8b-fp8-infer-batch1 1 -- "${l[@]}" --size 8b --batch 1 --generate 256 \
      --profile
    reference models/llama-8b-fp8-infer-batch64 1 -- "${l[@]}" --size 8b --batch 64 --generate 128
    reference models/llama-8b-fp8-kvfp8-infer-batch64 1 -- "${l[@]}" --size 8b --batch 64 \
      --generate 128 --kv-cache fp8
    reference models/llama-8b-fp8-kvfp8-infer-batch-max 1 -- "${l[@]}" --size 8b --batch max \
      --generate 128 --kv-cache fp8
    llama_peer llama-8b-batch64 llama_generate.py --size 8b --batch 64 --prompt 128 --generate 64
  fi
  if selected llama-train; then
    l=(model llama --size 1b --mode train --seq 2048 --batch 8 --gpu 0)
    reference models/llama-1b-bf16-train-batch8 1 -- "${l[@]}" --precision bf16 --profile
    reference models/llama-1b-fp8-train-batch8 1 -- "${l[@]}" --precision fp8 --profile
    reference models/llama-1b-bf16-train-batch8-attention-gpuvs 1 -- "${l[@]}" --precision bf16 \
      --attention gpuvs --profile
    reference models/llama-1b-bf16-train-batch8-recompute-selective 1 -- "${l[@]}" \
      --precision bf16 --recompute selective
    reference models/llama-1b-bf16-train-batch8-recompute-full 1 -- "${l[@]}" --precision bf16 \
      --recompute full
    reference models/llama-1b-bf16-train-batch-max 1 -- model llama --size 1b --mode train \
      --seq 2048 --batch max --gpu 0 --precision bf16
    llama_peer attention-1b-seq2048-batch8 attention.py --batch 8 --seq 2048 --heads 32 \
      --kv-heads 8 --head-dim 64
    llama_peer llama-1b-train-batch8 llama_train.py --size 1b --seq 2048 --batch 8
    llama_peer llama-1b-train-batch8-compiled llama_train.py --size 1b --seq 2048 --batch 8 \
      --compile
  fi
  if selected tune; then
    if ((gpus < 1)); then
      not_here tune "needs a GPU, none visible"
    else
      t=$out_dir/tune
      tune=(--progress plain tune --model all --cache "$t/cache" --gpu 0)
      timed tune "$t/tune.json" -- --out "$t" "${tune[@]}" --json
      timed tune-from-cache "$t/tune-cached.json" -- --out "$t/again" "${tune[@]}" --json
      timed detect "$t/detect.txt" -- detect --cache "$t/cache"
      timed tune-show-env "$t/tune.env" -- tune --show "$t/tune.json" --emit env
      timed tune-show-python "$t/tune.py" -- tune --show "$t/tune.json" --emit python
      timed tune-show "$t/tune-table.txt" -- tune --show "$t/tune.json"
      timed batch-max-resnet50 "$t/batch-max/resnet50.txt" -- --out "$t/batch-max" \
        --progress plain model resnet50 --mode train --precision bf16 --batch max --gpu 0
      timed batch-max-bert-large "$t/batch-max/bert-large.txt" -- --out "$t/batch-max" \
        --progress plain model bert-large --seq 128 --mode train --precision bf16 --batch max \
        --gpu 0
    fi
  fi
  if selected check; then
    if ((gpus < 1)); then
      not_here check "needs a GPU, none visible"
    else
      c=$out_dir/check
      exit4_means="warnings only, no GPU failed (in check.json)"
      for level in 1 2; do
        timed "check-level$level" "$c/level$level/check.json" -- --out "$c/level$level" \
          --progress plain check --level "$level" --json
      done
      timed check-level3 "$c/level3/check.json" -- --out "$c/level3" --progress plain \
        check --level 3 --duration 120 --baseline "$c/level2" --json
      unset exit4_means
    fi
  fi
  if selected monitor; then
    if ((gpus < 1)); then
      not_here monitor "needs a GPU, none visible"
    elif ! "${GPUVS_PYTHON:-python3}" -c 'import torch' > /dev/null 2>&1; then
      not_here monitor "${GPUVS_PYTHON:-python3} cannot import torch (the workloads are PyTorch)"
    else
      monitor gemm-loop "$gemm_loop" 10
      monitor single-block "$one_block" 8
    fi
  fi
fi

# ---- summary --------------------------------------------------------------------------
echo
note "summary"
echo "  reference resnet50: ${ref_state[resnet50]}"
echo "  reference bert: ${ref_state[bert]}"
echo "  reference llama: ${ref_state[llama]}"
if [[ $run_tests == 1 ]]; then
  echo "  GPU tests: $(grep -E '^[0-9]+% tests passed' "$ctest_log" || echo 'no summary')"
fi
for line in "${run_summary[@]}"; do echo "  $line"; done
exit "$status"
