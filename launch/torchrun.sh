#!/usr/bin/env bash
# Launch `pipewright run` with PyTorch's torchrun (no MPI involved):
#
#   launch/torchrun.sh --nproc-per-node 4 [--nnodes 2 --node-rank 0 --master-addr host0 --master-port 29500] \
#       -- build/launch/pipewright run --plan plan.json --data text.txt
#
# torchrun --no-python starts the binary once per rank with RANK, WORLD_SIZE,
# LOCAL_RANK, MASTER_ADDR and MASTER_PORT set; `pipewright run` sees those
# (executor/comm/launch_env.h), skips MPI and connects the ranks with its TCP
# communicator (executor/comm/tcp_communicator.h): rendezvous on
# MASTER_ADDR:MASTER_PORT, then one socket per pair of ranks. CPU messages.
# Refuses (exit 2) when nnodes * nproc-per-node differs from the plan's pp_size.
# Without torchrun installed, PW_TORCHRUN_EMULATE=1 starts the processes
# itself with the same environment (single node; what the tests do).
set -euo pipefail
source "$(dirname "$0")/launch_common.sh"
nproc_per_node="" nnodes=1 node_rank=0 master_addr=127.0.0.1 master_port=29500
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --nproc-per-node|--nproc_per_node) nproc_per_node=$2; shift 2 ;;
    --nnodes) nnodes=$2; shift 2 ;;
    --node-rank|--node_rank) node_rank=$2; shift 2 ;;
    --master-addr|--master_addr) master_addr=$2; shift 2 ;;
    --master-port|--master_port) master_port=$2; shift 2 ;;
    *) echo "torchrun.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ ${1:-} == -- ]] && shift
[[ -n $nproc_per_node && $# -gt 0 ]] || { echo "usage: torchrun.sh --nproc-per-node N [...] -- COMMAND..." >&2; exit 2; }
world=$((nnodes * nproc_per_node))
check_world_size "torchrun (nnodes $nnodes x nproc-per-node $nproc_per_node)" "$world" "$@"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
if [[ ${PW_TORCHRUN_EMULATE:-0} != 1 ]]; then
  command -v torchrun > /dev/null || { echo "torchrun.sh: torchrun not found (pip install torch, or PW_TORCHRUN_EMULATE=1)" >&2; exit 2; }
  exec torchrun --no-python --nnodes "$nnodes" --node-rank "$node_rank" --nproc-per-node "$nproc_per_node" \
    --master-addr "$master_addr" --master-port "$master_port" "$@"
fi
# Emulation: exactly the variables torchrun sets for its workers.
pids=()
for ((local = 0; local < nproc_per_node; local++)); do
  RANK=$((node_rank * nproc_per_node + local)) LOCAL_RANK=$local WORLD_SIZE=$world \
    LOCAL_WORLD_SIZE=$nproc_per_node GROUP_RANK=$node_rank MASTER_ADDR=$master_addr MASTER_PORT=$master_port \
    "$@" &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
exit $rc
