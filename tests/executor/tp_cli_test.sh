#!/usr/bin/env bash
# End to end with tensor parallelism: `pipewright plan --tp 2` (TP2 x PP2,
# sequence parallel on by default), then `mpirun -np 4 pipewright run` trains
# 3 steps and writes a measured trace `show` reads. Refusals before any
# compute: the wrong -np (naming the grid and the -np to use), the TCP
# communicator (torchrun's) with T > 1 (naming it and --comm mpi; loopback is
# refused the same way, executor_test). --save with T > 1 writes a checkpoint
# of full tensors (tp_checkpoint_cli_test.sh resumes them under other layouts).
# Usage: tp_cli_test.sh <pipewright> <mpirun>
set -euo pipefail
pipewright=$1 mpirun=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{"n_layer": 2, "n_embd": 16, "n_head": 4, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": true, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model.json"
for i in $(seq 1 200); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --tp 2 --num-microbatches 4 --model-config "$work/model.json" --seq-length 16 --micro-batch-size 2 \
  -o "$work/plan.json" > "$work/plan.txt"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["tp_size"]==2 and p["sequence_parallel"], (p["tp_size"], p.get("sequence_parallel"))' "$work/plan.json"
mpi=("$mpirun" --allow-run-as-root --oversubscribe)
OMP_NUM_THREADS=1 "${mpi[@]}" -np 4 "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 3 \
  --trace "$work/trace.json" | tee "$work/out.txt"
# The measured trace: one writer (TP rank 0 of replica 0's pipeline), which
# `show` reads against the plan.
"$pipewright" show "$work/trace.json" --plan "$work/plan.json" > "$work/show.txt" \
  || { cat "$work/show.txt"; echo "FAIL: show of the TP run's trace"; exit 1; }
grep -q "^tensor parallel: TP2 x PP2 x DP1 (4 ranks), sequence parallel" "$work/out.txt"
grep -q "^step 3/3 | loss" "$work/out.txt"
python3 - "$work/out.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^done: loss ([0-9.]+) -> ([0-9.]+)", text, re.M)
assert m, text
first, last = float(m.group(1)), float(m.group(2))
assert last < first, f"loss did not fall: {first} -> {last}"
print(f"TP2 x PP2 trains: loss {first} -> {last}")
PY

# expect_fail PATTERN CMD...: CMD must fail (not hang) and print PATTERN.
expect_fail() {
  local pattern=$1 rc=0
  shift
  timeout 60 "$@" > "$work/fail.txt" 2>&1 || rc=$?
  if [ "$rc" = 124 ]; then cat "$work/fail.txt"; echo "FAIL: hung (timeout 60 s): $*"; exit 1; fi
  [ "$rc" != 0 ] || { cat "$work/fail.txt"; echo "FAIL: exit 0: $*"; exit 1; }
  grep -qF -- "$pattern" "$work/fail.txt" || { cat "$work/fail.txt"; echo "FAIL: no '$pattern' in: $*"; exit 1; }
}
run=("$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 1)
expect_fail "plan is for tp 2 x pp 2 x dp 1 = 4 ranks but 3 were started; run with mpirun -np 4" \
  "${mpi[@]}" -np 3 "${run[@]}"
# TCP (torchrun's): four ranks on one host through MASTER_ADDR / MASTER_PORT.
port=$((20000 + RANDOM % 20000))
rc=0
for r in 0 1 2 3; do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout 60 "${run[@]}" > "$work/tcp$r.txt" 2>&1 &
done
wait || rc=$?
grep -qF "the tcp communicator cannot form tensor-parallel groups" "$work/tcp0.txt" \
  || { cat "$work"/tcp*.txt; echo "FAIL: --comm tcp (torchrun) with T > 1 not refused clearly"; exit 1; }
"${mpi[@]}" -np 4 "${run[@]}" --save "$work/ckpt" > "$work/save.txt" 2>&1 || { cat "$work/save.txt"; echo "FAIL: --save with T > 1"; exit 1; }
grep -q '"tp_size": 2' "$work/ckpt/manifest.json" || { echo "FAIL: the TP checkpoint's manifest lacks tp_size 2"; exit 1; }
echo "tp_cli_test: OK"
