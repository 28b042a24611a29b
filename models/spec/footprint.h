// The model's layer list and each layer's footprint: parameters, FLOPs split
// into F / I / W, and bytes (activation, wstash, static, output). This is the
// one place in pipewright that knows a layer's bytes (docs/ARCHITECTURE.md,
// "One of each"): the planner's cost model and the executor's preallocation
// both call it.
//
// Layer list (the contract with the executor, docs/PLAN_FORMAT.md `stages[].layers`
// are half-open ranges into it):
//   index 0        "embedding"  token embedding (+ learned positions, GPT-2)
//   index 1..L     "block.0" .. "block.{L-1}"  decoder blocks
//   index L+1      "head"       final norm + LM head + cross-entropy loss
//
// Notation (per file): b = micro-batch size, s = sequence length, h = hidden,
// a = heads, k = kv heads, d = head dim, f = MLP width, V = vocabulary,
// e = bytes per activation element (2 for bf16/fp16, 4 for fp32).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/model_config.h"

namespace pw {

// Activation recomputation (Korthikanti et al. 2022, arXiv:2205.05198 §4-5;
// Megatron --recompute-granularity).
enum class Recompute {
  kNone,       // keep every activation of the block
  kSelective,  // drop the attention core (softmax, dropout, scores x V) and recompute it in backward
  kFull,       // keep only the block input; recompute the block forward in backward
};
// "none", "selective", "full".
const char* RecomputeName(Recompute r);
// Parses "none" | "selective" | "full". InvalidArgument names
// --recompute-granularity.
StatusOr<Recompute> ParseRecompute(const std::string& text);

// Numeric precision of training.
enum class Precision {
  // bf16 params and activations, fp32 main grads, fp32 master params, fp32
  // AdamW m and v: 2 + 4 + 4 + 4 + 4 = 18 bytes per parameter (Megatron
  // `compute_weight_and_optimizer_memory`, no distributed optimizer).
  kMixedBf16,
  // fp32 params, grads, AdamW m and v: 16 bytes per parameter; fp32
  // activations (the plain LibTorch executor).
  kFp32,
  // fp64 params, grads, AdamW m and v: 32 bytes per parameter; fp64
  // activations (the executor's equivalence checks, `run` of an fp64 plan).
  kFp64,
};
// "bf16", "fp32" or "fp64".
const char* PrecisionName(Precision p);
// Parses "bf16" | "fp32" | "fp64". InvalidArgument names --dtype.
StatusOr<Precision> ParsePrecision(const std::string& text);
// Bytes held per parameter for the whole step (params + grads + AdamW state).
int64_t StaticBytesPerParam(Precision p);
// Bytes of one activation element (e).
int64_t ActivationElementBytes(Precision p);

// What a step computes per microbatch.
struct TrainingShape {
  int64_t micro_batch_size = 1;  // b, sequences per microbatch
  int64_t seq_length = 1024;     // s, tokens per sequence
  Recompute recompute = Recompute::kNone;
  Precision precision = Precision::kMixedBf16;
  // Tensor parallelism (Megatron-LM: Shoeybi et al. 2019, arXiv:1909.08053
  // §3; --tensor-model-parallel-size): t ranks share every layer. Each
  // footprint is then per TP rank: GEMM weights and FLOPs divided by t
  // (attention heads and kv heads split, norms replicated), activations per
  // Korthikanti et al. 2022 §4.2, and the layer's TP collectives listed.
  int tp_size = 1;
  // --sequence-parallel (Korthikanti et al. 2022 §4.2.2): the norm and
  // dropout regions run on s/t sequence shards; all-gather + reduce-scatter
  // replace each all-reduce. Only with tp_size > 1.
  bool sequence_parallel = false;
};

// Megatron's padded vocabulary for tensor parallelism: V rounded up to a
// multiple of 128 t (Megatron-LM `_vocab_size_with_padding`,
// --make-vocab-size-divisible-by 128, times t) so that each TP rank holds
// an equal slice of the embedding and the LM head. pipewright pads only
// when t > 1 (a t = 1 plan keeps the unpadded V, as before tensor
// parallelism; the difference is < 128 rows). Published parameter counts
// (LayerSpec::params) stay unpadded.
int64_t PaddedVocab(int64_t vocab, int tp_size);

// Checks a tensor-parallel size against `model` before any costing.
// InvalidArgument naming --tensor-model-parallel-size when t < 1 or t does
// not divide the heads a, the kv heads k or the MLP width f (Megatron's
// column/row-parallel split of each), and naming --sequence-parallel when it
// is asked with t = 1 or s is not a multiple of t (the sequence shards).
Status CheckTensorParallel(const ModelConfig& model, int tp_size, bool sequence_parallel, int64_t seq_length);

enum class LayerKind { kEmbedding, kBlock, kHead };
// "embedding", "block", "head".
const char* LayerKindName(LayerKind k);

struct LayerSpec {
  std::string name;  // "embedding", "block.7", "head"
  LayerKind kind = LayerKind::kBlock;
  // Parameters this layer owns; the sum over the list is the model's
  // published parameter count (tied LM head counted once, in the embedding).
  int64_t params = 0;
  // Parameters a stage holding this layer keeps in memory: `params`, plus a
  // replica of the V x h matrix for a tied head (as Megatron does: the last
  // stage holds its own copy and the two gradients are summed).
  int64_t held_params = 0;
};

// Returns the L + 2 layers of `model` in order (model_config.h LayerNames).
// Parameter counts (docs/ALGORITHMS.md §2): GPT-2 block 12h^2 + 13h (QKV 3h^2+3h,
// proj h^2+h, fc1 4h^2+4h, fc2 4h^2+h, two LayerNorms 4h) in its general form
// with f and GQA; Llama block h(h + 2kd) + (ad)h + 3hf + 2h, plus biases when
// attention_bias (q + 2k d + h) / qkv_bias (q + 2k d, qwen2) / mlp_bias. Embedding V h (+ s_max h positions). Head:
// final norm (2h LayerNorm / h RMSNorm) + V h when untied. A block adds its family's own parameters (model_family.h
// FamilyBlockTerms: Qwen3's q/k norms, 2d).
std::vector<LayerSpec> BuildLayerList(const ModelConfig& model);

// Sum of LayerSpec::params: the published total (GPT-2 small 124,439,808;
// Llama-2-7B 6,738,415,616).
int64_t TotalParameters(const ModelConfig& model);

// Parameters one TP rank of `layer` holds (LayerSpec::held_params split by
// Megatron's layout, Shoeybi et al. 2019 §3): block GEMM weights / t,
// column-parallel biases (QKV, fc1 / gate and up) / t, row-parallel biases
// (projection, fc2 / down) and norms whole; embedding and LM head PaddedVocab
// x h / t (vocab-parallel) plus whole position table and final norm. t = 1:
// held_params.
int64_t HeldParamsPerTensorRank(const ModelConfig& model, const LayerSpec& layer, int tp_size);

// One collective of a tensor-parallel group (its t ranks, a ring).
enum class CollectiveKind { kAllReduce, kReduceScatter, kAllGather };
// "all-reduce", "reduce-scatter", "all-gather".
const char* CollectiveKindName(CollectiveKind k);
struct Collective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int64_t bytes = 0;  // the whole (unsharded) tensor, bytes
};

