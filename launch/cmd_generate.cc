// `pipewright generate`: text from a checkpoint (`run --save DIR` or
// `--checkpoint-dir ROOT`) or a Hugging Face directory (`--init-from DIR`),
// in one process, keys and values cached; control bytes printed as \xHH:
//   pipewright generate --checkpoint ckpt/ --tokens 300
//   pipewright generate --init-from hf-model/ --prompt "The" --temperature 0
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
  std::string init_from;
  bool print_ids = false;
  bool no_kv_cache = false;
  exec::SampleOptions sample;
};

std::string JoinIds(const std::vector<int64_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out;
}

Status RunGenerate(const GenerateOptions& o) {
  std::optional<Plan> plan;
  if (!o.plan_path.empty()) {
    PW_ASSIGN_OR_RETURN(Plan p, ReadPlanFile(o.plan_path));
    plan = std::move(p);
  }
  exec::SampleOptions so = o.sample;
  so.kv_cache = !o.no_kv_cache;
  PW_ASSIGN_OR_RETURN(exec::Generation g, exec::Generate(o.checkpoint_dir, o.init_from, so, plan ? &*plan : nullptr));
  if (o.print_ids) {
    std::printf("prompt_ids: %s\nnew_ids: %s\n", JoinIds(g.prompt_ids).c_str(), JoinIds(g.new_ids).c_str());
  } else {
    // A byte model samples any byte: control bytes (escape sequences) and
    // broken UTF-8 are written as \xHH, never raw to the terminal.
    std::printf("%s\n", EscapeForTerminal(g.text, g.text.size()).c_str());
  }
  const size_t later = g.new_ids.size() - 1;
  std::fprintf(stderr,
               "generate: %zu new tokens%s (%s); prompt of %zu tokens %.3f s, then %zu tokens in %.3f s (%.1f/s)\n",
               g.new_ids.size(), g.stopped ? ", stopped at the end-of-text id" : "",
               so.kv_cache ? "KV cache" : "no KV cache", g.prompt_ids.size(), g.prompt_seconds, later, g.decode_seconds,
               later > 0 && g.decode_seconds > 0 ? later / g.decode_seconds : 0.0);
  return Status::Ok();
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", kGenerateDescription);
  cmd->add_option("--checkpoint", o->checkpoint_dir,
                  "the model: a checkpoint (the directory of `run --save`, a step_<n> directory, or a "
                  "--checkpoint-dir root: its latest step)");
  cmd->add_option("--init-from", o->init_from,
                  "the model: a Hugging Face directory (config.json + safetensors; its tokenizer.json is used unless "
                  "--tokenizer is given)");
  cmd->add_option("--plan", o->plan_path, "optional: refuse unless the model is this plan's");
  cmd->add_option("--prompt", o->sample.prompt, "text to continue");
  cmd->add_option("--tokens,--max-new-tokens", o->sample.tokens,
                  "the most tokens to generate (bytes without a tokenizer); it stops earlier after an end-of-text id")
      ->capture_default_str();
  cmd->add_option("--tokenizer", o->sample.tokenizer,
                  "the model's tokenizer (SentencePiece .model, HF tokenizer.json or its directory); encodes the "
                  "prompt, decodes the output; required when the vocabulary is not 256 bytes");
  cmd->add_option("--temperature", o->sample.temperature, "sampling temperature; 0 = greedy (top-k/top-p unused)")
      ->capture_default_str();
  cmd->add_option("--top-k", o->sample.top_k, "sample among the k most likely tokens (after temperature); 0 = off")
      ->capture_default_str();
  cmd->add_option("--top-p", o->sample.top_p,
                  "nucleus sampling (after temperature and top-k): the most likely tokens whose probabilities sum "
                  "to at least p, in [0, 1]; 1 = off")
      ->capture_default_str();
  cmd->add_option("--seed", o->sample.seed, "sampling seed")->capture_default_str();
  cmd->add_flag("--print-ids", o->print_ids,
                "print the prompt's and the generated token ids (two lines) instead of the text");
  cmd->add_flag("--no-kv-cache", o->no_kv_cache,
                "recompute the whole context for every token instead of caching keys and values (slower; for "
                "comparison)");
  cmd->callback([o, &ctx] {
    Status st = RunGenerate(*o);
    if (!st.ok()) Fail(ctx, "generate", st);
  });
}

}  // namespace pw::cli
