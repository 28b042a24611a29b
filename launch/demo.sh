#!/usr/bin/env bash
# The main job, end to end on this machine (CPU, MPI): write a plan for a
# small GPT (8 blocks, width 128, 4 heads, sequence 64, byte vocabulary) on
# P ranks, one per core (P = the cores, at most 4; PW_DEMO_PP overrides), train
# it 120 steps with `mpirun -np P pipewright run` on English text nobody here
# wrote (the Debian package `fortunes`), print the loss falling with the
# measured step and bubble beside the plan's, then a sample of generated text.
#
# Usage: launch/demo.sh [build-dir]      (default: ./build)
# Environment: PW_DEMO_SCHEDULE (default auto: the planner picks by simulated
#              step time), PW_DEMO_STEPS (default 120), PW_DEMO_MICRO_BATCH
#              (rows per microbatch, default 2), PW_DEMO_DIR (work directory;
#              default a fresh temp dir), PW_DEMO_PP (ranks; more ranks than
#              cores share cores, which the plan does not model).
# Time: ~0.1 s per step on 2 cores with OpenBLAS (launch/setup.sh installs
# libopenblas0-pthread; Debian's reference BLAS is ~5x slower).
set -euo pipefail

build=${1:-build}
schedule=${PW_DEMO_SCHEDULE:-auto}
steps=${PW_DEMO_STEPS:-120}
micro_batch=${PW_DEMO_MICRO_BATCH:-2}
pipewright=$build/launch/pipewright
# `pipewright run` and `generate` start pipewright-exec from the same directory.
for exe in "$pipewright" "$build/launch/pipewright-exec"; do
  [[ -x $exe ]] || { echo "demo.sh: $exe not found; build first (cmake -B $build && cmake --build $build)" >&2; exit 2; }
done
command -v mpirun > /dev/null || { echo "demo.sh: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
dpkg -L fortunes > /dev/null 2>&1 || { echo "demo.sh: package 'fortunes' is not installed" >&2; exit 2; }

work=${PW_DEMO_DIR:-$(mktemp -d /tmp/pipewright-demo-XXXXXX)}
mkdir -p "$work"

# Training text: every fortune file of the package (plain text; skip the
# .dat indexes and .u8 duplicates).
dpkg -L fortunes | grep -E '^/usr/share/games/fortunes/[^/.]+$' | while read -r f; do
  [[ -f $f ]] && cat "$f"
done > "$work/fortunes.txt"
echo "text: $(wc -c < "$work/fortunes.txt") bytes of fortunes in $work/fortunes.txt"

cat > "$work/model.json" << 'JSON'
{"model_type": "gpt2", "n_layer": 8, "n_embd": 128, "n_head": 4, "n_positions": 64, "vocab_size": 256, "tie_word_embeddings": false, "attn_pdrop": 0.0, "resid_pdrop": 0.0, "embd_pdrop": 0.0}
JSON

# 8 microbatches of 2 sequences x 64 bytes = 1024 tokens per step. The planner
# splits the 10 layers (embedding, 8 blocks, head) over P ranks and picks
# schedule x v x recompute by simulated step time for one CPU core per rank.
cores=$(nproc)
pp=${PW_DEMO_PP:-$(( cores < 4 ? cores : 4 ))}
(( pp >= 1 )) || pp=1
"$pipewright" plan --model-config "$work/model.json" --device cpu-core --pp "$pp" --num-microbatches 8 \
  --micro-batch-size "$micro_batch" --seq-length 64 --dtype fp32 --schedule "$schedule" \
  --recompute-granularity none -o "$work/plan.json" | tail -n 4

mpi=(mpirun -np "$pp" -x OMP_NUM_THREADS=1 -x OMPI_MCA_mpi_yield_when_idle=1)
(( pp > cores )) && mpi+=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
"${mpi[@]}" "$pipewright" run --plan "$work/plan.json" --data "$work/fortunes.txt" \
  --steps "$steps" --lr 3e-3 --seed 1 --save "$work/trained" \
  --sample 300 --prompt "The " --temperature 0.7
echo "plan and trained model are in $work; more text: $pipewright generate --checkpoint $work/trained"
