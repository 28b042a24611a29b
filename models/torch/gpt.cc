#include "models/torch/gpt.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include "models/spec/footprint.h"
#include "models/spec/tensor_parallel.h"

namespace pw::models {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Backward shared by both variants below: dX now; dW and db now (B) or
// later through the sink (I). Returns {dX, dW, db}; dW and db undefined when
// deferred. x (..., in), w (out, in), dy (..., out).
variable_list SplitLinearBackward(AutogradContext* ctx, const torch::Tensor& dy, const torch::Tensor& bias) {
  auto saved = ctx->get_saved_variables();
  const torch::Tensor& x = saved[0];  // (..., in)
  const torch::Tensor& w = saved[1];  // (out, in)
  auto* sink = reinterpret_cast<DeferredGradSink*>(static_cast<intptr_t>(ctx->saved_data["sink"].toInt()));
  torch::Tensor dx = ctx->needs_input_grad(0) ? dy.matmul(w) : torch::Tensor();  // (..., in)
  if (sink != nullptr && sink->Deferring()) {
    DeferredGemm gemm;
    gemm.weight = w;
    gemm.bias = bias;
    gemm.input = x;
    gemm.grad_output = dy;
    sink->Push(std::move(gemm));
    return {dx, torch::Tensor(), torch::Tensor()};
  }
  const int64_t in = x.size(-1), out = dy.size(-1);
  torch::Tensor dy2 = dy.reshape({-1, out});                         // (N, out)
  torch::Tensor dw = dy2.t().mm(x.reshape({-1, in}));                // (out, in)
  torch::Tensor db = bias.defined() ? dy2.sum(0) : torch::Tensor();  // (out)
  return {dx, dw, db};
}

// Custom autograd functions behind SplitLinear (LibTorch 1.13 cannot pass an
// undefined tensor through Function::apply, hence two variants).
// forward: x (..., in), w (out, in), b (out) -> y (..., out).
struct SplitLinearBiasFunction : public torch::autograd::Function<SplitLinearBiasFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& b, DeferredGradSink* sink) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["sink"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(sink));
    ctx->saved_data["bias"] = b;
    return torch::linear(x, w, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list g = SplitLinearBackward(ctx, grad_outputs[0], ctx->saved_data["bias"].toTensor());
    return {g[0], g[1], g[2], torch::Tensor()};
  }
};

struct SplitLinearNoBiasFunction : public torch::autograd::Function<SplitLinearNoBiasFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               DeferredGradSink* sink) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["sink"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(sink));
    return torch::linear(x, w);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list g = SplitLinearBackward(ctx, grad_outputs[0], torch::Tensor());
    return {g[0], g[1], torch::Tensor()};
  }
};

// Embedding as a custom function so that W can take over its weight
// gradient. forward: wte (V, C), wpe (n_positions, C), tokens (b, T) int64
// -> (b, T, C).
struct EmbeddingFunction : public torch::autograd::Function<EmbeddingFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& wte, const torch::Tensor& wpe,
                               const torch::Tensor& tokens, DeferredGradSink* sink) {
    ctx->saved_data["sink"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(sink));
    ctx->saved_data["wte"] = wte;
    ctx->saved_data["wpe"] = wpe;
    ctx->saved_data["tokens"] = tokens;
    const int64_t T = tokens.size(1);
    return torch::embedding(wte, tokens) + wpe.narrow(0, 0, T).unsqueeze(0);  // (b, T, C)
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto* sink = reinterpret_cast<DeferredGradSink*>(static_cast<intptr_t>(ctx->saved_data["sink"].toInt()));
    DeferredGemm d;
    d.kind = DeferredGemm::Kind::kEmbedding;
    d.weight = ctx->saved_data["wte"].toTensor();
    d.bias = ctx->saved_data["wpe"].toTensor();
    d.input = ctx->saved_data["tokens"].toTensor();
    d.grad_output = grad_outputs[0];  // (b, T, C)
    if (sink != nullptr && sink->Deferring()) {
      sink->Push(std::move(d));
      return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    const int64_t C = d.weight.size(1), T = d.input.size(1);
    torch::Tensor dy = d.grad_output.reshape({-1, C});                                          // (b*T, C)
    torch::Tensor dwte = torch::zeros_like(d.weight).index_add_(0, d.input.reshape({-1}), dy);  // (V, C)
    torch::Tensor dwpe = torch::zeros_like(d.bias);                                             // (n_positions, C)
    dwpe.narrow(0, 0, T).copy_(d.grad_output.sum(0));
    return {dwte, dwpe, torch::Tensor(), torch::Tensor()};
  }
};

