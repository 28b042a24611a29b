#!/usr/bin/env bash
# `pipewright elastic` re-plans tensor parallelism too, under real mpirun (CPU,
# loopback network, fp64). The device is CPU-core's shape with two devices per
# node (gpus_per_node 2, so `plan --num-devices` may choose T = 2) and a
# compute-bound cost model, under which plan picks TP2 x PP2 for 4 devices,
# T = 1 for 3 and TP2 x PP1 for 2 at --tp 2 (checked below, as the layouts).
#  1. uninterrupted: elastic on 4 devices, T searched: TP2 x PP2, 6 steps;
#  2. T searched: rank 1 SIGKILLed in step 4; the 3 devices left are re-planned
#     with T = 1 (3 is not a multiple of 2) and the run resumes from step 2's
#     TP2 checkpoint; the final parameters and AdamW state equal run 1's
#     within 1e-10 (relative);
#  3. --tp 2 fixed: rank 3 SIGKILLed in step 4; 3 devices left, rounded down
#     to 2 (a multiple of --tp 2, said on the restart line): TP2 x PP1 on 2
#     devices resumes from step 2 and ends with run 1's parameters (1e-10);
#  4. refusals before any launch: --np 3 with --tp 2, --tp 0; and a loss that
#     leaves no whole TP group (--np 2 --tp 2: 1 device left) stops naming
#     --tp and --min-np.
# Usage: elastic_tp_test.sh <pipewright>
set -uo pipefail
pipewright=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$work" || exit 2
# Vocabulary 1024: the embedding and head dominate the parameters, so the
# data-parallel all-reduce costs more than TP's activation collectives.
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 1024, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > model.json
cat > device.json << 'EOF'
{"name": "CPU-core-pair", "memory_bytes": 4294967296, "peak_flops": 1e8, "efficiency": 0.45,
 "memory_bandwidth_bytes_per_s": 1e10, "p2p_bandwidth_bytes_per_s": 5e9, "p2p_latency_s": 0,
 "gpus_per_node": 2, "intra_node_bandwidth_bytes_per_s": 1e8, "inter_node_bandwidth_bytes_per_s": 1e5,
 "source": "elastic_tp_test.sh: two slow cores per node, fast links inside it"}
EOF
for i in $(seq 1 300); do echo "The quick brown fox jumps over the lazy dog $i."; done > text.txt
plan_flags=(--model-config model.json --device device.json --dtype fp64 --recompute-granularity none
            --global-batch-size 12 --seq-length 16 --no-min-pp)
run_flags=(--data text.txt --dtype float64 --steps 6 --checkpoint-every 2 --seed 3 --watchdog-s 20)
elastic() { timeout -k 10 120 "$pipewright" elastic --mpirun-arg --oversubscribe "$@"; }
compare() {  # compare LABEL DIR: DIR's final checkpoint equals run 1's
  python3 "$here/compare_checkpoints.py" straight/step_000006 "$2/step_000006" 1e-10 \
    || fail "$1: the final parameters differ from the uninterrupted run's"
}

echo "== 1. uninterrupted on 4 devices, T searched"
elastic --np 4 "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir straight > straight.txt 2>&1 \
  || { tail -30 straight.txt; fail "uninterrupted elastic run"; }
grep '^elastic:' straight.txt
grep -q '^elastic: 4 devices: TP2 x PP2 ' straight.txt || fail "the 4-device plan is not TP2 x PP2"
grep -q '^elastic: done: 6 steps on 4 devices at the end, 0 restarts' straight.txt || fail "no done line"
grep -q '"tp_size": 2' straight/step_000006/manifest.json || fail "the checkpoint was not written under TP2"

echo "== 2. T searched: lose rank 1 in step 4, re-planned with T = 1 on 3 devices"
elastic --np 4 --fault-drill 0:1:3:kill "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir searched \
  > searched.txt 2>&1 || { tail -40 searched.txt; fail "elastic run with a loss, T searched"; }
grep '^elastic:' searched.txt
grep -q '^elastic: 4 devices: TP2 x PP2 ' searched.txt || fail "the 4-device plan is not TP2 x PP2"
grep -q '^elastic: lost rank 1 .*signal 9.* at step 4; re-planned for 3 devices: PP[1-3] .*resuming from step 2' \
  searched.txt || fail "no restart line re-planning 3 devices with T = 1"
grep -q '^elastic: done: 6 steps on 3 devices at the end, 1 restart' searched.txt || fail "no done line"
compare "T searched" searched

echo "== 3. --tp 2: lose rank 3 in step 4, 3 devices left, 2 used: TP2 x PP1"
elastic --np 4 --tp 2 --fault-drill 0:3:3:kill "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir fixed \
  > fixed.txt 2>&1 || { tail -40 fixed.txt; fail "elastic run with a loss, --tp 2"; }
grep '^elastic:' fixed.txt
grep -q '^elastic: 4 devices: TP2 x PP2 ' fixed.txt || fail "the 4-device plan is not TP2 x PP2"
grep -q '^elastic: lost rank 3 .*signal 9.* at step 4; re-planned for 2 devices (3 left, rounded down to a multiple of --tp 2): TP2 x PP1 .*resuming from step 2' \
  fixed.txt || fail "no restart line rounding 3 devices down to 2 for --tp 2"
grep -q '^elastic: done: 6 steps on 2 devices at the end, 1 restart' fixed.txt || fail "no done line"
compare "--tp 2" fixed

echo "== 4. refusals"
expect_refusal() {  # expect_refusal <what to find> <args...>
  local want=$1
  shift
  if "$pipewright" elastic "$@" > refusal.txt 2>&1; then fail "accepted: $*"; fi
  grep -qF -- "$want" refusal.txt || { cat refusal.txt; fail "the refusal does not say '$want'"; }
}
expect_refusal "--np 3 is not a multiple of --tp 2" --np 3 --tp 2 "${plan_flags[@]}" -- "${run_flags[@]}" \
  --checkpoint-dir c
expect_refusal "--tensor-model-parallel-size 0 must be an integer >= 1" --np 2 --tensor-model-parallel-size 0 \
  "${plan_flags[@]}" -- "${run_flags[@]}" --checkpoint-dir c
[[ ! -e c ]] || fail "a refusal left a checkpoint directory"
expect_refusal "1 devices left, 0 of them in whole tensor-parallel groups of --tp 2, below --min-np 1" \
  --np 2 --tp 2 --mpirun-arg --oversubscribe --fault-drill 0:1:1:kill "${plan_flags[@]}" -- "${run_flags[@]}" \
  --checkpoint-dir notp
echo "OK"
