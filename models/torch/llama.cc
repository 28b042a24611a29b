#include "models/torch/llama.h"

#include <cmath>
#include <limits>

namespace pw::models {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// RMSNorm with a backward that keeps x and r = 1 / rms only.
// forward: x (..., C), w (C) -> (..., C).
struct RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w, double eps) {
    torch::Tensor r = torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);  // (..., 1)
    ctx->save_for_backward({x, w, r});
    return x * r * w;  // (..., C)
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& w = saved[1];
    const torch::Tensor& r = saved[2];
    const torch::Tensor& dy = grad_outputs[0];  // (..., C)
    torch::Tensor xhat = x * r;                 // (..., C)
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      torch::Tensor g = dy * w;                                     // (..., C)
      dx = r * (g - xhat * (g * xhat).mean(-1, /*keepdim=*/true));  // (..., C)
    }
    if (ctx->needs_input_grad(1)) dw = (dy * xhat).reshape({-1, x.size(-1)}).sum(0);  // (C)
    return {dx, dw, torch::Tensor()};
  }
};

class LlamaEmbedding : public GptLayerImpl {
 public:
  LlamaEmbedding(const ModelConfig& c, const ParamInit& init, torch::Dtype dtype) {
    embed_tokens = register_parameter("embed_tokens", InitialValue(init, {c.vocab, c.hidden}, 0.02, 0, 0, dtype));
  }
  void SetSink(DeferredGradSink* sink) override { sink_ = sink; }
  torch::Tensor TokenTable() const override { return embed_tokens; }
  // tokens (b, T) int64 -> (b, T, C); tensor-parallel: vocab-parallel, (b, T/t, C) with SP
  torch::Tensor forward(const torch::Tensor& tokens) override {
    if (tp_.group) return VocabParallelEmbedding(embed_tokens, tokens, sink_, tp_);
    return TokenEmbedding(embed_tokens, tokens, sink_);
  }
  torch::Tensor embed_tokens;  // (V, C)

 private:
  DeferredGradSink* sink_ = nullptr;  // not owned
};

class LlamaHead : public LmHeadLayer {
 public:
  LlamaHead(const ModelConfig& c, int index, const ParamInit& init, torch::Dtype dtype) {
    norm = register_module("norm", RmsNormLayer(c.hidden, c.norm_eps, dtype));
    AddLmHead(c, index, init, dtype);
  }
  RmsNormLayer norm{nullptr};

 protected:
  torch::Tensor FinalNorm(const torch::Tensor& x) override { return norm->forward(x); }
};

}  // namespace

LlamaBlock::LlamaBlock(const ModelConfig& c, int index, const ParamInit& init, torch::Dtype dtype)
    : H_(c.num_heads),
      K_(c.num_kv_heads),
      D_(c.head_dim),
      theta_(c.rope_theta),
      scaling_(c.rope_scaling),
      dtype_(dtype) {
  const int64_t C = c.hidden, F = c.ffn;
  const bool qkv_bias = c.attention_bias || c.qkv_bias;
  input_layernorm = register_module("input_layernorm", RmsNormLayer(C, c.norm_eps, dtype));
  q_proj = register_module("q_proj", SplitLinear(C, H_ * D_, qkv_bias));
  k_proj = register_module("k_proj", SplitLinear(C, K_ * D_, qkv_bias));
  v_proj = register_module("v_proj", SplitLinear(C, K_ * D_, qkv_bias));
  o_proj = register_module("o_proj", SplitLinear(H_ * D_, C, c.attention_bias));
  post_attention_layernorm = register_module("post_attention_layernorm", RmsNormLayer(C, c.norm_eps, dtype));
  gate_proj = register_module("gate_proj", SplitLinear(C, F, c.mlp_bias));
  up_proj = register_module("up_proj", SplitLinear(C, F, c.mlp_bias));
  down_proj = register_module("down_proj", SplitLinear(F, C, c.mlp_bias));
  int slot = 0;
  for (SplitLinear* lin : {&q_proj, &k_proj, &v_proj, &o_proj, &gate_proj, &up_proj, &down_proj})
    InitLinear(*lin, 0.02, init, index, slot++, dtype);
  this->to(dtype);
}

