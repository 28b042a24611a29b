#include "executor/runtime/straggler.h"

#include <algorithm>
#include <cstdio>

#include "schedules/simulate.h"

namespace pw::exec {

std::string DescribeStraggler(const StragglerReport& r, const std::string& host, double threshold) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "rank %d%s%s: compute %.4g s per step vs %.4g s planned, x%.2f its peers' (threshold %.2g), %.0f %% of "
                "the step, in each of steps %d-%d",
                r.rank, host.empty() ? "" : " on ", host.c_str(), r.compute_s, r.planned_s, r.slowdown, threshold,
                100.0 * r.share, r.first_step, r.last_step);
  return buf;
}

StatusOr<std::vector<double>> PlannedComputeSeconds(const Plan& plan) {
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(PlanProgram(plan), PlanCosts(plan)));
  std::vector<double> out;
  for (int p = 0; p < plan.pp_size; ++p)
    for (int d = 0; d < plan.dp_size; ++d)
      out.push_back(p < static_cast<int>(sim.per_rank.size()) ? sim.per_rank[p].busy_s : 0.0);
  return out;
}

StragglerDetector::StragglerDetector(std::vector<double> planned_s, StragglerOptions options)
    : planned_(std::move(planned_s)),
      options_(options),
      slow_(planned_.size()),
      ratio_sum_(planned_.size(), 0.0),
      reported_(planned_.size(), false) {}

std::optional<StragglerReport> StragglerDetector::Add(int step, const std::vector<double>& compute_s, double step_s) {
  const size_t n = planned_.size();
  if (compute_s.size() != n) return std::nullopt;
  if (!warm_) {  // the launch's first step: allocations, first touches
    warm_ = true;
    return std::nullopt;
  }
  std::vector<double> ratio(n, 0.0);
  for (size_t g = 0; g < n; ++g) ratio[g] = planned_[g] > 0 ? compute_s[g] / planned_[g] : 0.0;
  for (size_t g = 0; g < n; ++g) ratio_sum_[g] += ratio[g];
  ++counted_;
  if (options_.threshold <= 0 || n < 2) return std::nullopt;
  std::optional<StragglerReport> result;
  for (size_t g = 0; g < n; ++g) {
    std::vector<double> peers;
    for (size_t k = 0; k < n; ++k)
      if (k != g && planned_[k] > 0) peers.push_back(ratio[k]);
    if (peers.empty() || planned_[g] <= 0) continue;
    std::sort(peers.begin(), peers.end());
    const size_t h = peers.size() / 2;
    const double median = peers.size() % 2 == 1 ? peers[h] : 0.5 * (peers[h - 1] + peers[h]);
    const double slowdown = median > 0 ? ratio[g] / median : 0.0;
    if (median <= 0 || slowdown <= options_.threshold) {
      slow_[g].clear();
      continue;
    }
    slow_[g].push_back(Seen{step, compute_s[g], slowdown, step_s > 0 ? compute_s[g] / step_s : 0.0});
    if (static_cast<int>(slow_[g].size()) > options_.window) slow_[g].erase(slow_[g].begin());
    if (static_cast<int>(slow_[g].size()) < options_.window || reported_[g] || result) continue;
    StragglerReport r;
    r.rank = static_cast<int>(g);
    r.first_step = slow_[g].front().step + 1;
    r.last_step = slow_[g].back().step + 1;
    r.planned_s = planned_[g];
    for (const Seen& s : slow_[g]) {
      r.compute_s += s.compute_s / options_.window;
      r.slowdown += s.slowdown / options_.window;
      r.share += s.share / options_.window;
    }
    reported_[g] = true;
    found_.push_back(r);
    result = r;
  }
  return result;
}

std::vector<double> StragglerDetector::MeanRatios() const {
  std::vector<double> out(ratio_sum_.size(), 0.0);
  if (counted_ == 0) return out;
  for (size_t g = 0; g < out.size(); ++g) out[g] = ratio_sum_[g] / counted_;
  return out;
}

}  // namespace pw::exec
