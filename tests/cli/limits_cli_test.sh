#!/usr/bin/env bash
# Sizes refused up front (base/limits.h): each input of the hardening issue
# exits 2 within a second, names the culprit and the limit, and writes nothing.
#   limits_cli_test.sh <pipewright>
set -u
PW=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
refuse() {  # refuse [--] PATTERN ARGS...: exit 2 in < 1 s with PATTERN on stderr, no -o file
  [ "$1" = "--" ] && shift  # (a pattern starting with '-'; the -- was taken as the pattern before)
  local pattern="$1"; shift
  local t0=$(date +%s%N)
  "$PW" "$@" > "$T/out.txt" 2> "$T/err.txt"
  local rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ $rc -eq 2 ] || fail "$*: exit $rc, want 2: $(head -c 400 "$T/err.txt")"
  grep -q -- "$pattern" "$T/err.txt" || fail "$*: no '$pattern' in: $(head -c 400 "$T/err.txt")"
  [ $ms -lt 1000 ] || fail "$*: took $ms ms"
  [ ! -e "$T/x.json" ] || fail "$*: wrote a file"
}
printf '0F2147483646\n' > "$T/a.csv"
refuse "row 1, column 1: '0F2147483646': microbatch 2147483646 is above the limit of 65535" validate "$T/a.csv"
printf '01073741823F0\n' > "$T/b.csv"
refuse "stage 1073741823 is above the limit of 16383" validate "$T/b.csv"
printf '2147483647F0\n' > "$T/c.csv"
refuse "stage 2147483647 is above the limit" validate "$T/c.csv"
refuse -- "--pp 100000 is above the limit of 4096" schedule --schedule 1f1b --pp 100000 --num-microbatches 100000
refuse -- "--num-microbatches 100000 is above the limit of 65536" schedule --schedule 1f1b --pp 4 --num-microbatches 100000
refuse -- "S\*m = stages x --num-microbatches 16781312 is above the limit" schedule --schedule interleaved-1f1b --pp 1024 \
  --virtual-stages 4 --num-microbatches 4097
G="--model-config gpt2 --device cpu-core --pp 4 -o $T/x.json"
refuse -- "--global-batch-size 99999999999 is above the limit of 16777216 (sequences per step" plan $G --global-batch-size 99999999999
refuse -- "--num-microbatches 1000000 is above the limit of 65536" plan $G --num-microbatches 1000000
refuse -- "= m 1000000 is above the limit of 65536" plan $G --global-batch-size 1000000 --micro-batch-size 1
refuse -- "needs more than the limit of 65536 microbatches per step with every micro-batch size tried" plan $G \
  --global-batch-size 1000000
# Plans: sizes before allocation, numbers a double cannot hold, hostile nesting.
"$PW" schedule --schedule 1f1b --pp 2 --num-microbatches 2 --format json -o "$T/p.json" || fail "schedule json"
python3 - "$T" << 'PY' || fail "writing the bad plans"
import json, sys
t = sys.argv[1]
p = json.load(open(t + "/p.json"))
q = dict(p); q["num_microbatches"] = 2000000000
json.dump(q, open(t + "/huge_m.json", "w"))
open(t + "/big_number.json", "w").write('{"format": "pipewright-plan", "version": 1e400}')
text = json.dumps(p)
open(t + "/deep.json", "w").write(text[:-1] + ', "notes": ' + "[" * 100000 + "]" * 100000 + "}")
PY
refuse "num_microbatches 2000000000 is above the limit of 65536" validate "$T/huge_m.json"
refuse "big_number.json: not valid JSON" validate "$T/big_number.json"
refuse "deep.json: JSON nested deeper than the limit of 64 levels" validate "$T/deep.json"
refuse "not valid JSON" show "$T/big_number.json"
refuse "big_number.json: .*number overflow parsing '1e400'" plan --model-config "$T/big_number.json" --device cpu-core --pp 2 --num-microbatches 2 -o "$T/x.json"
# Deep nesting in a config, a device or a trace (every JSON reader, not only
# plans): a config like this one crashed `plan` (stack overflow, exit 139).
python3 -c "import sys; open(sys.argv[1], 'w').write('{\"n_layer\": ' + '[' * 200000 + ']' * 200000 + '}')" "$T/deep_config.json"
refuse "deep_config.json: JSON nested deeper than the limit of 64 levels" plan --model-config "$T/deep_config.json" \
  --device cpu-core --pp 2 --num-microbatches 2 -o "$T/x.json"
refuse "deep_config.json: JSON nested deeper than the limit of 64 levels" plan --model-config gpt2 \
  --device "$T/deep_config.json" --pp 2 --num-microbatches 2 -o "$T/x.json"
python3 -c "import sys; open(sys.argv[1], 'w').write('{\"traceEvents\": ' + '[' * 200000 + ']' * 200000 + '}')" "$T/deep_trace.json"
refuse "deep_trace.json: JSON nested deeper than the limit of 64 levels" show "$T/deep_trace.json"
# Model sizes beyond any published model (2e9 layers would reserve ~112 GB;
# 2^62 hidden overflows 4 x hidden).
printf '{"model_type": "gpt2", "n_layer": 2000000000, "n_embd": 64, "n_head": 4, "n_positions": 32, "vocab_size": 256}' > "$T/layers.json"
refuse "field 'num_hidden_layers' is 2000000000, above the limit of 100000" plan --model-config "$T/layers.json" \
  --device cpu-core --pp 2 --num-microbatches 2 -o "$T/x.json"
printf '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 4611686018427387904, "intermediate_size": 64, "num_attention_heads": 4, "max_position_embeddings": 32, "vocab_size": 256}' > "$T/hidden.json"
refuse "field 'hidden_size' is 4611686018427387904, above the limit of 1048576" plan --model-config "$T/hidden.json" \
  --device cpu-core --pp 2 --num-microbatches 2 -o "$T/x.json"
# A GPT-2 config's n_embd of 2^62: 4 x hidden (the default n_inner) was
# computed before the limit was checked (signed overflow, stopped by UBSan);
# the limit comes first now, so it is named even when n_positions is missing.
printf '{"model_type": "gpt2", "n_layer": 2, "n_embd": 4611686018427387904, "n_head": 4, "vocab_size": 256}' > "$T/gpt2_hidden.json"
refuse "field 'hidden_size' is 4611686018427387904, above the limit of 1048576" plan --model-config "$T/gpt2_hidden.json" \
  --device cpu-core --pp 2 --num-microbatches 2 -o "$T/x.json"
# An output path that is a directory: named, with the reason.
mkdir -p "$T/outdir"
refuse "cannot write '$T/outdir': it is a directory" schedule --schedule 1f1b --pp 2 --num-microbatches 2 --format json \
  -o "$T/outdir"
# Terminal widths that draw nothing.
refuse -- "--width -5: terminal columns must be in \[40, 100000\]" show "$T/p.json" --width -5
refuse -- "--width 3: terminal columns must be in \[40, 100000\]" show "$T/p.json" --width 3
# --width 0 drew at the terminal's width although the help says 40 or more
# (issue #25): the flag unset takes $COLUMNS; 0 is refused like 3.
refuse -- "--width 0: terminal columns must be in \[40, 100000\] (unset: \$COLUMNS" show "$T/p.json" --width 0
COLUMNS=80 "$PW" show "$T/p.json" > /dev/null || fail "show without --width (the terminal's width) failed"
echo "limits CLI: OK"
