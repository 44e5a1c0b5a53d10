#!/usr/bin/env bash
# CTest's gpu_check_* tests: scripts/gpu-check.sh and scripts/models/write_reference.sh
# (the references' CTest fixture) as far as they go without a GPU.
#   usage: test_gpu_check.sh usage|shellcheck|references SOURCE_DIR
# Exit 0 when every check of the part passes, 1 naming the failed ones, 77 (CTest's
# skip) when the part cannot run here, saying why.
set -euo pipefail
part=$1
# shellcheck source=tests/cpu/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
cd "$2"

# run NAME CMD...: exit code in $tmp/NAME.rc, stdout and stderr in $tmp/NAME.out/.err.
run() {
  local name=$1 rc=0
  shift
  "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" || rc=$?
  echo "$rc" > "$tmp/$name.rc"
}
rc_is() { [[ $(< "$tmp/$1.rc") == "$2" ]]; }
lines() { [[ $(wc -l < "$tmp/$1") == "$2" ]]; }
has() { grep -q -- "$2" "$tmp/$1"; }

case $part in
  usage)
    run help scripts/gpu-check.sh --help
    check "--help exits 0" rc_is help 0
    check "--help prints the usage" has help.out '^Usage: scripts/gpu-check.sh'
    check "--help names every option" has help.out '--runs LIST'
    check "--help says some H200s need NCCL_NVLS_ENABLE=0" has help.out 'NCCL_NVLS_ENABLE=0'
    # Each usage error: exit 2, one line on stderr naming the problem, nothing on stdout
    # (nothing is built).
    usage_error() {  # NAME EXPECTED ARGS...
      local name=$1 expected=$2
      shift 2
      run "$name" scripts/gpu-check.sh "$@"
      check "$* exits 2" rc_is "$name" 2
      check "$*: one line on stderr" lines "$name.err" 1
      check "$*: says '$expected'" has "$name.err" "$expected"
      check "$*: nothing on stdout" lines "$name.out" 0
    }
    usage_error unknown "unknown option '--bogus'" --bogus
    usage_error novalue "--jobs needs a value" --jobs
    usage_error badjobs "whole number of 1 or more, got 'x'" --jobs x
    usage_error zerojobs "got '0'" -j 0
    usage_error badrun "unknown group 'gemm'" --out "$tmp/o" --runs run,gemm
    usage_error runsalone "go with --out DIR" --runs peer
    usage_error notests "no folder" --out "$tmp/o" --nccl-tests "$tmp/none"
    # From another directory: refused before anything is configured.
    run elsewhere bash -c "cd '$tmp' && '$PWD/scripts/gpu-check.sh'"
    check "outside the repository root exits 2" rc_is elsewhere 2
    check "outside the repository root: says so" has elsewhere.err "repository root"
    ;;
  shellcheck)
    if ! command -v shellcheck > /dev/null; then
      echo "skipped: shellcheck is not installed (apt-get install shellcheck)"
      exit 77
    fi
    run sc shellcheck -x scripts/gpu-check.sh scripts/models/write_reference.sh \
      tests/cpu/test_gpu_check.sh tests/cpu/test_package.sh tests/cpu/check_lib.sh \
      examples/slurm/gpuvs-fleet.sbatch
    cat "$tmp/sc.out"
    check "shellcheck finds nothing" rc_is sc 0
    ;;
  references)
    ref=$tmp/ref/bert.safetensors
    mkdir -p "$tmp/ref"
    # No Python: the wrapper itself says so (PATH without python3, GPUVS_PYTHON unset).
    run nopython env -u GPUVS_PYTHON PATH="$tmp/empty" "$BASH" scripts/models/write_reference.sh \
      bert "$ref"
    check "no python3 on PATH: skip code 77" rc_is nopython 77
    check "no python3 on PATH: says why" has nopython.out "not written: no python3 on PATH"
    run badpython env GPUVS_PYTHON="$tmp/none/python3" scripts/models/write_reference.sh \
      resnet50 "$ref"
    check "GPUVS_PYTHON missing: skip code 77" rc_is badpython 77
    run badmodel scripts/models/write_reference.sh gpt2 "$ref"
    check "unknown model: exit 2" rc_is badmodel 2
    python=${GPUVS_PYTHON:-python3}
    if ! command -v "$python" > /dev/null; then
      echo "skipped (the rest): no $python here to simulate a Python without torch"
      [[ $failures == 0 ]] || exit 1
      exit 77
    fi
    # A Python whose torch cannot be imported, whatever this machine has installed.
    mkdir -p "$tmp/fake/torch"
    echo 'raise ImportError("simulated: torch is missing", name="torch")' \
      > "$tmp/fake/torch/__init__.py"
    no_torch=(env PYTHONPATH="$tmp/fake" GPUVS_PYTHON="$python")
    for model in resnet50 bert llama; do
      run "notorch-$model" "${no_torch[@]}" scripts/models/write_reference.sh "$model" "$ref"
      check "$model, no torch: skip code 77" rc_is "notorch-$model" 77
      check "$model, no torch: says torch is not importable" has "notorch-$model.out" \
        "dump_$model: not written: torch is not importable by"
      check "$model, no torch: writes nothing" test ! -e "$ref"
    done
    # A torch that sees no CUDA GPU (and a torchvision and transformers that import):
    # the dumps need one, so they skip before computing anything.
    mkdir -p "$tmp/nogpu/torch" "$tmp/nogpu/torchvision" "$tmp/nogpu/transformers"
    printf '%s\n' '__version__ = "0-simulated"' 'class cuda:' '    is_available = staticmethod(lambda: False)' \
      'def __getattr__(name): return object()' > "$tmp/nogpu/torch/__init__.py"
    touch "$tmp/nogpu/torchvision/__init__.py" "$tmp/nogpu/transformers/__init__.py"
    for model in resnet50 bert llama; do
      run "nogpu-$model" env PYTHONPATH="$tmp/nogpu" GPUVS_PYTHON="$python" \
        scripts/models/write_reference.sh "$model" "$ref"
      check "$model, no CUDA GPU: skip code 77" rc_is "nogpu-$model" 77
      check "$model, no CUDA GPU: says so" has "nogpu-$model.out" "sees no CUDA GPU"
      check "$model, no CUDA GPU: writes nothing" test ! -e "$ref"
    done
    # An up-to-date file (the header of a gpuvs reference with the dump's default
    # arguments, newer than the scripts) is kept without importing torch.
    header='{"__metadata__":{"format":"gpuvs.ref","version":"1","model":"bert-large",'
    header+='"batch":"4","seq":"128","seed":"1234"}}'
    printf -v length '\\x%02x' "${#header}"
    printf '%b\0\0\0\0\0\0\0%s' "$length" "$header" > "$ref"
    touch -d '+1 hour' "$ref"
    run uptodate "${no_torch[@]}" scripts/models/write_reference.sh bert "$ref"
    check "up to date: exit 0 without torch" rc_is uptodate 0
    check "up to date: says so" has uptodate.out "is up to date"
    run otherargs "${no_torch[@]}" scripts/models/write_reference.sh bert "$ref" --seq 64
    check "other arguments: rewritten (here: skipped, no torch)" rc_is otherargs 77
    check "other arguments: says why" has otherargs.out "made with seq 128, asked for 64"
    touch -d '2000-01-01' "$ref"
    run stale "${no_torch[@]}" scripts/models/write_reference.sh bert "$ref"
    check "older than the script: rewritten (here: skipped, no torch)" rc_is stale 77
    check "older than the script: says why" has stale.out "dump_bert.py is newer than the file"
    touch -d '+1 hour' "$ref"
    run force "${no_torch[@]}" scripts/models/write_reference.sh bert "$ref" --force
    check "--force: rewritten even when up to date" rc_is force 77
    # The Llama dump's own arguments (prompt, generate) decide whether it is up to date.
    llama=$tmp/ref/llama.safetensors
    header='{"__metadata__":{"format":"gpuvs.ref","version":"1","model":"llama-tiny",'
    header+='"batch":"2","prompt":"16","generate":"32","seed":"1234","train_seq":"64"}}'
    printf -v length '\\x%02x' "${#header}"
    printf '%b\0\0\0\0\0\0\0%s' "$length" "$header" > "$llama"
    touch -d '+1 hour' "$llama"
    run llama-uptodate "${no_torch[@]}" scripts/models/write_reference.sh llama "$llama"
    check "llama, up to date: exit 0 without torch" rc_is llama-uptodate 0
    check "llama, up to date: says so" has llama-uptodate.out "is up to date"
    run llama-generate "${no_torch[@]}" scripts/models/write_reference.sh llama "$llama" \
      --generate 8
    check "llama, other arguments: rewritten (here: skipped, no torch)" rc_is llama-generate 77
    check "llama, other arguments: says why" has llama-generate.out \
      "made with generate 32, asked for 8"
    ;;
  *)
    echo "usage: test_gpu_check.sh usage|shellcheck|references SOURCE_DIR" >&2
    exit 2
    ;;
esac
[[ $failures == 0 ]] || {
  echo "$failures checks failed"
  exit 1
}
