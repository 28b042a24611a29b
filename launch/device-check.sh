#!/usr/bin/env bash
# GPU checks for a session lent a GPU machine (one H200, CUDA 13, NCCL; its
# Python's torch ships a CUDA LibTorch; no internet). Builds pipewright
# against that LibTorch with what is installed, then:
#   1. NCCL self-send smoke test (tests/executor/nccl_test.cc: a grouped
#      send + receive to itself on the comm stream, checked byte for byte);
#   2. a single-rank run on CUDA checked against the same run on CPU (float64,
#      losses of every step must agree to 1e-6);
#   3. a 2-rank run (mpirun, both ranks on the one GPU: CUDA compute,
#      MPI-staged messages; NCCL refuses two ranks on one GPU), the demo
#      model, with and without --trace: step time and tokens/s;
#   4. with >= 2 GPUs only: the same over NCCL (--comm nccl).
# Whatever is missing (MPI, GTest, NCCL, a GPU) is skipped with a message.
# Budget: < 5 min on 16 cores (the build is most of it).
#
# Usage: launch/device-check.sh [build-dir]   (default /tmp/pw-device-build)
# Exit: 0 when every check that could run passed, 1 otherwise.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-/tmp/pw-device-build}
work=$(mktemp -d /tmp/pw-device-check-XXXXXX)
jobs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
failures=0
say() { printf '\n== %s\n' "$*"; }
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
start=$(date +%s)

say "environment"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null || echo "nvidia-smi: not available"
# The capacity the GPU reports beside the shipped device file's (the planner
# plans capacity - runtime_reserve, models/devices/*.json).
reported_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2> /dev/null | head -1 | tr -d ' ')
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
case "$gpu_name" in
  *H200*) device_file=models/devices/h200-141gb.json ;;
  *H100*) device_file=models/devices/h100-80gb.json ;;
  *A100*80GB*) device_file=models/devices/a100-80gb.json ;;
  *A100*) device_file=models/devices/a100-40gb.json ;;
  *) device_file="" ;;
esac
if [[ -n $reported_mib && -n $device_file ]]; then
  python3 - "$reported_mib" "$device_file" << 'PY'
import json, sys
reported = int(sys.argv[1]) * 2**20
d = json.load(open(sys.argv[2]))
r = d.get("runtime_reserve", {})
reserve = r.get("cuda_context_bytes", 0) + r.get("nccl_buffers_bytes", 0) + int(r.get("fragmentation_fraction", 0) * d["memory_bytes"])
print(f"memory: the GPU reports {reported} bytes ({reported / 2**30:.2f} GiB); {sys.argv[2]} says {d['memory_bytes']} "
      f"({d['memory_bytes'] / 2**30:.2f} GiB, {'same' if reported == d['memory_bytes'] else 'DIFFERENT'}); plans use "
      f"capacity - reserve = {(d['memory_bytes'] - reserve) / 2**30:.2f} GiB")
PY
fi
command -v nvcc > /dev/null && nvcc --version | tail -1
# PW_TORCH_PREFIX / PW_TORCH_VERSION / PW_TORCH_ABI override the Python probe
# (e.g. to dry-run this script against Debian's CPU LibTorch: /usr, 1.13.0, 1).
torch_prefix=${PW_TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2> /dev/null)}
if [[ -z $torch_prefix ]]; then
  echo "SKIP everything: python3 cannot import torch (no LibTorch to build against)"; exit 1
fi
if [[ -n ${PW_TORCH_VERSION:-} ]]; then
  torch_version=$PW_TORCH_VERSION torch_cuda=none torch_abi=${PW_TORCH_ABI:-1}
else
  read -r torch_version torch_cuda torch_abi < <(python3 -c \
    'import torch; print(torch.__version__, torch.version.cuda, int(torch._C._GLIBCXX_USE_CXX11_ABI))')
