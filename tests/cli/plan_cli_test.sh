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
grep -q '^  why: the smallest makespan_s of [0-9]* feasible candidates' "$T/out1.txt" || fail "no reason the plan won"

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
# Bad flag values: exit 2, the flag and value named, no file.
refuse() {  # refuse CODE PATTERN ARGS...
  local code="$1" pattern="$2"; shift 2
  rm -f "$T/r.json"
  "$PW" plan "$@" -o "$T/r.json" > "$T/rout.txt" 2> "$T/rerr.txt"
  local rc=$?
  [ $rc -eq "$code" ] || fail "plan $*: exit $rc, want $code: $(head -c 600 "$T/rerr.txt")"
  grep -q -- "$pattern" "$T/rerr.txt" || fail "plan $*: no '$pattern' in: $(head -c 600 "$T/rerr.txt")"
  [ ! -e "$T/r.json" ] || fail "plan $*: a plan file was written"
}
G="--model-config gpt2 --device cpu-core --pp 4 --num-microbatches 8 --micro-batch-size 1"
refuse 2 '--micro-batch-size must be >= 1, got 0' --model-config gpt2 --device cpu-core --pp 4 --num-microbatches 8 --micro-batch-size 0
refuse 2 '--num-microbatches must be >= 1, got 0' --model-config gpt2 --device cpu-core --pp 4 --num-microbatches 0
refuse 2 '--seq-length must be >= 1, got 0' $G --seq-length 0
refuse 2 '--first-stage-num-layers must be >= 1, got 0' $G --first-stage-num-layers 0
refuse 2 '--clip-grad-norm -1' $G --clip-grad-norm -1
refuse 2 '--clip-grad-norm nan' $G --clip-grad-norm nan
refuse 2 '--max-virtual-stages must be >= 1, got 0' $G --max-virtual-stages 0
refuse 2 '--max-virtual-stages must be >= 1, got -3' $G --max-virtual-stages -3
refuse 2 '--max-virtual-stages 1: Interleaved 1F1B needs v >= 2' $G --schedule interleaved-1f1b --max-virtual-stages 1
refuse 2 'GPipe needs v in \[1, 1\]' $G --schedule gpipe --num-virtual-stages-per-pipeline-rank 2
refuse 2 'every candidate was refused: .*S = P\*v = 20 stages > 14 layers' $G --num-virtual-stages-per-pipeline-rank 5
grep -q 'smallest P that fits' "$T/rerr.txt" && fail "invalid v blamed on memory: $(head -c 400 "$T/rerr.txt")"
# Data parallel (#13): the batch must divide over the replicas, ZeRO-1 needs replicas, --num-devices alone.
D="--model-config gpt2 --device cpu-core --pp 2 --schedule 1f1b --no-min-pp"
refuse 2 '--global-batch-size 30 is not divisible by --data-parallel-size 4' $D --dp 4 --global-batch-size 30
refuse 2 'not divisible by --micro-batch-size 4 x --data-parallel-size 2 = 8' $D --dp 2 --global-batch-size 20 --micro-batch-size 4
refuse 2 '--use-distributed-optimizer .*needs --data-parallel-size >= 2' $D --num-microbatches 4 --use-distributed-optimizer
refuse 2 '--data-parallel-size must be >= 1, got 0' $D --dp 0 --num-microbatches 4
refuse 2 '--num-devices chooses the split P x D itself' $D --num-devices 4 --num-microbatches 4
refuse 2 'give --pp P' --model-config gpt2 --device cpu-core --num-microbatches 4
"$PW" plan $D --dp 2 --global-batch-size 16 --micro-batch-size 2 --use-distributed-optimizer -o "$T/dp.json" \
  > "$T/dp.txt" || fail "dp plan failed: $(cat "$T/dp.txt")"
