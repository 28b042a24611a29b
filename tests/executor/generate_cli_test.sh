#!/usr/bin/env bash
# `pipewright generate --init-from DIR` against Hugging Face transformers, on
# the committed fixtures (tests/testdata/generate/: tiny random Llama, Qwen3
# and GPT-2 models saved by transformers with the tokenizer.json of
# tests/testdata/tokenizers beside them; make_fixtures.py):
#  - greedy (--temperature 0) prompt and new token ids equal transformers'
#    tokenizer ids and `generate(do_sample=False)` (fp32), with the KV cache
#    and without it (--no-kv-cache), and --top-k 1 sampling equals greedy;
#  - it stops after the end-of-text id (generation_config.json, or
#    config.json's eos_token_id as a list), as transformers does with it;
#  - the text is the tokenizer's decoding of prompt + new ids;
#  - sampling is deterministic for a seed;
#  - refusals (exit 2, before the weights are read): --top-k / --top-p /
#    --temperature out of range, both or neither of --checkpoint and
#    --init-from, a vocabulary of 1001 ids without a tokenizer (naming
#    --tokenizer), a tokenizer larger than the model's vocabulary.
# Usage: generate_cli_test.sh <pipewright> <fixtures dir>
set -euo pipefail
pipewright=$1 fix=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

field() {  # field MODEL KEY: expected.json's value, ids space-separated
  python3 -c "
import json, sys
v = json.load(open(sys.argv[1], encoding='utf-8'))[sys.argv[2]][sys.argv[3]]
print(' '.join(map(str, v)) if isinstance(v, list) else v, end='')" "$fix/expected.json" "$1" "$2"
}
# check_ids WHAT FILE PROMPT_IDS NEW_IDS: the two lines of --print-ids.
check_ids() {
  local got_p got_n
  got_p=$(sed -n 's/^prompt_ids: //p' "$2")
  got_n=$(sed -n 's/^new_ids: //p' "$2")
  [ "$got_p" = "$3" ] || { echo "FAIL: $1: prompt ids"; echo " got  $got_p"; echo " want $3"; exit 1; }
  [ "$got_n" = "$4" ] || { echo "FAIL: $1: new ids"; echo " got  $got_n"; echo " want $4"; exit 1; }
}

n=$(python3 -c "import json; print(json.load(open('$fix/expected.json'))['max_new_tokens'])")
for m in llama qwen3 gpt2; do
  prompt=$(field $m prompt)
  pids=$(field $m prompt_ids)
  nids=$(field $m new_ids)
  # 1. Greedy, cached and not; top-k 1 sampling.
  "$pipewright" generate --init-from "$fix/$m" --prompt "$prompt" --temperature 0 --max-new-tokens "$n" --print-ids \
    > "$work/$m.ids" 2> "$work/$m.err"
  check_ids "$m greedy" "$work/$m.ids" "$pids" "$nids"
  "$pipewright" generate --init-from "$fix/$m" --prompt "$prompt" --temperature 0 --tokens "$n" --print-ids \
    --no-kv-cache > "$work/$m.nocache" 2> /dev/null
  check_ids "$m greedy without KV cache" "$work/$m.nocache" "$pids" "$nids"
  "$pipewright" generate --init-from "$fix/$m" --prompt "$prompt" --temperature 1 --top-k 1 --seed 9 --tokens "$n" \
    --print-ids > "$work/$m.k1" 2> /dev/null
  check_ids "$m --top-k 1" "$work/$m.k1" "$pids" "$nids"
  # 2. The text: the decoding of prompt + new ids (transformers' tokenizer).
  "$pipewright" generate --init-from "$fix/$m" --prompt "$prompt" --temperature 0 --tokens "$n" > "$work/$m.txt" \
    2> /dev/null
  python3 - "$fix/expected.json" "$m" "$work/$m.txt" <<'PY'
import json, re, sys
want = json.load(open(sys.argv[1], encoding="utf-8"))[sys.argv[2]]["decoded"]
# generate writes control bytes and broken UTF-8 as \xHH; HF's decode puts
# U+FFFD for broken UTF-8 (as Python's errors="replace").
raw = re.sub(rb"\\x([0-9A-F]{2})", lambda m: bytes([int(m.group(1), 16)]), open(sys.argv[3], "rb").read())
got = raw.decode("utf-8", errors="replace")
if got != want + "\n":
    sys.exit(f"FAIL: {sys.argv[2]} text\n got  {got!r}\n want {want!r}")
PY
  # 3. The end-of-text id: generation_config.json, then config.json (a list).
  cp -r "$fix/$m" "$work/$m-eos"
  stop=$(field $m stop_id)
  python3 -c "
