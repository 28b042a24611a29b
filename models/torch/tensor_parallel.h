// LibTorch side of tensor parallelism (Megatron-LM: Shoeybi et al. 2019,
// arXiv:1909.08053 §3; sequence parallelism: Korthikanti et al. 2022,
// arXiv:2205.05198 §4): slicing full tensors into the shards of
// models/spec/tensor_parallel.h's layout and gathering them back; the group
// interface the layers' collectives run over; Megatron's conjugate
// operators f and g (and their sequence-parallel forms) as autograd
// functions; the vocab-parallel embedding lookup and cross-entropy. The
// layers themselves (gpt.cc, llama.cc) call these when their
// TensorParallelContext has a group (GptStage::ShardTensorParallel).
// Dimension letters: t = tensor-parallel size, r = tensor-parallel rank,
// V = vocabulary, V_pad = PaddedVocab(V, t), b = rows, T = sequence length,
// C = hidden.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "models/spec/tensor_parallel.h"

namespace pw::models {

class DeferredGradSink;  // gpt.h

// Rank `tp_rank`'s shard of `full` (the whole tensor a single process
// builds) under `layout` over `tp_size` ranks: along layout.dim, each of the
// layout.groups blocks cut into t equal parts, rank r taking part r of every
// block (concatenated in block order); vocab-parallel: `full` (V, ...)
// padded with zero rows to V_pad, rows [r V_pad / t, (r + 1) V_pad / t).
// Replicated (or t = 1): `full` itself. The result is a new contiguous
// tensor (never a view of `full`). Throws c10::Error when the shape does not
// fit the layout (TensorParallelShardShape's conditions).
torch::Tensor SliceForTpRank(const torch::Tensor& full, const TensorParallelLayout& layout, int tp_size, int tp_rank);

// The inverse: the full tensor from the t shards (index = tensor-parallel
// rank), each shaped as SliceForTpRank makes them; vocab-parallel: the
// padding rows dropped (V rows). Replicated: shards[0]. Throws c10::Error on
// an empty list or shards of different shapes.
torch::Tensor GatherTpShards(const std::vector<torch::Tensor>& shards, const TensorParallelLayout& layout);

// ---- The group and the conjugate operators ----

// The tensor-parallel group a layer's collectives run over: the t ranks
// that share its layers (the same pipeline and data-parallel rank). The
// executor implements it over its Communicator (executor/runtime/
// tensor_parallel.h); models/torch never sees MPI. Every call is blocking
// and collective: every rank of the group calls the same operations in the
// same order with tensors of the same shape. Tensors: float32 or float64,
// any device the implementation serves. Errors throw c10::Error naming the
// rank and the operation (the backend turns it into a Status).
class TensorParallelGroup {
 public:
  virtual ~TensorParallelGroup() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // x (any shape) -> the elementwise sum over the group's ranks, same shape.
  virtual torch::Tensor AllReduceSum(const torch::Tensor& x) = 0;
  // x (n, ...) -> (t n, ...): block r of the rows is rank r's x.
  virtual torch::Tensor AllGather(const torch::Tensor& x) = 0;
  // x (t n, ...) -> (n, ...): the sum over ranks of block r (this rank's r).
  virtual torch::Tensor ReduceScatter(const torch::Tensor& x) = 0;
};

// What a layer needs to run tensor-parallel: the group (null: t = 1, the
// single-device layer) and whether activations outside the tensor-parallel
// regions are sequence shards (Korthikanti et al. 2022 §4.2.2).
struct TensorParallelContext {
  std::shared_ptr<TensorParallelGroup> group;
  bool sequence_parallel = false;
  int size() const { return group ? group->size() : 1; }
  int rank() const { return group ? group->rank() : 0; }
};

// Megatron's f (Shoeybi et al. 2019 §3, Fig. 3), entering a tensor-parallel
// region before a column-parallel GEMM: forward identity, backward
// all-reduce of the gradient. With sequence parallelism (Korthikanti et al.
// 2022 §4.2.2, Fig. 6): forward all-gather along the sequence, backward
// reduce-scatter. x (b, T, C), or (b, T/t, C) with SP -> (b, T, C). No group:
// x itself.
torch::Tensor TpEnter(const torch::Tensor& x, const TensorParallelContext& tp);
// Megatron's g, leaving the region after a row-parallel GEMM: forward
// all-reduce of the partial sums, backward identity; with SP forward
// reduce-scatter along the sequence, backward all-gather.
// x (b, T, C) partial -> (b, T, C), or (b, T/t, C) with SP. No group: x.
torch::Tensor TpExit(const torch::Tensor& x, const TensorParallelContext& tp);
// The rows of the sequence this rank holds under SP: x (b, T, ...) ->
// (b, T/t, ...) block tp.rank() (a view); without SP or group: x.
torch::Tensor SequenceShard(const torch::Tensor& x, const TensorParallelContext& tp);

// Vocab-parallel token lookup (Megatron VocabParallelEmbedding): `table`
// (V_pad/t, C) holds rows [begin, begin + V_pad/t) of the padded table;
// ids outside them look up zeros, then TpExit sums (or reduce-scatters)
// over the group. tokens (b, T) int64 -> (b, T, C), or (b, T/t, C) with SP.
// The table's gradient is deferred through `sink` on I like the
// single-device embedding's (TokenEmbedding, gpt.h).
torch::Tensor VocabParallelEmbedding(const torch::Tensor& table, const torch::Tensor& tokens, DeferredGradSink* sink,
                                     const TensorParallelContext& tp);

// Mean token cross-entropy over vocab-parallel logits (Megatron
// _VocabParallelCrossEntropy): logits (b, T, V_pad/t), this rank's columns
// [r V_pad/t, (r+1) V_pad/t) of the padded vocabulary, targets (b, T) int64
// (< vocab). Columns >= vocab (padding) are left out, so the loss equals
// the unpadded model's. Row max: all-gather of the local maxima; sum of
// exponentials and the target logit: all-reduces. A custom autograd
// function: d logits = (softmax - onehot(target)) / (b T), padding 0. ()
torch::Tensor VocabParallelCrossEntropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t vocab,
                                        const TensorParallelContext& tp);

}  // namespace pw::models
