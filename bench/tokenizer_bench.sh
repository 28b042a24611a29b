#!/usr/bin/env bash
# Tokenize throughput, pipewright vs Hugging Face tokenizers, on the same
# file (the Debian `fortunes` text, ~2.5 MB) and the same core (taskset -c
# CORE), one thread each, for the tokenizer.json fixtures of
# tests/testdata/tokenizers/, and checks that `pipewright tokenize` of the
# whole file gives HF's `encode` ids (wrong = 0). Prints the figures of
# bench/results/tokenizers.md.
#   bench/tokenizer_bench.sh BUILD_DIR PYTHON_WITH_TOKENIZERS [CORE]
set -euo pipefail
build=$1 python=$2 core=${3:-1}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
text=$(mktemp)
bin=$(mktemp)
trap 'rm -f "$text" "$bin"' EXIT
for f in /usr/share/games/fortunes/*; do
  case "$f" in *.dat|*.u8) continue ;; esac
  [ -f "$f" ] && cat "$f"
done > "$text"
for name in gpt2_bpe llama3_bpe metaspace_bpe llama2_bpe; do
  dir="$repo/tests/testdata/tokenizers/$name"
  echo "== $name"
  taskset -c "$core" "$build/bench/tokenizer_bench" "$dir" "$text" 3
  taskset -c "$core" "$python" "$repo/bench/tokenizer_bench.py" "$dir/tokenizer.json" "$text" 3
  "$build/launch/pipewright" tokenize --tokenizer "$dir" --data "$text" -o "$bin" > /dev/null
  "$python" - "$dir/tokenizer.json" "$text" "$bin" <<'PY'
import struct, sys
from tokenizers import Tokenizer
want = Tokenizer.from_file(sys.argv[1]).encode(open(sys.argv[2], encoding="utf-8").read()).ids
b = open(sys.argv[3], "rb").read()
n = struct.unpack("<i", b[8:12])[0]
w = 2 if struct.unpack("<i", b[0:4])[0] == 20240520 else 4
got = list(struct.unpack("<%d%s" % (n, "H" if w == 2 else "I"), b[1024:1024 + w * n]))
diff = next((i for i, (a, c) in enumerate(zip(got, want)) if a != c), None if len(got) == len(want) else min(len(got), len(want)))
print("ids of the whole file vs HF encode: %d vs %d tokens, wrong = %d%s"
      % (len(got), len(want), 0 if diff is None else 1, "" if diff is None else " (first difference at %d)" % diff))
PY
done
