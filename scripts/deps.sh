#!/usr/bin/env bash
# Checks for the Debian packages gpuvs needs and installs the missing ones (as root),
# or prints the exact install line (otherwise). Usage: scripts/deps.sh build|test
# Each requirement is probed by what the build actually uses (a header, a command),
# so a machine that has it from elsewhere is not asked to install it again.
set -euo pipefail
need="${1:-build}"

# probe-kind:probe-target:package
reqs=(
  "cmd:cmake:cmake"
  "cmd:ninja:ninja-build"
  "cmd:g++:g++"
  "hdr:/usr/include/CLI/CLI.hpp:libcli11-dev"
  "hdr:/usr/include/nlohmann/json.hpp:nlohmann-json3-dev"
  "hdr:/usr/include/fmt/format.h:libfmt-dev"
  "hdr:/usr/include/gtest/gtest.h:libgtest-dev"
  "hdr:/usr/include/toml++/toml.h:libtomlplusplus-dev"
)
if [ "$need" = test ]; then
  reqs+=("cmd:clang++:clang" "cmd:clang-format:clang-format"
         "glob:/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a:libclang-rt-dev"
         "cmd:chromium:chromium" "cmd:node:nodejs" "cmd:npm:npm"
         "glob:/usr/lib/*/openmpi/include/mpi.h:libopenmpi-dev")
fi

missing=()
for r in "${reqs[@]}"; do
  IFS=: read -r kind target pkg <<<"$r"
  case "$kind" in
    cmd) command -v "$target" >/dev/null 2>&1 || missing+=("$pkg") ;;
    hdr) [ -e "$target" ] || missing+=("$pkg") ;;
    glob) compgen -G "$target" >/dev/null || missing+=("$pkg") ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "gpuvs: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
  echo "gpuvs: missing packages; install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
