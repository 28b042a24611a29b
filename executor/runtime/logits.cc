#include "executor/runtime/logits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "base/format.h"

namespace pw::exec {

namespace {
constexpr double kRemoved = -std::numeric_limits<double>::infinity();
}  // namespace

Status ValidateSampling(const SamplingParams& p, int64_t vocab) {
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    return Status::InvalidArgument("--temperature " + FormatShort(p.temperature) +
                                   ": must be finite and >= 0 (0 = greedy)");
  if (p.top_k < 0 || p.top_k > vocab)
    return Status::InvalidArgument("--top-k " + std::to_string(p.top_k) +
                                   ": must be between 0 (off) and the model's vocabulary size " +
                                   std::to_string(vocab));
  if (!std::isfinite(p.top_p) || p.top_p < 0 || p.top_p > 1)
    return Status::InvalidArgument("--top-p " + FormatShort(p.top_p) + ": must be in [0, 1] (1 = off)");
  return Status::Ok();
}

void WarpLogits(const SamplingParams& p, std::vector<double>& logits) {
  const int64_t V = static_cast<int64_t>(logits.size());
  for (double& l : logits) l /= p.temperature;
  if (p.top_k > 0 && p.top_k < V) {
    // transformers TopKLogitsWarper: remove scores < the k-th largest.
    std::vector<double> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (p.top_k - 1), sorted.end(), std::greater<double>());
    const double kth = sorted[p.top_k - 1];
    for (double& l : logits)
      if (l < kth) l = kRemoved;
  }
  if (p.top_p < 1) {
    // transformers TopPLogitsWarper: ascending order, softmax, cumulative
    // sum; remove where the cumulative probability <= 1 - top_p, except the
    // last (the most likely) token. Equal logits: the lower id counts as
    // the more likely (last), as greedy's first largest (torch.sort leaves
    // the order of ties unspecified).
    std::vector<int64_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return logits[a] < logits[b] || (logits[a] == logits[b] && a > b); });
    const double max = logits[order[V - 1]];
    double sum = 0;
    for (double l : logits) sum += std::exp(l - max);
    std::vector<bool> remove(V, false);
    double cum = 0;
    for (int64_t i = 0; i < V; ++i) {
      cum += std::exp(logits[order[i]] - max) / sum;
      remove[order[i]] = cum <= 1 - p.top_p && i != V - 1;
    }
    for (int64_t v = 0; v < V; ++v)
      if (remove[v]) logits[v] = kRemoved;
  }
}

int64_t ChooseToken(const SamplingParams& p, std::vector<double> logits, std::mt19937_64& rng) {
  const int64_t V = static_cast<int64_t>(logits.size());
  if (p.temperature == 0) return std::max_element(logits.begin(), logits.end()) - logits.begin();
  WarpLogits(p, logits);
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double& l : logits) sum += (l = std::exp(l - max));  // unnormalised probabilities
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng) * sum;
  double acc = 0;
  for (int64_t v = 0; v < V; ++v) {
    acc += logits[v];
    if (u < acc) return v;
  }
  // Rounding left u at or above the total: the last token still in play.
  for (int64_t v = V - 1; v > 0; --v)
    if (logits[v] > 0) return v;
  return 0;
}

}  // namespace pw::exec
