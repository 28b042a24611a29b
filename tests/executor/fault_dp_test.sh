#!/usr/bin/env bash
# A dead or hung rank in one replica of a data-parallel run ends every rank
# (dp 2 x pp 2 = 4 ranks under real mpirun; world rank = pipeline rank x 2 +
# data-parallel rank, docs/DATA_PARALLEL.md):
#  hang: world rank 3 (pipeline rank 1 of replica 1) SIGSTOPs itself half-way
#        through step 1. Its pipeline peer (world rank 1) waits for its
#        messages, its data-parallel peer (world rank 2) for the all-reduce;
#        the watchdog (--watchdog-s 4) fires, the job ends non-zero within the
#        bound, and the errors name world rank 3 or the group holding it.
#  kill: the same rank SIGKILLs itself; mpirun tears the job down, non-zero.
# Usage: fault_dp_test.sh <pipewright> <mpirun>
set -uo pipefail
pipewright=$1 mpirun=$2
work=$(mktemp -d)
cleanup() {  # never leave a stopped rank behind
  grep -o 'pid [0-9]*' "$work"/*.txt 2> /dev/null | awk '{print $2}' | while read -r pid; do
    kill -CONT "$pid" 2> /dev/null; kill -KILL "$pid" 2> /dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model.json"
for i in $(seq 1 300); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --dp 2 --num-microbatches 4 --model-config "$work/model.json" --seq-length 16 --micro-batch-size 1 \
  -o "$work/plan.json" > /dev/null || fail "pipewright plan --dp 2"
watchdog=4
for kind in hang kill; do
  echo "== $kind world rank 3 at step 1"
  start=$(date +%s.%N)
  timeout -k 10 120 "$mpirun" --allow-run-as-root --oversubscribe -np 4 "$pipewright" run \
    --plan "$work/plan.json" --data "$work/text.txt" --steps 4 --watchdog-s $watchdog \
    --fault-rank 3 --fault-step 1 --fault-kind $kind > "$work/$kind.txt" 2>&1
  rc=$?
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  grep -v '^step' "$work/$kind.txt" | head -30
  echo "$kind: mpirun exit $rc after $secs s"
  [[ $rc -ne 0 ]] || fail "$kind: the job exited 0"
  # A killed rank makes mpirun exit 137 itself (128 + SIGKILL): judge a hang
  # by the time, not the code.
  [[ $rc -ne 124 ]] && (( $(echo "$secs < 100" | bc) )) || fail "$kind: the job hung until the test's 120 s timeout"
  grep -q "fault injection" "$work/$kind.txt" || fail "$kind: the fault was not injected"
  if [[ $kind == hang ]]; then
    grep -q "no progress for $watchdog s (watchdog" "$work/hang.txt" || fail "hang: no watchdog message"
    # The pipeline wait names the peer's world rank, the all-reduce its group.
    grep -qE "world rank 3\)|world ranks 2, 3" "$work/hang.txt" || fail "hang: world rank 3 (or its group) not named"
    (( $(echo "$secs < $watchdog + 40" | bc) )) || fail "hang: the ranks took $secs s (watchdog $watchdog s)"
  fi
done
echo "OK"
