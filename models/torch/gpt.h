// LibTorch decoders, built layer by layer from the one model vocabulary,
// pw::ModelConfig (models/spec/model_config.h), so that a plan's
// `stages[].layers` range builds one pipeline stage (LayerNames there is the
// layer list). Each family's layers come from its builder in the family
// table (FamilyLayerBuilders, models/torch/families.cc): GPT-2 here,
// Llama in llama.h, Qwen3 in qwen3.cc. Dimension letters used in this file:
//   b = rows (sequences) in a microbatch, T = sequence length, C = hidden,
//   H = heads, D = head_dim, F = ffn, V = vocab.
//
// Split backward (zero-bubble I/W): every weight GEMM goes through
// SplitLinear. With no sink, or a sink that does not defer, its backward
// produces dX, dW and db at once (B). When the sink defers (an I action), its
// backward produces only dX and hands (X, dY) to the sink, which computes dW
// and db later (the W action). LayerNorm weight gradients are
// elementwise work and are always produced during I/B; the embedding's
// scatter-add is deferred like a GEMM (it needs the token ids and dY).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/spec/model_config.h"
#include "models/torch/tensor_parallel.h"

namespace pw::models {

// How construction fills the parameters that start random (the weight
// matrices, the token and position tables; norms and biases always start
// at their fixed values). A seed alone (the implicit conversion) means the
// deterministic N(0, std) values of that seed, for training from scratch.
// Overwritten(): zeros, no random numbers drawn, for a model whose every
// parameter is overwritten before it is used (a checkpoint read by --resume
// or generate, an HF directory read by --init-from): the same results, a
// faster start (the fill is a per-element RNG draw).
struct ParamInit {
  ParamInit(uint64_t seed = 0) : seed(seed) {}  // NOLINT(google-explicit-constructor): a seed is a random init
  static ParamInit Overwritten() {
    ParamInit p;
    p.random = false;
    return p;
  }
  uint64_t seed;
  bool random = true;
};

// What a layer leaves for its deferred weight gradient.
struct DeferredGemm {
  enum class Kind {
    kGemm,       // y = x W^T + b:  dW = dY^T X, db = sum dY
    kEmbedding,  // y = wte[ids] (+ wpe[:T]):  dwte = scatter-add of dY by ids, dwpe[:T] = sum over rows of dY
  };
  Kind kind = Kind::kGemm;
  torch::Tensor weight;       // kGemm: W (out, in); kEmbedding: wte (V, C). The parameter (shares its grad)
  torch::Tensor bias;         // kGemm: b (out) or undefined; kEmbedding: wpe (n_positions, C) or undefined (Llama)
  torch::Tensor input;        // kGemm: X (..., in); kEmbedding: token ids (b, T) int64
  torch::Tensor grad_output;  // dY: kGemm (..., out); kEmbedding (b, T, C)
};

// Weight gradients of `gemm` (either kind), accumulated into the
// parameters' .grad (created if undefined). Runs under NoGradGuard.
void ApplyDeferredGrad(const DeferredGemm& gemm);

// Receives deferred weight-gradient work. Implemented by the executor's
// weight-gradient store. Called from inside autograd backward (same thread).
class DeferredGradSink {
 public:
  virtual ~DeferredGradSink() = default;
  // True while an input-gradient-only backward (I) is running.
  virtual bool Deferring() const = 0;
  // Takes ownership of the tensors; called once per GEMM per I.
  virtual void Push(DeferredGemm gemm) = 0;
};

// y = x W^T + b with a split-capable backward.
class SplitLinearImpl : public torch::nn::Module {
 public:
  SplitLinearImpl(int64_t in, int64_t out, bool bias);
  // x: (..., in) -> (..., out).
  torch::Tensor forward(const torch::Tensor& x);
  // Row-parallel (Megatron, Shoeybi et al. 2019 §3): x (..., in/t) times this
  // rank's weight columns, the partial sums leave the tensor-parallel region
  // (TpExit: all-reduce, or reduce-scatter along the sequence with SP), then
  // the replicated bias is added once. No group in `tp`: forward(x).
  torch::Tensor forward_row_parallel(const torch::Tensor& x, const TensorParallelContext& tp);
  void set_sink(DeferredGradSink* sink) { sink_ = sink; }

