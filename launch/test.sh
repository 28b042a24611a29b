#!/usr/bin/env bash
# Runs every pipewright test on a fresh Debian machine: installs what is
# missing, builds (launch/setup.sh), then runs CTest (unit, mpi, browser),
# then the sanitizer job (launch/sanitize.sh; PW_SANITIZE=0 skips it).
#   launch/test.sh [BUILD_DIR]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$repo/build}"
"$repo/launch/setup.sh" "$build_dir"
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$build_dir"
# Unit tests in parallel; MPI tests one at a time (each already uses every core).
# (nproc counts OMP_NUM_THREADS, exported above, as the cores: not here.)
ctest --output-on-failure -j "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)" -LE mpi
if ctest -N -L mpi | grep -q "Total Tests: [1-9]"; then
  ctest --output-on-failure -L mpi
fi
# Then the sanitizer job (launch/sanitize.sh): the torch-free tests under
# ASan + UBSan (clang-14), every fuzz target over its seed corpus and 30 s of
# mutations, and the executor's unit tests under gcc ASan. PW_SANITIZE=0
# skips it (its two cold builds take ~9 min on 2 cores; rebuilds are fast).
if [[ ${PW_SANITIZE:-1} != 0 ]]; then
  "$repo/launch/sanitize.sh" "${build_dir}-sanitize"
fi