// The token-only variant (Llama: no position table). forward: wte (V, C),
// tokens (b, T) int64 -> (b, T, C).
struct TokenEmbeddingFunction : public torch::autograd::Function<TokenEmbeddingFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& wte, const torch::Tensor& tokens,
                               DeferredGradSink* sink) {
    ctx->saved_data["sink"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(sink));
    ctx->saved_data["wte"] = wte;
    ctx->saved_data["tokens"] = tokens;
    return torch::embedding(wte, tokens);  // (b, T, C)
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto* sink = reinterpret_cast<DeferredGradSink*>(static_cast<intptr_t>(ctx->saved_data["sink"].toInt()));
    DeferredGemm d;
    d.kind = DeferredGemm::Kind::kEmbedding;
    d.weight = ctx->saved_data["wte"].toTensor();
    d.input = ctx->saved_data["tokens"].toTensor();
    d.grad_output = grad_outputs[0];  // (b, T, C)
    if (sink != nullptr && sink->Deferring()) {
      sink->Push(std::move(d));
      return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    const int64_t C = d.weight.size(1);
    torch::Tensor dwte =
        torch::zeros_like(d.weight).index_add_(0, d.input.reshape({-1}), d.grad_output.reshape({-1, C}));  // (V, C)
    return {dwte, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

// Fills a tensor of `sizes` with N(0, stddev) from a std::mt19937_64 seeded
// by `seed`: portable across LibTorch versions and thread-safe.
torch::Tensor NormalInit(std::vector<int64_t> sizes, double stddev, uint64_t seed, torch::Dtype dtype) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, stddev);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  torch::Tensor t = torch::empty({n}, torch::TensorOptions().dtype(torch::kDouble));
  double* p = t.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) p[i] = dist(rng);
  return t.reshape(sizes).to(dtype);
}

// Seeds of the parameters of one layer: distinct per (seed, layer, slot).
uint64_t ParamSeed(uint64_t seed, int layer, int slot) {
  return seed * 1000003ULL + static_cast<uint64_t>(layer) * 101ULL + static_cast<uint64_t>(slot);
}

torch::Tensor InitialValue(const ParamInit& init, std::vector<int64_t> sizes, double stddev, int layer, int slot,
                           torch::Dtype dtype) {
  if (!init.random) return torch::zeros(sizes, torch::TensorOptions().dtype(dtype));
  return NormalInit(std::move(sizes), stddev, ParamSeed(init.seed, layer, slot), dtype);
}

void InitLinear(SplitLinear& lin, double stddev, const ParamInit& init, int layer, int slot, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  lin->weight.copy_(InitialValue(init, lin->weight.sizes().vec(), stddev, layer, slot, dtype));
  if (lin->bias.defined()) lin->bias.zero_();
}

void InitTiedReplica(SplitLinear& lm_head, const ModelConfig& c, const ParamInit& init, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  lm_head->weight.copy_(InitialValue(init, {c.vocab, c.hidden}, 0.02, 0, 0, dtype));
}

void LmHeadLayer::AddLmHead(const ModelConfig& c, int index, const ParamInit& init, torch::Dtype dtype) {
  lm_head = register_module("lm_head", SplitLinear(c.hidden, c.vocab, false));
  if (!c.tied) InitLinear(lm_head, 0.02, init, index, 0, dtype);  // tied: the replica's values, below
  this->to(dtype);
  if (c.tied) InitTiedReplica(lm_head, c, init, dtype);
}

void LmHeadLayer::ShareTokenTable(const torch::Tensor& table) {
  unregister_module("lm_head");
  shared_ = table;
}

torch::Tensor LmHeadLayer::forward(const torch::Tensor& x) {
  if (shared_.defined()) return torch::linear(FinalNorm(x), shared_);
  return lm_head->forward(TpEnter(FinalNorm(x), tp_));
}

torch::Tensor LmHeadLayer::ForwardCached(const torch::Tensor& x, int64_t pos, KvCache& cache) {
  (void)pos;
  (void)cache;
  if (shared_.defined()) return forward(x);
  return DecodeLinear(*lm_head, FinalNorm(x));
}

torch::Tensor TokenEmbedding(const torch::Tensor& wte, const torch::Tensor& tokens, DeferredGradSink* sink) {
  if (sink != nullptr) return TokenEmbeddingFunction::apply(wte, tokens, sink);
  return torch::embedding(wte, tokens);  // (b, T, C)
}

