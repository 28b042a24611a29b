// A transformer described by a HuggingFace `config.json`, normalised to the
// few numbers the cost formulas need (docs/PLAN_FORMAT.md#model):
// {L, h, a, a_kv, d_head, f, V, s_max, tied, gated_mlp, norm}. This is the
// one model vocabulary: the planner costs it, plans hold it, and the
// executor builds its layers from it (models/torch/gpt.h).
//
// The family comes from `model_type` through the family registry
// (model_family.h); the family's decoder style decides the field names:
//  - GPT-2 style (`model_type` "gpt2", GPT-3 configs written the same way):
//    `n_layer`, `n_embd`, `n_head`, `n_inner` (null -> 4 n_embd),
//    `n_positions`, `vocab_size`; LayerNorm, biases, learned positions, GELU
//    MLP, tied LM head, dropout (`attn_pdrop`, `resid_pdrop`, `embd_pdrop`).
//  - Llama style (`model_type` "llama", "mistral", "qwen2": family llama;
//    "qwen3": family qwen3): `num_hidden_layers`, `hidden_size`,
//    `intermediate_size`, `num_attention_heads`, `num_key_value_heads`
//    (null -> heads), `head_dim` (null -> hidden/heads), `vocab_size`,
//    `max_position_embeddings`, `tie_word_embeddings` (default false),
//    `attention_bias`, `mlp_bias`; RMSNorm, SwiGLU MLP, RoPE (no position
//    table), `attention_dropout` (default 0), `rope_scaling` (transformers
//    4.x: {"type" or "rope_type", "factor", ...}) or `rope_parameters`
//    (transformers 5.x: {"rope_type", "rope_theta", "factor", ...}): types
//    default, linear and llama3 (RopeScaling below).
//    A `sliding_window` below max_position_embeddings is refused (the cost
//    model and the executor attend to the whole causal prefix); qwen2 and
//    qwen3 apply it only with `use_sliding_window` true, and only to the
//    layers `layer_types` marks "sliding_attention" (by default those from
//    `max_window_layers`, default 28, on; transformers Qwen2Config /
//    Qwen3Config). qwen3's `head_dim` defaults to 128 (Qwen3Config). `qwen2` has biases on Q, K and V but not on the
//    output projection (qkv_bias). `qwen3` adds an RMSNorm over each head of Q and K (its family's layers,
//    models/torch/qwen3.cc). Mixture-of-experts configs (`num_local_experts`, `num_experts`) are refused naming the
//    field.
// The generic names (`hidden_size`, `num_hidden_layers`, ...) are accepted for
// GPT-2 too, as transformers' `attribute_map` does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/model_family.h"