  torch::Tensor weight;  // (out, in)
  torch::Tensor bias;    // (out) or undefined

 private:
  DeferredGradSink* sink_ = nullptr;  // not owned; nullptr = plain torch::linear autograd
};
TORCH_MODULE(SplitLinear);

// Keys and values of one attention block for incremental decoding
// (generation, models/torch/kv_cache.cc): buffers of `capacity` positions,
// filled from position 0; ForwardCached appends the new positions' keys and
// values and attends to everything up to them. Keys are stored transposed,
// so that the scores q K^T read the cached keys as they lie (a strided view
// BLAS takes without a copy). Undefined tensors until the block's first
// ForwardCached allocates them (zeros, the block's dtype).
struct KvCache {
  int64_t capacity = 0;  // positions the buffers hold (>= every pos + t passed to ForwardCached)
  torch::Tensor k;       // (b, K, D, capacity) keys transposed (Llama: after RoPE); K = key/value heads (GPT-2: H)
  torch::Tensor v;       // (b, K, capacity, D) values
};

// Appends k and v (b, K, t, D), the keys and values of positions
// pos .. pos+t-1, to `cache` (allocated on first use) and returns views of
// the keys, transposed, (b, K, D, pos+t), and the values (b, K, pos+t, D) of
// positions 0 .. pos+t-1. Throws c10::Error when pos + t > cache.capacity.
std::pair<torch::Tensor, torch::Tensor> AppendKeysValues(KvCache& cache, const torch::Tensor& k, const torch::Tensor& v,
                                                         int64_t pos);

// y = x W^T + b of `lin` for incremental decoding (no autograd): one row
// (x (..., in) with x.numel() == in) goes through a matrix-vector product
// (BLAS gemv: the weight is read once, never packed as a GEMM operand);
// more rows through torch::linear. x (..., in) -> (..., out).
torch::Tensor DecodeLinear(const SplitLinearImpl& lin, const torch::Tensor& x);

// Causal mask of t new queries at positions pos .. pos+t-1 against keys at
// positions 0 .. pos+t-1: (t, pos+t) bool, true where the key comes after the
// query (masked).
torch::Tensor CachedCausalMask(int64_t t, int64_t pos, torch::Device device);

// One entry of the layer list. forward maps the layer's input to its output:
// embedding: tokens (b, T) int64 -> (b, T, C); block: (b, T, C) -> (b, T, C);
// head: (b, T, C) -> logits (b, T, V).
class GptLayerImpl : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // Routes every SplitLinear (and the embedding) of the layer to `sink`
  // (nullptr: plain autograd).
  virtual void SetSink(DeferredGradSink* sink);
  // Embedding layers: the token table wte (V, C); other layers: undefined.
  virtual torch::Tensor TokenTable() const { return torch::Tensor(); }
  // Head layers of a tied model: use `table` (V, C), the embedding's own
  // parameter, as the LM head's weight instead of a replica (which is then
  // no parameter of the layer). Other layers: nothing.
  virtual void ShareTokenTable(const torch::Tensor& table) { (void)table; }
  // Incremental forward for generation (no autograd; KvCache above): `x`
  // holds only the new positions pos .. pos+t-1 (tokens (b, t) int64 for the
  // embedding, (b, t, C) for a block or the head), `cache` the layer's keys
  // and values of positions 0 .. pos-1. Returns what forward returns for
  // those t positions of the whole sequence. Attention blocks and learned
  // positions override it; the default (a layer that looks at one position
  // at a time) is forward(x).
  virtual torch::Tensor ForwardCached(const torch::Tensor& x, int64_t pos, KvCache& cache) {
    (void)pos;
    (void)cache;
    return forward(x);
  }
  // Runs the layer tensor-parallel over tp.group from now on (its
  // parameters already sliced by GptStage::ShardTensorParallel).
  void SetTensorParallel(const TensorParallelContext& tp) { tp_ = tp; }

 protected:
  TensorParallelContext tp_;  // no group: the single-device layer
};

// Token embedding wte[tokens] without positions (Llama): wte (V, C), tokens
// (b, T) int64 -> (b, T, C). With a sink its weight gradient (the
// scatter-add) is deferred on I exactly like GPT's embedding (a kEmbedding
// DeferredGemm with an undefined bias); without one, plain autograd.
torch::Tensor TokenEmbedding(const torch::Tensor& wte, const torch::Tensor& tokens, DeferredGradSink* sink);

