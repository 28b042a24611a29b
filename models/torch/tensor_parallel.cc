#include "models/torch/tensor_parallel.h"

#include <algorithm>
#include <limits>
#include <string>

#include "models/torch/gpt.h"

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

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

TensorParallelGroup* GroupOf(AutogradContext* ctx) {
  return reinterpret_cast<TensorParallelGroup*>(static_cast<intptr_t>(ctx->saved_data["group"].toInt()));
}
void SaveGroup(AutogradContext* ctx, TensorParallelGroup* g) {
  ctx->saved_data["group"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(g));
}

// x (b, T/t, ...) -> (b, T, ...): the sequence shards of the group's ranks
// in rank order.
torch::Tensor GatherSequence(const torch::Tensor& x, TensorParallelGroup* g) {
  torch::Tensor s = x.transpose(0, 1).contiguous();  // (T/t, b, ...)
  torch::Tensor all = g->AllGather(s);               // (T, b, ...)
  return all.transpose(0, 1).contiguous();           // (b, T, ...)
}

// x (b, T, ...) partial sums -> (b, T/t, ...): this rank's sequence block of
// the sum over the group.
torch::Tensor ReduceScatterSequence(const torch::Tensor& x, TensorParallelGroup* g) {
  TORCH_CHECK(x.size(1) % g->size() == 0, "sequence parallel: sequence length ", x.size(1),
              " is not a multiple of the tensor-parallel size ", g->size());
  torch::Tensor s = x.transpose(0, 1).contiguous();  // (T, b, ...)
  torch::Tensor mine = g->ReduceScatter(s);          // (T/t, b, ...)
  return mine.transpose(0, 1).contiguous();          // (b, T/t, ...)
}

// f: forward identity (or SP all-gather), backward all-reduce (or SP
// reduce-scatter). x (b, T[/t], C) -> (b, T, C).
struct TpEnterFunction : public torch::autograd::Function<TpEnterFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, TensorParallelGroup* g, bool sp) {
    SaveGroup(ctx, g);
    ctx->saved_data["sp"] = sp;
    if (sp) return GatherSequence(x, g);
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    TensorParallelGroup* g = GroupOf(ctx);
    const torch::Tensor& dy = grad_outputs[0];  // (b, T, C)
    torch::Tensor dx = ctx->saved_data["sp"].toBool() ? ReduceScatterSequence(dy, g) : g->AllReduceSum(dy);
    return {dx, torch::Tensor(), torch::Tensor()};
  }
};

// g: forward all-reduce (or SP reduce-scatter), backward identity (or SP
// all-gather). x (b, T, C) partial -> (b, T[/t], C).
struct TpExitFunction : public torch::autograd::Function<TpExitFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, TensorParallelGroup* g, bool sp) {
    SaveGroup(ctx, g);
    ctx->saved_data["sp"] = sp;
    if (sp) return ReduceScatterSequence(x, g);
    return g->AllReduceSum(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    TensorParallelGroup* g = GroupOf(ctx);
    const torch::Tensor& dy = grad_outputs[0];
    torch::Tensor dx = ctx->saved_data["sp"].toBool() ? GatherSequence(dy, g) : dy;
    return {dx, torch::Tensor(), torch::Tensor()};
  }
};

