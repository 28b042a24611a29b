// GPT model shape read from a Hugging Face `config.json` object (the same
// object the planner reads and writes into plan `extra["model"]`).
// Torch-free: the executor's pre-flight check and the plan helpers use it.
//
// Layer list (the contract with the planner), for a config with N blocks:
//   index 0     "embedding"  token embedding + learned positions
//   index 1..N  "block.0" .. "block.N-1"  pre-norm causal self-attention + MLP
//   index N+1   "head"       final LayerNorm + LM head (+ cross-entropy loss)
// Plan `stages[].layers` are half-open ranges into this list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/status.h"

namespace pw::models {

struct GptConfig {
  int64_t n_layer = 0;      // N: transformer blocks
  int64_t n_embd = 0;       // C: width
  int64_t n_head = 0;       // attention heads; C % n_head == 0
  int64_t n_inner = 0;      // MLP hidden width; 4*C when the config has none
  int64_t n_positions = 0;  // longest sequence the position table holds
  int64_t vocab_size = 256; // V; byte-level by default
  double layer_norm_epsilon = 1e-5;

  int NumLayers() const { return static_cast<int>(n_layer) + 2; }
};

// Reads GPT-2 keys (n_layer, n_embd, n_head, n_inner, n_positions or n_ctx,
// vocab_size, layer_norm_epsilon) or their generic/Llama-style names
// (num_hidden_layers, hidden_size, num_attention_heads, intermediate_size,
// max_position_embeddings). Missing vocab_size = 256 (bytes).
// Errors: InvalidArgument naming the key ("<source>: model config: 'n_embd'
// is missing", "... n_embd=130 is not divisible by n_head=4").
StatusOr<GptConfig> ParseGptConfig(const nlohmann::json& config, const std::string& source = "model config");

// The config as a GPT-2 style JSON object (the keys ParseGptConfig reads).
nlohmann::json GptConfigToJson(const GptConfig& config);

// {"embedding", "block.0", ..., "block.N-1", "head"}.
std::vector<std::string> GptLayerNames(const GptConfig& config);

// Bytes one layer keeps between its input-gradient backward (I) and its
// weight-gradient backward (W) for a microbatch of `rows` sequences of length
// `seq`, activations of `element_bytes` each: for every GEMM the input X and
// the output gradient dY. Block: (C + 3C) + (C + C) + (C + f) + (f + C)
// elements per token; head: C + V; embedding: the int64 token ids + dY (C).
// Same counts as models/spec/footprint.cc (the planner's wstash).
int64_t WeightStashBytes(const GptConfig& config, int layer, int64_t rows, int64_t seq, int64_t element_bytes);

// Forward FLOPs of one layer for `rows` x `seq` tokens (ECOSYSTEM §5.3:
// 2 FLOPs per weight per token, plus 4*s*C per token of attention core).
double LayerForwardFlops(const GptConfig& config, int layer, int64_t rows, int64_t seq);

// Weight-GEMM share of LayerForwardFlops (what W repeats once; I repeats the
// rest twice: dgrad of every GEMM + the attention core backward).
double LayerWeightGemmFlops(const GptConfig& config, int layer, int64_t rows, int64_t seq);

}  // namespace pw::models
