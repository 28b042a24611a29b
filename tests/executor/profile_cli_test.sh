#!/usr/bin/env bash
# `pipewright profile` smoke test (seconds): measure a tiny GPT in one
# process, check the fits and the file, plan from it with `plan --profile`,
# refuse a bad shape naming the flag; then under `mpirun -np 2` the P2P link
# is measured and fitted too, and the tensor-parallel collectives of 2 ranks,
# which plan --tp 2 --profile uses.
# Usage: profile_cli_test.sh <pipewright> <mpirun>
set -euo pipefail
pw=$1 mpirun=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '{"n_layer": 2, "n_embd": 32, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model.json"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

"$pw" profile --model-config "$work/model.json" --micro-batch-sizes 1,2 --seq-lengths 8,16 --warmup 1 \
  --repetitions 3 -o "$work/profile.json" > "$work/out.txt" || fail "profile failed: $(tail -5 "$work/out.txt")"
grep -q '^block .*F (s)' "$work/out.txt" || fail "no block F fit printed"
grep -q '^head .*wstash' "$work/out.txt" || fail "no head wstash fit printed"
python3 - "$work/profile.json" << 'PY' || fail "profile file content"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "pipewright-profile", p["format"]
assert set(p["fits"]) == {"embedding", "block", "head"}, p["fits"].keys()
assert len(p["samples"]) == 3 * 4, len(p["samples"])
for s in p["samples"]:
    assert s["F"] > 0 and s["I"] > 0 and s["W"] > 0 and s["B"] > 0, s
    assert s["activation_bytes"] > 0, s
assert len(p["layers"]) == 4 and p["layers"][1]["kind"] == "block"
assert p["fits"]["block"]["static_bytes"] > 0
PY

"$pw" plan --profile "$work/profile.json" --pp 2 --num-microbatches 4 --micro-batch-size 2 --seq-length 16 \
  --schedule 1f1b,zb-h1 --no-min-pp -o "$work/plan.json" > "$work/plan.txt" || fail "plan --profile: $(cat "$work/plan.txt")"
grep -q '^chosen: ' "$work/plan.txt" || fail "no chosen plan"
grep -q '"hidden_size": 32' "$work/plan.json" || fail "plan lacks the profiled model (typed model section)"
# The profile measured float32: its plan says fp32 (the executor refuses bf16 plans).
grep -q '"dtype": "fp32"' "$work/plan.json" || fail "plan --profile does not record dtype fp32"

# A bad shape is refused, naming the flag (exit 2).
set +e
"$pw" profile --model-config "$work/model.json" --seq-lengths 64 -o "$work/bad.json" > /dev/null 2> "$work/err.txt"
rc=$?
set -e
[ $rc -eq 2 ] || fail "bad --seq-lengths: exit $rc, want 2"
grep -q -- '--seq-lengths' "$work/err.txt" || fail "error does not name --seq-lengths: $(cat "$work/err.txt")"
[ ! -e "$work/bad.json" ] || fail "file written on error"
# Requests that cannot be fitted, or written, are refused before measuring (exit 2).
for args in "--micro-batch-sizes 2 --seq-lengths 8" "-o $work/nodir/p.json"; do
  set +e
  "$pw" profile --model-config "$work/model.json" $args > /dev/null 2> "$work/err.txt"
  rc=$?
  set -e
  [ $rc -eq 2 ] || fail "profile $args: exit $rc, want 2"
  grep -qE -- '--micro-batch-sizes|-o/--output' "$work/err.txt" || fail "profile $args: $(cat "$work/err.txt")"
done

# Two ranks: the link is measured and fitted.
"$mpirun" --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
  "$pw" profile --model-config "$work/model.json" --micro-batch-sizes 1,2 --seq-lengths 8,16 --warmup 1 \
  --repetitions 2 --p2p-bytes 1024,65536,1048576 --p2p-repetitions 5 -o "$work/p2.json" > "$work/p2.txt" \
  || fail "mpirun profile: $(tail -5 "$work/p2.txt")"
grep -q '^comm model: latency' "$work/p2.txt" || fail "no comm model under mpirun"
python3 -c "import json,sys; c=json.load(open('$work/p2.json'))['comm']; sys.exit(0 if c['latency_s']>=0 and len(c['samples'])==3 else 1)" \
  || fail "comm samples/fit missing"
# Both ranks measured the layers at once and their samples were pooled:
# 2 ranks x 2 timed rounds x 4 microbatches in flight = 16 per shape; rank 0
# alone printed the 3 kinds x 4 shapes.
grep -q '^layers measured on 2 ranks at once (medians over 16 samples per shape and pass)' "$work/p2.txt" \
  || fail "layers not measured on both ranks: $(grep -m1 '^layers' "$work/p2.txt")"
