#!/usr/bin/env bash
# Tensor-parallel checkpoints through the CLI under real mpirun (issue 23 item
# 6; label mpi). fp64, a GPT-2 with a tied head and a vocabulary that TP2
# pads (300 -> 512 rows): every plan has the same global batch (4 sequences
# of 16 tokens), so any layout trains the same model.
#   ref: TP2 x PP2 (np 4) uninterrupted, 3 steps, --save;
#   TP2 x PP2 saves after 2 steps: the checkpoint holds full tensors (the
#     shapes a T = 1 run writes) and `export` reads it; resumed for step 3
#     under TP1 x PP2 and under TP2 x PP1: parameters and AdamW moments equal
#     ref's (compare_checkpoints.py, worst relative difference <= 1e-10);
#   the export, loaded with --init-from under TP2 x PP1 and TP1 x PP2 (one
#     step at --lr 0): the same parameters, moments and loss;
#   the reverse: TP1 x PP2 saves after 2 steps, TP2 x PP2 resumes;
#   ZeRO-1 under TP (TP2 x PP1 x DP2, np 4): saves its moments joined into the
#     layer files ("optimizer_shards": 1, no shard files), TP1 x PP2 resumes;
#   a T = 1 ZeRO-1 checkpoint (DP2 shard files) resumed under TP2 x PP1;
#   --sample on a TP2 run prints a sample.
# Usage: tp_checkpoint_cli_test.sh PIPEWRIGHT MPIEXEC COMPARE_CHECKPOINTS_PY
set -uo pipefail
pipewright=$1
mpirun=$2
compare=$3
work=$(mktemp -d /tmp/pw-tp-ckpt-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work" || exit 1
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 300, "model_type": "gpt2", "tie_word_embeddings": true, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > model.json
for i in $(seq 1 300); do echo "The quick brown fox jumps over the lazy dog $i."; done > text.txt
common=(--device cpu-core --dtype fp64 --recompute-granularity none --no-min-pp --model-config model.json
        --seq-length 16 --micro-batch-size 1)
plan() {  # plan NAME ARGS...: writes NAME.json
  local name=$1
  shift
  "$pipewright" plan "${common[@]}" "$@" -o "$name.json" > "$name.plan.txt" 2>&1 || { cat "$name.plan.txt"; fail "plan $name: $*"; }
}
plan tp2pp2 --schedule 1f1b --tp 2 --pp 2 --dp 1 --num-microbatches 4
plan tp1pp2 --schedule 1f1b --tp 1 --pp 2 --dp 1 --num-microbatches 4
plan tp2pp1 --schedule 1f1b --tp 2 --pp 1 --dp 1 --num-microbatches 4
plan tp2dp2z --schedule 1f1b --tp 2 --pp 1 --dp 2 --num-microbatches 2 --use-distributed-optimizer
plan dp2z --schedule 1f1b --tp 1 --pp 1 --dp 2 --num-microbatches 2 --use-distributed-optimizer
mpi=("$mpirun" --allow-run-as-root --oversubscribe)
np() { case $1 in tp2pp2 | tp2dp2z) echo 4 ;; *) echo 2 ;; esac; }
run() {  # run PLAN LOG ARGS...
  local p=$1 log=$2
  shift 2
  "${mpi[@]}" -np "$(np "$p")" "$pipewright" run --plan "$p.json" --data text.txt "$@" > "$log" 2>&1 ||
    { cat "$log"; fail "run --plan $p $*"; }
}
worst=0
check() {  # check LABEL DIR [REF]: DIR's state equals REF's (default ref) within 1e-10
  local out
  out=$(python3 "$compare" "${3:-ref}" "$2" 1e-10) || { echo "$out"; fail "$1: differs from ${3:-the uninterrupted run}"; }
  echo "$1: $out"
  local w
  w=$(sed -n 's/^worst relative difference \([0-9.e+-]*\) .*/\1/p' <<< "$out")
  worst=$(awk -v a="$worst" -v b="$w" 'BEGIN { print (b + 0 > a + 0 ? b : a) }')
}
run tp2pp2 ref.txt --steps 3 --save ref
run tp2pp2 save.txt --steps 2 --checkpoint-dir ck
grep '^checkpoint' save.txt
grep -q '"tp_size": 2' ck/step_000002/manifest.json || fail "manifest lacks written_by.tp_size 2"
# Full tensors: the vocab-parallel table has the model's 300 rows, the fused
# q;k;v its 3 x 16 rows.
python3 - ck/step_000002 << 'EOF' || fail "the TP checkpoint does not hold full tensors"
import json, struct, sys
def header(p):
    with open(p, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))