grep -q 'data parallel: P=2 x D=2 = 4 devices, global batch 16 sequences' "$T/dp.txt" || fail "no dp summary: $(cat "$T/dp.txt")"
python3 -c "
import json,sys; p=json.load(open('$T/dp.json')); t=p['training']
ok = p['dp_size']==2 and t['distributed_optimizer'] and t['global_batch_size']==16 and t['microbatch_sizes']==[2]*4
ok = ok and all(sum(a.endswith('REDUCE_GRAD') for a in r['actions'])==1 for r in p['ranks'])
sys.exit(0 if ok else 1)" || fail "dp plan fields: $(head -c 600 "$T/dp.json")"
"$PW" validate "$T/dp.json" > /dev/null || fail "validate refuses the dp plan"
"$PW" plan --model-config gpt2 --device cpu-core --num-devices 4 --global-batch-size 16 --micro-batch-size 2 \
  --schedule 1f1b -o "$T/nd.json" > "$T/nd.txt" || fail "--num-devices failed: $(cat "$T/nd.txt")"
grep -q 'splits of 4 devices' "$T/nd.txt" || fail "no split table: $(cat "$T/nd.txt")"
# Model limits: --seq-length beyond n_positions; n_embd not divisible by n_head.
CFG="$(dirname "$0")/../../models/configs/gpt2.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['n_positions']=64; json.dump(c,open(sys.argv[2],'w'))" \
  "$CFG" "$T/np64.json"
refuse 2 '--seq-length 128 is more than the model.s n_positions (64)' --model-config "$T/np64.json" --device cpu-core \
  --pp 4 --num-microbatches 8 --seq-length 128
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['n_embd']=100; c['n_head']=7; json.dump(c,open(sys.argv[2],'w'))" \
  "$CFG" "$T/heads.json"
refuse 2 "field 'n_embd' (100) is not divisible by field 'n_head' (7)" --model-config "$T/heads.json" --device cpu-core \
  --pp 4 --num-microbatches 8
# --max-virtual-stages 1 is honoured by every family (no zb-v v=2).
"$PW" plan $G --max-virtual-stages 1 --no-min-pp --explain -o "$T/v1.json" > "$T/v1.txt" || fail "--max-virtual-stages 1 plan failed"
grep -q '^chosen: .* v=1 ' "$T/v1.txt" || fail "--max-virtual-stages 1 chose v > 1: $(grep chosen "$T/v1.txt")"
grep -q 'zb-v .*--max-virtual-stages 1: ZB-V needs v >= 2' "$T/v1.txt" || fail "no zb-v rejection for --max-virtual-stages 1"
# --profile outside the measured shapes: a warning naming kind, quantity, shape and measured range on
# stderr; a fit predicting a time <= 0 is an error (exit 2) naming --profile and the shape, not a silent 0.
python3 - "$T/prof.json" << 'PY'
import json, sys
def fit(c, feats=("tokens", "one")):
    return {"features": list(feats), "coefficients": c, "points": 9, "tokens_range": [16, 256]}
def kind(i_coef):  # seconds and bytes linear in tokens; I as given
    return {"F": fit([2e-6, 1e-4]), "I": fit(i_coef), "W": fit([2e-6, 5e-5]), "B": fit([4e-6, 2e-4]),
            "activation_bytes": fit([1000.0, 0.0]), "wstash_bytes": fit([512.0, 64.0]), "static_bytes": 1000}
json.dump({"format": "pipewright-profile", "version": 1,
           "model": {"n_layer": 4, "n_embd": 64, "n_head": 4, "n_inner": 256, "n_positions": 4096,
                     "vocab_size": 256},
           "micro_batch_size": 2, "seq_length": 32,
           # The embedding's I (tiny, noisy) slopes down: > 0 up to 2000 tokens, < 0 beyond.
           "fits": {"embedding": kind([-1e-9, 2e-6]), "block": kind([3e-6, 1e-4]), "head": kind([3e-6, 1e-4])}},
          open(sys.argv[1], "w"))
PY
P="--profile $T/prof.json --pp 2 --num-microbatches 4 --schedule 1f1b --no-min-pp"
"$PW" plan $P --micro-batch-size 2 --seq-length 64 -o "$T/p1.json" > /dev/null 2> "$T/p1.err" \
  || fail "plan --profile inside the measured shapes: $(cat "$T/p1.err")"
! grep -q "warning" "$T/p1.err" || fail "plan --profile inside the measured shapes warned: $(cat "$T/p1.err")"
"$PW" plan $P --micro-batch-size 2 --seq-length 512 -o "$T/p2.json" > /dev/null 2> "$T/p2.err" \
  || fail "plan --profile at 1024 tokens (extrapolated, > 0): $(cat "$T/p2.err")"