fi
echo "torch $torch_version (CUDA $torch_cuda, CXX11 ABI $torch_abi) at $torch_prefix"
mpirun=$(command -v mpirun || true)
[[ -n $mpirun ]] && echo "mpirun: $($mpirun --version 2>&1 | head -1)" || echo "mpirun: not found (multi-rank run skipped)"

say "build ($jobs jobs)"
cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$torch_prefix" -DPW_WITH_NCCL=AUTO -DPW_BUILD_BENCH=OFF)
command -v ninja > /dev/null && cmake_args+=(-G Ninja)
[[ -d /usr/local/cuda ]] && cmake_args+=(-DCUDAToolkit_ROOT=/usr/local/cuda -DCUDA_TOOLKIT_ROOT_DIR=/usr/local/cuda)
# Name the GPU architecture: without it Caffe2's CMake compiles a probe with
# CMAKE_CUDA_STANDARD=CMAKE_CXX_STANDARD, and CMake 3.25 + nvcc refuse CUDA20
# ("requires the language dialect CUDA20"): found building against the
# torch 2.15 / CUDA 13 wheel on a GPU-less machine.
cuda_arch=${TORCH_CUDA_ARCH_LIST:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -1)}
cmake_args+=("-DTORCH_CUDA_ARCH_LIST=${cuda_arch:-9.0}")
if [[ $torch_abi == 0 ]]; then
  # Old wheels: everything must use the pre-C++11 ABI; system GTest would not link.
  cmake_args+=("-DCMAKE_CXX_FLAGS=-D_GLIBCXX_USE_CXX11_ABI=0" -DPW_BUILD_TESTS=OFF)
  echo "note: this LibTorch uses the pre-C++11 ABI: tests (and the NCCL smoke test) are not built"
fi
major=${torch_version%%.*} rest=${torch_version#*.} minor=${rest%%.*}
if (( major > 2 || (major == 2 && minor >= 10) )); then cmake_args+=(-DCMAKE_CXX_STANDARD=20); fi
cmake -U 'PW_NCCL_*' -S "$repo" -B "$build" "${cmake_args[@]}" > "$work/cmake.log" 2>&1 \
  || { tail -30 "$work/cmake.log"; echo "FAIL: cmake (log above)"; exit 1; }
grep -E "NCCL communicator|Torch|CUDA" "$work/cmake.log" | head -5
targets=(pipewright pipewright-exec)
grep -q "NCCL communicator enabled" "$work/cmake.log" && [[ $torch_abi != 0 ]] && targets+=(nccl_test)
timeout 240 cmake --build "$build" -j "$jobs" --target "${targets[@]}" > "$work/build.log" 2>&1 \
  || { grep -E "error|Error" "$work/build.log" | head -30; echo "FAIL: build (log: $work/build.log)"; exit 1; }
echo "built ${targets[*]} in $(( $(date +%s) - start )) s"
pw=$build/launch/pipewright

say "1. NCCL self-send smoke test"
if [[ -x $build/tests/nccl_test ]]; then
  timeout 60 "$build/tests/nccl_test" 2>&1 | tail -8 || bad "nccl_test"
else
  echo "SKIP: nccl_test not built (no NCCL found, or pre-C++11-ABI LibTorch)"
fi

# Text and models.
for i in $(seq 1 3000); do echo "It was the best of times, it was the worst of times, line $i."; done > "$work/text.txt"
untied='"vocab_size": 256, "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0'
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 64, "n_head": 4, "n_positions": 32, %s}\n' "$untied" > "$work/small.json"
printf '{"model_type": "gpt2", "n_layer": 8, "n_embd": 128, "n_head": 4, "n_positions": 64, %s}\n' "$untied" > "$work/demo.json"
plan() { "$pw" plan --device cpu-core --recompute-granularity none --no-min-pp "$@"; }

