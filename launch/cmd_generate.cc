// `pipewright generate`: sample text from the stages `pipewright run --save`
// wrote, in one process:
//   pipewright generate --plan plan.json --checkpoint ckpt/ --tokens 300
#include <cstdio>
#include <memory>

#include "executor/engine.h"
#include "launch/commands.h"

namespace pw::cli {

namespace {

struct GenerateOptions {
  std::string plan_path;
  std::string checkpoint_dir;
  exec::SampleOptions sample;
};

Status RunGenerate(const GenerateOptions& o) {
  PW_ASSIGN_OR_RETURN(Plan plan, ReadPlanFile(o.plan_path));
  PW_ASSIGN_OR_RETURN(std::string text, exec::SampleText(plan, o.checkpoint_dir, o.sample));
  std::printf("%s\n", text.c_str());
  return Status::Ok();
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "sample text from a model trained by `pipewright run --save`");
  cmd->add_option("--plan", o->plan_path, "the plan the model was trained with")->required();
  cmd->add_option("--checkpoint", o->checkpoint_dir, "directory given to `run --save`")->required();
  cmd->add_option("--prompt", o->sample.prompt, "text to continue");
  cmd->add_option("--tokens", o->sample.tokens, "bytes to generate")->capture_default_str();
  cmd->add_option("--temperature", o->sample.temperature, "sampling temperature")->capture_default_str();
  cmd->add_option("--seed", o->sample.seed, "sampling seed")->capture_default_str();
  cmd->callback([o, &ctx] {
    Status st = RunGenerate(*o);
    if (!st.ok()) Fail(ctx, "generate", st);
  });
}

}  // namespace pw::cli
