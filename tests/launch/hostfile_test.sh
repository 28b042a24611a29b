#!/usr/bin/env bash
# launch/mpirun.sh --hostfile: a job across two "hosts" trains the same bits
# as on one.
#
# The two hosts are this machine twice: "localhost slots=1" and
# "127.0.0.2 slots=1". (Open MPI refuses one host listed twice with slots, and
# reads 127.0.0.1 as this host; 127.0.0.2 is on the loopback too but is no
# interface address, so Open MPI takes it for a second node.) Reaching it goes
# the way a real second host does: mpirun starts an Open MPI daemon (orted)
# "there" through its rsh agent -- here a script that runs the command on this
# machine instead of ssh, and logs the host it was asked for --, the daemon
# wires up over TCP, and the ranks on the two nodes talk over the TCP
# transport on the interface given by --iface (lo), not shared memory (with
# shared memory alone they cannot reach each other: checked).
#  1. pp 2: the hostfile run's loss lines and parameter digest (bit-exact, all
#     ranks) equal a single-node `mpirun.sh -np 2` run of the same plan.
#  2. dp 2 x pp 2 over 2 hosts x 2 slots (data-parallel pairs on one host),
#     against a single-node -np 4 run: when the executor runs dp_size > 1.
#  3. refusals before any rank starts: more ranks than the hostfile's slots, a
#     missing hostfile, -np other than pp_size x dp_size.
# Usage: hostfile_test.sh <pipewright>
set -euo pipefail
pipewright=$1
launch_dir=$(cd "$(dirname "$0")/../../launch" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMP_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1

cat > "$work/rsh.sh" <<'SH'
#!/bin/sh
# mpirun's rsh agent: "rsh.sh [options] HOST COMMAND...": log HOST, run COMMAND here.
while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
echo "$1" >> "$(dirname "$0")/rsh.log"
shift
exec /bin/sh -c "$*"
SH
chmod +x "$work/rsh.sh"
export PW_MPI_ARGS="--mca plm_rsh_agent $work/rsh.sh"

printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model.json"
for i in $(seq 1 200); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
plan_args=(--device cpu-core --dtype fp64 --recompute-granularity none --no-min-pp --schedule 1f1b
           --num-microbatches 3 --model-config "$work/model.json" --seq-length 16 --micro-batch-size 2)
"$pipewright" plan "${plan_args[@]}" --pp 2 -o "$work/pp2.json" > /dev/null
run_args=(--data "$work/text.txt" --steps 3 --seed 5 --log-every 1 --dtype float64)
# The lines that must agree: every step's loss and the parameter digest.
result() { grep -E '^(step [0-9]+/[0-9]+ \| loss [^|]*|parameters fnv1a64:.*)' -o "$1" | sed 's/ | *$//' ; }

echo "== 1. pp 2 on two hosts == pp 2 on one"
"$launch_dir/mpirun.sh" -np 2 -- "$pipewright" run --plan "$work/pp2.json" "${run_args[@]}" > "$work/one.txt"
printf 'localhost slots=1\n127.0.0.2 slots=1   # the second "host"\n' > "$work/hosts2"
rm -f "$work/rsh.log"
"$launch_dir/mpirun.sh" -np 2 --hostfile "$work/hosts2" --iface lo -- \
  "$pipewright" run --plan "$work/pp2.json" "${run_args[@]}" > "$work/two.txt"
grep -qx '127.0.0.2' "$work/rsh.log" || fail "no daemon was started for the second host (rsh agent log: $(cat "$work/rsh.log" 2> /dev/null))"
[[ $(result "$work/one.txt" | wc -l) -eq 4 ]] || { cat "$work/one.txt"; fail "expected 3 loss lines and a digest"; }
diff <(result "$work/one.txt") <(result "$work/two.txt") \
  || fail "the two-host run differs from the one-host run"
result "$work/two.txt"
# The two ranks are on two Open MPI nodes: with shared memory as the only
# transport (no TCP) they cannot reach each other at all.
if PW_MPI_ARGS="$PW_MPI_ARGS --mca btl self,vader" timeout 60 "$launch_dir/mpirun.sh" -np 2 --hostfile "$work/hosts2" \
     -- "$pipewright" run --plan "$work/pp2.json" "${run_args[@]}" > "$work/shm.txt" 2>&1; then
  fail "the two-host run worked over shared memory alone: its ranks were not on two nodes"
fi
grep -q "unable to reach each other" "$work/shm.txt" || { cat "$work/shm.txt"; fail "no 'unable to reach' from Open MPI"; }

echo "== 2. dp 2 x pp 2 on two hosts x 2 slots"
# The plan: pipewright plan --dp where the planner has it, else the pp 2 plan
# with dp_size 2 and, per the data-parallel contract, one "<stage>REDUCE_GRAD"
# per stage after its last B/W (and the message right after it), with the
# global batch as the plan reader wants it (2 x the replica's, or the sum).
made_by=planner
if ! "$pipewright" plan "${plan_args[@]}" --pp 2 --dp 2 -o "$work/dp2.json" > /dev/null 2>&1; then
  made_by=edit
  for global in double same; do
    python3 - "$work/pp2.json" "$work/dp2.json" "$global" <<'PY'
import json, re, sys
p = json.load(open(sys.argv[1]))
p["dp_size"] = 2
if sys.argv[3] == "double":
    p["training"]["global_batch_size"] = 2 * sum(p["training"]["microbatch_sizes"])
for r in p["ranks"]:
    acts = r["actions"]
    for stage in sorted({int(m.group(1)) for a in acts for m in [re.match(r"^(\d+)[BW]\d+$", a)] if m}):
        i = max(k for k, a in enumerate(acts) if re.match(r"^%d[BW]\d+$" % stage, a)) + 1
        while i < len(acts) and re.match(r"^\d+(SEND|RECV)_", acts[i]):
            i += 1
        acts.insert(i, "%dREDUCE_GRAD" % stage)
json.dump(p, open(sys.argv[2], "w"), indent=2)
PY
    "$pipewright" validate "$work/dp2.json" > /dev/null 2>&1 && break
    rm -f "$work/dp2.json"  # not valid for this pipewright
  done
fi
printf 'localhost slots=2\n127.0.0.2 slots=2\n' > "$work/hosts4"
rc=0
if [[ ! -f $work/dp2.json ]]; then
  rc=1
  echo "no dp 2 plan: pipewright plan has no --dp and the edited pp plan does not validate" > "$work/one4.txt"
else
  "$launch_dir/mpirun.sh" -np 4 -- "$pipewright" run --plan "$work/dp2.json" "${run_args[@]}" > "$work/one4.txt" 2>&1 \
    || rc=$?
fi
# An executor without data parallelism refuses the plan (dp_size != 1) or the
# rank count (it expects pp_size ranks).
no_dp='one pipeline replica|plan is for pp_size=2 ranks but 4 were started'
if [[ ! -f $work/dp2.json ]]; then
  echo "SKIP part 2: $(cat "$work/one4.txt")"
elif [[ $rc -ne 0 ]] && grep -qE "$no_dp" "$work/one4.txt"; then
  echo "SKIP part 2: this executor runs dp_size 1 only ($(grep -m1 -E "$no_dp" "$work/one4.txt"))"
elif [[ $rc -ne 0 && $made_by == edit ]]; then
  # Without `plan --dp` the plan is edited by hand here; a refusal of it says
  # nothing about the launcher.
  echo "SKIP part 2: pipewright plan has no --dp, and the run refused the hand-edited dp 2 plan:" \
    "$(grep -m1 'pipewright run:' "$work/one4.txt")"
else
  [[ $rc -eq 0 ]] || { cat "$work/one4.txt"; fail "single-node dp 2 x pp 2 run failed"; }
  rm -f "$work/rsh.log"
  # TCP only: the two "hosts" are one machine under one node name, so their
  # daemons would share Open MPI's session directory and the shared-memory
  # (vader) segments of local ranks 0 and 1 (a segfault in vader when both
  # hosts hold 2 ranks). Real hosts do not share it.
  PW_MPI_ARGS="$PW_MPI_ARGS --mca btl self,tcp" "$launch_dir/mpirun.sh" -np 4 --hostfile "$work/hosts4" --iface lo -- \
    "$pipewright" run --plan "$work/dp2.json" "${run_args[@]}" > "$work/two4.txt"
  grep -qx '127.0.0.2' "$work/rsh.log" || fail "no daemon was started for the second host"
  [[ $(result "$work/one4.txt" | wc -l) -eq 4 ]] || { cat "$work/one4.txt"; fail "expected 3 loss lines and a digest"; }
  diff <(result "$work/one4.txt") <(result "$work/two4.txt") || fail "the two-host dp run differs"
  result "$work/two4.txt"
fi

echo "== 3. refusals before any rank starts"
# mpirun.sh reads only pp_size and dp_size of the plan.
python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); p["dp_size"] = 2; json.dump(p, open(sys.argv[2], "w"))' \
  "$work/pp2.json" "$work/grid22.json"
