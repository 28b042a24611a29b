#!/bin/bash
# `pipewright plan` as a user runs it: exit codes, the refusal messages name
# the flags, no file on error, byte-identical output for the same inputs.
# Usage: plan_cli_test.sh PATH/TO/pipewright
set -u
PW="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PW" plan --model-config gpt2 --device A100-40GB --pp 4 --global-batch-size 16 --micro-batch-size 2 \
  --max-virtual-stages 2 --no-min-pp -o "$T/a.json" > "$T/out1.txt" || fail "gpt2 plan failed: $(cat "$T/out1.txt")"
"$PW" plan --model-config gpt2 --device A100-40GB --pp 4 --global-batch-size 16 --micro-batch-size 2 \
  --max-virtual-stages 2 --no-min-pp -o "$T/b.json" > /dev/null || fail "second run failed"
cmp -s "$T/a.json" "$T/b.json" || fail "same inputs gave different plan files"
grep -q '^chosen: ' "$T/out1.txt" || fail "no 'chosen:' line"
grep -q 'rejected\|^1\* ' "$T/out1.txt" || fail "no candidate table"

# Infeasible: exit 3, names the smallest P, writes nothing.
"$PW" plan --model-config llama-2-70b --device A100-40GB --pp 4 --seq-length 4096 --global-batch-size 16 \
  --micro-batch-size 1 --schedule 1f1b -o "$T/c.json" > /dev/null 2> "$T/err.txt"
rc=$?
[ $rc -eq 3 ] || fail "infeasible request: exit $rc, want 3"
grep -q 'smallest P that fits' "$T/err.txt" || fail "no smallest P in: $(head -c 400 "$T/err.txt")"
[ ! -e "$T/c.json" ] || fail "a plan file was written for an infeasible request"

# Flag errors: exit 2 and the flag named.
"$PW" plan --model-config gpt2 --device A100-40GB --pp 4 --global-batch-size 30 --micro-batch-size 4 \
  -o "$T/d.json" 2> "$T/err2.txt" > /dev/null
[ $? -eq 2 ] || fail "indivisible batch: want exit 2"
grep -q -- '--micro-batch-size 4' "$T/err2.txt" || fail "batch error does not name the flag: $(cat "$T/err2.txt")"
"$PW" plan --model-config gpt2 --device A100-40GB --pp 4 --num-microbatches 8 --first-stage-num-layers 10 \
  --last-stage-num-layers 10 -o "$T/e.json" 2> "$T/err3.txt" > /dev/null
[ $? -eq 2 ] || fail "bad overrides: want exit 2"
grep -q -- '--first-stage-num-layers 10' "$T/err3.txt" || fail "override error does not name the flag"
[ ! -e "$T/e.json" ] || fail "file written on error"

# Unequal microbatches are recorded.
"$PW" plan --model-config gpt2 --device A100-40GB --pp 4 --global-batch-size 30 --num-microbatches 4 \
  --schedule 1f1b --no-min-pp -o "$T/f.json" > /dev/null || fail "unequal microbatches refused"
grep -q '"microbatch_sizes"' "$T/f.json" || fail "no microbatch_sizes"
python3 -c "import json,sys; t=json.load(open('$T/f.json'))['training']; sys.exit(0 if t['microbatch_sizes']==[8,8,7,7] else 1)" \
  || fail "microbatch_sizes not [8,8,7,7]"
echo "plan CLI: OK"
