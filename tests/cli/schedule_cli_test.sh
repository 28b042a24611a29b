#!/usr/bin/env bash
# The `pipewright schedule` and `validate` commands as a user runs them:
# exit codes, messages naming the option, atomic output, determinism.
# Usage: schedule_cli_test.sh PATH/TO/pipewright
set -uo pipefail
pw="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $name"; fi
}
expect_fail() {  # expect_fail NAME CODE PATTERN CMD...
  local name="$1" code="$2" pattern="$3"; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [[ $rc == "$code" ]] && grep -q -- "$pattern" "$tmp/err"; then pass=$((pass + 1))
  else fail=$((fail + 1)); echo "FAILED: $name (rc=$rc, want $code and '$pattern')"; cat "$tmp/err"; fi
}

for s in gpipe 1f1b interleaved-1f1b looped-bfs zb-h1 zb-h2 zb-v zb-auto v-half v-min dualpipev; do
  "$pw" schedule --schedule "$s" --pp 4 --num-microbatches 8 --format json -o "$tmp/$s.json"
  check "$s writes a plan" test -s "$tmp/$s.json"
  check "$s plan validates" "$pw" validate --strict "$tmp/$s.json" >/dev/null
  "$pw" schedule --schedule "$s" --pp 4 --num-microbatches 8 --format json -o "$tmp/$s.again.json"
  check "$s plan is byte-identical on a second run" cmp -s "$tmp/$s.json" "$tmp/$s.again.json"
  "$pw" schedule --schedule "$s" --pp 4 --num-microbatches 8 --format csv -o "$tmp/$s.csv"
  check "$s compute_only CSV validates" "$pw" validate "$tmp/$s.csv" >/dev/null
  "$pw" schedule --schedule "$s" --pp 4 --num-microbatches 8 --format csv --csv-format compute_comms -o "$tmp/$s.comms.csv"
  check "$s compute_comms CSV validates strictly" "$pw" validate --strict "$tmp/$s.comms.csv" >/dev/null
done
"$pw" schedule --schedule zb-h1 --pp 4 --num-microbatches 8 >"$tmp/zbh1.txt"
check "ascii summary has the ZB-H1 makespan 27" grep -q "makespan 27 s" "$tmp/zbh1.txt"

# --schedule optimal (planner/optimal_milp.h): unit costs, P = 4, m = 4: the
# bound 3m + P - 1 = 15, proven; the plan validates strictly.
"$pw" schedule --schedule optimal --pp 4 --num-microbatches 4 >"$tmp/opt.txt"
check "optimal prints a proven optimum" grep -q "gap 0% (proven optimal)" "$tmp/opt.txt"
check "optimal ascii has makespan 15" grep -q "makespan 15 s" "$tmp/opt.txt"
"$pw" schedule --schedule optimal --pp 4 --num-microbatches 4 --memory-limit 4 --format json -o "$tmp/opt.json" 2>"$tmp/opt.err"
check "optimal plan validates" "$pw" validate --strict "$tmp/opt.json" >/dev/null
"$pw" schedule --schedule optimal --pp 4 --num-microbatches 4 --memory-limit 4 --format json -o "$tmp/opt.again.json" 2>/dev/null
check "optimal plan is byte-identical on a second run" cmp -s "$tmp/opt.json" "$tmp/opt.again.json"
"$pw" schedule --schedule optimal --pp 3 --num-microbatches 3 --format csv --csv-format compute_comms -o "$tmp/opt.csv" 2>/dev/null
check "optimal compute_comms CSV validates strictly" "$pw" validate --strict "$tmp/opt.csv" >/dev/null
check "optimal reports the solver on stderr with -o" grep -q "best bound" "$tmp/opt.err"
expect_fail "optimal refuses P*m above its limit" 2 "4 x 9 = 36 is above the limit of 32" \
  "$pw" schedule --schedule optimal --pp 4 --num-microbatches 9 -o "$tmp/opt_big.json"