// One layer, one microbatch.
struct LayerFootprint {
  // FLOPs (a GEMM m x k . k x n counts 2mnk). F = forward; I = input-gradient
  // backward, including any recomputed forward (it runs right before I);
  // W = weight-gradient backward. Source: the zero-bubble paper's
  // split (Qi et al. 2024 §2; docs/ALGORITHMS.md §2): F = 2 b s P_mm + 4 b s^2 (a d), I = 2 b s P_mm + 8 b s^2 (a d),
  // W = 2 b s P_mm, P_mm = weight-matrix parameters of the layer (Narayanan
  // et al. 2021 §5.1 counting; attention core not halved for causal masks).
  double flops_f = 0, flops_i = 0, flops_w = 0;
  // Bytes of HBM traffic of the embedding gather / scatter-add (no FLOPs of
  // note; 0 for blocks and head, whose time is FLOP-bound).
  double memory_traffic_f = 0, memory_traffic_w = 0;
  int64_t activation_bytes = 0;  // kept from end of F to end of I (Korthikanti et al. 2022 Tables 1-2)
  int64_t wstash_bytes = 0;      // kept from end of I to end of W: GEMM inputs + output grads (ZB paper Table 1: 32sbh)
  int64_t transient_bytes = 0;   // extra bytes live while this layer's I recomputes (selective/full)
  int64_t static_bytes = 0;      // held_params * StaticBytesPerParam
  int64_t output_bytes = 0;      // the forward output sent to the next stage (b s h e; head: the fp32 loss)
  int64_t input_grad_bytes = 0;  // the gradient of its input sent backward (b s h e; embedding: 0)
  // Tensor parallelism (t > 1): the collectives of the layer's F, I and W
  // (Megatron's f/g operators, Shoeybi et al. 2019 §3 Fig. 3; with sequence
  // parallelism Korthikanti et al. 2022 §4.2.2 Fig. 6). Empty for t = 1.
  std::vector<Collective> tp_comm_f, tp_comm_i, tp_comm_w;
};

