// Exact per-rank memory of a schedule *order* for any split: the walk of
// docs/PLAN_FORMAT.md rule 7 depends only on each rank's list order, so the
// number of activations and weight stashes each local stage holds after
// every compute action can be counted once (from a unit-cost program) and the
// peak for any per-stage (activation, wstash) bytes evaluated from the counts.
// The partitioner uses this to test memory exactly for v = 1 (one stage per
// rank) and the planner to explain rejections.
#pragma once

#include <cstdint>
#include <vector>

#include "base/costs.h"
#include "schedules/program.h"

namespace pw {

class MemoryProfile {
 public:
  // Counts the walk of every rank of `program` (compute actions only).
  explicit MemoryProfile(const Program& program);

  // Peak over the walk of rank `rank` of sum over its stages s of
  // (activation_s * held activations of s + wstash_s * held stashes of s),
  // static bytes excluded. `memory` has one entry per global stage.
  int64_t RankDynamicPeak(int rank, const std::vector<StageMemory>& memory) const;

  // The peak over the walk of global stage `stage` alone: activation * x +
  // wstash * y, from its Pareto-maximal (x, y) count pairs. Exact for a rank
  // holding one stage (v = 1); for v > 1 a lower bound of its share.
  int64_t StagePeak(int stage, int64_t activation, int64_t wstash) const;

 private:
  struct Point {
    int x, y;  // activations held, stashes held
  };
  // [rank][walk point][local stage k] counts, flattened per point.
  std::vector<std::vector<std::vector<Point>>> walk_;
  std::vector<std::vector<int>> stages_;          // [rank] -> global stages, ascending
  std::vector<std::vector<Point>> stage_pareto_;  // [global stage] Pareto-maximal (x, y) points
};

}  // namespace pw
