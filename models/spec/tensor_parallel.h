// How the executor's parameters are laid out over the t ranks of a
// tensor-parallel group (Megatron-LM: Shoeybi et al. 2019, arXiv:1909.08053
// §3; vocab-parallel embedding and head as Megatron-LM's
// VocabParallelEmbedding / ColumnParallelLinear over the padded vocabulary).
// Torch-free: the checkpoint and Hugging Face code, the engine and the tests
// share this one table; models/torch/tensor_parallel.h slices and gathers
// tensors by it.
//
// Names are the stage's parameter names (models/torch GptStage
// NamedParameters): "embedding.wte", "embedding.wpe", "embedding.embed_tokens",
// "block.3.attn_qkv.weight", "block.0.down_proj.weight", "head.lm_head.weight",
// "head.ln_f.weight", ... Rules (t = tp_size):
//   column-parallel (split the output rows, dim 0): GPT-2 attn_qkv (3 fused
//     blocks q;k;v, each split by t, so rank r holds q_r;k_r;v_r) and mlp_fc;
//     Llama q_proj, k_proj, v_proj (heads and kv heads split), gate_proj,
//     up_proj; their biases likewise;
//   row-parallel (split the input columns, dim 1): GPT-2 attn_proj and
//     mlp_proj, Llama o_proj and down_proj; their biases replicated (added
//     once, after the reduction);
//   vocab-parallel (dim 0 of a (V, C) table over PaddedVocab(V, t) rows, rank
//     r rows [r V_pad / t, (r + 1) V_pad / t)): embedding.wte,
//     embedding.embed_tokens, head.lm_head.weight. Rows >= V (the padding)
//     exist only in the shards, are zero, and never appear in full tensors or
//     checkpoints;
//   replicated: norms (LayerNorm, RMSNorm, Qwen3's q_norm / k_norm), GPT-2's
//     position table wpe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/model_config.h"

namespace pw {

// One parameter's split over a tensor-parallel group.
struct TensorParallelLayout {
  bool split = false;  // false: every TP rank holds the whole tensor (replicated)
  int dim = 0;         // the split dimension (0 or 1); only when split
  // Fused blocks along `dim` (GPT-2's q;k;v: 3), each split by t
  // independently; 1 otherwise. The full size along dim is groups * n.
  int groups = 1;
  // Vocab-parallel: the full tensor has `vocab` rows along dim 0, the shards
  // together PaddedVocab(vocab, t) rows (0 = not vocab-parallel).
  int64_t vocab = 0;
  int64_t padded_vocab = 0;
};

// The layout of parameter `name` of `model` over `tp_size` ranks. tp_size 1:
// replicated for every name. Errors: NotFound naming the parameter when
// `name` is not one of the stage's parameter names for this family;
// InvalidArgument (CheckTensorParallel's, naming
// --tensor-model-parallel-size) when t does not divide the heads, kv heads
// or MLP width.
StatusOr<TensorParallelLayout> TensorParallelLayoutOf(const ModelConfig& model, const std::string& name, int tp_size);

// The shape rank `tp_rank` holds of a full tensor of `full_shape` laid out as
// `layout` over `tp_size` ranks (the same for every rank). Vocab-parallel:
// PaddedVocab(V, t) / t rows. InvalidArgument when the shape does not fit
// the layout (dim out of range, size along dim not divisible by
// groups * t, or not `vocab` rows).
StatusOr<std::vector<int64_t>> TensorParallelShardShape(const std::vector<int64_t>& full_shape,
                                                        const TensorParallelLayout& layout, int tp_size);

// Rows of the padded vocabulary rank `tp_rank` holds: [begin, end), with
// end - begin = PaddedVocab(V, t) / t; rows >= V are padding.
struct VocabRange {
  int64_t begin = 0, end = 0;
};
VocabRange VocabShardRange(int64_t vocab, int tp_size, int tp_rank);

}  // namespace pw
