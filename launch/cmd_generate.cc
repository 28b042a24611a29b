// `pipewright generate`: sample text from the stages `pipewright run --save`
// wrote, in one process:
//   pipewright generate --plan plan.json --checkpoint ckpt/ --tokens 300
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "executor/engine.h"
#include "executor/sampler.h"
#include "launch/commands.h"

namespace pw::cli {

namespace {

struct GenerateOptions {
  std::string plan_path;
  std::string checkpoint_dir;
  exec::SampleOptions sample;
};

Status RunGenerate(const GenerateOptions& o) {
  if (o.sample.tokens < 1)
    return Status::InvalidArgument("--tokens " + std::to_string(o.sample.tokens) + ": must be >= 1");
  if (!std::isfinite(o.sample.temperature) || o.sample.temperature <= 0) {
    char v[64];
    std::snprintf(v, sizeof(v), "%g", o.sample.temperature);
    return Status::InvalidArgument(std::string("--temperature ") + v + ": must be finite and > 0");
  }
  PW_ASSIGN_OR_RETURN(Plan plan, ReadPlanFile(o.plan_path));
  StatusOr<std::string> text = exec::SampleText(plan, o.checkpoint_dir, o.sample);
  if (!text.ok()) {
    // SampleText says "... does not match the plan (stage s: ...)" when a
    // stage file has other layers than the plan's stage: name the plan file.
    const std::string& m = text.status().message();
    const std::string key = "does not match the plan";
    const size_t at = m.find(key);
    if (text.status().code() == StatusCode::kInvalidArgument && at != std::string::npos)
      return Status::InvalidArgument(m.substr(0, at) + "does not match plan " + o.plan_path +
                                     m.substr(at + key.size()));
    return text.status();
  }
  std::printf("%s\n", text->c_str());
  return Status::Ok();
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", kGenerateDescription);
  cmd->add_option("--plan", o->plan_path, "the plan the model was trained with")->required();
  cmd->add_option("--checkpoint", o->checkpoint_dir, "directory given to `run --save`")->required();
  cmd->add_option("--prompt", o->sample.prompt, "text to continue");
  cmd->add_option("--tokens", o->sample.tokens, "tokens to generate (bytes without --tokenizer)")->capture_default_str();
  cmd->add_option("--tokenizer", o->sample.tokenizer,
                  "SentencePiece .model the model was trained with (`run --tokenizer`); encodes the prompt, decodes "
                  "the output");
  cmd->add_option("--temperature", o->sample.temperature, "sampling temperature")->capture_default_str();
  cmd->add_option("--seed", o->sample.seed, "sampling seed")->capture_default_str();
  cmd->callback([o, &ctx] {
    Status st = RunGenerate(*o);
    if (!st.ok()) Fail(ctx, "generate", st);
  });
}

}  // namespace pw::cli
