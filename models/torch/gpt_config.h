// The executor's decoder shape (GPT-2 style, or Llama family: see
// GptConfig::family and models/torch/llama.h), from a plan's model section
// or a Hugging Face `config.json` object.
// Torch-free: the executor's pre-flight check and the plan helpers use it.
//
// Layer list (the contract with the planner), for a config with N blocks:
//   index 0     "embedding"  token embedding + learned positions (Llama: tokens only)
//   index 1..N  "block.0" .. "block.N-1"  pre-norm causal self-attention + MLP
//   index N+1   "head"       final LayerNorm (Llama: RMSNorm) + LM head (+ cross-entropy loss)
// Plan `stages[].layers` are half-open ranges into this list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "models/spec/model_config.h"

namespace pw::models {

// The executor's decoder: GPT-2 style (family kGpt2) or Llama style (kLlama:
// also mistral and qwen2 configs; models/torch/llama.h builds its layers).
// The fields below `layer_norm_epsilon` are the Llama family's.
struct GptConfig {
  ModelFamily family = ModelFamily::kGpt2;
  int64_t n_layer = 0;      // N: transformer blocks
  int64_t n_embd = 0;       // C: width
  int64_t n_head = 0;       // attention heads; C % n_head == 0
  int64_t n_inner = 0;      // MLP hidden width; 4*C when the config has none
  int64_t n_positions = 0;  // longest sequence the position table holds
  int64_t vocab_size = 256; // V; byte-level by default
  double layer_norm_epsilon = 1e-5;  // LayerNorm eps (gpt2) / RMSNorm eps (llama)
  int64_t n_kv_head = 0;     // llama: key/value heads (GQA), divides n_head
  int64_t head_dim = 0;      // llama: D (may differ from C / n_head)
  bool attention_bias = false;  // llama: biases on q, k, v and o projections
  bool qkv_bias = false;        // llama: biases on q, k, v only (qwen2)
  bool mlp_bias = false;        // llama: biases on gate, up, down
  double rope_theta = 10000.0;  // llama: RoPE base
  RopeScaling rope_scaling;     // llama: RoPE frequency scaling
  // LM head tied to the token embedding (tie_word_embeddings): the head's
  // stage holds a replica of the table, kept identical (gpt.h GptStage).
  bool tied = false;

  int NumLayers() const { return static_cast<int>(n_layer) + 2; }
};

// Reads the executor's GPT from a HF config object through the planner's
// reader, pw::ParseModelConfig (models/spec/model_config.h), so both read the
// same keys the same way: n_layer, n_embd, n_head, n_inner (missing or null ->
// 4 n_embd), n_positions (else max_position_embeddings, else n_ctx),
// vocab_size, or their generic names (num_hidden_layers, hidden_size,
// num_attention_heads, intermediate_size). What the executor adds:
//  - a missing (or null) vocab_size means 256 (bytes, the executor's
//    tokenizer); the planner requires vocab_size;
//  - layer_norm_epsilon (else rms_norm_eps), default 1e-5, a positive number;
//  - refusals of what it does not build, each naming the field: a
//    `model_type` other than "gpt2"; num_key_value_heads != the attention
//    heads (grouped-query attention); a config without `model_type` that the planner reads as Llama (no n_layer or n_embd field, pw::ConfigModelFamily:
//    add "model_type": "gpt2" to run it). Every config it accepts, the planner
//    reads as the same gpt2 model (given a vocab_size).
// `source` prefixes every error. Errors: InvalidArgument naming the key,
// e.g. "<source>: field 'n_embd' or 'hidden_size' is missing", "<source>:
// field 'n_head' must be a positive integer, got 0", "<source>: field 'n_embd'
// (130) is not divisible by field 'n_head' (4)", "<source>: model_type
// 'llama' is not supported by the executor ...".
StatusOr<GptConfig> ParseGptConfig(const nlohmann::json& config, const std::string& source = "model config");

// The executor's GPT shape from a normalised model: refuses another
// architecture and grouped-query attention, naming the field. What
// ParseGptConfig returns (`profile` measures these layers).
StatusOr<GptConfig> GptShape(const ModelConfig& model, const std::string& source);

// The executor's decoder for training from a normalised model (a plan's
// `model` section, plan/plan.h). Family llama (llama, mistral, qwen2 configs):
// every field the Llama layers need (models/torch/llama.h). Family gpt2:
// GptShape. Both refuse, naming the field and what to change, what the
// executor does not build: another architecture, grouped-query attention,
// dropout (`dropout`, from the
// config's attn_pdrop / resid_pdrop / embd_pdrop; llama: attention_dropout),
// and for llama a LayerNorm / GELU / learned-positions model section (the
// `norm`, `mlp`, `positions` fields of another architecture) and an odd
// head_dim (RoPE turns channel pairs). Errors: InvalidArgument
// "<source>: field '<name>' ...".
StatusOr<GptConfig> GptFromModel(const ModelConfig& model, const std::string& source);

// {"embedding", "block.0", ..., "block.N-1", "head"}.
std::vector<std::string> GptLayerNames(const GptConfig& config);

}  // namespace pw::models