namespace {

class EmbeddingLayer : public GptLayerImpl {
 public:
  EmbeddingLayer(const ModelConfig& c, const ParamInit& init, torch::Dtype dtype) {
    wte = register_parameter("wte", InitialValue(init, {c.vocab, c.hidden}, 0.02, 0, 0, dtype));
    wpe = register_parameter("wpe", InitialValue(init, {c.max_positions, c.hidden}, 0.01, 0, 1, dtype));
  }
  void SetSink(DeferredGradSink* sink) override { sink_ = sink; }
  torch::Tensor TokenTable() const override { return wte; }
  // tokens (b, T) int64 -> (b, T, C); tensor-parallel with SP: (b, T/t, C)
  torch::Tensor forward(const torch::Tensor& tokens) override {
    if (tp_.group) {
      // Vocab-parallel lookup (summed or reduce-scattered over the group),
      // then the replicated positions of the rows this rank holds.
      torch::Tensor tok = VocabParallelEmbedding(wte, tokens, sink_, tp_);  // (b, T[/t], C)
      const int64_t rows = tok.size(1), first = tp_.sequence_parallel ? tp_.rank() * rows : 0;
      return tok + wpe.narrow(0, first, rows).unsqueeze(0);
    }
    if (sink_ != nullptr) return EmbeddingFunction::apply(wte, wpe, tokens, sink_);
    const int64_t T = tokens.size(1);
    torch::Tensor tok = torch::embedding(wte, tokens);     // (b, T, C)
    torch::Tensor pos = wpe.narrow(0, 0, T).unsqueeze(0);  // (1, T, C)
    return tok + pos;                                      // (b, T, C)
  }
  // tokens (b, t) int64 at positions pos .. pos+t-1 -> (b, t, C)
  torch::Tensor ForwardCached(const torch::Tensor& tokens, int64_t pos, KvCache& cache) override {
    (void)cache;
    return torch::embedding(wte, tokens) + wpe.narrow(0, pos, tokens.size(1)).unsqueeze(0);
  }
  torch::Tensor wte;  // (V, C)
  torch::Tensor wpe;  // (n_positions, C)