// The last entry of every family's layer list: the family's final norm
// (FinalNorm: GPT-2's ln_f LayerNorm, Llama's norm RMSNorm), then the LM
// head, lm_head (V, C) without bias: untied, a tied model's replica of the
// token table, or (ShareTokenTable) the embedding's table itself.
// Tensor-parallel (vocab-parallel head): the input enters the TP region (f,
// or the sequence all-gather with SP) and the logits are this rank's
// V_pad / t vocabulary columns.
class LmHeadLayer : public GptLayerImpl {
 public:
  // x (b, T, C) -> logits (b, T, V); tensor-parallel: x (b, T[/t], C) ->
  // (b, T, V_pad/t).
  torch::Tensor forward(const torch::Tensor& x) override;
  // x (b, t, C) -> logits (b, t, V), one row through a matrix-vector product.
  torch::Tensor ForwardCached(const torch::Tensor& x, int64_t pos, KvCache& cache) override;
  void ShareTokenTable(const torch::Tensor& table) override;

  SplitLinear lm_head{nullptr};

 protected:
  // Registers and initialises lm_head (N(0, 0.02) from ParamSeed(seed,
  // index, 0); a tied model's replica from the token table's values), then
  // converts the layer to dtype. Derived constructors call it after
  // registering their norm, so the parameter order is norm, then lm_head.
  void AddLmHead(const ModelConfig& c, int index, const ParamInit& init, torch::Dtype dtype);
  // The family's final norm: x (..., C) -> (..., C).
  virtual torch::Tensor FinalNorm(const torch::Tensor& x) = 0;

 private:
  torch::Tensor shared_;  // tied and shared: the embedding's token table (V, C)
};

// Deterministic initial values shared by the model files: a tensor of
// `sizes` filled with N(0, stddev) from std::mt19937_64 seeded by `seed`
// (portable across LibTorch versions), converted to `dtype`.
torch::Tensor NormalInit(std::vector<int64_t> sizes, double stddev, uint64_t seed, torch::Dtype dtype);
// Seed of parameter `slot` of layer `layer`: distinct per (seed, layer, slot).
uint64_t ParamSeed(uint64_t seed, int layer, int slot);
// Parameter `slot` of layer `layer` as `init` asks: NormalInit(sizes,
// stddev, ParamSeed(init.seed, layer, slot), dtype), or zeros of `sizes`
// when init.random is false.
torch::Tensor InitialValue(const ParamInit& init, std::vector<int64_t> sizes, double stddev, int layer, int slot,
                           torch::Dtype dtype);
// lin.weight <- InitialValue(init, stddev, layer, slot); lin.bias <- 0.
void InitLinear(SplitLinear& lin, double stddev, const ParamInit& init, int layer, int slot, torch::Dtype dtype);
// A tied model's LM-head replica (V, C) <- the token table's initial values
// (N(0, 0.02), the embedding's seed): the copies start identical.
void InitTiedReplica(SplitLinear& lm_head, const ModelConfig& model, const ParamInit& init, torch::Dtype dtype);

// Builds layer `index` of a model of one family, with deterministic initial
// values that depend only on (init.seed, index): the same layer is
// bit-identical whichever stage or process builds it (zeros instead with
// ParamInit::Overwritten()). dtype: torch::kFloat or torch::kDouble.
// REQUIRES: 0 <= index < LayerCount(model), and the model passes
// models/torch/executor_model.h CheckExecutorModel.
using LayerBuilder = std::shared_ptr<GptLayerImpl> (*)(const ModelConfig& model, int index, const ParamInit& init,
                                                       torch::Dtype dtype);

// The LibTorch side of the family registry (models/spec/model_family.h):
// one row per family, in the spec registry's order (models/torch/families.cc).
struct FamilyLayers {
  ModelFamily family;
  LayerBuilder build;
};
const std::vector<FamilyLayers>& FamilyLayerBuilders();

