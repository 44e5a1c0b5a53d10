#!/usr/bin/env bash
# One device call for issues 7 and 8 on one H200, when device time is short: build;
# the throughput figures the issues ask for and the per-layer profiles behind the
# misses (run files under $OUT), `gpuvs run`'s quick model pass timed; then the
# PyTorch references and the correctness tests of both models. Each step runs under
# its own timeout so a slow one cannot eat the others. Everything is packed into
# $OUT/final.tgz after every section (a call cut short still brings back what ran).
# SECTIONS picks what runs (default: targets profiles quick bert-tests resnet-tests
# model-run). Also: rn-bf16 (ResNet-50 bf16 train, infer, profile and --batch max),
# bert-perf (BERT-large's four target runs and the bf16 and fp8 profiles at seq 128)
# and bert-max (BERT-large bf16 seq 128 train at --batch max).
set -u
SECTIONS=${SECTIONS:-targets profiles quick bert-tests resnet-tests model-run}
has() { [[ " $SECTIONS " == *" $1 "* ]]; }
export NCCL_NVLS_ENABLE=0
FINAL=${OUT:-/tmp/out}
OUT=/tmp/gpuvs-final-out
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
pack() { tar czf "$FINAL/final.tgz.tmp" -C "$OUT" . && mv "$FINAL/final.tgz.tmp" "$FINAL/final.tgz"; cp "$OUT/steps.log" "$FINAL/" 2>/dev/null; }
trap pack EXIT
B=build/dev
G=$B/src/gpuvs
log() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }

log build
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    && cmake --build $B --target gpuvs test_resnet50 test_bert test_model_run -j 16; } \
    > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }

# model NAME ARGS...: one `gpuvs model` run into $OUT/NAME, its headline lines logged.
model() {
  local name=$1; shift
  log "$name: gpuvs model $*"
  local t0=$SECONDS
  timeout ${MODEL_TIMEOUT:-150} $G --out "$OUT/$name" model "$@" --gpu 0 > "$OUT/$name.txt" 2>&1
  echo "$name: exit $?, wall $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"
  grep -E "img/s|seq/s|step time|error" "$OUT/$name.txt" | head -3 | tee -a "$OUT/steps.log"
}

if has rn-bf16; then
  log "resnet50 bf16"
  model rn-bf16-train resnet50 --mode train --precision bf16 --batch 256
  model rn-bf16-infer resnet50 --mode infer --precision bf16 --batch 256
  model rn-bf16-profile resnet50 --mode train --precision bf16 --batch 256 --profile --steps 20
  model rn-bf16-batch-max resnet50 --mode train --precision bf16 --batch max
  grep -iE "max batch|search|recommended" "$OUT/rn-bf16-batch-max.txt" | head -5 | tee -a "$OUT/steps.log"
  pack
fi
if has bert-perf; then
log "bert-large targets and profiles"
model bert-128-train bert-large --mode train --precision bf16 --seq 128 --batch 64
model bert-128-train-fp8 bert-large --mode train --precision fp8 --seq 128 --batch 64
model bert-128-infer bert-large --mode infer --precision bf16 --seq 128 --batch 64
model bert-512-train bert-large --mode train --precision bf16 --seq 512 --batch 16
model bert-128-profile bert-large --mode train --precision bf16 --seq 128 --batch 64 --profile --steps 10
model bert-128-fp8-profile bert-large --mode train --precision fp8 --seq 128 --batch 64 --profile --steps 10
pack
fi
if has targets; then
log "targets"
model rn-bf16-train resnet50 --mode train --precision bf16 --batch 256
model rn-bf16-infer resnet50 --mode infer --precision bf16 --batch 256
model rn-tf32-train resnet50 --mode train --precision tf32 --batch 256
model rn-fp32-train resnet50 --mode train --precision fp32 --batch 256 --steps 10
model bert-128-train bert-large --mode train --precision bf16 --seq 128 --batch 64
model bert-128-infer bert-large --mode infer --precision bf16 --seq 128 --batch 64
model bert-512-train bert-large --mode train --precision bf16 --seq 512 --batch 16
model bert-128-train-fp8 bert-large --mode train --precision fp8 --seq 128 --batch 64
pack
fi
if has profiles; then
log "profiles and variants"
model rn-bf16-profile resnet50 --mode train --precision bf16 --batch 256 --profile --steps 20
model rn-fp32-profile resnet50 --mode train --precision fp32 --batch 256 --profile --steps 4
model bert-128-profile bert-large --mode train --precision bf16 --seq 128 --batch 64 --profile --steps 10
model bert-128-fp8-profile bert-large --mode train --precision fp8 --seq 128 --batch 64 --profile --steps 10
model bert-512-profile bert-large --mode train --precision bf16 --seq 512 --batch 16 --profile --steps 10
model bert-512-train-fused bert-large --mode train --precision bf16 --seq 512 --batch 16 --attention fused
pack
fi

if has quick; then
log "quick pass (gpuvs run's models; issue 7 and 8 ask <= 30 s for each model's two)"
t0=$SECONDS
timeout 120 $G --out "$OUT/quick" bench model --quick --gpu 0 > "$OUT/quick.txt" 2>&1
echo "quick pass: exit $?, wall $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"
grep -E "img/s|seq/s" "$OUT/quick.txt" | grep -v "step time" | tee -a "$OUT/steps.log"
pack
fi

if has bert-tests; then
log "bert: dump + tests"
timeout 90 python3 scripts/models/dump_bert.py --out /tmp/bert.safetensors \
  > "$OUT/dump_bert.txt" 2>&1; echo "dump exit $?" | tee -a "$OUT/steps.log"
GPUVS_BERT_REF=/tmp/bert.safetensors timeout 150 $B/tests/test_bert > "$OUT/test_bert.txt" 2>&1
echo "test_bert exit $?" | tee -a "$OUT/steps.log"
grep -E "FAILED \]|PASSED|fp8 cast" "$OUT/test_bert.txt" | tee -a "$OUT/steps.log"
pack
fi

if has resnet-tests; then
log "resnet50: dump + tests"
timeout 120 python3 scripts/models/dump_resnet50.py --out /tmp/resnet50.safetensors \
  > "$OUT/dump_resnet50.txt" 2>&1; echo "dump exit $?" | tee -a "$OUT/steps.log"
GPUVS_MODEL_REF=/tmp/resnet50.safetensors timeout 120 $B/tests/test_resnet50 \
  > "$OUT/test_resnet50.txt" 2>&1
echo "test_resnet50 exit $?" | tee -a "$OUT/steps.log"
grep -E "FAILED \]|PASSED" "$OUT/test_resnet50.txt" | tee -a "$OUT/steps.log"
pack
fi

if has model-run; then
log "runner tests (batch search, out of memory, graph, accumulation, run file)"
timeout 330 $B/tests/test_model_run > "$OUT/test_model_run.txt" 2>&1
echo "test_model_run exit $?" | tee -a "$OUT/steps.log"
grep -E "FAILED \]|PASSED|batch search" "$OUT/test_model_run.txt" | tee -a "$OUT/steps.log"
pack
fi

if has bert-max; then
MODEL_TIMEOUT=240 model bert-128-batch-max bert-large --mode train --precision bf16 --seq 128 --batch max
grep -iE "max batch|search|recommended" "$OUT/bert-128-batch-max.txt" | head -5 | tee -a "$OUT/steps.log"
pack
fi
log done
