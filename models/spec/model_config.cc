#include "models/spec/model_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "base/json_text.h"

#ifndef PW_DEFAULT_MODELS_DIR
#define PW_DEFAULT_MODELS_DIR "models"
#endif

namespace pw {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The first of `keys` present in `c` and not null, or nullptr.
const json* FindKey(const json& c, std::initializer_list<const char*> keys, std::string* found) {
  for (const char* k : keys) {
    auto it = c.find(k);
    if (it != c.end() && !it->is_null()) {
      *found = k;
      return &*it;
    }
  }
  return nullptr;
}

std::string KeyList(std::initializer_list<const char*> keys) {
  std::string s;
  for (const char* k : keys) s += (s.empty() ? "'" : " or '") + std::string(k) + "'";
  return s;
}

// A positive integer under one of `keys`; InvalidArgument names the field.
Status PositiveInt(const json& c, const std::string& source, std::initializer_list<const char*> keys, int64_t* out) {
  std::string key;
  const json* v = FindKey(c, keys, &key);
  if (!v) return Status::InvalidArgument(source + ": field " + KeyList(keys) + " is missing");
  if (!v->is_number_integer() || v->get<int64_t>() <= 0)
    return Status::InvalidArgument(source + ": field '" + key + "' must be a positive integer, got " + v->dump());
  *out = v->get<int64_t>();
  return Status::Ok();
}

// A finite number > 0 under one of `keys`, `fallback` when absent or null;
// InvalidArgument names the field.
Status PositiveNumber(const json& c, const std::string& source, std::initializer_list<const char*> keys,
                      double fallback, double* out) {
  std::string key;
  const json* v = FindKey(c, keys, &key);
  if (!v) {
    *out = fallback;
    return Status::Ok();
  }
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() <= 0)
    return Status::InvalidArgument(source + ": field '" + key + "' must be a positive number, got " + v->dump());
  *out = v->get<double>();
  return Status::Ok();
}

bool BoolOr(const json& c, const char* key, bool fallback) {
  auto it = c.find(key);
  return (it != c.end() && it->is_boolean()) ? it->get<bool>() : fallback;
}

double NumberOr(const json& c, const char* key, double fallback) {
  auto it = c.find(key);
  return (it != c.end() && it->is_number()) ? it->get<double>() : fallback;
}