import json, sys
p = sys.argv[1] + '/generation_config.json'; g = json.load(open(p)); g['eos_token_id'] = int(sys.argv[2])
json.dump(g, open(p, 'w'))" "$work/$m-eos" "$stop"
  "$pipewright" generate --init-from "$work/$m-eos" --prompt "$prompt" --temperature 0 --tokens "$n" --print-ids \
    > "$work/$m.eos" 2> "$work/$m.eos.err"
  check_ids "$m stop at eos $stop" "$work/$m.eos" "$pids" "$(field $m stop_ids)"
  grep -q "stopped at the end-of-text id" "$work/$m.eos.err" || { cat "$work/$m.eos.err"; echo "FAIL: $m stop line"; exit 1; }
  rm "$work/$m-eos/generation_config.json"
  python3 -c "
import json, sys
p = sys.argv[1] + '/config.json'; g = json.load(open(p)); g['eos_token_id'] = [998, int(sys.argv[2])]
json.dump(g, open(p, 'w'))" "$work/$m-eos" "$stop"
  "$pipewright" generate --init-from "$work/$m-eos" --prompt "$prompt" --temperature 0 --tokens "$n" --print-ids \
    > "$work/$m.eos2" 2> /dev/null
  check_ids "$m stop at config.json eos [998, $stop]" "$work/$m.eos2" "$pids" "$(field $m stop_ids)"
done
echo "greedy ids equal transformers' for llama, qwen3, gpt2 ($n new tokens each; cached, uncached, top-k 1; eos stops)"

# 4. Sampling: deterministic for a seed, a chosen number of tokens.
s=(generate --init-from "$fix/llama" --prompt "The cat" --temperature 0.9 --top-k 50 --top-p 0.9 --tokens 12 --print-ids)
"$pipewright" "${s[@]}" --seed 5 > "$work/s1" 2> /dev/null
"$pipewright" "${s[@]}" --seed 5 > "$work/s2" 2> /dev/null
cmp -s "$work/s1" "$work/s2" || { echo "FAIL: the same seed sampled differently"; exit 1; }
[ "$(sed -n 's/^new_ids: //p' "$work/s1" | wc -w)" = 12 ] || { cat "$work/s1"; echo "FAIL: not 12 new ids"; exit 1; }

# 5. Refusals, exit 2, naming the flag and value.
expect_fail() {  # expect_fail MESSAGE ARGS...
  local msg=$1 rc=0
  shift
  "$pipewright" "$@" > "$work/fail.txt" 2>&1 || rc=$?
  [ "$rc" = 2 ] && grep -qF -- "$msg" "$work/fail.txt" \
    || { cat "$work/fail.txt"; echo "FAIL (exit $rc, wanted 2 and '$msg'): $*"; exit 1; }
}
g=(generate --init-from "$fix/llama" --prompt "x")
expect_fail "--top-p 1.5: must be in [0, 1]" "${g[@]}" --top-p 1.5
expect_fail "--top-p -0.1: must be in [0, 1]" "${g[@]}" --top-p -0.1
expect_fail "--top-k -1: must be between 0 (off) and the model's vocabulary size 1001" "${g[@]}" --top-k -1
expect_fail "--top-k 5000: must be between 0 (off) and the model's vocabulary size 1001" "${g[@]}" --top-k 5000
expect_fail "--temperature -1: must be finite and >= 0" "${g[@]}" --temperature -1
expect_fail "--tokens 0: must be >= 1" "${g[@]}" --max-new-tokens 0
expect_fail "exactly one of --checkpoint DIR and --init-from HF_DIR" generate --prompt x
expect_fail "exactly one of --checkpoint DIR and --init-from HF_DIR" "${g[@]}" --checkpoint "$work"
expect_fail "--init-from $work/none: no such directory" generate --init-from "$work/none"
mkdir "$work/notok"
cp "$fix/llama/config.json" "$fix/llama/model.safetensors" "$work/notok/"
expect_fail "$work/notok/config.json vocab_size is 1001: without a tokenizer the prompt and the output are bytes" \
  generate --init-from "$work/notok"
expect_fail "pass --tokenizer FILE" generate --init-from "$work/notok"
expect_fail "has a vocabulary of 1001 pieces but $fix/gpt2/config.json vocab_size is 1000; it must not be larger" \
  generate --init-from "$fix/gpt2" --tokenizer "$fix/llama/tokenizer.json"
# With --tokenizer, the directory without one generates.
"$pipewright" generate --init-from "$work/notok" --tokenizer "$fix/llama" --prompt "The" --temperature 0 --tokens 3 \
  > /dev/null 2>&1 || { echo "FAIL: --tokenizer did not make up for the missing tokenizer.json"; exit 1; }
echo "generate CLI test: OK"
