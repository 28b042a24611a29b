#!/usr/bin/env bash
# Faults `pipewright elastic` survives besides a lost rank (tests/launch/
# elastic_test.sh), under real mpirun (CPU, loopback network), against an
# uninterrupted 12-step fp64 run on 4 devices:
#  1. a rank killed while a checkpoint is being written (the run's
#     --fault-kind checkpoint drill: rank 0, the writer of the layer files in
#     the 4-device plan (4 data-parallel replicas: replica 0 writes) and of
#     the manifest, SIGKILLed right after its first layer file of step 4): the step directory has layer files but no manifest, the
#     previous checkpoint (step 2) is intact, and `run --resume` of the root
#     reads step 2, never the partial one, and ends with the uninterrupted
#     run's parameters (1e-10 relative);
#  2. the same under elastic (killed while writing step 6): it resumes from
#     step 4 on 3 devices and ends with the same parameters;
#  3. a straggler (the --slow-rank drill: rank 2 sleeps 30 ms in every compute
#     action): without --replan-stragglers it is reported (a line when found,
#     the run's summary); with it, elastic drops its slot, re-plans for 3
#     devices, resumes from the checkpoint the run wrote at the stop, and ends
#     with the uninterrupted run's parameters.
# Usage: elastic_faults_test.sh <pipewright>
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
elastic() { timeout -k 10 150 "$pipewright" elastic --mpirun-arg --oversubscribe "$@"; }
mpi() { timeout -k 10 120 mpirun --allow-run-as-root --oversubscribe -np "$@"; }
compare() { python3 "$here/compare_checkpoints.py" "$1" "$2" 1e-10 || fail "$3: the final parameters differ"; }
SECONDS=0

echo "== 0. uninterrupted on 4 devices"
elastic --np 4 "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir straight > straight.txt 2>&1 \
  || { tail -30 straight.txt; fail "uninterrupted elastic run"; }
plan4=straight/elastic/plan-np4-launch0.json
[[ -f $plan4 ]] || fail "no 4-device plan in straight/elastic"

echo "== 1. rank 0 killed while writing the checkpoint of step 4; run --resume reads step 2"
if mpi 4 "$pipewright" run --plan "$plan4" "${run_flags[@]}" --checkpoint-dir ck --fault-rank 0 --fault-step 3 \
     --fault-kind checkpoint > killed.txt 2>&1; then fail "the killed run succeeded"; fi
grep -q "fault injection: SIGKILL while writing checkpoint ck/step_000004" killed.txt \
  || { tail -20 killed.txt; fail "no drill line"; }
ls ck/step_000004/*.safetensors > /dev/null 2>&1 || fail "no layer file in the interrupted checkpoint"
[[ ! -e ck/step_000004/manifest.json ]] || fail "the interrupted checkpoint has a manifest"
[[ -f ck/step_000002/manifest.json ]] || fail "the previous checkpoint is gone"
mpi 4 "$pipewright" run --plan "$plan4" "${run_flags[@]}" --checkpoint-dir ck --resume ck > resumed.txt 2>&1 \
  || { tail -20 resumed.txt; fail "resume after the interrupted checkpoint"; }
grep -q "^resumed from ck/step_000002 after step 2" resumed.txt || { grep resumed resumed.txt; fail "did not resume from step 2"; }
compare straight/step_000012 ck/step_000012 "run --resume after a kill during a checkpoint"

echo "== 2. elastic: rank 0 killed while writing the checkpoint of step 6"
elastic --np 4 --fault-drill 0:0:5:checkpoint "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir eck \
  > eck.txt 2>&1 || { tail -40 eck.txt; fail "elastic run with a kill during a checkpoint"; }
grep '^elastic:' eck.txt
grep -q '^elastic: lost rank 0 .*signal 9.*; re-planned for 3 devices: .*resuming from step 4 ' eck.txt \
  || fail "no restart from step 4"
compare straight/step_000012 eck/step_000012 "elastic after a kill during a checkpoint"

echo "== 3a. a straggler is reported (2 ranks, rank 1 sleeps 30 ms per compute action)"
"$pipewright" plan "${plan_flags[@]}" --num-devices 2 --tensor-model-parallel-size 1 -o plan2.json > /dev/null \
  || fail "plan for 2 devices"
mpi 2 "$pipewright" run --plan plan2.json --data text.txt --steps 7 --seed 3 --slow-rank 1 --slow-ms 30 \
  --straggler-threshold 3 > slow.txt 2>&1 || { tail -20 slow.txt; fail "run with a slow rank"; }
grep -E '^(straggler|stragglers|  straggler)' slow.txt
grep -q "^straggler: rank 1 on .* x[0-9.]* its peers' (threshold 3), [0-9]* % of the step, in each of steps 2-5" \
  slow.txt || fail "no straggler line"
grep -q '^stragglers: 1 | compute vs plan per rank: x[0-9.]* x[0-9.]*' slow.txt || fail "no straggler summary"
mpi 2 "$pipewright" run --plan plan2.json --data text.txt --steps 7 --seed 3 --straggler-threshold 3 \
  > even.txt 2>&1 || fail "run without a slow rank"
grep -q '^stragglers: none | compute vs plan per rank' even.txt || { grep straggler even.txt; fail "a false straggler"; }

echo "== 3b. elastic --replan-stragglers: rank 2 slow on 4 devices, finish on 3"
elastic --np 4 --replan-stragglers --slow-drill 0:2:30 "${plan_flags[@]}" -- "${run_flags[@]}" \
  --straggler-threshold 3 --checkpoint-dir slow > eslow.txt 2>&1 || { tail -40 eslow.txt; fail "elastic with a straggler"; }
grep -E '^(elastic|straggler):' eslow.txt
grep -q "^elastic: lost rank 2 .*(straggler: x[0-9.]* its peers', [0-9]* % of the step) at step 5; re-planned for 3 devices: .*resuming from step 5 " \
  eslow.txt || fail "the straggler was not replaced"
grep -q '^elastic: done: 12 steps on 3 devices at the end, 1 restart, 0 steps recomputed' eslow.txt \
  || fail "no done line"
compare straight/step_000012 slow/step_000012 "elastic after dropping a straggler"
echo "OK ($SECONDS s)"
