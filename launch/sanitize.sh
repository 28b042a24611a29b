#!/usr/bin/env bash
# The sanitizer job (run by launch/test.sh):
#  1. the torch-free part built with clang-14 under AddressSanitizer +
#     UndefinedBehaviorSanitizer, with the libFuzzer targets of tests/fuzz,
#     into BUILD_DIR (default build-sanitize): its unit tests, then each fuzz
#     target over its seed corpus and a short fixed number of mutations
#     (CTest label fuzz);
#  2. the executor's unit tests (interpreter, communicators, data, launch
#     environment, host memory: the executor_unit_test binary) built with gcc
#     under the same sanitizers into BUILD_DIR-executor, run with leak
#     detection off (Open MPI's and LibTorch's start-up allocations live for
#     the whole process and are reported as leaks).
# Any sanitizer report fails the test that made it. Each part prints the
# seconds its build and its tests took.
#   launch/sanitize.sh [BUILD_DIR]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$repo/build-sanitize}"
# The cores (nproc alone reports OMP_NUM_THREADS, which launch/test.sh sets to 1).
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
mark=$SECONDS
lap() { echo "sanitize: $1 took $((SECONDS - mark)) s"; mark=$SECONDS; }
# -O1: the sanitizers' usual level (fast to compile, full stack traces).
cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DPW_PLANNER_ONLY=ON -DPW_FUZZ=ON \
  -DPW_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" >/dev/null
cmake --build "$build_dir" -j "$cores"
lap "part 1 build (clang-14, torch-free tests and fuzz targets)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$build_dir"
# Not here, only in the normal build: the package test (it builds an
# uninstrumented consumer against these instrumented libraries) and cli.plan
# (the planner's searches through the CLI: 7 min under ASan on 2 cores; the
# same search code runs here in the Planner unit tests). Each fuzz target
# mutates for PW_FUZZ_CI_SECONDS (30 s) after its seeds.
ctest --output-on-failure -j "$cores" -L "unit|fuzz" -E "^(package\.consumer|cli\.plan)$"
lap "part 1 tests"

# 2. The executor unit tests under gcc ASan + UBSan (torch-free: only their
# own libraries are compiled; configuring still finds LibTorch and MPI).
exec_dir="${build_dir}-executor"
# -O0: these tests take seconds, and it compiles faster than -O1.
cmake -S "$repo" -B "$exec_dir" -G Ninja -DPW_SANITIZE=ON -DPW_BUILD_BENCH=OFF -DPW_WITH_NCCL=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0" >/dev/null
cmake --build "$exec_dir" -j "$cores" --target executor_unit_test
lap "part 2 build (gcc, executor unit tests)"
# The binary runs every test of its sources (from the repository root, as
# CTest runs them).
cd "$repo"
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1" OMP_NUM_THREADS=1 \
  "$exec_dir/tests/executor_unit_test"
lap "part 2 tests"