// Cross-entropy over vocab-parallel logits. forward: logits (N, Vl) of
// this rank's padded-vocabulary columns [begin, begin + Vl), targets (N)
// int64 -> mean loss (). `valid` = columns < vocab on this rank.
struct VocabParallelCrossEntropyFunction : public torch::autograd::Function<VocabParallelCrossEntropyFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& targets,
                               TensorParallelGroup* g, int64_t begin, int64_t valid) {
    const int64_t N = logits.size(0), Vl = logits.size(1);
    torch::Tensor lv = logits.narrow(1, 0, valid);  // (N, valid)
    const auto opts = logits.options();
    torch::Tensor local_max =
        valid > 0 ? std::get<0>(lv.max(1)) : torch::full({N}, -std::numeric_limits<double>::infinity(), opts);  // (N)
    torch::Tensor row_max = std::get<0>(g->AllGather(local_max.unsqueeze(0)).max(0));  // (N): over the group
    torch::Tensor e = (lv - row_max.unsqueeze(1)).exp();                               // (N, valid)
    torch::Tensor sum_exp = g->AllReduceSum(e.sum(1));                                 // (N)
    torch::Tensor local = targets - begin;                                             // (N)
    torch::Tensor mine = (local >= 0).logical_and(local < valid);                      // (N) bool
    torch::Tensor index = local.clamp(0, std::max<int64_t>(valid - 1, 0));             // (N)
    torch::Tensor target_logit = torch::zeros({N}, opts);                              // (N)
    if (valid > 0) target_logit = torch::where(mine, lv.gather(1, index.unsqueeze(1)).squeeze(1), target_logit);
    target_logit = g->AllReduceSum(target_logit);                          // (N): the target's logit
    torch::Tensor loss = (sum_exp.log() + row_max - target_logit).mean();  // ()
    torch::Tensor softmax = e / sum_exp.unsqueeze(1);                      // (N, valid)
    ctx->save_for_backward({softmax, mine, index});
    ctx->saved_data["Vl"] = Vl;
    return loss;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& softmax = saved[0];  // (N, valid)
    const torch::Tensor& mine = saved[1];     // (N)
    const torch::Tensor& index = saved[2];    // (N)
    const int64_t N = softmax.size(0), valid = softmax.size(1), Vl = ctx->saved_data["Vl"].toInt();
    torch::Tensor scale = grad_outputs[0] / static_cast<double>(N);  // ()
    torch::Tensor d = torch::zeros({N, Vl}, softmax.options());      // (N, Vl): padding columns 0
    if (valid > 0) {
      torch::Tensor dv = softmax.clone();
      dv.scatter_add_(1, index.unsqueeze(1), -mine.to(softmax.scalar_type()).unsqueeze(1));  // - onehot
      d.narrow(1, 0, valid).copy_(dv * scale);
    }
    return {d, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor TpEnter(const torch::Tensor& x, const TensorParallelContext& tp) {
  if (!tp.group) return x;
  return TpEnterFunction::apply(x, tp.group.get(), tp.sequence_parallel);
}

torch::Tensor TpExit(const torch::Tensor& x, const TensorParallelContext& tp) {
  if (!tp.group) return x;
  return TpExitFunction::apply(x, tp.group.get(), tp.sequence_parallel);
}

torch::Tensor SequenceShard(const torch::Tensor& x, const TensorParallelContext& tp) {
  if (!tp.group || !tp.sequence_parallel) return x;
  const int64_t n = x.size(1) / tp.size();
  return x.narrow(1, tp.rank() * n, n);
}

torch::Tensor VocabParallelEmbedding(const torch::Tensor& table, const torch::Tensor& tokens, DeferredGradSink* sink,
                                     const TensorParallelContext& tp) {
  const int64_t rows = table.size(0), begin = rows * tp.rank();
  torch::Tensor local = tokens - begin;                           // (b, T)
  torch::Tensor outside = (local < 0).logical_or(local >= rows);  // (b, T) bool
  local = local.masked_fill(outside, 0);                          // (b, T): row 0 stands in, zeroed below
  torch::Tensor keep = outside.logical_not().unsqueeze(-1).to(table.scalar_type());  // (b, T, 1)
  torch::Tensor partial = TokenEmbedding(table, local, sink) * keep;                 // (b, T, C)
  return TpExit(partial, tp);                                                        // (b, T[/t], C)
}

torch::Tensor VocabParallelCrossEntropy(const torch::Tensor& logits, const torch::Tensor& targets, int64_t vocab,
                                        const TensorParallelContext& tp) {
  const int64_t Vl = logits.size(-1), begin = Vl * tp.rank();
  const int64_t valid = std::max<int64_t>(0, std::min(Vl, vocab - begin));
  return VocabParallelCrossEntropyFunction::apply(logits.reshape({-1, Vl}), targets.reshape({-1}), tp.group.get(),
                                                  begin, valid);
}

}  // namespace pw::models
