#!/usr/bin/env bash
# ZeRO-1 checkpoints through the CLI under real mpirun (label mpi):
#   dp 2 x pp 2 ZeRO-1 (tied head) trains 2 steps with --checkpoint-dir;
#   the same run uninterrupted for 3 steps gives the reference loss of step 3;
#   --resume under dp 3 x pp 1 ZeRO-1 (ZB-H1) and dp 1 x pp 3 (no ZeRO-1)
#   runs step 3 with that loss (printed to 4 digits; fp64 equality is
#   executor_mpi_dp_np6's job); a shard file removed: refused on every rank
#   naming the file, exit non-zero, nothing written to --checkpoint-dir;
#   --sample on a ZeRO-1 run prints a sample.
# Usage: zero1_cli_test.sh PIPEWRIGHT MPIEXEC
set -uo pipefail
pipewright=$1
mpirun=$2
work=$(mktemp -d /tmp/pw-zero1-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work" || exit 1
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": true, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > model.json
for i in $(seq 1 300); do echo "The quick brown fox jumps over the lazy dog $i."; done > text.txt
common=(--device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --model-config model.json
        --seq-length 16 --micro-batch-size 1)
# Global batch 12 sequences in every plan.
"$pipewright" plan "${common[@]}" --schedule 1f1b --pp 2 --dp 2 --num-microbatches 6 --use-distributed-optimizer \
  -o a.json > /dev/null || fail "plan dp 2 x pp 2 ZeRO-1"
"$pipewright" plan "${common[@]}" --schedule zb-h1 --pp 1 --dp 3 --num-microbatches 4 --use-distributed-optimizer \
  -o b.json > /dev/null || fail "plan dp 3 x pp 1 ZeRO-1"
"$pipewright" plan "${common[@]}" --schedule 1f1b --pp 3 --dp 1 --num-microbatches 12 -o c.json > /dev/null ||
  fail "plan dp 1 x pp 3"
mpi=("$mpirun" --allow-run-as-root --oversubscribe)
"${mpi[@]}" -np 4 "$pipewright" run --plan a.json --data text.txt --steps 3 > full.txt 2>&1 || { cat full.txt; fail "uninterrupted run"; }
want=$(grep '^step 3/3' full.txt | sed 's/.*| loss \([0-9.]*\) .*/\1/')
"${mpi[@]}" -np 4 "$pipewright" run --plan a.json --data text.txt --steps 2 --checkpoint-dir ck > save.txt 2>&1 ||
  { cat save.txt; fail "run --checkpoint-dir"; }
grep '^checkpoint' save.txt
grep -q 'ZeRO-1 optimizer shard files' save.txt || fail "the checkpoint line does not count the shard files"
[[ $(ls ck/step_000002/*.adamw_shard_*_of_2.safetensors | wc -l) -eq 8 ]] || fail "expected 8 shard files (4 layers x 2)"
grep -q '"optimizer_shards": 2' ck/step_000002/manifest.json || fail "manifest lacks optimizer_shards 2"
for case in "3 b.json dp3xpp1-zero1" "3 c.json dp1xpp3"; do
  read -r np plan label <<< "$case"
  "${mpi[@]}" -np "$np" "$pipewright" run --plan "$plan" --data text.txt --steps 3 --resume ck > "resume_$label.txt" 2>&1 ||
    { cat "resume_$label.txt"; fail "resume under $label"; }
  got=$(grep '^step 3/3' "resume_$label.txt" | sed 's/.*| loss \([0-9.]*\) .*/\1/')
  echo "step 3 loss: uninterrupted dp2xpp2 ZeRO-1 $want, resumed under $label $got"
  [[ -n $got && $got == "$want" ]] || fail "resumed under $label: step 3 loss $got, uninterrupted $want"
done
cp -r ck/step_000002 bad
rm bad/block.1.adamw_shard_1_of_2.safetensors
"${mpi[@]}" -np 3 "$pipewright" run --plan b.json --data text.txt --steps 3 --resume bad --checkpoint-dir out2 \
  > bad.txt 2>&1 && fail "a checkpoint with a shard missing was accepted"
grep -m1 'block.1.adamw_shard_1_of_2.safetensors is missing' bad.txt || { cat bad.txt; fail "the error does not name the file"; }
grep -q '^step' bad.txt && fail "a step ran before the refusal"
[[ -e out2 ]] && fail "--checkpoint-dir out2 was written after the refusal"
"${mpi[@]}" -np 4 "$pipewright" run --plan a.json --data text.txt --steps 1 --sample 8 > sample.txt 2>&1 ||
  { cat sample.txt; fail "--sample on a ZeRO-1 run"; }
grep -q -- '--- sample' sample.txt || fail "no sample printed"
echo "PASS"
