#!/usr/bin/env bash
# Sets up a fresh Debian machine for pipewright and builds it.
#   launch/setup.sh [--deps-only] [--planner-only] [BUILD_DIR]
# Installs the Debian packages (only those missing), configures with CMake
# (Ninja, Release, ccache) and builds everything into BUILD_DIR (default
# ./build). Re-running is cheap: nothing is reinstalled or rebuilt needlessly.
set -euo pipefail

deps_only=0
planner_only=0
build_dir=""
for arg in "$@"; do
  case "$arg" in
    --deps-only) deps_only=1 ;;
    --planner-only) planner_only=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) build_dir="$arg" ;;
  esac
done
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${build_dir:-$repo/build}"

packages=(build-essential cmake ninja-build ccache pkg-config
          nlohmann-json3-dev libcli11-dev libyaml-cpp-dev libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev
          zlib1g-dev chromium clang-14 libclang-rt-14-dev coinor-libcbc-dev)
if [[ $planner_only == 0 ]]; then
  # OpenBLAS replaces the reference BLAS that Debian's LibTorch links by default (several times faster GEMMs).
  packages+=(libtorch-dev libopenmpi-dev openmpi-bin fortunes libopenblas0-pthread libsentencepiece-dev sentencepiece libpcre2-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) != 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[[ $deps_only == 1 ]] && exit 0

cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
[[ $planner_only == 1 ]] && cmake_args+=(-DPW_PLANNER_ONLY=ON)
cmake -S "$repo" -B "$build_dir" "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
echo "setup: built into $build_dir"
