#!/usr/bin/env bash
# Tokenize throughput, pipewright vs Hugging Face tokenizers, on the same
# file (the Debian `fortunes` text, ~2.5 MB) and the same core (taskset -c
# CORE), one thread each, for the tokenizer.json fixtures of
# tests/testdata/tokenizers/. Prints the rows of bench/results/tokenizers.md.
#   bench/tokenizer_bench.sh BUILD_DIR PYTHON_WITH_TOKENIZERS [CORE]
set -euo pipefail
build=$1 python=$2 core=${3:-1}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
text=$(mktemp)
trap 'rm -f "$text"' EXIT
for f in /usr/share/games/fortunes/*; do
  case "$f" in *.dat|*.u8) continue ;; esac
  [ -f "$f" ] && cat "$f"
done > "$text"
for name in gpt2_bpe llama3_bpe metaspace_bpe llama2_bpe; do
  dir="$repo/tests/testdata/tokenizers/$name"
  echo "== $name"
  taskset -c "$core" "$build/bench/tokenizer_bench" "$dir" "$text" 3
  taskset -c "$core" "$python" "$repo/bench/tokenizer_bench.py" "$dir/tokenizer.json" "$text" 3
done