e = header(sys.argv[1] + "/embedding.safetensors")
b = header(sys.argv[1] + "/block.0.safetensors")
assert e["embedding.wte"]["shape"] == [300, 16], e["embedding.wte"]
assert e["embedding.wte:exp_avg"]["shape"] == [300, 16]
assert b["block.0.attn_qkv.weight"]["shape"] == [48, 16], b["block.0.attn_qkv.weight"]
assert b["block.0.attn_proj.weight:exp_avg_sq"]["shape"] == [16, 16]
print("full tensors: embedding.wte [300, 16], block.0.attn_qkv.weight [48, 16]")
EOF
"$pipewright" export --checkpoint ck -o hf > export.txt 2>&1 || { cat export.txt; fail "export of a TP checkpoint"; }
grep -q '"model_type": "gpt2"' hf/config.json || fail "export config"
# --init-from of that HF directory (GPT-2: Conv1D transposed, the fused c_attn
# cut as q;k;v blocks, the vocab-parallel wte padded) under TP2 x PP1 and
# under TP1 x PP2, one step at --lr 0: the same parameters and moments.
run tp2pp1 hf_tp2.txt --steps 1 --lr 0 --init-from hf --save hf_tp2
run tp1pp2 hf_tp1.txt --steps 1 --lr 0 --init-from hf --save hf_tp1
check "--init-from HF: TP2 x PP1 vs TP1 x PP2" hf_tp2 hf_tp1
l2=$(sed -n 's/^step 1\/1 | loss \([0-9.]*\) .*/\1/p' hf_tp2.txt)
l1=$(sed -n 's/^step 1\/1 | loss \([0-9.]*\) .*/\1/p' hf_tp1.txt)
[[ -n $l1 && $l1 == "$l2" ]] || fail "--init-from HF: first-step loss TP2 '$l2', TP1 '$l1'"
echo "--init-from HF: first-step loss $l2 under TP2 and TP1"
for p in tp1pp2 tp2pp1; do
  run "$p" "resume_$p.txt" --steps 3 --resume ck --save "resumed_$p"
  check "TP2 x PP2 -> $p" "resumed_$p"
done
# The reverse: saved under T = 1, resumed under TP2.
run tp1pp2 save1.txt --steps 2 --checkpoint-dir ck1
run tp2pp2 resume1.txt --steps 3 --resume ck1 --save resumed_from_t1
check "tp1pp2 -> TP2 x PP2" resumed_from_t1
# ZeRO-1 under TP: the moments joined into the layer files.
run tp2dp2z savez.txt --steps 2 --checkpoint-dir ckz
grep -q '"optimizer_shards": 1' ckz/step_000002/manifest.json || fail "TP ZeRO-1 manifest: optimizer_shards is not 1"
ls ckz/step_000002 | grep -q adamw_shard && fail "TP ZeRO-1 wrote shard files"
run tp1pp2 resumez.txt --steps 3 --resume ckz --save resumed_z
check "TP2 x DP2 ZeRO-1 -> tp1pp2" resumed_z
run tp2dp2z resumezz.txt --steps 3 --resume ck --save resumed_zz
check "TP2 x PP2 -> TP2 x DP2 ZeRO-1" resumed_zz
# A T = 1 ZeRO-1 checkpoint (shard files), resumed under TP2.
run dp2z saved.txt --steps 2 --checkpoint-dir ckd
ls ckd/step_000002 | grep -q adamw_shard || fail "T = 1 ZeRO-1 wrote no shard files"
run tp2pp1 resumed.txt --steps 3 --resume ckd --save resumed_d
check "DP2 ZeRO-1 (shard files) -> tp2pp1" resumed_d
# --sample reads the data's bytes as tokens: a byte-level (256-token) model
# of the same shape, so no tokenizer is needed.
sed 's/"vocab_size": 300/"vocab_size": 256/' model.json > model256.json
common=("${common[@]/model.json/model256.json}")
plan tp2pp1 --schedule 1f1b --tp 2 --pp 1 --dp 1 --num-microbatches 4
run tp2pp1 sample.txt --steps 1 --sample 8
grep -q -- '--- sample' sample.txt || { cat sample.txt; fail "no sample printed"; }
echo "PASS worst relative difference $worst (tolerance 1e-10)"
