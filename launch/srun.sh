#!/usr/bin/env bash
# Launch `pipewright run` with Slurm's srun (inside an allocation, or it asks
# for one), one task per pipeline rank, MPI wired by PMIx:
#
#   launch/srun.sh -n 8 [-N 2] -- build/launch/pipewright run --plan plan.json --data text.txt --device cuda
#
# Each task reads SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID
# (executor/comm/launch_env.h); --device cuda uses GPU SLURM_LOCALID % device_count.
# Refuses (exit 2) when -n differs from the plan's pp_size.
# Environment: SRUN (default srun), PW_SRUN_MPI (default pmix; pmi2 on older
# sites), PW_SRUN_ARGS (extra flags, e.g. --gpus-per-task=1).
set -euo pipefail
source "$(dirname "$0")/launch_common.sh"
n="" nodes=""
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    -n|--ntasks) n=$2; shift 2 ;;
    -N|--nodes) nodes=$2; shift 2 ;;
    *) echo "srun.sh: unknown option $1 (usage: srun.sh -n P [-N nodes] -- COMMAND...)" >&2; exit 2 ;;
  esac
done
[[ ${1:-} == -- ]] && shift
[[ -n $n && $# -gt 0 ]] || { echo "usage: srun.sh -n P [-N nodes] -- COMMAND..." >&2; exit 2; }
command -v "${SRUN:-srun}" > /dev/null || { echo "srun.sh: ${SRUN:-srun} not found (not a Slurm machine)" >&2; exit 2; }
check_world_size "srun -n $n" "$n" "$@"
args=(--ntasks "$n" --mpi "${PW_SRUN_MPI:-pmix}" --kill-on-bad-exit=1 --export "ALL,OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
[[ -n $nodes ]] && args+=(--nodes "$nodes")
# shellcheck disable=SC2086
exec "${SRUN:-srun}" "${args[@]}" ${PW_SRUN_ARGS:-} "$@"
