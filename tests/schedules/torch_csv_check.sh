#!/usr/bin/env bash
# Our compute_comms CSVs loaded by PyTorch itself: for several schedule
# families, `pipewright schedule --format csv --csv-format compute_comms`
# must pass torch's _PipelineScheduleRuntime._load_csv(format="compute_comms")
# and its _simulate_comms_compute dry run (tests/schedules/torch_csv.py); a
# copy with one WAIT_SEND_F removed must be refused (the check can fail).
# Skipped (exit 77) without a Python that imports torch: set PW_TORCH_PYTHON
# to one (e.g. a venv's bin/python) or have torch in python3.
# Usage: torch_csv_check.sh PATH/TO/pipewright
set -uo pipefail
pw="$1"
here="$(cd "$(dirname "$0")" && pwd)"
py="${PW_TORCH_PYTHON:-python3}"
if ! "$py" -c "import torch.distributed.pipelining.schedules" >/dev/null 2>&1; then
  echo "SKIP: $py cannot import torch (set PW_TORCH_PYTHON to a Python with torch)"
  exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
set -e
for spec in "1f1b 4 8" "interleaved-1f1b 4 8" "zb-h1 4 8" "zb-v 4 8" "dualpipev 4 8" "interleaved-zb 4 8" "1f1b 2 1"; do
  read -r s P m <<<"$spec"
  "$pw" schedule --schedule "$s" --pp "$P" --num-microbatches "$m" --format csv --csv-format compute_comms \
    -o "$tmp/${s}_p${P}_m${m}.csv"
done
set +e
"$py" "$here/torch_csv.py" check "$tmp"/*.csv
rc=$?
# The same file less its first forward-send wait: torch must refuse it.
sed '0,/WAIT_SEND_F/s/,[0-9]*WAIT_SEND_F[0-9]*//' "$tmp/1f1b_p4_m8.csv" >"$tmp/broken_1f1b.csv"
cmp -s "$tmp/broken_1f1b.csv" "$tmp/1f1b_p4_m8.csv" && { echo "FAILED: could not remove a wait"; exit 1; }
"$py" "$here/torch_csv.py" check "$tmp/broken_1f1b.csv" >"$tmp/broken.out"
cat "$tmp/broken.out"
if grep -q "^FAIL .*no matching wait" "$tmp/broken.out"; then
  echo "(as expected: torch refuses a send without its wait)"
else
  echo "FAILED: torch accepted a file with a send and no wait"; cat "$tmp/broken.out"; rc=1
fi
exit $rc
