#include "viz/static_memory.h"

#include <algorithm>

#include "plan/plan.h"
#include "viz/timeline.h"

namespace pw::viz {

namespace {

struct LayerInfo {
  LayerKind kind;
  int64_t weight;  // parameters held
};

// Splits `total` over `weights` in proportion, exactly (largest remainder;
// ties to the earlier layer). All weights 0: everything to the first.
std::vector<int64_t> Apportion(int64_t total, const std::vector<int64_t>& weights) {
  std::vector<int64_t> out(weights.size(), 0);
  if (weights.empty()) return out;
  long double sum = 0;
  for (int64_t w : weights) sum += w;
  if (sum <= 0) {
    out[0] = total;
    return out;
  }
  int64_t given = 0;
  std::vector<std::pair<long double, size_t>> rem;
  for (size_t i = 0; i < weights.size(); ++i) {
    long double share = (long double)total * weights[i] / sum;
    out[i] = static_cast<int64_t>(share);
    given += out[i];
    rem.push_back({share - out[i], i});
  }
  std::stable_sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < total; k = (k + 1) % rem.size(), ++given) ++out[rem[k].second];
  return out;
}

}  // namespace

std::string PartName(const StaticPart& p) {
  switch (p.kind) {
    case LayerKind::kEmbedding:
      return "embedding";
    case LayerKind::kHead:
      return "head";
    default:
      return p.first_block == p.last_block ? StrFormat("block %d", p.first_block)
                                           : StrFormat("blocks %d-%d", p.first_block, p.last_block);
  }
}

StaticBreakdown StaticMemoryOf(const Plan& plan) {
  StaticBreakdown out;
  int64_t total = 0;
  for (const PlanStage& s : plan.stages) total += s.memory.static_bytes;
  if (total == 0 || plan.pp_size <= 0) return out;

  std::vector<LayerInfo> layers;
  if (plan.model) {
    for (const LayerSpec& l : BuildLayerList(*plan.model)) layers.push_back({l.kind, l.held_params});
  } else {
    for (const PlanLayer& l : plan.layers) layers.push_back({l.kind, l.params});
  }
  out.by_layer = !layers.empty() && plan.stages.back().layer_end == static_cast<int>(layers.size());
  const int64_t per_param = plan.training ? StaticBytesPerParam(plan.training->precision) : 0;
  out.exact = out.by_layer && plan.model && per_param > 0;
  if (out.by_layer && out.exact)
    for (const PlanStage& s : plan.stages) {
      int64_t sum = 0;
      for (int l = s.layer_begin; l < s.layer_end; ++l) sum += layers[l].weight * per_param;
      out.exact = out.exact && sum == s.memory.static_bytes;
    }

  out.ranks.resize(plan.pp_size);
  for (int r = 0; r < plan.pp_size; ++r) out.ranks[r].rank = r;
  for (const PlanStage& s : plan.stages) {
    StageStatic st{s.index, s.layer_begin, s.layer_end, s.memory.static_bytes, {}};
    RankStatic& rs = out.ranks[s.rank];
    rs.bytes += st.bytes;
    if (out.by_layer) {
      std::vector<int64_t> weights;
      for (int l = s.layer_begin; l < s.layer_end; ++l) weights.push_back(layers[l].weight);
      std::vector<int64_t> bytes = Apportion(st.bytes, weights);
      if (out.exact)
        for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = weights[i] * per_param;
      for (int l = s.layer_begin; l < s.layer_end; ++l) {
        const LayerKind kind = layers[l].kind;
        const int64_t b = bytes[l - s.layer_begin];
        const int block = l - 1;  // layer list: 0 embedding, 1..L blocks
        if (!st.parts.empty() && kind == LayerKind::kBlock && st.parts.back().kind == LayerKind::kBlock) {
          st.parts.back().last_block = block;
          st.parts.back().bytes += b;
        } else {
          st.parts.push_back({kind, block, block, b});
        }
        if (kind == LayerKind::kEmbedding) rs.embedding_bytes += b;
        if (kind == LayerKind::kHead) rs.head_bytes += b;
        if (kind == LayerKind::kBlock) {
          rs.block_bytes += b;
          ++rs.num_blocks;
        }
      }
    }
    rs.stages.push_back(std::move(st));
  }
  for (RankStatic& rs : out.ranks)
    std::sort(rs.stages.begin(), rs.stages.end(),
              [](const StageStatic& a, const StageStatic& b) { return a.stage < b.stage; });
  if (!out.by_layer)
    out.method = "the plan has no layer list: static bytes per stage only";
  else if (out.exact)
    out.method = StrFormat("parameters held x %lld B per parameter (%s)", static_cast<long long>(per_param),
                           PrecisionName(plan.training->precision));
  else
    out.method = "each stage's static bytes apportioned over its layers by parameters held";
  return out;
}

}  // namespace pw::viz
