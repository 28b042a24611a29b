#include "models/torch/gpt_config.h"

#include <cmath>

#include "base/printable.h"
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
    // Escaped: a JSON string may hold DEL and other bytes a terminal acts on
    // (found by tests/fuzz/model_config_fuzz).
    return Status::InvalidArgument(source + ": model_type '" + EscapeForTerminal(type->get<std::string>(), 64) +
                                   "' is not supported by the executor, which builds GPT-2-style models only "
                                   "(use a config with model_type \"gpt2\" or none)");
  // The sizes come from the planner's reader, read as GPT-2 (an untyped
  // config's family is checked below, so that a GQA config is named as
  // such), with the executor's byte vocabulary when the config has none.
  json gpt = config;
  if (!typed) gpt["model_type"] = "gpt2";
  if (!gpt.contains("vocab_size") || gpt["vocab_size"].is_null()) gpt["vocab_size"] = kByteVocab;
  // (It refuses a GPT-2 config with grouped-query attention.)
  PW_ASSIGN_OR_RETURN(ModelConfig m, ParseModelConfig(gpt, source));
  if (!typed) {
    PW_ASSIGN_OR_RETURN(ModelFamily planned, ConfigModelFamily(config, source));
    if (planned != ModelFamily::kGpt2)
      return Status::InvalidArgument(source + ": no 'model_type' and no GPT-2 field name ('n_layer', 'n_embd'): "
                                     "the planner reads this config as model_type '" +
                                     std::string(ModelFamilyName(planned)) +
                                     "', which the executor does not build; add \"model_type\": \"gpt2\" to "
                                     "train it as GPT-2");
  }
  return GptShape(m, source);
}

namespace {

// The sizes both families share, from the normalised model.
GptConfig CommonShape(const ModelConfig& m) {
  GptConfig c;
  c.n_layer = m.num_layers;
  c.n_embd = m.hidden;
  c.n_head = m.num_heads;
  c.n_inner = m.ffn;
  c.n_positions = m.max_positions;
  c.vocab_size = m.vocab;
  c.layer_norm_epsilon = m.norm_eps;
  c.tied = m.tied;
  return c;
}

}  // namespace

StatusOr<GptConfig> GptShape(const ModelConfig& m, const std::string& source) {
  auto refuse = [&](const std::string& field, const std::string& why) {
    return Status::InvalidArgument(source + ": field '" + field + "' " + why);
  };
  if (m.family != ModelFamily::kGpt2)
    return refuse("architecture", std::string("is '") + ModelFamilyName(m.family) +
                                      "': the executor builds GPT-2-style models only (LayerNorm, GELU MLP, learned "
                                      "positions)");
  if (m.num_kv_heads != m.num_heads)
    return refuse("num_key_value_heads", "(" + std::to_string(m.num_kv_heads) + ") differs from the attention heads (" +
                                             std::to_string(m.num_heads) +
                                             "): grouped-query attention, which the executor does not build");
  return CommonShape(m);
}

namespace {

// The Llama family's shape (models/torch/llama.h). Refuses, naming the field,
// a model section that is not what the Llama layers build.
StatusOr<GptConfig> LlamaShape(const ModelConfig& m, const std::string& source) {
  auto refuse = [&](const std::string& field, const std::string& why) {
    return Status::InvalidArgument(source + ": field '" + field + "' " + why);
  };
  if (m.layer_norm) return refuse("norm", "is 'layernorm': the executor's Llama blocks use RMSNorm");
  if (!m.gated_mlp) return refuse("mlp", "is 'gelu': the executor's Llama blocks use a SwiGLU MLP");
  if (m.learned_positions) return refuse("positions", "is 'learned': the executor's Llama blocks use RoPE");
  if (m.head_dim % 2 != 0)
    return refuse("head_dim", "is " + std::to_string(m.head_dim) + ": RoPE turns channel pairs, it must be even");
  if (m.num_kv_heads <= 0 || m.num_heads % m.num_kv_heads != 0)
    return refuse("num_key_value_heads", "(" + std::to_string(m.num_kv_heads) +
                                             ") must divide num_attention_heads (" + std::to_string(m.num_heads) + ")");
  GptConfig c = CommonShape(m);
  c.family = ModelFamily::kLlama;
  c.n_kv_head = m.num_kv_heads;
  c.head_dim = m.head_dim;
  c.attention_bias = m.attention_bias;
  c.qkv_bias = m.qkv_bias && !m.attention_bias;
  c.mlp_bias = m.mlp_bias;
  c.rope_theta = m.rope_theta;
  c.rope_scaling = m.rope_scaling;
  return c;
}

}  // namespace

StatusOr<GptConfig> GptFromModel(const ModelConfig& m, const std::string& source) {
  auto refuse = [&](const std::string& field, const std::string& why) {
    return Status::InvalidArgument(source + ": field '" + field + "' " + why);
  };
  GptConfig c;
  if (m.family == ModelFamily::kLlama) {
    PW_ASSIGN_OR_RETURN(c, LlamaShape(m, source));
  } else {
    PW_ASSIGN_OR_RETURN(c, GptShape(m, source));
  }
  if (m.dropout)
    return refuse("dropout",
                  m.family == ModelFamily::kLlama
                      ? "is true (attention_dropout > 0): the executor has no dropout layers; set it to 0 in the "
                        "config and plan again"
                      : "is true (the config's attn_pdrop, resid_pdrop or embd_pdrop is above 0, or absent, which "
                        "HF reads as 0.1): the executor has no dropout layers; set all three to 0 in the config "
                        "and plan again");
  return c;
}

std::vector<std::string> GptLayerNames(const GptConfig& c) {
  std::vector<std::string> names;
  names.push_back("embedding");
  for (int64_t i = 0; i < c.n_layer; ++i) names.push_back("block." + std::to_string(i));
  names.push_back("head");
  return names;
}

}  // namespace pw::models
