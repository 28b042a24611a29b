#!/usr/bin/env bash
# End-to-end: write a plan with pipewright plan, train 3 steps under
# `mpirun -np 2 pipewright run`, then `pipewright generate` from the saved
# checkpoint (--save and --checkpoint-dir: one form); also `run` with the wrong -np must refuse before computing.
# Usage: run_cli_test.sh <pipewright> <pipewright> <mpirun> (the first writes the plans)
set -euo pipefail
make_plan=$1 pipewright=$2 mpirun=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model.json"
for i in $(seq 1 200); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule zb-h1 --pp 2 --num-microbatches 3 --model-config "$work/model.json" --seq-length 16 \
  --micro-batch-size 2 -o "$work/plan.json"
mpi=("$mpirun" --allow-run-as-root --oversubscribe)
"${mpi[@]}" -np 2 "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 3 \
  --save "$work/ckpt" --checkpoint-dir "$work/root" | tee "$work/out.txt"
grep -q "^step 3/3 | loss" "$work/out.txt"
# MFU: the plan holds its device; the step line's MFU is its model FLOP/s per
# rank over that device's peak_flops (and the summary line has the mean).
python3 - "$work/plan.json" "$work/out.txt" <<'PY'
import json, re, sys
peak = json.load(open(sys.argv[1]))["device"]["peak_flops"]
text = open(sys.argv[2]).read()
m = re.search(r"^step 3/3 .*\| ([0-9.e+-]+) GFLOP/s/rank \| MFU ([0-9.]+) % \|", text, re.M)
assert m, "no 'GFLOP/s/rank | MFU x %' in the step line:\n" + text
gflops, mfu = float(m.group(1)), float(m.group(2))
want = 100 * gflops * 1e9 / peak
assert abs(mfu - want) <= 0.01 + 1e-3 * want, f"MFU {mfu} % but {gflops} GFLOP/s over {peak} FLOP/s is {want:.4f} %"
assert re.search(r"^done: .*\| MFU [0-9.]+ %$", text, re.M), "no MFU in the done line"
print(f"MFU {mfu} % = {gflops} GFLOP/s/rank / {peak/1e9:g} GFLOP/s (worst difference {abs(mfu-want):.2g})")
PY
"$pipewright" generate --plan "$work/plan.json" --checkpoint "$work/ckpt" --tokens 20 --prompt "The " \
  | tee "$work/gen.txt"
grep -q "^The " "$work/gen.txt"
# One checkpoint form: --save DIR and --checkpoint-dir ROOT (its latest step)
# hold the same model; generate needs no plan (the manifest has the model).
"$pipewright" generate --checkpoint "$work/root" --tokens 20 --prompt "The " > "$work/gen_root.txt"
cmp "$work/gen.txt" "$work/gen_root.txt" || { echo "FAIL: --save and --checkpoint-dir generate differently"; exit 1; }
[ -f "$work/ckpt/manifest.json" ] && [ -f "$work/ckpt/block.1.safetensors" ] || { ls "$work/ckpt"; echo "FAIL: --save form"; exit 1; }
if "${mpi[@]}" -np 3 "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 1 \
     > "$work/wrong.txt" 2>&1; then
  echo "FAIL: run with -np 3 on a pp_size=2 plan succeeded"; exit 1
fi
grep -q "pp_size=2" "$work/wrong.txt" || { cat "$work/wrong.txt"; echo "FAIL: no pp_size in the refusal"; exit 1; }

