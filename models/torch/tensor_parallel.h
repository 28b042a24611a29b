// LibTorch side of tensor parallelism (Megatron-LM: Shoeybi et al. 2019,
// arXiv:1909.08053 §3; sequence parallelism: Korthikanti et al. 2022,
// arXiv:2205.05198 §4): slicing full tensors into the shards of
// models/spec/tensor_parallel.h's layout and gathering them back.
// Dimension letters: t = tensor-parallel size, r = tensor-parallel rank,
// V = vocabulary, V_pad = PaddedVocab(V, t).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "models/spec/tensor_parallel.h"

namespace pw::models {

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

}  // namespace pw::models