// Sizes far beyond any published model, refused before anything is sized by
// them (the layer list, parameter counts in int64: 4 x hidden x ffn and
// vocab x hidden stay far below 2^63 within these).
Status CheckModelSizes(const ModelConfig& m, const std::string& source) {
  for (const auto& [field, value, limit] :
       {std::make_tuple("num_hidden_layers", int64_t{m.num_layers}, int64_t{100000}),
        std::make_tuple("hidden_size", m.hidden, int64_t{1} << 20),
        std::make_tuple("num_attention_heads", int64_t{m.num_heads}, int64_t{1} << 16),
        std::make_tuple("head_dim", m.head_dim, int64_t{1} << 16),
        std::make_tuple("intermediate_size", m.ffn, int64_t{1} << 22),
        std::make_tuple("vocab_size", m.vocab, int64_t{1} << 24),
        std::make_tuple("max_position_embeddings", m.max_positions, int64_t{1} << 24)}) {
    if (value > limit)
      return Status::InvalidArgument(source + ": field '" + field + "' is " + std::to_string(value) +
                                     ", above the limit of " + std::to_string(limit) +
                                     " (far beyond published models; sizes are refused before anything is "
                                     "allocated by them)");
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> LayerNames(const ModelConfig& m) {
  std::vector<std::string> names;
  names.reserve(LayerCount(m));
  names.push_back("embedding");
  for (int i = 0; i < m.num_layers; ++i) names.push_back("block." + std::to_string(i));
  names.push_back("head");
  return names;
}

const char* RopeScalingTypeName(RopeScaling::Type type) {
  switch (type) {
    case RopeScaling::Type::kDefault:
      return "default";
    case RopeScaling::Type::kLinear:
      return "linear";
    case RopeScaling::Type::kLlama3:
      return "llama3";
  }
  return "?";
}

namespace {

// Reads RoPE scaling from `rope_scaling` (transformers 4.x) or
// `rope_parameters` (5.x, which also carries rope_theta). Errors name the
// field, e.g. "x.json: field 'rope_scaling.rope_type' is 'yarn'; known:
// default, linear, llama3".
Status ReadRopeScaling(const json& c, const std::string& source, ModelConfig* m) {
  std::string key;
  const json* r = FindKey(c, {"rope_parameters", "rope_scaling"}, &key);
  if (r == nullptr) return Status::Ok();
  if (!r->is_object())
    return Status::InvalidArgument(source + ": field '" + key + "' must be an object or null, got " + r->dump());
  if (key == "rope_parameters") {
    // 5.x may hold one set per attention type ({"full_attention": {...}}).
    if (!r->contains("rope_type") && !r->contains("type") && r->contains("full_attention"))
      return Status::InvalidArgument(source +
                                     ": field 'rope_parameters' holds per-attention-type parameters; "
                                     "only a single set ({\"rope_type\": ...}) is understood");
    PW_RETURN_IF_ERROR(
        PositiveNumber(*r, source + ": field 'rope_parameters'", {"rope_theta"}, m->rope_theta, &m->rope_theta));
  }
  std::string type_key;
  const json* t = FindKey(*r, {"rope_type", "type"}, &type_key);
  std::string type = "default";
  if (t != nullptr) {
    if (!t->is_string())
      return Status::InvalidArgument(source + ": field '" + key + "." + type_key + "' must be a string, got " +
                                     t->dump());
    type = t->get<std::string>();
  } else {
    type_key = "rope_type";
  }
  RopeScaling& s = m->rope_scaling;
  const std::string where = source + ": field '" + key + "'";
  if (type == "default") {
    s = RopeScaling{};
    return Status::Ok();
  }
  if (type == "linear") {
    s.type = RopeScaling::Type::kLinear;
  } else if (type == "llama3") {
    s.type = RopeScaling::Type::kLlama3;
  } else {
    return Status::InvalidArgument(source + ": field '" + key + "." + type_key + "' is '" + type +
                                   "'; known: default, linear, llama3");
  }
  if (!FindKey(*r, {"factor"}, &type_key))
    return Status::InvalidArgument(source + ": field '" + key + ".factor' is missing (rope type " + type + ")");
  PW_RETURN_IF_ERROR(PositiveNumber(*r, where, {"factor"}, 1.0, &s.factor));
  if (s.type == RopeScaling::Type::kLlama3) {
    for (const char* f : {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      if (!FindKey(*r, {f}, &type_key))
        return Status::InvalidArgument(source + ": field '" + key + "." + f + "' is missing (rope type llama3)");
    PW_RETURN_IF_ERROR(PositiveNumber(*r, where, {"low_freq_factor"}, 1.0, &s.low_freq_factor));
    PW_RETURN_IF_ERROR(PositiveNumber(*r, where, {"high_freq_factor"}, 4.0, &s.high_freq_factor));
    PW_RETURN_IF_ERROR(
        PositiveInt(*r, where, {"original_max_position_embeddings"}, &s.original_max_position_embeddings));
    if (!(s.high_freq_factor > s.low_freq_factor))
      return Status::InvalidArgument(source + ": field '" + key + ".high_freq_factor' (" +
                                     std::to_string(s.high_freq_factor) + ") must exceed '" + key +
                                     ".low_freq_factor' (" + std::to_string(s.low_freq_factor) + ")");
  }
  return Status::Ok();
}

}  // namespace

namespace {

// The registry's family and model type of `c` (ConfigModelFamily's rule).
StatusOr<FoundModelType> ConfigModelType(const json& c, const std::string& source) {
  if (!c.is_object()) return Status::InvalidArgument(source + ": expected a JSON object (a HF config.json)");
  std::string type = c.contains("model_type") && c["model_type"].is_string() ? c["model_type"].get<std::string>() : "";
  if (type.empty()) {
    // Without model_type the field names decide; a file naming sizes in both
    // families' words (n_layer and num_hidden_layers, ...) is ambiguous: the
    // two readers would pick different fields.
    std::string gpt2_key, llama_key;
    const bool gpt2 = FindKey(c, {"n_embd", "n_layer", "n_head", "n_inner", "n_positions"}, &gpt2_key);
    // (num_key_value_heads is not one: GPT-2 configs may state it, equal to
    // the heads.)
    const bool llama =
        FindKey(c, {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"}, &llama_key);
    if (gpt2 && llama)
      return Status::InvalidArgument(source + ": no 'model_type', and both a GPT-2 field ('" + gpt2_key +
                                     "') and a Llama field ('" + llama_key + "'): add \"model_type\" (" +
                                     KnownModelTypes() + ") to say which applies");
    type = gpt2 ? "gpt2" : "llama";
  }
  return FindHfModelType(type, source);
}

}  // namespace

StatusOr<ModelFamily> ConfigModelFamily(const json& c, const std::string& source) {
  PW_ASSIGN_OR_RETURN(FoundModelType found, ConfigModelType(c, source));
  return found.family->family;
}

StatusOr<ModelConfig> ParseModelConfig(const json& c, const std::string& source) {
  ModelConfig m;
  PW_ASSIGN_OR_RETURN(FoundModelType found, ConfigModelType(c, source));
  m.family = found.family->family;
  const bool gpt2_style = found.family->style == DecoderStyle::kGpt2;
  m.raw = c;
  // Mixture of experts (Mixtral's num_local_experts, Qwen2-MoE's
  // num_experts): neither the cost model nor the executor has routed MLPs.
  for (const char* moe : {"num_local_experts", "num_experts"}) {
    auto it = c.find(moe);
    if (it != c.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0))
      return Status::InvalidArgument(source + ": field '" + std::string(moe) + "' is " + it->dump() +
                                     ": mixture-of-experts models are not supported (dense decoders only)");
  }
  m.name = c.contains("_name_or_path") && c["_name_or_path"].is_string() ? c["_name_or_path"].get<std::string>()
                                                                         : ModelFamilyName(m.family);
  int64_t L = 0, a = 0, kv = 0;
  PW_RETURN_IF_ERROR(PositiveInt(c, source, {"n_layer", "num_hidden_layers"}, &L));
  PW_RETURN_IF_ERROR(PositiveInt(c, source, {"n_embd", "hidden_size"}, &m.hidden));
  PW_RETURN_IF_ERROR(PositiveInt(c, source, {"n_head", "num_attention_heads"}, &a));
  PW_RETURN_IF_ERROR(PositiveInt(c, source, {"vocab_size"}, &m.vocab));
  m.num_layers = static_cast<int>(L);
  m.num_heads = static_cast<int>(a);
  // The limits before any size is derived from these (4 * hidden below).
  PW_RETURN_IF_ERROR(CheckModelSizes(m, source));
  std::string key;
  if (FindKey(c, {"num_key_value_heads"}, &key)) {
    PW_RETURN_IF_ERROR(PositiveInt(c, source, {"num_key_value_heads"}, &kv));
  } else {
    kv = a;
  }
  m.num_kv_heads = static_cast<int>(kv);
  // transformers' GPT2Attention has as many key/value heads as query heads.
  if (gpt2_style && kv != a)
    return Status::InvalidArgument(source + ": field 'num_key_value_heads' (" + std::to_string(kv) +
                                   ") differs from the attention heads (" + std::to_string(a) +
                                   "): GPT-2 has no grouped-query attention");
  if (a % kv != 0)
    return Status::InvalidArgument(source + ": 'num_attention_heads' (" + std::to_string(a) +
                                   ") must be a multiple of 'num_key_value_heads' (" + std::to_string(kv) + ")");
  std::string hidden_key, heads_key;
  FindKey(c, {"n_embd", "hidden_size"}, &hidden_key);
  FindKey(c, {"n_head", "num_attention_heads"}, &heads_key);
  // GPT-2 (transformers GPT2Attention) always splits the hidden size into
  // heads: it has no head_dim field.
  const bool explicit_head_dim = !gpt2_style && FindKey(c, {"head_dim"}, &key);
  if (explicit_head_dim) {
    PW_RETURN_IF_ERROR(PositiveInt(c, source, {"head_dim"}, &m.head_dim));
  } else if (found.type->default_head_dim > 0) {
    m.head_dim = found.type->default_head_dim;  // the model type's own default (qwen3: 128)
  } else {
    if (m.hidden % a != 0)
      return Status::InvalidArgument(source + ": field '" + hidden_key + "' (" + std::to_string(m.hidden) +
                                     ") is not divisible by field '" + heads_key + "' (" + std::to_string(a) + ")" +
                                     (gpt2_style ? std::string() : std::string(" and 'head_dim' is not given")));
    m.head_dim = m.hidden / a;
  }
  if (gpt2_style) {
    if (FindKey(c, {"n_inner", "intermediate_size"}, &key)) {
      PW_RETURN_IF_ERROR(PositiveInt(c, source, {"n_inner", "intermediate_size"}, &m.ffn));
    } else {
      m.ffn = 4 * m.hidden;  // transformers GPT2MLP: inner_dim = n_inner or 4 * hidden_size
    }
    PW_RETURN_IF_ERROR(PositiveInt(c, source, {"n_positions", "max_position_embeddings", "n_ctx"}, &m.max_positions));
    m.tied = BoolOr(c, "tie_word_embeddings", true);
    m.gated_mlp = false;
    m.layer_norm = true;
    m.attention_bias = m.mlp_bias = true;
    m.learned_positions = true;
    if (auto act = c.find("activation_function"); act != c.end()) {
      const std::string a = act->is_string() ? act->get<std::string>() : act->dump();
      if (a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu_fast")
        m.gelu_tanh = true;
      else if (a != "gelu")
        return Status::InvalidArgument(source + ": field 'activation_function' is '" + a +
                                       "': GPT-2 blocks run \"gelu\" (exact) or its tanh approximation "
                                       "(\"gelu_new\", \"gelu_pytorch_tanh\", \"gelu_fast\")");
    }
    m.dropout =
        NumberOr(c, "attn_pdrop", 0.1) > 0 || NumberOr(c, "resid_pdrop", 0.1) > 0 || NumberOr(c, "embd_pdrop", 0.1) > 0;
    PW_RETURN_IF_ERROR(PositiveNumber(c, source, {"layer_norm_epsilon", "rms_norm_eps"}, 1e-5, &m.norm_eps));
  } else {
    PW_RETURN_IF_ERROR(PositiveInt(c, source, {"intermediate_size"}, &m.ffn));
    PW_RETURN_IF_ERROR(PositiveInt(c, source, {"max_position_embeddings"}, &m.max_positions));
    m.tied = BoolOr(c, "tie_word_embeddings", false);
    m.gated_mlp = true;
    m.layer_norm = false;
    m.attention_bias = BoolOr(c, "attention_bias", false);
    m.mlp_bias = BoolOr(c, "mlp_bias", false);
    m.learned_positions = false;
    m.dropout = NumberOr(c, "attention_dropout", 0.0) > 0;
    PW_RETURN_IF_ERROR(PositiveNumber(c, source, {"rms_norm_eps"}, 1e-6, &m.norm_eps));
    PW_RETURN_IF_ERROR(PositiveNumber(c, source, {"rope_theta"}, 10000.0, &m.rope_theta));
    PW_RETURN_IF_ERROR(ReadRopeScaling(c, source, &m));
    // Qwen2 (transformers Qwen2Attention): q, k, v with bias, o_proj without.
    if (found.type->qkv_bias && !m.attention_bias) m.qkv_bias = true;
    // A sliding window shorter than the longest sequence changes attention
    // (Mistral 7B v0.1: 4096 of 32768). Qwen2 and Qwen3 (transformers
    // Qwen2Config / Qwen3Config `layer_types`) slide only in the layers
    // listed "sliding_attention", by default those from max_window_layers
    // (default 28) on when use_sliding_window is true.
    auto sw = c.find("sliding_window");
    bool sw_used = true;
    if (found.type->sliding_window_opt_in) {
      sw_used = false;
      auto types = c.find("layer_types");
      if (types != c.end() && types->is_array()) {
        for (const json& t : *types) sw_used = sw_used || t == "sliding_attention";
      } else {
        auto mw = c.find("max_window_layers");
        sw_used = (mw != c.end() && mw->is_number_integer() ? mw->get<int64_t>() : 28) < m.num_layers;
      }
      sw_used = sw_used && BoolOr(c, "use_sliding_window", false);
    }
    if (sw_used && sw != c.end() && !sw->is_null()) {
      if (!sw->is_number_integer() || sw->get<int64_t>() <= 0)
        return Status::InvalidArgument(source + ": field 'sliding_window' must be a positive integer or null, got " +
                                       sw->dump());
      if (sw->get<int64_t>() < m.max_positions)
        return Status::InvalidArgument(source + ": field 'sliding_window' is " + sw->dump() +
                                       ", below max_position_embeddings " + std::to_string(m.max_positions) +
                                       ": sliding-window attention is not supported (set it to null, or "
                                       "max_position_embeddings to at most the window)");
    }
  }
  PW_RETURN_IF_ERROR(CheckModelSizes(m, source));
  return m;
}

std::string ModelsDir() {
  const char* env = std::getenv("PW_MODELS_DIR");
  if (env && *env) return env;
  // An installed tree: <prefix>/bin/<executable> beside
  // <prefix>/share/pipewright/models (cmake --install). Looked up once: the
  // executable does not move.
  static const std::string installed = [] {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec || exe.empty()) return std::string();
    const fs::path dir = (exe.parent_path() / ".." / "share" / "pipewright" / "models").lexically_normal();
    return fs::is_directory(dir, ec) ? dir.string() : std::string();
  }();
  return installed.empty() ? std::string(PW_DEFAULT_MODELS_DIR) : installed;
}

std::vector<std::string> ShippedNames(const std::string& subdir) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::path dir = fs::path(ModelsDir()) / subdir;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseJsonText(ss.str(), path);
}

StatusOr<std::string> ResolveShippedFile(const std::string& name_or_path, const std::string& subdir,
                                         const std::string& flag) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  std::string lower;
  for (char ch : name_or_path) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  fs::path shipped = fs::path(ModelsDir()) / subdir / (lower + ".json");
  if (fs::is_regular_file(shipped, ec)) return shipped.string();
  std::string known;
  for (const auto& n : ShippedNames(subdir)) known += (known.empty() ? "" : ", ") + n;
  return Status::NotFound(flag + " '" + name_or_path + "': no such file, and no shipped " + subdir +
                          " entry of that name (shipped in " + (fs::path(ModelsDir()) / subdir).string() + ": " +
                          (known.empty() ? "none" : known) + ")");
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& name_or_path) {
  PW_ASSIGN_OR_RETURN(std::string path, ResolveShippedFile(name_or_path, "configs", "--model-config"));
  PW_ASSIGN_OR_RETURN(json j, ReadJsonFile(path));
  PW_ASSIGN_OR_RETURN(ModelConfig m, ParseModelConfig(j, path));
  if (!j.contains("_name_or_path")) m.name = fs::path(path).stem().string();
  return m;
}

}  // namespace pw
