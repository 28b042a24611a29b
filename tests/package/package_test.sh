#!/usr/bin/env bash
# The CMake package as a user meets it: `cmake --install` this build into a
# temporary prefix, check the layout, configure and build the consumer
# project tests/package/consumer (find_package(pipewright), no network)
# against it, and run it: 1F1B P=4 m=8 with unit costs (F = I = W = 1,
# B = I + W = 2, base/costs.h) has makespan (m + P - 1)(F + B) = 11 x 3 = 33;
# GPT-2 small has 124,439,808 parameters. Also: the installed CLI finds the
# installed models (ModelsDir(): <bin>/../share/pipewright/models) and
# dispatches run to the installed pipewright-exec where one was built.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/pw-package-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
unset PW_MODELS_DIR PW_EXEC_BINARY
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 \
  || { cat "$work/install.log"; fail "cmake --install $build --prefix $prefix"; }
config=$(find "$prefix" -name pipewrightConfig.cmake | head -1)
[[ -n $config ]] || fail "no pipewrightConfig.cmake under $prefix"
for f in bin/pipewright include/pipewright/base/status.h include/pipewright/schedules/registry.h \
         include/pipewright/models/spec/model_config.h include/pipewright/plan/plan.h \
         include/pipewright/planner/planner.h share/pipewright/models/configs/gpt2.json \
         share/pipewright/models/devices/h100-80gb.json; do
  [[ -e $prefix/$f ]] || fail "not installed: $f"
done
[[ -e $(dirname "$config")/pipewrightConfigVersion.cmake ]] || fail "no pipewrightConfigVersion.cmake beside $config"
[[ ! -e $prefix/include/pipewright/executor ]] || fail "executor headers installed (only torch-free layers are)"
for lib in pw_base pw_schedules pw_models_spec pw_plan pw_planner; do
  [[ -n $(find "$prefix" -name "lib$lib.a") ]] || fail "not installed: lib$lib.a"
done
echo "installed into $prefix: $(find "$prefix" -type f | wc -l) files"

# The consumer, built as a user would (Ninja and ccache when present).
gen=() launcher=()
command -v ninja > /dev/null && gen=(-G Ninja)
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src/tests/package/consumer" -B "$work/consumer" "${gen[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; fail "configuring the consumer against $prefix"; }
cmake --build "$work/consumer" > "$work/build.log" 2>&1 \
  || { cat "$work/build.log"; fail "building the consumer"; }
"$work/consumer/pw_consumer" > "$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "pw_consumer exited non-zero"; }
cat "$work/out.txt"
grep -qx "makespan 33" "$work/out.txt" || fail "1F1B P=4 m=8 unit-cost makespan is not (m+P-1)(F+B) = 33"
grep -qx "parameters 124439808" "$work/out.txt" || fail "GPT-2 small is not 124439808 parameters"
grep -q "^planned 1f1b on P=4" "$work/out.txt" || fail "no plan from the planner"

# The installed CLI: its models are the installed ones (the error lists where
# it looked), and run goes to the installed pipewright-exec when built.
if "$prefix/bin/pipewright" plan --model-config no-such-model --device h100-80gb --pp 4 \
     --num-microbatches 8 > "$work/plan.txt" 2>&1; then
  fail "plan with an unknown model succeeded"
fi
grep -qF "$prefix/share/pipewright/models/configs" "$work/plan.txt" \
  || { cat "$work/plan.txt"; fail "the installed CLI does not look in $prefix/share/pipewright/models"; }
if [[ -x $build/launch/pipewright-exec ]]; then
  [[ -x $prefix/bin/pipewright-exec ]] || fail "pipewright-exec was built but not installed"
  "$prefix/bin/pipewright" run --help > "$work/run.txt" 2>&1 || { cat "$work/run.txt"; fail "installed run --help"; }
  grep -q -- "--plan" "$work/run.txt" || fail "installed run --help is not the executor's"
fi
echo "package test passed"
