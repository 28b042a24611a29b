#!/usr/bin/env bash
# `pipewright elastic` under real mpirun (CPU, loopback network): a run that
# loses a rank re-plans for the devices left and resumes from the latest
# complete checkpoint, and ends with the parameters of an uninterrupted run.
#  1. uninterrupted: elastic on 4 devices, 12 steps, fp64 (no loss);
#  2. two losses: rank 1 SIGKILLed in step 6 (finishing that launch on 3
#     devices), then rank 0 SIGKILLed in step 10 of the second launch
#     (finishing on 2); every AdamW parameter and state tensor of the final
#     checkpoint equals the uninterrupted run's within 1e-10 (relative);
#  3. refusals before any launch: no --checkpoint-dir, no --checkpoint-every,
#     --pp among the plan flags, --min-np above --np; a run that fails without
#     losing a rank (bad input) is not restarted; --min-np stops the restarts.
# Usage: elastic_test.sh <pipewright> <mpirun-dir-or-empty>
set -uo pipefail
pipewright=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$work" || exit 2
printf '{"n_layer": 4, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > model.json
for i in $(seq 1 300); do echo "The quick brown fox jumps over the lazy dog $i."; done > text.txt
plan_flags=(--model-config model.json --device cpu-core --dtype fp64 --recompute-granularity none
            --global-batch-size 12 --seq-length 16 --no-min-pp)
run_flags=(--data text.txt --dtype float64 --steps 12 --checkpoint-every 2 --seed 3 --watchdog-s 20)
elastic() { timeout -k 10 300 "$pipewright" elastic --mpirun-arg --oversubscribe "$@"; }

echo "== 1. uninterrupted on 4 devices"
elastic --np 4 "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir straight > straight.txt 2>&1 \
  || { tail -30 straight.txt; fail "uninterrupted elastic run"; }
grep -q '^elastic: done: 12 steps on 4 devices at the end, 0 restarts' straight.txt || { tail straight.txt; fail "no done line"; }

echo "== 2. lose rank 1 in step 6, then rank 0 in step 10: finish on 2 devices"
elastic --np 4 --fault-drill 0:1:5:kill --fault-drill 1:0:9:kill "${plan_flags[@]}" -- "${run_flags[@]}" \
  --checkpoint-dir elastic > elastic.txt 2>&1 || { tail -40 elastic.txt; fail "elastic run with two losses"; }
grep '^elastic:' elastic.txt
grep -q '^elastic: lost rank 1 .*signal 9.* at step 6; re-planned for 3 devices: .*resuming from step 4' elastic.txt \
  || fail "no restart line for the first loss"
grep -q '^elastic: lost rank 0 .*signal 9.* at step 10; re-planned for 2 devices: .*resuming from step 8' elastic.txt \
  || fail "no restart line for the second loss"
grep -q '^elastic: done: 12 steps on 2 devices at the end, 2 restarts, 4 steps recomputed' elastic.txt \
  || fail "no done line with 2 restarts"
python3 "$here/compare_checkpoints.py" straight/step_000012 elastic/step_000012 1e-10 \
  || fail "the final parameters differ from the uninterrupted run's"

echo "== 2b. pipelines: a memory limit that makes every layout a pipeline (4 ranks, then 3)"
# (Under the limit the planner may shard AdamW (ZeRO-1) on 4 devices and not on
# 3: the comparison then covers the parameters; compare_checkpoints.py.)
limit=(--memory-limit 400KiB)
elastic --np 4 "${plan_flags[@]}" "${limit[@]}" -- "${run_flags[@]}" --checkpoint-dir pstraight > pstraight.txt 2>&1 \
  || { tail -30 pstraight.txt; fail "uninterrupted pipeline run"; }
elastic --np 4 --fault-drill 0:2:6:kill "${plan_flags[@]}" "${limit[@]}" -- "${run_flags[@]}" \
  --checkpoint-dir pelastic > pelastic.txt 2>&1 || { tail -40 pelastic.txt; fail "pipeline run with a loss"; }
grep '^elastic:' pelastic.txt
grep -q '^elastic: 4 devices: PP[2-4]' pelastic.txt || fail "the 4-device plan is not a pipeline"
grep -q '^elastic: lost rank 2 .* re-planned for 3 devices: PP[23]' pelastic.txt || fail "the 3-device plan is not a pipeline"
python3 "$here/compare_checkpoints.py" pstraight/step_000012 pelastic/step_000012 1e-10 \
  || fail "the pipeline run's final parameters differ from the uninterrupted run's"
# No plan fits 2 devices under this limit: a second loss stops with the planner's reason.
expect_stop() { grep -q "$1" "$2" || { tail -20 "$2"; fail "no '$1' in $2"; }; }
if elastic --np 3 --fault-drill 0:1:3:kill "${plan_flags[@]}" "${limit[@]}" -- "${run_flags[@]}" \
     --checkpoint-dir pstop > pstop.txt 2>&1; then fail "a loss leaving no feasible plan was not reported"; fi
expect_stop "planning for 2 devices failed" pstop.txt

echo "== 3. refusals"
expect_refusal() {  # expect_refusal <what to find> <args...>
  local want=$1; shift
  if "$pipewright" elastic "$@" > refusal.txt 2>&1; then fail "accepted: $*"; fi
  [[ $? -ne 0 ]] || true
  grep -q -- "$want" refusal.txt || { cat refusal.txt; fail "the refusal does not say '$want'"; }
}
expect_refusal "--checkpoint-dir" --np 2 "${plan_flags[@]}" -- --data text.txt --steps 4 --checkpoint-every 2
expect_refusal "--checkpoint-every" --np 2 "${plan_flags[@]}" -- --data text.txt --steps 4 --checkpoint-dir c
expect_refusal "--pp is set by elastic" --np 2 "${plan_flags[@]}" --pp 2 -- "${run_flags[@]}" --checkpoint-dir c
expect_refusal "--min-np 3 must be in" --np 2 --min-np 3 "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir c
expect_refusal "run flags go after --" --np 2 "${plan_flags[@]}"
[[ ! -e c ]] || fail "a refusal left a checkpoint directory"
# Bad input to run (a token dtype on a text file): every rank refuses; no restart.
expect_refusal "without losing a rank" --np 2 --mpirun-arg --oversubscribe "${plan_flags[@]}" -- "${run_flags[@]}" \
  --checkpoint-dir bad --token-dtype uint16
grep -q "lost rank" refusal.txt && fail "a bad-input failure was restarted"
# --min-np: a loss that leaves fewer devices stops with the reason.
expect_refusal "below --min-np 2" --np 2 --min-np 2 --mpirun-arg --oversubscribe --fault-drill 0:1:3:kill \
  "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir minnp
echo "OK"
