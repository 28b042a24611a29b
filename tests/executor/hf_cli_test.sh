#!/usr/bin/env bash
# Hugging Face directories from the command line: `mpirun -np 2 pipewright
# run --save` (2 steps of a small Llama), `pipewright export` (one file, and
# sharded), then `run --init-from` each export: the parameters it loaded have
# the same bit-exact digest as those the first run saved. Refusals exit 2
# naming what is wrong, before any step: a non-empty -o, another model's
# config.json, --init-from with --resume.
# Usage: hf_cli_test.sh <pipewright> <mpirun>
set -euo pipefail
pipewright=$1 mpirun=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/model.json" <<'JSON'
{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4,
 "num_key_value_heads": 2, "intermediate_size": 48, "max_position_embeddings": 16, "vocab_size": 256,
 "attention_bias": true, "tie_word_embeddings": false}
JSON
for i in $(seq 1 200); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --num-microbatches 2 --model-config "$work/model.json" --seq-length 16 --micro-batch-size 2 -o "$work/plan.json" > /dev/null
mpi=("$mpirun" --allow-run-as-root --oversubscribe -np 2)
"${mpi[@]}" "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 2 --save "$work/ckpt" > "$work/train.txt"
saved=$(grep "^parameters fnv1a64:" "$work/train.txt" | sed 's/^parameters fnv1a64://')
[ -n "$saved" ] || { cat "$work/train.txt"; echo "FAIL: no parameter digest"; exit 1; }

"$pipewright" export --plan "$work/plan.json" --checkpoint "$work/ckpt" -o "$work/hf" | tee "$work/export.txt"
grep -q "config.json + 1 safetensors file$" "$work/export.txt"
[ -f "$work/hf/config.json" ] && [ -f "$work/hf/model.safetensors" ] || { echo "FAIL: export files missing"; exit 1; }
grep -q '"model_type": "llama"' "$work/hf/config.json" || { cat "$work/hf/config.json"; echo "FAIL: config"; exit 1; }
"$pipewright" export --plan "$work/plan.json" --checkpoint "$work/ckpt" -o "$work/hf-sharded/" --max-shard-bytes 30000 \
  | tee "$work/export2.txt"
[ -f "$work/hf-sharded/model.safetensors.index.json" ] || { echo "FAIL: no index"; exit 1; }
[ "$(ls "$work/hf-sharded"/model-*-of-*.safetensors | wc -l)" -gt 1 ] || { echo "FAIL: not sharded"; exit 1; }

for hf in hf hf-sharded; do
  "${mpi[@]}" "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 1 --seed 7 \
    --init-from "$work/$hf" > "$work/init.txt"
  loaded=$(grep "^initialised from $work/$hf: parameters fnv1a64:" "$work/init.txt" | sed 's/^.*parameters fnv1a64://')
  [ "$loaded" = "$saved" ] || { cat "$work/init.txt"; echo "FAIL: $hf: loaded digest '$loaded' != saved '$saved'"; exit 1; }
done

expect_fail() {  # expect_fail PATTERN CMD...: exit 2 within 60 s, PATTERN in the output, no step trained
  local pattern=$1 rc=0
  shift
  timeout 60 "$@" > "$work/fail.txt" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { cat "$work/fail.txt"; echo "FAIL: exit $rc, want 2: $*"; exit 1; }
  grep -qF -- "$pattern" "$work/fail.txt" || { cat "$work/fail.txt"; echo "FAIL: no '$pattern': $*"; exit 1; }
  if grep -q "^step " "$work/fail.txt"; then cat "$work/fail.txt"; echo "FAIL: trained before refusing"; exit 1; fi
}
expect_fail "-o $work/hf: exists and is not empty" \
  "$pipewright" export --plan "$work/plan.json" --checkpoint "$work/ckpt" -o "$work/hf"
mkdir "$work/other"
cp "$work/hf/model.safetensors" "$work/other/"
sed 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "$work/hf/config.json" > "$work/other/config.json"
run1=("${mpi[@]}" "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 1)
expect_fail "$work/other/config.json: field 'num_hidden_layers' is 3 but the plan's model has 2" \
  "${run1[@]}" --init-from "$work/other"
expect_fail "--init-from $work/hf: cannot be combined with --resume" "${run1[@]}" --init-from "$work/hf" --resume "$work/ckpt"
echo "OK"
