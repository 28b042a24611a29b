#include "models/torch/gpt_config.h"

namespace pw::models {

namespace {

// Looks up the first of `keys` present in `config`; returns false if none is.
bool FindInt(const nlohmann::json& config, std::initializer_list<const char*> keys, int64_t* out,
             std::string* found_key) {
  for (const char* k : keys) {
    auto it = config.find(k);
    if (it != config.end() && !it->is_null()) {
      if (!it->is_number_integer()) return false;
      *out = it->get<int64_t>();
      *found_key = k;
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<GptConfig> ParseGptConfig(const nlohmann::json& config, const std::string& source) {
  if (!config.is_object()) return Status::InvalidArgument(source + ": model config is not a JSON object");
  // The executor builds one architecture: GPT-2 style (LayerNorm, GELU MLP,
  // learned positions, full multi-head attention). A config of another family
  // plans fine (models/spec knows Llama) but would silently train a different
  // model than the one planned, so it is refused here.
  if (config.contains("model_type") && config["model_type"].is_string() && config["model_type"] != "gpt2")
    return Status::InvalidArgument(source + ": model_type '" + config["model_type"].get<std::string>() +
                                   "' is not supported by the executor, which builds GPT-2-style models only "
                                   "(use a config with model_type \"gpt2\" or none)");
  if (config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null() &&
      config["num_key_value_heads"] != config.value("num_attention_heads", config.value("n_head", nlohmann::json())))
    return Status::InvalidArgument(source + ": num_key_value_heads differs from the attention heads (grouped-query "
                                   "attention), which the executor does not build");
  GptConfig c;
  std::string key;
  struct Field {
    int64_t* dst;
    std::initializer_list<const char*> keys;
    bool required;
  };
  const Field fields[] = {
      {&c.n_layer, {"n_layer", "num_hidden_layers"}, true},
      {&c.n_embd, {"n_embd", "hidden_size"}, true},
      {&c.n_head, {"n_head", "num_attention_heads"}, true},
      {&c.n_positions, {"n_positions", "max_position_embeddings", "n_ctx"}, true},
      {&c.n_inner, {"n_inner", "intermediate_size"}, false},
      {&c.vocab_size, {"vocab_size"}, false},
  };
  for (const Field& f : fields) {
    if (!FindInt(config, f.keys, f.dst, &key)) {
      bool present = false;
      for (const char* k : f.keys) present |= config.contains(k) && !config[k].is_null();
      if (present) return Status::InvalidArgument(source + ": '" + *f.keys.begin() + "' must be an integer");
      if (f.required) return Status::InvalidArgument(source + ": '" + *f.keys.begin() + "' is missing");
      continue;
    }
    if (*f.dst < 1) return Status::InvalidArgument(source + ": '" + key + "' must be >= 1");
  }
  if (c.n_inner == 0) c.n_inner = 4 * c.n_embd;
  if (c.n_embd % c.n_head != 0)
    return Status::InvalidArgument(source + ": n_embd=" + std::to_string(c.n_embd) + " is not divisible by n_head=" +
                                   std::to_string(c.n_head));
  for (const char* k : {"layer_norm_epsilon", "rms_norm_eps"}) {
    if (config.contains(k) && config[k].is_number()) {
      c.layer_norm_epsilon = config[k].get<double>();
      break;
    }
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
