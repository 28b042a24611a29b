#!/usr/bin/env bash
# The main job, end to end on this machine (CPU, MPI): train a SentencePiece
# tokenizer (spm_train, 1024 pieces) on English text nobody here wrote (the
# Debian package `fortunes`), write a plan for a small Llama-style model (8
# blocks, width 128, 4 heads with 2 key/value heads, SwiGLU, RoPE, RMSNorm,
# sequence 64 tokens) on P ranks, one per core (P = the cores, at most 4;
# PW_DEMO_PP overrides), train it 600 steps with `mpirun -np P pipewright run
# --tokenizer`, print the loss falling with the measured step and bubble beside
# the plan's, then a sample of generated text (words: the tokens are pieces).
#
# Usage: launch/demo.sh [build-dir]      (default: ./build)
# Environment: PW_DEMO_SCHEDULE (default auto: the planner picks by simulated
#              step time), PW_DEMO_STEPS (default 600), PW_DEMO_MICRO_BATCH
#              (rows per microbatch, default 2), PW_DEMO_DIR (work directory;
#              default a fresh temp dir), PW_DEMO_PP (ranks; more ranks than
#              cores share cores, which the plan does not model),
#              PW_DEMO_VOCAB (tokenizer pieces = model vocab_size, default 1024),
#              PW_DEMO_LR (peak learning rate, default 6e-3).
# Time on 2 cores with OpenBLAS (launch/setup.sh installs libopenblas0-pthread;
# Debian's reference BLAS is ~5x slower): ~10 s for spm_train, ~1 s to
# tokenize on each rank, then ~0.13 s per step (600 steps: ~1.5 min).
set -euo pipefail

build=${1:-build}
schedule=${PW_DEMO_SCHEDULE:-auto}
steps=${PW_DEMO_STEPS:-600}
micro_batch=${PW_DEMO_MICRO_BATCH:-2}
vocab=${PW_DEMO_VOCAB:-1024}
pipewright=$build/launch/pipewright
# `pipewright run` and `generate` start pipewright-exec from the same directory.
for exe in "$pipewright" "$build/launch/pipewright-exec"; do
  [[ -x $exe ]] || { echo "demo.sh: $exe not found; build first (cmake -B $build && cmake --build $build)" >&2; exit 2; }
done
command -v mpirun > /dev/null || { echo "demo.sh: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
dpkg -L fortunes > /dev/null 2>&1 || { echo "demo.sh: package 'fortunes' is not installed" >&2; exit 2; }
command -v spm_train > /dev/null || { echo "demo.sh: spm_train not found (apt-get install sentencepiece)" >&2; exit 2; }

work=${PW_DEMO_DIR:-$(mktemp -d /tmp/pipewright-demo-XXXXXX)}
mkdir -p "$work"

# Training text: every fortune file of the package (plain text; skip the
# .dat indexes and .u8 duplicates).
dpkg -L fortunes | grep -E '^/usr/share/games/fortunes/[^/.]+$' | while read -r f; do
  [[ -f $f ]] && cat "$f"
done > "$work/fortunes.txt"
echo "text: $(wc -c < "$work/fortunes.txt") bytes of fortunes in $work/fortunes.txt"

# The tokenizer: SentencePiece unigram pieces learned from the same text
# (a sample of its lines; all characters kept).
if [[ ! -f $work/spm.model ]]; then
  spm_train --input="$work/fortunes.txt" --model_prefix="$work/spm" --vocab_size="$vocab" --model_type=unigram \
    --character_coverage=1.0 --input_sentence_size=300000 --shuffle_input_sentence=true --num_threads="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)" \
    > "$work/spm_train.log" 2>&1 || { tail -5 "$work/spm_train.log" >&2; exit 1; }
fi
echo "tokenizer: $work/spm.model ($vocab pieces, spm_train)"

# A Llama-style decoder (HF config.json fields); vocab_size = the tokenizer's pieces.
cat > "$work/model.json" << JSON
{"model_type": "llama", "num_hidden_layers": 8, "hidden_size": 128, "num_attention_heads": 4,
 "num_key_value_heads": 2, "intermediate_size": 344, "hidden_act": "silu", "max_position_embeddings": 64,
 "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": $vocab, "tie_word_embeddings": false}
JSON

# 8 microbatches of 2 sequences x 64 tokens = 1024 tokens (~3 KB of text) per step. The planner
# splits the 10 layers (embedding, 8 blocks, head) over P ranks and picks
# schedule x v x recompute by simulated step time for one CPU core per rank.
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
pp=${PW_DEMO_PP:-$(( cores < 4 ? cores : 4 ))}
(( pp >= 1 )) || pp=1
"$pipewright" plan --model-config "$work/model.json" --device cpu-core --pp "$pp" --num-microbatches 8 \
  --micro-batch-size "$micro_batch" --seq-length 64 --dtype fp32 --schedule "$schedule" \
  --recompute-granularity none -o "$work/plan.json" | tail -n 4

mpi=(mpirun -np "$pp" -x OMP_NUM_THREADS=1 -x OMPI_MCA_mpi_yield_when_idle=1)
(( pp > cores )) && mpi+=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
"${mpi[@]}" "$pipewright" run --plan "$work/plan.json" --data "$work/fortunes.txt" --tokenizer "$work/spm.model" \
  --steps "$steps" --lr "${PW_DEMO_LR:-6e-3}" --seed 1 --save "$work/trained" \
  --sample 60 --prompt "The " --temperature 0.6
echo "plan, model, tokenizer and trained model are in $work; more text: $pipewright generate" \
  "--checkpoint $work/trained --tokenizer $work/spm.model --prompt 'The '"