 private:
  DeferredGradSink* sink_ = nullptr;  // not owned
};

class BlockLayer : public GptLayerImpl {
 public:
  BlockLayer(const ModelConfig& c, int index, const ParamInit& init, torch::Dtype dtype)
      : n_head_(c.num_heads), gelu_(c.gelu_tanh ? "tanh" : "none") {
    const int64_t C = c.hidden, F = c.ffn;
    auto ln = [&](const char* name) {
      return register_module(name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({C}).eps(c.norm_eps)));
    };
    ln_1 = ln("ln_1");
    ln_2 = ln("ln_2");
    qkv = register_module("attn_qkv", SplitLinear(C, 3 * C, true));
    attn_proj = register_module("attn_proj", SplitLinear(C, C, true));
    fc = register_module("mlp_fc", SplitLinear(C, F, true));
    mlp_proj = register_module("mlp_proj", SplitLinear(F, C, true));
    const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.num_layers));
    InitLinear(qkv, 0.02, init, index, 0, dtype);
    InitLinear(attn_proj, residual_std, init, index, 1, dtype);
    InitLinear(fc, 0.02, init, index, 2, dtype);
    InitLinear(mlp_proj, residual_std, init, index, 3, dtype);
    this->to(dtype);
  }
  // x (b, T, C) -> (b, T, C). Tensor-parallel (tp_): this rank's H/t heads
  // (C/t = Cl channels of q, k and v) and F/t MLP columns; with SP x and the
  // result are (b, T/t, C) sequence shards.
  torch::Tensor forward(const torch::Tensor& x) override {
    const int64_t D = x.size(2) / n_head_;
    torch::Tensor a = TpEnter(ln_1->forward(x), tp_);  // (b, T, C)
    const int64_t b = a.size(0), T = a.size(1);
    torch::Tensor qkv_out = qkv->forward(a);  // (b, T, 3Cl)
    const int64_t C = qkv_out.size(2) / 3, H = C / D;
    auto parts = qkv_out.split(C, /*dim=*/2);                                                       // 3 x (b, T, Cl)
    torch::Tensor q = parts[0].view({b, T, H, D}).transpose(1, 2);                                  // (b, H, T, D)
    torch::Tensor k = parts[1].view({b, T, H, D}).transpose(1, 2);                                  // (b, H, T, D)
    torch::Tensor v = parts[2].view({b, T, H, D}).transpose(1, 2);                                  // (b, H, T, D)
    torch::Tensor att = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));  // (b, H, T, T)
    torch::Tensor mask =
        torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).tril();  // (T, T)
    att = att.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
    att = torch::softmax(att, -1);                                                      // (b, H, T, T)
    torch::Tensor y = att.matmul(v);                                                    // (b, H, T, D)
    y = y.transpose(1, 2).contiguous().view({b, T, C});                                 // (b, T, Cl)
    torch::Tensor h = x + attn_proj->forward_row_parallel(y, tp_);                      // (b, T[/t], C)
    torch::Tensor m = torch::gelu(fc->forward(TpEnter(ln_2->forward(h), tp_)), gelu_);  // (b, T, F/t)
    return h + mlp_proj->forward_row_parallel(m, tp_);                                  // (b, T[/t], C)
  }
  // forward for the new positions pos .. pos+t-1 only, x (b, t, C), their
  // keys and values appended to `cache` -> (b, t, C).
  torch::Tensor ForwardCached(const torch::Tensor& x, int64_t pos, KvCache& cache) override {
    const int64_t b = x.size(0), t = x.size(1), C = x.size(2), H = n_head_, D = C / H;
    auto parts = DecodeLinear(*qkv, ln_1->forward(x)).split(C, /*dim=*/2);  // 3 x (b, t, C)
    torch::Tensor q = parts[0].view({b, t, H, D}).transpose(1, 2);          // (b, H, t, D)
    auto [k, v] = AppendKeysValues(cache, parts[1].view({b, t, H, D}).transpose(1, 2),
                                   parts[2].view({b, t, H, D}).transpose(1, 2), pos);  // (b, H, D, P), (b, H, P, D)
    torch::Tensor att = q.matmul(k) * (1.0 / std::sqrt(static_cast<double>(D)));       // (b, H, t, P), P = pos + t
    if (t > 1) att = att.masked_fill(CachedCausalMask(t, pos, x.device()), -std::numeric_limits<double>::infinity());
    torch::Tensor y = torch::softmax(att, -1).matmul(v).transpose(1, 2).contiguous().view({b, t, C});  // (b, t, C)
    torch::Tensor h = x + DecodeLinear(*attn_proj, y);                                                 // (b, t, C)
    return h + DecodeLinear(*mlp_proj, torch::gelu(DecodeLinear(*fc, ln_2->forward(h)), gelu_));       // (b, t, C)
  }
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  SplitLinear qkv{nullptr}, attn_proj{nullptr}, fc{nullptr}, mlp_proj{nullptr};

 private:
  int64_t n_head_;
  std::string gelu_;  // torch::gelu approximate: "none" (exact erf) or "tanh" (ModelConfig::gelu_tanh)
};

class HeadLayer : public LmHeadLayer {
 public:
  HeadLayer(const ModelConfig& c, int index, const ParamInit& init, torch::Dtype dtype) {
    ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden}).eps(c.norm_eps)));
    AddLmHead(c, index, init, dtype);
  }
  torch::nn::LayerNorm ln_f{nullptr};

 protected:
  torch::Tensor FinalNorm(const torch::Tensor& x) override { return ln_f->forward(x); }
};

}  // namespace

SplitLinearImpl::SplitLinearImpl(int64_t in, int64_t out, bool with_bias) {
  weight = register_parameter("weight", torch::empty({out, in}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({out}));
}

torch::Tensor SplitLinearImpl::forward(const torch::Tensor& x) {
  if (sink_ == nullptr) return torch::linear(x, weight, bias);
  if (bias.defined()) return SplitLinearBiasFunction::apply(x, weight, bias, sink_);
  return SplitLinearNoBiasFunction::apply(x, weight, sink_);
}

torch::Tensor SplitLinearImpl::forward_row_parallel(const torch::Tensor& x, const TensorParallelContext& tp) {
  if (!tp.group) return forward(x);
  torch::Tensor partial =
      sink_ == nullptr ? torch::linear(x, weight) : SplitLinearNoBiasFunction::apply(x, weight, sink_);  // (..., out)
  torch::Tensor y = TpExit(partial, tp);
  return bias.defined() ? y + bias : y;
}

void ApplyDeferredGrad(const DeferredGemm& g) {
  torch::NoGradGuard no_grad;
  auto accumulate = [](const torch::Tensor& param, const torch::Tensor& grad) {
    torch::Tensor& pg = param.mutable_grad();
    if (pg.defined())
      pg.add_(grad);
    else
      pg = grad;
  };
  if (g.kind == DeferredGemm::Kind::kEmbedding) {
    const int64_t C = g.weight.size(1), T = g.input.size(1);
    torch::Tensor dy = g.grad_output.reshape({-1, C});                                           // (b*T, C)
    accumulate(g.weight, torch::zeros_like(g.weight).index_add_(0, g.input.reshape({-1}), dy));  // (V, C)
    if (g.bias.defined()) {                            // learned positions (GPT-2); none for Llama
      torch::Tensor dwpe = torch::zeros_like(g.bias);  // (n_positions, C)
      dwpe.narrow(0, 0, T).copy_(g.grad_output.sum(0));
      accumulate(g.bias, dwpe);
    }
    return;
  }
  const int64_t in = g.input.size(-1), out = g.grad_output.size(-1);
  torch::Tensor dy = g.grad_output.reshape({-1, out});         // (N, out)
  accumulate(g.weight, dy.t().mm(g.input.reshape({-1, in})));  // (out, in)
  if (g.bias.defined()) accumulate(g.bias, dy.sum(0));         // (out)
}

void GptLayerImpl::SetSink(DeferredGradSink* sink) {
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* lin = dynamic_cast<SplitLinearImpl*>(m.get())) lin->set_sink(sink);
  }
}

