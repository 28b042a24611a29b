#include "models/torch/tensor_parallel.h"

#include <string>

namespace pw::models {

torch::Tensor SliceForTpRank(const torch::Tensor& full, const TensorParallelLayout& l, int t, int r) {
  if (!l.split || t == 1) return full.clone();
  TORCH_CHECK(r >= 0 && r < t, "tensor-parallel rank ", r, " outside [0, ", t, ")");
  StatusOr<std::vector<int64_t>> shape = TensorParallelShardShape(full.sizes().vec(), l, t);
  TORCH_CHECK(shape.ok(), shape.status().ToString());
  if (l.vocab > 0) {
    const VocabRange range = VocabShardRange(l.vocab, t, r);  // rows of the padded table
    torch::Tensor shard = torch::zeros(*shape, full.options());
    const int64_t real = std::max<int64_t>(0, std::min(range.end, l.vocab) - range.begin);
    if (real > 0) shard.narrow(0, 0, real).copy_(full.narrow(0, range.begin, real));
    return shard;
  }
  const int64_t block = full.size(l.dim) / l.groups, part = block / t;
  std::vector<torch::Tensor> parts;
  for (int g = 0; g < l.groups; ++g) parts.push_back(full.narrow(l.dim, g * block + r * part, part));
  return torch::cat(parts, l.dim).contiguous();
}

torch::Tensor GatherTpShards(const std::vector<torch::Tensor>& shards, const TensorParallelLayout& l) {
  TORCH_CHECK(!shards.empty(), "GatherTpShards: no shards");
  for (const torch::Tensor& s : shards)
    TORCH_CHECK(s.sizes() == shards[0].sizes(), "GatherTpShards: shards of different shapes ", s.sizes(), " and ",
                shards[0].sizes());
  const int t = static_cast<int>(shards.size());
  if (!l.split || t == 1) return shards[0].clone();
  if (l.vocab > 0) return torch::cat(shards, 0).narrow(0, 0, l.vocab).contiguous();
  // Block g of the full tensor is the concatenation over ranks of each
  // shard's block g.
  const int64_t part = shards[0].size(l.dim) / l.groups;
  std::vector<torch::Tensor> pieces;
  for (int g = 0; g < l.groups; ++g)
    for (const torch::Tensor& s : shards) pieces.push_back(s.narrow(l.dim, g * part, part));
  return torch::cat(pieces, l.dim).contiguous();
}

}  // namespace pw::models