torch::Tensor LlamaBlock::forward(const torch::Tensor& x) {
  // Tensor-parallel (tp_): this rank's H/t query and K/t kv heads (the
  // group ratio R unchanged) and F/t MLP columns; with SP x and the result
  // are (b, T/t, C) sequence shards.
  torch::Tensor n1 = TpEnter(input_layernorm->forward(x), tp_);  // (b, T, C)
  const int64_t t = tp_.size(), b = n1.size(0), T = n1.size(1), H = H_ / t, K = K_ / t, D = D_, R = H_ / K_;
  if (!cos_.defined() || cos_.size(0) != T || cos_.device() != x.device()) {
    auto [cos, sin] = RopeCosSin(T, D, theta_, scaling_, dtype_);
    cos_ = cos.to(x.device()).unsqueeze(1);  // (T, 1, D)
    sin_ = sin.to(x.device()).unsqueeze(1);  // (T, 1, D)
    mask_ = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).tril().logical_not();
  }
  torch::Tensor q = QueryKeyNorm(q_proj->forward(n1).view({b, T, H, D}), /*key=*/false);  // (b, T, H, D)
  torch::Tensor k = QueryKeyNorm(k_proj->forward(n1).view({b, T, K, D}), /*key=*/true);   // (b, T, K, D)
  q = ApplyRope(q, cos_, sin_);                                                           // (b, T, H, D)
  k = ApplyRope(k, cos_, sin_);                                                           // (b, T, K, D)
  torch::Tensor v = v_proj->forward(n1).view({b, T, K, D}).transpose(1, 2);               // (b, K, T, D)
  // Grouped-query attention without repeating K and V: the R query heads
  // of one kv head are stacked along the rows, (b, K, R*T, D).
  torch::Tensor qg = q.transpose(1, 2).contiguous().view({b, K, R * T, D});
  torch::Tensor scores =
      qg.matmul(k.transpose(1, 2).transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));  // (b, K, R*T, T)
  scores = scores.view({b, H, T, T}).masked_fill(mask_, -std::numeric_limits<double>::infinity());
  torch::Tensor att = torch::softmax(scores, -1).view({b, K, R * T, T});  // (b, K, R*T, T)
  torch::Tensor y = att.matmul(v).view({b, H, T, D}).transpose(1, 2).contiguous().view({b, T, H * D});
  torch::Tensor h = x + o_proj->forward_row_parallel(y, tp_);                    // (b, T[/t], C)
  torch::Tensor n2 = TpEnter(post_attention_layernorm->forward(h), tp_);         // (b, T, C)
  torch::Tensor m = torch::silu(gate_proj->forward(n2)) * up_proj->forward(n2);  // (b, T, F/t)
  return h + down_proj->forward_row_parallel(m, tp_);                            // (b, T[/t], C)
}

torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return RmsNormFunction::apply(x, weight, eps);
}

torch::Tensor RopeInverseFrequencies(int64_t D, double theta, const RopeScaling& s) {
  torch::Tensor inv = torch::empty({D / 2}, torch::TensorOptions().dtype(torch::kDouble));
  double* p = inv.data_ptr<double>();
  const double kPi = 3.14159265358979323846;
  for (int64_t i = 0; i < D / 2; ++i) {
    double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    switch (s.type) {
      case RopeScaling::Type::kDefault:
        break;
      case RopeScaling::Type::kLinear:
        f /= s.factor;
        break;
      case RopeScaling::Type::kLlama3: {
        const double old_ctx = static_cast<double>(s.original_max_position_embeddings);
        const double wavelen = 2.0 * kPi / f;
        const double low_freq_wavelen = old_ctx / s.low_freq_factor;    // longer waves: scaled
        const double high_freq_wavelen = old_ctx / s.high_freq_factor;  // shorter waves: kept
        if (wavelen > low_freq_wavelen) {
          f /= s.factor;
        } else if (wavelen >= high_freq_wavelen) {
          const double t = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          f = (1.0 - t) * f / s.factor + t * f;
        }
        break;
      }
    }
    p[i] = f;
  }
  return inv;
}

std::pair<torch::Tensor, torch::Tensor> RopeCosSin(int64_t T, int64_t D, double theta, const RopeScaling& s,
                                                   torch::Dtype dtype) {
  torch::Tensor inv = RopeInverseFrequencies(D, theta, s);                             // (D/2)
  torch::Tensor pos = torch::arange(T, torch::TensorOptions().dtype(torch::kDouble));  // (T)
  torch::Tensor ang = torch::outer(pos, inv);                                          // (T, D/2)
  torch::Tensor emb = torch::cat({ang, ang}, -1);                                      // (T, D)
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

torch::Tensor ApplyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  torch::Tensor rot = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);  // rotate_half(x)
  return x * cos + rot * sin;
}

std::shared_ptr<GptLayerImpl> MakeLlamaLayer(const ModelConfig& config, int index, const ParamInit& init,
                                             torch::Dtype dtype) {
  if (index == 0) return std::make_shared<LlamaEmbedding>(config, init, dtype);
  if (index == LayerCount(config) - 1) return std::make_shared<LlamaHead>(config, index, init, dtype);
  return std::make_shared<LlamaBlock>(config, index, init, dtype);
}

}  // namespace pw::models
