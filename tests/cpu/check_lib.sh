# Sourced by the shell tests (test_gpu_check.sh, test_package.sh): `check WHAT CMD...`
# prints "ok   WHAT" or "FAIL WHAT" and counts the failures in $failures, and a
# temporary folder $tmp removed on exit.
# shellcheck shell=bash
failures=0
check() {  # WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then
    echo "ok   $what"
  else
    echo "FAIL $what"
    failures=$((failures + 1))
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
