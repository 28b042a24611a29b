#include "executor/runtime/sampler.h"

#include <torch/torch.h>

#include <random>

#include "executor/checkpoint/checkpoint_io.h"
#include "executor/data/tokenizer.h"
#include "executor/runtime/preflight.h"
#include "executor/runtime/torch_util.h"
#include "models/spec/hf_weights.h"
#include "models/torch/executor_model.h"
#include "models/torch/gpt.h"

namespace pw::exec {

// --------------------------------------------------------------- sampling ---

StatusOr<std::string> SampleText(const std::string& checkpoint, const SampleOptions& options, const Plan* plan) {
  if (options.temperature <= 0) return Status::InvalidArgument("--temperature must be > 0");
  PW_ASSIGN_OR_RETURN(std::string dir, ResolveCheckpointDir(checkpoint, "--checkpoint"));
  PW_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifest(dir));
  PW_ASSIGN_OR_RETURN(ModelConfig model, ManifestModel(manifest, dir));
  if (plan != nullptr) {
    if (!plan->model) return Status::InvalidArgument("the plan has no model section");
    PW_RETURN_IF_ERROR(CheckSameModel(*plan->model, model, "checkpoint " + dir));
  }
  PW_RETURN_IF_ERROR(models::CheckExecutorModel(model, dir + "/manifest.json (model)"));
  const ModelConfig& cfg = model;
  std::unique_ptr<Tokenizer> tokenizer;
  if (!options.tokenizer.empty()) {
    PW_ASSIGN_OR_RETURN(tokenizer, Tokenizer::Load(options.tokenizer));
    if (tokenizer->vocab_size() != cfg.vocab)
      return Status::InvalidArgument(
          "--tokenizer " + options.tokenizer + " has a vocabulary of " + std::to_string(tokenizer->vocab_size()) +
          " pieces but the checkpoint's model.vocab_size is " + std::to_string(cfg.vocab) + "; they must be equal");
  } else if (cfg.vocab < 256) {
    return Status::InvalidArgument("the checkpoint's model.vocab_size is " + std::to_string(cfg.vocab) +
                                   ": without --tokenizer the tokens are bytes, so it needs vocab_size >= 256");
  }
  // Every layer in one stage, in the checkpoint's dtype (a tied head's
  // replica is read from head.safetensors like any parameter).
  const torch::Dtype dtype = manifest.dtype == "float64" ? torch::kDouble : torch::kFloat;
  models::GptStage module(nullptr);
  try {
    module = models::GptStage(cfg, 0, LayerCount(cfg), 0, dtype);
    module->eval();
  } catch (const c10::Error& e) {
    return Status::ComputeError("building the model of " + dir + ": " + e.what_without_backtrace());
  }
  PW_RETURN_IF_ERROR(LoadLayerFiles(dir, manifest, GroupByLayer(module->layer_names(), module->NamedParameters()),
                                    /*optimizer=*/nullptr));
  std::vector<models::GptStage> stages = {module};
  std::vector<int64_t> tokens;
  if (tokenizer) {
    for (int id : tokenizer->Encode(options.prompt)) tokens.push_back(id);
  } else {
    for (unsigned char ch : options.prompt) tokens.push_back(ch);
  }
  if (tokens.empty()) tokens.push_back(tokenizer ? 0 : '\n');
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  torch::NoGradGuard no_grad;
  std::string out = options.prompt;
  try {
    for (int n = 0; n < options.tokens; ++n) {
      const int64_t len = std::min<int64_t>(static_cast<int64_t>(tokens.size()), cfg.max_positions);
      std::vector<int64_t> window(tokens.end() - len, tokens.end());
      torch::Tensor x = BatchTensor(window, 1, static_cast<int>(len));                // (1, t)
      for (auto& s : stages) x = s->forward(x);                                       // logits (1, t, V)
      torch::Tensor logits = x[0][len - 1].to(torch::kDouble) / options.temperature;  // (V)
      torch::Tensor probs = torch::softmax(logits, 0).contiguous();                   // (V)
      const double* p = probs.data_ptr<double>();
      double u = uniform(rng), acc = 0.0;
      int64_t next = probs.size(0) - 1;
      for (int64_t v = 0; v < probs.size(0); ++v) {
        acc += p[v];
        if (u < acc) {
          next = v;
          break;
        }
      }
      tokens.push_back(next);
      if (!tokenizer) out.push_back(static_cast<char>(next));
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("sampling from ") + dir + ": " + e.what_without_backtrace());
  }
  if (tokenizer) {
    // Prompt and generated ids decoded together: a piece carries its own
    // word boundary, so decoding the generated part alone could glue or
    // split the first word (the prompt comes back normalised, e.g. without
    // a trailing space).
    out = tokenizer->Decode(std::vector<int>(tokens.begin(), tokens.end()));
  }
  return out;
}

}  // namespace pw::exec
