#!/usr/bin/env bash
# `pipewright launch-config` as a user runs it: golden outputs for torchtitan
# and Megatron-LM (tests/testdata/interop/golden/: arguments files and the
# torchtitan schedule CSV), the same bytes on stdout and twice in a row, and
# refusals that exit 2 naming the option, field or supported list and write
# nothing (an existing file stays untouched). The plans in
# tests/testdata/interop/ are kept as files, so the goldens depend on
# launch-config only (README there says how they were made).
# PW_UPDATE_GOLDEN=1 rewrites the goldens instead of comparing.
# Usage: launch_config_test.sh PATH/TO/pipewright
set -u
PW="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/../testdata/interop"
golden="$data/golden"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }
cd "$T" || exit 1

"$PW" --help | grep -q ' launch-config ' || fail "launch-config not listed in pipewright --help"

# Compares file $1 (made here) with golden $2, printing the difference.
same_as_golden() {
  if [ "${PW_UPDATE_GOLDEN:-0}" = 1 ]; then
    mkdir -p "$golden" && cp "$1" "$golden/$2" && echo "updated $2" && return 0
  fi
  if diff -u "$golden/$2" "$1" > "$T/diff.txt"; then pass; else fail "$2 differs from the golden:"; cat "$T/diff.txt"; fi
}

# plan target: expected to succeed.
ok_cases=(
  "1f1b torchtitan" "1f1b megatron"
  "interleaved_v2 torchtitan" "interleaved_v2 megatron"
  "interleaved_v2_even megatron"
  "zb_h1 torchtitan"
  "1f1b_dp2 torchtitan" "1f1b_dp2 megatron"
  "v_min torchtitan"
  "1f1b_tp2 torchtitan" "1f1b_tp2 megatron"
)
for c in "${ok_cases[@]}"; do
  read -r plan target <<<"$c"
  extra=()
  [ "$target" = torchtitan ] && extra=(--module llama3 --config llama3_8b)
  out="$plan.$target.args"
  if ! "$PW" launch-config --plan "$data/$plan.json" --for "$target" "${extra[@]}" -o "$out" > "$T/stdout.txt" 2> "$T/stderr.txt"; then
    fail "launch-config --plan $plan.json --for $target failed: $(cat "$T/stderr.txt")"; continue
  fi
  same_as_golden "$out" "$out"
  csv="$plan.$target.schedule.csv"
  if [ -f "$csv" ]; then
    same_as_golden "$csv" "$csv"
    grep -q -- "--parallelism.pipeline_parallel_schedule_csv $csv\$" "$out" || fail "$out does not name $csv"
  fi
  # Same inputs, same bytes; stdout equals the file when no CSV is needed.
  "$PW" launch-config --plan "$data/$plan.json" --for "$target" "${extra[@]}" -o "again.args" > /dev/null 2>&1
  sed "s/again\.schedule\.csv/$csv/" again.args | cmp -s - "$out" || fail "$plan/$target: a second run gave other bytes"
  if [ ! -f "$csv" ]; then
    "$PW" launch-config --plan "$data/$plan.json" --for "$target" "${extra[@]}" > stdout.args 2> /dev/null
    cmp -s stdout.args "$out" && pass || fail "$plan/$target: stdout differs from -o"
  fi
done

# Refusals: exit 2, a message holding $3, no file written.
refuse() {
  local what="$1" expect="$2"; shift 2
  echo "keep" > kept.args
  "$@" -o kept.args > "$T/out.txt" 2>&1
  local rc=$?
  if [ $rc -ne 2 ]; then fail "$what: exit $rc, expected 2: $(cat "$T/out.txt")"; return; fi
  grep -qF -- "$expect" "$T/out.txt" || { fail "$what: message lacks '$expect': $(cat "$T/out.txt")"; return; }
  [ "$(cat kept.args)" = keep ] || { fail "$what: the existing output was changed"; return; }
  [ -e kept.schedule.csv ] && { fail "$what: a CSV was written"; rm -f kept.schedule.csv; return; }
  pass
}
refuse "v-min for megatron" "cannot run 'v-min'; it runs: 1f1b, interleaved-1f1b" \
  "$PW" launch-config --plan "$data/v_min.json" --for megatron
refuse "zb-h1 for megatron" "cannot run 'zb-h1'; it runs: 1f1b, interleaved-1f1b" \
  "$PW" launch-config --plan "$data/zb_h1.json" --for megatron
refuse "bad --for" "--for: unknown target 'deepspeed'; choose one of: torchtitan, megatron" \
  "$PW" launch-config --plan "$data/1f1b.json" --for deepspeed
refuse "--module with megatron" "--module: only for --for torchtitan" \
  "$PW" launch-config --plan "$data/1f1b.json" --for megatron --module llama3
refuse "missing plan" "--plan: cannot open plan file" "$PW" launch-config --plan "$T/nope.json" --for megatron
"$PW" schedule --schedule 1f1b --pp 2 --num-microbatches 4 --format json -o sched.json > /dev/null
refuse "schedule-only plan" "sched.json: model: the plan has no model" \
  "$PW" launch-config --plan sched.json --for torchtitan
printf '{"n_layer": 4, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2"}\n' > gpt2.json
"$PW" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --num-microbatches 4 --model-config gpt2.json --seq-length 16 --micro-batch-size 1 -o gpt2plan.json > /dev/null
refuse "gpt2 for torchtitan" "model.architecture: torchtitan has no gpt2 model" \
  "$PW" launch-config --plan gpt2plan.json --for torchtitan
"$PW" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule 1f1b --pp 2 \
  --num-microbatches 4 --global-batch-size 9 --model-config gpt2.json --seq-length 16 -o uneven.json > /dev/null
refuse "unequal microbatches" "uneven.json: training.microbatch_sizes: Megatron-LM splits the local batch into equal microbatches" \
  "$PW" launch-config --plan uneven.json --for megatron
printf '{"n_layer": 8, "n_embd": 16, "n_head": 2, "n_positions": 16, "vocab_size": 256, "model_type": "gpt2"}\n' > gpt2x8.json
"$PW" plan --device cpu-core --dtype fp32 --recompute-granularity none --no-min-pp --schedule interleaved-1f1b --pp 2 \
  --num-virtual-stages-per-pipeline-rank 2 --num-microbatches 3 --micro-batch-size 1 --model-config gpt2x8.json \
  --seq-length 16 -o int_m3.json > /dev/null
refuse "interleaved, m not a multiple of P, for megatron" "int_m3.json: num_microbatches: Megatron-LM's interleaved schedule runs a multiple of pipeline-model-parallel-size (2)" \
  "$PW" launch-config --plan int_m3.json --for megatron
# A CSV schedule needs a file to write the CSV beside.
"$PW" launch-config --plan "$data/zb_h1.json" --for torchtitan > "$T/out.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q -- "-o: schedule 'zb-h1' runs in torchtitan from a CSV" "$T/out.txt" && pass \
  || fail "zb-h1 for torchtitan to stdout: exit $rc: $(cat "$T/out.txt")"

echo "launch-config: $passes passed, $failures failed"
[ $failures -eq 0 ]
