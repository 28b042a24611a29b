// The model family registry: one table (model_family.cc) holding, for every
// decoder family pipewright plans and trains, its name, the Hugging Face
// `model_type` strings and `architectures` read as it, its decoder style
// (which HF field names and which shared layer structure), the HF names of
// its parameters, and the terms it adds to the shared footprint derivation
// (footprint.h). Torch-free; the LibTorch layer builder of each family is the
// matching row of models/torch/families.cc. The way schedules/registry.cc
// holds schedule families.
//
// Adding a family (docs/ARCHITECTURE.md "Adding a model family"): an
// enumerator below, a row in model_family.cc (with its name table and
// footprint terms), its layers in models/torch/<family>.cc with a row in
// models/torch/families.cc, and that file in models/torch/CMakeLists.txt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace pw {

struct ModelConfig;  // model_config.h

// A family: a decoder whose layers the executor builds one way and whose
// parameters have one set of HF names. Plans name it (`model.architecture`).
enum class ModelFamily { kGpt2, kLlama, kQwen3 };

// The layer structure a family shares with others, and the HF config field
// names it is read by (model_config.h ParseModelConfig).
enum class DecoderStyle {
  // GPT-2 (Radford et al. 2019): LayerNorm with bias, GELU MLP, learned
  // positions, biases on every linear, dropout; `n_layer`, `n_embd`, ...
  kGpt2,
  // Llama (Touvron et al. 2023): RMSNorm, SwiGLU MLP, RoPE, optional biases;
  // `num_hidden_layers`, `hidden_size`, ...
  kLlama,
};

// One HF `model_type` read as a family.
struct HfModelType {
  std::string model_type;    // config.json `model_type`, e.g. "qwen2"
  std::string architecture;  // its `architectures` entry, e.g. "Qwen2ForCausalLM"
  // Biases on Q, K and V but not on the output projection (transformers
  // Qwen2Attention): read as ModelConfig::qkv_bias.
  bool qkv_bias = false;
  // `sliding_window` applies only when `use_sliding_window` is true, and
  // only to the layers `layer_types` lists as "sliding_attention" (by
  // default those from `max_window_layers`, default 28, on): transformers
  // Qwen2Config, Qwen3Config. Otherwise it applies to every layer (mistral).
  bool sliding_window_opt_in = false;
  // `head_dim` when the config has none; 0: hidden / heads. (transformers
  // Qwen3Config defaults it to 128 whatever the hidden size.)
  int64_t default_head_dim = 0;
};

// One row of a family's HF name table. `ours` and `hf` may hold "{i}", the
// block index. A parameter named exactly `ours` is `hf`; one named
// `ours` + ".weight" or ".bias" is `hf` + the same suffix.
struct HfNameRule {
  std::string ours;        // e.g. "block.{i}.q_norm", "embedding.embed_tokens"
  std::string hf;          // e.g. "model.layers.{i}.self_attn.q_norm", "model.embed_tokens.weight"
  bool transpose = false;  // HF stores this 2-D weight as (in, out) (GPT-2's Conv1D); biases are never transposed
};

// What a family's block holds beyond its style's shared derivation
// (footprint.cc), per decoder block.
struct FamilyBlockTerms {
  int64_t params = 0;  // parameters (e.g. Qwen3's q/k norm weights, 2 d)
  // Activation elements kept from the end of F to the end of I per token (per
  // row and position; footprint.cc multiplies by s b e). Norms are
  // elementwise: like the style's own norms they add bytes, no FLOPs (the
  // FLOP terms are the GEMMs and the attention core, footprint.h).
  int64_t kept_per_token = 0;
};

struct ModelFamilyInfo {
  ModelFamily family = ModelFamily::kGpt2;
  std::string name;  // plan `model.architecture`, ModelFamilyName: "gpt2", "llama", "qwen3"
  DecoderStyle style = DecoderStyle::kGpt2;
  // The HF model types read as this family; export writes the first whose
  // qkv_bias equals the model's.
  std::vector<HfModelType> model_types;
  // HF parameter names (hf_weights.h HfNameOf).
  std::vector<HfNameRule> hf_names;
  // A prefix some exports of this family omit (GPT-2's "transformer."): a
  // name starting with it is also looked for without it when loading.
  std::string hf_optional_prefix;
  // Our name of the embedding's token table (the tied head's replica is
  // loaded from and written as its HF name).
  std::string token_table;
  // The family's own block terms; nullptr: none.
  FamilyBlockTerms (*block_terms)(const ModelConfig& model) = nullptr;
};

// Every family, in enum order.
const std::vector<ModelFamilyInfo>& ModelFamilies();

// The registry row of `family`.
const ModelFamilyInfo& FamilyInfo(ModelFamily family);

// "gpt2", "llama", "qwen3".
const char* ModelFamilyName(ModelFamily family);

// The family named `name` (a plan's `model.architecture`). NotFound lists the
// known names.
StatusOr<ModelFamily> FindModelFamily(const std::string& name);

// The family and model type whose HF `model_type` is `model_type`.
// InvalidArgument "<source>: field 'model_type' is 't5'; known: gpt2, llama,
// mistral, qwen2, qwen3" (the value escaped for a terminal).
struct FoundModelType {
  const ModelFamilyInfo* family = nullptr;
  const HfModelType* type = nullptr;
};
StatusOr<FoundModelType> FindHfModelType(const std::string& model_type, const std::string& source);

// Every HF model_type known, registry order, joined by ", " ("gpt2, llama,
// mistral, qwen2, qwen3").
std::string KnownModelTypes();

// Whether a normalised model is one its family's layers are: OK, or
// InvalidArgument "<source>: field '<plan field>' ..." naming what differs
// from the family's style: `norm`, `mlp`, `positions` (GPT-2: layernorm,
// gelu, learned; Llama style: rmsnorm, swiglu, rope), `num_key_value_heads`
// (must divide the heads; GPT-2: equal to them), `head_dim` (Llama style:
// even, RoPE turns channel pairs; GPT-2: hidden / heads), `qkv_bias` (only
// for a family with a model type that has it). A plan's model section can
// say anything; the executor's check (models/torch/executor_model.h) calls
// this before building layers.
Status CheckFamilyShape(const ModelConfig& model, const std::string& source);

// The block terms of `model`'s family ({0, 0} when it has none).
FamilyBlockTerms BlockTerms(const ModelConfig& model);

}  // namespace pw
