#include "planner/partition.h"

#include <cmath>
#include <limits>

namespace pw {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kBottleneckSlack = 1e-9;  // relative: splits within this of B* count as optimal
constexpr double kTieEps = 1e-12;          // relative: sums of squares this close are equal

bool IsDecoderLayer(const LayerCost& c) { return c.kind == "block" || c.kind == "layer"; }

}  // namespace

std::vector<double> LayerSeconds(const LayerCostTable& table) {
  std::vector<double> t;
  t.reserve(table.layers.size());
  for (const LayerCost& c : table.layers) t.push_back(c.f + c.i + c.w);
  return t;
}

StatusOr<StageOverrides> ResolveStageOverrides(const LayerCostTable& table, int S, std::optional<int> first,
                                               std::optional<int> last) {
  StageOverrides o;
  if (!first && !last) return o;
  if (first && *first < 1)
    return Status::InvalidArgument("--first-stage-num-layers must be >= 1, got " + std::to_string(*first));
  if (last && *last < 1)
    return Status::InvalidArgument("--last-stage-num-layers must be >= 1, got " + std::to_string(*last));
  if (S < 2)
    return Status::InvalidArgument(std::string(first ? "--first-stage-num-layers" : "--last-stage-num-layers") +
                                   " needs at least 2 stages (P * v), got " + std::to_string(S));
  std::vector<int> decoder;  // indices of decoder layers
  for (size_t l = 0; l < table.layers.size(); ++l)
    if (IsDecoderLayer(table.layers[l])) decoder.push_back(static_cast<int>(l));
  const int N = static_cast<int>(decoder.size());
  const int L = static_cast<int>(table.layers.size());
  auto fail = [&](const std::string& why) {
    std::string flags;
    if (first) flags += "--first-stage-num-layers " + std::to_string(*first);
    if (last) flags += std::string(flags.empty() ? "" : " and ") + "--last-stage-num-layers " + std::to_string(*last);
    return Status::InvalidArgument(flags + " do not add up: " + why);
  };
  const int used = (first ? *first : 0) + (last ? *last : 0);
  if (used > N)
    return fail("they ask for " + std::to_string(used) + " decoder layers but the model has " + std::to_string(N));
  if (first && last && S == 2 && used != N)
    return fail("with 2 stages they must sum to the " + std::to_string(N) + " decoder layers, got " +
                std::to_string(used));
  if (first) o.first_stage_end = decoder[*first - 1] + 1;
  if (last) o.last_stage_begin = decoder[N - *last];
  // Stages strictly between the fixed ones need one layer each.
  const int lo = o.first_stage_end.value_or(0);
  const int hi = o.last_stage_begin.value_or(L);
  const int middle_stages = S - (first ? 1 : 0) - (last ? 1 : 0);
  if (hi - lo < middle_stages)
    return fail("they leave " + std::to_string(std::max(0, hi - lo)) + " layers for the other " +
                std::to_string(middle_stages) + " stages (S = P * v = " + std::to_string(S) +
                "); every stage needs at least one layer");
  return o;
}

