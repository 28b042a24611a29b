#include "executor/sampler.h"

#include <random>

#include <torch/torch.h>

#include "executor/torch_util.h"
#include "executor/preflight.h"
#include "executor/tokenizer.h"
#include "models/torch/gpt.h"

namespace pw::exec {

// --------------------------------------------------------------- sampling ---

StatusOr<std::string> SampleText(const Plan& plan, const std::string& dir, const SampleOptions& options) {
  PW_ASSIGN_OR_RETURN(CheckedPlan checked, PreflightCheck(plan, plan.pp_size));
  if (options.temperature <= 0) return Status::InvalidArgument("--temperature must be > 0");
  const models::GptConfig& cfg = checked.model;
  std::unique_ptr<Tokenizer> tokenizer;
  if (!options.tokenizer.empty()) {
    PW_ASSIGN_OR_RETURN(tokenizer, Tokenizer::Load(options.tokenizer));
    if (tokenizer->vocab_size() != cfg.vocab_size)
      return Status::InvalidArgument("--tokenizer " + options.tokenizer + " has a vocabulary of " +
                                     std::to_string(tokenizer->vocab_size()) +
                                     " pieces but the plan's model.vocab_size is " + std::to_string(cfg.vocab_size) +
                                     "; they must be equal");
  } else if (cfg.vocab_size < 256) {
    return Status::InvalidArgument("plan field 'model.vocab_size' is " + std::to_string(cfg.vocab_size) +
                                   ": without --tokenizer the tokens are bytes, so it needs vocab_size >= 256");
  }
  std::vector<models::GptStage> stages;
  try {
    for (const PlanStage& s : plan.stages) {
      const std::string path = dir + "/stage_" + std::to_string(s.index) + ".pt";
      if (!std::filesystem::exists(path)) return Status::NotFound("checkpoint file " + path + " is missing");
      models::GptStage module(cfg, s.layer_begin, s.layer_end, 0, torch::kFloat);
      try {
        torch::load(module, path, torch::Device(torch::kCPU));  // stages saved from a CUDA run load on the CPU
      } catch (const c10::Error& e) {
        // Most often the files of another plan: other layers in this stage.
        std::string what = e.what_without_backtrace();
        what = what.substr(0, what.find('\n'));
        return Status::InvalidArgument("checkpoint " + dir + " does not match the plan (stage " +
                                       std::to_string(s.index) + ": " + path + ": " + what + ")");
      }
      module->eval();
      stages.push_back(module);
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("loading checkpoint from ") + dir + ": " + e.what_without_backtrace());
  }
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
      const int64_t len = std::min<int64_t>(static_cast<int64_t>(tokens.size()), cfg.n_positions);
      std::vector<int64_t> window(tokens.end() - len, tokens.end());
      torch::Tensor x = BatchTensor(window, 1, static_cast<int>(len));  // (1, t)
      for (auto& s : stages) x = s->forward(x);                          // logits (1, t, V)
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
