#!/usr/bin/env bash
# End-to-end: write a plan with pw_make_plan, train 3 steps under
# `mpirun -np 2 pipewright run`, then `pipewright generate` from the saved
# stages; also `run` with the wrong -np must refuse before computing.
# Usage: run_cli_test.sh <pw_make_plan> <pipewright> <mpirun>
set -euo pipefail
make_plan=$1 pipewright=$2 mpirun=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16}\n' > "$work/model.json"
for i in $(seq 1 200); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
"$make_plan" --schedule zb-h1 --pp 2 -m 3 --model-config "$work/model.json" --seq-length 16 \
  --micro-batch-size 2 --out "$work/plan.json"
mpi=("$mpirun" --allow-run-as-root --oversubscribe)
"${mpi[@]}" -np 2 "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 3 \
  --save "$work/ckpt" | tee "$work/out.txt"
grep -q "^step 3/3 | loss" "$work/out.txt"
"$pipewright" generate --plan "$work/plan.json" --checkpoint "$work/ckpt" --tokens 20 --prompt "The " \
  | tee "$work/gen.txt"
grep -q "^The " "$work/gen.txt"
if "${mpi[@]}" -np 3 "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 1 \
     > "$work/wrong.txt" 2>&1; then
  echo "FAIL: run with -np 3 on a pp_size=2 plan succeeded"; exit 1
fi
grep -q "pp_size=2" "$work/wrong.txt" || { cat "$work/wrong.txt"; echo "FAIL: no pp_size in the refusal"; exit 1; }
echo "OK"
