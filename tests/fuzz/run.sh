#!/usr/bin/env bash
# Runs one libFuzzer target over its seed corpus, then mutates:
#   tests/fuzz/run.sh TARGET SEED_DIR [libFuzzer flags, e.g. -runs=10000000 or -max_total_time=1800]
# The seeds are only read. New inputs go to $PW_FUZZ_WORK/corpus (a temporary
# directory, removed at the end, when PW_FUZZ_WORK is unset), crashes, leaks,
# timeouts and out-of-memory inputs to $PW_FUZZ_WORK/artifacts (kept, and
# named on failure). Limits: 10 s per input, 4096 MB of memory.
set -euo pipefail
target="$1" seeds="$2"
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -n "${PW_FUZZ_WORK:-}" ]]; then
  work="$PW_FUZZ_WORK"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work/corpus"; rmdir "$work/artifacts" "$work" 2>/dev/null || true' EXIT
fi
mkdir -p "$work/corpus" "$work/artifacts"
# Scratch files of the safetensors target go here too.
export TMPDIR="$work"
status=0
"$target" -dict="$here/fuzz.dict" -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" "$@" || status=$?
if [[ $status != 0 ]]; then
  echo "fuzz: $(basename "$target") failed (exit $status); inputs kept in $work/artifacts:" >&2
  ls -l "$work/artifacts" >&2
  trap - EXIT
fi
exit $status
