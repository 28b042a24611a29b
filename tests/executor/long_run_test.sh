#!/usr/bin/env bash
# Long-run features of `pipewright run` under real mpirun (CPU, P=2):
#  1. resume bit-identity: 4 steps straight vs 2 steps + checkpoint + resume
#     for 2 more; every rank's parameters after step 4 must be bit-identical
#     (digest over the raw bits). 1b: the same run launched as torchrun does
#     (TCP communicator) gives the same bits too.
#  2. resume under another plan (fp64, tied head, P=2 1F1B -> P=3 ZB-V): the
#     same state after the load and after 2 more steps; another model and a
#     truncated layer file are refused with the reason, before any step.
#  3. --trace: the measured trace has every action of every rank exactly
#     once, SEND/RECV flows pair up, and `pipewright show` draws it, alone
#     and against the plan.
#  4. --clip-grad-norm is refused on a plan without a global barrier and
#     runs on one made with --clip-grad-norm.
# Usage: long_run_test.sh <pipewright> <pipewright> <mpirun> (the first writes the plans)
set -euo pipefail
make_plan=$1 pipewright=$2 mpirun=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{"n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/model.json"
for i in $(seq 1 300); do echo "The quick brown fox jumps over the lazy dog $i."; done > "$work/text.txt"
plan() {  # plan <schedule> <out> [extra args]
  local schedule=$1 out=$2; shift 2
  "$pipewright" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule "$schedule" --pp 2 --num-microbatches 4 --model-config "$work/model.json" --seq-length 16 \
    --micro-batch-size 2 -o "$out" "$@" > /dev/null
}
plan zb-h1 "$work/plan.json"
plan 1f1b "$work/other.json"
mpi=("$mpirun" --allow-run-as-root --oversubscribe -np 2)
run=("${mpi[@]}" "$pipewright" run --data "$work/text.txt" --seed 7 --log-every 100)
fail() { echo "FAIL: $*"; exit 1; }

echo "== 1. resume is bit-identical"
"${run[@]}" --plan "$work/plan.json" --steps 4 --checkpoint-dir "$work/straight" --checkpoint-every 4 \
  | tee "$work/straight.txt"
"${run[@]}" --plan "$work/plan.json" --steps 4 --checkpoint-dir "$work/part" --checkpoint-every 2 \
  > /dev/null  # writes step_000002 and step_000004
rm -rf "$work/part/step_000004"
"${run[@]}" --plan "$work/plan.json" --steps 4 --checkpoint-dir "$work/resumed" --checkpoint-every 2 \
  --resume "$work/part" | tee "$work/resumed.txt"
grep -q "resumed from $work/part/step_000002 after step 2" "$work/resumed.txt" || fail "no resume line"
# Compare the bit-exact parameter digest every rank prints.
digest() { grep '^parameters fnv1a64:' "$1" || fail "no parameter digest in $1"; }
[[ $(digest "$work/straight.txt") == "$(digest "$work/resumed.txt")" ]] \
  || fail "resumed run's parameters differ from the uninterrupted run: $(digest "$work/straight.txt") vs $(digest "$work/resumed.txt")"
[[ -f $work/straight/step_000004/manifest.json ]] || fail "no manifest"
grep -q '"digest"' "$work/straight/step_000004/manifest.json" || fail "manifest has no file digests"

echo "== 1b. torchrun launch (TCP communicator, no MPI) trains the same bits"
launch_dir=$(cd "$(dirname "$0")/../../launch" && pwd)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PW_TORCHRUN_EMULATE=1 "$launch_dir/torchrun.sh" --nproc-per-node 2 --master-port "$port" -- \
  "$pipewright" run --data "$work/text.txt" --seed 7 --log-every 100 --plan "$work/plan.json" --steps 4 \
  --checkpoint-dir "$work/tcp" --checkpoint-every 4 | tee "$work/tcp.txt"
[[ $(digest "$work/straight.txt") == "$(digest "$work/tcp.txt")" ]] \
  || fail "the torchrun (TCP) run's parameters differ from the mpirun run's"
# --comm nccl under torchrun bootstraps NCCL through the same rendezvous
# (docs/LAUNCH.md); without a GPU every rank refuses before it, naming why.
if ! nvidia-smi -L > /dev/null 2>&1; then
  if PW_TORCHRUN_EMULATE=1 timeout 60 "$launch_dir/torchrun.sh" --nproc-per-node 2 --master-port "$port" -- \
       "$pipewright" run --data "$work/text.txt" --plan "$work/plan.json" --steps 1 --device cuda --comm nccl \
       > "$work/tcp-nccl.txt" 2>&1; then fail "--comm nccl under torchrun ran without a GPU"; fi
  grep -q "built without NCCL" "$work/tcp-nccl.txt" || for r in 0 1; do
    grep -q "^pipewright run: invalid argument: --comm nccl: rank $r sees no CUDA device (cudaGetDeviceCount: " \
      "$work/tcp-nccl.txt" || { cat "$work/tcp-nccl.txt"; fail "no clear refusal of --comm nccl on rank $r"; }
  done
fi
if "$launch_dir/mpirun.sh" -np 3 -- "$pipewright" run --plan "$work/plan.json" --data "$work/text.txt" \
     > "$work/np3.txt" 2>&1; then fail "mpirun.sh -np 3 on a pp_size=2 plan ran"; fi
grep -q "pp_size=2" "$work/np3.txt" || { cat "$work/np3.txt"; fail "no pp_size in the launcher refusal"; }

echo "== 2. resume under another plan (fp64, tied head): P=2 1F1B -> P=3 ZB-V"
# Checkpoints are keyed by layer: the P=3 run loads the layers of its six
# stages from the P=2 run's files. The digest (every parameter and AdamW state
# tensor, by name, over all ranks) printed after the load must be the one the
# P=2 run printed when it wrote step 2, and after step 4 both runs' states
# (and their losses) must be the same.
printf '{"n_layer": 4, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": true, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' > "$work/tied.json"
plan64() {  # plan64 <schedule> <pp> <out>
  "$pipewright" plan --device cpu-core --dtype fp64 --recompute-granularity none --no-min-pp --schedule "$1" --pp "$2" \
    --num-microbatches 4 --model-config "$work/tied.json" --seq-length 16 --micro-batch-size 2 -o "$3" > /dev/null
}
plan64 1f1b 2 "$work/p2.json"
plan64 zb-v 3 "$work/p3.json"
run64=("$pipewright" run --data "$work/text.txt" --seed 7 --dtype float64 --steps 4)
"${mpi[@]}" "${run64[@]}" --plan "$work/p2.json" --checkpoint-dir "$work/a" --checkpoint-every 2 > "$work/a.txt"
"$mpirun" --allow-run-as-root --oversubscribe -np 3 "${run64[@]}" --plan "$work/p3.json" --resume "$work/a/step_000002" \
  --checkpoint-dir "$work/b" --checkpoint-every 2 > "$work/b.txt"
field() { grep -F "$2" "$1" | grep -oE '[0-9a-f]{16}$' | head -1; }  # field <file> <line start>: its digest
written=$(field "$work/a.txt" "checkpoint $work/a/step_000002 ")
loaded=$(field "$work/b.txt" "loaded parameters")
echo "written by P=2 1F1B at step 2: $written; loaded by P=3 ZB-V: $loaded"
[[ -n $written && $written == "$loaded" ]] || { cat "$work/a.txt" "$work/b.txt"; fail "the loaded state differs from the saved one"; }
end_a=$(field "$work/a.txt" "checkpoint $work/a/step_000004 ")
end_b=$(field "$work/b.txt" "checkpoint $work/b/step_000004 ")
echo "after step 4: uninterrupted $end_a, resumed under another plan $end_b"
[[ -n $end_a && $end_a == "$end_b" ]] || { cat "$work/a.txt" "$work/b.txt"; fail "the resumed run's state after step 4 differs"; }
losses() { grep -E '^step [34]/4' "$1" | sed 's/ | [0-9]* tok.*//'; }
[[ $(losses "$work/a.txt") == "$(losses "$work/b.txt")" && -n $(losses "$work/b.txt") ]] \
  || { losses "$work/a.txt"; losses "$work/b.txt"; fail "the resumed steps' losses differ"; }
grep -q "written by 1f1b, P=2" "$work/b.txt" || fail "the resume line does not name the writing plan"
# Another model is refused, naming the field.
sed 's/"n_embd": 16/"n_embd": 32/' "$work/tied.json" > "$work/wide.json"
"$pipewright" plan --device cpu-core --dtype fp64 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --num-microbatches 4 --model-config "$work/wide.json" --seq-length 16 --micro-batch-size 2 -o "$work/wide_plan.json" > /dev/null
if "${mpi[@]}" "${run64[@]}" --plan "$work/wide_plan.json" --resume "$work/a" > "$work/refused.txt" 2>&1; then
  fail "resume with another model succeeded"
fi
grep -q "field 'n_embd' is 16 but the plan's model has 32" "$work/refused.txt" || { cat "$work/refused.txt"; fail "no reason"; }
# A truncated layer file is named before any step.
cp -r "$work/a/step_000002" "$work/cut"
truncate -s -64 "$work/cut/block.2.safetensors"
if "${mpi[@]}" "${run64[@]}" --plan "$work/p2.json" --resume "$work/cut" > "$work/cut.txt" 2>&1; then
  fail "resume from a truncated checkpoint succeeded"
fi
grep -q "checkpoint file $work/cut/block.2.safetensors is truncated" "$work/cut.txt" || { cat "$work/cut.txt"; fail "no reason"; }
grep -q "^step" "$work/cut.txt" && fail "a step ran before the truncated file was refused"

echo "== 3. measured trace"
"${run[@]}" --plan "$work/plan.json" --steps 2 --trace "$work/trace.json" > /dev/null
python3 - "$work/trace.json" "$work/plan.json" << 'PY'
import json, sys, collections
t = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
od = t["otherData"]
assert od["format"] == "pipewright-trace" and od["version"] == 1 and od["kind"] == "measured", od
assert od["pp_size"] == p["pp_size"] and od["num_microbatches"] == p["num_microbatches"], od
xs = [e for e in t["traceEvents"] if e.get("ph") == "X"]
for r in p["ranks"]:
    got = sorted((e["args"]["index"], e["name"]) for e in xs if e["pid"] == r["rank"])
    want = list(enumerate(r["actions"]))
    assert got == want, f"rank {r['rank']}: trace actions differ from the plan"
for e in xs:
    assert e["args"]["action"] == e["name"] and e["dur"] >= 0 and e["ts"] >= 0, e
    comm = "SEND" in e["name"] or "RECV" in e["name"]
    assert e["tid"] == (1 if comm else 0), e
flows = collections.defaultdict(list)
for e in xs:
    if "bind_id" in e: flows[e["bind_id"]].append("out" if e.get("flow_out") else "in")
assert flows and all(sorted(v) == ["in", "out"] for v in flows.values()), flows
names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in t["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"}
assert {(0, 0, "compute"), (0, 1, "comm")} <= names, names
print(f"trace OK: {len(xs)} actions, {len(flows)} flows")
PY
"$pipewright" show "$work/trace.json" --format ascii > "$work/show.txt" || fail "show TRACE failed"
"$pipewright" show "$work/trace.json" --plan "$work/plan.json" --format ascii > "$work/diff.txt" \
  || fail "show TRACE --plan PLAN failed"

echo "== 4. gradient clipping needs a plan with a global barrier"
if "${run[@]}" --plan "$work/plan.json" --steps 1 --clip-grad-norm 1.0 > "$work/clip.txt" 2>&1; then
  fail "--clip-grad-norm ran on a plan without a global barrier"
fi
grep -q "global_barrier" "$work/clip.txt" || { cat "$work/clip.txt"; fail "no reason"; }
plan zb-h1 "$work/clip.json" --clip-grad-norm 0.5
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["training"]["global_barrier"] is True' \
  "$work/clip.json" || fail "plan does not record the barrier"
# Into a file, then grep: `grep -q` in a pipe may exit at the first match and
# end the run with SIGPIPE while rank 0 still prints its summary.
"${run[@]}" --plan "$work/clip.json" --steps 2 > "$work/clip.txt" 2>&1 || { cat "$work/clip.txt"; fail "clipped run"; }
grep -q "^step 2/2" "$work/clip.txt" || { cat "$work/clip.txt"; fail "clipped run: no step 2/2"; }
if "$pipewright" plan --model-config llama-2-7b --device H100-80GB --pp 4 --global-batch-size 32 \
     --clip-grad-norm 1.0 --objective steady -o "$work/steady.json" > "$work/steady.txt" 2>&1; then
  fail "pipewright plan --clip-grad-norm --objective steady was accepted"
fi
grep -q "makespan_s" "$work/steady.txt" || { cat "$work/steady.txt"; fail "no reason for the refusal"; }
"$pipewright" plan --model-config llama-2-7b --device H100-80GB --pp 4 --global-batch-size 32 \
  --clip-grad-norm 1.0 -o "$work/planned.json" > "$work/planned.txt" || fail "plan --clip-grad-norm"
grep -q "makespan_s" "$work/planned.txt" || { cat "$work/planned.txt"; fail "plan did not minimise makespan_s"; }
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["training"]; assert t["global_barrier"] is True and t["clip_grad_norm"] == 1.0, t' \
  "$work/planned.json" || fail "pipewright plan does not record the barrier"
echo "== --checkpoint-dir without --checkpoint-every: one checkpoint after the last step"
"${run[@]}" --plan "$work/plan.json" --steps 2 --checkpoint-dir "$work/final" > "$work/final.txt" || fail "final checkpoint run"
[ -f "$work/final/step_000002/manifest.json" ] || { ls -R "$work/final"; fail "no checkpoint after the last step"; }
grep -q "^checkpoint $work/final/step_000002 " "$work/final.txt" || fail "the checkpoint was not reported"
echo "== progress lines: about 40 whatever the run's length, unless --log-every says otherwise"
"${mpi[@]}" "$pipewright" run --data "$work/text.txt" --seed 7 --plan "$work/plan.json" --steps 120 \
  > "$work/progress.txt" || fail "120-step run"
lines=$(grep -c '^step [0-9]*/120 ' "$work/progress.txt")
(( lines >= 20 && lines <= 41 )) || fail "120 steps printed $lines progress lines, not 20-41"
grep '^step ' "$work/progress.txt" | tail -1 | grep -q '^step 120/120 ' || fail "the last step has no progress line"
"${mpi[@]}" "$pipewright" run --data "$work/text.txt" --seed 7 --plan "$work/plan.json" --steps 6 \
  > "$work/short.txt" || fail "6-step run"
[[ $(grep -c '^step ' "$work/short.txt") == 6 ]] || fail "a 6-step run should print every step"
"${mpi[@]}" "$pipewright" run --data "$work/text.txt" --seed 7 --plan "$work/plan.json" --steps 120 \
  --log-every 50 > "$work/every50.txt" || fail "--log-every 50 run"
[[ $(grep '^step ' "$work/every50.txt" | cut -d' ' -f2 | tr '\n' ' ') == "1/120 51/120 101/120 120/120 " ]] \
  || { grep '^step ' "$work/every50.txt"; fail "--log-every 50 should print steps 1, 51, 101 and 120"; }
echo "OK"
