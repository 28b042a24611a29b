#include "models/spec/hf_weights.h"

#include <cstdio>
#include <tuple>
#include <utility>

namespace pw {

namespace {

// "block.12.rest" -> (12, "rest"); false if `s` does not start with "block.<i>.".
bool SplitBlock(const std::string& s, int* index, std::string* rest) {
  const std::string prefix = "block.";
  if (s.compare(0, prefix.size(), prefix) != 0) return false;
  size_t dot = s.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return false;
  const std::string num = s.substr(prefix.size(), dot - prefix.size());
  for (char ch : num)
    if (ch < '0' || ch > '9') return false;
  *index = std::stoi(num);
  *rest = s.substr(dot + 1);
  return true;
}

std::string Num(double v) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.17g", v);
  return b;
}

}  // namespace

StatusOr<HfTensorName> HfNameOf(ModelFamily family, const std::string& ours, bool tied) {
  const ModelFamilyInfo& f = FamilyInfo(family);
  if (tied && ours == "head.lm_head.weight") {
    PW_ASSIGN_OR_RETURN(HfTensorName out, HfNameOf(family, f.token_table));
    out.candidates.push_back("lm_head.weight");
    return out;
  }
  // The rule key: the block index replaced by "{i}".
  int i = -1;
  std::string rest, key = ours;
  if (SplitBlock(ours, &i, &rest)) key = "block.{i}." + rest;
  const auto with_index = [&](const std::string& pattern) {
    const size_t at = pattern.find("{i}");
    return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(i) + pattern.substr(at + 3);
  };
  for (const HfNameRule& rule : f.hf_names) {
    HfTensorName out;
    if (key == rule.ours) {
      out.name = with_index(rule.hf);
      out.transpose = rule.transpose;
    } else if (key == rule.ours + ".weight" || key == rule.ours + ".bias") {
      const std::string suffix = key.substr(rule.ours.size());
      out.name = with_index(rule.hf) + suffix;
      out.transpose = rule.transpose && suffix == ".weight";
    } else {
      continue;
    }
    out.candidates = {out.name};
    const std::string& prefix = f.hf_optional_prefix;
    if (!prefix.empty() && out.name.compare(0, prefix.size(), prefix) == 0)
      out.candidates.push_back(out.name.substr(prefix.size()));
    return out;
  }
  return Status::InvalidArgument(std::string("parameter '") + ours + "' has no Hugging Face name in a " + f.name +
                                 " model");
}

nlohmann::json HfConfigJson(const ModelConfig& m) {
  nlohmann::json j;
  const double pdrop = m.dropout ? 0.1 : 0.0;
  const ModelFamilyInfo& f = FamilyInfo(m.family);
  const HfModelType* type = &f.model_types.front();
  for (const HfModelType& t : f.model_types)
    if (t.qkv_bias == m.qkv_bias) {
      type = &t;
      break;
    }
  j["model_type"] = type->model_type;
  j["architectures"] = {type->architecture};
  if (f.style == DecoderStyle::kGpt2) {
    j["n_layer"] = m.num_layers;
    j["n_embd"] = m.hidden;
    j["n_head"] = m.num_heads;
    j["n_inner"] = m.ffn;
    j["n_positions"] = m.max_positions;
    j["n_ctx"] = m.max_positions;
    j["vocab_size"] = m.vocab;
    j["layer_norm_epsilon"] = m.norm_eps;
    j["activation_function"] = m.gelu_tanh ? "gelu_new" : "gelu";
    j["attn_pdrop"] = pdrop;
    j["resid_pdrop"] = pdrop;
    j["embd_pdrop"] = pdrop;
  } else {
    j["num_hidden_layers"] = m.num_layers;
    j["hidden_size"] = m.hidden;
    j["intermediate_size"] = m.ffn;
    j["num_attention_heads"] = m.num_heads;
    j["num_key_value_heads"] = m.num_kv_heads;
    j["head_dim"] = m.head_dim;
    j["vocab_size"] = m.vocab;
    j["max_position_embeddings"] = m.max_positions;
    j["rms_norm_eps"] = m.norm_eps;
    j["rope_theta"] = m.rope_theta;
    j["hidden_act"] = "silu";
    j["attention_dropout"] = pdrop;
    if (!m.qkv_bias) {
      j["attention_bias"] = m.attention_bias;
      j["mlp_bias"] = m.mlp_bias;
    }
    if (m.rope_scaling.type == RopeScaling::Type::kDefault) {
      j["rope_scaling"] = nullptr;
    } else {
      nlohmann::json s = {{"rope_type", RopeScalingTypeName(m.rope_scaling.type)},
                          {"type", RopeScalingTypeName(m.rope_scaling.type)},
                          {"factor", m.rope_scaling.factor}};
      if (m.rope_scaling.type == RopeScaling::Type::kLlama3) {
        s["low_freq_factor"] = m.rope_scaling.low_freq_factor;
        s["high_freq_factor"] = m.rope_scaling.high_freq_factor;
        s["original_max_position_embeddings"] = m.rope_scaling.original_max_position_embeddings;
      }
      j["rope_scaling"] = s;
    }
  }
  j["tie_word_embeddings"] = m.tied;
  j["torch_dtype"] = "float32";
  return j;
}