say "2. single rank: CUDA against CPU (float64, 4 steps)"
plan --schedule gpipe --pp 1 --num-microbatches 2 --model-config "$work/small.json" --seq-length 32 \
  --micro-batch-size 2 --dtype fp64 -o "$work/p1.json" > /dev/null || bad "pipewright plan --pp 1"
for dev in cpu cuda; do
  timeout 120 "$pw" run --plan "$work/p1.json" --data "$work/text.txt" --steps 4 --dtype float64 --seed 3 \
    --device $dev > "$work/single_$dev.txt" 2>&1 \
    || { grep -E "pipewright|rror" "$work/single_$dev.txt" | head -5; bad "single-rank --device $dev"; }
done
python3 - "$work/single_cpu.txt" "$work/single_cuda.txt" << 'PY' || bad "CUDA losses differ from CPU"
import re, sys
def losses(f): return [float(x) for x in re.findall(r"^step \d+/\d+ \| loss ([0-9.]+)", open(f).read(), re.M)]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
print("cpu  losses", a); print("cuda losses", b)
assert a and len(a) == len(b), "missing steps"
worst = max(abs(x - y) for x, y in zip(a, b))
print(f"max |cpu - cuda| loss difference: {worst:.2e} ({'OK' if worst <= 1e-6 else 'NOT OK'})")
assert worst <= 1e-6
PY

say "3. two ranks on the GPU, MPI-staged messages (demo model, zb-h1, m=8)"
if [[ -n $mpirun ]]; then
  plan --schedule zb-h1 --pp 2 --num-microbatches 8 --model-config "$work/demo.json" --seq-length 64 \
    --micro-batch-size 4 --dtype fp32 -o "$work/p2.json" > /dev/null || bad "pipewright plan --pp 2"
  mpi=("$mpirun" --oversubscribe -np 2 -x OMP_NUM_THREADS=4)
  [[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
  for mode in plain trace; do
    extra=()
    [[ $mode == trace ]] && extra=(--trace "$work/trace.json")
    timeout 150 "${mpi[@]}" "$pw" run --plan "$work/p2.json" --data "$work/text.txt" --steps 20 --device cuda \
      --log-every 5 --checkpoint-dir "$work/ckpt_$mode" --checkpoint-every 20 "${extra[@]}" \
      > "$work/multi_$mode.txt" 2>&1 \
      || { grep -E "pipewright|rror" "$work/multi_$mode.txt" | head -8; bad "2-rank --device cuda ($mode)"; }
    grep -E "^(step|done|checkpoint|trace)" "$work/multi_$mode.txt" | sed "s/^/[$mode] /"
  done
  [[ -f $work/trace.json ]] && "$pw" show "$work/trace.json" --plan "$work/p2.json" --format ascii --width 120 | tail -12
else
  echo "SKIP: no mpirun"
fi

say "4. two ranks over NCCL (--comm nccl, one GPU per rank)"
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
if [[ -n $mpirun && ${gpus:-0} -ge 2 ]] && grep -q "NCCL communicator enabled" "$work/cmake.log"; then
  timeout 120 "${mpi[@]}" "$pw" run --plan "$work/p2.json" --data "$work/text.txt" --steps 20 --device cuda \
    --comm nccl --log-every 5 > "$work/multi_nccl.txt" 2>&1 \
    || { grep -E "pipewright|rror" "$work/multi_nccl.txt" | head -8; bad "2-rank --comm nccl"; }
  grep -E "^(step|done)" "$work/multi_nccl.txt" | sed "s/^/[nccl] /"
else
  echo "SKIP: needs mpirun, NCCL and >= 2 GPUs (found ${gpus:-0}); NCCL refuses two ranks on one GPU"
fi

say "summary ($(( $(date +%s) - start )) s)"
grep -h "^done:" "$work"/multi_*.txt "$work"/single_*.txt 2> /dev/null
echo "logs in $work"
if (( failures > 0 )); then echo "$failures check(s) FAILED"; exit 1; fi
echo "all checks that could run passed"
