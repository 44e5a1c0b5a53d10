#!/usr/bin/env bash
# Writes one PyTorch reference of the model GPU tests (docs/model-checks.md) with the
# Python named by GPUVS_PYTHON (default python3 on PATH): the CTest setup tests
# gpuvs_reference_resnet50, gpuvs_reference_bert and gpuvs_reference_llama
# (tests/CMakeLists.txt) and scripts/gpu-check.sh run it. The dump script decides the
# rest (up to date, torch, transformers, a CUDA GPU); this wrapper only covers what it
# cannot: no Python at all.
#   usage: scripts/models/write_reference.sh resnet50|bert|llama FILE [dump options...]
# Exit codes: 0 written or up to date; 77 cannot here (the reason on stdout: no
# Python, no torch, no torchvision/transformers, no CUDA GPU); 1 the dump failed;
# 2 usage.
set -euo pipefail
usage="usage: scripts/models/write_reference.sh resnet50|bert|llama FILE [dump options...]"
if [[ $# -lt 2 ]]; then
  echo "$usage" >&2
  exit 2
fi
model=$1
out=$2
shift 2
case $model in
  resnet50 | bert | llama) ;;
  *)
    echo "write_reference.sh: unknown model '$model' (resnet50, bert or llama)" >&2
    exit 2
    ;;
esac
python=${GPUVS_PYTHON:-python3}
# Builtins only up to here: this must also run with a PATH that has no python3.
if ! command -v "$python" > /dev/null 2>&1; then
  echo "dump_$model: not written: no $python on PATH (GPUVS_PYTHON names another" \
    "interpreter); the reference needs Python 3 with PyTorch"
  exit 77
fi
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
exec "$python" "$here/dump_$model.py" --out "$out" "$@"