[ -e "$T/p2.json" ] || fail "plan --profile at 1024 tokens wrote no plan"
for kind in embedding block head; do
  grep -q "^pipewright plan: warning: --profile $T/prof.json: $kind F time, I time, W time, B time, activation bytes, wstash bytes extrapolated to micro-batch size x seq length 2x512 (1024 tokens), outside the measured 16..256 tokens" "$T/p2.err" \
    || fail "no extrapolation warning for $kind in: $(cat "$T/p2.err")"
done
refuse 2 "--profile $T/prof.json: the embedding I time fit predicts -2.096e-06 s at micro-batch size 1 x seq length 4096 (4096 tokens; measured 16..256 tokens)" \
  $P --micro-batch-size 1 --seq-length 4096
grep -q "warning: .*embedding .* 1x4096 (4096 tokens)" "$T/rerr.txt" || fail "no warning before the error: $(cat "$T/rerr.txt")"
# Output a person reads: a summary by default (chosen last, rejections counted
# by kind with one example), every candidate with --explain, the table as JSON
# with --format json.
"$PW" plan --model-config llama-2-7b --device H100-80GB --pp 8 --global-batch-size 128 --seq-length 4096 \
  -o "$T/l7.json" > "$T/l7.txt" || fail "llama-2-7b plan failed"
[ "$(wc -l < "$T/l7.txt")" -le 30 ] || fail "plan summary is $(wc -l < "$T/l7.txt") lines (want <= 30)"
grep -q '^rejected: [0-9]* of [0-9]* candidates' "$T/l7.txt" || fail "no rejection count: $(cat "$T/l7.txt")"
grep -q '^  memory  *[0-9]*, e.g. ' "$T/l7.txt" || fail "no memory rejection example"
grep -q '^next best:' "$T/l7.txt" || fail "no next-best list"
tail -n 4 "$T/l7.txt" | grep -q '^chosen: ' || fail "the chosen plan is not at the bottom: $(tail -n 4 "$T/l7.txt")"
"$PW" plan --model-config llama-2-7b --device H100-80GB --pp 8 --global-batch-size 128 --seq-length 4096 \
  --explain -o "$T/l7.json" > "$T/l7x.txt" || fail "--explain failed"
[ "$(wc -l < "$T/l7x.txt")" -gt 100 ] || fail "--explain did not list every candidate"
"$PW" plan --model-config llama-2-7b --device H100-80GB --pp 8 --global-batch-size 128 --seq-length 4096 \
  --format json -o "$T/l7.json" > "$T/l7.jsonout" || fail "--format json failed"
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert len(t['candidates'])>100 and t['plan_file'] and t['plan_hash'], t.keys()" \
  "$T/l7.jsonout" || fail "--format json is not the candidate table"
# --csv: the chosen plan as torchtitan's compute-only CSV; it reads back (validate)
# to the plan's compute order, and `show --format csv` of the plan prints the same bytes.
"$PW" plan --model-config gpt2 --device A100-40GB --pp 4 --global-batch-size 16 --micro-batch-size 2 \
  --max-virtual-stages 2 --no-min-pp -o "$T/csvplan.json" --csv "$T/csvplan.csv" > "$T/csvout.txt" || fail "plan --csv failed"
grep -q "^wrote $T/csvplan.csv (compute_only PyTorch CSV: 4 rows" "$T/csvout.txt" || fail "plan --csv did not say it wrote the CSV"
[ "$(wc -l < "$T/csvplan.csv")" = 4 ] || fail "plan --csv: not one row per rank"
! grep -q "SEND\|RECV" "$T/csvplan.csv" || fail "plan --csv: compute-only CSV holds messages"
"$PW" validate "$T/csvplan.csv" > /dev/null || fail "plan --csv output does not validate"
"$PW" show "$T/csvplan.json" --format csv > "$T/shown.csv" || fail "show --format csv failed"
cmp -s "$T/shown.csv" "$T/csvplan.csv" || fail "show --format csv differs from plan --csv"
"$PW" show "$T/csvplan.json" --format csv --csv-format compute_comms > "$T/shown_comms.csv" || fail "show compute_comms failed"
grep -q "WAIT_SEND_F" "$T/shown_comms.csv" || fail "show --csv-format compute_comms has no WAIT_SEND_F"
"$PW" validate --strict "$T/shown_comms.csv" > /dev/null 2>&1 || fail "show compute_comms output does not validate"
# Plan accepts, run refuses (issue #25): the shipped GPT-2 configs are HF's,
# with dropout 0.1, and the default dtype is bf16; plan writes the plan and
# says on stderr what `pipewright run` will refuse and what to change. A
# config without the dropout fields says they are absent (HF's default 0.1).
"$PW" plan --model-config gpt2 --device cpu-core --pp 2 --num-microbatches 2 --micro-batch-size 1 --seq-length 32 \
  --schedule 1f1b --no-min-pp -o "$T/note.json" > /dev/null 2> "$T/note.err" || fail "gpt2 plan with notes failed"
