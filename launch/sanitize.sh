#!/usr/bin/env bash
# The sanitizer job (run by launch/test.sh): builds the torch-free part with
# clang-14 under AddressSanitizer + UndefinedBehaviorSanitizer, with the
# libFuzzer targets of tests/fuzz, into BUILD_DIR (default build-sanitize),
# then runs its unit tests and each fuzz target over its seed corpus and a
# short fixed number of mutations (CTest label fuzz). Any sanitizer report
# fails the test that made it.
#   launch/sanitize.sh [BUILD_DIR]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$repo/build-sanitize}"
# -O1: the sanitizers' usual level (fast to compile, full stack traces).
cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DPW_PLANNER_ONLY=ON -DPW_FUZZ=ON \
  -DPW_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$build_dir"
# The package test builds an uninstrumented consumer against these
# instrumented libraries (it runs in the normal build); the browser test
# renders pages in Chromium (the normal build runs it).
ctest --output-on-failure -j "$(nproc)" -L "unit|fuzz" -E "^package\.consumer$"
