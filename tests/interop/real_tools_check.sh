#!/usr/bin/env bash
# The real trainers read `pipewright launch-config` output:
#  - torchtitan 0.3's ConfigManager parses each torchtitan arguments file made
#    from tests/testdata/interop/*.json, and torchtitan_check.py compares what
#    it parsed (degrees, batch, schedule placement, modules of the meta-device
#    model, the CSV through PyTorch's _validate_schedule) with the plan;
#  - megatron-core's PipelineParallelLayerLayout parses and validates each
#    Megatron layout (megatron_layout_check.py), and the split of every
#    Megatron arguments file is compared with the plan.
# Each half also feeds a broken file that its tool must refuse (the check can
# fail). A half whose package is missing is skipped with a "skipped: ..."
# line and exit 0 (CI has neither; the project does not depend on them): set
# PW_INTEROP_PYTHON to a Python that has them, e.g. a venv made by
#   python3 -m venv V && V/bin/pip install torchtitan==0.3.0 torch megatron-core
# Usage: real_tools_check.sh PATH/TO/pipewright
set -u
PW="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/../testdata/interop"
py="${PW_INTEROP_PYTHON:-python3}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
rc=0

if "$py" -c "import torchtitan.config" > /dev/null 2>&1; then
  for plan in 1f1b interleaved_v2 zb_h1 1f1b_dp2 v_min 1f1b_tp2; do
    "$PW" launch-config --plan "$data/$plan.json" --for torchtitan --module llama3 --config llama3_8b \
      -o "$plan.args" > /dev/null 2>&1 || { echo "FAIL: launch-config $plan"; rc=1; continue; }
    "$py" "$here/torchtitan_check.py" "$data/$plan.json" "$plan.args" 2> "$plan.log" || { rc=1; tail -5 "$plan.log"; }
  done
  # torchtitan refuses pipeline parallelism with CUDA graphs on.
  grep -v -- "--training.disable_cuda_graphs" 1f1b.args > broken.args
  if "$py" "$here/torchtitan_check.py" "$data/1f1b.json" broken.args 2> /dev/null | grep -q "^FAIL.*disable_cuda_graphs"; then
    echo "(as expected: torchtitan refuses the file without --training.disable_cuda_graphs)"
  else
    echo "FAIL: torchtitan accepted a pipeline-parallel file without --training.disable_cuda_graphs"; rc=1
  fi
else
  echo "skipped: torchtitan not installed ($py cannot import torchtitan.config; set PW_INTEROP_PYTHON)"
fi

if "$py" -c "
import importlib.util, os, sys
s = importlib.util.find_spec('megatron')
sys.exit(0 if s and any(os.path.isfile(os.path.join(l, 'core/transformer/pipeline_parallel_layer_layout.py'))
                        for l in s.submodule_search_locations or []) else 1)" > /dev/null 2>&1; then
  for plan in 1f1b interleaved_v2 interleaved_v2_even 1f1b_dp2 1f1b_tp2; do
    "$PW" launch-config --plan "$data/$plan.json" --for megatron -o "$plan.mg.args" > /dev/null 2>&1 \
      || { echo "FAIL: launch-config $plan"; rc=1; continue; }
    "$py" "$here/megatron_layout_check.py" "$data/$plan.json" "$plan.mg.args" || rc=1
  done
  # One decoder layer moved from stage 0 to stage 1: the counts must differ.
  sed 's/^\(--pipeline-model-parallel-layout Et*\)t|/\1|t/' interleaved_v2.mg.args > broken.mg.args
  if "$py" "$here/megatron_layout_check.py" "$data/interleaved_v2.json" broken.mg.args | grep -q "^FAIL"; then
    echo "(as expected: a layout with a layer moved is reported)"
  else
    echo "FAIL: a layout with a layer moved was not reported"; rc=1
  fi
  # No loss layer: megatron-core's validate_layer_layout refuses it.
  sed 's/L$//' interleaved_v2.mg.args > noloss.mg.args
  if "$py" "$here/megatron_layout_check.py" "$data/interleaved_v2.json" noloss.mg.args | grep -q "^FAIL.*loss"; then
    echo "(as expected: megatron-core refuses a layout without the loss layer)"
  else
    echo "FAIL: a layout without L was accepted"; rc=1
  fi
else
  echo "skipped: megatron-core not installed ($py finds no megatron/core/transformer/pipeline_parallel_layer_layout.py)"
fi
# Megatron-LM's own argument parser (validate_args + TransformerConfig) needs
# a source checkout (megatron/training is not on PyPI) and torch:
# PW_MEGATRON_LM=/path/to/Megatron-LM.
if [ -n "${PW_MEGATRON_LM:-}" ] && [ -d "$PW_MEGATRON_LM/megatron/training" ]; then
  for plan in 1f1b interleaved_v2 interleaved_v2_even 1f1b_dp2 1f1b_tp2; do
    [ -f "$plan.mg.args" ] || "$PW" launch-config --plan "$data/$plan.json" --for megatron -o "$plan.mg.args" > /dev/null 2>&1
    PYTHONPATH="$PW_MEGATRON_LM" "$py" "$here/megatron_args_check.py" "$data/$plan.json" "$plan.mg.args" 2> /dev/null || rc=1
  done
  # A layout that does not hold --num-layers layers: Megatron must refuse it.
  sed 's/^--num-layers 32$/--num-layers 31/' interleaved_v2.mg.args > short.mg.args
  if PYTHONPATH="$PW_MEGATRON_LM" "$py" "$here/megatron_args_check.py" "$data/interleaved_v2.json" short.mg.args 2> /dev/null \
      | grep -q "^FAIL.*refused"; then
    echo "(as expected: Megatron-LM refuses a layout whose layers differ from --num-layers)"
  else
    echo "FAIL: Megatron-LM accepted a layout of 32 layers with --num-layers 31"; rc=1
  fi
else
  echo "skipped: Megatron-LM's argument check (set PW_MEGATRON_LM to a Megatron-LM checkout; needs torch)"
fi
exit $rc
