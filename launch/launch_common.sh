# Shared by launch/mpirun.sh and launch/srun.sh (sourced, not run).
# plan_arg ARGS...: prints the value of --plan PATH / --plan=PATH (or nothing).
plan_arg() {
  local plan=""
  while [[ $# -gt 0 ]]; do
    case $1 in
      --plan) plan=${2:-}; shift ;;
      --plan=*) plan=${1#--plan=} ;;
    esac
    shift
  done
  printf '%s' "$plan"
}
# plan_pp_size ARGS...: prints the number of ranks of the plan named by --plan
# in the pipewright arguments (tp_size x pp_size x dp_size), or nothing if there is none.
plan_pp_size() {
  local plan
  plan=$(plan_arg "$@")
  [[ -n $plan ]] || return 0
  [[ -f $plan ]] || { echo "$(basename "$0"): --plan $plan: no such file" >&2; exit 2; }
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["pp_size"] * p.get("dp_size", 1) * p.get("tp_size", 1))' "$plan" \
    2> /dev/null || sed -n 's/.*"pp_size": *\([0-9]*\).*/\1/p' "$plan" | head -1
}
# plan_tp_size ARGS...: the plan's tp_size (1 for plans before version 3),
# or nothing if there is no plan or it does not read.
plan_tp_size() {
  local plan
  plan=$(plan_arg "$@")
  [[ -n $plan && -f $plan ]] || return 0
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("tp_size", 1))' "$plan" 2> /dev/null || true
}
# plan_grid ARGS...: "pp_size=P", "pp_size=P x dp_size=D" or, with tensor
# parallelism, "tp_size=T x pp_size=P x dp_size=D" of that plan.
plan_grid() {
  local plan
  plan=$(plan_arg "$@")
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); d=p.get("dp_size", 1); t=p.get("tp_size", 1)
print(("tp_size=%d x " % t if t > 1 else "") + "pp_size=%d" % p["pp_size"] + (" x dp_size=%d" % d if d > 1 or t > 1 else ""))' "$plan" 2> /dev/null || echo "pp_size=?"
}
# check_world_size LAUNCHER N ARGS...: refuses a launch whose rank count
# differs from the plan's tp_size x pp_size x dp_size, before any rank starts.
check_world_size() {
  local launcher=$1 n=$2; shift 2
  local pp
  pp=$(plan_pp_size "$@")
  if [[ -n $pp && $pp != "$n" ]]; then
    echo "$(basename "$0"): $launcher would start $n ranks but the plan has $(plan_grid "$@") (one rank per pipeline rank of each replica): use $pp" >&2
    exit 2
  fi
}