Status CheckSameModel(const ModelConfig& p, const ModelConfig& d, const std::string& source) {
  const bool gpt = FamilyInfo(p.family).style == DecoderStyle::kGpt2;
  const auto differ = [&](const std::string& field, const std::string& dir_v, const std::string& plan_v) {
    return Status::InvalidArgument(source + ": field '" + field + "' is " + dir_v + " but the plan's model has " +
                                   plan_v + " (the directory holds another model)");
  };
  if (p.family != d.family) return differ("model_type", ModelFamilyName(d.family), ModelFamilyName(p.family));
  const std::vector<std::tuple<const char*, int64_t, int64_t>> ints = {
      {gpt ? "n_layer" : "num_hidden_layers", d.num_layers, p.num_layers},
      {gpt ? "n_embd" : "hidden_size", d.hidden, p.hidden},
      {gpt ? "n_head" : "num_attention_heads", d.num_heads, p.num_heads},
      {"num_key_value_heads", d.num_kv_heads, p.num_kv_heads},
      {"head_dim", d.head_dim, p.head_dim},
      {gpt ? "n_inner" : "intermediate_size", d.ffn, p.ffn},
      {"vocab_size", d.vocab, p.vocab},
      {gpt ? "n_positions" : "max_position_embeddings", d.max_positions, p.max_positions},
      {"tie_word_embeddings", d.tied, p.tied},
      {"attention_bias", d.attention_bias, p.attention_bias},
      {"attention_bias (Q, K, V only: qwen2)", d.qkv_bias, p.qkv_bias},
      {"mlp_bias", d.mlp_bias, p.mlp_bias},
      {gpt ? "attn_pdrop/resid_pdrop/embd_pdrop" : "attention_dropout", d.dropout, p.dropout},
      {"gated MLP (model_type)", d.gated_mlp, p.gated_mlp},
      {"LayerNorm vs RMSNorm (model_type)", d.layer_norm, p.layer_norm},
      {"learned positions (model_type)", d.learned_positions, p.learned_positions},
      {"activation_function (1: gelu_new, 0: gelu)", d.gelu_tanh, p.gelu_tanh}};
  for (const auto& [field, dv, pv] : ints)
    if (dv != pv) return differ(field, std::to_string(dv), std::to_string(pv));
  if (d.norm_eps != p.norm_eps)
    return differ(gpt ? "layer_norm_epsilon" : "rms_norm_eps", Num(d.norm_eps), Num(p.norm_eps));
  if (!gpt) {
    if (d.rope_theta != p.rope_theta) return differ("rope_theta", Num(d.rope_theta), Num(p.rope_theta));
    const RopeScaling &a = d.rope_scaling, &b = p.rope_scaling;
    if (a.type != b.type)
      return differ("rope_scaling.rope_type", RopeScalingTypeName(a.type), RopeScalingTypeName(b.type));
    if (a.factor != b.factor) return differ("rope_scaling.factor", Num(a.factor), Num(b.factor));
    if (!(a == b)) return differ("rope_scaling (llama3 fields)", "other values", "these");
  }
  return Status::Ok();
}

}  // namespace pw
