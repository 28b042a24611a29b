// Launch configurations of other trainers for a plan (`pipewright
// launch-config`): the command-line arguments with which torchtitan or
// Megatron-LM run the plan's pipeline (degrees, layer split per stage,
// schedule, batch shape, recomputation, ZeRO-1, precision). Torch-free;
// docs/INTEROP.md says what each target covers and what it does not.
//
// One table (LaunchTargets) holds every target: its name, the plan schedules
// it can run and its writer. A writer returns the arguments as lines (a flag
// and its values); ArgsFileText joins them one flag per line, so that
// `$(cat FILE)` or `mapfile -t` + word splitting give the trainer its argv
// (no value holds whitespace or a shell glob character).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "plan/plan.h"

namespace pw::interop {

// What the caller chose besides the plan.
struct LaunchConfigOptions {
  // torchtitan only: the path written into
  // --parallelism.pipeline_parallel_schedule_csv when the schedule is given
  // as a CSV (the caller writes LaunchConfig::csv there). Must not be empty
  // when a CSV is needed; torchtitan resolves a relative path from the
  // directory it runs in.
  std::string schedule_csv_path;
  // torchtitan only: ConfigManager's --module and --config (e.g. llama3,
  // llama3_8b), written first when set; empty = not written (the user adds
  // them on the command line).
  std::string module;
  std::string config;
};

// One argument line: a flag and its values (possibly none), or a bare token
// (torchtitan's `activation_checkpoint:full` subcommand).
using ArgLine = std::vector<std::string>;

// What a writer produced.
struct LaunchConfig {
  std::vector<ArgLine> lines;      // in the order the trainer needs them
  std::string csv;                 // non-empty: a compute-only PyTorch CSV to write at schedule_csv_path
  std::vector<std::string> notes;  // what the arguments do not carry exactly (printed as "note: ...")
};

// A target trainer: name, the plan schedule families (docs/PLAN_FORMAT.md
// `schedule`) it can run, and its writer.
struct LaunchTarget {
  std::string name;                    // "torchtitan", "megatron"
  std::string display_name;            // "torchtitan 0.3", "Megatron-LM (megatron-core >= 0.13)"
  std::vector<std::string> schedules;  // canonical plan schedule names accepted
  StatusOr<LaunchConfig> (*write)(const Plan& plan, const std::string& plan_source, const LaunchConfigOptions& options);
};

// Every target, in a fixed order.
const std::vector<LaunchTarget>& LaunchTargets();

// The target named `name`. InvalidArgument naming --for and the choices
// ("--for: unknown target 'deepspeed'; choose one of: torchtitan, megatron").
StatusOr<const LaunchTarget*> FindLaunchTarget(const std::string& name);

// The launch configuration of `plan` for `target` (a name of LaunchTargets).
// `plan_source` names the file in errors. Errors (InvalidArgument, nothing
// written by anyone): an unknown target; a plan without model, layers or
// training (schedule-only: "plan.json: model: ..."); a schedule the target
// cannot run, naming the target's list ("plan.json: schedule: Megatron-LM
// cannot run 'v-min'; it runs: 1f1b, interleaved-1f1b"); a stage placement,
// microbatch count or split the target cannot express, naming the field
// (training.microbatch_sizes unequal, training.dtype fp64, stage_to_rank,
// num_microbatches); the target's own options (schedule_csv_path empty or
// with characters a shell would split, module/config for megatron).
StatusOr<LaunchConfig> MakeLaunchConfig(const Plan& plan, const std::string& plan_source, const std::string& target,
                                        const LaunchConfigOptions& options);

// The arguments file: each line's tokens joined by one space, "\n" after
// each line. Deterministic.
std::string ArgsFileText(const LaunchConfig& config);

// The CSV path written beside an arguments file `args_path`: its name less a
// trailing ".args", plus ".schedule.csv" ("run/tt.args" ->
// "run/tt.schedule.csv").
std::string ScheduleCsvPathFor(const std::string& args_path);

}  // namespace pw::interop
