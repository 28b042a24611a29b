#include "models/spec/model_family.h"

#include <utility>

#include "base/printable.h"
#include "models/spec/model_config.h"

namespace pw {

namespace {

// HF names: transformers' GPT2LMHeadModel (GPT-2's Conv1D stores a weight as
// (in, out); ours is (out, in)).
std::vector<HfNameRule> Gpt2Names() {
  return {
      {"embedding.wte", "transformer.wte.weight"},
      {"embedding.wpe", "transformer.wpe.weight"},
      {"block.{i}.ln_1", "transformer.h.{i}.ln_1"},
      {"block.{i}.ln_2", "transformer.h.{i}.ln_2"},
      {"block.{i}.attn_qkv", "transformer.h.{i}.attn.c_attn", true},
      {"block.{i}.attn_proj", "transformer.h.{i}.attn.c_proj", true},
      {"block.{i}.mlp_fc", "transformer.h.{i}.mlp.c_fc", true},
      {"block.{i}.mlp_proj", "transformer.h.{i}.mlp.c_proj", true},
      {"head.ln_f", "transformer.ln_f"},
      {"head.lm_head", "lm_head"},
  };
}

// HF names: transformers' LlamaForCausalLM (also Mistral, Qwen2).
std::vector<HfNameRule> LlamaNames() {
  std::vector<HfNameRule> names = {
      {"embedding.embed_tokens", "model.embed_tokens.weight"},
      {"block.{i}.input_layernorm", "model.layers.{i}.input_layernorm"},
      {"block.{i}.post_attention_layernorm", "model.layers.{i}.post_attention_layernorm"},
      {"head.norm", "model.norm"},
      {"head.lm_head", "lm_head"},
  };
  for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"})
    names.push_back({std::string("block.{i}.") + m, std::string("model.layers.{i}.self_attn.") + m});
  for (const char* m : {"gate_proj", "up_proj", "down_proj"})
    names.push_back({std::string("block.{i}.") + m, std::string("model.layers.{i}.mlp.") + m});
  return names;
}

// HF names: transformers' Qwen3ForCausalLM: Llama's, plus the per-head
// RMSNorms of Q and K inside self_attn.
std::vector<HfNameRule> Qwen3Names() {
  std::vector<HfNameRule> names = LlamaNames();
  names.push_back({"block.{i}.q_norm", "model.layers.{i}.self_attn.q_norm"});
  names.push_back({"block.{i}.k_norm", "model.layers.{i}.self_attn.k_norm"});
  return names;
}

// Qwen3 (transformers Qwen3Attention): RMSNorm over each head's d channels
// of Q and of K, after the projections and before RoPE: 2 d weights; each
// keeps its input, the a d + k d projection outputs per token (its sb
// reciprocal RMS per head is not counted, as for the block's own norms).
FamilyBlockTerms Qwen3BlockTerms(const ModelConfig& m) {
  return {2 * m.head_dim, (m.num_heads + m.num_kv_heads) * m.head_dim};
}

}  // namespace

const std::vector<ModelFamilyInfo>& ModelFamilies() {
  // One row per family, in enum order.
  static const std::vector<ModelFamilyInfo> families = {
      {ModelFamily::kGpt2,
       "gpt2",
       DecoderStyle::kGpt2,
       {{"gpt2", "GPT2LMHeadModel"}},
       Gpt2Names(),
       "transformer.",
       "embedding.wte",
       nullptr},
      {ModelFamily::kLlama,
       "llama",
       DecoderStyle::kLlama,
       {{"llama", "LlamaForCausalLM"},
        {"mistral", "MistralForCausalLM"},
        {"qwen2", "Qwen2ForCausalLM", /*qkv_bias=*/true, /*sliding_window_opt_in=*/true}},
       LlamaNames(),
       "",
       "embedding.embed_tokens",
       nullptr},
      {ModelFamily::kQwen3,
       "qwen3",
       DecoderStyle::kLlama,
       {{"qwen3", "Qwen3ForCausalLM", /*qkv_bias=*/false, /*sliding_window_opt_in=*/true, /*default_head_dim=*/128}},
       Qwen3Names(),
       "",
       "embedding.embed_tokens",
       Qwen3BlockTerms},
  };
  return families;
}

const ModelFamilyInfo& FamilyInfo(ModelFamily family) {
  for (const ModelFamilyInfo& f : ModelFamilies())
    if (f.family == family) return f;
  return ModelFamilies().front();  // unreachable: every enumerator has a row (models_spec_test checks)
}

const char* ModelFamilyName(ModelFamily family) { return FamilyInfo(family).name.c_str(); }

StatusOr<ModelFamily> FindModelFamily(const std::string& name) {
  std::string known;
  for (const ModelFamilyInfo& f : ModelFamilies()) {
    if (f.name == name) return f.family;
    known += (known.empty() ? "" : ", ") + f.name;
  }
  return Status::NotFound("model family '" + EscapeForTerminal(name, 64) + "' is unknown; known: " + known);
}

std::string KnownModelTypes() {
  std::string known;
  for (const ModelFamilyInfo& f : ModelFamilies())
    for (const HfModelType& t : f.model_types) known += (known.empty() ? "" : ", ") + t.model_type;
  return known;
}

StatusOr<FoundModelType> FindHfModelType(const std::string& model_type, const std::string& source) {
  for (const ModelFamilyInfo& f : ModelFamilies())
    for (const HfModelType& t : f.model_types)
      if (t.model_type == model_type) return FoundModelType{&f, &t};
  // Escaped: a JSON string may hold DEL and other bytes a terminal acts on.
  return Status::InvalidArgument(source + ": field 'model_type' is '" + EscapeForTerminal(model_type, 64) +
                                 "'; known: " + KnownModelTypes());
}

Status CheckFamilyShape(const ModelConfig& m, const std::string& source) {
  const ModelFamilyInfo& f = FamilyInfo(m.family);
  auto refuse = [&](const std::string& field, const std::string& why) {
    return Status::InvalidArgument(source + ": field '" + field + "' " + why + " (architecture '" + f.name + "')");
  };
  const bool gpt2 = f.style == DecoderStyle::kGpt2;
  if (m.layer_norm != gpt2)
    return refuse("norm", std::string("is '") + (m.layer_norm ? "layernorm" : "rmsnorm") +
                              "': the family's blocks use " + (gpt2 ? "LayerNorm" : "RMSNorm"));
  if (m.gated_mlp == gpt2)
    return refuse("mlp", std::string("is '") + (m.gated_mlp ? "swiglu" : "gelu") + "': the family's blocks use " +
                             (gpt2 ? "a GELU MLP" : "a SwiGLU MLP"));
  if (m.learned_positions != gpt2)
    return refuse("positions", std::string("is '") + (m.learned_positions ? "learned" : "rope") +
                                   "': the family uses " + (gpt2 ? "learned positions" : "RoPE"));
  if (m.num_heads <= 0 || m.num_kv_heads <= 0 || m.num_heads % m.num_kv_heads != 0)
    return refuse("num_key_value_heads", "(" + std::to_string(m.num_kv_heads) + ") must divide num_attention_heads (" +
                                             std::to_string(m.num_heads) + ")");
  if (gpt2 && m.num_kv_heads != m.num_heads)
    return refuse("num_key_value_heads", "(" + std::to_string(m.num_kv_heads) + ") differs from the attention heads (" +
                                             std::to_string(m.num_heads) + "): GPT-2 has no grouped-query attention");
  if (gpt2 && m.head_dim * m.num_heads != m.hidden)
    return refuse("head_dim", "is " + std::to_string(m.head_dim) + ": GPT-2 splits hidden_size " +
                                  std::to_string(m.hidden) + " into " + std::to_string(m.num_heads) + " heads");
  if (!gpt2 && m.head_dim % 2 != 0)
    return refuse("head_dim", "is " + std::to_string(m.head_dim) + ": RoPE turns channel pairs, it must be even");
  if (m.qkv_bias) {
    bool has = false;
    for (const HfModelType& t : f.model_types) has = has || t.qkv_bias;
    if (!has) return refuse("qkv_bias", "is true: no model type of the family has Q, K, V-only biases");
  }
  return Status::Ok();
}

FamilyBlockTerms BlockTerms(const ModelConfig& m) {
  const ModelFamilyInfo& f = FamilyInfo(m.family);
  return f.block_terms ? f.block_terms(m) : FamilyBlockTerms{};
}

}  // namespace pw
