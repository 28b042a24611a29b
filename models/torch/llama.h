// LibTorch Llama-family decoder (llama, mistral, qwen2 configs), built layer
// by layer like the GPT of gpt.h and with the same stage interface: a
// ModelConfig of family llama makes MakeGptLayer / GptStage build these
// layers (the family's row of models/torch/families.cc); Qwen3 (qwen3.cc)
// reuses them with its own block. Layer list (models/spec LayerNames):
//   index 0     "embedding"  token embedding only (no position table)
//   index 1..N  "block.0" .. "block.N-1"
//   index N+1   "head"       final RMSNorm + LM head (tied or untied, gpt.h)
// Block (transformers LlamaDecoderLayer's computation, written here):
//   h = x + o_proj(Attn(RoPE(q_proj(n1)), RoPE(k_proj(n1)), v_proj(n1))),
//       n1 = RMSNorm_1(x)
//   y = h + down_proj(silu(gate_proj(n2)) * up_proj(n2)),  n2 = RMSNorm_2(h)
// Attn is causal softmax attention in the model's dtype with grouped-query
// heads: query head i uses key/value head i / (H / K).
// Every weight GEMM is a SplitLinear (split I/W backward, gpt.h), and the
// embedding's scatter-add is deferred like GPT's (TokenEmbedding).
// Dimension letters: b = rows, T = sequence length, C = hidden_size,
// H = attention heads, K = key/value heads, D = head_dim, F = intermediate
// size, V = vocabulary.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <utility>

#include "models/spec/model_config.h"
#include "models/torch/gpt.h"

namespace pw::models {

// RMSNorm (Zhang & Sennrich 2019): y = x / sqrt(mean(x^2 over the last
// dim) + eps) * w. x (..., C), w (C) -> (..., C). A custom autograd
// function that keeps only x and the (..., 1) reciprocal RMS for backward
// (as a fused kernel does; the planner's activation count, footprint.h,
// counts the norm input only). Backward, with x^ = x r, g = dy w:
// dx = r (g - x^ mean(g x^)), dw = sum over rows of dy x^.
torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// RoPE inverse frequencies (Su et al. 2021, "RoFormer" §3.4; HF Llama
// convention): inv_freq[i] = theta^(-2i/D), i = 0 .. D/2 - 1, rescaled by
// `scaling` (model_config.h RopeScaling: linear divides by factor; llama3
// follows Meta's Llama 3.1 frequency-dependent rule). (D/2) float64.
// REQUIRES: head_dim even.
torch::Tensor RopeInverseFrequencies(int64_t head_dim, double theta, const RopeScaling& scaling);

// cos and sin of the angles p * inv_freq for positions p = 0 .. T-1, each
// (T, D) in `dtype`: column j and j + D/2 share inv_freq[j] (the HF layout,
// cat(freqs, freqs)). Angles are computed in float64.
std::pair<torch::Tensor, torch::Tensor> RopeCosSin(int64_t T, int64_t head_dim, double theta,
                                                   const RopeScaling& scaling, torch::Dtype dtype);

// Rotates x (..., T, [heads,] D) by RoPE: x cos + rotate_half(x) sin with
// rotate_half(x) = cat(-x[D/2:], x[:D/2]): channel pair (j, j + D/2) turns
// by the angle of inv_freq[j]. cos, sin broadcast against x (e.g. (T, 1, D)
// for x (b, T, H, D)).
torch::Tensor ApplyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// RMSNorm module: weight (C), initialised to 1 (HF LlamaRMSNorm).
// forward: x (..., C) -> (..., C), RmsNorm above.
class RmsNormLayerImpl : public torch::nn::Module {
 public:
  RmsNormLayerImpl(int64_t C, double eps, torch::Dtype dtype) : eps_(eps) {
    weight = register_parameter("weight", torch::ones({C}, torch::TensorOptions().dtype(dtype)));
  }
  torch::Tensor forward(const torch::Tensor& x) { return RmsNorm(x, weight, eps_); }
  torch::Tensor weight;  // (C)

 private:
  double eps_;
};
TORCH_MODULE(RmsNormLayer);

// The Llama decoder block (the computation above). Parameter names follow
// HF's: input_layernorm, q_proj, k_proj, v_proj, o_proj,
// post_attention_layernorm, gate_proj, up_proj, down_proj. A family whose
// block differs only in what happens to q and k between their projections
// and RoPE (Qwen3's per-head RMSNorm) derives from it and overrides
// QueryKeyNorm.
class LlamaBlock : public GptLayerImpl {
 public:
  LlamaBlock(const ModelConfig& model, int index, const ParamInit& init, torch::Dtype dtype);
  // x (b, T, C) -> (b, T, C)
  torch::Tensor forward(const torch::Tensor& x) override;
  // The same for new positions pos .. pos+t-1 only, x (b, t, C), attending
  // to the keys and values of `cache` (gpt.h KvCache, keys after RoPE)
  // -> (b, t, C). models/torch/kv_cache.cc.
  torch::Tensor ForwardCached(const torch::Tensor& x, int64_t pos, KvCache& cache) override;

  RmsNormLayer input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  SplitLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  SplitLinear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 protected:
  // q (b, T, H, D) when !key, k (b, T, K, D) when key, straight from their
  // projections; returns what RoPE turns, same shape. Llama: unchanged.
  virtual torch::Tensor QueryKeyNorm(const torch::Tensor& x, bool key) {
    (void)key;
    return x;
  }

 private:
  int64_t H_, K_, D_;
  double theta_;
  RopeScaling scaling_;
  torch::Dtype dtype_;
  torch::Tensor cos_, sin_, mask_;  // cached for the last T: (T, 1, D), (T, 1, D), (T, T) bool (true = masked)
  // ForwardCached's RoPE table: positions 0 .. rows-1, (rows, 1, D) each.
  torch::Tensor cached_cos_, cached_sin_;
};

// Builds layer `index` of a Llama-family model with deterministic initial
// values depending only on (seed, index) (as HF LlamaPreTrainedModel:
// N(0, 0.02) weights, zero biases, RMSNorm weights 1). Parameter names
// follow HF's: embed_tokens; the block's above; norm, lm_head.
// REQUIRES: 0 <= index < LayerCount(model); a Llama-style model
// (CheckExecutorModel).
std::shared_ptr<GptLayerImpl> MakeLlamaLayer(const ModelConfig& model, int index, const ParamInit& init,
                                             torch::Dtype dtype);

}  // namespace pw::models