// Footprint of `layer` of `model` under `shape`. Activation bytes, per block
// (element counts times e, dropout masks 1 byte, Korthikanti et al. 2022
// §4.1 counting; with e = 2, MHA, f = 4h and dropout it is exactly
// s b h (34 + 5 a s / h)):
//   two norm inputs 2 sbh e; QKV input sbh e; Q, K, V sb(a+2k)d e; softmax
//   output a s^2 b e (+ dropout mask a s^2 b + dropout output a s^2 b e);
//   projection input sb(ad) e (+ mask sbh); MLP: GELU fc1 input sbh e,
//   activation input and fc2 input 2 sbf e (+ mask sbh); SwiGLU input sbh e,
//   gate, SiLU, up and down inputs 4 sbf e (our counting, docs/ALGORITHMS.md §2).
//   Selective recompute drops the a s^2 b terms; full recompute keeps sbh e.
//   The executor's Llama blocks (models/torch/llama.h) keep exactly these:
//   RMSNorm is a custom function keeping its input (plus an sb reciprocal
//   RMS, not counted), grouped-query attention multiplies against the k
//   K/V heads without repeating them (so K and V count k d, not a d), and
//   RoPE keeps only its (s d) cos/sin tables. A family adds its own kept
//   elements per token (model_family.h FamilyBlockTerms; Qwen3's q/k norm
//   inputs, (a + k) d: sb(a + k)d e), which full recompute drops too.
// Embedding: int64 token ids 8 sb (+ dropout mask sbh) (Megatron
// `compute_activation_memory`, first-stage terms). Head: norm and LM-head
// inputs 2 sbh e + fp32 logits 4 sbV (Megatron: 4 sbh (1 + V/h)).
// Recompute applies to decoder blocks only (as Megatron).
// Tensor parallelism (shape.tp_size = t > 1), per TP rank: FLOPs of blocks
// and head / t (the head over PaddedVocab); static bytes of
// HeldParamsPerTensorRank; activations (Korthikanti et al. 2022 §4.2.2,
// Table 2: sbh (10 + 24/t + 5as/(ht)) for their GPT block): the terms
// inside the TP regions (Q, K, V, projection input, scores, MLP inner
// width) / t, the norm inputs, GEMM inputs and dropout masks outside them
// whole, or / t with sequence parallelism (sbh (34 + 5as/h) / t); full
// recompute keeps the block input (/ t with SP); the head's fp32 logits
// 4 sb V_pad / t. Messages to the next stage: sbh e, / t with SP.
// Collectives (bytes = sbh e): block F two all-reduces (SP: an all-gather
// before QKV and fc1, a reduce-scatter after the projection and fc2),
// block I the same again (the input-gradient of the column-parallel GEMMs),
// plus the forward's with full recompute; embedding F one all-reduce (SP:
// reduce-scatter), W with SP one all-gather of the output gradient; head F
// (SP: an all-gather of its input) plus the three all-reduces of the
// vocab-parallel cross-entropy (max, sum of exponentials, target logit,
// 4 sb bytes each: Megatron `_VocabParallelCrossEntropy`), head I one
// all-reduce (SP: reduce-scatter).
LayerFootprint ComputeFootprint(const ModelConfig& model, const LayerSpec& layer, const TrainingShape& shape);

}  // namespace pw
