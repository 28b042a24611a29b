#!/usr/bin/env bash
# Step time of one transformer block on this CPU: a Llama block (RMSNorm,
# RoPE, SwiGLU with intermediate_size = 8/3 C rounded up to a multiple of 8,
# no biases: ~12 C^2 parameters) against a GPT-2 block of the same width C
# (LayerNorm, learned positions outside the block, GELU MLP 4C, biases:
# ~12 C^2), F / I / W / B medians from `pipewright profile --solo` (one
# LibTorch thread, the executor's setting; fp32; 4 microbatches in flight).
# Usage: bench/block_bench.sh [build-dir] [widths, default "128 512"]
# Writes a Markdown table to stdout (bench/results/block_bench.md holds a run).
set -euo pipefail
build=${1:-build}
widths=${2:-128 512}
pw=$build/launch/pipewright
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
b=4 s=64
echo "| model | C | heads | block params | F ms | I ms | W ms | B ms | F+I+W ms | vs GPT-2 |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for C in $widths; do
  heads=$(( C / 32 ))
  f=$(( (8 * C / 3 + 7) / 8 * 8 ))
  printf '{"model_type": "gpt2", "n_layer": 1, "n_embd": %d, "n_head": %d, "n_positions": %d, "vocab_size": 256, "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' \
    "$C" "$heads" "$s" > "$work/gpt2.json"
  printf '{"model_type": "llama", "num_hidden_layers": 1, "hidden_size": %d, "num_attention_heads": %d, "num_key_value_heads": %d, "intermediate_size": %d, "max_position_embeddings": %d, "rms_norm_eps": 1e-5, "vocab_size": 256, "tie_word_embeddings": false}\n' \
    "$C" "$heads" "$heads" "$f" "$s" > "$work/llama.json"
  gpt_total=""
  for m in gpt2 llama; do
    OMP_NUM_THREADS=1 "$pw" profile --model-config "$work/$m.json" --micro-batch-sizes 2,$b --seq-lengths $s \
      --repetitions 9 --warmup 2 --solo -o "$work/$m.profile.json" > "$work/$m.log" 2>&1 \
      || { cat "$work/$m.log" >&2; exit 1; }
    python3 - "$work/$m.profile.json" "$m" "$C" "$heads" "$b" "$s" "$f" "${gpt_total:-0}" > "$work/row.txt" << 'PY'
import json, sys
path, m, C, heads, b, s, f, gpt_total = sys.argv[1:]
C, b, s, f, gpt_total = int(C), int(b), int(s), int(f), float(gpt_total)
p = json.load(open(path))
samples = p["samples"] if "samples" in p else p["layers"]["samples"]
row = next(x for x in samples if x["kind"] == "block" and x["micro_batch_size"] == b and x["seq_length"] == s)
F, I, W, B = (row[k] * 1e3 for k in ("F", "I", "W", "B"))
params = 12 * C * C + 13 * C if m == "gpt2" else 4 * C * C + 3 * C * f + 2 * C
total = F + I + W
ratio = f"{total / gpt_total:.2f}x" if gpt_total > 0 else "1.00x"
print(f"| {m} | {C} | {heads} | {params} | {F:.3f} | {I:.3f} | {W:.3f} | {B:.3f} | {total:.3f} | {ratio} |")
print(total, file=sys.stderr)
PY
    cat "$work/row.txt"
    [[ $m == gpt2 ]] && gpt_total=$(OMP_NUM_THREADS=1 python3 -c "
import json; p=json.load(open('$work/gpt2.profile.json')); s=p.get('samples') or p['layers']['samples']
r=next(x for x in s if x['kind']=='block' and x['micro_batch_size']==$b and x['seq_length']==$s); print((r['F']+r['I']+r['W'])*1e3)")
  done
done
echo
echo "micro-batch $b x sequence $s tokens, fp32, 1 thread; medians of 9 rounds x 4 microbatches (pipewright profile --solo)."