StatusOr<Partition> PartitionLayers(const std::vector<double>& t, int S, const StageFits& fits,
                                    const StageOverrides& ov) {
  const int L = static_cast<int>(t.size());
  if (S < 1) return Status::InvalidArgument("number of stages must be >= 1, got " + std::to_string(S));
  if (S > L)
    return Status::InvalidArgument("cannot split " + std::to_string(L) + " layers into " + std::to_string(S) +
                                   " non-empty stages (S = P * v must be <= the number of layers)");
  std::vector<double> prefix(L + 1, 0.0);
  for (int l = 0; l < L; ++l) prefix[l + 1] = prefix[l] + t[l];
  auto allowed = [&](int k, int i, int j) {
    if (k == 0 && ov.first_stage_end && j != *ov.first_stage_end) return false;
    if (k == S - 1 && ov.last_stage_begin && i != *ov.last_stage_begin) return false;
    if (k > 0 && ov.first_stage_end && i < *ov.first_stage_end) return false;
    if (k < S - 1 && ov.last_stage_begin && j > *ov.last_stage_begin) return false;
    return !fits || fits(k, i, j);
  };
  // Phase 1: best[k][j] = minimal bottleneck of stages 0..k covering [0, j).
  std::vector<std::vector<double>> best(S, std::vector<double>(L + 1, kInf));
  for (int k = 0; k < S; ++k) {
    const int jmin = k + 1, jmax = L - (S - 1 - k);
    for (int j = jmin; j <= jmax; ++j) {
      if (k == S - 1 && j != L) continue;
      double b = kInf;
      for (int i = j - 1; i >= k; --i) {  // stage k = [i, j); time grows as i falls
        const double stage = prefix[j] - prefix[i];
        if (stage >= b) break;
        const double before = k == 0 ? (i == 0 ? 0.0 : kInf) : best[k - 1][i];
        if (before == kInf || !allowed(k, i, j)) continue;
        b = std::min(b, std::max(before, stage));
      }
      best[k][j] = b;
    }
  }
  const double bstar = best[S - 1][L];
  if (bstar == kInf) return Status::Infeasible("no split of the layers into stages passes the constraints");
  // Phase 2: among splits with every stage <= B* (1 + slack), minimise sum t^2.
  const double cap = bstar * (1.0 + kBottleneckSlack) + 1e-300;
  std::vector<std::vector<double>> sq(S, std::vector<double>(L + 1, kInf));
  std::vector<std::vector<int>> arg(S, std::vector<int>(L + 1, -1));
  for (int k = 0; k < S; ++k) {
    const int jmin = k + 1, jmax = L - (S - 1 - k);
    for (int j = jmin; j <= jmax; ++j) {
      if (k == S - 1 && j != L) continue;
      double b = kInf;
      int bi = -1;
      for (int i = k; i <= j - 1; ++i) {  // ascending: on a tie the later split (larger i) wins
        const double stage = prefix[j] - prefix[i];
        if (stage > cap) continue;
        const double before = k == 0 ? (i == 0 ? 0.0 : kInf) : sq[k - 1][i];
        if (before == kInf || !allowed(k, i, j)) continue;
        const double v = before + stage * stage;
        if (bi < 0 || v <= b + kTieEps * std::max(std::abs(b), std::abs(v))) {
          if (bi < 0 || v < b - kTieEps * std::max(std::abs(b), std::abs(v))) b = v;
          bi = i;
        }
      }
      sq[k][j] = b;
      arg[k][j] = bi;
    }
  }
  Partition p;
  p.boundaries.assign(S + 1, 0);
  p.boundaries[S] = L;
  for (int k = S - 1, j = L; k >= 0; --k) {
    const int i = arg[k][j];
    if (i < 0) return Status::Internal("partition: phase 2 lost the optimal split (stage " + std::to_string(k) + ")");
    p.boundaries[k] = i;
    j = i;
  }
  for (int k = 0; k < S; ++k) {
    p.stage_seconds.push_back(prefix[p.boundaries[k + 1]] - prefix[p.boundaries[k]]);
    p.bottleneck_s = std::max(p.bottleneck_s, p.stage_seconds.back());
  }
  return p;
}

std::string FormatBoundaries(const Boundaries& b) {
  std::string s;
  for (size_t k = 0; k + 1 < b.size(); ++k)
    s += (k ? " [" : "[") + std::to_string(b[k]) + "," + std::to_string(b[k + 1]) + ")";
  return s;
}

std::string FormatStageSizes(const Boundaries& b) {
  std::string s;
  for (size_t k = 0; k + 1 < b.size(); ++k) s += (k ? "," : "") + std::to_string(b[k + 1] - b[k]);
  return s;
}

}  // namespace pw
