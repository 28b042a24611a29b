# Shared by launch/mpirun.sh and launch/srun.sh (sourced, not run).
# plan_pp_size ARGS...: prints the pp_size of the plan named by --plan in the
# pipewright arguments, or nothing if there is none.
plan_pp_size() {
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
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pp_size"])' "$plan" 2> /dev/null \
    || sed -n 's/.*"pp_size": *\([0-9]*\).*/\1/p' "$plan" | head -1
}
# check_world_size LAUNCHER N ARGS...: refuses a launch whose rank count
# differs from the plan's pp_size, before any rank starts.
check_world_size() {
  local launcher=$1 n=$2; shift 2
  local pp
  pp=$(plan_pp_size "$@")
  if [[ -n $pp && $pp != "$n" ]]; then
    echo "$(basename "$0"): $launcher would start $n ranks but the plan has pp_size=$pp (one rank per pipeline rank): use $pp" >&2
    exit 2
  fi
}
