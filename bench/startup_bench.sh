#!/usr/bin/env bash
# Start-up cost of the torch-free subcommands, end to end (process start to
# exit, as a user or a script sees it):
#   (a) `pipewright validate` of a 4-rank PyTorch CSV (1F1B, m=8);
#   (b) `pipewright schedule --schedule interleaved-1f1b --pp 64
#       --virtual-stages 2 --num-microbatches 1024 --format json -o FILE`.
# Prints the median wall time (and CPU time) of RUNS runs of each (after one
# warm-up run), then evidence that neither command loads LibTorch or MPI:
# the binary's ldd, the objects the dynamic loader actually mapped in (a)
# (LD_DEBUG=files), and /proc/<pid>/maps sampled while (b) runs.
#
# Usage: bench/startup_bench.sh BUILD_DIR|PIPEWRIGHT_BINARY [RUNS]   (RUNS default 20)
# Needs python3 (the timer). Goals (issue): (a) < 30 ms, (b) < 0.3 s.
set -euo pipefail
target=${1:?usage: startup_bench.sh BUILD_DIR|PIPEWRIGHT_BINARY [RUNS]}
runs=${2:-20}
if [[ -f $target && -x $target ]]; then pw=$target; else pw=$target/launch/pipewright; fi
[[ -x $pw ]] || { echo "startup_bench.sh: $pw not found; build it first (cmake --build $target --target pipewright)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "startup_bench.sh: python3 not found (it times the runs)" >&2; exit 2; }
work=$(mktemp -d /tmp/pw-startup-XXXXXX)
trap 'rm -rf "$work"' EXIT

"$pw" schedule --schedule 1f1b --pp 4 --num-microbatches 8 --format csv -o "$work/1f1b.csv"
cmd_a=("$pw" validate "$work/1f1b.csv")
cmd_b=("$pw" schedule --schedule interleaved-1f1b --pp 64 --virtual-stages 2 --num-microbatches 1024
       --format json -o "$work/x.json")

# median_ms RUNS CMD...: one warm-up run, then RUNS timed runs (stdout and
# stderr discarded; a failing run stops the benchmark); prints
# "median min max cpu" in milliseconds: wall time from spawn to exit, and
# the median CPU time (user + system, from wait4) of the same runs, which
# other load on the machine inflates less than the wall time.
median_ms() {
  python3 - "$@" << 'PY'
import os, statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
def once():
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"startup_bench.sh: {' '.join(cmd)} exited {p.returncode}")
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3
once()
samples = [once() for _ in range(runs)]
ws = [w for w, _ in samples]
print(f"{statistics.median(ws):.1f} {min(ws):.1f} {max(ws):.1f} {statistics.median(c for _, c in samples):.1f}")
PY
}

echo "binary: $pw ($(stat -c %s "$pw") bytes); $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
read -r med lo hi cpu < <(median_ms "$runs" "${cmd_a[@]}")
echo "(a) validate 4-rank 1F1B CSV (m=8):                  median $med ms wall (min $lo, max $hi), $cpu ms CPU; $runs runs"
read -r med lo hi cpu < <(median_ms "$runs" "${cmd_b[@]}")
echo "(b) schedule interleaved-1f1b P=64 v=2 m=1024 JSON:  median $med ms wall (min $lo, max $hi), $cpu ms CPU; $runs runs"
echo "    plan file: $(stat -c %s "$work/x.json") bytes"

echo
echo "ldd $pw: $(ldd "$pw" 2> /dev/null | wc -l) objects"
ldd "$pw" 2> /dev/null | grep -E '^\s*lib(torch|c10|mpi)' | sed 's/^\s*/    /' || echo "    (no libtorch, libc10 or libmpi)"
LD_DEBUG=files "${cmd_a[@]}" > /dev/null 2> "$work/ld_debug.txt" || true
loaded=$(grep -oE 'file=[^ ]+ \[0\];  needed by' "$work/ld_debug.txt" | sort -u | wc -l)
echo "(a) objects mapped by the dynamic loader (LD_DEBUG=files): $loaded"
grep -oE 'file=[^ ]+ \[0\];  needed by' "$work/ld_debug.txt" | sed 's/file=\([^ ]*\).*/    \1/' | sort -u \
  | awk 'NR <= 12 {print} END {if (NR > 12) printf "    ... and %d more\n", NR - 12}'
if grep -qE 'file=([^ ]*/)?lib(torch|c10|mpi)' "$work/ld_debug.txt"; then
  echo "    => (a) LOADS LibTorch/MPI"
else
  echo "    => (a) loads no LibTorch and no MPI"
fi
"${cmd_b[@]}" > /dev/null 2>&1 &
pid=$!
sleep 0.1
if maps=$(cat "/proc/$pid/maps" 2> /dev/null); then
  objects=$(awk '$6 ~ /\.so/ {print $6}' <<< "$maps" | sort -u)
  echo "(b) shared objects in /proc/$pid/maps after 0.1 s: $(grep -c . <<< "$objects")"
  sed 's/^/    /' <<< "$objects" | awk 'NR <= 12 {print} END {if (NR > 12) printf "    ... and %d more\n", NR - 12}'
  if grep -qE '/lib(torch|c10|mpi)' <<< "$objects"; then echo "    => (b) LOADS LibTorch/MPI"; else echo "    => (b) loads no LibTorch and no MPI"; fi
else
  echo "(b) finished before /proc/$pid/maps could be read"
fi
wait "$pid" || true
