#!/usr/bin/env bash
# Launch `pipewright run` with Open MPI's mpirun, one process per rank of the
# plan's pp_size x dp_size grid (docs/LAUNCH.md).
#
#   launch/mpirun.sh -np 4 [--hostfile hosts] [--iface eth0] -- build/launch/pipewright run --plan plan.json --data text.txt
#
# Single node: -np N only. Multi-node: --hostfile FILE (lines "host slots=N",
# '#' comments); ranks are placed by slot (--map-by slot): the first host's
# slots take global ranks 0, 1, ..., so the data-parallel ranks of one
# pipeline rank (adjacent global ranks, g = pp_rank * dp_size + dp_rank) share
# a host when dp_size divides its slots, and node-local ranks get consecutive
# CUDA devices. Every host needs the same paths (pipewright, plan, data) and
# passwordless ssh from this one.
# --iface IF: the network interface between hosts, for MPI's messages
# (btl_tcp_if_include), its out-of-band wire-up (oob_tcp_if_include) and NCCL
# (NCCL_SOCKET_IFNAME); without it each picks any interface that routes.
# Each rank reads its place from Open MPI's environment (OMPI_COMM_WORLD_RANK,
# OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK; executor/comm/launch_env.h);
# --device cuda uses GPU local_rank % device_count.
# Refuses (exit 2), before starting anything: -np differing from the plan's
# tp_size x pp_size x dp_size, a missing hostfile, one whose slots (when every line
# names them) are fewer than -np, or (tp_size > 1) a host whose slots are not a
# multiple of tp_size. Adds --oversubscribe when -np exceeds this
# machine's cores (single node, CPU runs), the root flag when run as root,
# and exports OMP_NUM_THREADS (default 1) and every NCCL_* and PW_* variable
# set here to every rank on every host (-x; remote ranks see only these).
# Environment: MPIRUN (default mpirun), PW_MPI_ARGS (extra mpirun flags, e.g.
# "--mca plm_rsh_agent ssh -p 2222").
set -euo pipefail
source "$(dirname "$0")/launch_common.sh"
usage="usage: mpirun.sh -np N [--hostfile FILE] [--iface IF] -- COMMAND..."
np="" hostfile="" iface=""
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    -np|-n) np=${2:-}; shift 2 ;;
    --hostfile|--machinefile) hostfile=${2:-}; shift 2 ;;
    --iface) iface=${2:-}; shift 2 ;;
    *) echo "mpirun.sh: unknown option $1 ($usage)" >&2; exit 2 ;;
  esac
done
[[ ${1:-} == -- ]] && shift
[[ -n $np && $# -gt 0 ]] || { echo "$usage" >&2; exit 2; }
[[ $np =~ ^[1-9][0-9]*$ ]] || { echo "mpirun.sh: -np $np: must be a positive integer" >&2; exit 2; }
check_world_size "mpirun -np $np" "$np" "$@"
args=(-np "$np" -x "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}")
if [[ -n $hostfile ]]; then
  [[ -f $hostfile ]] || { echo "mpirun.sh: --hostfile $hostfile: no such file" >&2; exit 2; }
  # Slots named on every host line: their sum must cover -np (a line without
  # slots= gets the host's core count from Open MPI, unknown here).
  slots=$(awk '{sub(/#.*/, "")} NF == 0 {next} {n = 0; for (i = 2; i <= NF; i++) if ($i ~ /^slots=[0-9]+$/) n = substr($i, 7) + 0;
               if (n == 0) {unknown = 1} total += n} END {print (unknown ? "" : total + 0)}' "$hostfile")
  if [[ -n $slots ]] && (( np > slots )); then
    echo "mpirun.sh: -np $np but --hostfile $hostfile has $slots slots: add hosts or slots" >&2
    exit 2
  fi
  # Tensor parallelism: --map-by slot fills each host in rank order, so a
  # host whose slots are not a multiple of tp_size would split a TP group
  # (T consecutive ranks) across two hosts.
  tp=$(plan_tp_size "$@")
  if [[ -n $tp ]] && (( tp > 1 )); then
    bad=$(awk -v t="$tp" '{sub(/#.*/, "")} NF == 0 {next} {for (i = 2; i <= NF; i++) if ($i ~ /^slots=[0-9]+$/ && (substr($i, 7) % t) != 0) print $1}' "$hostfile" | head -1)
    if [[ -n $bad ]]; then
      echo "mpirun.sh: --hostfile $hostfile: host $bad has slots not a multiple of the plan's tp_size $tp: a tensor-parallel group ($tp consecutive ranks) must stay on one host" >&2
      exit 2
    fi
  fi
  args+=(--hostfile "$hostfile" --map-by slot)
elif (( np > $(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) )); then
  args+=(--oversubscribe -x OMPI_MCA_mpi_yield_when_idle=1)
fi
if [[ -n $iface ]]; then
  [[ $iface =~ ^[A-Za-z0-9_.:,/-]+$ ]] || { echo "mpirun.sh: --iface '$iface': not an interface name or subnet" >&2; exit 2; }
  args+=(--mca btl_tcp_if_include "$iface" --mca oob_tcp_if_include "$iface" -x "NCCL_SOCKET_IFNAME=$iface")
fi
for var in $(compgen -e | grep -E '^(NCCL_|PW_)' | grep -vx 'PW_MPI_ARGS' || true); do
  [[ -n $iface && $var == NCCL_SOCKET_IFNAME ]] || args+=(-x "$var")
done
[[ $(id -u) -eq 0 ]] && args+=(--allow-run-as-root)
# shellcheck disable=SC2086
exec "${MPIRUN:-mpirun}" "${args[@]}" ${PW_MPI_ARGS:-} "$@"
