#include "planner/memory_profile.h"

#include <algorithm>

#include "schedules/simulate.h"

namespace pw {

MemoryProfile::MemoryProfile(const Program& program) {
  const int P = program.pp_size;
  walk_.resize(P);
  stages_.resize(P);
  stage_pareto_.resize(program.num_stages);
  for (int r = 0; r < P; ++r) {
    stages_[r] = program.StagesOfRank(r);
    const size_t v = stages_[r].size();
    std::vector<Point> held(v, Point{0, 0});
    auto local = [&](int stage) {
      return static_cast<size_t>(std::lower_bound(stages_[r].begin(), stages_[r].end(), stage) - stages_[r].begin());
    };
    for (const Action& whole : program.ranks[r]) {
      if (!IsCompute(whole.type)) continue;
      // An OVERLAP_F_B walks as its F half, then its B half.
      for (int h = 0; h < (IsOverlap(whole.type) ? 2 : 1); ++h) {
        const Action a = h == 0 ? ForwardHalf(whole) : BackwardHalf(whole);
        // The walk in counts: the rule's change for one byte of activation
        // (x) and one byte of weight stash (y).
        Point& p = held[local(a.stage)];
        p.x += static_cast<int>(MemoryDelta(a.type, StageMemory{0, 1, 0, 0, 0}));
        p.y += static_cast<int>(MemoryDelta(a.type, StageMemory{0, 0, 1, 0, 0}));
        if (a.type == ActionType::kF || a.type == ActionType::kI) walk_[r].push_back(held);  // only rises matter
      }
    }
    for (size_t k = 0; k < v; ++k) {
      std::vector<Point> pts;
      for (const auto& w : walk_[r]) pts.push_back(w[k]);
      std::sort(pts.begin(), pts.end(), [](Point a, Point b) { return a.x != b.x ? a.x > b.x : a.y > b.y; });
      int best_y = -1;
      for (const Point& p : pts)  // descending x: keep points whose y beats every larger x
        if (p.y > best_y) {
          stage_pareto_[stages_[r][k]].push_back(p);
          best_y = p.y;
        }
    }
  }
}

int64_t MemoryProfile::RankDynamicPeak(int rank, const std::vector<StageMemory>& memory) const {
  int64_t peak = 0;
  for (const auto& point : walk_[rank]) {
    int64_t m = 0;
    for (size_t k = 0; k < point.size(); ++k) {
      const StageMemory& s = memory[stages_[rank][k]];
      m += s.activation * point[k].x + s.wstash * point[k].y;
    }
    peak = std::max(peak, m);
  }
  return peak;
}

int64_t MemoryProfile::StagePeak(int stage, int64_t activation, int64_t wstash) const {
  int64_t peak = 0;
  for (const Point& p : stage_pareto_[stage]) peak = std::max(peak, activation * p.x + wstash * p.y);
  return peak;
}

}  // namespace pw