// GPT-2's layers (gpt.cc). Init: N(0, 0.02) weights, residual projections
// N(0, 0.02/sqrt(2L)), zero biases, LayerNorm (1, 0), positions N(0, 0.01).
std::shared_ptr<GptLayerImpl> MakeGpt2Layer(const ModelConfig& model, int index, const ParamInit& init,
                                            torch::Dtype dtype);

// Layer `index` of `model` by its family's builder (FamilyLayerBuilders).
// REQUIRES: as LayerBuilder.
std::shared_ptr<GptLayerImpl> MakeGptLayer(const ModelConfig& model, int index, const ParamInit& init,
                                           torch::Dtype dtype);

// A pipeline stage: layers [begin, end) in order, of any family (the
// engine, the backend, the reference and the sampler use this one stage
// type for every family).
//
// Tied LM head (model.tied): a stage holding the head keeps its own replica
// of the token table, initialised to the same values (the pipeline's way:
// the engine sums the two gradients before each optimizer step). With
// `share_tied` and a stage holding both the embedding and the head, the head
// instead uses the embedding's tensor itself (one parameter, autograd sums
// both uses): the single-process reference.
class GptStageImpl : public torch::nn::Module {
 public:
  GptStageImpl(const ModelConfig& model, int begin, int end, const ParamInit& init, torch::Dtype dtype,
               bool share_tied = false);
  // x: tokens (b, T) int64 if begin == 0, else (b, T, C); returns (b, T, C),
  // or logits (b, T, V) if the stage holds the head.
  torch::Tensor forward(torch::Tensor x);
  void SetSink(DeferredGradSink* sink);
  // Incremental forward for generation (GptLayerImpl::ForwardCached), under
  // NoGradGuard: tokens (b, t) int64 at positions pos .. pos+t-1 (REQUIRES:
  // begin == 0) -> the logits of the last of them, (b, 1, V), when the stage
  // holds the head (only that position reaches the head), else (b, t, C).
  // `caches`: one per layer of the stage, sized on first use with
  // `capacity` positions each (REQUIRES: pos + t <= capacity).
  torch::Tensor ForwardCached(const torch::Tensor& tokens, int64_t pos, std::vector<KvCache>& caches, int64_t capacity);
  // ("block.3.attn_qkv.weight", tensor) for every parameter, layer order.
  std::vector<std::pair<std::string, torch::Tensor>> NamedParameters() const;
  // Tensor parallelism over tp.group (t = its size, r = its rank): replaces
  // every parameter split by models/spec/tensor_parallel.h's layout by rank
  // r's slice of the value it holds (SliceForTpRank; the full initial value
  // the single-device stage builds, so every shard is the slice of the
  // single-process model), and runs the layers Megatron's way from then on:
  // column-parallel QKV / fc1 / gate+up, row-parallel projections, a
  // vocab-parallel embedding and LM head, sequence-parallel when
  // tp.sequence_parallel (inputs and outputs between stages are then
  // (b, T/t, C) sequence shards). Call once, right after construction, not
  // with share_tied. Errors: InvalidArgument naming
  // --tensor-model-parallel-size when t does not divide the heads, kv heads
  // or MLP width (or, with SP, the sequence length at run time).
  Status ShardTensorParallel(const TensorParallelContext& tp);
  const TensorParallelContext& tensor_parallel() const { return tp_; }
  // The loss of the head's output against targets (b, T) int64: the mean
  // token cross-entropy (LanguageModelLoss), vocab-parallel when the stage
  // runs tensor-parallel (VocabParallelCrossEntropy). ()
  torch::Tensor Loss(const torch::Tensor& logits, const torch::Tensor& targets) const;

  // Names of the stage's layers [begin, end) ("embedding", "block.3", "head").
  const std::vector<std::string>& layer_names() const { return names_; }
  int begin() const { return begin_; }
  int end() const { return end_; }
  bool has_head() const { return end_ == LayerCount(config_); }

 private:
  ModelConfig config_;
  int begin_ = 0, end_ = 0;
  std::vector<std::string> names_;                     // layer names [begin, end)
  std::vector<std::shared_ptr<GptLayerImpl>> layers_;  // registered as "layer<i>"
  TensorParallelContext tp_;
};
TORCH_MODULE(GptStage);

// Mean token cross-entropy of logits (b, T, V) against targets (b, T) int64,
// a scalar.
torch::Tensor LanguageModelLoss(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace pw::models
