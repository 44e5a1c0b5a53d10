#!/usr/bin/env bash
# CTest's package test: `cpack -G DEB` in the build folder makes a package whose files
# are the binary, the manual page, the bash and zsh completions, the documentation and
# the Slurm example; unpacked with `dpkg-deb -x` into a temporary root (as installing it
# would place them) the binary answers --help, `man` renders the page with every
# command, and the bash completion completes commands and options.
#   usage: test_package.sh BUILD_DIR
# Exit 0 when every check passes, 1 naming the failed ones, 77 (CTest's skip) where
# cpack or dpkg-deb is missing, saying which.
set -euo pipefail
build=$1
for tool in cpack dpkg-deb; do
  command -v "$tool" > /dev/null || {
    echo "skip: $tool not found (Debian: cmake, dpkg)"
    exit 77
  }
done
# shellcheck source=tests/cpu/check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" > "$tmp/cpack.log" 2>&1 || {
  cat "$tmp/cpack.log"
  echo "FAIL cpack -G DEB"
  exit 1
}
deb=$(find "$tmp/out" -maxdepth 1 -name 'gpuvs_*.deb' | head -1)
check "cpack made gpuvs_<version>_<arch>.deb" test -n "$deb"
[[ -n $deb ]] || exit 1
root=$tmp/root
dpkg-deb -x "$deb" "$root"
for f in usr/bin/gpuvs usr/share/man/man1/gpuvs.1 usr/share/bash-completion/completions/gpuvs \
  usr/share/zsh/vendor-completions/_gpuvs usr/share/doc/gpuvs/README.md \
  usr/share/doc/gpuvs/docs/models.md usr/share/doc/gpuvs/examples/gpuvs-fleet.sbatch; do
  check "the package holds /$f" test -s "$root/$f"
done
check "the binary is executable" test -x "$root/usr/bin/gpuvs"
check "the Slurm example is executable" test -x "$root/usr/share/doc/gpuvs/examples/gpuvs-fleet.sbatch"
fields=$(dpkg-deb -f "$deb" Package Version Depends)
check "control: Package gpuvs" grep -q '^Package: gpuvs$' <<< "$fields"
check "control: Depends names libfmt" grep -q '^Depends: .*libfmt' <<< "$fields"

"$root/usr/bin/gpuvs" --help > "$tmp/help.out" 2>&1 && help_rc=0 || help_rc=$?
check "the installed gpuvs --help exits 0" test "$help_rc" -eq 0
check "the installed gpuvs --help prints its usage" grep -q '^Usage: gpuvs' "$tmp/help.out"

page=$root/usr/share/man/man1/gpuvs.1
check "the page is gpuvs(1)" grep -q '^\.TH GPUVS 1 ' "$page"
if command -v man > /dev/null; then
  MANWIDTH=100 man -l "$page" > "$tmp/man.out" 2> "$tmp/man.err" && man_rc=0 || man_rc=$?
  check "man -l renders the page" test "$man_rc" -eq 0
  while read -r cmd; do
    check "the page has 'gpuvs $cmd'" grep -q "^ *gpuvs $cmd\$" "$tmp/man.out"
  done < <(sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' "$tmp/help.out")
  check "the page has the global --json" grep -q -- '--json' "$tmp/man.out"
  check "the page has the exit codes" grep -Eq 'Exit +codes: +0 +ok' "$tmp/man.out"
fi
if command -v groff > /dev/null; then
  groff -man -Tutf8 -ww -z "$page" 2> "$tmp/groff.err" || true
  check "groff finds nothing to warn about" test ! -s "$tmp/groff.err"
  [[ -s $tmp/groff.err ]] && head -5 "$tmp/groff.err"
fi

completion=$root/usr/share/bash-completion/completions/gpuvs
check "the bash completion parses" bash -n "$completion"
complete_words() {  # WORD... (the last one is being completed)
  bash -c 'source "$1"; shift; COMP_WORDS=(gpuvs "$@"); COMP_CWORD=$#; _gpuvs;
           printf "%s\n" "${COMPREPLY[@]}"' _ "$completion" "$@"
}
check "bash completes 'gpuvs mo' to model and monitor" \
  test "$(complete_words mo | sort | tr '\n' ' ')" = "model monitor "
check "bash completes 'gpuvs specs s' to show" test "$(complete_words specs s)" = "show"
check "bash completes 'gpuvs --json model --si' to --size" \
  test "$(complete_words --json model --si)" = "--size"
if command -v zsh > /dev/null; then
  check "the zsh completion parses" zsh -n "$root/usr/share/zsh/vendor-completions/_gpuvs"
fi
check "the zsh completion is a #compdef file" \
  grep -q '^#compdef gpuvs$' "$root/usr/share/zsh/vendor-completions/_gpuvs"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
