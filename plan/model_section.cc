#include "plan/model_section.h"

namespace pw::plan_json {

using ojson = nlohmann::ordered_json;

ojson ModelToJson(const ModelConfig& m) {
  const bool llama = FamilyInfo(m.family).style == DecoderStyle::kLlama;
  ojson j;
  j["name"] = m.name;
  j["architecture"] = ModelFamilyName(m.family);
  j["num_layers"] = m.num_layers;
  j["hidden_size"] = m.hidden;
  j["num_attention_heads"] = m.num_heads;
  j["num_key_value_heads"] = m.num_kv_heads;
  j["head_dim"] = m.head_dim;
  j["intermediate_size"] = m.ffn;
  j["vocab_size"] = m.vocab;
  j["max_position_embeddings"] = m.max_positions;
  j["norm"] = m.layer_norm ? "layernorm" : "rmsnorm";
  j["norm_eps"] = m.norm_eps;
  j["mlp"] = m.gated_mlp ? "swiglu" : m.gelu_tanh ? "gelu_tanh" : "gelu";
  j["positions"] = m.learned_positions ? "learned" : "rope";
  if (llama || !m.learned_positions) j["rope_theta"] = m.rope_theta;
  j["tie_word_embeddings"] = m.tied;
  j["attention_bias"] = m.attention_bias;
  // Written only when set, so that plans of models without them are
  // unchanged (a reader of an older plan takes the defaults).
  if (m.qkv_bias) j["qkv_bias"] = true;
  j["mlp_bias"] = m.mlp_bias;
  j["dropout"] = m.dropout;
  if (m.rope_scaling.type != RopeScaling::Type::kDefault) {
    const RopeScaling& r = m.rope_scaling;
    ojson rs;
    rs["type"] = RopeScalingTypeName(r.type);
    rs["factor"] = r.factor;
    if (r.type == RopeScaling::Type::kLlama3) {
      rs["low_freq_factor"] = r.low_freq_factor;
      rs["high_freq_factor"] = r.high_freq_factor;
      rs["original_max_position_embeddings"] = r.original_max_position_embeddings;
    }
    j["rope_scaling"] = rs;
  }
  return j;
}

Status ParseModel(const Reader& rd, const json& j, ModelConfig* m) {
  const std::string p = "model";
  std::string arch, norm, mlp, positions;
  PW_RETURN_IF_ERROR(rd.String(j, p, "name", &m->name));
  std::vector<std::string> families;  // the family registry's names (models/spec/model_family.h)
  for (const ModelFamilyInfo& f : ModelFamilies()) families.push_back(f.name);
  PW_RETURN_IF_ERROR(rd.Choice(j, p, "architecture", families, &arch));
  PW_ASSIGN_OR_RETURN(m->family, FindModelFamily(arch));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "num_layers", &m->num_layers));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "hidden_size", &m->hidden));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "num_attention_heads", &m->num_heads));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "num_key_value_heads", &m->num_kv_heads));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "head_dim", &m->head_dim));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "intermediate_size", &m->ffn));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "vocab_size", &m->vocab));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "max_position_embeddings", &m->max_positions));
  PW_RETURN_IF_ERROR(rd.Choice(j, p, "norm", {"layernorm", "rmsnorm"}, &norm));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "norm_eps", &m->norm_eps));
  PW_RETURN_IF_ERROR(rd.Choice(j, p, "mlp", {"gelu", "gelu_tanh", "swiglu"}, &mlp));
  PW_RETURN_IF_ERROR(rd.Choice(j, p, "positions", {"learned", "rope"}, &positions));
  m->layer_norm = norm == "layernorm";
  m->gated_mlp = mlp == "swiglu";
  m->gelu_tanh = mlp == "gelu_tanh";
  m->learned_positions = positions == "learned";
  if (!m->learned_positions) PW_RETURN_IF_ERROR(rd.Positive(j, p, "rope_theta", &m->rope_theta));
  PW_RETURN_IF_ERROR(rd.Bool(j, p, "tie_word_embeddings", &m->tied));
  PW_RETURN_IF_ERROR(rd.Bool(j, p, "attention_bias", &m->attention_bias));
  PW_RETURN_IF_ERROR(rd.Bool(j, p, "mlp_bias", &m->mlp_bias));
  PW_RETURN_IF_ERROR(rd.Bool(j, p, "dropout", &m->dropout));
  m->qkv_bias = false;
  if (j.contains("qkv_bias")) PW_RETURN_IF_ERROR(rd.Bool(j, p, "qkv_bias", &m->qkv_bias));
  if (m->qkv_bias && m->attention_bias)
    return rd.Error("model.qkv_bias",
                    "must be false when attention_bias is true (attention_bias already biases Q, K, V)");
  m->rope_scaling = RopeScaling{};
  if (j.contains("rope_scaling")) {
    const std::string rp = "model.rope_scaling";
    const json& r = j["rope_scaling"];
    if (m->learned_positions) return rd.Error(rp, "only a model with positions \"rope\" has RoPE scaling");
    std::string type;
    PW_RETURN_IF_ERROR(rd.Choice(r, rp, "type", {"linear", "llama3"}, &type));
    RopeScaling& s = m->rope_scaling;
    s.type = type == "linear" ? RopeScaling::Type::kLinear : RopeScaling::Type::kLlama3;
    PW_RETURN_IF_ERROR(rd.Positive(r, rp, "factor", &s.factor));
    if (s.type == RopeScaling::Type::kLlama3) {
      PW_RETURN_IF_ERROR(rd.Positive(r, rp, "low_freq_factor", &s.low_freq_factor));
      PW_RETURN_IF_ERROR(rd.Positive(r, rp, "high_freq_factor", &s.high_freq_factor));
      PW_RETURN_IF_ERROR(rd.Positive(r, rp, "original_max_position_embeddings", &s.original_max_position_embeddings));
      if (!(s.high_freq_factor > s.low_freq_factor))
        return rd.Error(rp + ".high_freq_factor", "must exceed low_freq_factor");
    }
  }
  if (m->num_heads % m->num_kv_heads != 0)
    return rd.Error(
        "model.num_key_value_heads",
        std::to_string(m->num_kv_heads) + " does not divide num_attention_heads " + std::to_string(m->num_heads));
  return Status::Ok();
}

}  // namespace pw::plan_json
