#include "launch/flags.h"

#include <cstdio>

namespace pw::cli {

CLI::Option* AddPipelineSizeFlag(CLI::App* cmd, int* pp, const std::string& help) {
  return cmd->add_option("--pp,--pipeline-model-parallel-size", *pp, help);
}

CLI::Option* AddVirtualStagesFlag(CLI::App* cmd, int* v, const std::string& help) {
  return cmd->add_option("--virtual-stages,--num-virtual-stages-per-pipeline-rank", *v, help);
}

std::string CanonicalDtype(const std::string& text) {
  if (text == "bf16" || text == "fp32" || text == "fp64") return text;
  if (text == "float32") return "fp32";
  if (text == "float64") return "fp64";
  if (text == "bfloat16") return "bf16";
  return "";
}

CLI::Option* AddDtypeFlag(CLI::App* cmd, std::string* dtype, const std::string& help) {
  const std::string command = cmd->get_name();
  return cmd->add_option("--dtype", *dtype, help)
      ->transform(
          [command](std::string value) -> std::string {
            const std::string canonical = CanonicalDtype(value);
            if (canonical.empty())
              throw CLI::ValidationError(
                  "'" + value + "' is not a dtype: give bf16, fp32 or fp64 (docs/PLAN_FORMAT.md, training.dtype)");
            if (canonical != value)
              std::fprintf(stderr, "pipewright %s: note: --dtype %s is read as %s (the plan format's name)\n",
                           command.c_str(), value.c_str(), canonical.c_str());
            return canonical;
          },
          "bf16|fp32|fp64");
}

void AddCheckpointSourceFlags(CLI::App* cmd, std::string* checkpoint_dir, std::string* plan_path) {
  cmd->add_option("--checkpoint", *checkpoint_dir,
                  "a checkpoint: the directory of `run --save`, a step_<n> directory, or a --checkpoint-dir root "
                  "(its latest step)")
      ->required();
  cmd->add_option("--plan", *plan_path, "optional: refuse unless the checkpoint holds this plan's model");
}

}  // namespace pw::cli