std::shared_ptr<GptLayerImpl> MakeGpt2Layer(const ModelConfig& config, int index, const ParamInit& init,
                                            torch::Dtype dtype) {
  if (index == 0) return std::make_shared<EmbeddingLayer>(config, init, dtype);
  if (index == LayerCount(config) - 1) return std::make_shared<HeadLayer>(config, index, init, dtype);
  return std::make_shared<BlockLayer>(config, index, init, dtype);
}

std::shared_ptr<GptLayerImpl> MakeGptLayer(const ModelConfig& config, int index, const ParamInit& init,
                                           torch::Dtype dtype) {
  for (const FamilyLayers& f : FamilyLayerBuilders())
    if (f.family == config.family) return f.build(config, index, init, dtype);
  // Unreachable: every family has a row (tests/models/llama_test.cc checks).
  throw std::logic_error(std::string("no layer builder for model family ") + ModelFamilyName(config.family));
}

GptStageImpl::GptStageImpl(const ModelConfig& config, int begin, int end, const ParamInit& init, torch::Dtype dtype,
                           bool share_tied)
    : config_(config), begin_(begin), end_(end) {
  config_.raw = nlohmann::json();  // the config object as read is not needed to build or run layers
  const auto all_names = LayerNames(config);
  for (int i = begin; i < end; ++i) {
    names_.push_back(all_names[i]);
    layers_.push_back(register_module("layer" + std::to_string(i), MakeGptLayer(config, i, init, dtype)));
  }
  if (share_tied && config.tied && begin == 0 && end == LayerCount(config))
    layers_.back()->ShareTokenTable(layers_.front()->TokenTable());
}

torch::Tensor GptStageImpl::forward(torch::Tensor x) {
  for (auto& layer : layers_) x = layer->forward(x);
  return x;
}

void GptStageImpl::SetSink(DeferredGradSink* sink) {
  for (auto& layer : layers_) layer->SetSink(sink);
}

std::vector<std::pair<std::string, torch::Tensor>> GptStageImpl::NamedParameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (const auto& item : layers_[i]->named_parameters(/*recurse=*/true))
      out.emplace_back(names_[i] + "." + item.key(), item.value());
  }
  return out;
}

Status GptStageImpl::ShardTensorParallel(const TensorParallelContext& tp) {
  const int t = tp.size(), r = tp.rank();
  PW_RETURN_IF_ERROR(CheckTensorParallel(config_, t, /*sequence_parallel=*/false, /*seq_length=*/1));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (auto& item : layers_[i]->named_parameters(/*recurse=*/true)) {
      const std::string name = names_[i] + "." + item.key();
      PW_ASSIGN_OR_RETURN(TensorParallelLayout layout, TensorParallelLayoutOf(config_, name, t));
      if (!layout.split) continue;
      torch::Tensor& p = item.value();
      p.set_data(SliceForTpRank(p.detach(), layout, t, r));
    }
    layers_[i]->SetTensorParallel(tp);
  }
  tp_ = tp;
  return Status::Ok();
}

torch::Tensor GptStageImpl::Loss(const torch::Tensor& logits, const torch::Tensor& targets) const {
  if (tp_.group) return VocabParallelCrossEntropy(logits, targets, config_.vocab, tp_);
  return LanguageModelLoss(logits, targets);
}

torch::Tensor LanguageModelLoss(const torch::Tensor& logits, const torch::Tensor& targets) {
  const int64_t V = logits.size(-1);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, V}), targets.reshape({-1}));  // scalar
}

}  // namespace pw::models
