#!/usr/bin/env bash
# `pipewright generate` with and without the KV cache: greedy, 200 new tokens
# after a 10-token and after a 1,000-token prompt (byte tokens), on one CPU
# thread (OMP_NUM_THREADS=1), for two models made by `pipewright run --steps 1
# --lr 0 --save` (random weights; the time does not depend on them):
#   gpt2-256: GPT-2, 4 layers, hidden 256, 4 heads, n_positions 1280 (3.5 M parameters)
#   llama-512: Llama, 8 layers, hidden 512, 8 heads / 4 key-value heads,
#              SwiGLU 1408, max_position_embeddings 1280 (22.5 M parameters)
# Per case: the prompt's forward (prefill), the remaining 199 tokens, the
# total, and the ratio total(1000) / total(10) (goal: < 2 with the cache):
# the median (min–max) over RUNS pairs of runs, the two prompts back to back
# in each pair; times are medians of RUNS runs. Without the cache, the 1,000-token prompt generates 20
# tokens (each recomputes ~1,000 positions) and its 200-token time is
# extrapolated from their per-token time (marked ~). `wrong` on each row:
# the cached and uncached runs' new ids differ (greedy: they must be equal;
# compared over the tokens both generated).
#
# Usage: bench/generate_bench.sh BUILD_DIR [RUNS]   (RUNS default 5; needs mpirun and python3)
set -euo pipefail
build=${1:?usage: generate_bench.sh BUILD_DIR [RUNS]}
runs=${2:-5}
pw=$build/launch/pipewright
[[ -x $pw ]] || { echo "generate_bench.sh: $pw not found; build it first" >&2; exit 2; }
work=$(mktemp -d /tmp/pw-genbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

python3 -c "
import random; random.seed(1)
words = 'the pipeline keeps every stage busy while one microbatch runs forward and another backward'.split()
open('$work/text.txt', 'w').write(' '.join(random.choice(words) for _ in range(20000)))
t = open('$work/text.txt').read(); open('$work/p1000.txt', 'w').write(t[:1000]); open('$work/p10.txt', 'w').write(t[:10])"
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 4, "n_positions": 1280, "vocab_size": 256, "tie_word_embeddings": true, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/gpt2-256.json"
printf '{"model_type": "llama", "num_hidden_layers": 8, "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 1408, "max_position_embeddings": 1280, "rms_norm_eps": 1e-5, "vocab_size": 256, "tie_word_embeddings": false}\n' > "$work/llama-512.json"

# gen MODEL PROMPT_FILE TOKENS [--no-kv-cache]: "prefill_s decode_s new_ids..." of one run
gen() {
  local model=$1 prompt=$2 tokens=$3
  shift 3
  "$pw" generate --checkpoint "$work/$model" --prompt "$(cat "$prompt")" --temperature 0 --tokens "$tokens" \
    --print-ids "$@" > "$work/out.txt" 2> "$work/err.txt"
  sed -n 's/.*tokens \([0-9.]*\) s, then [0-9]* tokens in \([0-9.]*\) s.*/\1 \2/p' "$work/err.txt" | tr '\n' ' '
  sed -n 's/^new_ids: //p' "$work/out.txt"
}
# Rows "prefill decode ids..." on stdin -> the medians of prefill and decode, the first row's ids.
median_py='
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
print(statistics.median(float(r[0]) for r in rows), statistics.median(float(r[1]) for r in rows), *rows[0][2:])'
# median_case MODEL PROMPT TOKENS [FLAGS]: "prefill decode ids..." with medians of RUNS runs
median_case() {
  local rows=()
  for ((r = 0; r < runs; ++r)); do rows+=("$(gen "$@")"); done
  printf '%s\n' "${rows[@]}" | python3 -c "$median_py"
}

echo "# generate: KV cache, 200 new tokens after 10 and 1,000 prompt tokens"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), OMP_NUM_THREADS=1, median of $runs runs, \`bench/generate_bench.sh\`."
echo
echo "| model | KV cache | prompt | prefill s | 199 more tokens s | total s | tokens/s after the first | total(1000) / total(10), median (min–max) | wrong |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for model in gpt2-256 llama-512; do
  "$pw" plan --model-config "$work/$model.json" --device cpu-core --pp 1 --num-microbatches 1 --micro-batch-size 1 \
    --seq-length 16 --dtype fp32 --recompute-granularity none -o "$work/$model-plan.json" > /dev/null
  mpirun --oversubscribe -np 1 "$pw" run --plan "$work/$model-plan.json" --data "$work/text.txt" --steps 1 --lr 0 \
    --save "$work/$model" > /dev/null
  # Cached: the two prompts back to back in each run (the machine's load
  # drifts less within a pair), RUNS pairs; the ratio is the median of the
  # pairs' ratios.
  pairs=()
  for ((r = 0; r < runs; ++r)); do
    a=$(gen "$model" "$work/p10.txt" 200)
    b=$(gen "$model" "$work/p1000.txt" 200)
    pairs+=("$a|$b")
  done
  ratio=$(printf '%s\n' "${pairs[@]}" | python3 -c "
import statistics, sys
r = []
for l in sys.stdin:
    a, b = (x.split() for x in l.split('|'))
    r.append((float(b[0]) + float(b[1])) / (float(a[0]) + float(a[1])))
print(statistics.median(r), min(r), max(r))")
  read -r -a c10 <<< "$(printf '%s\n' "${pairs[@]}" | cut -d'|' -f1 | python3 -c "$median_py")"
  read -r -a c1000 <<< "$(printf '%s\n' "${pairs[@]}" | cut -d'|' -f2 | python3 -c "$median_py")"
  read -r -a n10 <<< "$(median_case "$model" "$work/p10.txt" 200 --no-kv-cache)"
  read -r -a n1000 <<< "$(median_case "$model" "$work/p1000.txt" 20 --no-kv-cache)"
  python3 - "$model" "$ratio" "${#c10[@]}" "${c10[@]}" "${c1000[@]}" "${n10[@]}" "${n1000[@]}" <<'PY'
import sys
model, ratio, n = sys.argv[1], [float(x) for x in sys.argv[2].split()], int(sys.argv[3])
v = sys.argv[4:]
c10, c1000, n10 = v[:n], v[n:2 * n], v[2 * n:3 * n]
n1000 = v[3 * n:]
def t(row): return float(row[0]), float(row[1])
def wrong(a, b):
    k = min(len(a), len(b)) - 2
    return int(a[2:2 + k] != b[2:2 + k])
rows = []
p, d = t(c10); rows.append(("yes", 10, p, d, p + d, "", wrong(c10, n10)))
p2, d2 = t(c1000)
rows.append(("yes", 1000, p2, d2, p2 + d2, f"**{ratio[0]:.2f}** ({ratio[1]:.2f}–{ratio[2]:.2f})", wrong(c1000, n1000)))
q, e = t(n10); rows.append(("no", 10, q, e, q + e, "", wrong(c10, n10)))
q2, e2 = t(n1000)
e2x = e2 * 199 / 19  # 20 tokens measured: extrapolate the 19 after the first to 199
rows.append(("no", 1000, q2, e2x, q2 + e2x, f"~{(q2 + e2x) / (q + e):.1f}", wrong(c1000, n1000)))
for cache, prompt, pre, dec, tot, ratio, w in rows:
    approx = "~" if cache == "no" and prompt == 1000 else ""
    print(f"| {model} | {cache} | {prompt} | {pre:.3f} | {approx}{dec:.3f} | {approx}{tot:.3f} | {approx}{199 / dec:.0f} | {ratio} | {w} |")
PY
done