grep -q "note: \`pipewright run\` will refuse this plan: the model has dropout (attn_pdrop 0.1, embd_pdrop 0.1, resid_pdrop 0.1)" \
  "$T/note.err" || fail "no dropout note for gpt2: $(cat "$T/note.err")"
grep -q "will refuse this plan: the plan is dtype bf16" "$T/note.err" || fail "no bf16 note: $(cat "$T/note.err")"
printf '{"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 32, "vocab_size": 256}' > "$T/nodrop.json"
"$PW" plan --model-config "$T/nodrop.json" --device cpu-core --pp 2 --num-microbatches 2 --micro-batch-size 1 \
  --dtype fp32 --recompute-granularity none --schedule 1f1b --no-min-pp -o "$T/note2.json" > /dev/null 2> "$T/note2.err" \
  || fail "tiny plan failed"
grep -q "attn_pdrop absent (HF's default 0.1), embd_pdrop absent (HF's default 0.1), resid_pdrop absent" "$T/note2.err" \
  || fail "absent dropout fields not named: $(cat "$T/note2.err")"
printf '{"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 32, "vocab_size": 256, "attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0}' > "$T/runnable.json"
"$PW" plan --model-config "$T/runnable.json" --device cpu-core --pp 2 --num-microbatches 2 --micro-batch-size 1 \
  --dtype fp32 --recompute-granularity none --schedule 1f1b --no-min-pp -o "$T/note3.json" > /dev/null 2> "$T/note3.err" \
  || fail "runnable tiny plan failed"
! grep -q "will refuse" "$T/note3.err" || fail "a runnable plan got a note: $(cat "$T/note3.err")"
# One word, one meaning (issue #25): --dtype is bf16|fp32|fp64 on every
# subcommand (float32/float64, run's old words, are read with a note);
# --virtual-stages is the same flag on plan and schedule; CLI11's errors name
# --pp, the name users type, not its Megatron alias.
"$PW" plan --model-config "$T/runnable.json" --device cpu-core --pp 2 --num-microbatches 2 --micro-batch-size 1 \
  --dtype float64 --recompute-granularity none --schedule interleaved-1f1b --virtual-stages 2 --no-min-pp \
  -o "$T/words.json" > /dev/null 2> "$T/words.err" || fail "plan --dtype float64 --virtual-stages 2 failed: $(cat "$T/words.err")"
grep -q "note: --dtype float64 is read as fp64" "$T/words.err" || fail "no note for --dtype float64: $(cat "$T/words.err")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['training']['dtype']=='fp64' and d['num_stages']==4 else 1)" \
  "$T/words.json" || fail "--dtype float64 --virtual-stages 2 did not plan fp64 with 4 stages"
"$PW" plan --model-config "$T/runnable.json" --device cpu-core --pp 2 --num-microbatches 2 --dtype float16 \
  -o "$T/bad.json" > /dev/null 2> "$T/dtype.err"
[ $? -eq 2 ] || fail "--dtype float16 was not refused"
grep -q "give bf16, fp32 or fp64" "$T/dtype.err" || fail "--dtype error does not list the words: $(cat "$T/dtype.err")"
"$PW" plan --model-config "$T/runnable.json" --device cpu-core --pp two -o "$T/bad.json" > /dev/null 2> "$T/pp.err"
[ $? -eq 2 ] || fail "--pp two was not refused"
grep -q -- "--pp" "$T/pp.err" && ! grep -q -- "--pipeline-model-parallel-size" "$T/pp.err" \
  || fail "the --pp error names the alias: $(cat "$T/pp.err")"
echo "plan CLI: OK"
