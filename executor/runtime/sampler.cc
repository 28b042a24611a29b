#include "executor/runtime/sampler.h"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <random>

#include "executor/checkpoint/checkpoint_io.h"
#include "executor/checkpoint/hf_load.h"
#include "executor/data/tokenizer.h"
#include "executor/runtime/logits.h"
#include "executor/runtime/preflight.h"
#include "executor/runtime/torch_util.h"
#include "models/spec/hf_weights.h"
#include "models/spec/safetensors.h"
#include "models/torch/executor_model.h"
#include "models/torch/gpt.h"

namespace pw::exec {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The model to generate with, before its weights are read.
struct Source {
  ModelConfig model;
  std::string where;                   // the checkpoint's step directory or the HF directory, for messages
  std::string model_field;             // where the model's fields come from, for messages
  torch::Dtype dtype = torch::kFloat;  // compute dtype
  std::vector<int64_t> eos_ids;        // from the HF directory's configs
};

// eos_token_id of `j` (an id or a list of ids; null or absent: none).
std::vector<int64_t> EosIds(const nlohmann::json& j) {
  std::vector<int64_t> out;
  auto it = j.find("eos_token_id");
  if (it == j.end()) return out;
  if (it->is_number_integer()) out.push_back(it->get<int64_t>());
  if (it->is_array())
    for (const auto& e : *it)
      if (e.is_number_integer()) out.push_back(e.get<int64_t>());
  return out;
}

StatusOr<Source> OpenHfDir(const std::string& dir) {
  namespace fs = std::filesystem;
  Source s;
  s.where = dir;
  const std::string config_path = dir + "/config.json";
  if (!fs::is_directory(dir)) return Status::NotFound("--init-from " + dir + ": no such directory");
  if (!fs::exists(config_path)) return Status::NotFound("--init-from " + dir + ": no config.json in it");
  PW_ASSIGN_OR_RETURN(nlohmann::json config, ReadJsonFile(config_path));
  PW_ASSIGN_OR_RETURN(s.model, ParseModelConfig(config, config_path));
  s.model_field = config_path + " vocab_size";
  // transformers reads generation_config.json over config.json.
  s.eos_ids = EosIds(config);
  const std::string gen_path = dir + "/generation_config.json";
  if (fs::exists(gen_path)) {
    PW_ASSIGN_OR_RETURN(nlohmann::json gen, ReadJsonFile(gen_path));
    if (gen.contains("eos_token_id")) s.eos_ids = EosIds(gen);
  }
  return s;
}

// Copies the last logits (1, 1, V) to float64.
std::vector<double> LastLogits(const torch::Tensor& logits) {
  torch::Tensor row = logits.reshape({-1}).to(torch::kDouble).contiguous();  // (V)
  const double* p = row.data_ptr<double>();
  return std::vector<double>(p, p + row.numel());
}

// The decoding loop on a loaded model: fills g.new_ids, g.stopped and the
// timings. ids: the prompt, non-empty.
void Decode(models::GptStage& model, const ModelConfig& cfg, const SampleOptions& o, Generation& g) {
  SamplingParams sp;
  sp.temperature = o.temperature;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  std::mt19937_64 rng(o.seed);
  torch::NoGradGuard no_grad;
  const int64_t capacity = cfg.max_positions;
  std::vector<int64_t> ids = g.prompt_ids;
  std::vector<models::KvCache> caches;
  int64_t pos = 0;  // positions in the caches
  auto window = [&](int64_t len) {
    len = std::min<int64_t>(len, static_cast<int64_t>(ids.size()));
    std::vector<int64_t> w(ids.end() - len, ids.end());
    return BatchTensor(w, 1, static_cast<int>(len));  // (1, len)
  };
  Clock::time_point t0 = Clock::now();
  for (int n = 0; n < o.tokens; ++n) {
    torch::Tensor logits;
    if (!o.kv_cache) {
      logits = model->forward(window(capacity));  // (1, T, V)
      logits = logits.narrow(1, logits.size(1) - 1, 1);
    } else if (n == 0 || pos == capacity) {
      // The prompt, or a restart when the context is full: the last half.
      const int64_t len = n == 0 ? capacity : std::max<int64_t>(1, capacity / 2);
      caches.clear();
      torch::Tensor x = window(len);
      logits = model->ForwardCached(x, 0, caches, capacity);  // (1, 1, V)
      pos = x.size(1);
    } else {
      logits = model->ForwardCached(window(1), pos, caches, capacity);  // (1, 1, V)
      pos += 1;
    }
    const int64_t next = ChooseToken(sp, LastLogits(logits), rng);
    if (n == 0) {
      g.prompt_seconds = SecondsSince(t0);
      t0 = Clock::now();
    }
    ids.push_back(next);
    g.new_ids.push_back(next);
    if (std::find(g.eos_ids.begin(), g.eos_ids.end(), next) != g.eos_ids.end()) {
      g.stopped = true;
      break;
    }
  }
  g.decode_seconds = SecondsSince(t0);
}

}  // namespace

