#!/usr/bin/env bash
# The dependency rule of docs/ARCHITECTURE.md, checked on the sources: each
# folder includes only the folders this table allows (an arrow never runs back
# up), and LibTorch, MPI, NCCL and CUDA headers stay out of the folders that
# must build without them.
#
# Usage: layers_test.sh REPO_ROOT
# Prints FILE:LINE: the include, and what the folder may include, for each
# breach; exits 1 if there is one.
set -u
root=${1:?usage: layers_test.sh REPO_ROOT}
cd "$root" || exit 2

# folder -> the project folders its files may include (besides itself).
declare -A allowed=(
  [base]=""
  [schedules]="base"
  [models/spec]="base"
  [plan]="base schedules models/spec"
  [planner]="base schedules models/spec plan"
  [viz]="base schedules models/spec plan"
  [models/torch]="base models/spec"
  [executor/comm]="base"
  [executor/data]="base"
  [executor/checkpoint]="base models/spec models/torch plan executor/comm"
  [executor/runtime]="base schedules models/spec models/torch plan executor/comm executor/data executor/checkpoint"
  [executor/profiling]="base schedules models/spec models/torch plan executor/comm executor/data executor/checkpoint executor/runtime"
)
# folder -> system headers it must not include (extended regex on the path).
heavy='^(torch/|c10/|ATen/|mpi\.h|nccl\.h|cuda|cublas)'
declare -A forbidden=(
  [base]=$heavy [schedules]=$heavy [models/spec]=$heavy [plan]=$heavy [planner]=$heavy [viz]=$heavy
  [executor/comm]='^(torch/|c10/|ATen/)' [executor/data]='^(torch/|c10/|ATen/|mpi\.h)'
)

# Sets `folder` to the folder a path belongs to: executor/<room> and
# models/<part>, else the top folder ("" for a file at the root).
folder_of() {
  local rest
  case $1 in
    executor/*/* | models/*/*) rest=${1#*/}; folder=${1%%/*}/${rest%%/*} ;;
    */*) folder=${1%%/*} ;;
    *) folder="" ;;
  esac
}

bad=0
checked=0
while IFS= read -r file; do
  folder_of "$file"
  src=$folder
  [[ -v allowed[$src] ]] || continue
  checked=$((checked + 1))
  while IFS=: read -r line text; do
    [[ $text =~ include[[:space:]]*[\"\<]([^\">]+) ]] || continue
    inc=${BASH_REMATCH[1]}
    if [[ $text =~ include[[:space:]]*\" ]]; then
      folder_of "$inc"
      dst=$folder
      [[ -z $dst || $dst == "$src" ]] && continue
      if [[ " ${allowed[$src]} " != *" $dst "* ]]; then
        echo "$file:$line: includes \"$inc\" ($dst); $src may include only: ${allowed[$src]:-nothing of the project}"
        bad=$((bad + 1))
      fi
    elif [[ -v forbidden[$src] && $inc =~ ${forbidden[$src]} ]]; then
      echo "$file:$line: includes <$inc>; $src builds without LibTorch/MPI/NCCL/CUDA headers"
      bad=$((bad + 1))
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$file")
done < <(git ls-files '*.cc' '*.h' 2>/dev/null || find . -name '*.cc' -o -name '*.h' | sed 's|^\./||')

if (( checked == 0 )); then
  echo "layers_test: no source files found under $root" >&2
  exit 2
fi
echo "layers_test: $checked files checked, $bad includes break the dependency rule"
(( bad == 0 ))
