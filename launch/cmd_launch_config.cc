// `pipewright launch-config --plan PLAN --for torchtitan|megatron -o FILE`:
// the command-line arguments with which torchtitan or Megatron-LM run the
// plan's pipeline, one flag per line (launch/launch_config.h,
// docs/INTEROP.md). For a torchtitan schedule without a class of its own the
// plan's compute order is written as a CSV beside FILE. Everything is
// checked before anything is written; each file is written atomically.
#include <cstdio>

#include "base/file_io.h"
#include "launch/commands.h"
#include "launch/launch_config.h"
#include "plan/plan.h"

namespace pw::cli {

namespace {

struct LaunchConfigCommandOptions {
  std::string plan;
  std::string target;
  std::string output;
  std::string module;
  std::string config;
};

Status Run(const LaunchConfigCommandOptions& o) {
  PW_ASSIGN_OR_RETURN(const interop::LaunchTarget* target, interop::FindLaunchTarget(o.target));
  StatusOr<Plan> read = ReadPlanFile(o.plan);
  if (!read.ok()) return Status(read.status().code(), "--plan: " + read.status().message());
  const Plan& plan = *read;
  const bool to_stdout = o.output.empty() || o.output == "-";
  interop::LaunchConfigOptions options;
  options.module = o.module;
  options.config = o.config;
  if (!to_stdout) options.schedule_csv_path = interop::ScheduleCsvPathFor(o.output);
  PW_ASSIGN_OR_RETURN(interop::LaunchConfig config, interop::MakeLaunchConfig(plan, o.plan, target->name, options));
  const std::string text = interop::ArgsFileText(config);
  for (const std::string& note : config.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (to_stdout) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  if (!config.csv.empty()) PW_RETURN_IF_ERROR(WriteFileAtomic(options.schedule_csv_path, config.csv));
  PW_RETURN_IF_ERROR(WriteFileAtomic(o.output, text));
  std::printf("wrote %s (%zu argument lines for %s)\n", o.output.c_str(), config.lines.size(),
              target->display_name.c_str());
  if (!config.csv.empty())
    std::printf(
        "wrote %s (compute_only PyTorch CSV: the plan's order, read by the arguments' "
        "--parallelism.pipeline_parallel_schedule_csv)\n",
        options.schedule_csv_path.c_str());
  return Status::Ok();
}

}  // namespace

void RegisterLaunchConfigCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<LaunchConfigCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "launch-config",
      "Write the arguments with which torchtitan or Megatron-LM run a plan's pipeline (degrees, layer split, "
      "schedule, batch shape, recomputation), one flag per line; docs/INTEROP.md");
  sub->add_option("--plan", opts->plan, "plan file (pipewright plan)")->required();
  std::string targets;
  for (const interop::LaunchTarget& t : interop::LaunchTargets()) targets += (targets.empty() ? "" : "|") + t.name;
  sub->add_option("--for", opts->target, "target trainer: " + targets)->required();
  sub->add_option("-o,--output", opts->output,
                  "write to FILE (atomically) instead of stdout; a torchtitan schedule CSV goes beside it "
                  "(FILE less .args, plus .schedule.csv)");
  sub->add_option("--module", opts->module, "torchtitan only: ConfigManager's --module (e.g. llama3), written first");
  sub->add_option("--config", opts->config,
                  "torchtitan only: ConfigManager's --config (e.g. llama3_8b), written first");
  sub->callback([opts, &ctx]() {
    Status st = Run(*opts);
    if (!st.ok()) Fail(ctx, "launch-config", st);
  });
}

}  // namespace pw::cli
