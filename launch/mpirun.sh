#!/usr/bin/env bash
# Launch `pipewright run` with Open MPI's mpirun, one process per pipeline rank.
#
#   launch/mpirun.sh -np 4 [--hostfile hosts] -- build/launch/pipewright run --plan plan.json --data text.txt
#
# Single node: -np P only. Multi-node: --hostfile FILE (lines "host slots=N"),
# ranks are placed by slot, so node-local ranks get consecutive CUDA devices.
# Each rank reads its place from Open MPI's environment (OMPI_COMM_WORLD_RANK,
# OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK; executor/launch_env.h);
# --device cuda uses GPU local_rank % device_count.
# Refuses (exit 2) when -np differs from the plan's pp_size. Adds
# --oversubscribe when -np exceeds this machine's cores (CPU runs), the two
# root flags when run as root, and exports OMP_NUM_THREADS (default 1).
# Environment: MPIRUN (default mpirun), PW_MPI_ARGS (extra mpirun flags).
set -euo pipefail
source "$(dirname "$0")/launch_common.sh"
np="" hostfile=""
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    -np|-n) np=$2; shift 2 ;;
    --hostfile|--machinefile) hostfile=$2; shift 2 ;;
    *) echo "mpirun.sh: unknown option $1 (usage: mpirun.sh -np P [--hostfile F] -- COMMAND...)" >&2; exit 2 ;;
  esac
done
[[ ${1:-} == -- ]] && shift
[[ -n $np && $# -gt 0 ]] || { echo "usage: mpirun.sh -np P [--hostfile F] -- COMMAND..." >&2; exit 2; }
check_world_size "mpirun -np $np" "$np" "$@"
args=(-np "$np" -x "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
if [[ -n $hostfile ]]; then
  args+=(--hostfile "$hostfile" --map-by slot)
elif (( np > $(nproc) )); then
  args+=(--oversubscribe -x OMPI_MCA_mpi_yield_when_idle=1)
fi
[[ $(id -u) -eq 0 ]] && args+=(--allow-run-as-root)
# shellcheck disable=SC2086
exec "${MPIRUN:-mpirun}" "${args[@]}" ${PW_MPI_ARGS:-} "$@"
