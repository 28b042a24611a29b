#!/usr/bin/env bash
# The main job, end to end on this machine (CPU, MPI): write a plan for a
# small GPT (8 blocks, width 128, 4 heads, sequence 64, byte vocabulary) on
# P=4 ranks, train it ~50 steps with `mpirun -np 4 pipewright run` on English
# text nobody here wrote (the Debian package `fortunes`), print the loss
# falling, then a sample of generated text.
#
# Usage: launch/demo.sh [build-dir]      (default: ./build)
# Environment: PW_DEMO_SCHEDULE (default zb-h1), PW_DEMO_STEPS (default 50),
#              PW_DEMO_MICRO_BATCH (rows per microbatch, default 2),
#              PW_DEMO_DIR (work directory; default a fresh temp dir).
# Time: ~2.5 s per step on 2 cores with Debian's reference BLAS; installing
# libopenblas0-pthread makes the GEMMs several times faster.
set -euo pipefail

build=${1:-build}
schedule=${PW_DEMO_SCHEDULE:-zb-h1}
steps=${PW_DEMO_STEPS:-50}
micro_batch=${PW_DEMO_MICRO_BATCH:-2}
make_plan=$build/executor/pw_make_plan
pipewright=$build/launch/pipewright
for exe in "$make_plan" "$pipewright"; do
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
{"model_type": "gpt2", "n_layer": 8, "n_embd": 128, "n_head": 4, "n_positions": 64, "vocab_size": 256}
JSON

# 8 microbatches of 2 sequences x 64 bytes = 1024 tokens per step.
"$make_plan" --schedule "$schedule" --pp 4 -m 8 --model-config "$work/model.json" \
  --seq-length 64 --micro-batch-size "$micro_batch" --out "$work/plan.json"

mpi=(mpirun --oversubscribe -np 4 -x OMP_NUM_THREADS=1 -x OMPI_MCA_mpi_yield_when_idle=1)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
"${mpi[@]}" "$pipewright" run --plan "$work/plan.json" --data "$work/fortunes.txt" \
  --steps "$steps" --lr 3e-3 --seed 1 --save "$work/stages" \
  --sample 300 --prompt "The " --temperature 0.7
echo "plan, model and stages are in $work; more text: $pipewright generate --plan $work/plan.json --checkpoint $work/stages"