[ "$(grep -cE '^block +b=' "$work/p2.txt")" -eq 4 ] || fail "block sample lines printed $(grep -cE '^block +b=' "$work/p2.txt") times, want 4"
python3 -c "import json,sys; s=json.load(open('$work/p2.json'))['setup']; sys.exit(0 if s['ranks_measuring_layers']==2 else 1)" \
  || fail "setup.ranks_measuring_layers is not 2"
# The tensor-parallel collectives of 2 ranks were measured and fitted, and
# plan --tp 2 --profile costs its TP collectives with them (issue 23 item 8):
# the plan's block F is the profile's whole-block F scaled to a TP rank plus
# the measured all-gather + reduce-scatter (sequence parallel).
grep -qE '^all-reduce over 2 ranks: latency' "$work/p2.txt" || fail "no all-reduce fit under mpirun"
python3 -c "import json,sys; c=json.load(open('$work/p2.json'))['collectives']; k={(s['kind'],s['ranks']) for s in c['samples']}; sys.exit(0 if k=={('all-reduce',2),('reduce-scatter',2),('all-gather',2)} and len(c['fits'])==3 else 1)" \
  || fail "collective samples/fits missing"
"$pw" plan --profile "$work/p2.json" --tp 2 --pp 1 --num-microbatches 2 --micro-batch-size 2 --seq-length 16 \
  --schedule 1f1b --no-min-pp -o "$work/tp2.json" > "$work/tp2.txt" || fail "plan --tp 2 --profile: $(cat "$work/tp2.txt")"
grep -q '"tp_size": 2' "$work/tp2.json" || fail "plan --tp 2 --profile: tp_size is not 2"
# profile --tp 2: the layers measured as TP shards (collectives inside); the
# plan takes them as they are, for that layout only.
"$mpirun" --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
  "$pw" profile --tp 2 --model-config "$work/model.json" --micro-batch-sizes 1,2 --seq-lengths 8,16 --warmup 1 \
  --repetitions 2 --p2p-bytes 1024,65536 --p2p-repetitions 3 -o "$work/ptp.json" > "$work/ptp.txt" \
  || fail "mpirun profile --tp 2: $(tail -5 "$work/ptp.txt")"
python3 -c "import json,sys; s=json.load(open('$work/ptp.json'))['setup']; sys.exit(0 if s['tp_size']==2 and s['sequence_parallel'] else 1)" \
  || fail "profile --tp 2: setup lacks tp_size 2 / sequence_parallel"
"$pw" plan --profile "$work/ptp.json" --tp 2 --pp 1 --num-microbatches 2 --micro-batch-size 2 --seq-length 16 \
  --schedule 1f1b --no-min-pp -o "$work/tp2m.json" > "$work/tp2m.txt" || fail "plan --tp 2 from a TP profile: $(cat "$work/tp2m.txt")"
set +e
"$pw" plan --profile "$work/ptp.json" --tp 1 --pp 1 --num-microbatches 2 --micro-batch-size 2 --seq-length 16 \
  --schedule 1f1b --no-min-pp -o "$work/bad.json" > "$work/tp1m.txt" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -q 'measured with --tp 2' "$work/tp1m.txt" || fail "a --tp 2 profile planned at --tp 1: exit $rc, $(cat "$work/tp1m.txt")"
# --solo: rank 0 alone.
"$mpirun" --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
  "$pw" profile --model-config "$work/model.json" --micro-batch-sizes 1,2 --seq-lengths 8,16 --warmup 1 \
  --repetitions 2 --p2p-bytes 1024,65536 --p2p-repetitions 3 --solo -o "$work/p3.json" > "$work/p3.txt" \
  || fail "mpirun profile --solo: $(tail -5 "$work/p3.txt")"
! grep -q '^layers measured on' "$work/p3.txt" || fail "--solo measured on several ranks"
python3 -c "import json,sys; s=json.load(open('$work/p3.json'))['setup']; sys.exit(0 if s['ranks_measuring_layers']==1 else 1)" \
  || fail "--solo: setup.ranks_measuring_layers is not 1"
# Under mpirun a bad --model-config stops every rank (none waits for rank 0).
set +e
timeout 60 "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$pw" profile --model-config "$work/missing.json" \
  -o "$work/bad2.json" > /dev/null 2> "$work/err2.txt"
rc=$?
set -e
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun profile with a missing --model-config: exit $rc (124 = hung)"
grep -q -- '--model-config' "$work/err2.txt" || fail "error does not name --model-config: $(cat "$work/err2.txt")"
echo "profile CLI: OK"
