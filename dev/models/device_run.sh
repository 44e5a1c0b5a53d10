#!/usr/bin/env bash
# Device run for the models issue (7): build, dump the PyTorch reference, run the
# correctness tests against it, then the throughput targets. Steps are picked with
# STEPS (default all: "build dump test targets"); each call must stay under the
# device's 10-minute limit, so a slow step can run on its own, e.g.
#   STEPS="build dump" dev/models/device_run.sh; STEPS="test" dev/models/device_run.sh
# Results in one archive, $OUT/results.tgz (plus steps.log beside it).
# The reference comes from PyTorch + torchvision of the device image (no download:
# resnet50(weights=None)); it is written to build/dev/ref/, kept between calls.
set -u
FINAL=${OUT:-/tmp/out}
OUT=/tmp/gpuvs-models-out
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/results.tgz" -C "$OUT" . ; cp "$OUT/steps.log" "$FINAL/" 2>/dev/null' EXIT
STEPS=${STEPS:-build dump test targets}
B=build/dev
# Under the build folder: ignored build outputs stay on the device machine between calls.
REF=${GPUVS_MODEL_REF:-$B/ref/resnet50.safetensors}
log() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }
has_step() { [[ " $STEPS " == *" $1 "* ]]; }
status=0

log "steps: $STEPS"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv \
  > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

if has_step build; then
  log build
  targets="gpuvs test_resnet50"
  # test_model_run comes with the trainer (another part of the issue): built when the
  # tree has it.
  if [ -f tests/gpu/test_model_run.cpp ]; then targets="$targets test_model_run"; fi
  # shellcheck disable=SC2086
  { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      && cmake --build $B --target $targets -j 16; } > "$OUT/build.log" 2>&1
  rc=$?
  echo "build exit $rc ($targets)" | tee -a "$OUT/steps.log"
  if [ $rc -ne 0 ]; then
    tail -40 "$OUT/build.log"
    exit 1
  fi
fi

if has_step dump; then
  log "dump: PyTorch reference (fp32, TF32 off) + PyTorch's own fp32b/tf32/bf16/fp16 + trajectories"
  python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', \
torchvision.__version__)" 2>&1 | tee -a "$OUT/steps.log"
  # The reference, then the same train step again in four variants (pt_fp32b, pt_tf32,
  # pt_bf16, pt_fp16: ~100 MB of gradients each, ~0.5 GB in all) and two 20-step loss
  # trajectories: about a minute on an H200; 300 s leaves room for a slow first CUDA init.
  timeout 300 python3 scripts/models/dump_resnet50.py --out "$REF" > "$OUT/dump.txt" 2>&1
  rc=$?
  echo "dump exit $rc" | tee -a "$OUT/steps.log"
  tail -n 12 "$OUT/dump.txt"
  [ $rc -eq 0 ] || status=1
fi

if has_step test; then
  log "test: test_resnet50 against $REF"
  if [ ! -f "$REF" ]; then
    echo "no reference at $REF: run the dump step first (the tests would skip)" \
      | tee -a "$OUT/steps.log"
    status=1
  fi
  GPUVS_MODEL_REF=$REF timeout 300 $B/tests/test_resnet50 > "$OUT/test_resnet50.txt" 2>&1
  rc=$?
  echo "test_resnet50 exit $rc" | tee -a "$OUT/steps.log"
  grep -E "^resnet50-check|FAILED|SKIPPED|PASSED" "$OUT/test_resnet50.txt" | tail -n 80
  [ $rc -eq 0 ] || status=1
  if [ -x $B/tests/test_model_run ]; then
    log "test: test_model_run"
    timeout 200 $B/tests/test_model_run > "$OUT/test_model_run.txt" 2>&1
    rc=$?
    echo "test_model_run exit $rc" | tee -a "$OUT/steps.log"
    grep -E "FAILED|SKIPPED|PASSED" "$OUT/test_model_run.txt" | tail -n 20
    [ $rc -eq 0 ] || status=1
  else
    echo "test_model_run: not built (not in this tree yet)" | tee -a "$OUT/steps.log"
  fi
fi

if has_step targets; then
  if [ -f dev/models/run_targets.sh ]; then
    log "targets: dev/models/run_targets.sh"
    # run_targets.sh writes its run files under $OUT: here a folder of the archive.
    mkdir -p "$OUT/targets"
    OUT="$OUT/targets" timeout 420 bash dev/models/run_targets.sh $B/src/gpuvs \
      > "$OUT/targets.txt" 2>&1
    rc=$?
    echo "targets exit $rc" | tee -a "$OUT/steps.log"
    tail -n 40 "$OUT/targets.txt"
    [ $rc -eq 0 ] || status=1
  else
    echo "targets: dev/models/run_targets.sh does not exist yet" | tee -a "$OUT/steps.log"
  fi
fi
log "done (status $status)"
exit $status
