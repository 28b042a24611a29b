// Incremental decoding with cached keys and values (gpt.h KvCache): the
// helpers every attention block's ForwardCached uses, the stage's cached
// forward, and the Llama-family block's (Qwen3 included: its q/k norms come
// in through QueryKeyNorm). GPT-2's block and embedding override
// ForwardCached in gpt.cc. A generation step runs one new token through every
// layer: O(P) attention against the P cached positions instead of the whole
// window's O(P^2) and P rows of every GEMM. Dimension letters as in gpt.h and
// llama.h; t = new positions, P = pos + t positions attended to.
#include <cmath>
#include <limits>
#include <string>

#include "models/torch/gpt.h"
#include "models/torch/llama.h"

namespace pw::models {

std::pair<torch::Tensor, torch::Tensor> AppendKeysValues(KvCache& cache, const torch::Tensor& k, const torch::Tensor& v,
                                                         int64_t pos) {
  const int64_t b = k.size(0), K = k.size(1), t = k.size(2), D = k.size(3);
  TORCH_CHECK(pos >= 0 && pos + t <= cache.capacity, "KV cache of ", cache.capacity, " positions cannot take ", t,
              " more at position ", pos);
  if (!cache.k.defined()) {
    cache.k = torch::zeros({b, K, D, cache.capacity}, k.options());  // (b, K, D, capacity)
    cache.v = torch::zeros({b, K, cache.capacity, D}, v.options());  // (b, K, capacity, D)
  }
  cache.k.narrow(3, pos, t).copy_(k.transpose(-2, -1));
  cache.v.narrow(2, pos, t).copy_(v);
  return {cache.k.narrow(3, 0, pos + t), cache.v.narrow(2, 0, pos + t)};  // (b, K, D, P), (b, K, P, D)
}

torch::Tensor DecodeLinear(const SplitLinearImpl& lin, const torch::Tensor& x) {
  const int64_t in = x.size(-1);
  if (x.numel() != in) return torch::linear(x, lin.weight, lin.bias);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = lin.weight.size(0);
  torch::Tensor v = x.reshape({in});                                                                // (in)
  torch::Tensor y = lin.bias.defined() ? torch::addmv(lin.bias, lin.weight, v) : lin.weight.mv(v);  // (out)
  return y.view(shape);                                                                             // (..., out)
}

torch::Tensor CachedCausalMask(int64_t t, int64_t pos, torch::Device device) {
  // Query i sits at position pos + i and sees keys 0 .. pos + i.
  return torch::ones({t, pos + t}, torch::TensorOptions().dtype(torch::kBool).device(device))
      .tril(pos)
      .logical_not();  // (t, P)
}

torch::Tensor GptStageImpl::ForwardCached(const torch::Tensor& tokens, int64_t pos, std::vector<KvCache>& caches,
                                          int64_t capacity) {
  TORCH_CHECK(begin_ == 0, "ForwardCached needs the stage holding the embedding");
  if (caches.size() != layers_.size()) {
    caches.assign(layers_.size(), KvCache{});
    for (KvCache& c : caches) c.capacity = capacity;
  }
  torch::NoGradGuard no_grad;
  torch::Tensor x = tokens;
  for (size_t i = 0; i < layers_.size(); ++i) {
    // Only the last position's logits are used: the head sees that row.
    if (has_head() && i + 1 == layers_.size()) x = x.narrow(1, x.size(1) - 1, 1);  // (b, 1, C)
    x = layers_[i]->ForwardCached(x, pos, caches[i]);
  }
  return x;
}

torch::Tensor LlamaBlock::ForwardCached(const torch::Tensor& x, int64_t pos, KvCache& cache) {
  const int64_t b = x.size(0), t = x.size(1), H = H_, K = K_, D = D_, R = H_ / K_, P = pos + t;
  if (!cached_cos_.defined() || cached_cos_.size(0) < P || cached_cos_.device() != x.device()) {
    // Positions 0 .. capacity-1 at once (the values of a position do not
    // depend on the table's length: RopeCosSin is elementwise in float64).
    auto [cos, sin] = RopeCosSin(std::max(P, cache.capacity), D, theta_, scaling_, dtype_);
    cached_cos_ = cos.to(x.device()).unsqueeze(1);  // (rows, 1, D)
    cached_sin_ = sin.to(x.device()).unsqueeze(1);  // (rows, 1, D)
  }
  torch::Tensor cos = cached_cos_.narrow(0, pos, t), sin = cached_sin_.narrow(0, pos, t);       // (t, 1, D)
  torch::Tensor n1 = input_layernorm->forward(x);                                               // (b, t, C)
  torch::Tensor q = QueryKeyNorm(DecodeLinear(*q_proj, n1).view({b, t, H, D}), /*key=*/false);  // (b, t, H, D)
  torch::Tensor k = QueryKeyNorm(DecodeLinear(*k_proj, n1).view({b, t, K, D}), /*key=*/true);   // (b, t, K, D)
  q = ApplyRope(q, cos, sin);                                                                   // (b, t, H, D)
  k = ApplyRope(k, cos, sin).transpose(1, 2);                                                   // (b, K, t, D)
  torch::Tensor v = DecodeLinear(*v_proj, n1).view({b, t, K, D}).transpose(1, 2);               // (b, K, t, D)
  auto [keys, values] = AppendKeysValues(cache, k, v, pos);  // (b, K, D, P), (b, K, P, D)
  // Grouped-query attention as in forward: the R query heads of one kv head
  // stacked along the rows, (b, K, R*t, D).
  torch::Tensor qg = q.transpose(1, 2).contiguous().view({b, K, R * t, D});
  torch::Tensor scores = qg.matmul(keys) * (1.0 / std::sqrt(static_cast<double>(D)));  // (b, K, R*t, P)
  if (t > 1)
    scores = scores.view({b, H, t, P})
                 .masked_fill(CachedCausalMask(t, pos, x.device()), -std::numeric_limits<double>::infinity())
                 .view({b, K, R * t, P});
  torch::Tensor att = torch::softmax(scores, -1);  // (b, K, R*t, P)
  torch::Tensor y = att.matmul(values).view({b, H, t, D}).transpose(1, 2).contiguous().view({b, t, H * D});
  torch::Tensor h = x + DecodeLinear(*o_proj, y);                                            // (b, t, C)
  torch::Tensor n2 = post_attention_layernorm->forward(h);                                   // (b, t, C)
  torch::Tensor m = torch::silu(DecodeLinear(*gate_proj, n2)) * DecodeLinear(*up_proj, n2);  // (b, t, F)
  return h + DecodeLinear(*down_proj, m);                                                    // (b, t, C)
}

}  // namespace pw::models