# expect_fail WANT_RC PATTERN CMD...: CMD must exit with WANT_RC ("nonzero":
# any failure but a timeout) within 60 s, and its output must contain PATTERN.
expect_fail() {
  local want=$1 pattern=$2 rc=0
  shift 2
  timeout 60 "$@" > "$work/fail.txt" 2>&1 || rc=$?
  if [ "$rc" = 124 ]; then cat "$work/fail.txt"; echo "FAIL: hung (timeout 60 s): $*"; exit 1; fi
  if [ "$want" = nonzero ]; then
    [ "$rc" != 0 ] || { cat "$work/fail.txt"; echo "FAIL: exit 0: $*"; exit 1; }
  elif [ "$rc" != "$want" ]; then
    cat "$work/fail.txt"; echo "FAIL: exit $rc, want $want: $*"; exit 1
  fi
  grep -qF -- "$pattern" "$work/fail.txt" || { cat "$work/fail.txt"; echo "FAIL: no '$pattern' in: $*"; exit 1; }
}
run2=("${mpi[@]}" -np 2 "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" --steps 2)
# 1. Optimizer options: refused before anything starts, naming the flag.
expect_fail 2 "--lr nan" "${run2[@]}" --lr nan
expect_fail 2 "--lr -1" "${run2[@]}" --lr -1
expect_fail 2 "--adam-beta2 2" "${run2[@]}" --adam-beta2 2
expect_fail 2 "--weight-decay -1" "${run2[@]}" --weight-decay -1
expect_fail 2 "--clip-grad-norm -2" "${run2[@]}" --clip-grad-norm -2
# 2. Other options: refused at startup on every rank (no rank left waiting).
expect_fail 2 "--temperature 0" "${run2[@]}" --sample 20 --temperature 0
expect_fail 2 "--sample -1" "${run2[@]}" --sample -1
expect_fail 2 "--trace-step 5" "${run2[@]}" --trace "$work/t.json" --trace-step 5
# Output places are checked before training: nothing trained, nothing saved.
expect_fail 2 "--trace $work/nodir/t.json: its directory" "${run2[@]}" --trace "$work/nodir/t.json" --save "$work/s1"
[ ! -e "$work/s1" ] || { echo "FAIL: --save written although --trace was refused"; exit 1; }
grep -q "^step " "$work/fail.txt" && { echo "FAIL: trained before refusing --trace"; exit 1; }
expect_fail 2 "--save $work/text.txt: exists and is not a directory" "${run2[@]}" --save "$work/text.txt"
# Places where nothing can be created (issue 16: these trained every step,
# or one, and then failed): refused before step 1.
for place in "--save /proc/x" "--save /sys/x" "--trace /proc/t.json" "--trace /sys/t.json" \
             "--checkpoint-dir /proc/x --checkpoint-every 1"; do
  # shellcheck disable=SC2086
  expect_fail 2 "${place%% --checkpoint-every*}: cannot create a" "${run2[@]}" $place
  grep -q "^step " "$work/fail.txt" && { cat "$work/fail.txt"; echo "FAIL: trained before refusing $place"; exit 1; }
done
# Tokens are bytes: a plan whose model has vocab_size < 256 is refused up front.
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 128, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/v128.json"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 --num-microbatches 2 --model-config "$work/v128.json" --seq-length 16 \
  --micro-batch-size 2 -o "$work/v128.plan.json"
# --data must be a regular file: /dev/zero never ends, a directory reads as nothing.
expect_fail 2 "--data /dev/zero: not a regular file" "${mpi[@]}" -np 2 "$pipewright" run --plan "$work/plan.json" \
  --data /dev/zero --steps 1
expect_fail 2 "--data $work: is a directory" "${mpi[@]}" -np 2 "$pipewright" run --plan "$work/plan.json" \
  --data "$work" --steps 1
expect_fail 2 "vocab_size >= 256" "${mpi[@]}" -np 2 "$pipewright" run --plan "$work/v128.plan.json" \
  --data "$work/text.txt" --steps 1
