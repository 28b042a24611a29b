# Shared by launch/mpirun.sh, launch/srun.sh and launch/torchrun.sh (sourced, not run).
# plan_grid ARGS...: prints "PP DP" (pp_size, dp_size; dp_size 1 when the
# plan has none) of the plan named by --plan in the pipewright arguments, or
# nothing if there is none.
plan_grid() {
  local plan=""
  while [[ $# -gt 0 ]]; do
    case $1 in
      --plan) plan=${2:-}; shift ;;
      --plan=*) plan=${1#--plan=} ;;
    esac
    shift
  done
  [[ -n $plan ]] || return 0
  [[ -f $plan ]] || { echo "$(basename "$0"): --plan $plan: no such file" >&2; exit 2; }
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["pp_size"], p.get("dp_size", 1))' "$plan" \
      2> /dev/null \
    || { local pp dp
         pp=$(sed -n 's/.*"pp_size": *\([0-9]*\).*/\1/p' "$plan" | head -1)
         dp=$(sed -n 's/.*"dp_size": *\([0-9]*\).*/\1/p' "$plan" | head -1)
         [[ -n $pp ]] && echo "$pp ${dp:-1}"; }
}
# check_world_size LAUNCHER N ARGS...: refuses a launch whose rank count
# differs from the plan's pp_size x dp_size, before any rank starts.
check_world_size() {
  local launcher=$1 n=$2; shift 2
  local grid pp dp
  grid=$(plan_grid "$@")
  [[ -n $grid ]] || return 0
  read -r pp dp <<< "$grid"
  if [[ $((pp * dp)) != "$n" ]]; then
    echo "$(basename "$0"): $launcher would start $n ranks but the plan has pp_size=$pp x dp_size=$dp = $((pp * dp)) ranks (global rank = pp_rank * dp_size + dp_rank): use $((pp * dp))" >&2
    exit 2
  fi
}