expect_refusal() {  # expect_refusal PATTERN ARGS...: mpirun.sh ARGS exits 2 naming PATTERN, starts no rank
  local pattern=$1 rc=0
  shift
  rm -f "$work/rsh.log"
  timeout 30 "$launch_dir/mpirun.sh" "$@" > "$work/refused.txt" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || { cat "$work/refused.txt"; fail "exit $rc, want 2: mpirun.sh $*"; }
  grep -qF -- "$pattern" "$work/refused.txt" || { cat "$work/refused.txt"; fail "no '$pattern' for: mpirun.sh $*"; }
  [[ ! -e $work/rsh.log ]] || fail "a daemon was started before the refusal"
  ! grep -q '^step ' "$work/refused.txt" || fail "trained before refusing"
}
expect_refusal "-np 4 but --hostfile $work/hosts2 has 2 slots" -np 4 --hostfile "$work/hosts2" -- \
  "$pipewright" run --plan "$work/grid22.json" "${run_args[@]}"
expect_refusal "--hostfile $work/nohosts: no such file" -np 2 --hostfile "$work/nohosts" -- \
  "$pipewright" run --plan "$work/pp2.json" "${run_args[@]}"
expect_refusal "but the plan has pp_size=2 x dp_size=2" -np 2 --hostfile "$work/hosts2" -- \
  "$pipewright" run --plan "$work/grid22.json" "${run_args[@]}"
expect_refusal "--iface 'lo;x'" -np 2 --iface 'lo;x' -- "$pipewright" run --plan "$work/pp2.json" "${run_args[@]}"
echo "PASS"
