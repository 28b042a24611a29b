#include "models/torch/gpt_config.h"

#include <cmath>

#include "models/spec/model_config.h"

namespace pw::models {

namespace {

using nlohmann::json;

constexpr int64_t kByteVocab = 256;  // the executor's tokenizer: one token per byte

}  // namespace

StatusOr<GptConfig> ParseGptConfig(const json& config, const std::string& source) {
  if (!config.is_object()) return Status::InvalidArgument(source + ": model config is not a JSON object");
  // The executor builds one architecture: GPT-2 style (LayerNorm, GELU MLP,
  // learned positions, full multi-head attention). A config of another family
  // plans fine (models/spec knows Llama) but would silently train a different
  // model than the one planned, so it is refused here.
  const auto type = config.find("model_type");
  const bool typed = type != config.end() && type->is_string();
  if (typed && *type != "gpt2")
    return Status::InvalidArgument(source + ": model_type '" + type->get<std::string>() +
                                   "' is not supported by the executor, which builds GPT-2-style models only "
                                   "(use a config with model_type \"gpt2\" or none)");
  // The sizes come from the planner's reader, read as GPT-2 (an untyped
  // config's family is checked below, after the GQA check, so that a GQA
  // config is named as such), with the executor's byte vocabulary when the
  // config has none.
  json gpt = config;
  if (!typed) gpt["model_type"] = "gpt2";
  if (!gpt.contains("vocab_size") || gpt["vocab_size"].is_null()) gpt["vocab_size"] = kByteVocab;
  PW_ASSIGN_OR_RETURN(ModelConfig m, ParseModelConfig(gpt, source));
  if (m.num_kv_heads != m.num_heads)
    return Status::InvalidArgument(source + ": num_key_value_heads (" + std::to_string(m.num_kv_heads) +
                                   ") differs from the attention heads (" + std::to_string(m.num_heads) +
                                   "): grouped-query attention, which the executor does not build");
  if (!typed) {
    PW_ASSIGN_OR_RETURN(ModelFamily planned, ConfigModelFamily(config, source));
    if (planned != ModelFamily::kGpt2)
      return Status::InvalidArgument(source + ": no 'model_type' and no GPT-2 field name ('n_layer', 'n_embd'): "
                                     "the planner reads this config as model_type '" +
                                     std::string(ModelFamilyName(planned)) +
                                     "', which the executor does not build; add \"model_type\": \"gpt2\" to "
                                     "train it as GPT-2");
  }
  GptConfig c;
  c.n_layer = m.num_layers;
  c.n_embd = m.hidden;
  c.n_head = m.num_heads;
  c.n_inner = m.ffn;
  c.n_positions = m.max_positions;
  c.vocab_size = m.vocab;
  for (const char* k : {"layer_norm_epsilon", "rms_norm_eps"}) {
    auto it = config.find(k);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
      return Status::InvalidArgument(source + ": field '" + k + "' must be a positive number, got " + it->dump());
    c.layer_norm_epsilon = it->get<double>();
    break;
  }
  return c;
}

nlohmann::json GptConfigToJson(const GptConfig& c) {
  nlohmann::json j;
  j["n_layer"] = c.n_layer;
  j["n_embd"] = c.n_embd;
  j["n_head"] = c.n_head;
  j["n_inner"] = c.n_inner;
  j["n_positions"] = c.n_positions;
  j["vocab_size"] = c.vocab_size;
  j["layer_norm_epsilon"] = c.layer_norm_epsilon;
  return j;
}

std::vector<std::string> GptLayerNames(const GptConfig& c) {
  std::vector<std::string> names;
  names.push_back("embedding");
  for (int64_t i = 0; i < c.n_layer; ++i) names.push_back("block." + std::to_string(i));
  names.push_back("head");
  return names;
}

int64_t WeightStashBytes(const GptConfig& c, int layer, int64_t rows, int64_t seq, int64_t element_bytes) {
  const int64_t tokens = rows * seq, C = c.n_embd, f = c.n_inner;
  if (layer == 0) return tokens * (8 + C * element_bytes);
  if (layer == c.NumLayers() - 1) return tokens * (C + c.vocab_size) * element_bytes;
  return tokens * ((C + 3 * C) + (C + C) + (C + f) + (f + C)) * element_bytes;
}

double LayerWeightGemmFlops(const GptConfig& c, int layer, int64_t rows, int64_t seq) {
  const double tokens = static_cast<double>(rows * seq), C = static_cast<double>(c.n_embd),
               f = static_cast<double>(c.n_inner);
  if (layer == 0) return 0.0;
  if (layer == c.NumLayers() - 1) return 2.0 * tokens * C * static_cast<double>(c.vocab_size);
  return 2.0 * tokens * (3 * C * C + C * C + 2 * C * f);
}

double LayerForwardFlops(const GptConfig& c, int layer, int64_t rows, int64_t seq) {
  const double tokens = static_cast<double>(rows * seq);
  if (layer == 0) return tokens * static_cast<double>(c.n_embd);  // gather + add: memory bound, tiny
  double attention_core = (layer == c.NumLayers() - 1) ? 0.0 : 4.0 * tokens * static_cast<double>(seq * c.n_embd);
  return LayerWeightGemmFlops(c, layer, rows, seq) + attention_core;
}

}  // namespace pw::models