# A bad command line exits 2 like every other bad input (CLI11's own codes were 104-114).
expect_fail 2 "--pp = abc" "$pipewright" schedule --schedule 1f1b --pp abc --num-microbatches 2
expect_fail 2 "--warmup-steps -1" "${run2[@]}" --warmup-steps -1
expect_fail 2 "--checkpoint-every -1" "${run2[@]}" --checkpoint-every -1
expect_fail 2 "--log-every -1" "${run2[@]}" --log-every -1
expect_fail 2 "--watchdog-s -1" "${run2[@]}" --watchdog-s -1
# 3. generate: bad --tokens; a plan of another model is refused naming the field.
expect_fail 2 "--tokens -3" "$pipewright" generate --plan "$work/plan.json" --checkpoint "$work/ckpt" --tokens -3
printf '{"n_layer": 4, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model4.json"
"$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule zb-h1 --pp 2 --num-microbatches 3 --model-config "$work/model4.json" --seq-length 16 \
  --micro-batch-size 2 -o "$work/other.json" > /dev/null
expect_fail 2 "checkpoint $work/ckpt: field 'n_layer' is 2 but the plan's model has 4" \
  "$pipewright" generate --plan "$work/other.json" --checkpoint "$work/ckpt" --tokens 5
# 4. A diverging run stops with an error naming the step, on every rank.
expect_fail nonzero "non-finite loss" "${run2[@]}" --lr 1e30 --warmup-steps 0
grep -q "at step [0-9]" "$work/fail.txt" || { cat "$work/fail.txt"; echo "FAIL: no step in the loss error"; exit 1; }
if grep -q "^done:" "$work/fail.txt"; then cat "$work/fail.txt"; echo "FAIL: diverged run reported done"; exit 1; fi
# Issue #25. generate writes control bytes as \xHH, never raw (an escape
# sequence in the prompt is echoed in the output).
"$pipewright" generate --checkpoint "$work/ckpt" --tokens 3 --prompt $'\e[31mRed' > "$work/ctl.txt"
grep -qF '\x1B[31mRed' "$work/ctl.txt" || { cat -v "$work/ctl.txt"; echo "FAIL: the ESC byte is not written as \\x1B"; exit 1; }
if LC_ALL=C grep -q $'\e' "$work/ctl.txt"; then echo "FAIL: generate printed a raw ESC byte"; exit 1; fi
# A cut-off manifest.json is named as such, not as "not a JSON object".
cp -r "$work/ckpt" "$work/cut"
head -c 40 "$work/ckpt/manifest.json" > "$work/cut/manifest.json"
expect_fail 2 "manifest.json: not valid JSON (truncated or corrupt file?)" "$pipewright" generate --checkpoint "$work/cut"
# run takes the dtype from the plan: an fp64 plan trains without --dtype (it
# failed unless the user repeated --dtype float64); a --dtype that is not the
# plan's is refused, naming both; the old word float64 is read as fp64.
"$pipewright" plan --device cpu-core --dtype fp64 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --num-microbatches 2 --model-config "$work/model.json" --seq-length 16 --micro-batch-size 1 -o "$work/p64.json" > /dev/null
"${mpi[@]}" -np 2 "$pipewright" run --plan "$work/p64.json" --data "$work/text.txt" --steps 1 > "$work/r64.txt" 2>&1 \
  || { cat "$work/r64.txt"; echo "FAIL: an fp64 plan did not train without --dtype"; exit 1; }
expect_fail 2 "--dtype fp32: the plan $work/p64.json says training.dtype fp64" \
  "${mpi[@]}" -np 2 "$pipewright" run --plan "$work/p64.json" --data "$work/text.txt" --steps 1 --dtype fp32
"${mpi[@]}" -np 2 "$pipewright" run --plan "$work/p64.json" --data "$work/text.txt" --steps 1 --dtype float64 \
  > "$work/r64b.txt" 2>&1 || { cat "$work/r64b.txt"; echo "FAIL: --dtype float64 on an fp64 plan"; exit 1; }
grep -q "note: --dtype float64 is read as fp64" "$work/r64b.txt" || { cat "$work/r64b.txt"; echo "FAIL: no note for float64"; exit 1; }
# A truncated layer file: generate names it.
truncate -s -10 "$work/ckpt/head.safetensors"
expect_fail 2 "checkpoint file $work/ckpt/head.safetensors is truncated" "$pipewright" generate --checkpoint "$work/ckpt"
echo "OK"
