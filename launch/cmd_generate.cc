// `pipewright generate`: sample text from a checkpoint (`run --save DIR` or
// `--checkpoint-dir ROOT`), in one process; control bytes printed as \xHH:
//   pipewright generate --checkpoint ckpt/ --tokens 300
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "base/format.h"
#include "base/printable.h"
#include "executor/runtime/engine.h"
#include "executor/runtime/sampler.h"
#include "launch/commands.h"
#include "launch/flags.h"

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
    return Status::InvalidArgument("--temperature " + FormatShort(o.sample.temperature) + ": must be finite and > 0");
  }
  std::optional<Plan> plan;
  if (!o.plan_path.empty()) {
    PW_ASSIGN_OR_RETURN(Plan p, ReadPlanFile(o.plan_path));
    plan = std::move(p);
  }
  PW_ASSIGN_OR_RETURN(std::string text, exec::SampleText(o.checkpoint_dir, o.sample, plan ? &*plan : nullptr));
  // A byte model samples any byte: control bytes (escape sequences) and
  // broken UTF-8 are written as \xHH, never raw to the terminal.
  std::printf("%s\n", EscapeForTerminal(text, text.size()).c_str());
  return Status::Ok();
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", kGenerateDescription);
  AddCheckpointSourceFlags(cmd, &o->checkpoint_dir, &o->plan_path);
  cmd->add_option("--prompt", o->sample.prompt, "text to continue");
  cmd->add_option("--tokens", o->sample.tokens, "tokens to generate (bytes without --tokenizer)")
      ->capture_default_str();
  cmd->add_option("--tokenizer", o->sample.tokenizer,
                  "the tokenizer the model was trained with (`run --tokenizer`: SentencePiece .model, HF "
                  "tokenizer.json or its directory); encodes the prompt, decodes the output");
  cmd->add_option("--temperature", o->sample.temperature, "sampling temperature")->capture_default_str();
  cmd->add_option("--seed", o->sample.seed, "sampling seed")->capture_default_str();
  cmd->callback([o, &ctx] {
    Status st = RunGenerate(*o);
    if (!st.ok()) Fail(ctx, "generate", st);
  });
}

}  // namespace pw::cli
