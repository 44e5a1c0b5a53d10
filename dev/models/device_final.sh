#!/usr/bin/env bash
# One device call for issues 7 and 8 on one H200, when device time is short: build,
# the PyTorch references and correctness tests of both models, then the throughput
# figures the issues ask for (run files under $OUT), each step under its own timeout so
# a slow one cannot eat the others. Everything is packed into $OUT/final.tgz.
set -u
export NCCL_NVLS_ENABLE=0
FINAL=${OUT:-/tmp/out}
OUT=/tmp/gpuvs-final-out
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
# Packed after every section too: a call cut short still brings back what was done.
pack() { tar czf "$FINAL/final.tgz.tmp" -C "$OUT" . && mv "$FINAL/final.tgz.tmp" "$FINAL/final.tgz"; cp "$OUT/steps.log" "$FINAL/" 2>/dev/null; }
trap pack EXIT
B=build/dev
G=$B/src/gpuvs
log() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }

log build
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    && cmake --build $B --target gpuvs test_resnet50 test_bert -j 16; } > "$OUT/build.log" 2>&1 \
  || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }

# model NAME ARGS...: one `gpuvs model` run into $OUT/NAME, its headline lines logged.
model() {
  local name=$1; shift
  log "$name: gpuvs model $*"
  local t0=$SECONDS
  timeout 150 $G --out "$OUT/$name" model "$@" --gpu 0 > "$OUT/$name.txt" 2>&1
  echo "$name: exit $?, wall $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"
  grep -E "img/s|seq/s|step time|memory|energy|max batch|error" "$OUT/$name.txt" | head -8 \
    | tee -a "$OUT/steps.log"
}

log "resnet50: targets"
model rn-bf16-train resnet50 --mode train --precision bf16 --batch 256
model rn-bf16-infer resnet50 --mode infer --precision bf16 --batch 256
model rn-tf32-train resnet50 --mode train --precision tf32 --batch 256
model rn-fp32-train resnet50 --mode train --precision fp32 --batch 256
model rn-bf16-profile resnet50 --mode train --precision bf16 --batch 256 --profile --steps 30

pack

log "bert: targets"
model bert-128-train bert-large --mode train --precision bf16 --seq 128 --batch 64
model bert-128-infer bert-large --mode infer --precision bf16 --seq 128 --batch 64
model bert-512-train bert-large --mode train --precision bf16 --seq 512 --batch 16
GPUVS_BERT_FLASH=1 model bert-512-train-flash bert-large --mode train --precision bf16 --seq 512 --batch 16
GPUVS_BERT_FLASH=1 model bert-128-train-flash bert-large --mode train --precision bf16 --seq 128 --batch 64
model bert-128-train-fp8 bert-large --mode train --precision fp8 --seq 128 --batch 64
model bert-512-profile bert-large --mode train --precision bf16 --seq 512 --batch 16 --profile --steps 20
pack

log "resnet50: dump + test"
timeout 120 python3 scripts/models/dump_resnet50.py --out /tmp/resnet50.safetensors \
  > "$OUT/dump_resnet50.txt" 2>&1; echo "dump exit $?" | tee -a "$OUT/steps.log"
GPUVS_MODEL_REF=/tmp/resnet50.safetensors GPUVS_MODEL_REF_ALL=1 timeout 120 \
  $B/tests/test_resnet50 > "$OUT/test_resnet50.txt" 2>&1
echo "test_resnet50 exit $?" | tee -a "$OUT/steps.log"
grep -E "OK \]|FAILED \]|SKIPPED \]" "$OUT/test_resnet50.txt" | tee -a "$OUT/steps.log"

pack

log "bert: dump + tests"
timeout 90 python3 scripts/models/dump_bert.py --out /tmp/bert.safetensors \
  > "$OUT/dump_bert.txt" 2>&1; echo "dump exit $?" | tee -a "$OUT/steps.log"
GPUVS_BERT_REF=/tmp/bert.safetensors timeout 120 $B/tests/test_bert \
  > "$OUT/test_bert.txt" 2>&1
echo "test_bert exit $?" | tee -a "$OUT/steps.log"
grep -E "OK \]|FAILED \]|SKIPPED \]|fp8 plan" "$OUT/test_bert.txt" | tee -a "$OUT/steps.log"

log done