check "no file after the refusal" test ! -e "$tmp/opt_big.json"
expect_fail "optimal refuses --time-limit 0" 2 "\-\-time-limit must be a positive number" \
  "$pw" schedule --schedule optimal --pp 2 --num-microbatches 2 --time-limit 0
expect_fail "--time-limit without optimal" 2 "\-\-time-limit applies to --schedule optimal only" \
  "$pw" schedule --schedule zb-h1 --pp 2 --num-microbatches 2 --time-limit 5
# The report's optimum table (short per-row limit: unproven rows are marked).
"$pw" report --optimal-table --optimal-time-limit 0.2 --schedules 1f1b --pp 2 --microbatches 2 --model none \
  -o "$tmp/report" >/dev/null
check "report has the optimum table" grep -q "^## Heuristics against the certified optimum" "$tmp/report/schedule_report.md"
check "the optimum table has 24 rows" test "$(grep -cE '^\| (unit|1\.5B) \|' "$tmp/report/schedule_report.md")" = 24
expect_fail "report refuses --optimal-time-limit 0" 2 "\-\-optimal-time-limit must be a positive number" \
  "$pw" report --optimal-table --optimal-time-limit 0 --schedules 1f1b --pp 2 --microbatches 2 --model none -o "$tmp/r2"
expect_fail "optimal refuses v = 2" 2 "\-\-virtual-stages" \
  "$pw" schedule --schedule optimal --pp 2 --num-microbatches 2 --virtual-stages 2

expect_fail "unknown schedule" 2 "unknown schedule 'zb-h9' (--schedule)" \
  "$pw" schedule --schedule zb-h9 --pp 4 --num-microbatches 8 -o "$tmp/none.json"
check "no file after an error" test ! -e "$tmp/none.json"
expect_fail "zero microbatches" 2 "\-\-num-microbatches must be >= 1" \
  "$pw" schedule --schedule 1f1b --pp 4 --num-microbatches 0
expect_fail "zb-v with v=3" 2 "\-\-virtual-stages" \
  "$pw" schedule --schedule zb-v --pp 4 --num-microbatches 8 --virtual-stages 3
expect_fail "zb-h2 under its memory need" 3 "\-\-memory-limit" \
  "$pw" schedule --schedule zb-h2 --pp 4 --num-microbatches 8 --memory-limit 4 -o "$tmp/none.json"
check "no file after an infeasible request" test ! -e "$tmp/none.json"
expect_fail "bad costs" 2 "\-\-costs" "$pw" schedule --schedule 1f1b --pp 2 --num-microbatches 2 --costs 1,x,1

head -c 500 "$tmp/1f1b.json" >"$tmp/truncated.json"
expect_fail "truncated plan" 2 "truncated.json: not valid JSON" "$pw" validate "$tmp/truncated.json"
printf '0F0,0F1,0B0,0B1\n1F0,1B0,1Q1,1B1\n' >"$tmp/bad.csv"
expect_fail "bad CSV token" 2 "row 2, column 3" "$pw" validate "$tmp/bad.csv"
sed 's/"1F3"/"1F9"/' "$tmp/1f1b.json" >"$tmp/wrongmb.json"
expect_fail "plan with an out-of-range microbatch" 2 "microbatch is not in" "$pw" validate "$tmp/wrongmb.json"
python3 - "$tmp/1f1b.json" "$tmp/lied.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["predicted"]["makespan_s"] = 1.0
json.dump(d, open(sys.argv[2], "w"))
PY
expect_fail "plan whose predicted block lies" 2 "predicted does not match" "$pw" validate "$tmp/lied.json"
# Every field of predicted is checked, busy_s too (issue #25: busy times
# multiplied by 10 passed).
python3 - "$tmp/1f1b.json" "$tmp/busy.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["predicted"]["per_rank"]: r["busy_s"] *= 10
json.dump(d, open(sys.argv[2], "w"))
PY
expect_fail "plan whose busy_s lies" 2 "rank 0 busy_s 240 vs 24" "$pw" validate "$tmp/busy.json"
expect_fail "missing file" 2 "cannot open" "$pw" validate "$tmp/nope.json"

