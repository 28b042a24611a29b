#!/usr/bin/env bash
# Hugging Face tokenizer.json end to end (docs/DATA.md, docs/INTEROP.md), on
# the committed fixtures (tests/testdata/tokenizers/): `pipewright tokenize
# --tokenizer DIR` writes HF's ids (the fixture's expected ids) for text and
# for JSON Lines (--text-field, documents each preceded by <|endoftext|>);
# a bad JSON line is refused naming the line; `run --tokenizer DIR` trains on
# text and samples, `generate --tokenizer DIR/tokenizer.json` decodes.
# Usage: tokenizer_json_cli_test.sh <pipewright> <mpirun> <fixtures dir>
set -euo pipefail
pipewright=$1 mpirun=$2 fix=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=("$mpirun" --allow-run-as-root --oversubscribe -np 2)

# The fixture's texts: real.txt, stress.txt, docs.jsonl; and the ids HF gave.
python3 - "$fix/gpt2_bpe.expected.json" "$work" <<'PY'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8")); w = sys.argv[2]
for k in ("real", "stress"):
    open(f"{w}/{k}.txt", "w", encoding="utf-8", newline="").write(d["texts"][k])
with open(f"{w}/docs.jsonl", "w", encoding="utf-8", newline="") as f:
    for k in ("real", "stress"):
        f.write(json.dumps({"meta": k, "text": d["texts"][k]}) + "\n")
eot = 0  # <|endoftext|> of gpt2_bpe
open(f"{w}/real.ids", "w").write(" ".join(map(str, d["ids"]["real"])))
open(f"{w}/docs.ids", "w").write(" ".join(map(str, [eot] + d["ids"]["real"] + [eot] + d["ids"]["stress"])))
PY
ids_of() {  # ids_of FILE.bin: the tokens of an llm.c uint16 file, space-separated
  python3 -c "
import struct, sys
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<i', b[8:12])[0]
print(' '.join(map(str, struct.unpack('<%dH' % n, b[1024:1024 + 2 * n]))), end='')" "$1"
}

# 1. Text: the directory's tokenizer.json, HF's ids.
"$pipewright" tokenize --tokenizer "$fix/gpt2_bpe" --data "$work/real.txt" -o "$work/real.bin" > "$work/tok.txt"
grep -q "(1000 pieces): $(wc -w < "$work/real.ids") uint16 tokens -> $work/real.bin" "$work/tok.txt" \
  || { cat "$work/tok.txt"; echo "FAIL: tokenize banner"; exit 1; }
[ "$(ids_of "$work/real.bin")" = "$(cat "$work/real.ids")" ] || { echo "FAIL: text ids differ from HF's"; exit 1; }

# 2. JSON Lines: documents separated by <|endoftext|>.
"$pipewright" tokenize --tokenizer "$fix/gpt2_bpe/tokenizer.json" --data "$work/docs.jsonl" --text-field text \
  -o "$work/docs.bin" > /dev/null
[ "$(ids_of "$work/docs.bin")" = "$(cat "$work/docs.ids")" ] || { echo "FAIL: JSON Lines ids"; exit 1; }
rc=0
"$pipewright" tokenize --tokenizer "$fix/gpt2_bpe" --data "$work/docs.jsonl" --text-field body -o "$work/x.bin" \
  > "$work/fail.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -qF "docs.jsonl line 1: no field 'body' (--text-field)" "$work/fail.txt" \
  || { cat "$work/fail.txt"; echo "FAIL: missing field not refused (exit $rc)"; exit 1; }
[ ! -e "$work/x.bin" ] || { echo "FAIL: output left after a refusal"; exit 1; }

# 3. run / generate with the Llama 3 style fixture (1001 ids, a BOS template).
printf '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 32, "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "vocab_size": 1001, "tie_word_embeddings": false}\n' \
  > "$work/m.json"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --num-microbatches 2 --model-config "$work/m.json" --seq-length 16 --micro-batch-size 2 -o "$work/p.json" > /dev/null
"${mpi[@]}" "$pipewright" run --plan "$work/p.json" --data "$work/real.txt" --tokenizer "$fix/llama3_bpe" \
  --steps 2 --save "$work/ckpt" --sample 8 --prompt "The cat" > "$work/run.txt"
grep -q "^step 2/2" "$work/run.txt" && grep -q "^--- sample (8 tokens" "$work/run.txt" \
  || { cat "$work/run.txt"; echo "FAIL: run with a tokenizer.json"; exit 1; }
"$pipewright" generate --checkpoint "$work/ckpt" --tokenizer "$fix/llama3_bpe/tokenizer.json" --prompt "The cat" \
  --tokens 6 > "$work/gen.txt"
grep -q "^The cat" "$work/gen.txt" || { cat "$work/gen.txt"; echo "FAIL: generate lost the prompt"; exit 1; }
if grep -q "begin_of_text" "$work/gen.txt"; then cat "$work/gen.txt"; echo "FAIL: special token decoded"; exit 1; fi
echo "tokenizer.json CLI test: OK"
