#!/usr/bin/env bash
# Compile-and-link check against LibTorch 2.x with CUDA, on a machine without
# a GPU (this project's CI machines have the CUDA toolkit and NCCL but only
# Debian's LibTorch 1.13 CPU). Fetches PyTorch's CUDA wheel and the NVIDIA
# runtime wheels it links against with `pip download` (network needed, ~4 GB),
# unpacks them, and builds every target (executor, NCCL communicator, tests)
# against that LibTorch with C++20. Nothing is run: there is no GPU.
#
# Usage: launch/torch2-build-check.sh [cache-dir] [build-dir]
#   cache-dir  default /tmp/pw-torch2 (wheels and their unpacked tree, reused)
#   build-dir  default /tmp/pw-torch2-build
# Environment: PW_TORCH_SPEC (pip requirement, default "torch"),
#   PW_JOBS (parallel compile jobs, default nproc).
# Exit: 0 when everything compiled and linked.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-/tmp/pw-torch2}
build=${2:-/tmp/pw-torch2-build}
spec=${PW_TORCH_SPEC:-torch}
jobs=${PW_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}
mkdir -p "$cache/wheels" "$cache/tree"
if ! ls "$cache"/wheels/torch-*.whl > /dev/null 2>&1; then
  echo "== pip download $spec and its dependencies (the NVIDIA runtime wheels) into $cache/wheels"
  python3 -m pip download -d "$cache/wheels" "$spec"
fi
if [[ ! -d $cache/tree/torch/share/cmake/Torch ]]; then
  echo "== unpacking wheels into $cache/tree"
  for w in "$cache"/wheels/torch-*.whl "$cache"/wheels/nvidia_*.whl; do python3 -m zipfile -e "$w" "$cache/tree"; done
fi
torch_version=$(sed -n 's/^Version: //p' "$cache"/tree/torch-*.dist-info/METADATA | head -1)
echo "torch $torch_version from $(ls "$cache"/wheels/torch-*.whl)"
# Directories holding the NVIDIA shared libraries, for the linker only.
rpath_link=$(find "$cache/tree/nvidia" -name 'lib*.so*' -printf '%h\n' 2> /dev/null | sort -u | tr '\n' ':')
rpath_link+="$cache/tree/torch/lib"
cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$cache/tree/torch/share/cmake" -DPW_WITH_NCCL=AUTO
            -DPW_BUILD_BENCH=ON -DCMAKE_CXX_STANDARD=20 -DTORCH_CUDA_ARCH_LIST=9.0
            "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$rpath_link")
command -v ninja > /dev/null && cmake_args+=(-G Ninja)
command -v ccache > /dev/null && cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
[[ -d /usr/local/cuda ]] && cmake_args+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
echo "== configure $build"
cmake -U 'PW_NCCL_*' -S "$repo" -B "$build" "${cmake_args[@]}" > "$build.cmake.log" 2>&1 \
  || { tail -30 "$build.cmake.log"; echo "FAIL: cmake (log: $build.cmake.log)"; exit 1; }
grep -E "NCCL communicator|CUDA NVCC flags" "$build.cmake.log" || true
echo "== build ($jobs jobs)"
start=$(date +%s)
if ! cmake --build "$build" -j "$jobs" > "$build.build.log" 2>&1; then
  grep -E "error|undefined reference" "$build.build.log" | head -30
  echo "FAIL: build (log: $build.build.log)"
  exit 1
fi
echo "OK: every target compiled and linked against LibTorch $torch_version (CUDA) in $(( $(date +%s) - start )) s"