# Costs and latencies must be finite and >= 0 (schedule and show share one parser).
for bad in nan,1,1 inf,1,1 1,-1,1 1,nan,1,1; do
  expect_fail "schedule --costs $bad" 2 "\-\-costs: '" \
    "$pw" schedule --schedule 1f1b --pp 4 --num-microbatches 8 --costs "$bad" -o "$tmp/badcost.txt"
  check "schedule --costs $bad writes nothing" test ! -e "$tmp/badcost.txt"
done
for bad in -5 nan inf; do
  expect_fail "schedule --comm-latency $bad" 2 "\-\-comm-latency $bad" \
    "$pw" schedule --schedule 1f1b --pp 4 --num-microbatches 8 --comm-latency "$bad"
done
expect_fail "schedule --memory-limit nan" 2 "\-\-memory-limit nan" \
  "$pw" schedule --schedule 1f1b --pp 4 --num-microbatches 8 --memory-limit nan
"$pw" schedule --schedule 1f1b --pp 4 --num-microbatches 8 --format csv -o "$tmp/show.csv"
for bad in nan,1,1 inf,1,1 1,-1,1; do
  expect_fail "show --costs $bad" 2 "\-\-costs: '" "$pw" show "$tmp/show.csv" --costs "$bad"
done
expect_fail "show --costs with B" 2 "expected F,I,W" "$pw" show "$tmp/show.csv" --costs 1,1,1,1
# A fractional limit below one activation is not rounded up to fit.
expect_fail "zb-auto --memory-limit 0.5" 2 "\-\-memory-limit 0.5 activations x --activation-bytes 1 = 0.5 bytes, below one byte" \
  "$pw" schedule --schedule zb-auto --pp 4 --num-microbatches 8 --memory-limit 0.5 -o "$tmp/half.txt"
check "zb-auto --memory-limit 0.5 writes nothing" test ! -e "$tmp/half.txt"
# A binary file given as a plan or CSV: exit 2 naming the file, its bytes
# escaped (\xHH), never written raw to the terminal.
head -c 4096 "$pw" > "$tmp/binary.csv"
printf '{\x89PNG\x1b[31mred\x00\x01' > "$tmp/binary.json"
for f in binary.csv binary.json; do
  for cmd in validate show; do
    expect_fail "$cmd $f" 2 "$tmp/$f: .*\\\\x" "$pw" "$cmd" "$tmp/$f"
    check "$cmd $f prints no control bytes" bash -c "! LC_ALL=C grep -q \$'[\\x01-\\x08\\x0b-\\x1f\\x7f]' '$tmp/err'"
    check "$cmd $f prints no bytes above 0x7f" bash -c "! LC_ALL=C grep -q \$'[\\x80-\\xff]' '$tmp/err'"
  done
done
# A plan with a negative or non-finite cost is refused when read, naming the field.
"$pw" schedule --schedule 1f1b --pp 2 --num-microbatches 4 --format json -o "$tmp/cost.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['stages'][0]['cost_s']['F']=-1; json.dump(d,open(sys.argv[2],'w'))" \
  "$tmp/cost.json" "$tmp/negcost.json"
expect_fail "plan with negative cost_s.F" 2 "stages\[0\].cost_s.F: must be a finite number >= 0" \
  "$pw" validate "$tmp/negcost.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['comm']['latency_s']=-0.5; json.dump(d,open(sys.argv[2],'w'))" \
  "$tmp/cost.json" "$tmp/neglat.json"
expect_fail "plan with negative comm.latency_s" 2 "comm.latency_s: must be a finite number >= 0" \
  "$pw" validate "$tmp/neglat.json"

echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
