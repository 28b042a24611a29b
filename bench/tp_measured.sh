#!/usr/bin/env bash
# Issue 23 item 8: tensor parallelism measured against simulated on this
# machine. A small GPT is profiled twice under `mpirun -np 2`: (a) whole
# layers on both ranks at once, the link and the tensor-parallel collectives
# of 2 ranks; (b) `--tp 2`, every layer as a TP rank's shard with its
# collectives inside. TP2 x PP1 (sequence parallel) is planned from each:
# (a) scales the whole layers to a TP rank and adds the measured collectives,
# (b) takes the TP-measured costs as they are (docs/ALGORITHMS.md §8); TP1 x
# PP1 from (a) is the control. Each layout is run REPS times; the table
# compares the measured step with each plan's makespan_s. The share of the TP
# collectives in plan (a)'s step is its step minus the step planned from the
# same profile with every collective sample made 10^6 times faster; the same
# collective seconds are also given as a share of plan (b)'s step (the step
# that is run), in plan (b)'s row.
#
# PRIO=rt (environment): every rank (profile and runs) at real-time priority
# (`chrt -f 1`), so that the other processes of a shared machine do not
# preempt one rank of a TP pair while its peer waits for it in a collective
# (what a quiet machine gives); default: normal priority.
#
# Usage: [PRIO=rt] bench/tp_measured.sh BUILD_DIR [REPS] [N_EMBD] [MICRO_BATCH] [SEQ] [N_HEAD] [MICROBATCHES]
# Prints a markdown section to stdout (bench/results/tensor_parallel.md).
set -euo pipefail
build=${1:?usage: tp_measured.sh BUILD_DIR [REPS] [N_EMBD] [MICRO_BATCH] [SEQ] [N_HEAD] [MICROBATCHES]}
reps=${2:-3}
embd=${3:-32}
mb=${4:-16}
seq=${5:-64}
heads=${6:-2}
nmb=${7:-4}
pw=$(cd "$build" && pwd)/launch/pipewright
work=$(mktemp -d /tmp/pw-tp-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
prio=()
[[ ${PRIO:-} == rt ]] && prio=(chrt -f 1)
mpi=(mpirun --bind-to core -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS)
printf '{"n_layer": 4, "n_embd": %d, "n_head": %d, "n_positions": %d, "vocab_size": 256, "model_type": "gpt2", "tie_word_embeddings": false, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0}\n' \
  "$embd" "$heads" "$seq" > gpt.json
cat /usr/share/common-licenses/* > text.txt
load0=$(cut -d' ' -f1-3 /proc/loadavg)
"${mpi[@]}" -np 2 "${prio[@]}" "$pw" profile --model-config gpt.json --micro-batch-sizes "$((mb / 2)),$mb" \
  --seq-lengths "$((seq / 2)),$seq" -o prof.json > profile.txt 2>&1 || { cat profile.txt; exit 1; }
"${mpi[@]}" -np 2 "${prio[@]}" "$pw" profile --tp 2 --model-config gpt.json --micro-batch-sizes "$((mb / 2)),$mb" \
  --seq-lengths "$((seq / 2)),$seq" -o proftp.json > profile_tp.txt 2>&1 || { cat profile_tp.txt; exit 1; }
python3 - << 'EOF'
import json
p = json.load(open("prof.json"))
for s in p["collectives"]["samples"]:
    s["seconds"] *= 1e-6
json.dump(p, open("prof_nocomm.json", "w"))
EOF
common=(--model-config gpt.json --pp 1 --num-microbatches "$nmb" --micro-batch-size "$mb" --seq-length "$seq"
        --schedule 1f1b --no-min-pp)
"$pw" plan --profile prof.json "${common[@]}" --tp 2 -o tp2.json > plan_tp2.txt
"$pw" plan --profile prof_nocomm.json "${common[@]}" --tp 2 -o tp2_nocomm.json > /dev/null
"$pw" plan --profile prof.json "${common[@]}" --tp 1 -o tp1.json > plan_tp1.txt
"$pw" plan --profile proftp.json "${common[@]}" --tp 2 -o tp2m.json > plan_tp2m.txt
planned() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['predicted']['makespan_s'])" "$1"; }
p2=$(planned tp2.json) p2n=$(planned tp2_nocomm.json) p1=$(planned tp1.json) p2m=$(planned tp2m.json)
measure() {  # measure PLAN NP: mean step of each of REPS runs (6 steps, the first 2 not counted)
  local out=()
  for _ in $(seq 1 "$reps"); do
    "${mpi[@]}" -np "$2" "${prio[@]}" "$pw" run --plan "$1" --data text.txt --steps 6 > run.txt 2>&1 || { cat run.txt; exit 1; }
    # The run's own measure of its TP collectives' share of the step
    # (waits included; "tensor parallel: ... (S % of the step, mean)").
    sed -n 's/^tensor parallel: .*(\([0-9.]*\) % of the step.*/\1/p' run.txt >> tp_share.txt
    out+=("$(sed -n 's/^step [3-6]\/6 .*| step \([0-9.]*\) s |.*/\1/p' run.txt | awk '{ s += $1; n++ } END { printf "%.4f", s / n }')")
  done
  echo "${out[*]}"
}
m2=$(measure tp2.json 2)
tp_share=$(awk '{ s += $1; n++ } END { if (n) printf "%.1f %%", s / n; else printf "-" }' tp_share.txt)
m1=$(measure tp1.json 1)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
stats() {  # stats PLANNED "M1 M2 ...": median, ratio measured / planned
  python3 -c "
import statistics, sys
p = float(sys.argv[1]); m = [float(x) for x in sys.argv[2].split()]
med = statistics.median(m)
print('%.4f | %s | %.3f' % (med, ' '.join('%.4f' % x for x in m), med / p))" "$1" "$2"
}
echo "### Measured vs simulated, TP2 on 2 ranks ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "GPT 4 blocks x $embd wide ($heads heads, vocabulary 256), micro-batch $mb x $seq tokens, $nmb microbatches, 1F1B, fp32,"
echo "one rank per core (\`mpirun --bind-to core\`, 1 thread per rank)$([[ ${PRIO:-} == rt ]] && echo ', every rank at real-time priority (chrt -f 1)'); $reps runs of 6 steps each, steps 3-6 averaged;"
echo "load average before / after: $load0 / $load1 (2 cores)."
echo
echo "| layout | planned step (s) | TP collectives in the plan | measured step, median (s) | each run (s) | measured / planned |"
echo "|---|---|---|---|---|---|"
share=$(python3 -c "import sys; print('%.1f %%' % (100 * (float(sys.argv[1]) - float(sys.argv[2])) / float(sys.argv[1])))" "$p2" "$p2n")
share_b=$(python3 -c "import sys; print('%.1f %%' % (100 * (float(sys.argv[1]) - float(sys.argv[2])) / float(sys.argv[3])))" "$p2" "$p2n" "$p2m")
printf '| TP2 x PP1 (SP), plan from the TP-measured profile (b) | %.4f | %s (inside the layers; (a)'"'"'s collective seconds / this step) | %s |\n' "$p2m" "$share_b" "$(stats "$p2m" "$m2")"
printf '| TP2 x PP1 (SP), plan from the T = 1 profile scaled + measured collectives (a) | %.4f | %s | %s |\n' "$p2" "$share" "$(stats "$p2" "$m2")"
printf '| TP1 x PP1 (control), plan from (a) | %.4f | - | %s |\n' "$p1" "$(stats "$p1" "$m1")"
echo
echo "TP collectives measured in the TP2 runs themselves (the run's \"tensor parallel:\" line: seconds in the group's"
echo "collectives, waits for the peer included, over the step; mean of steps 2-6 and of the runs): $tp_share."
echo
echo "Collectives measured over 2 ranks (profile, whole-tensor bytes, median):"
echo
echo '```'
grep -E '^(all-reduce|reduce-scatter|all-gather) ' profile.txt
echo '```'