StatusOr<Generation> Generate(const std::string& checkpoint, const std::string& hf_dir, const SampleOptions& o,
                              const Plan* plan) {
  if (checkpoint.empty() == hf_dir.empty())
    return Status::InvalidArgument("give the model as exactly one of --checkpoint DIR and --init-from HF_DIR");
  if (o.tokens < 1) return Status::InvalidArgument("--tokens " + std::to_string(o.tokens) + ": must be >= 1");
  // 1. The model's description (no weights yet).
  Source src;
  CheckpointManifest manifest;
  if (!checkpoint.empty()) {
    PW_ASSIGN_OR_RETURN(src.where, ResolveCheckpointDir(checkpoint, "--checkpoint"));
    PW_ASSIGN_OR_RETURN(manifest, ReadManifest(src.where));
    PW_ASSIGN_OR_RETURN(src.model, ManifestModel(manifest, src.where));
    src.model_field = "the checkpoint's model.vocab_size";
    src.dtype = manifest.dtype == "float64" ? torch::kDouble : torch::kFloat;
  } else {
    PW_ASSIGN_OR_RETURN(src, OpenHfDir(hf_dir));
  }
  const ModelConfig& cfg = src.model;
  if (plan != nullptr) {
    if (!plan->model) return Status::InvalidArgument("the plan has no model section");
    PW_RETURN_IF_ERROR(
        CheckSameModel(*plan->model, cfg, (checkpoint.empty() ? "--init-from " : "checkpoint ") + src.where));
  }
  PW_RETURN_IF_ERROR(models::CheckExecutorModel(
      cfg, checkpoint.empty() ? hf_dir + "/config.json" : src.where + "/manifest.json (model)"));
  SamplingParams sp;
  sp.temperature = o.temperature;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  PW_RETURN_IF_ERROR(ValidateSampling(sp, cfg.vocab));
  // 2. The tokenizer: --tokenizer, else the HF directory's tokenizer.json.
  std::string tokenizer_path = o.tokenizer;
  if (tokenizer_path.empty() && !hf_dir.empty() && std::filesystem::exists(hf_dir + "/tokenizer.json"))
    tokenizer_path = hf_dir + "/tokenizer.json";
  std::unique_ptr<Tokenizer> tokenizer;
  if (!tokenizer_path.empty()) {
    PW_ASSIGN_OR_RETURN(tokenizer, Tokenizer::Load(tokenizer_path));
    const int64_t tv = tokenizer->vocab_size();
    // A checkpoint trained with this tokenizer has exactly its vocabulary;
    // HF models often pad theirs (e.g. to a multiple of 64).
    if (!checkpoint.empty() ? tv != cfg.vocab : tv > cfg.vocab)
      return Status::InvalidArgument("--tokenizer " + tokenizer_path + " has a vocabulary of " + std::to_string(tv) +
                                     " pieces but " + src.model_field + " is " + std::to_string(cfg.vocab) +
                                     (!checkpoint.empty() ? "; they must be equal" : "; it must not be larger"));
  } else if (cfg.vocab != 256) {
    return Status::InvalidArgument(
        src.model_field + " is " + std::to_string(cfg.vocab) +
        ": without a tokenizer the prompt and the output are bytes (ids 0-255), which needs vocab_size 256; pass "
        "--tokenizer FILE (the model's tokenizer.json, a directory holding it, or a SentencePiece .model)" +
        (hf_dir.empty() ? std::string() : " or put tokenizer.json into " + hf_dir));
  }
  Generation g;
  g.eos_ids = src.eos_ids;
  if (g.eos_ids.empty() && tokenizer && tokenizer->end_of_text_id() >= 0)
    g.eos_ids.push_back(tokenizer->end_of_text_id());
  if (tokenizer) {
    for (int id : tokenizer->Encode(o.prompt)) g.prompt_ids.push_back(id);
    if (g.prompt_ids.empty()) g.prompt_ids.push_back(std::max(0, tokenizer->end_of_text_id()));
  } else {
    for (unsigned char ch : o.prompt) g.prompt_ids.push_back(ch);
    if (g.prompt_ids.empty()) g.prompt_ids.push_back('\n');
  }
  // 3. Every layer in one stage (a tied head's replica is read like any
  // parameter: head.safetensors, or the HF token table).
  models::GptStage module(nullptr);
  try {
    // Every parameter is read below (a checkpoint or an HF directory).
    module = models::GptStage(cfg, 0, LayerCount(cfg), models::ParamInit::Overwritten(), src.dtype);
    module->eval();
  } catch (const c10::Error& e) {
    return Status::ComputeError("building the model of " + src.where + ": " + e.what_without_backtrace());
  }
  if (!checkpoint.empty()) {
    PW_RETURN_IF_ERROR(LoadLayerFiles(src.where, manifest,
                                      GroupByLayer(module->layer_names(), module->NamedParameters()),
                                      /*optimizer=*/nullptr));
  } else {
    PW_ASSIGN_OR_RETURN(safetensors::Checkpoint weights, safetensors::Checkpoint::Open(hf_dir));
    try {
      PW_RETURN_IF_ERROR(LoadHfParameters(weights, cfg.family, module->NamedParameters(), cfg.tied));
    } catch (const c10::Error& e) {
      return Status::ComputeError("loading " + hf_dir + ": " + e.what_without_backtrace());
    }
  }
  // 4. Decode.
  try {
    Decode(module, cfg, o, g);
  } catch (const c10::Error& e) {
    return Status::ComputeError("generating from " + src.where + ": " + e.what_without_backtrace());
  }
  if (tokenizer) {
    // Prompt and generated ids decoded together: a piece carries its own
    // word boundary, so decoding the generated part alone could glue or
    // split the first word (the prompt comes back normalised, e.g. without
    // a trailing space).
    std::vector<int> all(g.prompt_ids.begin(), g.prompt_ids.end());
    all.insert(all.end(), g.new_ids.begin(), g.new_ids.end());
    g.text = tokenizer->Decode(all);
  } else {
    g.text = o.prompt;
    for (int64_t id : g.new_ids) g.text.push_back(static_cast<char>(id));
  }
  return g;
}

StatusOr<std::string> SampleText(const std::string& checkpoint, const SampleOptions& options, const Plan* plan) {
  PW_ASSIGN_OR_RETURN(Generation g, Generate(checkpoint, "", options, plan));
  return g.text;
}

}  // namespace pw::exec
