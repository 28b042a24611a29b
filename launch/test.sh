#!/usr/bin/env bash
# Runs every pipewright test on a fresh Debian machine: installs what is
# missing, builds (launch/setup.sh), then runs CTest (unit, mpi, browser),
# then the sanitizer job (launch/sanitize.sh).
#   launch/test.sh [BUILD_DIR]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$repo/build}"
"$repo/launch/setup.sh" "$build_dir"
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$build_dir"
# Unit tests in parallel; MPI tests one at a time (each already uses every core).
ctest --output-on-failure -j "$(nproc)" -LE mpi
if ctest -N -L mpi | grep -q "Total Tests: [1-9]"; then
  ctest --output-on-failure -L mpi
fi
# PW_SANITIZE=1: also the torch-free tests under ASan + UBSan (clang-14) and
# every fuzz target over its seed corpus (launch/sanitize.sh). Opt-in: its
# cold build alone takes ~20 min on 2 cores, which would take CI past its
# 40-minute budget.
if [[ ${PW_SANITIZE:-0} == 1 ]]; then
  "$repo/launch/sanitize.sh" "${build_dir}-sanitize"
fi
