#!/usr/bin/env bash
# A peer that dies or hangs must not hang the others (P=3, real mpirun):
#  kill: rank 1 SIGKILLs itself half-way through step 1. mpirun tears the job
#        down; every survivor exits non-zero, saying what it was waiting on.
#  hang: rank 1 SIGSTOPs itself half-way through step 1. The survivors' watchdog
#        (--watchdog-s 4) fires; each exits non-zero naming the rank, the action
#        and the microbatch it waited on, within the bound (+ launcher teardown).
# Usage: fault_test.sh <pipewright> <pipewright> <mpirun> (the first writes the plans)
set -uo pipefail
make_plan=$1 pipewright=$2 mpirun=$3
work=$(mktemp -d)
pids_file=$work/fault_pids
cleanup() {  # never leave a stopped rank behind
  grep -o 'pid [0-9]*' "$work"/*.txt 2> /dev/null | awk '{print $2}' | while read -r pid; do
    kill -CONT "$pid" 2> /dev/null; kill -KILL "$pid" 2> /dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '{"n_layer": 3, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model.json"
for i in $(seq 1 300); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 3 --num-microbatches 6 --model-config "$work/model.json" --seq-length 16 \
  --micro-batch-size 1 -o "$work/plan.json" > /dev/null || fail "pipewright plan"
watchdog=4
for kind in kill hang; do
  echo "== $kind rank 1 at step 1"
  start=$(date +%s.%N)
  timeout -k 10 120 "$mpirun" --allow-run-as-root --oversubscribe -np 3 "$pipewright" run \
    --plan "$work/plan.json" --data "$work/text.txt" --steps 5 --watchdog-s $watchdog \
    --fault-rank 1 --fault-step 1 --fault-kind $kind > "$work/$kind.txt" 2>&1
  rc=$?
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  cat "$work/$kind.txt" | grep -v '^step' | head -30
  echo "$kind: mpirun exit $rc after $secs s"
  [[ $rc -ne 0 ]] || fail "$kind: the job exited 0"
  [[ $rc -ne 124 && $rc -ne 137 ]] || (( $(echo "$secs < 100" | bc) )) || fail "$kind: the job hung until the test's 120 s timeout"
  for r in 0 2; do
    # Either the watchdog's error or the termination report, naming the rank,
    # the action and the microbatch this rank was waiting on.
    grep -E "rank $r, step [0-9]+, action [0-9]+ '[0-9]+[A-Z_]+[0-9]+'.*(waiting for|receive).*microbatch [0-9]+" \
      "$work/$kind.txt" > /dev/null || fail "$kind: rank $r did not say what it was waiting on"
  done
  if [[ $kind == hang ]]; then
    grep -q "no progress for $watchdog s (watchdog" "$work/hang.txt" || fail "hang: no watchdog message"
    (( $(echo "$secs < $watchdog + 30" | bc) )) || fail "hang: survivors took $secs s (watchdog $watchdog s)"
  fi
done
echo "OK"
