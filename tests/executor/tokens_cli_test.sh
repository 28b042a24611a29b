#!/usr/bin/env bash
# Tokens end to end (docs/DATA.md): a SentencePiece model trained here by
# spm_train; `run --tokenizer` on text (2 steps, a sample that decodes to the
# tokenizer's pieces), `generate --tokenizer`; `pipewright tokenize` -> llm.c
# file -> `run --data-order sequential` gives the same first loss as the text
# run in sequential order; refusals before any step: a vocabulary mismatch
# (both sizes and the file), a token id >= vocab_size (file and offset);
# a 2 GiB sparse token file trains with a small peak RSS (GNU time).
# Usage: tokens_cli_test.sh <pipewright> <mpirun>
set -euo pipefail
pipewright=$1 mpirun=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=("$mpirun" --allow-run-as-root --oversubscribe -np 2)
for i in $(seq 1 300); do
  echo "The pipeline stage $((i % 7)) sends the activation to the next rank and waits for the gradient."
done > "$work/text.txt"
spm_train --input="$work/text.txt" --model_prefix="$work/spm" --vocab_size=40 --model_type=unigram \
  --character_coverage=1.0 > "$work/spm.log" 2>&1
model() {  # model VOCAB -> a tiny Llama config
  printf '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 32, "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "vocab_size": %d, "tie_word_embeddings": false}\n' "$1"
}
model 40 > "$work/m40.json"
model 256 > "$work/m256.json"
for v in 40 256; do
  "$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
    --num-microbatches 2 --model-config "$work/m$v.json" --seq-length 16 --micro-batch-size 2 -o "$work/p$v.json" > /dev/null
done

# 1. Text through the tokenizer: trains, samples words, generate decodes.
"${mpi[@]}" "$pipewright" run --plan "$work/p40.json" --data "$work/text.txt" --tokenizer "$work/spm.model" \
  --steps 2 --data-order sequential --save "$work/ckpt" --sample 12 --prompt "The pipeline" > "$work/run.txt"
grep -q "tokens of $work/spm.model (sequential order)" "$work/run.txt" || { cat "$work/run.txt"; echo "FAIL: banner"; exit 1; }
grep -q "^--- sample (12 tokens" "$work/run.txt" || { cat "$work/run.txt"; echo "FAIL: no token sample"; exit 1; }
first_text=$(sed -n 's/^step 1\/2 | loss \([0-9.]*\).*/\1/p' "$work/run.txt")
"$pipewright" generate --plan "$work/p40.json" --checkpoint "$work/ckpt" --tokenizer "$work/spm.model" \
  --prompt "The pipeline" --tokens 10 > "$work/gen.txt"
grep -q "^The pipeline" "$work/gen.txt" || { cat "$work/gen.txt"; echo "FAIL: generate lost the prompt"; exit 1; }
if grep -q "<unk>\|�" "$work/gen.txt"; then cat "$work/gen.txt"; echo "FAIL: undecoded output"; exit 1; fi

# 2. tokenize -> llm.c file: the same tokens, so the same first loss.
"$pipewright" tokenize --tokenizer "$work/spm.model" --data "$work/text.txt" -o "$work/text.bin" > "$work/tok.txt"
grep -q "uint16 tokens -> $work/text.bin (llm.c header)" "$work/tok.txt" || { cat "$work/tok.txt"; exit 1; }
"${mpi[@]}" "$pipewright" run --plan "$work/p40.json" --data "$work/text.bin" --steps 1 --data-order sequential \
  > "$work/bin.txt"
first_bin=$(sed -n 's/^step 1\/1 | loss \([0-9.]*\).*/\1/p' "$work/bin.txt")
echo "first loss: text+tokenizer $first_text, llm.c file $first_bin"
[ -n "$first_bin" ] && [ "$first_text" = "$first_bin" ] || { echo "FAIL: first losses differ"; exit 1; }

expect_fail() {  # expect_fail PATTERN CMD...: exit 2 within 60 s, PATTERN in the output, no step run
  local pattern=$1 rc=0
  shift
  timeout 60 "$@" > "$work/fail.txt" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { cat "$work/fail.txt"; echo "FAIL: exit $rc, want 2: $*"; exit 1; }
  grep -qF -- "$pattern" "$work/fail.txt" || { cat "$work/fail.txt"; echo "FAIL: no '$pattern' in: $*"; exit 1; }
  if grep -q "^step " "$work/fail.txt"; then echo "FAIL: trained before refusing: $*"; exit 1; fi
}
# 3. Refusals before any compute.
expect_fail "--tokenizer $work/spm.model has a vocabulary of 40 pieces but the plan's model.vocab_size is 256" \
  "${mpi[@]}" "$pipewright" run --plan "$work/p256.json" --data "$work/text.txt" --tokenizer "$work/spm.model" --steps 1
# generate: the tokenizer against the checkpoint's model (a byte-vocabulary
# checkpoint), and --plan against the checkpoint.
"${mpi[@]}" "$pipewright" run --plan "$work/p256.json" --data "$work/text.txt" --steps 1 --save "$work/ckpt256" \
  > /dev/null
expect_fail "--tokenizer $work/spm.model has a vocabulary of 40 pieces but the checkpoint's model.vocab_size is 256" \
  "$pipewright" generate --checkpoint "$work/ckpt256" --tokenizer "$work/spm.model"
expect_fail "field 'vocab_size' is 40 but the plan's model has 256" \
  "$pipewright" generate --plan "$work/p256.json" --checkpoint "$work/ckpt" --tokenizer "$work/spm.model"
python3 -c "
import struct, sys
t = [i % 40 for i in range(500)]; t[321] = 40
open(sys.argv[1], 'wb').write(struct.pack('<%dH' % len(t), *t))" "$work/bad.u16"
expect_fail "--data $work/bad.u16: token 40 at token offset 321 (byte offset 642) is >= the model's vocab_size 40" \
  "${mpi[@]}" "$pipewright" run --plan "$work/p40.json" --data "$work/bad.u16" --token-dtype uint16 --steps 1
expect_fail "--data-order 'backwards'" \
  "${mpi[@]}" "$pipewright" run --plan "$work/p40.json" --data "$work/text.txt" --data-order backwards --steps 1
expect_fail "--data $work/text.bin: its llm.c header (magic 20240520) says uint16 tokens but --token-dtype is uint32" \
  "${mpi[@]}" "$pipewright" run --plan "$work/p40.json" --data "$work/text.bin" --token-dtype uint32 --steps 1

# 4. Bounded memory: a 2 GiB sparse uint16 file (all token 0) is scanned and
# trained on; the peak RSS of the ranks stays far below the file.
truncate -s 2G "$work/big.u16"
/usr/bin/time -f "%M" -o "$work/rss.txt" "${mpi[@]}" "$pipewright" run --plan "$work/p40.json" --data "$work/big.u16" \
  --token-dtype uint16 --steps 2 > "$work/big.txt"
grep -q "^step 2/2" "$work/big.txt" || { cat "$work/big.txt"; echo "FAIL: big file run"; exit 1; }
# GNU time's %M is the largest peak RSS among mpirun and the ranks it waited
# for (wait4 folds in waited-for descendants).
rss_kib=$(tail -1 "$work/rss.txt")
echo "2 GiB sparse token file: peak RSS of a rank $((rss_kib / 1024)) MiB"
(( rss_kib < 1024 * 1024 )) || { echo "FAIL: peak RSS $rss_kib KiB >= 1 GiB for a 2 GiB file"; exit 1; }
echo "tokens CLI test: OK"
