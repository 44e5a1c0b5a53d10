#!/usr/bin/env bash
# Checks for the Debian packages gpuvs needs and installs the missing ones (as root),
# or prints the exact install line (otherwise). Usage: scripts/deps.sh build|test
# Each requirement is probed by what the build actually uses (a header, a command, a
# file), so a machine that has it from elsewhere is not asked to install it again.
# Optional packages (`opts`) are installed along as root and only suggested otherwise:
# they never fail the check.
set -euo pipefail
need="${1:-build}"
# The HTML report's charts: npm installs the pinned Chart.js at configure time; without
# npm the build inlines Debian's libjs-chart.js. The test set needs both, so that the
# browser test draws every report with each library.
chart_js="file:/usr/share/javascript/chart.js/chart.min.js:libjs-chart.js"

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
         "glob:/usr/lib/*/openmpi/include/mpi.h:libopenmpi-dev" "$chart_js"
         "file:/usr/lib/python3/dist-packages/jsonschema/__init__.py:python3-jsonschema")
fi
opts=()
if [ "$need" != test ] && ! command -v npm >/dev/null 2>&1; then
  opts+=("$chart_js")
fi

# Prints the packages of the requirements given that are not met.
unmet() {
  local r kind target pkg
  for r in "$@"; do
    IFS=: read -r kind target pkg <<<"$r"
    case "$kind" in
      cmd) command -v "$target" >/dev/null 2>&1 || echo "$pkg" ;;
      hdr | file) [ -e "$target" ] || echo "$pkg" ;;
      glob) compgen -G "$target" >/dev/null || echo "$pkg" ;;
    esac
  done
}
mapfile -t missing < <(unmet "${reqs[@]}")
mapfile -t optional < <(unmet ${opts[@]+"${opts[@]}"})
[ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  all=(${missing[@]+"${missing[@]}"} ${optional[@]+"${optional[@]}"})
  echo "gpuvs: installing ${all[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${all[@]}" >&2
else
  if [ ${#optional[@]} -gt 0 ]; then
    echo "gpuvs: optional: ${optional[*]} (charts in the HTML report without npm):" >&2
    echo "  sudo apt-get install -y ${optional[*]}" >&2
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "gpuvs: missing packages; install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
