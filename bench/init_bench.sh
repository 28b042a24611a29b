#!/usr/bin/env bash
# Start-up of the LibTorch commands that load their weights, end to end
# (process start to exit), for a Llama of 4 layers, hidden 512, 8 heads / 4
# key-value heads, SwiGLU 1408, vocabulary 32000 (44.6 M parameters, fp32),
# one process, one thread:
#   (a) `generate --init-from HF_DIR --tokens 1` (build, load, one token);
#   (b) `run --init-from HF_DIR --steps 1 --lr 0` under `mpirun -np 1`
#       (a 1-stage plan, 2 microbatches of 2 x 16 tokens);
#   (c) the same run without --init-from (random weights), the control.
# The HF directory is made once by `run --steps 1 --save` and `export`, with
# the tokenizer.json of tests/testdata/tokenizers/llama2_bpe (generate's prompt).
# Prints the median wall time (min-max) of RUNS runs of each, after one
# warm-up; with OLD_BUILD_DIR, the same for that build, runs alternating
# between the two builds (new, old, new, old, ...), so that load on a shared
# machine hits both alike.
#
# Usage: bench/init_bench.sh BUILD_DIR [RUNS] [OLD_BUILD_DIR]   (RUNS default 5; needs mpirun and python3)
set -euo pipefail
build=${1:?usage: init_bench.sh BUILD_DIR [RUNS] [OLD_BUILD_DIR]}
runs=${2:-5}
old=${3:-}
pw=$build/launch/pipewright
[[ -x $pw ]] || { echo "init_bench.sh: $pw not found; build it first" >&2; exit 2; }
work=$(mktemp -d /tmp/pw-initbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe -np 1)

cat > "$work/model.json" <<'JSON'
{"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
 "num_key_value_heads": 4, "intermediate_size": 1408, "max_position_embeddings": 64, "vocab_size": 32000,
 "tie_word_embeddings": false}
JSON
for i in $(seq 1 200); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
"$pw" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 1 \
  --num-microbatches 2 --model-config "$work/model.json" --seq-length 16 --micro-batch-size 2 -o "$work/plan.json" \
  > /dev/null
"${mpi[@]}" "$pw" run --plan "$work/plan.json" --data "$work/text.txt" --steps 1 --lr 0 --save "$work/ckpt" > /dev/null
"$pw" export --plan "$work/plan.json" --checkpoint "$work/ckpt" -o "$work/hf" > /dev/null
cp "$(dirname "${BASH_SOURCE[0]}")/../tests/testdata/tokenizers/llama2_bpe/tokenizer.json" "$work/hf/"

# RUNS rounds; in each, every command of every build once.
python3 - "$runs" "$pw" "${old:+$old/launch/pipewright}" "$work" "${mpi[*]}" <<'PY'
import statistics, subprocess, sys, time
runs, new, old, work, mpi = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split()
cases = {
    "(a) generate --init-from, 1 token": lambda pw: [pw, "generate", "--init-from", f"{work}/hf", "--prompt", "The",
                                                     "--tokens", "1"],
    "(b) run --init-from, 1 step": lambda pw: mpi + [pw, "run", "--plan", f"{work}/plan.json", "--data",
                                                    f"{work}/text.txt", "--steps", "1", "--lr", "0", "--init-from",
                                                    f"{work}/hf"],
    "(c) run, random init, 1 step": lambda pw: mpi + [pw, "run", "--plan", f"{work}/plan.json", "--data",
                                                     f"{work}/text.txt", "--steps", "1", "--lr", "0"],
}
builds = [("this build", new)] + ([("old build", old)] if old else [])
def once(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0
times = {(b, c): [] for b, _ in builds for c in cases}
for b, pw in builds:
    for c, cmd in cases.items():
        once(cmd(pw))  # warm-up
for _ in range(runs):
    for c, cmd in cases.items():
        for b, pw in builds:
            times[(b, c)].append(once(cmd(pw)))
for c in cases:
    for b, _ in builds:
        t = times[(b, c)]
        print(f"{c:34s} {b:10s}: median {statistics.median(t):.3f} s (min {min(t):.3f}, max {max(t):.3f}), {runs} runs")
PY
