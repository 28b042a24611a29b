#!/usr/bin/env bash
# Qwen3 dense against Hugging Face transformers, from the command line, on
# directories transformers wrote (tests/testdata/qwen3/, made by the optional
# make_fixtures.py there; neither this test nor CI needs Python): for the
# tied and the untied model, `pipewright plan --model-config DIR/config.json`
# (P=2, 1F1B, 2 microbatches of 2 rows, T=16, fp32), `mpirun -np 2 pipewright
# run --init-from DIR --steps 1 --lr 0` on the fixture's 4 rows (sequential
# order, docs/DATA.md): the first-step loss equals transformers' (relative
# difference <= 1e-4; pipewright prints it to 4 decimals). Then `export` of
# the run's checkpoint round-trips: the export is model_type qwen3, and the
# parameters `run --init-from` loads from it have the same fnv1a64 digest
# as those it loaded from transformers' directory (bit-identical).
# Tensor parallelism (issue 23): the same for a TP2 x PP1 plan (2 ranks, heads
# 4 and kv heads 2 split, vocabulary 300 padded to 512): --init-from slices
# each HF tensor per TP rank; the first-step loss equals transformers'; the TP
# run's checkpoint (full tensors) exports, and the export loads back into the
# TP2 plan bit-identically.
# Usage: qwen3_cli_test.sh <pipewright> <mpirun> <tests/testdata/qwen3>
set -euo pipefail
pipewright=$1 mpirun=$2 data=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=("$mpirun" --allow-run-as-root --oversubscribe -np 2)
fail() { echo "FAIL: $*"; exit 1; }
worst=0
for layout_case in "pp2:--tp 1 --pp 2" "tp2:--tp 2 --pp 1"; do
layout=${layout_case%%:*}
flags=${layout_case#*:}
for variant in tied untied; do
  dir="$data/$variant"
  read -r -a layout_flags <<< "$flags"
  variant_name=$variant
  variant=$variant.$layout
  "$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b \
    "${layout_flags[@]}" --num-microbatches 2 --model-config "$dir/config.json" --seq-length 16 --micro-batch-size 2 \
    -o "$work/$variant.plan.json" > /dev/null
  grep -q '"architecture": "qwen3"' "$work/$variant.plan.json" || fail "$variant $layout: plan is not qwen3"
  train=("${mpi[@]}" "$pipewright" run --plan "$work/$variant.plan.json" --data "$data/tokens.u16" --token-dtype uint16
         --data-order sequential --steps 1 --lr 0)
  "${train[@]}" --init-from "$dir" --save "$work/$variant.ckpt" > "$work/$variant.run.txt"
  ours=$(sed -n 's/^step 1\/1 | loss \([0-9.]*\) .*/\1/p' "$work/$variant.run.txt")
  theirs=$(sed -n "s/^ *\"$variant_name\": \([0-9.eE+-]*\),\{0,1\}$/\1/p" "$data/expected.json")
  [ -n "$ours" ] && [ -n "$theirs" ] || { cat "$work/$variant.run.txt"; fail "$variant $layout: no loss (ours '$ours', transformers '$theirs')"; }
  rel=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; printf "%.3e", d }')
  echo "qwen3 $variant $layout: first-step loss pipewright $ours (4 decimals) transformers $theirs relative difference $rel"
  awk -v r="$rel" 'BEGIN { exit !(r <= 1e-4) }' || fail "$variant $layout: relative difference $rel > 1e-4"
  worst=$(awk -v a="$worst" -v b="$rel" 'BEGIN { print (b > a ? b : a) }')
  loaded=$(sed -n "s/^initialised from .*: parameters fnv1a64:\(.*\)$/\1/p" "$work/$variant.run.txt")
  [ -n "$loaded" ] || { cat "$work/$variant.run.txt"; fail "$variant $layout: no parameter digest"; }

  "$pipewright" export --plan "$work/$variant.plan.json" --checkpoint "$work/$variant.ckpt" -o "$work/$variant.hf" > /dev/null
  grep -q '"model_type": "qwen3"' "$work/$variant.hf/config.json" || { cat "$work/$variant.hf/config.json"; fail "$variant $layout: export config"; }
  grep -q "\"tie_word_embeddings\": $([ $variant_name = tied ] && echo true || echo false)" "$work/$variant.hf/config.json" \
    || fail "$variant $layout: export tying"
  "${train[@]}" --init-from "$work/$variant.hf" > "$work/$variant.rerun.txt"
  again=$(sed -n "s/^initialised from .*: parameters fnv1a64:\(.*\)$/\1/p" "$work/$variant.rerun.txt")
  [ "$again" = "$loaded" ] || fail "$variant $layout: export loads digest '$again', transformers' directory '$loaded'"
  echo "qwen3 $variant $layout: export round trip: parameters fnv1a64 $again (bit-identical)"
done
done
echo "OK worst relative difference $worst"
