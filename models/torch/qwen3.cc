// LibTorch Qwen3 dense decoder (HF model_type "qwen3", Qwen3ForCausalLM): the
// Llama decoder of llama.h with one difference in attention (transformers
// modeling_qwen3.py Qwen3Attention, Qwen Team 2025, "Qwen3 Technical Report"
// §2): after the q and k projections, each head's D channels go through an
// RMSNorm of its own weight (D), `q_norm` for the H query heads and `k_norm`
// for the K key/value heads, with the model's eps, before RoPE:
//   q = RoPE(RMSNorm_q(q_proj(n1) as (b, T, H, D))),
//   k = RoPE(RMSNorm_k(k_proj(n1) as (b, T, K, D))).
// Everything else (embedding, RMSNorms, grouped-query causal attention with
// an explicit head_dim, SwiGLU MLP, tied or untied head, biases on q, k, v
// and o when attention_bias) is the Llama layers'. The family's footprint
// terms (2 D parameters, the two norm inputs kept) are its row of
// models/spec/model_family.cc; its HF names (model.layers.i.self_attn.q_norm,
// k_norm) too.
#include <memory>

#include "models/torch/gpt.h"
#include "models/torch/llama.h"

namespace pw::models {

namespace {

// The Qwen3 block: LlamaBlock with q_norm and k_norm (weights 1 at init, as
// HF Qwen3RMSNorm). Parameter names: the Llama block's, plus q_norm.weight
// and k_norm.weight (D each).
class Qwen3Block : public LlamaBlock {
 public:
  Qwen3Block(const ModelConfig& c, int index, const ParamInit& init, torch::Dtype dtype)
      : LlamaBlock(c, index, init, dtype) {
    q_norm = register_module("q_norm", RmsNormLayer(c.head_dim, c.norm_eps, dtype));
    k_norm = register_module("k_norm", RmsNormLayer(c.head_dim, c.norm_eps, dtype));
  }
  RmsNormLayer q_norm{nullptr}, k_norm{nullptr};

 protected:
  // x (b, T, H or K, D) -> the same, normalised over D per head.
  torch::Tensor QueryKeyNorm(const torch::Tensor& x, bool key) override {
    return key ? k_norm->forward(x) : q_norm->forward(x);
  }
};

}  // namespace

// The family's builder (its row in families.cc): Llama's embedding and head,
// Qwen3 blocks.
std::shared_ptr<GptLayerImpl> MakeQwen3Layer(const ModelConfig& model, int index, const ParamInit& init,
                                             torch::Dtype dtype) {
  if (index == 0 || index == LayerCount(model) - 1) return MakeLlamaLayer(model, index, init, dtype);
  return std::make_shared<Qwen3Block>(model, index, init, dtype);
}

}  // namespace pw::models