namespace pw {

// Rotary position embedding frequency scaling (Llama family). RoPE itself:
// Su et al. 2021, "RoFormer", §3.4: channel pair i of a head of dimension d
// turns by the angle p * inv_freq[i] at position p, inv_freq[i] =
// theta^(-2i/d), i = 0 .. d/2 - 1. The types rescale inv_freq:
//  - kDefault: unchanged;
//  - kLinear: inv_freq / factor (positions divided by `factor`: Chen et al.
//    2023, "position interpolation");
//  - kLlama3: Meta's Llama 3.1 release (transformers
//    `_compute_llama3_parameters`): with wavelength w = 2 pi / inv_freq,
//    low = original_max_position_embeddings / low_freq_factor and
//    high = original_max_position_embeddings / high_freq_factor:
//    w < high keeps inv_freq; w > low uses inv_freq / factor; between them
//    (1 - t) inv_freq / factor + t inv_freq with
//    t = (original_max_position_embeddings / w - low_freq_factor) /
//        (high_freq_factor - low_freq_factor).
struct RopeScaling {
  enum class Type { kDefault, kLinear, kLlama3 };
  Type type = Type::kDefault;
  double factor = 1.0;                              // linear, llama3 (> 0)
  double low_freq_factor = 1.0;                     // llama3 (> 0)
  double high_freq_factor = 4.0;                    // llama3 (> low_freq_factor)
  int64_t original_max_position_embeddings = 8192;  // llama3 (> 0)
  bool operator==(const RopeScaling& o) const {
    return type == o.type && factor == o.factor && low_freq_factor == o.low_freq_factor &&
           high_freq_factor == o.high_freq_factor &&
           original_max_position_embeddings == o.original_max_position_embeddings;
  }
};
// "default", "linear" or "llama3".
const char* RopeScalingTypeName(RopeScaling::Type type);

struct ModelConfig {
  std::string name;  // `_name_or_path`, else the file stem, else model_type
  ModelFamily family = ModelFamily::kGpt2;
  int num_layers = 0;              // L: decoder blocks
  int64_t hidden = 0;              // h
  int num_heads = 0;               // a
  int num_kv_heads = 0;            // a_kv (GQA); == a for MHA
  int64_t head_dim = 0;            // d_head
  int64_t ffn = 0;                 // f: MLP inner width
  int64_t vocab = 0;               // V
  int64_t max_positions = 0;       // s_max
  bool tied = false;               // LM head shares the token embedding matrix
  bool gated_mlp = false;          // SwiGLU: gate, up, down (3 h*f matrices)
  bool layer_norm = true;          // LayerNorm with bias (2h params); false = RMSNorm (h params)
  bool attention_bias = false;     // biases on Q, K, V and the output projection
  bool qkv_bias = false;           // biases on Q, K and V only (qwen2); false when attention_bias
  bool mlp_bias = false;           // biases on the MLP matrices
  bool learned_positions = false;  // a position embedding table of s_max x h (GPT-2)
  // GPT-2 MLP: GELU by its tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x +
  // 0.044715 x^3))) (Hendrycks & Gimpel 2016, §2), for HF activation_function
  // "gelu_new", "gelu_pytorch_tanh" or "gelu_fast"; false: the exact erf GELU
  // ("gelu", or the field absent). Plans write it as model.mlp "gelu_tanh".
  bool gelu_tanh = false;
  bool dropout = false;         // dropout layers present (their 1-byte masks are stored)
  double norm_eps = 1e-5;       // LayerNorm / RMSNorm epsilon (`layer_norm_epsilon` / `rms_norm_eps`)
  double rope_theta = 10000.0;  // RoPE base (`rope_theta`; Llama only)
  RopeScaling rope_scaling;     // RoPE frequency scaling (Llama only)
  // The config object as read (in memory only: plans hold the normalised
  // fields above, plan/plan.h; profiles read widths from it).
  nlohmann::json raw;
};

// The layer list of `model` (the contract between planner and executor; plan
// `stages[].layers` are half-open ranges into it), L + 2 entries:
//   index 0        "embedding"  token embedding (+ learned positions, GPT-2)
//   index 1..L     "block.0" .. "block.{L-1}"  decoder blocks
//   index L+1      "head"       final norm + LM head + cross-entropy loss
// footprint.h BuildLayerList gives each its parameters.
std::vector<std::string> LayerNames(const ModelConfig& model);
// L + 2: the number of entries of LayerNames.
inline int LayerCount(const ModelConfig& model) { return model.num_layers + 2; }

// The family `config` describes: the registry's family of its `model_type`
// when that is a string (model_family.h FindHfModelType); otherwise
// (missing, null or not a string) gpt2 if a
// GPT-2 field name (`n_embd`, `n_layer`, `n_head`, `n_inner`, `n_positions`)
// is present, else llama. `source` names the file in errors. Returns
// InvalidArgument naming 'model_type' for any other type, and for a config
// without one that holds both a GPT-2 field name and a Llama one
// (`hidden_size`, `num_hidden_layers`, `num_attention_heads`,
// `intermediate_size`). ParseModelConfig applies exactly this rule.
StatusOr<ModelFamily> ConfigModelFamily(const nlohmann::json& config, const std::string& source);

// Parses a HF config object. `source` names the file in errors. Returns
// InvalidArgument naming the field for a missing, non-integer or
// non-positive size, hidden % heads != 0 without `head_dim`, heads %
// kv_heads != 0, a GPT-2 config whose `num_key_value_heads` differs from its
// heads, a RoPE scaling type other than default / linear / llama3
// (naming 'rope_scaling.rope_type' or 'rope_parameters.rope_type') or a bad
// scaling number, a `sliding_window` below max_position_embeddings (where
// it applies), a mixture-of-experts field (`num_local_experts`,
// `num_experts`), or an unknown `model_type` (listing the registry's: gpt2,
// llama, mistral, qwen2, qwen3; missing model_type is inferred from the field
// names, see ConfigModelFamily). `vocab_size` is required (no default: HF's
// own defaults differ per family, 50257 for GPT-2 and 32000 for Llama;
// `pipewright profile` supplies the executor's byte vocabulary, 256, before
// calling this).
StatusOr<ModelConfig> ParseModelConfig(const nlohmann::json& config, const std::string& source);

// Loads a model config: `name_or_path` is a file path, or the name of a
// shipped config in <models dir>/configs (e.g. "llama-2-7b"). NotFound lists
// the shipped names; InvalidArgument for bad JSON (with the parser's
// position) or fields (see ParseModelConfig).
StatusOr<ModelConfig> LoadModelConfig(const std::string& name_or_path);

// Directory holding configs/ and devices/, the first of: $PW_MODELS_DIR if
// set and non-empty; <directory of the running executable>/../share/
// pipewright/models if that directory exists (an installed tree, where
// `cmake --install` puts the shipped models beside bin/); else the source
// tree's models/ directory (compiled in). Never fails; the directory may not
// exist (callers report NotFound naming it).
std::string ModelsDir();

// Names (file stems) of the *.json files in <models dir>/<subdir>, sorted.
std::vector<std::string> ShippedNames(const std::string& subdir);

// Reads a whole JSON file. NotFound if it cannot be opened; InvalidArgument
// "<path>: <parser message>" if it does not parse.
StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// Resolves `name_or_path` against <models dir>/<subdir>/<name>.json when it
// is not an existing file. NotFound names `flag` and lists shipped names.
StatusOr<std::string> ResolveShippedFile(const std::string& name_or_path, const std::string& subdir,
                                         const std::string& flag);

}  // namespace pw
